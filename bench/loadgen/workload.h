// The requests a run sends: a prompt set (built in, or a JSONL file) and a seeded sequence
// drawn from it, with optional resends of earlier prompts and light paraphrases of them.
#pragma once

#include <boost/json.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace loadgen {

// A chat prompt: the messages of one request ({role, content} objects, the last one the user's).
struct prompt {
    boost::json::array messages;
};

// About 30 chat prompts from a few words to a few hundred, deterministic.
std::vector<prompt> builtin_prompts();

// One JSON object per line: {"prompt": "..."} (one user message) or {"messages": [...]}.
// Blank lines are skipped. Empty result and `err` set on a bad line or an unreadable file.
std::vector<prompt> load_prompts_jsonl(const std::string &path, std::string &err);

// A light rewording that a cache keyed on exact text misses and a semantic one should hit:
// one of lower case, dropped or added end punctuation, a "please" added or removed.
std::string paraphrase(const std::string &text, std::mt19937_64 &rng);

struct workload_item {
    boost::json::array messages;
    int prompt_index = -1;
    bool repeated = false;
    bool paraphrased = false;
};

// The request sequence. next() in issue order gives the same sequence for the same seed,
// whatever the timing of the run.
class workload {
public:
    workload(std::vector<prompt> prompts, double repeat_fraction, uint64_t seed);
    workload_item next();

private:
    std::vector<prompt> prompts_;
    double repeat_fraction_;
    std::mt19937_64 rng_;
    std::vector<int> sent_; // prompt indices sent so far (bounded: the first 4096)
};

} // namespace loadgen
