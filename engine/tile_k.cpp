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
#include "engine/tile_k_format.h"

namespace actorserve {

namespace {

using simd::h2f;
using simd::hsum8;
using kfmt::kformat;
using kfmt::step_scale;

// The same body twice: AVX2 (16 vector registers: 2 rows x 4 tokens) and AVX-512VL (32
// registers, the same instructions EVEX-encoded: 4 x 4).
namespace ktile_avx2 {
#define AS_KTILE __attribute__((target("avx2,fma,f16c")))
#include "engine/tile_k_body.inc"
#undef AS_KTILE
} // namespace ktile_avx2
namespace ktile_avx512 {
#define AS_KTILE __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
#include "engine/tile_k_body.inc"
#undef AS_KTILE
} // namespace ktile_avx512

using kshape_fn = void (*)(int64_t, const uint8_t *, size_t, const uint8_t *, size_t, float *);
template <class W, bool Wide, int R, int... Cs> constexpr std::array<kshape_fn, 4> krow(std::integer_sequence<int, Cs...>) {
    if constexpr (Wide) return {&ktile_avx512::ktile<W, R, Cs + 1>...};
    else return {&ktile_avx2::ktile<W, R, Cs + 1>...};
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
