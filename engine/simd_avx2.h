// AVX2 helpers shared by the kernel files: half-precision loads and the two horizontal
// reductions whose exact order the engine's bit-for-bit results depend on (ggml's, see
// docs/engine.md). Each is inline with the AVX2 target; a kernel compiled for AVX-512 inlines
// them too (its target includes AVX2).
#pragma once

#include <cstdint>
#include <cstring>
#include <immintrin.h>

#define AS_AVX2_INLINE __attribute__((target("avx2,fma,f16c"))) inline

namespace actorserve::simd {

// Half to float with F16C: the same value as fp16_to_fp32, one instruction.
AS_AVX2_INLINE float h2f(uint16_t h) { return _cvtsh_ss(h); }

// 8 halves widened to floats (exact).
AS_AVX2_INLINE __m256 load_f16x8(const uint16_t *p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
}

// Sum of 8 lanes: halves, then pairs, then the two (ggml's AVX2 hsum).
AS_AVX2_INLINE float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// 4 x 8 accumulators folded as ggml's F16 dot reduces them: rows pairwise, 256 -> 128 bits,
// two hadds.
AS_AVX2_INLINE float lanes_fold(__m256 r0, __m256 r1, __m256 r2, __m256 r3) {
    const __m256 v = _mm256_add_ps(_mm256_add_ps(r0, r2), _mm256_add_ps(r1, r3));
    const __m128 t0 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t1 = _mm_hadd_ps(t0, t0);
    return _mm_cvtss_f32(_mm_hadd_ps(t1, t1));
}

// The fifth bits of a Q5_0 / Q5_1 block: byte i of the result is 0x10 where bit i of the
// little-endian word at qh is set, else 0 (element order, as unpack_nibbles).
AS_AVX2_INLINE __m256i fifth_bits(const uint8_t *qh) {
    uint32_t v;
    std::memcpy(&v, qh, 4);
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, //
                                            2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i sel = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
    const __m256i b = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(v)), spread), sel);
    return _mm256_and_si256(_mm256_cmpeq_epi8(b, sel), _mm256_set1_epi8(0x10));
}

} // namespace actorserve::simd
