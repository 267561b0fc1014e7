// Register tiles for the K-quants (declared in quants_k.h): R weight rows by C tokens of Q8_K.
//
// A super-block's products are 8 steps of 32 elements, step i against the token's bytes
// 32i..32i+31 (Q4_K / Q5_K: sub-block i, low nibbles of qs[32 (i/2)..] for even i, high for
// odd; Q6_K: the 128-element half i/4, its quarter i%4, two 16-element sub-blocks). Per step
// the tile unpacks each row's quants and scale once and loads each token's bytes once; every
// (row, token) pair then costs a maddubs, a madd with the scale and an add into its 8 int32
// lanes, which are exactly the one-row kernel's lanes (quants_k.cpp): the lane sums are exact
// integers, and the float steps per super-block (the conversion, one fma with the super-block
// scale, the mins chain) are the one-row kernel's in the same order. So every output has the
// one-row kernel's bits, whatever R, C and the tokens beside it.
#include <array>
#include <cmath>
#include <immintrin.h>
#include <utility>

#include "engine/quants.h"
#include "engine/quants_k.h"
#include "engine/simd_avx2.h"

namespace actorserve {

namespace {

using simd::h2f;
using simd::hsum8;

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

#define AS_KTILE_BODY                                                                                               \
    using F = kformat<W>;                                                                                          \
    __m256 acc[R][C];                                                                                              \
    __m128 acc_m[R][C];                                                                                            \
    float mins[R][C];                                                                                              \
    for (int r = 0; r < R; ++r)                                                                                    \
        for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps(), acc_m[r][c] = _mm_setzero_ps(), mins[r][c] = 0.0f; \
    const W *wr[R];                                                                                                \
    const block_q8_k *xc[C];                                                                                       \
    for (int r = 0; r < R; ++r) wr[r] = reinterpret_cast<const W *>(w + r * ws);                                   \
    for (int c = 0; c < C; ++c) xc[c] = reinterpret_cast<const block_q8_k *>(x + c * xs);                          \
    for (int64_t b = 0; b < nb; ++b) {                                                                             \
        alignas(16) uint8_t sm[R][16];                                                                             \
        if constexpr (F::kMins)                                                                                    \
            for (int r = 0; r < R; ++r) k_scales(wr[r][b].scales, sm[r]);                                          \
        __m256i sumi[R][C];                                                                                        \
        _Pragma("GCC unroll 4") for (int r = 0; r < R; ++r)                                                        \
            _Pragma("GCC unroll 4") for (int c = 0; c < C; ++c) sumi[r][c] = _mm256_setzero_si256();               \
        for (int i = 0; i < 8; ++i) {                                                                              \
            __m256i q[R], s[R];                                                                                    \
            _Pragma("GCC unroll 4") for (int r = 0; r < R; ++r) {                                                  \
                q[r] = F::quants(wr[r][b], i);                                                                  \
                if constexpr (F::kMins) s[r] = step_scale(sm[r], i);                                               \
                else s[r] = step_scale(wr[r][b].scales, i);                                                        \
            }                                                                                                      \
            _Pragma("GCC unroll 4") for (int c = 0; c < C; ++c) {                                                  \
                const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xc[c][b].qs + 32 * i));    \
                __m256i x32 = _mm256_setzero_si256();                                                              \
                if constexpr (F::kOffset) x32 = _mm256_maddubs_epi16(_mm256_set1_epi8(32), xv);                    \
                _Pragma("GCC unroll 4") for (int r = 0; r < R; ++r) {                                              \
                    __m256i p = _mm256_maddubs_epi16(q[r], xv);                                                    \
                    if constexpr (F::kOffset) p = _mm256_sub_epi16(p, x32);                                        \
                    sumi[r][c] = _mm256_add_epi32(sumi[r][c], _mm256_madd_epi16(p, s[r]));                         \
                }                                                                                                  \
            }                                                                                                      \
        }                                                                                                          \
        _Pragma("GCC unroll 4") for (int r = 0; r < R; ++r) {                                                      \
            const W &wb = wr[r][b];                                                                                \
            __m128i mins16 = _mm_setzero_si128();                                                                  \
            if constexpr (F::kMins)                                                                                \
                mins16 = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(sm[r] + 8)));         \
            _Pragma("GCC unroll 4") for (int c = 0; c < C; ++c) {                                                  \
                const block_q8_k &xb = xc[c][b];                                                                   \
                const float d = xb.d * h2f(wb.d);                                                                  \
                acc[r][c] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi[r][c]), acc[r][c]);         \
                if constexpr (F::kMins) {                                                                          \
                    const float dmin = -xb.d * h2f(wb.dmin);                                                       \
                    const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xb.bsums));            \
                    const __m128i q8s = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1)); \
                    __m128i pm = _mm_madd_epi16(mins16, q8s);                                                      \
                    if constexpr (F::kMinsScalar) {                                                                \
                        pm = _mm_add_epi32(pm, _mm_shuffle_epi32(pm, 0x4e));                                       \
                        pm = _mm_add_epi32(pm, _mm_shuffle_epi32(pm, 0xb1));                                       \
                        mins[r][c] = std::fma(dmin, static_cast<float>(_mm_cvtsi128_si32(pm)), mins[r][c]);        \
                    } else {                                                                                       \
                        acc_m[r][c] = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(pm), acc_m[r][c]);           \
                    }                                                                                              \
                }                                                                                                  \
            }                                                                                                      \
        }                                                                                                          \
    }                                                                                                              \
    for (int r = 0; r < R; ++r)                                                                                    \
        for (int c = 0; c < C; ++c) {                                                                              \
            float v = hsum8(acc[r][c]);                                                                            \
            if constexpr (F::kMinsScalar) v += mins[r][c];                                                         \
            else if constexpr (F::kMins) {                                                                         \
                __m128 m = _mm_add_ps(acc_m[r][c], _mm_movehl_ps(acc_m[r][c], acc_m[r][c]));                       \
                m = _mm_add_ss(m, _mm_movehdup_ps(m));                                                             \
                v += _mm_cvtss_f32(m);                                                                             \
            }                                                                                                      \
            out[r * kTileOut + c] = v;                                                                             \
        }

