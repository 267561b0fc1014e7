#include "engine/ops.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <vector>

#include <immintrin.h>

#include "engine/fp16.h"
#include "engine/simd_avx2.h"
#include "engine/quants.h"

namespace actorserve {

void rms_norm(const float *x, const float *w, float *y, int n, float eps) {
    double ss = 0.0;
    for (int i = 0; i < n; ++i) ss += static_cast<double>(x[i] * x[i]); // square in float, sum in double
    const float mean = static_cast<float>(ss / n);
    const float scale = 1.0f / std::sqrt(mean + eps);
    for (int i = 0; i < n; ++i) y[i] = (x[i] * scale) * w[i];
}

void rope_norm(float *x, int head_dim, int n_rot, int pos, float theta_base, float freq_scale,
               const float *freq_factors) {
    const float theta_scale = std::pow(theta_base, -2.0f / static_cast<float>(n_rot));
    float theta = static_cast<float>(pos);
    for (int i = 0; i < n_rot && i + 1 < head_dim; i += 2) {
        const float ff = freq_factors ? freq_factors[i / 2] : 1.0f;
        const float angle = freq_scale * (theta / ff);
        const float c = std::cos(angle), s = std::sin(angle);
        const float x0 = x[i], x1 = x[i + 1];
        // fused: one rounding per output, as llama.cpp's compiled rotation does
        x[i] = std::fma(x0, c, -(x1 * s));
        x[i + 1] = std::fma(x0, s, x1 * c);
        theta *= theta_scale;
    }
}

void rope_neox(float *x, int head_dim, int n_rot, int pos, float theta_base, float freq_scale,
               const float *freq_factors) {
    const float theta_scale = std::pow(theta_base, -2.0f / static_cast<float>(n_rot));
    const int half = n_rot / 2;
    float theta = static_cast<float>(pos);
    for (int i = 0; i < half && i + half < head_dim; ++i) {
        const float ff = freq_factors ? freq_factors[i] : 1.0f;
        const float angle = freq_scale * (theta / ff);
        const float c = std::cos(angle), s = std::sin(angle);
        const float x0 = x[i], x1 = x[i + half];
        x[i] = std::fma(x0, c, -(x1 * s));
        x[i + half] = std::fma(x0, s, x1 * c);
        theta *= theta_scale;
    }
}

namespace {
float from_bits(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
uint32_t to_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }

// Sum of 8 lanes in the order of a 256-bit horizontal add: halves, then pairs, then the two.
float hsum8(const float *l) {
    const float a0 = l[0] + l[4], a1 = l[1] + l[5], a2 = l[2] + l[6], a3 = l[3] + l[7];
    return (a0 + a2) + (a1 + a3);
}
} // namespace

float exp_poly(float x) {
    const float shift = 0x1.8p23f;                  // 1.5 * 2^23: adding it rounds to an integer
    const float z = std::fma(x, 0x1.715476p+0f, shift); // x / ln2 + shift
    const float n = z - shift;                      // round(x / ln2)
    // b = x - n ln2, ln2 split in two parts so the product is exact
    const float b = std::fma(-n, 0x1.7f7d1cp-20f, std::fma(-n, 0x1.62e4p-1f, x));
    const uint32_t e = to_bits(z) << 23;            // n in the exponent field
    const float k = from_bits(e + to_bits(1.0f));   // 2^n
    const float u = b * b;
    const float j = std::fma(std::fma(std::fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u,
                                      std::fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)),
                             u, 0x1.ffffecp-1f * b); // e^b - 1
    if (!(std::fabs(n) > 126.0f)) return std::fma(j, k, k);
    // |n| > 126: 2^n is not a normal float; scale in two steps, or saturate past 192
    const uint32_t g = n <= 0.0f ? 0x82000000u : 0u;
    const float s1 = from_bits(g + 0x7f000000u);
    const float s2 = from_bits(e - g);
    if (std::fabs(n) > 192.0f) return s1 * s1;
    return std::fma(s2, j, s2) * s1;
}

namespace {
// x *= scale in place; returns the new maximum. Shared by both softmax variants.
float scale_and_max(float *x, int n, float scale) {
    float mx = -INFINITY;
    for (int i = 0; i < n; ++i) {
        x[i] *= scale;
        mx = x[i] > mx ? x[i] : mx; // not std::fmax: a libm call per element at -O2, 3% of pp512
    }
    return mx;
}
} // namespace

