#include "engine/quants_k.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <immintrin.h>

#include "engine/fp16.h"
#include "engine/quants.h"
#include "engine/simd_avx2.h"

namespace actorserve {

void k_scales(const uint8_t q[12], uint8_t out[16]) {
    // scales 0..3 and mins 0..3: the low 6 bits of bytes 0..3 and 4..7; scales and mins 4..7:
    // the nibbles of bytes 8..11 with the top two bits of bytes 0..3 and 4..7 above them
    for (int j = 0; j < 4; ++j) {
        out[j] = q[j] & 63;
        out[8 + j] = q[j + 4] & 63;
        out[4 + j] = static_cast<uint8_t>((q[j + 8] & 0x0f) | ((q[j] >> 6) << 4));
        out[12 + j] = static_cast<uint8_t>((q[j + 8] >> 4) | ((q[j + 4] >> 6) << 4));
    }
}

// ---- dequantization ---------------------------------------------------------------------------

namespace {
inline int bit(const uint8_t qh[4], int i) {
    uint32_t h;
    std::memcpy(&h, qh, 4);
    return (h >> i) & 1;
}
} // namespace

void dequantize_row_q5_0(const block_q5_0 *x, float *y, int64_t n) {
    for (int64_t b = 0; b < n / 32; ++b, y += 32) {
        const float d = fp16_to_fp32(x[b].d);
        for (int j = 0; j < 16; ++j) {
            y[j] = static_cast<float>(((x[b].qs[j] & 0x0f) | (bit(x[b].qh, j) << 4)) - 16) * d;
            y[j + 16] = static_cast<float>(((x[b].qs[j] >> 4) | (bit(x[b].qh, j + 16) << 4)) - 16) * d;
        }
    }
}

void dequantize_row_q5_1(const block_q5_1 *x, float *y, int64_t n) {
    for (int64_t b = 0; b < n / 32; ++b, y += 32) {
        const float d = fp16_to_fp32(x[b].d), m = fp16_to_fp32(x[b].m);
        for (int j = 0; j < 16; ++j) {
            y[j] = static_cast<float>((x[b].qs[j] & 0x0f) | (bit(x[b].qh, j) << 4)) * d + m;
            y[j + 16] = static_cast<float>((x[b].qs[j] >> 4) | (bit(x[b].qh, j + 16) << 4)) * d + m;
        }
    }
}

namespace {
// Q4_K and Q5_K: x = (d * sc) * q - (dmin * m) per sub-block, q from quant(block, step j, element
// l, high half).
template <class B, class Q> void dequantize_k4(const B *x, float *y, int64_t n, Q quant) {
    for (int64_t b = 0; b < n / QK_K; ++b) {
        uint8_t sm[16];
        k_scales(x[b].scales, sm);
        const float d = fp16_to_fp32(x[b].d), dmin = fp16_to_fp32(x[b].dmin);
        for (int j = 0; j < 4; ++j)
            for (int h = 0; h < 2; ++h) {
                const float dj = d * sm[2 * j + h], mj = dmin * sm[8 + 2 * j + h];
                for (int l = 0; l < 32; ++l) *y++ = dj * static_cast<float>(quant(x[b], j, l, h)) - mj;
            }
    }
}
} // namespace

void dequantize_row_q4_k(const block_q4_k *x, float *y, int64_t n) {
    dequantize_k4(x, y, n, [](const block_q4_k &b, int j, int l, int h) { return (b.qs[32 * j + l] >> (4 * h)) & 0x0f; });
}

void dequantize_row_q5_k(const block_q5_k *x, float *y, int64_t n) {
    dequantize_k4(x, y, n, [](const block_q5_k &b, int j, int l, int h) {
        return ((b.qs[32 * j + l] >> (4 * h)) & 0x0f) + ((b.qh[l] >> (2 * j + h)) & 1) * 16;
    });
}

namespace {
// Q6_K: the 6-bit value of element 32k + e (k = 0..3, e = 0..31) of a 128-element half, from
// its 64 bytes of ql and 32 of qh; 0..63, the -32 applied by the caller.
inline int q6(const uint8_t *ql, const uint8_t *qh, int k, int e) {
    const int lo = k & 1 ? ql[32 + e] : ql[e];
    return ((k < 2 ? lo & 0x0f : lo >> 4) | (((qh[e] >> (2 * k)) & 3) << 4));
}
} // namespace

void dequantize_row_q6_k(const block_q6_k *x, float *y, int64_t n) {
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const float d = fp16_to_fp32(x[b].d);
        for (int h = 0; h < 2; ++h, y += 128) {
            const uint8_t *ql = x[b].ql + 64 * h, *qh = x[b].qh + 32 * h;
            const int8_t *sc = x[b].scales + 8 * h;
            for (int k = 0; k < 4; ++k)
                for (int e = 0; e < 32; ++e)
                    y[32 * k + e] = d * sc[2 * k + e / 16] * static_cast<float>(q6(ql, qh, k, e) - 32);
        }
    }
}