// The same body twice: AVX2 (16 vector registers: 2 rows x 4 tokens) and AVX-512VL (32
// registers, the same instructions EVEX-encoded: 4 x 4).
template <class W, int R, int C>
__attribute__((target("avx2,fma,f16c"))) void ktile_avx2(int64_t nb, const uint8_t *w, size_t ws, const uint8_t *x,
                                                          size_t xs, float *out) {
    AS_KTILE_BODY
}
template <class W, int R, int C>
__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) void ktile_avx512(int64_t nb, const uint8_t *w, size_t ws,
                                                                                     const uint8_t *x, size_t xs, float *out) {
    AS_KTILE_BODY
}
#undef AS_KTILE_BODY

using kshape_fn = void (*)(int64_t, const uint8_t *, size_t, const uint8_t *, size_t, float *);
template <class W, bool Wide, int R, int... Cs> constexpr std::array<kshape_fn, 4> krow(std::integer_sequence<int, Cs...>) {
    if constexpr (Wide) return {&ktile_avx512<W, R, Cs + 1>...};
    else return {&ktile_avx2<W, R, Cs + 1>...};
}
template <class W, bool Wide, int... Rs> constexpr std::array<std::array<kshape_fn, 4>, sizeof...(Rs)> ktable(std::integer_sequence<int, Rs...>) {
    return {krow<W, Wide, Rs + 1>(std::make_integer_sequence<int, 4>{})...};
}
template <class W, bool Wide>
void ktile_run(int64_t n, const void *w, size_t ws, int nr, const void *x, size_t xs, const float *, size_t, const int32_t *,
               int nc, float *out) {
    static constexpr auto table = ktable<W, Wide>(std::make_integer_sequence<int, Wide ? kKTileRowsWide : kKTileRows>{});
    table[nr - 1][nc - 1](n / QK_K, static_cast<const uint8_t *>(w), ws, static_cast<const uint8_t *>(x), xs, out);
}

} // namespace

#define AS_KTILE_ENTRY(WN, W)                                                                                      \
    void tile_##WN##_q8_k_avx2(int64_t n, const void *w, size_t ws, int nr, const void *x, size_t xs, const float *xt, \
                               size_t sts, const int32_t *xc, int nc, float *out) {                               \
        ktile_run<W, false>(n, w, ws, nr, x, xs, xt, sts, xc, nc, out);                                           \
    }                                                                                                              \
    void tile_##WN##_q8_k_avx512(int64_t n, const void *w, size_t ws, int nr, const void *x, size_t xs,            \
                                 const float *xt, size_t sts, const int32_t *xc, int nc, float *out) {            \
        ktile_run<W, true>(n, w, ws, nr, x, xs, xt, sts, xc, nc, out);                                            \
    }
AS_KTILE_ENTRY(q4_k, block_q4_k)
AS_KTILE_ENTRY(q5_k, block_q5_k)
AS_KTILE_ENTRY(q6_k, block_q6_k)
#undef AS_KTILE_ENTRY

} // namespace actorserve