void softmax_ref(float *x, int n, float scale) {
    const float mx = scale_and_max(x, n, scale);
    double sum = 0.0;
    const int n8 = n & ~7;
    for (int i = 0; i < n8; i += 8) {
        for (int l = 0; l < 8; ++l) x[i + l] = exp_poly(x[i + l] - mx);
        sum += static_cast<double>(hsum8(x + i));
    }
    for (int i = n8; i < n; ++i) { // tail: libm, as llama.cpp's scalar remainder
        x[i] = std::exp(x[i] - mx);
        sum += static_cast<double>(x[i]);
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int i = 0; i < n; ++i) x[i] *= inv;
}

void swiglu_ref(const float *g, const float *u, float *y, int n) {
    const int n8 = n & ~7;
    int i = 0;
    for (; i < n8; ++i) y[i] = g[i] / (1.0f + exp_poly(0.0f - g[i])) * u[i];
    for (; i < n; ++i) y[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i]; // tail: as llama.cpp's scalar path
}

namespace {
// One step of the gemm order: 8 lanes, acc[l] += a[l] * b[l].
inline void gemm_step_ref(float *acc, const uint16_t *a, const uint16_t *b) {
    for (int l = 0; l < 8; ++l) acc[l] = std::fma(fp16_to_fp32(a[l]), fp16_to_fp32(b[l]), acc[l]);
}
// One step of the lanes order: 32 elements into 4 x 8 accumulators.
inline void lanes_step_ref(float (*acc)[8], const uint16_t *a, const uint16_t *b) {
    for (int r = 0; r < 4; ++r)
        for (int l = 0; l < 8; ++l)
            acc[r][l] = std::fma(fp16_to_fp32(a[r * 8 + l]), fp16_to_fp32(b[r * 8 + l]), acc[r][l]);
}
// The 4 x 8 accumulators folded as ggml's reduce: rows pairwise, 256 -> 128 bits, two hadds.
inline float lanes_fold_ref(const float (*acc)[8]) {
    float v[8];
    for (int l = 0; l < 8; ++l) v[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
    const float t0 = v[0] + v[4], t1 = v[1] + v[5], t2 = v[2] + v[6], t3 = v[3] + v[7];
    return (t0 + t1) + (t2 + t3);
}
// Element i of a paged row (see matvec_f16_lanes_paged).
inline const uint16_t *paged_at(const uint16_t *a, const int32_t *blocks, size_t block_stride, int block_len, int i) {
    return a + static_cast<size_t>(blocks[i / block_len]) * block_stride + i % block_len;
}
} // namespace

float dot_f16_gemm_ref(int n, const uint16_t *a, const uint16_t *b) {
    assert(n % 8 == 0);
    float acc[8] = {};
    for (int i = 0; i < n; i += 8) gemm_step_ref(acc, a + i, b + i);
    return hsum8(acc);
}
float dot_f16_lanes_ref(int n, const uint16_t *a, const uint16_t *b) {
    float acc[4][8] = {};
    const int n32 = n & ~31;
    for (int i = 0; i < n32; i += 32) lanes_step_ref(acc, a + i, b + i);
    double sum = static_cast<double>(lanes_fold_ref(acc));
    for (int i = n32; i < n; ++i) sum += static_cast<double>(fp16_to_fp32(a[i]) * fp16_to_fp32(b[i]));
    return static_cast<float>(sum);
}

namespace {
// One row of a paged matrix (see matvec_f16_lanes_paged): the contiguous dots' steps, in the
// same order, segment by segment.
float dot_f16_gemm_paged_ref(int n, const uint16_t *a, const int32_t *blocks, size_t block_stride, int block_len,
                             const uint16_t *b) {
    float acc[8] = {};
    for (int s = 0, i0 = 0; i0 < n; ++s, i0 += block_len) {
        const uint16_t *seg = a + static_cast<size_t>(blocks[s]) * block_stride;
        const int len = std::min(block_len, n - i0);
        for (int i = 0; i < len; i += 8) gemm_step_ref(acc, seg + i, b + i0 + i);
    }
    return hsum8(acc);
}
float dot_f16_lanes_paged_ref(int n, const uint16_t *a, const int32_t *blocks, size_t block_stride, int block_len,
                              const uint16_t *b) {
    float acc[4][8] = {};
    const int n32 = n & ~31;
    for (int s = 0, i0 = 0; i0 < n32; ++s, i0 += block_len) {
        const uint16_t *seg = a + static_cast<size_t>(blocks[s]) * block_stride;
        const int len = std::min(block_len, n32 - i0);
        for (int i = 0; i < len; i += 32) lanes_step_ref(acc, seg + i, b + i0 + i);
    }
    double sum = static_cast<double>(lanes_fold_ref(acc));
    for (int i = n32; i < n; ++i)
        sum += static_cast<double>(fp16_to_fp32(*paged_at(a, blocks, block_stride, block_len, i)) * fp16_to_fp32(b[i]));
    return static_cast<float>(sum);
}
} // namespace

void matvec_f16_lanes_paged_ref(int n, int n_rows, const uint16_t *v, const int32_t *blocks, size_t block_stride,
                                int block_len, const uint16_t *w, float *y) {
    assert(block_len > 0 && block_len % 32 == 0);
    for (int r = 0; r < n_rows; ++r)
        y[r] = dot_f16_lanes_paged_ref(n, v + static_cast<size_t>(r) * block_len, blocks, block_stride, block_len, w);
}
void matvec_f16_gemm_paged_ref(int n, int n_rows, const uint16_t *v, const int32_t *blocks, size_t block_stride,
                               int block_len, const uint16_t *w, float *y) {
    assert(n % 8 == 0 && block_len > 0 && block_len % 32 == 0);
    for (int r = 0; r < n_rows; ++r)
        y[r] = dot_f16_gemm_paged_ref(n, v + static_cast<size_t>(r) * block_len, blocks, block_stride, block_len, w);
}

void add_inplace(float *y, const float *x, int n) {
    for (int i = 0; i < n; ++i) y[i] += x[i];
}

namespace {
// ggml's gelu: 0.5 x (1 + tanh(sqrt(2/pi) x (1 + 0.044715 x^2))), in float, for every half.
// note: GCC contracts ggml's 1 + 0.044715 x x into fma(0.044715 x, x, 1) (C's default
// -ffp-contract=fast, with FMA enabled); written so here, since this tree compiles with
// contraction off. It changes one entry of the table (x = -1.999), enough to move a Gemma 3
// 270M logit by 0.5 once a token's activation lands on it.
const std::vector<uint16_t> &gelu_table() {
    static const std::vector<uint16_t> table = [] {
        constexpr float kCoefA = 0.044715f, kSqrt2OverPi = 0.79788456080286535587989211986876f;
        std::vector<uint16_t> t(65536);
        for (uint32_t i = 0; i < t.size(); ++i) {
            const float x = fp16_to_fp32(static_cast<uint16_t>(i));
            t[i] = fp32_to_fp16(0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * std::fma(kCoefA * x, x, 1.0f))));
        }
        return t;
    }();
    return table;
}
} // namespace