// ---- Q8_K activations -------------------------------------------------------------------------

void quantize_row_q8_k_ref(const float *x, block_q8_k *y, int64_t n) {
    assert(n % QK_K == 0);
    for (int64_t b = 0; b < n / QK_K; ++b, x += QK_K) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < QK_K; ++j)
            if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), max = x[j];
        if (amax == 0.0f) {
            std::memset(&y[b], 0, sizeof(block_q8_k));
            continue;
        }
        const float iscale = -127.0f / max;
        for (int j = 0; j < QK_K; ++j)
            y[b].qs[j] = static_cast<int8_t>(std::min(127, static_cast<int>(std::nearbyint(iscale * x[j]))));
        for (int i = 0; i < QK_K / 16; ++i) {
            int s = 0;
            for (int j = 0; j < 16; ++j) s += y[b].qs[16 * i + j];
            y[b].bsums[i] = static_cast<int16_t>(s);
        }
        y[b].d = 1.0f / iscale;
    }
}

// 8 lanes at a time: |x|'s maximum is exact in any order, the first element reaching it is
// found by a compare, and each quant is one multiply and a round to even: the reference's bytes.
__attribute__((target("avx2,fma,f16c"))) void quantize_row_q8_k_avx2(const float *x, block_q8_k *y, int64_t n) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t b = 0; b < n / QK_K; ++b, x += QK_K) {
        __m256 m = _mm256_setzero_ps();
        for (int j = 0; j < QK_K; j += 8) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)));
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4);
        if (amax == 0.0f) {
            std::memset(&y[b], 0, sizeof(block_q8_k));
            continue;
        }
        int first = 0;
        for (int j = 0; j < QK_K; j += 8) {
            const int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)), _mm256_set1_ps(amax), _CMP_EQ_OQ));
            if (hit) {
                first = j + __builtin_ctz(static_cast<unsigned>(hit));
                break;
            }
        }
        const float iscale = -127.0f / x[first];
        const __m256 vs = _mm256_set1_ps(iscale);
        for (int j = 0; j < QK_K; j += 32) {
            __m256i i[4];
            for (int k = 0; k < 4; ++k)
                i[k] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(vs, _mm256_loadu_ps(x + j + 8 * k)),
                                                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)),
                                        _mm256_set1_epi32(127));
            const __m256i a = _mm256_packs_epi32(i[0], i[1]), c = _mm256_packs_epi32(i[2], i[3]);
            const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(a, c), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
            _mm256_storeu_si256(reinterpret_cast<__m256i *>(y[b].qs + j), bytes);
        }
        for (int k = 0; k < QK_K / 16; ++k) {
            // 16 bytes -> 16 int16 -> pairwise sums -> one int
            const __m256i w = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i *>(y[b].qs + 16 * k)));
            __m256i s = _mm256_madd_epi16(w, _mm256_set1_epi16(1));
            __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
            s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
            s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
            y[b].bsums[k] = static_cast<int16_t>(_mm_cvtsi128_si32(s4));
        }
        y[b].d = 1.0f / iscale;
    }
}

void quantize_row_q8_k(const float *x, block_q8_k *y, int64_t n) {
    assert(n % QK_K == 0);
    use_avx2() ? quantize_row_q8_k_avx2(x, y, n) : quantize_row_q8_k_ref(x, y, n);
}

// ---- reference dots ---------------------------------------------------------------------------

