// The forward pass's kernels other than matrix products (those are cuBLAS), each behind a host
// function that launches it on a stream and returns the launch's status. Every kernel mirrors
// the CPU operation named in its comment (engine/ops.cpp, engine/forward.cpp) in what it
// computes; summation orders differ, so results agree closely, not bit for bit.
//
// Row-major throughout: a batch of T tokens is T rows; row t of a (T, n) buffer starts at t * n.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace actorserve::gpu {

// One layer of the paged KV cache as the kernels see it; the layout is llama_context's: a block
// holds, per layer, K as (B, n_kv) rows and then V transposed as (n_kv, B), one row per channel.
// Position p of a sequence lies in block table[p / B] at offset p % B.
struct kv_view {
    __half *layer0 = nullptr;   // this layer's K in block 0; block b starts b * block_halves further
    size_t block_halves = 0;    // one block, all layers: n_layer * 2 * B * n_kv
    int block_size = 0;         // B, a positive multiple of 32
    int n_kv = 0;               // width of a K or V row (n_head_kv * head_dim)
    const int32_t *tables = nullptr; // (rows, table_len): block tables of the batch's sequences
    int table_len = 0;          // entries per table: ceil(n_ctx / B)
};

// Per-token facts of the batch being run, in device memory, n_tok entries each.
struct batch_view {
    const int32_t *pos = nullptr;  // position in its sequence
    const int32_t *last = nullptr; // last position of its sequence in this batch
    const int32_t *row = nullptr;  // its sequence's table in kv_view::tables
    int n_tok = 0;
};

// x[t] = table[tokens[t]] widened to float.  table: (n_vocab, n_embd), x: (n_tok, n_embd).
cudaError_t embed_rows(const __half *table, const int32_t *tokens, int n_tok, int n_embd, float *x,
                       cudaStream_t stream);

// y[r] = x[src] / sqrt(mean(x[src]^2) + eps) * w with src = rows ? rows[r] : r, for r < n_rows
// (rows picks the tokens that want logits). Squares summed in double as rms_norm does. Writes
// y as float into out and/or as half into out_h (either may be null); out rows are (n_rows, n).
cudaError_t rms_norm_rows(const float *x, const int32_t *rows, int n_rows, int n, const float *w, float eps,
                          float *out, __half *out_h, cudaStream_t stream);

// rope_norm on every head of q (n_tok, n_head * head_dim) and k (n_tok, n_head_kv * head_dim) in
// place, token t at position pos[t]. theta_scale = theta_base^(-2/n_rot), computed on the host
// exactly as the CPU does; freq_factors: (n_rot / 2,) divisors or null.
struct rope_params {
    int n_head = 0, n_head_kv = 0, head_dim = 0, n_rot = 0;
    float theta_scale = 1.0f, freq_scale = 1.0f;
    const float *freq_factors = nullptr;
};
cudaError_t rope_qk(float *q, float *k, const int32_t *pos, int n_tok, const rope_params &p, cudaStream_t stream);

// Stores each token's K row (n_tok, n_kv) and V row, rounded to half, at its position in the
// cache. A token at offset 0 of its block also zeroes that layer's V past the last offset this
// batch writes in the block, which leaves the block as the CPU's sequential writes do.
cudaError_t kv_store(const float *k, const float *v, const kv_view &kv, const batch_view &b, cudaStream_t stream);

// Causal grouped-query attention of each token over its sequence's positions 0 .. pos, read
// through its block table: out = softmax(q K^T / sqrt(head_dim)) V per query head, K/V head
// h / (n_head / n_head_kv). q: (n_tok, n_head * head_dim) float; out: the same shape, half (the
// input of the output projection). Dot products, softmax and the weighted sum in float.
struct attention_params {
    int n_head = 0, n_head_kv = 0, head_dim = 0;
    int n_ctx = 0; // positions a sequence may reach: sizes the score tile
    float scale = 1.0f;
};
// Dynamic shared memory one attention block takes; create() checks it against the 48 KiB a
// block gets without opting in (it is about 18 KiB for head_dim 128).
size_t attention_shared_bytes(int head_dim, int n_ctx);
cudaError_t attention(const float *q, const kv_view &kv, const batch_view &b, const attention_params &p,
                      __half *out, cudaStream_t stream);

// y = silu(g) * u over n elements, as half (the input of the down projection).
cudaError_t swiglu_half(const float *g, const float *u, __half *y, size_t n, cudaStream_t stream);

} // namespace actorserve::gpu
