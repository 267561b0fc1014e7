#include "engine/attention_ops.h"

#include <algorithm>
#include <cassert>
#include <immintrin.h>

#include "engine/ops.h"
#include "engine/quants.h"
#include "engine/simd_avx2.h"

namespace actorserve {

namespace {

constexpr int kMaxGroup = 8;  // query heads per K/V head that the AVX2 kernels take
constexpr int kMaxHeadDim = 256;

// ---- one head at a time: the ops.h functions themselves (ref level, other shapes) -----------

void scores_by_head(bool gemm, int hd, int n_keys, const uint16_t *k0, const int32_t *blocks, size_t block_stride,
                    int B, size_t row_stride, const uint16_t *q, int G, float *sc, size_t sc_stride) {
    float (*const dot)(int, const uint16_t *, const uint16_t *) = gemm ? dot_f16_gemm : dot_f16_lanes;
    for (int g = 0; g < G; ++g)
        for (int j = 0; j < n_keys; ++j) {
            const uint16_t *kj = k0 + static_cast<size_t>(blocks[j / B]) * block_stride + static_cast<size_t>(j % B) * row_stride;
            sc[static_cast<size_t>(g) * sc_stride + j] = dot(hd, kj, q + static_cast<size_t>(g) * hd);
        }
}

void values_by_head(bool gemm, int n, int hd, const uint16_t *v0, const int32_t *blocks, size_t block_stride, int B,
                    const uint16_t *p, size_t p_stride, int G, float *y) {
    const auto vmul = gemm ? matvec_f16_gemm_paged : matvec_f16_lanes_paged;
    for (int g = 0; g < G; ++g)
        vmul(n, hd, v0, blocks, block_stride, B, p + static_cast<size_t>(g) * p_stride, y + static_cast<size_t>(g) * hd);
}

// ---- AVX2: every K row and V segment widened once for the group ----------------------------
//
// note: the products are fma(k, q) / fma(v, p) with q and p widened from half to float first,
// which is exact, so each lane sees the one-head kernel's operations in its order: the lanes
// order keeps 4 x 8 accumulators per 32 elements folded as lanes_fold, the gemm order one 8-lane
// accumulator folded as hsum8 (ops.cpp).

#define AS_AVX2 __attribute__((target("avx2,fma,f16c")))

using simd::hsum8;
using simd::lanes_fold;
using simd::load_f16x8;
AS_AVX2 inline void widen(const uint16_t *h, int n, float *f) {
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(f + i, load_f16x8(h + i));
    for (; i < n; ++i) f[i] = simd::h2f(h[i]);
}

template <int G>
AS_AVX2 void scores_lanes(int hd, int n_keys, const uint16_t *k0, const int32_t *blocks, size_t block_stride, int B,
                          size_t row_stride, const float *qf, float *sc, size_t sc_stride) {
    for (int j = 0; j < n_keys; ++j) {
        const uint16_t *kj = k0 + static_cast<size_t>(blocks[j / B]) * block_stride + static_cast<size_t>(j % B) * row_stride;
        __m256 acc[G][4];
        for (int g = 0; g < G; ++g) acc[g][0] = acc[g][1] = acc[g][2] = acc[g][3] = _mm256_setzero_ps();
        for (int i = 0; i < hd; i += 32) {
            const __m256 k[4] = {load_f16x8(kj + i), load_f16x8(kj + i + 8), load_f16x8(kj + i + 16), load_f16x8(kj + i + 24)};
            for (int g = 0; g < G; ++g)
                for (int r = 0; r < 4; ++r)
                    acc[g][r] = _mm256_fmadd_ps(k[r], _mm256_loadu_ps(qf + g * hd + i + 8 * r), acc[g][r]);
        }
        for (int g = 0; g < G; ++g) sc[static_cast<size_t>(g) * sc_stride + j] = lanes_fold(acc[g][0], acc[g][1], acc[g][2], acc[g][3]);
    }
}

template <int G>
AS_AVX2 void scores_gemm(int hd, int n_keys, const uint16_t *k0, const int32_t *blocks, size_t block_stride, int B,
                         size_t row_stride, const float *qf, float *sc, size_t sc_stride) {
    for (int j = 0; j < n_keys; ++j) {
        const uint16_t *kj = k0 + static_cast<size_t>(blocks[j / B]) * block_stride + static_cast<size_t>(j % B) * row_stride;
        __m256 acc[G];
        for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
        for (int i = 0; i < hd; i += 8) {
            const __m256 k = load_f16x8(kj + i);
            for (int g = 0; g < G; ++g) acc[g] = _mm256_fmadd_ps(k, _mm256_loadu_ps(qf + g * hd + i), acc[g]);
        }
        for (int g = 0; g < G; ++g) sc[static_cast<size_t>(g) * sc_stride + j] = hsum8(acc[g]);
    }
}

// Channel by channel, each with its accumulators in registers over all n keys: the channel's
// segment of each block is one 64-byte line (B = 32) or a run of them.
template <int G>
AS_AVX2 void values_lanes(int n, int hd, const uint16_t *v0, const int32_t *blocks, size_t block_stride, int B,
                          const float *pf, float *y) {
    for (int d = 0; d < hd; ++d) {
        __m256 acc[G][4];
        for (int g = 0; g < G; ++g) acc[g][0] = acc[g][1] = acc[g][2] = acc[g][3] = _mm256_setzero_ps();
        for (int s = 0, i0 = 0; i0 < n; ++s, i0 += B) {
            const uint16_t *seg = v0 + static_cast<size_t>(blocks[s]) * block_stride + static_cast<size_t>(d) * B;
            const int len = std::min(B, n - i0);
            for (int k = 0; k < len; k += 32) {
                const __m256 v[4] = {load_f16x8(seg + k), load_f16x8(seg + k + 8), load_f16x8(seg + k + 16),
                                     load_f16x8(seg + k + 24)};
                for (int g = 0; g < G; ++g)
                    for (int r = 0; r < 4; ++r)
                        acc[g][r] = _mm256_fmadd_ps(v[r], _mm256_loadu_ps(pf + g * n + i0 + k + 8 * r), acc[g][r]);
            }
        }
        for (int g = 0; g < G; ++g) y[g * hd + d] = lanes_fold(acc[g][0], acc[g][1], acc[g][2], acc[g][3]);
    }
}

template <int G>
AS_AVX2 void values_gemm(int n, int hd, const uint16_t *v0, const int32_t *blocks, size_t block_stride, int B,
                         const float *pf, float *y) {
    for (int d = 0; d < hd; ++d) {
        __m256 acc[G];
        for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
        for (int s = 0, i0 = 0; i0 < n; ++s, i0 += B) {
            const uint16_t *seg = v0 + static_cast<size_t>(blocks[s]) * block_stride + static_cast<size_t>(d) * B;
            const int len = std::min(B, n - i0);
            for (int k = 0; k < len; k += 8) {
                const __m256 v = load_f16x8(seg + k);
                for (int g = 0; g < G; ++g) acc[g] = _mm256_fmadd_ps(v, _mm256_loadu_ps(pf + g * n + i0 + k), acc[g]);
            }
        }
        for (int g = 0; g < G; ++g) y[g * hd + d] = hsum8(acc[g]);
    }
}

template <template <int> class K, class... A> void by_group(int G, A... a) {
    switch (G) {
    case 1: K<1>::run(a...); return;
    case 2: K<2>::run(a...); return;
    case 3: K<3>::run(a...); return;
    case 4: K<4>::run(a...); return;
    case 5: K<5>::run(a...); return;
    case 6: K<6>::run(a...); return;
    case 7: K<7>::run(a...); return;
    default: K<8>::run(a...); return;
    }
}
template <int G> struct k_scores_lanes { template <class... A> static void run(A... a) { scores_lanes<G>(a...); } };
template <int G> struct k_scores_gemm { template <class... A> static void run(A... a) { scores_gemm<G>(a...); } };
template <int G> struct k_values_lanes { template <class... A> static void run(A... a) { values_lanes<G>(a...); } };
template <int G> struct k_values_gemm { template <class... A> static void run(A... a) { values_gemm<G>(a...); } };

bool grouped_kernels(bool gemm, int hd, int G) {
    return use_avx2() && G >= 1 && G <= kMaxGroup && hd <= kMaxHeadDim && hd % (gemm ? 8 : 32) == 0;
}

} // namespace

void attn_scores(bool gemm, int hd, int n_keys, const uint16_t *k0, const int32_t *blocks, size_t block_stride,
                 int B, size_t row_stride, const uint16_t *q, int G, float *sc, size_t sc_stride) {
    if (!grouped_kernels(gemm, hd, G)) {
        scores_by_head(gemm, hd, n_keys, k0, blocks, block_stride, B, row_stride, q, G, sc, sc_stride);
        return;
    }
    alignas(32) float qf[kMaxGroup * kMaxHeadDim];
    widen(q, G * hd, qf);
    if (gemm)
        by_group<k_scores_gemm>(G, hd, n_keys, k0, blocks, block_stride, B, row_stride, static_cast<const float *>(qf), sc, sc_stride);
    else
        by_group<k_scores_lanes>(G, hd, n_keys, k0, blocks, block_stride, B, row_stride, static_cast<const float *>(qf), sc, sc_stride);
}

void attn_values(bool gemm, int n, int hd, const uint16_t *v0, const int32_t *blocks, size_t block_stride, int B,
                 const uint16_t *p, size_t p_stride, int G, float *wide, float *y) {
    assert(n % 32 == 0 && B % 32 == 0);
    if (!grouped_kernels(gemm, hd, G)) {
        values_by_head(gemm, n, hd, v0, blocks, block_stride, B, p, p_stride, G, y);
        return;
    }
    for (int g = 0; g < G; ++g) widen(p + static_cast<size_t>(g) * p_stride, n, wide + static_cast<size_t>(g) * n);
    if (gemm) by_group<k_values_gemm>(G, n, hd, v0, blocks, block_stride, B, static_cast<const float *>(wide), y);
    else by_group<k_values_lanes>(G, n, hd, v0, blocks, block_stride, B, static_cast<const float *>(wide), y);
}

} // namespace actorserve
