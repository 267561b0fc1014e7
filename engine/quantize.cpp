#include "engine/quantize.h"

#include <algorithm>
#include <cassert>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/fp16.h"

namespace actorserve {

// Every scale is computed in float, stored as half by round to nearest even, and the values
// are quantized with the unrounded float scale, as ggml does. Conversions from float to an
// integer truncate toward zero (C's cast), applied to values that are never negative.

// Q4_0, x = (q - 8) * d. The element of largest magnitude (the first one, on a tie) maps to
// -8: d = max / -8, so its sign decides the sign of d. q = min(15, trunc(x / d + 8.5)), i.e.
// x/d rounded half up, then shifted; the opposite extreme (+8) is clamped to 15.
// An all-zero block gets d = 0 and every q = 8.
void quantize_weights_q4_0(const float *x, block_q4_0 *y, int64_t n) {
    assert(n % QK == 0);
    for (int64_t b = 0; b < n / QK; ++b, x += QK) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < QK; ++j)
            if (amax < std::fabs(x[j])) amax = std::fabs(x[j]), max = x[j]; // strict: the first wins
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = fp32_to_fp16(d);
        for (int j = 0; j < QK / 2; ++j) {
            const int q0 = std::min(15, static_cast<int>(x[j] * id + 8.5f));
            const int q1 = std::min(15, static_cast<int>(x[j + QK / 2] * id + 8.5f));
            y[b].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
        }
    }
}

// Q4_1, x = q * d + m. m = min(x), d = (max - min) / 15, q = min(15, trunc((x - m) / d + 0.5)),
// i.e. rounded half up. A constant block (max == min, all zeros included) gets d = 0, m = x,
// every q = 0.
void quantize_weights_q4_1(const float *x, block_q4_1 *y, int64_t n) {
    assert(n % QK == 0);
    for (int64_t b = 0; b < n / QK; ++b, x += QK) {
        float min = FLT_MAX, max = -FLT_MAX;
        for (int j = 0; j < QK; ++j) {
            if (x[j] < min) min = x[j];
            if (x[j] > max) max = x[j];
        }
        const float d = (max - min) / 15.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = fp32_to_fp16(d);
        y[b].m = fp32_to_fp16(min);
        for (int j = 0; j < QK / 2; ++j) {
            const float v0 = (x[j] - min) * id, v1 = (x[j + QK / 2] - min) * id; // two roundings, no fma
            const int q0 = std::min(15, static_cast<int>(v0 + 0.5f));
            const int q1 = std::min(15, static_cast<int>(v1 + 0.5f));
            y[b].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
        }
    }
}

// Q8_0, x = q * d. d = amax / 127, q = round(x * (1/d)) with halves away from zero (roundf).
// This differs from the activation quantizer in quants.cpp, which multiplies by 127/amax and
// rounds halves to even: a weight exactly between two steps, or one where the two reciprocals
// differ in the last bit, can land one step apart. An all-zero block gets d = 0, every q = 0.
void quantize_weights_q8_0(const float *x, block_q8_0 *y, int64_t n) {
    assert(n % QK == 0);
    for (int64_t b = 0; b < n / QK; ++b, x += QK) {
        float amax = 0.0f;
        for (int j = 0; j < QK; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = fp32_to_fp16(d);
        for (int j = 0; j < QK; ++j) y[b].qs[j] = static_cast<int8_t>(std::round(x[j] * id)); // |.| <= 127
    }
}

bool can_store_as(tensor_type t, int64_t n_in) {
    switch (t) { // the formats convert_rows writes
    case tensor_type::f32: case tensor_type::f16: case tensor_type::q4_0: case tensor_type::q4_1: case tensor_type::q8_0:
    case tensor_type::q5_0: case tensor_type::q5_1: case tensor_type::q4_k: case tensor_type::q5_k: case tensor_type::q6_k: break;
    default: return false;
    }
    if (n_in <= 0) return false;
    return n_in % tensor_traits(static_cast<uint32_t>(t))->block_size == 0;
}

void convert_rows(tensor_type from, const uint8_t *src, tensor_type to, uint8_t *dst, int64_t n_in, int64_t n_rows,
                  thread_pool &pool) {
    assert(is_compute_type(from) && can_store_as(to, n_in));
    const size_t src_row = row_bytes(from, n_in), dst_row = row_bytes(to, n_in);
    pool.parallel_for(n_rows, [&](int64_t r0, int64_t r1) {
        std::vector<float> row(static_cast<size_t>(n_in)); // (n_in,) one row as float
        for (int64_t r = r0; r < r1; ++r) {
            const uint8_t *s = src + static_cast<size_t>(r) * src_row;
            uint8_t *d = dst + static_cast<size_t>(r) * dst_row;
            if (to == tensor_type::f32) {
                dequantize_row(from, s, reinterpret_cast<float *>(d), n_in);
                continue;
            }
            dequantize_row(from, s, row.data(), n_in);
            switch (to) {
            case tensor_type::f16: convert_row_f16(row.data(), reinterpret_cast<uint16_t *>(d), n_in); break;
            case tensor_type::q4_0: quantize_weights_q4_0(row.data(), reinterpret_cast<block_q4_0 *>(d), n_in); break;
            case tensor_type::q4_1: quantize_weights_q4_1(row.data(), reinterpret_cast<block_q4_1 *>(d), n_in); break;
            case tensor_type::q8_0: quantize_weights_q8_0(row.data(), reinterpret_cast<block_q8_0 *>(d), n_in); break;
            case tensor_type::q5_0: quantize_weights_q5_0(row.data(), reinterpret_cast<block_q5_0 *>(d), n_in); break;
            case tensor_type::q5_1: quantize_weights_q5_1(row.data(), reinterpret_cast<block_q5_1 *>(d), n_in); break;
            case tensor_type::q4_k: quantize_weights_q4_k(row.data(), reinterpret_cast<block_q4_k *>(d), n_in); break;
            case tensor_type::q5_k: quantize_weights_q5_k(row.data(), reinterpret_cast<block_q5_k *>(d), n_in); break;
            case tensor_type::q6_k: quantize_weights_q6_k(row.data(), reinterpret_cast<block_q6_k *>(d), n_in); break;
            default: assert(false && "convert_rows: not a weight format");
            }
        }
    });
}

} // namespace actorserve
