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

#include "engine/decoder.h"
#include "engine/kv_slots.h"
#include "engine/matmul.h"
#include "engine/model.h"
#include "engine/thread_pool.h"

namespace actorserve {


// The KV cache is paged: a pool of blocks of kv_block_size positions, and for each sequence
// slot a block table; position p of a slot lives in block table[p / B] at offset p % B.
//  - slot mode (n_kv_blocks == 0): slot s owns blocks [s * nb, (s + 1) * nb), nb =
//    ceil(n_ctx / B), for the context's life; eval(), decode(), truncate() need nothing else.
//  - pool mode (n_kv_blocks > 0): tables start empty; the caller (a scheduler with its own
//    block manager, scheduling/kv_blocks.h) gives each slot its table with set_blocks() before
//    decoding into it. Several slots may list the same block for a shared prefix.
// note: a block that a slot will write (its positions >= n_past) must not be in another slot's
// table: decode() writes there without looking. Only whole blocks of computed positions are
// safe to share.
class llama_context final : public batch_decoder {
public:
    llama_context(const llama_model &model, const context_params &params);

    // Runs a batch. Each sequence's tokens must continue it: in batch order, at positions
    // n_past(seq), n_past(seq)+1, ... On success logits(i) holds the logits of the i-th token
    // that asked for them, in batch order. Fails, changing nothing, on an empty or oversized
    // batch, a bad token id, sequence or position, a sequence that would overflow n_ctx, or
    // one whose block table does not reach the position (pool mode).
    // note: a sequence's results do not depend on the other sequences in the batch (every
    // row is reduced in an order fixed by its own sequence), nor on where its blocks lie;
    // see attention().
    bool decode(std::span<const batch_token> batch, std::string &err) override;
    const float *logits(size_t i) const override { return &logits_[i * static_cast<size_t>(n_vocab_)]; } // (n_vocab,)
    int n_outputs() const { return n_outputs_; }

    // Sequence 0: appends `tokens` and leaves the last one's logits in logits().
    bool eval(std::span<const int32_t> tokens, std::string &err);
    std::span<const float> logits() const { return {logits_.data(), static_cast<size_t>(n_vocab_)}; }
    int n_past(int seq = 0) const override { return slots_.n_past(seq); }
    // Forgets positions >= n of a sequence (n <= n_past): it continues from n.
    void truncate(int n, int seq = 0);

    // Pool mode: slot `seq` uses `table` (block ids in [0, n_kv_blocks), in position order) and
    // its positions [0, n_past) are already in those blocks, e.g. a prefix computed by another
    // slot. Call it again to extend the table (same leading blocks, more after) or to point
    // the slot at another sequence; decode() then continues at n_past.
    // n_past <= min(table.size() * kv_block_size, n_ctx); violations are asserted.
    // Cost: copies the table (no allocation once the slot has held a table this long).
    void set_blocks(int seq, std::span<const int32_t> table, int n_past) override;
    // Pool mode: the slot holds no blocks and no positions.
    void clear(int seq) override;

    // Bytes of one KV block of block_size positions (rounded up as in context_params):
    // n_layer * 2 (K and V) * block_size * n_kv half-precision values.
    static size_t kv_bytes_per_block(const llama_hparams &hp, int block_size);
    int kv_block_size() const { return slots_.block_size(); }
    int n_kv_blocks() const { return slots_.n_blocks(); } // the pool; slot mode: n_seq * ceil(n_ctx / B)

    int n_ctx() const { return slots_.params().n_ctx; }
    int n_seq() const { return slots_.params().n_seq; }
    const llama_model &model() const { return model_; }
    int n_vocab() const override { return n_vocab_; }
    int n_threads() const { return pool_.size(); }

private:
    void forward(std::span<const batch_token> batch);
    void attention(std::span<const batch_token> batch, int layer);
    uint16_t *kv_layer(int32_t block, int layer); // K (B, n_kv) then V (n_kv, B) of one block

    const llama_model &model_;
    kv_slots slots_; // the normalized params, positions and block tables of the slots; batch checks
    thread_pool pool_;
    int n_vocab_ = 0;

    // KV cache in half precision (as llama.cpp's default F16 cache), paged. A block holds, per
    // layer, K as (B, n_kv) rows and V transposed as (n_kv, B), one row per channel, so that an
    // output channel of attention is one dot product over a row segment per block.
    // note: an attention row runs past its sequence's end up to a multiple of 32 keys (inside
    // the end's block, as B % 32 == 0); those keys get weight exactly 0, so their V must not be
    // inf or NaN (0 * inf is NaN). Writing the first position of a block therefore zeroes that
    // layer's V for the rest of the block: a block reused from another sequence shows zeros past
    // the new end, not the old sequence's values. The pool starts zeroed; after truncate() or a
    // set_blocks() into the middle of a block, what lies past the end is V this engine wrote.
    int block_size_ = 0;             // B (slots_.block_size())
    size_t block_halves_ = 0;        // n_layer * 2 * B * n_kv
    int n_ctx_pad_ = 0;              // n_ctx rounded up to 32: the longest attention row
    std::vector<uint16_t> kv_;       // (n_blocks, n_layer, 2 * B * n_kv)

    // Scratch for one batch (T = n_batch rows), allocated once.
    std::vector<float> x_;      // (T, n_embd) residual stream
    std::vector<float> xb_;     // (T, n_embd) normed input of a block
    std::vector<float> q_;      // (T, n_q)
    std::vector<float> k_, v_;  // (T, n_kv)
    std::vector<float> att_;    // (T, n_q) attention output
    std::vector<float> gate_;   // (T, n_ff)
    std::vector<float> up_;     // (T, n_ff)
    // attention's, per thread and query head of one group (G = n_head / n_head_kv):
    std::vector<float> scores_; // (n_threads, G, n_ctx_pad) one row of attention scores per head
    std::vector<float> wide_;   // (n_threads, G, n_ctx_pad) the weights widened back to float
    std::vector<uint16_t> qh_;  // (n_threads, G, head_dim) one query per head, in half precision
    std::vector<uint16_t> ph_;  // (n_threads, G, n_ctx_pad) attention weights in half precision
    matmul_scratch xq_;         // quantized activations for matmul
    std::vector<float> out_x_;  // (n_outputs, n_embd) normed rows that want logits
    std::vector<float> logits_; // (n_outputs, n_vocab); grows to the most outputs asked for
    std::vector<batch_token> eval_batch_; // (n_batch,) eval()'s chunk
    int n_outputs_ = 0;
};

} // namespace actorserve