float dot_q5_0_q8_0_ref(int64_t n, const void *wv, const void *xv) {
    const block_q5_0 *w = static_cast<const block_q5_0 *>(wv);
    const block_q8_0 *x = static_cast<const block_q8_0 *>(xv);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / 32; ++b) {
        int sumi = 0;
        for (int j = 0; j < 16; ++j) {
            sumi += (((w[b].qs[j] & 0x0f) | (bit(w[b].qh, j) << 4)) - 16) * x[b].qs[j];
            sumi += (((w[b].qs[j] >> 4) | (bit(w[b].qh, j + 16) << 4)) - 16) * x[b].qs[j + 16];
        }
        sum += fp16_to_fp32(w[b].d) * fp16_to_fp32(x[b].d) * static_cast<float>(sumi);
    }
    return sum;
}

float dot_q5_1_q8_1_ref(int64_t n, const void *wv, const void *xv) {
    const block_q5_1 *w = static_cast<const block_q5_1 *>(wv);
    const block_q8_1 *x = static_cast<const block_q8_1 *>(xv);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / 32; ++b) {
        int sumi = 0;
        for (int j = 0; j < 16; ++j) {
            sumi += ((w[b].qs[j] & 0x0f) | (bit(w[b].qh, j) << 4)) * x[b].qs[j];
            sumi += ((w[b].qs[j] >> 4) | (bit(w[b].qh, j + 16) << 4)) * x[b].qs[j + 16];
        }
        sum += fp16_to_fp32(w[b].d) * fp16_to_fp32(x[b].d) * static_cast<float>(sumi) +
               fp16_to_fp32(w[b].m) * fp16_to_fp32(x[b].s);
    }
    return sum;
}

namespace {
// hsum8's order (simd_avx2.h) on 8 floats: lanes j and j + 4, then those pairwise.
float fold8(const float l[8]) {
    const float s0 = l[0] + l[4], s1 = l[1] + l[5], s2 = l[2] + l[6], s3 = l[3] + l[7];
    return (s0 + s2) + (s1 + s3);
}

// The Q4_K / Q5_K super-block step, shared by both: lane sums of q * q8 scaled per sub-block
// into li, and the 4 lanes of the mins term (sub-blocks 2m, 2m + 1 in lane m) into lm.
template <class Q>
void k4_lanes(const uint8_t sm[16], const block_q8_k &x, Q quant, int li[8], int lm[4]) {
    for (int l = 0; l < 8; ++l) li[l] = 0;
    for (int j = 0; j < 4; ++j)
        for (int e = 0; e < 32; ++e) {
            li[e / 4] += sm[2 * j] * quant(j, e, false) * x.qs[64 * j + e];
            li[e / 4] += sm[2 * j + 1] * quant(j, e, true) * x.qs[64 * j + 32 + e];
        }
    for (int m = 0; m < 4; ++m)
        lm[m] = sm[8 + 2 * m] * (x.bsums[4 * m] + x.bsums[4 * m + 1]) +
                sm[8 + 2 * m + 1] * (x.bsums[4 * m + 2] + x.bsums[4 * m + 3]);
}
} // namespace

float dot_q4_k_q8_k_ref(int64_t n, const void *wv, const void *xv) {
    const block_q4_k *w = static_cast<const block_q4_k *>(wv);
    const block_q8_k *x = static_cast<const block_q8_k *>(xv);
    float acc[8] = {}, acc_m[4] = {};
    for (int64_t b = 0; b < n / QK_K; ++b) {
        uint8_t sm[16];
        k_scales(w[b].scales, sm);
        const float d = x[b].d * fp16_to_fp32(w[b].d), dmin = -x[b].d * fp16_to_fp32(w[b].dmin);
        int li[8], lm[4];
        const uint8_t *qs = w[b].qs;
        k4_lanes(sm, x[b], [&](int j, int e, bool hi) { return hi ? qs[32 * j + e] >> 4 : qs[32 * j + e] & 0x0f; }, li, lm);
        for (int l = 0; l < 8; ++l) acc[l] = std::fma(d, static_cast<float>(li[l]), acc[l]);
        for (int m = 0; m < 4; ++m) acc_m[m] = std::fma(dmin, static_cast<float>(lm[m]), acc_m[m]);
    }
    return fold8(acc) + ((acc_m[0] + acc_m[2]) + (acc_m[1] + acc_m[3]));
}

