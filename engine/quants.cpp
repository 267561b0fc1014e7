#include "engine/quants.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cpuid.h>
#include <cstring>
#include <immintrin.h>
#include <type_traits>
#include <utility>

#include "engine/fp16.h"
#include "engine/ops.h"
#include "engine/quants_k.h"
#include "engine/simd_avx2.h"

namespace actorserve {

tensor_type activation_type(tensor_type weight) {
    switch (weight) {
    case tensor_type::q4_0: case tensor_type::q5_0: case tensor_type::q8_0: return tensor_type::q8_0;
    case tensor_type::q4_1: case tensor_type::q5_1: return tensor_type::q8_1;
    case tensor_type::q4_k: case tensor_type::q5_k: case tensor_type::q6_k: return tensor_type::q8_k;
    case tensor_type::f16: return tensor_type::f16;
    default: return tensor_type::f32;
    }
}

size_t row_bytes(tensor_type t, int64_t n) {
    const tensor_type_traits *tr = tensor_traits(static_cast<uint32_t>(t));
    assert(tr && n % tr->block_size == 0);
    return static_cast<size_t>(n / tr->block_size) * tr->type_size;
}

bool is_compute_type(tensor_type t) {
    switch (t) {
    case tensor_type::f32: case tensor_type::f16: case tensor_type::q4_0: case tensor_type::q4_1:
    case tensor_type::q5_0: case tensor_type::q5_1: case tensor_type::q8_0:
    case tensor_type::q4_k: case tensor_type::q5_k: case tensor_type::q6_k: return true;
    default: return false;
    }
}

// ---- activation quantization -------------------------------------------------------------

namespace {
// One block: d = amax / 127 and q = round_to_even(x * 127 / amax). Stores d as a half,
// returns it unrounded; sum = sum(q).
float quantize_block_q8(const float *x, int8_t *q, uint16_t &d_half, int &sum) {
    float amax = 0.0f;
    for (int j = 0; j < QK; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    d_half = fp32_to_fp16(d);
    sum = 0;
    for (int j = 0; j < QK; ++j) {
        q[j] = static_cast<int8_t>(std::nearbyint(x[j] * id)); // |x * id| <= 127
        sum += q[j];
    }
    return d;
}
} // namespace

void quantize_row_q8_0_ref(const float *x, block_q8_0 *y, int64_t n) {
    assert(n % QK == 0);
    int sum;
    for (int64_t b = 0; b < n / QK; ++b) quantize_block_q8(x + b * QK, y[b].qs, y[b].d, sum);
}

void quantize_row_q8_1_ref(const float *x, block_q8_1 *y, int64_t n) {
    assert(n % QK == 0);
    for (int64_t b = 0; b < n / QK; ++b) {
        int sum;
        const float d = quantize_block_q8(x + b * QK, y[b].qs, y[b].d, sum);
        y[b].s = fp32_to_fp16(d * static_cast<float>(sum)); // unrounded d, as llama.cpp
    }
}

void convert_row_f16_ref(const float *x, uint16_t *y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

void quantize_row(tensor_type t, const float *x, void *y, int64_t n) {
    switch (t) {
    case tensor_type::q8_0: quantize_row_q8_0(x, static_cast<block_q8_0 *>(y), n); return;
    case tensor_type::q8_1: quantize_row_q8_1(x, static_cast<block_q8_1 *>(y), n); return;
    case tensor_type::q8_k: quantize_row_q8_k(x, static_cast<block_q8_k *>(y), n); return;
    case tensor_type::f16: convert_row_f16(x, static_cast<uint16_t *>(y), n); return;
    case tensor_type::f32: std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float)); return;
    default: assert(false && "not an activation type");
    }
}

void dequantize_row(tensor_type t, const void *src, float *y, int64_t n) {
    switch (t) {
    case tensor_type::f32: std::memcpy(y, src, static_cast<size_t>(n) * sizeof(float)); return;
    case tensor_type::f16: {
        const uint16_t *x = static_cast<const uint16_t *>(src);
        for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(x[i]);
        return;
    }
    case tensor_type::q8_0: {
        const block_q8_0 *x = static_cast<const block_q8_0 *>(src);
        for (int64_t b = 0; b < n / QK; ++b) {
            const float d = fp16_to_fp32(x[b].d);
            for (int j = 0; j < QK; ++j) y[b * QK + j] = x[b].qs[j] * d;
        }
        return;
    }
    case tensor_type::q4_0: {
        const block_q4_0 *x = static_cast<const block_q4_0 *>(src);
        for (int64_t b = 0; b < n / QK; ++b) {
            const float d = fp16_to_fp32(x[b].d);
            for (int j = 0; j < QK / 2; ++j) {
                y[b * QK + j] = static_cast<float>((x[b].qs[j] & 0x0f) - 8) * d;
                y[b * QK + j + QK / 2] = static_cast<float>((x[b].qs[j] >> 4) - 8) * d;
            }
        }
        return;
    }
    case tensor_type::q4_1: {
        const block_q4_1 *x = static_cast<const block_q4_1 *>(src);
        for (int64_t b = 0; b < n / QK; ++b) {
            const float d = fp16_to_fp32(x[b].d), m = fp16_to_fp32(x[b].m);
            for (int j = 0; j < QK / 2; ++j) {
                y[b * QK + j] = static_cast<float>(x[b].qs[j] & 0x0f) * d + m;
                y[b * QK + j + QK / 2] = static_cast<float>(x[b].qs[j] >> 4) * d + m;
            }
        }
        return;
    }
    case tensor_type::q5_0: dequantize_row_q5_0(static_cast<const block_q5_0 *>(src), y, n); return;
    case tensor_type::q5_1: dequantize_row_q5_1(static_cast<const block_q5_1 *>(src), y, n); return;
    case tensor_type::q4_k: dequantize_row_q4_k(static_cast<const block_q4_k *>(src), y, n); return;
    case tensor_type::q5_k: dequantize_row_q5_k(static_cast<const block_q5_k *>(src), y, n); return;
    case tensor_type::q6_k: dequantize_row_q6_k(static_cast<const block_q6_k *>(src), y, n); return;
    default: assert(false && "dequantize_row: not a compute type");
    }
}

// ---- reference dot products ----------------------------------------------------------------
// Each block contributes (d_w * d_x) * sum_j(qw_j * qx_j), the integer sum exact in int32.

float dot_q4_0_q8_0_ref(int64_t n, const void *wv, const void *xv) {
    const block_q4_0 *w = static_cast<const block_q4_0 *>(wv);
    const block_q8_0 *x = static_cast<const block_q8_0 *>(xv);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / QK; ++b) {
        int sumi = 0;
        for (int j = 0; j < QK / 2; ++j) {
            sumi += ((w[b].qs[j] & 0x0f) - 8) * x[b].qs[j];
            sumi += ((w[b].qs[j] >> 4) - 8) * x[b].qs[j + QK / 2];
        }
        sum += fp16_to_fp32(w[b].d) * fp16_to_fp32(x[b].d) * static_cast<float>(sumi);
    }
    return sum;
}