// The table widened to floats once (256 KiB), for the AVX2 gather; the same values.
static const std::vector<float> &gelu_table_f32() {
    static const std::vector<float> table = [] {
        const std::vector<uint16_t> &h = gelu_table();
        std::vector<float> t(h.size());
        for (size_t i = 0; i < h.size(); ++i) t[i] = fp16_to_fp32(h[i]);
        return t;
    }();
    return table;
}

void geglu_ref(const float *g, const float *u, float *y, int n) {
    const uint16_t *table = gelu_table().data();
    for (int i = 0; i < n; ++i) {
        const float x = g[i];
        if (x <= -10.0f) y[i] = 0.0f;
        else if (x >= 10.0f) y[i] = x * u[i];
        else y[i] = fp16_to_fp32(table[fp32_to_fp16(x)]) * u[i];
    }
}

void softcap(float *x, int n, float c) {
    const float inv = 1.0f / c;
    for (int i = 0; i < n; ++i) x[i] = std::tanh(x[i] * inv) * c;
}

// ---- AVX2 + F16C: the same operations lane for lane, so results are bit-identical ----

#define AS_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace {
using simd::load_f16x8;
} // namespace

namespace {
struct lanes_acc_avx2 {
    __m256 r0, r1, r2, r3;
};
AS_AVX2 inline void lanes_step_avx2(lanes_acc_avx2 &acc, const uint16_t *a, const uint16_t *b) {
    acc.r0 = _mm256_fmadd_ps(load_f16x8(a), load_f16x8(b), acc.r0);
    acc.r1 = _mm256_fmadd_ps(load_f16x8(a + 8), load_f16x8(b + 8), acc.r1);
    acc.r2 = _mm256_fmadd_ps(load_f16x8(a + 16), load_f16x8(b + 16), acc.r2);
    acc.r3 = _mm256_fmadd_ps(load_f16x8(a + 24), load_f16x8(b + 24), acc.r3);
}
AS_AVX2 inline float lanes_fold_avx2(const lanes_acc_avx2 &acc) { return simd::lanes_fold(acc.r0, acc.r1, acc.r2, acc.r3); }
} // namespace

