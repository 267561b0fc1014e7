// What a forward pass keeps beside its KV memory, the same on every device: where each
// sequence slot's positions live (block tables, in slot or pool mode; see llama_context), how
// far each slot has got, and the checks a batch must pass before any of it runs. llama_context
// (the CPU) and gpu_context (a CUDA device) both hold one, so they accept and refuse exactly the
// same batches with the same messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/decoder.h"

namespace actorserve {

// kv_block_size as used: a positive multiple of 32, so a 32-key attention step never straddles
// two blocks.
int round_kv_block_size(int b);

class kv_slots {
public:
    // params: as given to the context; kept normalized (n_ctx, n_batch, n_seq >= 1, the block
    // size rounded, n_kv_blocks >= 0). Slot mode gives slot s the blocks [s * nb, (s + 1) * nb).
    kv_slots(const context_params &params, int n_vocab);

    // decode()'s checks, in order: an empty or oversized batch, a token outside the vocabulary,
    // a sequence outside [0, n_seq), a position that does not continue its sequence, one at or
    // past n_ctx, one past what the slot's blocks hold. On success last(s) and count(s)
    // describe the batch; nothing else changes either way.
    bool check_batch(std::span<const batch_token> batch, std::string &err);
    // The checked batch ran: each of its sequences continues after its last position.
    void commit_batch();

    // eval()'s checks on sequence 0 (empty, overflowing n_ctx or its blocks, a bad token), and
    // its chunks: tokens [i, i + n_batch) as a batch continuing sequence 0, logits for the last
    // token of all.
    bool check_eval(std::span<const int32_t> tokens, std::string &err) const;
    void eval_chunk(std::span<const int32_t> tokens, size_t i, std::vector<batch_token> &out) const;

    void set_blocks(int seq, std::span<const int32_t> table, int n_past); // asserts as documented in llama_context
    void clear(int seq);
    void truncate(int n, int seq);

    const context_params &params() const { return params_; }
    int n_vocab() const { return n_vocab_; }
    int block_size() const { return block_size_; }
    int n_blocks() const { return n_blocks_; }
    int table_len() const { return table_len_; } // ceil(n_ctx / B): table entries a position can reach
    bool pool_mode() const { return pool_mode_; }
    int n_past(int seq) const { return n_past_[static_cast<size_t>(seq)]; }
    int capacity(int seq) const; // positions the slot's table holds, at most n_ctx
    const std::vector<int32_t> &table(int seq) const { return tables_[static_cast<size_t>(seq)]; }
    // Of the batch last checked: a sequence's last position in it (-1: not in it), its tokens.
    int last(int seq) const { return seq_last_[static_cast<size_t>(seq)]; }
    int count(int seq) const { return seq_count_[static_cast<size_t>(seq)]; }

private:
    bool check_token(int32_t token, size_t index, std::string &err) const;

    context_params params_;
    int n_vocab_ = 0;
    int block_size_ = 0;
    int n_blocks_ = 0;
    int table_len_ = 0;
    bool pool_mode_ = false;
    std::vector<int> n_past_;                   // (n_seq,)
    std::vector<std::vector<int32_t>> tables_;  // (n_seq, blocks)
    std::vector<int> seq_last_, seq_count_;     // (n_seq,) of the batch last checked
};

} // namespace actorserve
