// The LLaMA forward pass over one sequence with its KV cache.
//
// eval() appends tokens to the sequence: it runs them through every layer in chunks of
// n_batch (a long prompt is prefilled chunk by chunk, a decode step is a chunk of one) and
// leaves the logits of the last token. The next issue's batched forward generalises the chunk
// to tokens of many sequences; the per-token maths here is what it must keep.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/model.h"
#include "engine/thread_pool.h"

namespace actorserve {

struct context_params {
    int n_ctx = 2048;    // positions the KV cache holds
    int n_batch = 512;   // tokens per forward chunk (a prompt up to this long is one chunk)
    int n_threads = 0;   // 0: physical cores
};

class llama_context {
public:
    llama_context(const llama_model &model, const context_params &params);

    // Runs `tokens` at positions n_past() .. n_past()+n-1. On success logits() holds the
    // last token's logits. Fails (changing nothing) on an empty span, a token id outside
    // the vocabulary, or when the tokens would not fit in n_ctx.
    bool eval(std::span<const int32_t> tokens, std::string &err);

    const std::vector<float> &logits() const { return logits_; } // (n_vocab,)
    int n_past() const { return n_past_; }
    int n_ctx() const { return params_.n_ctx; }
    // Forgets positions >= n (n <= n_past): the next eval continues from n.
    void truncate(int n);
    const llama_model &model() const { return model_; }
    int n_threads() const { return pool_.size(); }

private:
    void forward_chunk(const int32_t *tokens, int n_tok, int pos0, bool want_logits);
    void attention(int n_tok, int pos0, int layer);

    const llama_model &model_;
    context_params params_;
    thread_pool pool_;
    int n_past_ = 0;

    // KV cache in half precision (as llama.cpp's default F16 cache).
    // note: V is stored transposed, one row per channel over positions, so that each output
    // channel of attention is one contiguous dot product; rows are n_ctx_pad_ long (n_ctx
    // rounded up to 32) and the padding stays zero.
    int n_ctx_pad_ = 0;
    std::vector<uint16_t> k_cache_; // (n_layer, n_ctx, n_kv)
    std::vector<uint16_t> v_cache_; // (n_layer, n_kv, n_ctx_pad)

    // Scratch for one chunk (T = n_batch rows), allocated once.
    std::vector<float> x_;      // (T, n_embd) residual stream
    std::vector<float> xb_;     // (T, n_embd) normed input of a block
    std::vector<float> q_;      // (T, n_q)
    std::vector<float> k_, v_;  // (T, n_kv)
    std::vector<float> att_;    // (T, n_q) attention output
    std::vector<float> gate_;   // (T, n_ff)
    std::vector<float> up_;     // (T, n_ff)
    std::vector<float> scores_; // (n_head, n_ctx_pad) one row of attention scores per head
    std::vector<uint16_t> qh_;  // (n_head, head_dim) one query per head, in half precision
    std::vector<uint16_t> ph_;  // (n_head, n_ctx_pad) attention weights in half precision
    std::vector<uint8_t> xq_;   // quantized activations for matmul
    std::vector<float> logits_; // (n_vocab,)
};

} // namespace actorserve
