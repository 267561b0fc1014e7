// What an executor needs of a forward pass, wherever it runs: decode a batch of tokens of many
// sequences over a paged KV cache and hand back the logits that were asked for.
// llama_context (engine/forward.h) is the CPU one; gpu_context (gpu/gpu_context.h) runs on one
// CUDA device. The executor (scheduling/step_runner.h) holds either through this interface, so the
// scheduler does not care where a step runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace actorserve {

struct context_params {
    int n_ctx = 2048;    // positions a sequence may reach
    int n_batch = 512;   // most tokens one decode() takes (a prompt up to this long is one chunk)
    int n_seq = 1;       // sequence slots (batch_token::seq is a slot index)
    int n_threads = 0;   // 0: physical cores
    int kv_block_size = 32; // positions per KV block; rounded up to a positive multiple of 32
    int n_kv_blocks = 0;    // 0: slot mode, each slot owns ceil(n_ctx / kv_block_size) blocks;
                            // > 0: pool mode, a pool of this many blocks given out by set_blocks()
    // Sum every attention dot in one order (the multi-token one) whatever the number of a
    // sequence's tokens in the batch, so its KV and logits do not depend on how its tokens
    // were split into steps: a prompt in one chunk or several, a prefix reused from another
    // request, a sequence recomputed after preemption all give the same bits. Off: decode
    // follows llama.cpp's single-token order too (bit-identical to llama.cpp).
    bool chunk_invariant = false;
};

struct batch_token {
    int32_t token = 0;
    int32_t seq = 0;     // [0, n_seq)
    int32_t pos = 0;     // position in its sequence
    bool logits = false; // compute this token's logits
};

class batch_decoder {
public:
    virtual ~batch_decoder() = default;

    // See llama_context::decode: validates the whole batch first and changes nothing when it
    // fails (err names the problem); on success logits(i) holds the i-th requested row.
    virtual bool decode(std::span<const batch_token> batch, std::string &err) = 0;
    virtual const float *logits(size_t i) const = 0; // (n_vocab,)
    // Pool mode: slot `seq` uses `table` and its positions [0, n_past) are already there.
    virtual void set_blocks(int seq, std::span<const int32_t> table, int n_past) = 0;
    virtual void clear(int seq) = 0;
    virtual int n_past(int seq) const = 0;
    virtual int n_vocab() const = 0; // logits per row
};

} // namespace actorserve
