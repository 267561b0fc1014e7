// AVX-512 variants of the quantized dot kernels (declared in quants.h), with and without VNNI.
//
// Same maths and, step for step, the same float operations as the AVX2 kernels: each block's
// 8 int32 lane sums (lane j = elements 4j..4j+3) are converted to float and added into 8 float
// lanes by one fma with that block's scale d_w * d_x, blocks in order, folded as hsum8 at the
// end. The lane sums are exact integers however they are formed, so every result is
// bit-identical to the AVX2 kernel's (which is llama.cpp's AVX2 order), and a sequence's
// logits do not depend on which level ran.
//
// What AVX-512 changes, per block and activation row (AVX2 in brackets):
//   - the integer step: one vpdpbusd with VNNI [maddubs + madd];
//   - signed weights (Q4_0, Q8_0): |q| and the mask of q < 0 once per weight block, then one
//     masked negate of x per row [two vpsignb per row].
// The rest of the work per block and row is fixed by the order the bits depend on: a
// conversion, the scale product and its broadcast, the fma, and Q4_1's min term. That bounds
// the gain: about 10% on the kernel with VNNI, and nothing without it (see docs/engine.md).
// note: the vectors are 256 bits (AVX-512VL), one block each. Two variants measured slower on
// this machine's Xeon and were dropped: two blocks per 512-bit step (about 20% slower: joining
// two blocks that are not adjacent in memory and splitting the lanes back into per-block fmas
// cost a shuffle each, all on port 5, and 512-bit operations leave port 1's vector units idle),
// and scale products computed 16 blocks at a time into a stack buffer (about 40% slower).
#include <array>
#include <cmath>
#include <immintrin.h>
#include <type_traits>
#include <utility>

#include "engine/quants.h"
#include "engine/quants_k.h"
#include "engine/simd_avx2.h"

namespace actorserve {

#define AS_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
#define AS_AVX512_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))

namespace {

// The integer step: acc_j + sum_{k<4} u[4j+k] * s[4j+k] for the 8 int32 lanes j, u read as
// unsigned bytes, s as signed. The kernels are templates over one of these two.
struct isa_avx512 {
    // note: maddubs saturates each pair u0*s0 + u1*s1 to int16; every caller keeps pairs
    // within 2 * 128 * 127 (u <= 128, |s| <= 127) or 2 * 15 * 127, so nothing saturates
    AS_AVX512 static __m256i dot4(__m256i acc, __m256i u, __m256i s) {
        return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
    }
};
struct isa_avx512_vnni {
    AS_AVX512_VNNI static __m256i dot4(__m256i acc, __m256i u, __m256i s) { return _mm256_dpbusd_epi32(acc, u, s); }
};
// note: a kernel instantiated with isa_avx512_vnni is compiled for AVX-512 without VNNI and
// calls dot4 out of line; the exported entry points below carry the VNNI target and
// `flatten`, which inlines the whole kernel, dot4 included, into them.

using simd::h2f;
using simd::hsum8; // the same instructions as quants.cpp's
AS_AVX512 inline __m256i load32(const void *p) { return _mm256_loadu_si256(static_cast<const __m256i *>(p)); }
// 16 packed bytes -> 32 nibbles in element order (low nibbles 0..15, high nibbles 16..31).
AS_AVX512 inline __m256i unpack_nibbles(const uint8_t *qs) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(qs));
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(b, 4), b), _mm256_set1_epi8(0x0f));
}

// Signed weights q (-128 <= q <= 127) as the integer step wants them: u = |q|, and the lanes where
// q < 0, onto which each activation row's sign is moved (x -> -x there), so that u * s = q * x.
struct signed_weights { __m256i u; __mmask32 neg; };
AS_AVX512 inline signed_weights split_sign(__m256i q) { return {_mm256_abs_epi8(q), _mm256_movepi8_mask(q)}; }
AS_AVX512 inline __m256i apply_sign(const signed_weights &w, __m256i x) {
    return _mm256_mask_sub_epi8(x, w.neg, _mm256_setzero_si256(), x); // |x| <= 127: no overflow
}
AS_AVX512 inline __m256i weight_quants(const block_q4_0 &w) { return _mm256_sub_epi8(unpack_nibbles(w.qs), _mm256_set1_epi8(8)); }
AS_AVX512 inline __m256i weight_quants(const block_q5_0 &w) {
    return _mm256_sub_epi8(_mm256_or_si256(unpack_nibbles(w.qs), simd::fifth_bits(w.qh)), _mm256_set1_epi8(16));
}
AS_AVX512 inline __m256i weight_quants(const block_q8_0 &w) { return load32(w.qs); }
AS_AVX512 inline __m256i weight_unsigned(const block_q4_1 &w) { return unpack_nibbles(w.qs); }
AS_AVX512 inline __m256i weight_unsigned(const block_q5_1 &w) { return _mm256_or_si256(unpack_nibbles(w.qs), simd::fifth_bits(w.qh)); }