AS_AVX2 float dot_f16_lanes_avx2(int n, const uint16_t *a, const uint16_t *b) {
    lanes_acc_avx2 acc{_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    const int n32 = n & ~31;
    for (int i = 0; i < n32; i += 32) lanes_step_avx2(acc, a + i, b + i);
    double sum = static_cast<double>(lanes_fold_avx2(acc));
    for (int i = n32; i < n; ++i) sum += static_cast<double>(fp16_to_fp32(a[i]) * fp16_to_fp32(b[i]));
    return static_cast<float>(sum);
}

AS_AVX2 float dot_f16_gemm_avx2(int n, const uint16_t *a, const uint16_t *b) {
    assert(n % 8 == 0);
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n; i += 8) acc = _mm256_fmadd_ps(load_f16x8(a + i), load_f16x8(b + i), acc);
    return simd::hsum8(acc);
}

namespace {
constexpr int kLaneTileRows = 64; // rows whose accumulators one pass keeps (8 KiB of lanes state)
} // namespace

AS_AVX2 void matvec_f16_lanes_paged_avx2(int n, int n_rows, const uint16_t *v, const int32_t *blocks,
                                         size_t block_stride, int block_len, const uint16_t *w, float *y) {
    assert(block_len > 0 && block_len % 32 == 0);
    alignas(32) float acc[kLaneTileRows][32]; // per row: the 4 x 8 lanes accumulators
    const int n32 = n & ~31;
    for (int r0 = 0; r0 < n_rows; r0 += kLaneTileRows) {
        const int nr = std::min(kLaneTileRows, n_rows - r0);
        std::memset(acc, 0, sizeof(float) * 32 * static_cast<size_t>(nr));
        for (int s = 0, i0 = 0; i0 < n32; ++s, i0 += block_len) {
            const uint16_t *tile = v + static_cast<size_t>(blocks[s]) * block_stride + static_cast<size_t>(r0) * block_len;
            const int len = std::min(block_len, n32 - i0);
            for (int k = 0; k < len; k += 32) {
                const uint16_t *wk = w + i0 + k;
                const __m256 w0 = load_f16x8(wk), w1 = load_f16x8(wk + 8), w2 = load_f16x8(wk + 16), w3 = load_f16x8(wk + 24);
                for (int r = 0; r < nr; ++r) {
                    const uint16_t *a = tile + static_cast<size_t>(r) * block_len + k;
                    float *st = acc[r];
                    _mm256_store_ps(st, _mm256_fmadd_ps(load_f16x8(a), w0, _mm256_load_ps(st)));
                    _mm256_store_ps(st + 8, _mm256_fmadd_ps(load_f16x8(a + 8), w1, _mm256_load_ps(st + 8)));
                    _mm256_store_ps(st + 16, _mm256_fmadd_ps(load_f16x8(a + 16), w2, _mm256_load_ps(st + 16)));
                    _mm256_store_ps(st + 24, _mm256_fmadd_ps(load_f16x8(a + 24), w3, _mm256_load_ps(st + 24)));
                }
            }
        }
        for (int r = 0; r < nr; ++r) {
            const float *st = acc[r];
            const lanes_acc_avx2 a{_mm256_load_ps(st), _mm256_load_ps(st + 8), _mm256_load_ps(st + 16), _mm256_load_ps(st + 24)};
            double sum = static_cast<double>(lanes_fold_avx2(a));
            const uint16_t *row = v + static_cast<size_t>(r0 + r) * block_len;
            for (int i = n32; i < n; ++i)
                sum += static_cast<double>(fp16_to_fp32(*paged_at(row, blocks, block_stride, block_len, i)) * fp16_to_fp32(w[i]));
            y[r0 + r] = static_cast<float>(sum);
        }
    }
}

