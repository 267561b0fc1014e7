// 512-bit register tiles for AVX-512 VNNI (declared in quants.h): two weight rows per vector.
//
// The 256-bit tiles (tile_kernel.inc) spend four vector operations on every (weight row,
// token, block): the integer step, the conversion, the scale product's broadcast and the fma.
// None of them can go: the bits of each output are fixed by one fma per block of its 8 lane
// sums, converted to float, with the scale d_w * d_x (llama.cpp's AVX2 order). What can change
// is how many outputs one operation serves. Here a 512-bit vector holds the 8 lanes of two
// weight rows side by side (row a in the low half, row b in the high half), and the token's
// block is broadcast into both halves by the load itself (vbroadcasti64x4, a load-port
// operation): so the same four operations serve two rows, and the lanes of each half see
// exactly the operations, in the same order, that the 256-bit kernel gives that row.
//
// Signed weights (Q4_0 as nibble - 8, Q5_0 as 5-bit q - 16, Q8_0 as q) are taken unsigned
// (nibble; q; q + 128) and the offset taken back through the accumulator input of vpdpbusd:
// lane j starts at -k * (x_4j + ... + x_4j+3), k = 8, 16 or 128, which the caller computes once
// per matmul (xc). The
// lane sums are exact integers however they are formed, so they equal the 256-bit kernels'.
//
// Per block and row pair the tile unpacks the two rows' quants once, converts their scales and
// (Q4_1) adds their min terms for up to 16 tokens in one fma each: the cost that the tile's C
// tokens share.
#include <array>
// GCC 12's AVX-512 broadcast intrinsics start from _mm512_undefined_*(), which its own
// -Wuninitialized reports inside avx512fintrin.h at every use; the lanes are all written.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#include <type_traits>
#include <utility>

#include "engine/quants.h"
#include "engine/quants_k.h"
#include "engine/simd_avx2.h"

namespace actorserve {

#define AS_ZMM __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))

namespace {

using simd::h2f;
using simd::hsum8; // quants.cpp's reduction, the same instructions
AS_ZMM inline __m256 low_half(__m512 v) { return _mm512_castps512_ps256(v); }
AS_ZMM inline __m256 high_half(__m512 v) {
    return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

// Two rows' quants of one block as unsigned bytes, row a's 32 in the low half, row b's in the
// high half, each in element order.
// 4-bit: 128-bit lanes (lo nibbles a, hi nibbles a, lo b, hi b); the odd lanes shifted by 4.
AS_ZMM inline __m512i pair_nibbles(const uint8_t *qa, const uint8_t *qb) {
    __m512i z = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i *>(qa)));
    z = _mm512_mask_broadcast_i32x4(z, 0xff00, _mm_loadu_si128(reinterpret_cast<const __m128i *>(qb)));
    const __m512i shift = _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0);
    return _mm512_and_si512(_mm512_srlv_epi64(z, shift), _mm512_set1_epi8(0x0f));
}
AS_ZMM inline __m512i pair_quants(const block_q4_0 &a, const block_q4_0 &b) { return pair_nibbles(a.qs, b.qs); }
AS_ZMM inline __m512i pair_quants(const block_q4_1 &a, const block_q4_1 &b) { return pair_nibbles(a.qs, b.qs); }
// 5-bit: the nibbles with each row's fifth bits (0x10) above them; Q5_0 taken as q = value + 16.
AS_ZMM inline __m512i pair_fifth(const uint8_t *ha, const uint8_t *hb) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(simd::fifth_bits(ha)), simd::fifth_bits(hb), 1);
}
AS_ZMM inline __m512i pair_quants(const block_q5_0 &a, const block_q5_0 &b) {
    return _mm512_or_si512(pair_nibbles(a.qs, b.qs), pair_fifth(a.qh, b.qh));
}
AS_ZMM inline __m512i pair_quants(const block_q5_1 &a, const block_q5_1 &b) {
    return _mm512_or_si512(pair_nibbles(a.qs, b.qs), pair_fifth(a.qh, b.qh));
}
AS_ZMM inline __m512i pair_quants(const block_q8_0 &a, const block_q8_0 &b) { // q + 128
    __m512i z = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(a.qs)));
    z = _mm512_mask_broadcast_i64x4(z, 0xf0, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(b.qs)));
    return _mm512_xor_si512(z, _mm512_set1_epi8(static_cast<char>(0x80)));
}
// d_a in the low 8 lanes, d_b in the high 8.
template <class W> AS_ZMM inline __m512 pair_scales(const W &a, const W &b) {
    return _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(h2f(a.d)), _mm512_set1_ps(h2f(b.d)));
}