// x_w = q*d + m, so sum(x_w * x_a) = d_w*d_a*sum(q_w*q_a) + m_w * (d_a*sum(q_a)) = ... + m_w * s_a
float dot_q4_1_q8_1_ref(int64_t n, const void *wv, const void *xv) {
    const block_q4_1 *w = static_cast<const block_q4_1 *>(wv);
    const block_q8_1 *x = static_cast<const block_q8_1 *>(xv);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / QK; ++b) {
        int sumi = 0;
        for (int j = 0; j < QK / 2; ++j) {
            sumi += (w[b].qs[j] & 0x0f) * x[b].qs[j];
            sumi += (w[b].qs[j] >> 4) * x[b].qs[j + QK / 2];
        }
        sum += fp16_to_fp32(w[b].d) * fp16_to_fp32(x[b].d) * static_cast<float>(sumi) +
               fp16_to_fp32(w[b].m) * fp16_to_fp32(x[b].s);
    }
    return sum;
}

float dot_q8_0_q8_0_ref(int64_t n, const void *wv, const void *xv) {
    const block_q8_0 *w = static_cast<const block_q8_0 *>(wv);
    const block_q8_0 *x = static_cast<const block_q8_0 *>(xv);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / QK; ++b) {
        int sumi = 0;
        for (int j = 0; j < QK; ++j) sumi += w[b].qs[j] * x[b].qs[j];
        sum += fp16_to_fp32(w[b].d) * fp16_to_fp32(x[b].d) * static_cast<float>(sumi);
    }
    return sum;
}

