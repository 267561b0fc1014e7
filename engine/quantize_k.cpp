// Weight quantizers for Q5_0, Q5_1, Q4_K, Q5_K and Q6_K (declared in quantize.h): ggml's
// reference quantizers (quantize_row_*_ref, what llama.cpp's quantize tool runs without an
// importance matrix), written so that each float operation is the one the compiled C performs.
//
// note: the bytes depend on every rounding, so the arithmetic is ggml's step for step, and like
// ggml's quantizers (in ggml-base, built for baseline x86-64) this file is built without FMA:
// no multiply and add are fused. Checked against llama-quantize's own output on every row of
// the default model and of a random-weight F32 model (docs/quantization.md).
#include <algorithm>
#include <cassert>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "engine/fp16.h"
#include "engine/quantize.h"
#include "engine/quants_k.h"

namespace actorserve {

namespace {

// round to nearest, ties to even, for |v| < 2^22: the mantissa bits of v + 1.5 * 2^23
inline int nearest_int(float v) {
    const float t = v + 12582912.f;
    int i;
    std::memcpy(&i, &t, sizeof(int));
    return (i & 0x007fffff) - 0x00400000;
}

constexpr float kGroupMaxEps = 1e-15f;

// Q4_K / Q5_K sub-block: levels L in 0..nmax and (scale, -min) minimising the weighted squared
// error over nstep + 1 trial scales around nmax / (max - min).
float make_qkx2_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L, float *the_min,
                       uint8_t *Laux, float rmin, float rdelta, int nstep) {
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        const float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        *the_min = -min;
        return 0.f;
    }
    float iscale = static_cast<float>(nmax) / (max - min);
    float scale = 1.0f / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        const int l = nearest_int(iscale * (x[i] - min));
        L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
        float diff = scale * static_cast<float>(L[i]) + min - x[i];
        diff = diff * diff;
        const float w = weights[i];
        best_error += w * diff;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * (x[i] - min));
            l = std::max(0, std::min(nmax, l));
            Laux[i] = static_cast<uint8_t>(l);
            const float w = weights[i];
            const float lf = static_cast<float>(l);
            sum_l += w * lf;
            sum_l2 += w * lf * lf;
            sum_xl += w * lf * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * static_cast<float>(Laux[i]) + this_min - x[i];
                diff = diff * diff;
                const float w = weights[i];
                cur_error += w * diff;
            }
            if (cur_error < best_error) {
                for (int i = 0; i < n; ++i) L[i] = Laux[i];
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

// Q6_K sub-block (rmse_type 1, no importance): signed levels L + nmax, the scale refined over
// 18 trial scales around -nmax / max by the x^2-weighted least squares.
float make_qx_quants(int n, int nmax, const float *x, int8_t *L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = std::fabs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < kGroupMaxEps) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.f;
    }
    float iscale = static_cast<float>(-nmax) / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = nearest_int(iscale * x[i]);
        l = std::max(-nmax, std::min(nmax - 1, l));
        L[i] = static_cast<int8_t>(l + nmax);
        const float w = x[i] * x[i], lf = static_cast<float>(l);
        sumlx += w * x[i] * lf;
        suml2 += w * lf * lf;
    }
    float scale = suml2 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * x[i]);
            l = std::max(-nmax, std::min(nmax - 1, l));
            const float w = x[i] * x[i], lf = static_cast<float>(l);
            sumlx += w * x[i] * lf;
            suml2 += w * lf * lf;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) {
                const int l = nearest_int(iscale * x[i]);
                L[i] = static_cast<int8_t>(nmax + std::max(-nmax, std::min(nmax - 1, l)));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

// The sub-block scales and mins of a Q4_K / Q5_K super-block, 6 bits each, packed as k_scales
// reads them; then d and dmin.
template <class B>
void pack_k4_scales(const float scales[8], const float mins[8], float max_scale, float max_min, B &y) {
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < 8; ++j) {
        const uint8_t ls = static_cast<uint8_t>(std::min(63, nearest_int(inv_scale * scales[j]) & 0xff));
        const uint8_t lm = static_cast<uint8_t>(std::min(63, nearest_int(inv_min * mins[j]) & 0xff));
        if (j < 4) {
            y.scales[j] = ls;
            y.scales[j + 4] = lm;
        } else {
            y.scales[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
            y.scales[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
            y.scales[j - 0] |= static_cast<uint8_t>((lm >> 4) << 6);
        }
    }
    y.d = fp32_to_fp16(max_scale / 63.f);
    y.dmin = fp32_to_fp16(max_min / 63.f);
}

// Q4_K / Q5_K: levels 0..nmax per element from the packed scales, as the format will be read.
template <class B>
void k4_levels(const float *x, const B &y, int nmax, uint8_t *L) {
    uint8_t sm[16];
    k_scales(y.scales, sm);
    for (int j = 0; j < 8; ++j) {
        const float d = fp16_to_fp32(y.d) * static_cast<float>(sm[j]);
        if (!d) continue;
        const float dm = fp16_to_fp32(y.dmin) * static_cast<float>(sm[8 + j]);
        for (int ii = 0; ii < 32; ++ii) {
            const int l = nearest_int((x[32 * j + ii] + dm) / d);
            L[32 * j + ii] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
        }
    }
}

template <class B>
void k4_super_block(const float *x, int nmax, float rmin, int nstep, B &y, uint8_t *L) {
    uint8_t Laux[32];
    float weights[32], mins[8], scales[8];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
        const float av_x = std::sqrt(sum_x2 / 32.0f);
        for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
        scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    std::memset(y.scales, 0, sizeof(y.scales));
    pack_k4_scales(scales, mins, max_scale, max_min, y);
    k4_levels(x, y, nmax, L);
}

} // namespace

void quantize_weights_q5_0(const float *x, block_q5_0 *y, int64_t n) {
    assert(n % QK == 0);
    for (int64_t b = 0; b < n / QK; ++b, x += QK) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < QK; ++j)
            if (amax < std::fabs(x[j])) amax = std::fabs(x[j]), max = x[j];
        const float d = max / -16.0f;
        const float id = d ? 1.0f / d : 0.0f;
        y[b].d = fp32_to_fp16(d);
        uint32_t qh = 0;
        for (int j = 0; j < QK / 2; ++j) {
            const float x0 = x[j] * id, x1 = x[QK / 2 + j] * id;
            const uint8_t xi0 = static_cast<uint8_t>(std::min(31, static_cast<int>(static_cast<int8_t>(x0 + 16.5f))));
            const uint8_t xi1 = static_cast<uint8_t>(std::min(31, static_cast<int>(static_cast<int8_t>(x1 + 16.5f))));
            y[b].qs[j] = static_cast<uint8_t>((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
            qh |= ((xi0 & 0x10u) >> 4) << j;
            qh |= ((xi1 & 0x10u) >> 4) << (j + QK / 2);
        }
        std::memcpy(y[b].qh, &qh, sizeof(qh));
    }
}

void quantize_weights_q5_1(const float *x, block_q5_1 *y, int64_t n) {
    assert(n % QK == 0);
    for (int64_t b = 0; b < n / QK; ++b, x += QK) {
        float min = FLT_MAX, max = -FLT_MAX;
        for (int j = 0; j < QK; ++j) {
            if (x[j] < min) min = x[j];
            if (x[j] > max) max = x[j];
        }
        const float d = (max - min) / 31.0f;
        const float id = d ? 1.0f / d : 0.0f;
        y[b].d = fp32_to_fp16(d);
        y[b].m = fp32_to_fp16(min);
        uint32_t qh = 0;
        for (int j = 0; j < QK / 2; ++j) {
            const float x0 = (x[j] - min) * id, x1 = (x[QK / 2 + j] - min) * id;
            const uint8_t xi0 = static_cast<uint8_t>(x0 + 0.5f), xi1 = static_cast<uint8_t>(x1 + 0.5f);
            y[b].qs[j] = static_cast<uint8_t>((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
            qh |= ((xi0 & 0x10u) >> 4) << j;
            qh |= ((xi1 & 0x10u) >> 4) << (j + QK / 2);
        }
        std::memcpy(y[b].qh, &qh, sizeof(qh));
    }
}

void quantize_weights_q4_k(const float *x, block_q4_k *y, int64_t n) {
    assert(n % QK_K == 0);
    uint8_t L[QK_K];
    for (int64_t b = 0; b < n / QK_K; ++b, x += QK_K) {
        k4_super_block(x, 15, -1.f, 20, y[b], L);
        for (int j = 0; j < 4; ++j)
            for (int l = 0; l < 32; ++l) y[b].qs[32 * j + l] = static_cast<uint8_t>(L[64 * j + l] | (L[64 * j + l + 32] << 4));
    }
}

void quantize_weights_q5_k(const float *x, block_q5_k *y, int64_t n) {
    assert(n % QK_K == 0);
    uint8_t L[QK_K];
    for (int64_t b = 0; b < n / QK_K; ++b, x += QK_K) {
        k4_super_block(x, 31, -0.5f, 15, y[b], L);
        std::memset(y[b].qh, 0, sizeof(y[b].qh));
        for (int j = 0; j < 4; ++j)
            for (int l = 0; l < 32; ++l) {
                int l1 = L[64 * j + l], l2 = L[64 * j + l + 32];
                if (l1 > 15) l1 -= 16, y[b].qh[l] |= static_cast<uint8_t>(1u << (2 * j));
                if (l2 > 15) l2 -= 16, y[b].qh[l] |= static_cast<uint8_t>(2u << (2 * j));
                y[b].qs[32 * j + l] = static_cast<uint8_t>(l1 | (l2 << 4));
            }
    }
}

void quantize_weights_q6_k(const float *x, block_q6_k *y, int64_t n) {
    assert(n % QK_K == 0);
    int8_t L[QK_K];
    float scales[QK_K / 16];
    for (int64_t b = 0; b < n / QK_K; ++b, x += QK_K) {
        float max_scale = 0, max_abs_scale = 0;
        for (int ib = 0; ib < QK_K / 16; ++ib) {
            const float scale = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
            scales[ib] = scale;
            if (std::fabs(scale) > max_abs_scale) max_abs_scale = std::fabs(scale), max_scale = scale;
        }
        if (max_abs_scale < kGroupMaxEps) {
            std::memset(&y[b], 0, sizeof(block_q6_k));
            continue;
        }
        const float iscale = -128.f / max_scale;
        y[b].d = fp32_to_fp16(1.0f / iscale);
        for (int ib = 0; ib < QK_K / 16; ++ib) y[b].scales[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
        for (int j = 0; j < QK_K / 16; ++j) {
            const float d = fp16_to_fp32(y[b].d) * static_cast<float>(y[b].scales[j]);
            if (!d) continue;
            for (int ii = 0; ii < 16; ++ii) {
                const int l = nearest_int(x[16 * j + ii] / d);
                L[16 * j + ii] = static_cast<int8_t>(std::max(-32, std::min(31, l)) + 32);
            }
        }
        for (int h = 0; h < 2; ++h) {
            const int8_t *Lh = L + 128 * h;
            uint8_t *ql = y[b].ql + 64 * h, *qh = y[b].qh + 32 * h;
            for (int l = 0; l < 32; ++l) {
                ql[l] = static_cast<uint8_t>((Lh[l] & 0xF) | ((Lh[l + 64] & 0xF) << 4));
                ql[l + 32] = static_cast<uint8_t>((Lh[l + 32] & 0xF) | ((Lh[l + 96] & 0xF) << 4));
                qh[l] = static_cast<uint8_t>((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) | ((Lh[l + 64] >> 4) << 4) | ((Lh[l + 96] >> 4) << 6));
            }
        }
    }
}

} // namespace actorserve