AS_AVX2 void matvec_f16_gemm_paged_avx2(int n, int n_rows, const uint16_t *v, const int32_t *blocks,
                                        size_t block_stride, int block_len, const uint16_t *w, float *y) {
    assert(n % 8 == 0 && block_len > 0 && block_len % 32 == 0);
    alignas(32) float acc[kLaneTileRows][8]; // per row: the 8-lane accumulator
    for (int r0 = 0; r0 < n_rows; r0 += kLaneTileRows) {
        const int nr = std::min(kLaneTileRows, n_rows - r0);
        std::memset(acc, 0, sizeof(float) * 8 * static_cast<size_t>(nr));
        for (int s = 0, i0 = 0; i0 < n; ++s, i0 += block_len) {
            const uint16_t *tile = v + static_cast<size_t>(blocks[s]) * block_stride + static_cast<size_t>(r0) * block_len;
            const uint16_t *ws = w + i0;
            const int len = std::min(block_len, n - i0);
            int r = 0;
            for (; r + 4 <= nr; r += 4) { // four rows share each weight conversion
                const uint16_t *a = tile + static_cast<size_t>(r) * block_len;
                __m256 a0 = _mm256_load_ps(acc[r]), a1 = _mm256_load_ps(acc[r + 1]);
                __m256 a2 = _mm256_load_ps(acc[r + 2]), a3 = _mm256_load_ps(acc[r + 3]);
                for (int k = 0; k < len; k += 8) {
                    const __m256 wk = load_f16x8(ws + k);
                    a0 = _mm256_fmadd_ps(load_f16x8(a + k), wk, a0);
                    a1 = _mm256_fmadd_ps(load_f16x8(a + block_len + k), wk, a1);
                    a2 = _mm256_fmadd_ps(load_f16x8(a + 2 * block_len + k), wk, a2);
                    a3 = _mm256_fmadd_ps(load_f16x8(a + 3 * block_len + k), wk, a3);
                }
                _mm256_store_ps(acc[r], a0);
                _mm256_store_ps(acc[r + 1], a1);
                _mm256_store_ps(acc[r + 2], a2);
                _mm256_store_ps(acc[r + 3], a3);
            }
            for (; r < nr; ++r) {
                const uint16_t *a = tile + static_cast<size_t>(r) * block_len;
                __m256 a0 = _mm256_load_ps(acc[r]);
                for (int k = 0; k < len; k += 8) a0 = _mm256_fmadd_ps(load_f16x8(a + k), load_f16x8(ws + k), a0);
                _mm256_store_ps(acc[r], a0);
            }
        }
        for (int r = 0; r < nr; ++r) y[r0 + r] = simd::hsum8(_mm256_load_ps(acc[r]));
    }
}

namespace {
// exp_poly on 8 lanes: the same steps as the scalar version, lane for lane.
AS_AVX2 inline __m256 exp_poly8(__m256 x) {
    const __m256 shift = _mm256_set1_ps(0x1.8p23f);
    const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), shift);
    const __m256 n = _mm256_sub_ps(z, shift);
    const __m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f),
                                      _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
    const __m256i e = _mm256_slli_epi32(_mm256_castps_si256(z), 23);
    const __m256 k = _mm256_castsi256_ps(_mm256_add_epi32(e, _mm256_castps_si256(_mm256_set1_ps(1.0f))));
    const __m256 u = _mm256_mul_ps(b, b);
    const __m256 j = _mm256_fmadd_ps(
        _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
                        _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
        u, _mm256_mul_ps(_mm256_set1_ps(0x1.ffffecp-1f), b));
    const __m256 abs_n = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), n);
    const __m256 big = _mm256_cmp_ps(abs_n, _mm256_set1_ps(126.0f), _CMP_GT_OQ);
    const __m256 normal = _mm256_fmadd_ps(j, k, k);
    if (_mm256_movemask_ps(big) == 0) return normal;
    // some lane has |n| > 126: scale in two steps there, saturate past 192 (as the scalar)
    const __m256i g = _mm256_and_si256(_mm256_castps_si256(_mm256_cmp_ps(n, _mm256_setzero_ps(), _CMP_LE_OQ)),
                                       _mm256_set1_epi32(static_cast<int>(0x82000000u)));
    const __m256 s1 = _mm256_castsi256_ps(_mm256_add_epi32(g, _mm256_set1_epi32(0x7f000000)));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_sub_epi32(e, g));
    const __m256 huge = _mm256_cmp_ps(abs_n, _mm256_set1_ps(192.0f), _CMP_GT_OQ);
    const __m256 scaled = _mm256_mul_ps(_mm256_fmadd_ps(s2, j, s2), s1);
    const __m256 r = _mm256_blendv_ps(normal, scaled, big);
    return _mm256_blendv_ps(r, _mm256_mul_ps(s1, s1), huge);
}
} // namespace