// F16 weights sum in ggml_vec_dot_f16's order (ops.h's dot_f16_lanes), the one llama.cpp uses
// for a matrix against one activation row: a decoded token's, and the output row of a prompt.
// (llama.cpp takes a multi-row product through its tiled GEMM instead, so its prompt results
// for F16 matrices depend on the batch; ours do not, and are within tolerance there.)
float dot_f16_f16_ref(int64_t n, const void *wv, const void *xv) {
    return dot_f16_lanes_ref(static_cast<int>(n), static_cast<const uint16_t *>(wv), static_cast<const uint16_t *>(xv));
}

float dot_f32_f32_ref(int64_t n, const void *wv, const void *xv) {
    const float *w = static_cast<const float *>(wv), *x = static_cast<const float *>(xv);
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum += w[i] * x[i];
    return sum;
}

// ---- AVX2 ------------------------------------------------------------------------------------
// Same block maths; the 32 products of a block are formed with maddubs (u8 x i8 -> i16 pairs)
// and madd (i16 pairs -> i32), then scaled and accumulated in 8 float lanes.

#define AS_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace {
using simd::h2f;
using simd::hsum8;
// 16 packed bytes -> 32 nibbles in element order (low nibbles 0..15, high nibbles 16..31).
AS_AVX2 inline __m256i unpack_nibbles(const uint8_t *qs) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(qs));
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(b, 4), b);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}
// sum of u8 * i8 products, as 8 int32 lanes converted to float
AS_AVX2 inline __m256 dot_u8_i8(__m256i u, __m256i s) {
    const __m256i p16 = _mm256_maddubs_epi16(u, s); // |pair| <= 2*255*128: fits i16 for our ranges
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
}
// sum of i8 * i8 products: move x's sign onto y so the first operand is unsigned
AS_AVX2 inline __m256 dot_i8_i8(__m256i x, __m256i y) {
    return dot_u8_i8(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}
} // namespace

// Multi-column kernels: out[c] = dot(w, x_c) for NC activation rows x_c = x + c * xs bytes,
// with one pass over the weight row (its nibbles unpacked once per block for all columns).
// With XD the activation scales come as floats from xd ((NC, nb, 2): d, and s for Q8_1), converted
// once per matmul instead of once per weight row; without, from the blocks. Same values.
// note: each column's accumulator sees exactly the operations of a one-column call, in the
// same order, so a result does not depend on how many columns share the pass; the one-column
// kernels below are these templates with NC = 1.
namespace {
template <bool XD, class B>
AS_AVX2 inline float act_d(const B &xb, const float *xd, int64_t nb, int c, int64_t b) {
    if constexpr (XD) return xd[(c * nb + b) * 2];
    else return h2f(xb.d);
}

// The weight quants of a block in element order: signed (Q4_0, Q5_0, Q8_0, x = q * d) or
// unsigned with a min (Q4_1, Q5_1, x = q * d + m).
AS_AVX2 inline __m256i weight_quants(const block_q4_0 &w) { return _mm256_sub_epi8(unpack_nibbles(w.qs), _mm256_set1_epi8(8)); }
AS_AVX2 inline __m256i weight_quants(const block_q5_0 &w) {
    return _mm256_sub_epi8(_mm256_or_si256(unpack_nibbles(w.qs), simd::fifth_bits(w.qh)), _mm256_set1_epi8(16));
}
AS_AVX2 inline __m256i weight_quants(const block_q8_0 &w) { return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w.qs)); }
AS_AVX2 inline __m256i weight_unsigned(const block_q4_1 &w) { return unpack_nibbles(w.qs); }
AS_AVX2 inline __m256i weight_unsigned(const block_q5_1 &w) { return _mm256_or_si256(unpack_nibbles(w.qs), simd::fifth_bits(w.qh)); }

// W: Q4_0, Q5_0 or Q8_0 weights against Q8_0 rows.
template <int NC, bool XD, class W>
AS_AVX2 void cols_signed(int64_t n, const W *w, const uint8_t *x, size_t xs, const float *xd, float *out) {
    const int64_t nb = n / QK;
    __m256 acc[NC];
    for (int c = 0; c < NC; ++c) acc[c] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const float dw = h2f(w[b].d);
        const __m256i qw = weight_quants(w[b]);
        for (int c = 0; c < NC; ++c) {
            const block_q8_0 &xb = reinterpret_cast<const block_q8_0 *>(x + c * xs)[b];
            const __m256 d = _mm256_set1_ps(dw * act_d<XD>(xb, xd, nb, c, b));
            const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xb.qs));
            acc[c] = _mm256_fmadd_ps(d, dot_i8_i8(qw, qx), acc[c]);
        }
    }
    for (int c = 0; c < NC; ++c) out[c] = hsum8(acc[c]);
}

