// Runs one planned step on a decoder (the CPU engine's llama_context or a gpu_context): points each sequence's KV slot at its blocks,
// decodes every sequence's tokens in one batch, and samples where the plan asks. This is the
// executor's work without the actor around it (actors/executor.cpp); no CAF here.
//
// note: the runner keeps a sampler (random state) and the token history (for the repetition
// penalty) per sequence, from its first step until the plan lists it as released. A sequence
// re-admitted after preemption keeps its sampler, so its draws continue where they stopped.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "scheduling/scheduler_state.h"
#include "engine/forward.h"
#include "engine/sampler.h"

namespace actorserve {

struct step_result {
    std::vector<std::pair<int64_t, int32_t>> sampled; // (sequence id, token), plan order
    std::vector<std::pair<int64_t, token_logprobs>> logprobs; // for sequences that asked (gen_request::logprobs)
    std::string error;                                // non-empty: the step failed, nothing sampled
    double ms = 0.0;                                  // wall time of decode + sampling
    int n_tokens = 0;                                 // tokens computed
};

class step_runner {
public:
    // params: pool mode (n_kv_blocks > 0), n_seq = the scheduler's max_seqs, n_batch >= its
    // step_tokens, kv_block_size equal to the scheduler's.
    step_runner(const llama_model &model, const context_params &params);
    // Any decoder built with such params (e.g. a gpu_context); n_batch as given to it.
    step_runner(std::unique_ptr<batch_decoder> ctx, int n_batch);

    step_result run(const step_plan &plan);
    // Drops the samplers and histories of ended sequences (plan.released does the same).
    void forget(const std::vector<int64_t> &ids);

    const batch_decoder &context() const { return *ctx_; }
    size_t n_tracked() const { return seqs_.size(); }

private:
    struct seq_state {
        sampler smp;
        std::vector<int32_t> history; // tokens computed so far (prefix included)
        int logprobs = -1;            // step_seq::logprobs
        // Structured output: the grammar's state after the tokens sampled so far (kept across
        // preemption, as the sampler is), and the tokens it admits next.
        std::shared_ptr<const json_grammar> grammar = nullptr;
        std::shared_ptr<const token_vocab> vocab = nullptr;
        std::optional<json_matcher> matcher = std::nullopt;
        std::vector<int32_t> allowed = {};
        int budget = -1;              // tokens the answer may still take (max_tokens - sampled)
    };

    std::unique_ptr<batch_decoder> ctx_;
    std::unordered_map<int64_t, seq_state> seqs_;
    std::vector<batch_token> batch_; // (n_batch,) reused
};

} // namespace actorserve
