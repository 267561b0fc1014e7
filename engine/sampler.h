// Next-token sampling from a logit vector: repetition penalty, then greedy or
// top-k -> temperature softmax -> top-p -> min-p -> one draw from a seeded generator.
//
// note: a sampler holds the random state of one sequence; it is not thread-safe. Two samplers
// built with the same params (seed included) and fed the same logits and history return the
// same tokens, on any platform whose libstdc++/libc++ implements std::mt19937_64 (the engine
// is fully specified by the standard) and IEEE float arithmetic.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "include/actorserve/sampling.h" // sampling_params

namespace actorserve {

// nullopt when p is usable; otherwise a message naming the parameter and its allowed range,
// e.g. "top_p must be in (0, 1], got 1.5".
std::optional<std::string> validate(const sampling_params &p);

// llama.cpp's repetition penalty, in place: every distinct id among the last `last_n` entries
// of history has its logit divided by `penalty` when positive, multiplied when <= 0.
// Ids outside [0, logits.size()) are ignored. `seen` is scratch of logits.size() zero bytes
// and is left all zero.
void apply_repeat_penalty(std::span<float> logits, std::span<const int32_t> history, float penalty,
                          int last_n, std::vector<uint8_t> &seen);

struct token_prob {
    int32_t id;
    float p;
};

// What OpenAI's logprobs report for one sampled token: its natural log-probability under the
// distribution the sampler saw (the logits after the repetition penalty, softmax at
// temperature 1, before top-k / top-p / min-p cut anything), and the `top` most likely tokens
// under the same distribution, most likely first (the lower id first on ties).
struct token_logprobs {
    int32_t id = 0;
    float logprob = 0.0f;
    std::vector<std::pair<int32_t, float>> top; // (id, logprob)
};

class sampler {
public:
    explicit sampler(const sampling_params &params);

    // Picks the next token. logits: (n_vocab,) raw model output; history: the tokens of the
    // sequence so far (prompt and generated), newest last.
    // cost: O(n_vocab) per call (penalty copy, top-k selection); with top_k = 0 and top_p < 1
    // the survivors of min-p are sorted, O(n log n) on a flat distribution.
    // allowed: when given, the only ids that may be drawn (ascending; non-empty), as constrained
    // decoding computes them (engine/token_mask.h); the others count as probability 0, in
    // sampling and in logprobs().
    int32_t sample(std::span<const float> logits, std::span<const int32_t> history,
                   const std::vector<int32_t> *allowed = nullptr);

    // The distribution sample() draws from: surviving tokens and their renormalised
    // probabilities (sum 1), most likely first when top_p < 1 cut them, otherwise in no
    // particular order. Greedy gives the argmax with p = 1. The span is valid until the next
    // call. Consumes no randomness.
    std::span<const token_prob> distribution(std::span<const float> logits, std::span<const int32_t> history,
                                             const std::vector<int32_t> *allowed = nullptr);

    // The log-probabilities of the last call's input (sample() or distribution()) for the token
    // `chosen` and its `top` (<= 20) most likely alternatives. Consumes no randomness and does
    // not change what the sampler draws next.
    // cost: O(n_vocab) (one log-sum-exp, one partial selection); nothing when never called.
    token_logprobs logprobs(int32_t chosen, int top);

    const sampling_params &params() const { return params_; }

private:
    sampling_params params_;
    std::mt19937_64 rng_;
    // Scratch, sized on the first call and reused (no allocation per token after it).
    std::vector<float> logits_;     // (n_vocab,) penalised copy of the input
    std::vector<uint8_t> seen_;     // (n_vocab,) penalty dedup flags, all zero between calls
    std::vector<token_prob> cand_;  // (n_vocab,) candidates; logits, then probabilities
};

} // namespace actorserve