AS_AVX2 void softmax_avx2(float *x, int n, float scale) {
    const float mx = scale_and_max(x, n, scale);
    double sum = 0.0;
    const int n8 = n & ~7;
    const __m256 vmx = _mm256_set1_ps(mx);
    for (int i = 0; i < n8; i += 8) {
        const __m256 e = exp_poly8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmx));
        _mm256_storeu_ps(x + i, e);
        sum += static_cast<double>(simd::hsum8(e));
    }
    for (int i = n8; i < n; ++i) {
        x[i] = std::exp(x[i] - mx);
        sum += static_cast<double>(x[i]);
    }
    const __m256 inv = _mm256_set1_ps(static_cast<float>(1.0 / sum));
    int i = 0;
    for (; i < n8; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), inv));
    for (; i < n; ++i) x[i] *= static_cast<float>(1.0 / sum);
}

AS_AVX2 void swiglu_avx2(const float *g, const float *u, float *y, int n) {
    const int n8 = n & ~7;
    const __m256 one = _mm256_set1_ps(1.0f);
    for (int i = 0; i < n8; i += 8) {
        const __m256 gv = _mm256_loadu_ps(g + i);
        const __m256 e = exp_poly8(_mm256_sub_ps(_mm256_setzero_ps(), gv));
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_div_ps(gv, _mm256_add_ps(one, e)), _mm256_loadu_ps(u + i)));
    }
    for (int i = n8; i < n; ++i) y[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

// geglu_ref's operations 8 at a time: F16C's conversion rounds to nearest even as
// fp32_to_fp16 does, the gather reads the same table entry widened, and the same product.
AS_AVX2 void geglu_avx2(const float *g, const float *u, float *y, int n) {
    const float *table = gelu_table_f32().data();
    const int n8 = n & ~7;
    const __m256 lo = _mm256_set1_ps(-10.0f), hi = _mm256_set1_ps(10.0f);
    for (int i = 0; i < n8; i += 8) {
        const __m256 x = _mm256_loadu_ps(g + i), uv = _mm256_loadu_ps(u + i);
        const __m256i h = _mm256_cvtepu16_epi32(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
        const __m256 t = _mm256_mul_ps(_mm256_i32gather_ps(table, h, 4), uv);
        const __m256 big = _mm256_mul_ps(x, uv);
        __m256 r = _mm256_blendv_ps(t, big, _mm256_cmp_ps(x, hi, _CMP_GE_OQ));
        r = _mm256_blendv_ps(r, _mm256_setzero_ps(), _mm256_cmp_ps(x, lo, _CMP_LE_OQ));
        _mm256_storeu_ps(y + i, r);
    }
    geglu_ref(g + n8, u + n8, y + n8, n - n8);
}

void softmax(float *x, int n, float scale) { use_avx2() ? softmax_avx2(x, n, scale) : softmax_ref(x, n, scale); }
void swiglu(const float *g, const float *u, float *y, int n) { use_avx2() ? swiglu_avx2(g, u, y, n) : swiglu_ref(g, u, y, n); }
void geglu(const float *g, const float *u, float *y, int n) { use_avx2() ? geglu_avx2(g, u, y, n) : geglu_ref(g, u, y, n); }

float dot_f16_lanes(int n, const uint16_t *a, const uint16_t *b) {
    return use_avx2() ? dot_f16_lanes_avx2(n, a, b) : dot_f16_lanes_ref(n, a, b);
}

float dot_f16_gemm(int n, const uint16_t *a, const uint16_t *b) {
    return use_avx2() ? dot_f16_gemm_avx2(n, a, b) : dot_f16_gemm_ref(n, a, b);
}

void matvec_f16_lanes_paged(int n, int n_rows, const uint16_t *v, const int32_t *blocks, size_t block_stride,
                            int block_len, const uint16_t *w, float *y) {
    use_avx2() ? matvec_f16_lanes_paged_avx2(n, n_rows, v, blocks, block_stride, block_len, w, y)
               : matvec_f16_lanes_paged_ref(n, n_rows, v, blocks, block_stride, block_len, w, y);
}

void matvec_f16_gemm_paged(int n, int n_rows, const uint16_t *v, const int32_t *blocks, size_t block_stride,
                           int block_len, const uint16_t *w, float *y) {
    use_avx2() ? matvec_f16_gemm_paged_avx2(n, n_rows, v, blocks, block_stride, block_len, w, y)
               : matvec_f16_gemm_paged_ref(n, n_rows, v, blocks, block_stride, block_len, w, y);
}

} // namespace actorserve