// Activation row c's scales of block b: from xd when XD, else from the block (as quants.cpp).
template <bool XD, class B> AS_AVX512 inline float act_d(const B &xb, const float *xd, int64_t nb, int c, int64_t b) {
    if constexpr (XD) return xd[(c * nb + b) * 2];
    else return h2f(xb.d);
}
template <bool XD> AS_AVX512 inline float act_s(const block_q8_1 &xb, const float *xd, int64_t nb, int c, int64_t b) {
    if constexpr (XD) return xd[(c * nb + b) * 2 + 1];
    else return h2f(xb.s);
}
// acc += (d_w * d_x) * (float)lanes, d_w already in every lane of dw: the product rounded as
// the scalar dw * d_x, then one fma, as the AVX2 kernel.
AS_AVX512 inline __m256 scale_add(__m256 dw, float dx, __m256i lanes, __m256 acc) {
    return _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(dx)), _mm256_cvtepi32_ps(lanes), acc);
}

// out[c] = dot(w, x_c) for NC rows x_c = x + c * xs bytes of Q8_0 blocks, W (Q4_0, Q5_0 or Q8_0)
// weights: sum over blocks of d_w * d_x * sum_j(q_j * x_j).
template <class I, class W, int NC, bool XD>
AS_AVX512 void cols_signed(int64_t n, const W *w, const uint8_t *x, size_t xs, const float *xd, float *out) {
    const int64_t nb = n / QK;
    __m256 acc[NC];
    for (int c = 0; c < NC; ++c) acc[c] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const signed_weights sw = split_sign(weight_quants(w[b]));
        const __m256 dw = _mm256_set1_ps(h2f(w[b].d));
        for (int c = 0; c < NC; ++c) {
            const block_q8_0 &xb = reinterpret_cast<const block_q8_0 *>(x + c * xs)[b];
            const __m256i lanes = I::dot4(_mm256_setzero_si256(), sw.u, apply_sign(sw, load32(xb.qs)));
            acc[c] = scale_add(dw, act_d<XD>(xb, xd, nb, c, b), lanes, acc[c]);
        }
    }
    for (int c = 0; c < NC; ++c) out[c] = hsum8(acc[c]);
}

// The same for Q4_1 or Q5_1 weights against Q8_1 rows: d_w * d_x * sum_j(q_j * x_j) + m_w * s_x per
// block, the min terms in a scalar fma chain per row as the AVX2 kernel keeps them.
// note: the chain is written as lane 0 of a vector fma so that the compiler keeps it one
// instruction per block and row; left as std::fma, GCC packs the four rows' chains into one
// vector and gathers their s_x with shuffles, which costs more than it saves.
template <class I, class W, int NC, bool XD>
AS_AVX512 void cols_min(int64_t n, const W *w, const uint8_t *x, size_t xs, const float *xd, float *out) {
    const int64_t nb = n / QK;
    __m256 acc[NC];
    __m128 mins[NC];
    for (int c = 0; c < NC; ++c) acc[c] = _mm256_setzero_ps(), mins[c] = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const __m256i u = weight_unsigned(w[b]); // 0..15 (Q4_1), 0..31 (Q5_1)
        const __m256 dw = _mm256_set1_ps(h2f(w[b].d));
        const __m128 mw = _mm_set_ss(h2f(w[b].m));
        for (int c = 0; c < NC; ++c) {
            const block_q8_1 &xb = reinterpret_cast<const block_q8_1 *>(x + c * xs)[b];
            mins[c] = _mm_fmadd_ps(mw, _mm_set_ss(act_s<XD>(xb, xd, nb, c, b)), mins[c]); // lane 0; the rest stay 0
            const __m256i lanes = I::dot4(_mm256_setzero_si256(), u, load32(xb.qs));
            acc[c] = scale_add(dw, act_d<XD>(xb, xd, nb, c, b), lanes, acc[c]);
        }
    }
    for (int c = 0; c < NC; ++c) out[c] = hsum8(acc[c]) + _mm_cvtss_f32(mins[c]);
}

