// Attention's two products for the G query heads that share one K/V head (grouped-query
// attention), over the paged F16 KV cache. Each result has exactly the bits of the one-head
// function of ops.h it stands for; what the group shares is the reading and widening of every
// K row and V segment, done once for all G heads instead of once per head.
#pragma once

#include <cstddef>
#include <cstdint>

namespace actorserve {

// sc[g * sc_stride + j] = dot(K_j, q_g) for j < n_keys and g < G, where K_j (hd halves) lies at
// k0 + blocks[j / B] * block_stride + (j % B) * row_stride and q_g at q + g * hd.
// gemm: dot_f16_gemm's order (hd % 8 == 0), else dot_f16_lanes'.
void attn_scores(bool gemm, int hd, int n_keys, const uint16_t *k0, const int32_t *blocks, size_t block_stride,
                 int B, size_t row_stride, const uint16_t *q, int G, float *sc, size_t sc_stride);

// y[g * hd + d] = sum_{j < n} V[d][j] * p_g[j] for d < hd and g < G, V paged as
// matvec_f16_lanes_paged reads it (v0, blocks, block_stride, B), p_g at p + g * p_stride:
// matvec_f16_gemm_paged (gemm) or matvec_f16_lanes_paged of each head. n % 32 == 0.
// wide: scratch for G * n floats.
void attn_values(bool gemm, int n, int hd, const uint16_t *v0, const int32_t *blocks, size_t block_stride, int B,
                 const uint16_t *p, size_t p_stride, int G, float *wide, float *y);

} // namespace actorserve