// W: Q4_1 or Q5_1 weights against Q8_1 rows.
template <int NC, bool XD, class W>
AS_AVX2 void cols_min(int64_t n, const W *w, const uint8_t *x, size_t xs, const float *xd, float *out) {
    const int64_t nb = n / QK;
    __m256 acc[NC];
    float mins[NC];
    for (int c = 0; c < NC; ++c) acc[c] = _mm256_setzero_ps(), mins[c] = 0.0f;
    for (int64_t b = 0; b < nb; ++b) {
        const float dw = h2f(w[b].d), mw = h2f(w[b].m);
        const __m256i qw = weight_unsigned(w[b]);
        for (int c = 0; c < NC; ++c) {
            const block_q8_1 &xb = reinterpret_cast<const block_q8_1 *>(x + c * xs)[b];
            const __m256 d = _mm256_set1_ps(dw * act_d<XD>(xb, xd, nb, c, b));
            const float s = XD ? xd[(c * nb + b) * 2 + 1] : h2f(xb.s);
            mins[c] = std::fma(mw, s, mins[c]); // fused, as llama.cpp's build computes it
            const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xb.qs));
            acc[c] = _mm256_fmadd_ps(d, dot_u8_i8(qw, qx), acc[c]);
        }
    }
    for (int c = 0; c < NC; ++c) out[c] = hsum8(acc[c]) + mins[c];
}

// Instantiates a column count chosen at run time (1..kMaxCols); scales from xd when given.
template <template <int, bool> class K, class W>
void cols_dispatch(int64_t n, const void *w, const void *x, size_t xs, const float *xd, int nc, float *out) {
    const W *wb = static_cast<const W *>(w);
    const uint8_t *xb = static_cast<const uint8_t *>(x);
    if (xd == nullptr) {
        for (int c = 0; c < nc; ++c) K<1, false>::run(n, wb, xb + c * xs, xs, nullptr, out + c);
        return;
    }
    switch (nc) {
    case 1: K<1, true>::run(n, wb, xb, xs, xd, out); return;
    case 2: K<2, true>::run(n, wb, xb, xs, xd, out); return;
    case 3: K<3, true>::run(n, wb, xb, xs, xd, out); return;
    default: K<4, true>::run(n, wb, xb, xs, xd, out); return;
    }
}
#define AS_KERNEL(name, W, fn)                                                                          \
    template <int NC, bool XD> struct name {                                                           \
        static void run(int64_t n, const W *w, const uint8_t *x, size_t xs, const float *xd, float *o) { \
            fn<NC, XD, W>(n, w, x, xs, xd, o);                                                            \
        }                                                                                              \
    };
AS_KERNEL(k_q4_0, block_q4_0, cols_signed)
AS_KERNEL(k_q5_0, block_q5_0, cols_signed)
AS_KERNEL(k_q8_0, block_q8_0, cols_signed)
AS_KERNEL(k_q4_1, block_q4_1, cols_min)
AS_KERNEL(k_q5_1, block_q5_1, cols_min)
#undef AS_KERNEL
} // namespace

// ---- register tiles (tile_kernel.inc) for AVX2 ---------------------------------------------

namespace tile_avx2 {
// The integer step: maddubs pairs, madd into lanes of four. Signed weights: |q| and q's sign
// moved onto x (vpsign), as dot_i8_i8 forms them.
struct isa {
    struct weights { __m256i u, q; };
    AS_AVX2 static weights split(__m256i q) { return {_mm256_sign_epi8(q, q), q}; }
    AS_AVX2 static __m256i apply(const weights &w, __m256i x) { return _mm256_sign_epi8(x, w.q); }
    AS_AVX2 static __m256i dot4(__m256i u, __m256i s) {
        return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
    }
};
#define AS_TILE AS_AVX2
#include "engine/tile_kernel.inc"
#undef AS_TILE
} // namespace tile_avx2

