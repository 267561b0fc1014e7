// The K-quants' step layout for the register tiles (tile_k.cpp, tile_k_zmm.cpp): a
// super-block's 256 products are 8 steps of 32, step i against the token's bytes 32i..32i+31.
// quants(w, i) gives step i's 32 quants as bytes (Q6_K's without the offset 32), step_scale its
// int16 scale in each pair lane.
#pragma once

#include <immintrin.h>

#include "engine/quants_k.h"
#include "engine/simd_avx2.h"

namespace actorserve::kfmt {

template <class W> struct kformat;

// Q4_K and Q5_K share the step layout and the mins term
template <> struct kformat<block_q4_k> {
    static constexpr bool kMins = true, kMinsScalar = false, kOffset = false;
    AS_AVX2_INLINE static __m256i quants(const block_q4_k &w, int i) {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w.qs + 32 * (i / 2)));
        return _mm256_and_si256(i & 1 ? _mm256_srli_epi16(q, 4) : q, _mm256_set1_epi8(0x0f));
    }
};
template <> struct kformat<block_q5_k> {
    static constexpr bool kMins = true, kMinsScalar = true, kOffset = false;
    AS_AVX2_INLINE static __m256i quants(const block_q5_k &w, int i) {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w.qs + 32 * (i / 2)));
        const __m256i lo = _mm256_and_si256(i & 1 ? _mm256_srli_epi16(q, 4) : q, _mm256_set1_epi8(0x0f));
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w.qh));
        const __m256i h = _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, i), 4), _mm256_set1_epi8(16));
        return _mm256_or_si256(lo, h);
    }
};
template <> struct kformat<block_q6_k> {
    static constexpr bool kMins = false, kMinsScalar = false, kOffset = true; // q - 32
    AS_AVX2_INLINE static __m256i quants(const block_q6_k &w, int i) {
        const int h = i / 4, k = i % 4;
        const __m256i l = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w.ql + 64 * h + 32 * (k & 1)));
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w.qh + 32 * h));
        const __m256i lo = _mm256_and_si256(k < 2 ? l : _mm256_srli_epi16(l, 4), _mm256_set1_epi8(0x0f));
        const __m256i hi = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), _mm256_set1_epi8(3)), 4);
        return _mm256_or_si256(lo, hi);
    }
};

// The int16 scale of step i in each pair lane: one sub-block scale (Q4_K, Q5_K), or Q6_K's two
// (bytes 0..15 and 16..31 of the step).
AS_AVX2_INLINE __m256i step_scale(const uint8_t sm[16], int i) { return _mm256_set1_epi16(sm[i]); }
AS_AVX2_INLINE __m256i step_scale(const int8_t *sc, int i) {
    const int s = 8 * (i / 4) + 2 * (i % 4);
    return _mm256_set_m128i(_mm_set1_epi16(sc[s + 1]), _mm_set1_epi16(sc[s]));
}

} // namespace actorserve::kfmt
