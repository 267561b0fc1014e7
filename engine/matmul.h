// y = x W^T for a batch of activation rows against one weight matrix.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/model.h"
#include "engine/thread_pool.h"

namespace actorserve {

// x: (n_tok, w.n_in) float, y: (n_tok, w.n_out) float.
// x is first quantized into scratch (reused, grown as needed) in the format the weight
// type pairs with; then the quantized formats go through register tiles (tile_kernel() in
// quants.h: a few weight rows by up to 16 tokens), the pool's threads taking chunks of tiles as
// they come free and walking each chunk kTokenBlock tokens at a time, so a chunk's rows are
// reused from cache for every token of the step. Cost: n_tok * n_out dots of n_in; the weight
// read dominates at small n_tok, which is why a batch shares it. y does not depend on n_tok or
// on the thread count. Fewer than kMinTileTokens tokens (single-sequence decode) take the
// one-row kernel instead, with the weight rows prefetched ahead of it.
// Tokens per cache block of the tiled path.
constexpr int64_t kTokenBlock = 64;
// Fewest tokens that go through the tiles.
constexpr int64_t kMinTileTokens = 4;

struct matmul_scratch {
    std::vector<uint8_t> xq; // (n_tok, row_bytes) quantized activations
    std::vector<float> xd;   // (n_tok, n_in / 32, 2) their block scales as floats
    std::vector<float> xt;   // (n_in / 32, 2, n_tok + padding) the same, transposed
    std::vector<int32_t> xc; // (n_tok, n_in / 32, 8) offset sums for the tiles that take them
    std::vector<int32_t> xk; // Q8_K tokens packed for the 512-bit K-quant kernel (quants_k.h)
};
void matmul(const weight_matrix &w, const float *x, int64_t n_tok, float *y, thread_pool &pool,
            matmul_scratch &scratch);

// Several matrices against the same x (attention's Q, K and V; the FFN's gate and up): x is
// quantized once and all their rows go through one parallel loop, so the group costs one
// wait for the pool where separate calls cost one each. Every y is bit-identical to its own
// matmul. Matrices of different types or n_in are taken one by one.
constexpr int kMaxMatmulGroup = 4;
struct matmul_out {
    const weight_matrix *w;
    float *y; // (n_tok, w->n_out)
};
void matmul(std::span<const matmul_out> outs, const float *x, int64_t n_tok, thread_pool &pool,
            matmul_scratch &scratch);

} // namespace actorserve