// Entry points per weight format W (its activation format A): the tile, the one-row dot and
// the multi-column kernel.
#define AS_FORMAT(WN, AN, W, K, COLS)                                                                               \
    void tile_##WN##_##AN##_avx2(int64_t n, const void *w, size_t ws, int nr, const void *x, size_t xs,              \
                                 const float *xt, size_t sts, const int32_t *xc, int nc, float *out) {             \
        tile_avx2::tile_run<tile_avx2::isa, W>(n, w, ws, nr, x, xs, xt, sts, xc, nc, out);                          \
    }                                                                                                               \
    AS_AVX2 float dot_##WN##_##AN##_avx2(int64_t n, const void *w, const void *x) {                                  \
        float r;                                                                                                    \
        COLS<1, false, W>(n, static_cast<const W *>(w), static_cast<const uint8_t *>(x), 0, nullptr, &r);            \
        return r;                                                                                                   \
    }                                                                                                               \
    void cols_##WN##_##AN##_avx2(int64_t n, const void *w, const void *x, size_t xs, const float *xd, int nc,        \
                                 float *out) {                                                                      \
        cols_dispatch<K, W>(n, w, x, xs, xd, nc, out);                                                              \
    }
AS_FORMAT(q4_0, q8_0, block_q4_0, k_q4_0, cols_signed)
AS_FORMAT(q5_0, q8_0, block_q5_0, k_q5_0, cols_signed)
AS_FORMAT(q8_0, q8_0, block_q8_0, k_q8_0, cols_signed)
AS_FORMAT(q4_1, q8_1, block_q4_1, k_q4_1, cols_min)
AS_FORMAT(q5_1, q8_1, block_q5_1, k_q5_1, cols_min)
#undef AS_FORMAT

float dot_f16_f16_avx2(int64_t n, const void *wv, const void *xv) {
    return dot_f16_lanes_avx2(static_cast<int>(n), static_cast<const uint16_t *>(wv), static_cast<const uint16_t *>(xv));
}

AS_AVX2 float dot_f32_f32_avx2(int64_t n, const void *wv, const void *xv) {
    const float *w = static_cast<const float *>(wv), *x = static_cast<const float *>(xv);
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), acc);
    float sum = hsum8(acc);
    for (; i < n; ++i) sum += w[i] * x[i];
    return sum;
}

// Activation quantization, 8 lanes at a time: max |x| is exact in any order, x * 127/amax is
// one multiply per lane, rounding is to nearest even as nearbyint, and the block sum is an
// exact integer; so every byte equals the reference's.
namespace {
AS_AVX2 inline float quantize_block_q8_avx2(const float *x, int8_t *q, uint16_t &d_half, int &sum) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 v[4], m = _mm256_setzero_ps();
    for (int k = 0; k < 4; ++k) {
        v[k] = _mm256_loadu_ps(x + 8 * k);
        m = _mm256_max_ps(m, _mm256_andnot_ps(sign, v[k]));
    }
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    const float d = amax / 127.0f;
    const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
    d_half = static_cast<uint16_t>(_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT));
    __m256i i[4];
    for (int k = 0; k < 4; ++k)
        i[k] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[k], id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const __m256i s = _mm256_add_epi32(_mm256_add_epi32(i[0], i[1]), _mm256_add_epi32(i[2], i[3]));
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
    sum = _mm_cvtsi128_si32(s4);
    // int32 -> int8 with saturation (values are within [-127, 127]); packs interleave the lanes,
    // the permute restores element order
    const __m256i a = _mm256_packs_epi32(i[0], i[1]), b = _mm256_packs_epi32(i[2], i[3]);
    const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(a, b), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(q), bytes);
    return d;
}
} // namespace

AS_AVX2 void quantize_row_q8_0_avx2(const float *x, block_q8_0 *y, int64_t n) {
    int sum;
    for (int64_t b = 0; b < n / QK; ++b) quantize_block_q8_avx2(x + b * QK, y[b].qs, y[b].d, sum);
}

AS_AVX2 void quantize_row_q8_1_avx2(const float *x, block_q8_1 *y, int64_t n) {
    for (int64_t b = 0; b < n / QK; ++b) {
        int sum;
        const float d = quantize_block_q8_avx2(x + b * QK, y[b].qs, y[b].d, sum);
        y[b].s = static_cast<uint16_t>(_cvtss_sh(d * static_cast<float>(sum), _MM_FROUND_TO_NEAREST_INT));
    }
}