float dot_q5_k_q8_k_ref(int64_t n, const void *wv, const void *xv) {
    const block_q5_k *w = static_cast<const block_q5_k *>(wv);
    const block_q8_k *x = static_cast<const block_q8_k *>(xv);
    float acc[8] = {}, mins = 0.0f;
    for (int64_t b = 0; b < n / QK_K; ++b) {
        uint8_t sm[16];
        k_scales(w[b].scales, sm);
        const float d = x[b].d * fp16_to_fp32(w[b].d), dmin = -x[b].d * fp16_to_fp32(w[b].dmin);
        int li[8], lm[4];
        const uint8_t *qs = w[b].qs, *qh = w[b].qh;
        k4_lanes(sm, x[b], [&](int j, int e, bool hi) {
            const int lo4 = hi ? qs[32 * j + e] >> 4 : qs[32 * j + e] & 0x0f;
            return lo4 | (((qh[e] >> (2 * j + (hi ? 1 : 0))) & 1) << 4);
        }, li, lm);
        for (int l = 0; l < 8; ++l) acc[l] = std::fma(d, static_cast<float>(li[l]), acc[l]);
        mins = std::fma(dmin, static_cast<float>(lm[0] + lm[1] + lm[2] + lm[3]), mins);
    }
    return fold8(acc) + mins;
}

// Q6_K: each lane takes its own elements' (q - 32) * q8, as the AVX2 kernel of the llama.cpp
// the fixtures come from subtracts 32 * q8 pairwise before scaling. (Later llama.cpp releases
// subtract the offsets per 16-element sub-block, which spreads the same total differently over
// the lanes and so changes the last bits.)
float dot_q6_k_q8_k_ref(int64_t n, const void *wv, const void *xv) {
    const block_q6_k *w = static_cast<const block_q6_k *>(wv);
    const block_q8_k *x = static_cast<const block_q8_k *>(xv);
    float acc[8] = {};
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const float d = x[b].d * fp16_to_fp32(w[b].d);
        int li[8] = {};
        for (int h = 0; h < 2; ++h) {
            const uint8_t *ql = w[b].ql + 64 * h, *qh = w[b].qh + 32 * h;
            for (int k = 0; k < 4; ++k)
                for (int e = 0; e < 32; ++e)
                    li[e / 4] += w[b].scales[8 * h + 2 * k + e / 16] * (q6(ql, qh, k, e) - 32) * x[b].qs[128 * h + 32 * k + e];
        }
        for (int l = 0; l < 8; ++l) acc[l] = std::fma(d, static_cast<float>(li[l]), acc[l]);
    }
    return fold8(acc);
}

// ---- AVX2 -------------------------------------------------------------------------------------

#define AS_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace {
using simd::h2f;
using simd::hsum8;
AS_AVX2 inline __m256i load32(const void *p) { return _mm256_loadu_si256(static_cast<const __m256i *>(p)); }
// 8 int32 lanes of sc * (u . s) over 4-byte groups (u unsigned <= 63, s signed: no saturation)
AS_AVX2 inline __m256i scaled_dot(__m256i u, __m256i s, __m256i sc16) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), sc16);
}
// The mins term of a Q4_K / Q5_K super-block as 4 int32 lanes (lane m: sub-blocks 2m, 2m + 1).
AS_AVX2 inline __m128i k4_mins(const uint8_t sm[16], const block_q8_k &x) {
    const __m128i mins = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(sm + 8)));
    const __m256i bs = load32(x.bsums);
    const __m128i q8s = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
    return _mm_madd_epi16(mins, q8s);
}
} // namespace

AS_AVX2 float dot_q4_k_q8_k_avx2(int64_t n, const void *wv, const void *xv) {
    const block_q4_k *w = static_cast<const block_q4_k *>(wv);
    const block_q8_k *x = static_cast<const block_q8_k *>(xv);
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256 acc = _mm256_setzero_ps();
    __m128 acc_m = _mm_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; ++b) {
        uint8_t sm[16];
        k_scales(w[b].scales, sm);
        const float d = x[b].d * h2f(w[b].d), dmin = -x[b].d * h2f(w[b].dmin);
        acc_m = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(k4_mins(sm, x[b])), acc_m);
        __m256i sumi = _mm256_setzero_si256();
        for (int j = 0; j < 4; ++j) {
            const __m256i q = load32(w[b].qs + 32 * j);
            const __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(scaled_dot(lo, load32(x[b].qs + 64 * j), _mm256_set1_epi16(sm[2 * j])),
                                                           scaled_dot(hi, load32(x[b].qs + 64 * j + 32), _mm256_set1_epi16(sm[2 * j + 1]))));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    acc_m = _mm_add_ps(acc_m, _mm_movehl_ps(acc_m, acc_m));
    acc_m = _mm_add_ss(acc_m, _mm_movehdup_ps(acc_m));
    return hsum8(acc) + _mm_cvtss_f32(acc_m);
}

