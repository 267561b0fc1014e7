// Perplexity of a model over a token sequence, computed as llama.cpp's perplexity tool does,
// so that the two figures can be set side by side:
//  - the tokens are cut into chunks of n_ctx (a partial last chunk is dropped);
//  - each chunk is evaluated from an empty KV cache, its first token replaced by BOS when the
//    model adds BOS;
//  - only the second half of a chunk is scored: for positions i = n_ctx/2 .. n_ctx-2, the
//    negative log-likelihood of token i+1 under the logits at i, so every scored token has
//    at least n_ctx/2 tokens of context;
//  - PPL = exp(mean NLL) over all scored tokens so far, and its standard error
//    PPL * sqrt((mean(NLL^2) - mean(NLL)^2) / (N - 1)).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "engine/forward.h"

namespace actorserve {

struct perplexity_params {
    int n_ctx = 512;   // tokens per chunk; the context must hold at least this many
    int n_chunks = -1; // chunks to score; -1, or more than the tokens hold: every whole chunk
    int n_batch = 0;   // most tokens per decode call, at most the context's n_batch; 0: n_ctx
    int32_t bos = -1;  // >= 0: replaces the first token of every chunk (models that add BOS)
};

struct perplexity_result {
    int n_chunks = 0;
    int64_t n_scored = 0;            // tokens scored: n_chunks * (n_ctx - 1 - n_ctx/2)
    double nll = 0.0;                // mean negative log-likelihood of a scored token (nats)
    double ppl = 0.0;                // exp(nll)
    double ppl_err = 0.0;            // standard error of ppl (0 when fewer than 2 tokens)
    std::vector<double> running_ppl; // (n_chunks,) the estimate after each chunk
};

// The natural log of softmax(logits)[token], as llama.cpp computes it: the maximum and the
// exponentials in float, their sum in double. logits: (n_vocab,).
double log_softmax(std::span<const float> logits, int32_t token);

// Scores `tokens` as described above, on sequence 0 of ctx (truncated to empty before each
// chunk). on_chunk(k, running ppl), when given, is called after chunk k (from 0) is scored.
// Fails when there are fewer than 2 * n_ctx tokens (llama.cpp's rule), when n_ctx is too small
// to score anything or larger than the context, or when a decode fails.
// Cost: n_chunks * n_ctx tokens through the model, with logits for half of them.
bool perplexity(llama_context &ctx, std::span<const int32_t> tokens, const perplexity_params &params,
                perplexity_result &out, std::string &err, const std::function<void(int, double)> &on_chunk = {});

} // namespace actorserve
