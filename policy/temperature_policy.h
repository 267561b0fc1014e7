// Dynamic temperature (docs/policy.md): a request that sets no temperature gets one chosen from
// what it asks. Its last user message is embedded (all-MiniLM-L6-v2, the runtime's embeddings
// actor) and given the kind of the nearest centroid of labelled examples (factual, code,
// creative, chat; configs/policy_kinds.jsonl, its "tune" half); each kind maps to a temperature
// and top-p of [policy]. Engine-free of CAF: the relay (net/relay.cpp) asks for the vector.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace actorserve {

inline constexpr int kRequestKinds = 4;
inline constexpr std::array<std::string_view, kRequestKinds> kRequestKindNames = {"factual", "code", "creative", "chat"};

struct policy_settings {
    bool dynamic_temperature = true;
    std::string examples = "configs/policy_kinds.jsonl"; // its lines with "split": "tune"
    // per kind, in kRequestKindNames order
    std::array<float, kRequestKinds> temperature = {0.3f, 0.2f, 1.0f, 0.7f};
    std::array<float, kRequestKinds> top_p = {0.9f, 0.95f, 0.95f, 0.9f};
};

struct kind_example {
    std::string text;
    int kind = 0;     // index into kRequestKindNames
    bool tune = true; // false: held out
};

// Every line of a JSONL file of {"text", "kind", "split"}. False with err naming the line.
bool load_kind_examples(const std::string &path, std::vector<kind_example> &out, std::string &err);

class temperature_policy {
public:
    // vectors[i]: examples[i]'s unit embedding; only tune examples count. nullptr with err when
    // a kind has no tune example or the vectors disagree in size.
    static std::shared_ptr<temperature_policy> build(const policy_settings &s, const std::vector<kind_example> &examples,
                                                     const std::vector<std::vector<float>> &vectors, std::string &err);

    struct choice {
        int kind = 0;
        float temperature = 0, top_p = 0;
        float similarity = 0; // cosine to the kind's centroid
    };
    choice classify(const std::vector<float> &v) const;

    // What /metrics shows: requests given each kind, and those left at the server's defaults
    // because no vector came (the embedder overloaded or the text not UTF-8).
    void count(int kind) const { ++chosen_[kind]; }
    void count_unclassified() const { ++unclassified_; }
    uint64_t chosen(int kind) const { return chosen_[kind].load(); }
    uint64_t unclassified() const { return unclassified_.load(); }

private:
    policy_settings cfg_;
    std::vector<std::vector<float>> centroids_; // unit length, one per kind
    mutable std::array<std::atomic<uint64_t>, kRequestKinds> chosen_{};
    mutable std::atomic<uint64_t> unclassified_{0};
};

} // namespace actorserve