AS_AVX2 float dot_q5_k_q8_k_avx2(int64_t n, const void *wv, const void *xv) {
    const block_q5_k *w = static_cast<const block_q5_k *>(wv);
    const block_q8_k *x = static_cast<const block_q8_k *>(xv);
    const __m256i m4 = _mm256_set1_epi8(0x0f), m16 = _mm256_set1_epi8(16);
    __m256 acc = _mm256_setzero_ps();
    float mins = 0.0f;
    for (int64_t b = 0; b < n / QK_K; ++b) {
        uint8_t sm[16];
        k_scales(w[b].scales, sm);
        const float d = x[b].d * h2f(w[b].d), dmin = -x[b].d * h2f(w[b].dmin);
        __m128i mi = k4_mins(sm, x[b]);
        mi = _mm_add_epi32(mi, _mm_shuffle_epi32(mi, 0x4e));
        mi = _mm_add_epi32(mi, _mm_shuffle_epi32(mi, 0xb1));
        mins = std::fma(dmin, static_cast<float>(_mm_cvtsi128_si32(mi)), mins);
        const __m256i qh = load32(w[b].qh);
        __m256i sumi = _mm256_setzero_si256();
        for (int j = 0; j < 4; ++j) {
            const __m256i q = load32(w[b].qs + 32 * j);
            // bit 2j (low half) and 2j + 1 (high half) of each qh byte, moved to bit 4
            const __m256i h0 = _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * j), 4), m16);
            const __m256i h1 = _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * j + 1), 4), m16);
            const __m256i lo = _mm256_or_si256(_mm256_and_si256(q, m4), h0);
            const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), h1);
            sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(scaled_dot(lo, load32(x[b].qs + 64 * j), _mm256_set1_epi16(sm[2 * j])),
                                                           scaled_dot(hi, load32(x[b].qs + 64 * j + 32), _mm256_set1_epi16(sm[2 * j + 1]))));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum8(acc) + mins;
}

AS_AVX2 float dot_q6_k_q8_k_avx2(int64_t n, const void *wv, const void *xv) {
    const block_q6_k *w = static_cast<const block_q6_k *>(wv);
    const block_q8_k *x = static_cast<const block_q8_k *>(xv);
    const __m256i m4 = _mm256_set1_epi8(0x0f), m3 = _mm256_set1_epi8(3), m32 = _mm256_set1_epi8(32);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const float d = x[b].d * h2f(w[b].d);
        __m256i sumi = _mm256_setzero_si256();
        for (int h = 0; h < 2; ++h) {
            const uint8_t *ql = w[b].ql + 64 * h;
            const __m256i l0 = load32(ql), l1 = load32(ql + 32), qh = load32(w[b].qh + 32 * h);
            const __m256i q[4] = {
                _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m3), 4)),
                _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m3), 4)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m3), 4)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m3), 4)),
            };
            for (int k = 0; k < 4; ++k) {
                // sub-blocks 8h + 2k (bytes 0..15) and 8h + 2k + 1 (bytes 16..31)
                const int s = 8 * h + 2 * k;
                const __m256i sc16 = _mm256_set_m128i(_mm_set1_epi16(w[b].scales[s + 1]), _mm_set1_epi16(w[b].scales[s]));
                const __m256i x8 = load32(x[b].qs + 128 * h + 32 * k);
                // (q - 32) . x pairwise in int16: |q . x| <= 2 * 63 * 128 and |32 . x| <= 2 * 32 * 128
                const __m256i p16 = _mm256_sub_epi16(_mm256_maddubs_epi16(q[k], x8), _mm256_maddubs_epi16(m32, x8));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p16, sc16));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum8(acc);
}

} // namespace actorserve