AS_AVX2 void convert_row_f16_avx2(const float *x, uint16_t *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i *>(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

// ---- dispatch --------------------------------------------------------------------------------

bool cpu_has_avx2() {
    static const bool has = [] {
        __builtin_cpu_init();
        // f16c from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports does not know it
        unsigned a = 0, b = 0, c = 0, d = 0;
        const bool f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
    }();
    return has;
}

bool cpu_has_avx512() {
    static const bool has = cpu_has_avx2() && __builtin_cpu_supports("avx512f") &&
                            __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    return has;
}

bool cpu_has_avx512vnni() {
    static const bool has = cpu_has_avx512() && __builtin_cpu_supports("avx512vnni");
    return has;
}

const char *simd_isa_name(simd_isa isa) {
    switch (isa) {
    case simd_isa::ref: return "ref";
    case simd_isa::avx2: return "avx2";
    case simd_isa::avx512: return "avx512";
    case simd_isa::avx512vnni: return "avx512vnni";
    }
    return "ref";
}

simd_isa cpu_simd_isa() {
    if (cpu_has_avx512vnni()) return simd_isa::avx512vnni;
    if (cpu_has_avx512()) return simd_isa::avx512;
    if (cpu_has_avx2()) return simd_isa::avx2;
    return simd_isa::ref;
}

simd_isa choose_simd_isa(simd_isa cpu, const char *request, bool *unknown) {
    if (unknown) *unknown = false;
    // AVX-512 without VNNI runs only when asked for: its kernels measured slower than AVX2's
    // (docs/engine.md), and the two give the same bits
    const simd_isa best = cpu == simd_isa::avx512 ? simd_isa::avx2 : cpu;
    if (request == nullptr || *request == '\0') return best;
    for (simd_isa isa : {simd_isa::ref, simd_isa::avx2, simd_isa::avx512, simd_isa::avx512vnni})
        if (std::strcmp(request, simd_isa_name(isa)) == 0) return std::min(isa, cpu);
    if (unknown) *unknown = true;
    return best;
}

simd_isa selected_simd_isa() {
    static const simd_isa isa = [] {
        const char *env = std::getenv("ACTORSERVE_SIMD");
        bool unknown = false;
        const simd_isa chosen = choose_simd_isa(cpu_simd_isa(), env, &unknown);
        if (unknown)
            std::fprintf(stderr, "actorserve: ACTORSERVE_SIMD=%s is not one of ref, avx2, avx512, avx512vnni; using %s\n",
                         env, simd_isa_name(chosen));
        return chosen;
    }();
    return isa;
}

bool use_avx2() { return selected_simd_isa() >= simd_isa::avx2; }

const char *simd_level() { return simd_isa_name(selected_simd_isa()); }

void activation_scales(tensor_type t, const void *x, int64_t n, float *xd) {
    const int64_t nb = n / QK;
    if (t == tensor_type::q8_0) {
        const block_q8_0 *b = static_cast<const block_q8_0 *>(x);
        for (int64_t k = 0; k < nb; ++k) xd[2 * k] = fp16_to_fp32(b[k].d), xd[2 * k + 1] = 0.0f;
    } else if (t == tensor_type::q8_1) {
        const block_q8_1 *b = static_cast<const block_q8_1 *>(x);
        for (int64_t k = 0; k < nb; ++k) xd[2 * k] = fp16_to_fp32(b[k].d), xd[2 * k + 1] = fp16_to_fp32(b[k].s);
    }
}

void transpose_scales(const float *xd, int64_t n_rows, int64_t nb, float *xt, size_t sts) {
    for (int64_t b = 0; b < nb; ++b)
        for (int k = 0; k < 2; ++k) {
            float *col = xt + (2 * b + k) * sts;
            for (int64_t c = 0; c < n_rows; ++c) col[c] = xd[(c * nb + b) * 2 + k];
            for (size_t c = static_cast<size_t>(n_rows); c < sts; ++c) col[c] = 0.0f;
        }
}

void quantize_row_q8_0(const float *x, block_q8_0 *y, int64_t n) {
    assert(n % QK == 0);
    use_avx2() ? quantize_row_q8_0_avx2(x, y, n) : quantize_row_q8_0_ref(x, y, n);
}
void quantize_row_q8_1(const float *x, block_q8_1 *y, int64_t n) {
    assert(n % QK == 0);
    use_avx2() ? quantize_row_q8_1_avx2(x, y, n) : quantize_row_q8_1_ref(x, y, n);
}
void convert_row_f16(const float *x, uint16_t *y, int64_t n) {
    use_avx2() ? convert_row_f16_avx2(x, y, n) : convert_row_f16_ref(x, y, n);
}

namespace {
// Columns one by one through a one-column kernel: the fallback for formats and CPUs without
// a multi-column kernel.
template <dot_fn F> void cols_by_dot(int64_t n, const void *w, const void *x, size_t xs, const float *, int nc, float *out) {
    for (int c = 0; c < nc; ++c) out[c] = F(n, w, static_cast<const uint8_t *>(x) + c * xs);
}
} // namespace

namespace {
// One kernel per level for a format: the variant of the selected level.
template <class F> F pick(F ref, F avx2, F avx512, F avx512vnni) {
    switch (selected_simd_isa()) {
    case simd_isa::avx512vnni: return avx512vnni;
    case simd_isa::avx512: return avx512;
    case simd_isa::avx2: return avx2;
    default: return ref;
    }
}
} // namespace

dot_cols_fn dot_cols_kernel(tensor_type weight) {
    switch (weight) {
    case tensor_type::q4_0:
        return pick<dot_cols_fn>(cols_by_dot<dot_q4_0_q8_0_ref>, cols_q4_0_q8_0_avx2, cols_q4_0_q8_0_avx512, cols_q4_0_q8_0_avx512vnni);
    case tensor_type::q4_1:
        return pick<dot_cols_fn>(cols_by_dot<dot_q4_1_q8_1_ref>, cols_q4_1_q8_1_avx2, cols_q4_1_q8_1_avx512, cols_q4_1_q8_1_avx512vnni);
    case tensor_type::q8_0:
        return pick<dot_cols_fn>(cols_by_dot<dot_q8_0_q8_0_ref>, cols_q8_0_q8_0_avx2, cols_q8_0_q8_0_avx512, cols_q8_0_q8_0_avx512vnni);
    case tensor_type::q5_0:
        return pick<dot_cols_fn>(cols_by_dot<dot_q5_0_q8_0_ref>, cols_q5_0_q8_0_avx2, cols_q5_0_q8_0_avx512, cols_q5_0_q8_0_avx512vnni);
    case tensor_type::q5_1:
        return pick<dot_cols_fn>(cols_by_dot<dot_q5_1_q8_1_ref>, cols_q5_1_q8_1_avx2, cols_q5_1_q8_1_avx512, cols_q5_1_q8_1_avx512vnni);
    // the K-quants: the AVX2 kernel on every SIMD level (the same bits as the reference)
    case tensor_type::q4_k: return use_avx2() ? cols_by_dot<dot_q4_k_q8_k_avx2> : cols_by_dot<dot_q4_k_q8_k_ref>;
    case tensor_type::q5_k: return use_avx2() ? cols_by_dot<dot_q5_k_q8_k_avx2> : cols_by_dot<dot_q5_k_q8_k_ref>;
    case tensor_type::q6_k: return use_avx2() ? cols_by_dot<dot_q6_k_q8_k_avx2> : cols_by_dot<dot_q6_k_q8_k_ref>;
    case tensor_type::f16:
        return use_avx2() ? cols_by_dot<dot_f16_f16_avx2> : cols_by_dot<dot_f16_f16_ref>;
    case tensor_type::f32:
        return use_avx2() ? cols_by_dot<dot_f32_f32_avx2> : cols_by_dot<dot_f32_f32_ref>;
    default: return nullptr;
    }
}

tile_kernel_info tile_kernel(tensor_type weight) {
    const simd_isa isa = selected_simd_isa();
    if (isa == simd_isa::avx512vnni) {
        switch (weight) {
        case tensor_type::q4_0: return {tile_q4_0_q8_0_zmm, kZmmSignedRows, kZmmSignedCols, 8};
        case tensor_type::q4_1: return {tile_q4_1_q8_1_zmm, kZmmMinRows, kZmmMinCols, 0};
        case tensor_type::q8_0: return {tile_q8_0_q8_0_zmm, kZmmSignedRows, kZmmSignedCols, 128};
        case tensor_type::q5_0: return {tile_q5_0_q8_0_zmm, kZmmSignedRows, kZmmSignedCols, 16};
        case tensor_type::q5_1: return {tile_q5_1_q8_1_zmm, kZmmMinRows, kZmmMinCols, 0};
        default: break; // the K-quants below
        }
    }
    if (isa == simd_isa::ref) return {};
    const bool wide = isa == simd_isa::avx512;
    const bool evex = isa >= simd_isa::avx512; // the K tiles' 32-register build on both AVX-512 levels
    switch (weight) {
    case tensor_type::q4_k: return {evex ? tile_q4_k_q8_k_avx512 : tile_q4_k_q8_k_avx2, evex ? kKTileRowsWide : kKTileRows, kKTileCols, 0};
    case tensor_type::q5_k: return {evex ? tile_q5_k_q8_k_avx512 : tile_q5_k_q8_k_avx2, evex ? kKTileRowsWide : kKTileRows, kKTileCols, 0};
    case tensor_type::q6_k: return {evex ? tile_q6_k_q8_k_avx512 : tile_q6_k_q8_k_avx2, evex ? kKTileRowsWide : kKTileRows, kKTileCols, 0};
    default: break;
    }
    switch (weight) {
    case tensor_type::q4_0: return {wide ? tile_q4_0_q8_0_avx512 : tile_q4_0_q8_0_avx2, kTileRows, kTileCols, 0};
    case tensor_type::q4_1: return {wide ? tile_q4_1_q8_1_avx512 : tile_q4_1_q8_1_avx2, kTileRows, kTileCols, 0};
    case tensor_type::q8_0: return {wide ? tile_q8_0_q8_0_avx512 : tile_q8_0_q8_0_avx2, kTileRows, kTileCols, 0};
    case tensor_type::q5_0: return {wide ? tile_q5_0_q8_0_avx512 : tile_q5_0_q8_0_avx2, kTileRows, kTileCols, 0};
    case tensor_type::q5_1: return {wide ? tile_q5_1_q8_1_avx512 : tile_q5_1_q8_1_avx2, kTileRows, kTileCols, 0};
    default: return {};
    }
}

void offset_sums(const void *x, int64_t n_rows, size_t xs, int64_t nb, int k, int32_t *xc) {
    for (int64_t c = 0; c < n_rows; ++c) {
        const block_q8_0 *xb = reinterpret_cast<const block_q8_0 *>(static_cast<const uint8_t *>(x) + c * xs);
        for (int64_t b = 0; b < nb; ++b) {
            int32_t *o = xc + (c * nb + b) * 8;
            for (int j = 0; j < 8; ++j) {
                const int8_t *q = xb[b].qs + 4 * j;
                o[j] = -k * (q[0] + q[1] + q[2] + q[3]);
            }
        }
    }
}

dot_fn dot_kernel(tensor_type weight) {
    switch (weight) {
    case tensor_type::q4_0: return pick<dot_fn>(dot_q4_0_q8_0_ref, dot_q4_0_q8_0_avx2, dot_q4_0_q8_0_avx512, dot_q4_0_q8_0_avx512vnni);
    case tensor_type::q4_1: return pick<dot_fn>(dot_q4_1_q8_1_ref, dot_q4_1_q8_1_avx2, dot_q4_1_q8_1_avx512, dot_q4_1_q8_1_avx512vnni);
    case tensor_type::q8_0: return pick<dot_fn>(dot_q8_0_q8_0_ref, dot_q8_0_q8_0_avx2, dot_q8_0_q8_0_avx512, dot_q8_0_q8_0_avx512vnni);
    case tensor_type::q5_0: return pick<dot_fn>(dot_q5_0_q8_0_ref, dot_q5_0_q8_0_avx2, dot_q5_0_q8_0_avx512, dot_q5_0_q8_0_avx512vnni);
    case tensor_type::q5_1: return pick<dot_fn>(dot_q5_1_q8_1_ref, dot_q5_1_q8_1_avx2, dot_q5_1_q8_1_avx512, dot_q5_1_q8_1_avx512vnni);
    case tensor_type::q4_k: return use_avx2() ? dot_q4_k_q8_k_avx2 : dot_q4_k_q8_k_ref;
    case tensor_type::q5_k: return use_avx2() ? dot_q5_k_q8_k_avx2 : dot_q5_k_q8_k_ref;
    case tensor_type::q6_k: return use_avx2() ? dot_q6_k_q8_k_avx2 : dot_q6_k_q8_k_ref;
    case tensor_type::f16: return use_avx2() ? dot_f16_f16_avx2 : dot_f16_f16_ref;
    case tensor_type::f32: return use_avx2() ? dot_f32_f32_avx2 : dot_f32_f32_ref;
    default: return nullptr;
    }
}

} // namespace actorserve