// A column count chosen at run time (1..kMaxCols), as quants.cpp's cols_dispatch: with xd,
// one pass for all columns; without, column by column from the blocks' own scales.
template <class I, class W, template <class, class, int, bool> class K>
inline void cols_run(int64_t n, const void *wv, const void *xv, size_t xs, const float *xd, int nc, float *out) {
    const W *w = static_cast<const W *>(wv);
    const uint8_t *x = static_cast<const uint8_t *>(xv);
    if (xd == nullptr) {
        for (int c = 0; c < nc; ++c) K<I, W, 1, false>::run(n, w, x + c * xs, xs, nullptr, out + c);
        return;
    }
    switch (nc) {
    case 1: K<I, W, 1, true>::run(n, w, x, xs, xd, out); return;
    case 2: K<I, W, 2, true>::run(n, w, x, xs, xd, out); return;
    case 3: K<I, W, 3, true>::run(n, w, x, xs, xd, out); return;
    default: K<I, W, 4, true>::run(n, w, x, xs, xd, out); return;
    }
}
template <class I, class W, int NC, bool XD> struct k_signed {
    static void run(int64_t n, const W *w, const uint8_t *x, size_t xs, const float *xd, float *o) {
        cols_signed<I, W, NC, XD>(n, w, x, xs, xd, o);
    }
};
template <class I, class W, int NC, bool XD> struct k_min {
    static void run(int64_t n, const W *w, const uint8_t *x, size_t xs, const float *xd, float *o) {
        cols_min<I, W, NC, XD>(n, w, x, xs, xd, o);
    }
};
template <class I, class W, template <class, class, int, bool> class K>
inline float dot_run(int64_t n, const void *w, const void *x) {
    float r;
    K<I, W, 1, false>::run(n, static_cast<const W *>(w), static_cast<const uint8_t *>(x), 0, nullptr, &r);
    return r;
}

// ---- register tiles (tile_kernel.inc) for AVX-512 without VNNI ------------------------------
// (with VNNI the 512-bit tiles of tile_zmm.cpp run instead: 1.4x these, docs/engine.md)

namespace tile_avx512 {
using I = isa_avx512;
struct isa : I {
    using weights = signed_weights;
    AS_AVX512 static weights split(__m256i q) { return split_sign(q); }
    AS_AVX512 static __m256i apply(const weights &w, __m256i x) { return apply_sign(w, x); }
    AS_AVX512 static __m256i dot4(__m256i u, __m256i s) { return I::dot4(_mm256_setzero_si256(), u, s); }
};
#define AS_TILE AS_AVX512
#include "engine/tile_kernel.inc"
#undef AS_TILE
} // namespace tile_avx512


} // namespace

// ---- entry points: one per format and ISA ----------------------------------------------------

#define AS_FORMAT(ATTR, I, SUFFIX, WN, AN, W, K)                                                                \
    ATTR __attribute__((flatten)) float dot_##WN##_##AN##_##SUFFIX(int64_t n, const void *w, const void *x) {     \
        return dot_run<I, W, K>(n, w, x);                                                                       \
    }                                                                                                           \
    ATTR __attribute__((flatten)) void cols_##WN##_##AN##_##SUFFIX(int64_t n, const void *w, const void *x,     \
                                                                   size_t xs, const float *xd, int nc, float *out) { \
        cols_run<I, W, K>(n, w, x, xs, xd, nc, out);                                                            \
    }
#define AS_ENTRY(ATTR, I, SUFFIX)                                  \
    AS_FORMAT(ATTR, I, SUFFIX, q4_0, q8_0, block_q4_0, k_signed)   \
    AS_FORMAT(ATTR, I, SUFFIX, q5_0, q8_0, block_q5_0, k_signed)   \
    AS_FORMAT(ATTR, I, SUFFIX, q8_0, q8_0, block_q8_0, k_signed)   \
    AS_FORMAT(ATTR, I, SUFFIX, q4_1, q8_1, block_q4_1, k_min)     \
    AS_FORMAT(ATTR, I, SUFFIX, q5_1, q8_1, block_q5_1, k_min)
AS_ENTRY(AS_AVX512, isa_avx512, avx512)
AS_ENTRY(AS_AVX512_VNNI, isa_avx512_vnni, avx512vnni)
#undef AS_ENTRY
#undef AS_FORMAT

#define AS_TILE_ENTRY(NS, SUFFIX, WN, AN, W)                                                                       \
    void tile_##WN##_##AN##_##SUFFIX(int64_t n, const void *w, size_t ws, int nr, const void *x, size_t xs,       \
                                     const float *xt, size_t sts, const int32_t *xc, int nc, float *out) {      \
        NS::tile_run<NS::isa, W>(n, w, ws, nr, x, xs, xt, sts, xc, nc, out);                                      \
    }
AS_TILE_ENTRY(tile_avx512, avx512, q4_0, q8_0, block_q4_0)
AS_TILE_ENTRY(tile_avx512, avx512, q5_0, q8_0, block_q5_0)
AS_TILE_ENTRY(tile_avx512, avx512, q8_0, q8_0, block_q8_0)
AS_TILE_ENTRY(tile_avx512, avx512, q4_1, q8_1, block_q4_1)
AS_TILE_ENTRY(tile_avx512, avx512, q5_1, q8_1, block_q5_1)
#undef AS_TILE_ENTRY

} // namespace actorserve
