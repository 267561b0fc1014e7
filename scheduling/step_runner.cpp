#include "scheduling/step_runner.h"

#include <algorithm>
#include <chrono>

namespace actorserve {

step_runner::step_runner(const llama_model &model, const context_params &params)
    : step_runner(std::make_unique<llama_context>(model, params), params.n_batch) {}

step_runner::step_runner(std::unique_ptr<batch_decoder> ctx, int n_batch) : ctx_(std::move(ctx)) {
    batch_.reserve(static_cast<size_t>(n_batch));
}

void step_runner::forget(const std::vector<int64_t> &ids) {
    for (int64_t id : ids) seqs_.erase(id);
}

step_result step_runner::run(const step_plan &plan) {
    const auto t0 = std::chrono::steady_clock::now();
    step_result r;
    forget(plan.released);
    if (plan.seqs.empty()) return r;

    batch_.clear();
    for (const step_seq &q : plan.seqs) {
        ctx_->set_blocks(q.slot, q.table, q.pos0);
        const int n = static_cast<int>(q.tokens.size());
        for (int i = 0; i < n; ++i)
            batch_.push_back({q.tokens[static_cast<size_t>(i)], q.slot, q.pos0 + i, q.sample && i == n - 1});
    }
    if (!ctx_->decode(batch_, r.error)) return r;
    r.n_tokens = static_cast<int>(batch_.size());

    int out = 0;
    for (const step_seq &q : plan.seqs) {
        auto it = seqs_.find(q.id);
        if (it == seqs_.end()) {
            it = seqs_.emplace(q.id, seq_state{sampler(q.sampling), {}}).first;
            if (q.grammar && q.vocab) {
                it->second.grammar = q.grammar;
                it->second.vocab = q.vocab;
                it->second.matcher.emplace(*q.grammar);
                it->second.budget = q.max_tokens;
            }
        }
        seq_state &s = it->second;
        if (q.first) {
            s.history = q.history;
            s.logprobs = q.logprobs;
        }
        s.history.insert(s.history.end(), q.tokens.begin(), q.tokens.end());
        if (!q.sample) continue;
        const float *logits = ctx_->logits(static_cast<size_t>(out++));
        const auto n_vocab = static_cast<size_t>(ctx_->n_vocab());
        const std::vector<int32_t> *allowed = nullptr;
        if (s.matcher) {
            // This token and budget - 1 more: the document closes within max_tokens when it can.
            s.vocab->allowed(*s.matcher, s.allowed, std::max(0, s.budget - 1));
            --s.budget;
            // note: never empty in practice (every byte has a token of its own); if it were, the
            // sequence ends rather than leave the grammar.
            if (s.allowed.empty()) s.allowed.assign(s.vocab->eog().begin(), s.vocab->eog().begin() + 1);
            allowed = &s.allowed;
        }
        const int32_t tok = s.smp.sample({logits, n_vocab}, s.history, allowed);
        if (s.matcher && !s.vocab->is_eog(tok)) s.matcher->feed(s.vocab->bytes(tok));
        r.sampled.emplace_back(q.id, tok);
        if (s.logprobs >= 0) r.logprobs.emplace_back(q.id, s.smp.logprobs(tok, s.logprobs));
    }
    r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

} // namespace actorserve
