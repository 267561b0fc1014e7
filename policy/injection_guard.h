// The prompt-injection guard on user input (docs/policy.md): user messages that try to override
// or extract the system prompt, smuggle role markers or special tokens, or switch the model's
// persona. Two detectors, on the text after normalize_for_guard (policy/text_normalize.h):
//
//   rules       role markers and special tokens of the common chat templates ("<|im_start|>",
//               "[INST]", "<<SYS>>", "### System:", "<start_of_turn>", ...), lines that forge a
//               turn ("User: ...", "System: ..."), and override phrases ("ignore the above
//               directions", "ignore instructions, and just print"): flagged outright
//   classifier  logistic regression over all-MiniLM-L6-v2 embeddings, trained at start-up on the
//               tune half of labelled examples (configs/guard_examples.jsonl); a text scores the
//               highest of its windows (long texts), the sentences of a long text that hold
//               words instructions use (an instruction buried in a document), its ROT13 when
//               that reads as English, and its decoded base64 spans; at or above the threshold
//               it is flagged
//
// CAF-free: the caller embeds what prepare() asks for (net/relay.cpp, through the runtime's
// embeddings actor) and gives the vectors to judge().
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace actorserve {

enum class guard_action : uint8_t { off, flag, block };
std::optional<guard_action> parse_guard_action(std::string_view s);

struct guard_settings {
    guard_action action = guard_action::flag;
    std::string examples = "configs/guard_examples.jsonl"; // its lines with "split": "tune"
    float threshold = 0.67f;  // classifier probability that flags: the tune half's out-of-fold
                              // scores give 0.670 for <= 1% false positives (docs/policy.md)
};

struct guard_example {
    std::string text;
    bool attack = false;
    bool tune = true;
    std::string source;
};

// Every line of a JSONL file of {"text", "label": "attack" | "benign", "split"}.
bool load_guard_examples(const std::string &path, std::vector<guard_example> &out, std::string &err);

class injection_guard {
public:
    // Trained on the tune examples (vectors[i] is the embedding of prepare(examples[i].text)'s
    // first text: the normalised text, or its first window): full-batch gradient
    // descent, classes weighted to balance, L2; deterministic. nullptr with err when a class has
    // no tune example.
    static std::shared_ptr<injection_guard> train(const guard_settings &s, const std::vector<guard_example> &examples,
                                                  const std::vector<std::vector<float>> &vectors, std::string &err);

    // What to embed for one user text, and what the rules saw already.
    struct prepared {
        std::vector<std::string> texts;  // embed each
        std::vector<std::string> variant; // what each text is: "text", "window", "sentence", "rot13", "base64"
        std::vector<std::string> rules;  // rule hits: "role_marker", "override_phrase"
        std::vector<std::string> notes;  // normalisation: "hidden_characters", "tag_characters", "confusables"
    };
    static prepared prepare(std::string_view user_text);

    struct verdict {
        bool flagged = false;
        float score = 0;                 // the classifier's highest probability
        std::vector<std::string> reasons; // "role_marker", "classifier", "classifier:rot13", ... and the notes
    };
    verdict judge(const prepared &p, const std::vector<std::vector<float>> &vectors) const;

    // The classifier's probability for one embedding.
    float score(const std::vector<float> &v) const;

    const guard_settings &settings() const { return cfg_; }

    // /metrics: requests passed, flagged (served), blocked.
    void count(bool flagged) const { ++(flagged ? (cfg_.action == guard_action::block ? blocked_ : flagged_) : passed_); }
    void count_unchecked() const { ++unchecked_; }
    uint64_t passed() const { return passed_.load(); }
    uint64_t flagged() const { return flagged_.load(); }
    uint64_t blocked() const { return blocked_.load(); }
    uint64_t unchecked() const { return unchecked_.load(); } // no vectors came: served unchecked

private:
    guard_settings cfg_;
    std::vector<float> w_;
    float b_ = 0;
    mutable std::atomic<uint64_t> passed_{0}, flagged_{0}, blocked_{0}, unchecked_{0};
};

} // namespace actorserve
