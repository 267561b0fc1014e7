// The LLaMA forward pass over a batch of tokens from one or many sequences, with their
// KV caches.
//
// decode() takes tokens of several sequences at once (each with its sequence and position)
// and runs them through every layer together, so each weight matrix is read once per call
// for the whole batch: decoding many sequences and prefilling a prompt are the same call.
// eval() is the single-sequence convenience on sequence 0: it splits its tokens into chunks
// of n_batch and keeps the last token's logits.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/matmul.h"
#include "engine/model.h"
#include "engine/thread_pool.h"

namespace actorserve {

struct context_params {
    int n_ctx = 2048;    // positions the KV cache holds, per sequence
    int n_batch = 512;   // most tokens one decode() takes (a prompt up to this long is one chunk)
    int n_seq = 1;       // sequences with their own KV cache
    int n_threads = 0;   // 0: physical cores
};

struct batch_token {
    int32_t token = 0;
    int32_t seq = 0;     // [0, n_seq)
    int32_t pos = 0;     // position in its sequence
    bool logits = false; // compute this token's logits
};

class llama_context {
public:
    llama_context(const llama_model &model, const context_params &params);

    // Runs a batch. Each sequence's tokens must continue it: in batch order, at positions
    // n_past(seq), n_past(seq)+1, ... On success logits(i) holds the logits of the i-th token
    // that asked for them, in batch order. Fails, changing nothing, on an empty or oversized
    // batch, a bad token id, sequence or position, or a sequence that would overflow n_ctx.
    // note: a sequence's results do not depend on the other sequences in the batch (every
    // row is reduced in an order fixed by its own sequence); see attention().
    bool decode(std::span<const batch_token> batch, std::string &err);
    const float *logits(size_t i) const { return &logits_[i * static_cast<size_t>(n_vocab_)]; } // (n_vocab,)
    int n_outputs() const { return n_outputs_; }

    // Sequence 0: appends `tokens` and leaves the last one's logits in logits().
    bool eval(std::span<const int32_t> tokens, std::string &err);
    std::span<const float> logits() const { return {logits_.data(), static_cast<size_t>(n_vocab_)}; }
    int n_past(int seq = 0) const { return n_past_[static_cast<size_t>(seq)]; }
    // Forgets positions >= n of a sequence (n <= n_past): it continues from n.
    void truncate(int n, int seq = 0);

    int n_ctx() const { return params_.n_ctx; }
    int n_seq() const { return params_.n_seq; }
    const llama_model &model() const { return model_; }
    int n_threads() const { return pool_.size(); }

private:
    bool check_token(int32_t token, size_t index, std::string &err) const;
    void forward(std::span<const batch_token> batch);
    void attention(std::span<const batch_token> batch, int layer);
    uint16_t *k_row(int seq, int layer, int pos);   // (n_kv,)
    uint16_t *v_col(int seq, int layer, int pos);   // stride n_ctx_pad_
    const uint16_t *k_layer(int seq, int layer) const;
    const uint16_t *v_layer(int seq, int layer) const;

    const llama_model &model_;
    context_params params_;
    thread_pool pool_;
    int n_vocab_ = 0;
    std::vector<int> n_past_;   // (n_seq,)

    // KV cache in half precision (as llama.cpp's default F16 cache), one region per sequence.
    // note: V is stored transposed, one row per channel over positions, so that each output
    // channel of attention is one contiguous dot product; rows are n_ctx_pad_ long (n_ctx
    // rounded up to 32) and the padding stays zero.
    int n_ctx_pad_ = 0;
    std::vector<uint16_t> k_cache_; // (n_seq, n_layer, n_ctx, n_kv)
    std::vector<uint16_t> v_cache_; // (n_seq, n_layer, n_kv, n_ctx_pad)

    // Per-token facts of the batch being run (sized n_batch, allocated once).
    std::vector<int> seq_last_;     // (n_seq,) last position of each sequence in this batch, or -1
    std::vector<int> seq_count_;    // (n_seq,) its tokens in this batch

    // Scratch for one batch (T = n_batch rows), allocated once.
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
    matmul_scratch xq_;         // quantized activations for matmul
    std::vector<float> out_x_;  // (n_outputs, n_embd) normed rows that want logits
    std::vector<float> logits_; // (n_outputs, n_vocab); grows to the most outputs asked for
    std::vector<batch_token> eval_batch_; // (n_batch,) eval()'s chunk
    int n_outputs_ = 0;
};

} // namespace actorserve