// out[r * kTileOut + c] for the tile's 2P rows and C tokens. Rows come in pairs (wr[2p],
// wr[2p + 1]); a missing last row is the pair's first again, its outputs dropped by the caller.
template <class W, int P, int C>
AS_ZMM void ztile(int64_t nb, const W *const *wr, const uint8_t *x, size_t xs, const float *xt, size_t sts,
                  const int32_t *xc, float *out) {
    constexpr bool kQ41 = std::is_same_v<W, block_q4_1> || std::is_same_v<W, block_q5_1>; // with a min
    constexpr bool kSigned = !kQ41;
    using XB = std::conditional_t<kQ41, block_q8_1, block_q8_0>;
    static_assert(C <= 16, "the min terms keep one token per lane of a 512-bit vector");
    __m512 acc[P][C];
    __m512 mins[2 * P]; // Q4_1, Q5_1: lane c is the min-term chain of row r and token c
    _Pragma("GCC unroll 16") for (int p = 0; p < P; ++p) {
        _Pragma("GCC unroll 16") for (int c = 0; c < C; ++c) acc[p][c] = _mm512_setzero_ps();
        mins[2 * p] = mins[2 * p + 1] = _mm512_setzero_ps();
    }
    for (int64_t b = 0; b < nb; ++b) {
        __m512i u[P];
        __m512 dv[P];
        _Pragma("GCC unroll 16") for (int p = 0; p < P; ++p) {
            const W &wa = wr[2 * p][b], &wb = wr[2 * p + 1][b];
            u[p] = pair_quants(wa, wb);
            dv[p] = pair_scales(wa, wb);
            if constexpr (kQ41) {
                const __m512 s = _mm512_loadu_ps(xt + (2 * b + 1) * sts); // s_x of tokens 0..15
                mins[2 * p] = _mm512_fmadd_ps(_mm512_set1_ps(h2f(wa.m)), s, mins[2 * p]);
                mins[2 * p + 1] = _mm512_fmadd_ps(_mm512_set1_ps(h2f(wb.m)), s, mins[2 * p + 1]);
            }
        }
        const float *dx = xt + 2 * b * sts;
        _Pragma("GCC unroll 16") for (int c = 0; c < C; ++c) {
            const XB &xb = reinterpret_cast<const XB *>(x + c * xs)[b];
            const __m512i qx = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(xb.qs)));
            const __m512 d = _mm512_set1_ps(dx[c]);
            _Pragma("GCC unroll 16") for (int p = 0; p < P; ++p) {
                __m512i init = _mm512_setzero_si512();
                if constexpr (kSigned)
                    init = _mm512_broadcast_i64x4(
                        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xc + (static_cast<int64_t>(c) * nb + b) * 8)));
                const __m512 lanes = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(init, u[p], qx));
                acc[p][c] = _mm512_fmadd_ps(_mm512_mul_ps(dv[p], d), lanes, acc[p][c]);
            }
        }
    }
    _Pragma("GCC unroll 16") for (int p = 0; p < P; ++p) {
        alignas(64) float ma[16], mb[16];
        _mm512_store_ps(ma, mins[2 * p]);
        _mm512_store_ps(mb, mins[2 * p + 1]);
        _Pragma("GCC unroll 16") for (int c = 0; c < C; ++c) {
            float ra = hsum8(low_half(acc[p][c])), rb = hsum8(high_half(acc[p][c]));
            if constexpr (kQ41) ra += ma[c], rb += mb[c];
            out[(2 * p) * kTileOut + c] = ra;
            out[(2 * p + 1) * kTileOut + c] = rb;
        }
    }
}

// The shapes at run time: P = ceil(nr / 2) pairs, C = nc tokens.
template <class W, int P, int C>
AS_ZMM void ztile_entry(int64_t n, const void *w, size_t ws, int nr, const void *x, size_t xs, const float *xt,
                        size_t sts, const int32_t *xc, float *out) {
    const W *wr[2 * P];
    const uint8_t *wb = static_cast<const uint8_t *>(w);
    for (int r = 0; r < 2 * P; ++r) wr[r] = reinterpret_cast<const W *>(wb + (r < nr ? r : r - 1) * ws);
    ztile<W, P, C>(n / QK, wr, static_cast<const uint8_t *>(x), xs, xt, sts, xc, out);
}
using zshape_fn = void (*)(int64_t, const void *, size_t, int, const void *, size_t, const float *, size_t,
                           const int32_t *, float *);
template <class W, int P, int... Cs> constexpr std::array<zshape_fn, kZmmTileCols> zrow(std::integer_sequence<int, Cs...>) {
    return {&ztile_entry<W, P, Cs + 1>...};
}
template <class W, int... Ps>
constexpr std::array<std::array<zshape_fn, kZmmTileCols>, kZmmTileRows / 2> ztable(std::integer_sequence<int, Ps...>) {
    return {zrow<W, Ps + 1>(std::make_integer_sequence<int, kZmmTileCols>{})...};
}
template <class W>
void ztile_run(int64_t n, const void *w, size_t ws, int nr, const void *x, size_t xs, const float *xt, size_t sts,
               const int32_t *xc, int nc, float *out) {
    static constexpr auto table = ztable<W>(std::make_integer_sequence<int, kZmmTileRows / 2>{});
    table[(nr + 1) / 2 - 1][nc - 1](n, w, ws, nr, x, xs, xt, sts, xc, out);
}

} // namespace

#define AS_ZTILE_ENTRY(WN, AN, W)                                                                                 \
    void tile_##WN##_##AN##_zmm(int64_t n, const void *w, size_t ws, int nr, const void *x, size_t xs,           \
                                const float *xt, size_t sts, const int32_t *xc, int nc, float *out) {           \
        ztile_run<W>(n, w, ws, nr, x, xs, xt, sts, xc, nc, out);                                                  \
    }
AS_ZTILE_ENTRY(q4_0, q8_0, block_q4_0)
AS_ZTILE_ENTRY(q4_1, q8_1, block_q4_1)
AS_ZTILE_ENTRY(q5_0, q8_0, block_q5_0)
AS_ZTILE_ENTRY(q5_1, q8_1, block_q5_1)
AS_ZTILE_ENTRY(q8_0, q8_0, block_q8_0)
#undef AS_ZTILE_ENTRY

} // namespace actorserve
