// Inner products of one float query with many vectors stored as IEEE halves: the flat semantic
// index's scan (cache/semantic_cache.cpp). FAISS keeps the halves (IndexScalarQuantizer, QT_fp16)
// and does the bookkeeping (ids, removal); this loop reads them.
//
// Why our own loop: Debian's FAISS is a generic build, its distance loops compiled for the
// baseline ISA. Over 100,000 x 384 it took 17.6 ms per query for fp32 (IndexFlatIP) on Zen 4;
// this scan takes about 2.5 ms over the halves (docs/cache.md, "Latency"), about the memory
// bandwidth of reading 77 MB.
//
// Accuracy: a unit vector rounded to halves moves each inner product with a unit query by at
// most 2^-11 (relative rounding of each component, Cauchy-Schwarz), so kHalfScoreSlack bounds the
// difference from the fp32 product with room for the summation order. The cache rescores its
// candidates in fp32 before it compares them with the threshold.
#pragma once

#include <cstddef>
#include <cstdint>

namespace actorserve {

inline constexpr float kHalfScoreSlack = 1.0f / 1024;

// out[i] = sum_j q[j] * half(codes[i * dim + j]) for i < n. dim % 32 == 0 for the SIMD paths
// (any dim works; the rest is done one by one). Picks AVX-512, AVX2+F16C or plain C at run time,
// as the engine's kernels do (ACTORSERVE_SIMD).
void half_scores(const float *q, const uint16_t *codes, size_t n, int dim, float *out);

// The plain C loop, for tests to compare with.
void half_scores_ref(const float *q, const uint16_t *codes, size_t n, int dim, float *out);

} // namespace actorserve
