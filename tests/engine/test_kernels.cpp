// Kernels against their references: each SIMD dot against its *_ref on deterministic data,
// activation quantization, half-precision conversion, and the per-row ops.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine/fp16.h"
#include "engine/ops.h"
#include "engine/quants.h"

using namespace actorserve;

namespace {

std::vector<float> wave(int n, float phase) {
    std::vector<float> x(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) x[static_cast<size_t>(i)] = 0.1f + 2.0f * std::cos(static_cast<float>(i) * 0.37f + phase);
    return x;
}

// Builds a weight row of type t from float data: quantized with the activation quantizers
// where the layout matches, or packed by hand for the 4-bit formats.
std::vector<uint8_t> make_weight(tensor_type t, const std::vector<float> &x) {
    const int64_t n = static_cast<int64_t>(x.size());
    std::vector<uint8_t> out(row_bytes(t, n));
    switch (t) {
    case tensor_type::f32: std::memcpy(out.data(), x.data(), out.size()); break;
    case tensor_type::f16: convert_row_f16(x.data(), reinterpret_cast<uint16_t *>(out.data()), n); break;
    case tensor_type::q8_0: quantize_row_q8_0(x.data(), reinterpret_cast<block_q8_0 *>(out.data()), n); break;
    case tensor_type::q4_0: {
        auto *b = reinterpret_cast<block_q4_0 *>(out.data());
        for (int64_t k = 0; k < n / QK; ++k) {
            float amax = 0;
            for (int j = 0; j < QK; ++j) amax = std::fmax(amax, std::fabs(x[k * QK + j]));
            const float d = amax / 7.0f;
            b[k].d = fp32_to_fp16(d);
            for (int j = 0; j < QK / 2; ++j) {
                auto q = [&](float v) { return static_cast<uint8_t>(std::clamp(static_cast<int>(std::lround(v / d)) + 8, 0, 15)); };
                b[k].qs[j] = static_cast<uint8_t>(q(x[k * QK + j]) | (q(x[k * QK + j + QK / 2]) << 4));
            }
        }
        break;
    }
    case tensor_type::q4_1: {
        auto *b = reinterpret_cast<block_q4_1 *>(out.data());
        for (int64_t k = 0; k < n / QK; ++k) {
            float lo = x[k * QK], hi = lo;
            for (int j = 0; j < QK; ++j) lo = std::fmin(lo, x[k * QK + j]), hi = std::fmax(hi, x[k * QK + j]);
            const float d = (hi - lo) / 15.0f;
            b[k].d = fp32_to_fp16(d);
            b[k].m = fp32_to_fp16(lo);
            for (int j = 0; j < QK / 2; ++j) {
                auto q = [&](float v) { return static_cast<uint8_t>(std::clamp(static_cast<int>(std::lround((v - lo) / d)), 0, 15)); };
                b[k].qs[j] = static_cast<uint8_t>(q(x[k * QK + j]) | (q(x[k * QK + j + QK / 2]) << 4));
            }
        }
        break;
    }
    default: FAIL("no weight maker for this type");
    }
    return out;
}

double exact_dot(const std::vector<float> &a, const std::vector<float> &b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
    return s;
}

} // namespace

TEST_CASE("kernels: each AVX2 dot matches its reference within kTolDot, odd sizes too") {
    if (!cpu_has_avx2()) {
        MESSAGE("this CPU has no AVX2: only the references run, so there is nothing to compare");
        return;
    }
    struct kernel_pair { tensor_type type; dot_fn ref, simd; };
    const kernel_pair pairs[] = {
        {tensor_type::q4_0, dot_q4_0_q8_0_ref, dot_q4_0_q8_0_avx2},
        {tensor_type::q4_1, dot_q4_1_q8_1_ref, dot_q4_1_q8_1_avx2},
        {tensor_type::q8_0, dot_q8_0_q8_0_ref, dot_q8_0_q8_0_avx2},
        {tensor_type::f16, dot_f16_f16_ref, dot_f16_f16_avx2},
        {tensor_type::f32, dot_f32_f32_ref, dot_f32_f32_avx2},
    };
    for (const kernel_pair &p : pairs) {
        const bool blocked = p.type != tensor_type::f16 && p.type != tensor_type::f32;
        const std::vector<int> sizes = blocked ? std::vector<int>{32, 64, 96, 576, 1536, 32 * 37}
                                               : std::vector<int>{1, 7, 8, 9, 33, 576, 1001};
        for (int n : sizes) {
            CAPTURE(tensor_type_name(p.type));
            CAPTURE(n);
            const std::vector<float> w = wave(n, 0.3f), x = wave(n, 1.7f);
            const std::vector<uint8_t> wq = make_weight(p.type, w);
            std::vector<uint8_t> xq(row_bytes(activation_type(p.type), n));
            quantize_row(activation_type(p.type), x.data(), xq.data(), n);
            const float r = p.ref(n, wq.data(), xq.data());
            const float s = p.simd(n, wq.data(), xq.data());
            CHECK(std::fabs(r - s) <= kTolDot * std::fmax(1.0f, std::fabs(r)) * static_cast<float>(n));
            // and both are close to the exact product of the unquantized rows
            const double e = exact_dot(w, x);
            const double tol = blocked ? 0.08 * n : 1e-2 * n;
            CHECK(std::fabs(r - e) <= tol);
        }
    }
}

TEST_CASE("kernels: dot_kernel dispatches to the CPU's default level") {
    if (std::getenv("ACTORSERVE_SIMD") == nullptr) {
        const simd_isa isa = choose_simd_isa(cpu_simd_isa(), nullptr);
        CHECK(isa == (cpu_simd_isa() == simd_isa::avx512 ? simd_isa::avx2 : cpu_simd_isa()));
        CHECK(selected_simd_isa() == isa);
        CHECK(std::string(simd_level()) == simd_isa_name(isa));
        const dot_fn expected = isa == simd_isa::avx512vnni ? dot_q4_1_q8_1_avx512vnni
                                : isa == simd_isa::avx512   ? dot_q4_1_q8_1_avx512
                                : isa == simd_isa::avx2     ? dot_q4_1_q8_1_avx2
                                                            : dot_q4_1_q8_1_ref;
        CHECK(reinterpret_cast<void *>(dot_kernel(tensor_type::q4_1)) == reinterpret_cast<void *>(expected));
        // F16 weights keep the AVX2 order on every SIMD level
        if (isa != simd_isa::ref)
            CHECK(reinterpret_cast<void *>(dot_kernel(tensor_type::f16)) == reinterpret_cast<void *>(dot_f16_f16_avx2));
    } else {
        MESSAGE("ACTORSERVE_SIMD is set: the default dispatch is not checked in this run");
    }
    CHECK(reinterpret_cast<void *>(dot_kernel(tensor_type::q3_k)) == nullptr);
}

TEST_CASE("kernels: ACTORSERVE_SIMD lowers the level, never raises it above the CPU's") {
    bool unknown = true;
    CHECK(choose_simd_isa(simd_isa::avx512vnni, nullptr, &unknown) == simd_isa::avx512vnni);
    CHECK(!unknown);
    CHECK(choose_simd_isa(simd_isa::avx512vnni, "", &unknown) == simd_isa::avx512vnni);
    CHECK(choose_simd_isa(simd_isa::avx512vnni, "avx2") == simd_isa::avx2);
    CHECK(choose_simd_isa(simd_isa::avx512vnni, "avx512") == simd_isa::avx512);
    CHECK(choose_simd_isa(simd_isa::avx512vnni, "ref") == simd_isa::ref);
    CHECK(choose_simd_isa(simd_isa::avx2, "avx512vnni") == simd_isa::avx2);
    CHECK(choose_simd_isa(simd_isa::ref, "avx2") == simd_isa::ref);
    // AVX-512 without VNNI only on request
    CHECK(choose_simd_isa(simd_isa::avx512, nullptr) == simd_isa::avx2);
    CHECK(choose_simd_isa(simd_isa::avx512, "avx512") == simd_isa::avx512);
    CHECK(choose_simd_isa(simd_isa::avx512, "avx512vnni") == simd_isa::avx512);
    CHECK(choose_simd_isa(simd_isa::avx512vnni, "AVX2", &unknown) == simd_isa::avx512vnni);
    CHECK(unknown);
}

namespace {

// The AVX-512 levels this CPU can run, each with its three dots and three multi-column
// kernels; the levels it cannot run are named in a MESSAGE so that a skipped check is visible.
struct avx512_kernels {
    const char *name;
    dot_fn q4_0, q4_1, q8_0;
    dot_cols_fn cols_q4_0, cols_q4_1, cols_q8_0;
};
std::vector<avx512_kernels> runnable_avx512_levels() {
    std::vector<avx512_kernels> out;
    if (cpu_has_avx512())
        out.push_back({"avx512", dot_q4_0_q8_0_avx512, dot_q4_1_q8_1_avx512, dot_q8_0_q8_0_avx512,
                       cols_q4_0_q8_0_avx512, cols_q4_1_q8_1_avx512, cols_q8_0_q8_0_avx512});
    else
        MESSAGE("SKIPPED: this CPU lacks AVX-512 F/BW/VL, so the avx512 kernels were not run");
    if (cpu_has_avx512vnni())
        out.push_back({"avx512vnni", dot_q4_0_q8_0_avx512vnni, dot_q4_1_q8_1_avx512vnni, dot_q8_0_q8_0_avx512vnni,
                       cols_q4_0_q8_0_avx512vnni, cols_q4_1_q8_1_avx512vnni, cols_q8_0_q8_0_avx512vnni});
    else
        MESSAGE("SKIPPED: this CPU lacks AVX-512 VNNI, so the avx512vnni kernels were not run");
    return out;
}

// Block counts for the AVX-512 tests: 1 (only the one-block tail), odd and even counts, and
// the model's row lengths.
const int kBlockedSizes[] = {32, 64, 96, 160, 576, 1536, 32 * 37};

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

} // namespace

TEST_CASE("kernels: each AVX-512 dot matches its reference within kTolDot, odd block counts too") {
    for (const avx512_kernels &k : runnable_avx512_levels()) {
        CAPTURE(k.name);
        const std::pair<tensor_type, std::pair<dot_fn, dot_fn>> pairs[] = {
            {tensor_type::q4_0, {dot_q4_0_q8_0_ref, k.q4_0}},
            {tensor_type::q4_1, {dot_q4_1_q8_1_ref, k.q4_1}},
            {tensor_type::q8_0, {dot_q8_0_q8_0_ref, k.q8_0}},
        };
        for (const auto &[type, fns] : pairs) {
            for (int n : kBlockedSizes) {
                CAPTURE(tensor_type_name(type));
                CAPTURE(n);
                const std::vector<float> w = wave(n, 0.3f), x = wave(n, 1.7f);
                const std::vector<uint8_t> wq = make_weight(type, w);
                std::vector<uint8_t> xq(row_bytes(activation_type(type), n));
                quantize_row(activation_type(type), x.data(), xq.data(), n);
                const float r = fns.first(n, wq.data(), xq.data());
                const float s = fns.second(n, wq.data(), xq.data());
                CHECK(std::fabs(r - s) <= kTolDot * std::fmax(1.0f, std::fabs(r)) * static_cast<float>(n));
            }
        }
    }
}

TEST_CASE("kernels: AVX-512 dots and multi-column kernels are bit-identical to AVX2's") {
    // The golden and batch-invariance promises rest on this: the AVX-512 path must give the
    // AVX2 path's bits (llama.cpp's order), for every column count and both scale sources.
    if (!cpu_has_avx2()) {
        MESSAGE("SKIPPED: this CPU lacks AVX2, so there is no AVX2 result to compare with");
        return;
    }
    for (const avx512_kernels &k : runnable_avx512_levels()) {
        CAPTURE(k.name);
        struct row { tensor_type type; dot_fn avx2, simd; dot_cols_fn cols; };
        const row rows[] = {
            {tensor_type::q4_0, dot_q4_0_q8_0_avx2, k.q4_0, k.cols_q4_0},
            {tensor_type::q4_1, dot_q4_1_q8_1_avx2, k.q4_1, k.cols_q4_1},
            {tensor_type::q8_0, dot_q8_0_q8_0_avx2, k.q8_0, k.cols_q8_0},
        };
        for (const row &rw : rows) {
            for (int n : kBlockedSizes) {
                CAPTURE(tensor_type_name(rw.type));
                CAPTURE(n);
                const tensor_type at = activation_type(rw.type);
                const std::vector<uint8_t> wq = make_weight(rw.type, wave(n, 0.4f));
                const size_t xs = row_bytes(at, n);
                const size_t nd = static_cast<size_t>(n / QK * 2);
                std::vector<uint8_t> xq(xs * kMaxCols);
                std::vector<float> xd(nd * kMaxCols);
                for (int c = 0; c < kMaxCols; ++c) {
                    const std::vector<float> x = wave(n, 1.0f + 0.7f * static_cast<float>(c));
                    quantize_row(at, x.data(), xq.data() + c * xs, n);
                    activation_scales(at, xq.data() + c * xs, n, xd.data() + c * nd);
                }
                for (int c = 0; c < kMaxCols; ++c) {
                    const float a = rw.avx2(n, wq.data(), xq.data() + c * xs);
                    CHECK(same_bits(a, rw.simd(n, wq.data(), xq.data() + c * xs)));
                }
                for (int nc = 1; nc <= kMaxCols; ++nc) {
                    float a[kMaxCols], s[kMaxCols], s_blocks[kMaxCols];
                    dot_cols_fn avx2_cols = rw.type == tensor_type::q4_0   ? cols_q4_0_q8_0_avx2
                                            : rw.type == tensor_type::q4_1 ? cols_q4_1_q8_1_avx2
                                                                           : cols_q8_0_q8_0_avx2;
                    avx2_cols(n, wq.data(), xq.data(), xs, xd.data(), nc, a);
                    rw.cols(n, wq.data(), xq.data(), xs, xd.data(), nc, s);
                    rw.cols(n, wq.data(), xq.data(), xs, nullptr, nc, s_blocks);
                    for (int c = 0; c < nc; ++c) {
                        CHECK(same_bits(a[c], s[c]));
                        CHECK(same_bits(a[c], s_blocks[c]));
                    }
                }
            }
        }
    }
}

TEST_CASE("kernels: AVX-512 integer steps do not saturate at the extremes of each format") {
    // Products at their largest: Q8_0 weights of +-127 against activations of -+127 (the
    // i16 pairs of maddubs reach 2 * 127 * 127), Q4 nibbles 0 and 15 against +-127.
    for (const avx512_kernels &k : runnable_avx512_levels()) {
        CAPTURE(k.name);
        const int n = 96;
        std::vector<block_q8_0> w8(n / QK), x8(n / QK);
        std::vector<block_q8_1> x81(n / QK);
        std::vector<block_q4_0> w40(n / QK);
        std::vector<block_q4_1> w41(n / QK);
        for (int b = 0; b < n / QK; ++b) {
            w8[b].d = x8[b].d = x81[b].d = w40[b].d = w41[b].d = fp32_to_fp16(1.0f);
            w41[b].m = 0;
            int sum = 0;
            for (int j = 0; j < QK; ++j) {
                const int sgn = ((j + b) % 3 == 0) ? -1 : 1;
                w8[b].qs[j] = static_cast<int8_t>(127 * sgn);
                x8[b].qs[j] = x81[b].qs[j] = static_cast<int8_t>(-127 * sgn * (j % 2 == 0 ? 1 : -1));
                sum += x81[b].qs[j];
            }
            x81[b].s = fp32_to_fp16(static_cast<float>(sum));
            for (int j = 0; j < QK / 2; ++j) w40[b].qs[j] = w41[b].qs[j] = static_cast<uint8_t>(j % 2 == 0 ? 0x0f : 0xf0);
        }
        CHECK(k.q8_0(n, w8.data(), x8.data()) == dot_q8_0_q8_0_ref(n, w8.data(), x8.data()));
        CHECK(k.q4_0(n, w40.data(), x8.data()) == dot_q4_0_q8_0_ref(n, w40.data(), x8.data()));
        CHECK(k.q4_1(n, w41.data(), x81.data()) == dot_q4_1_q8_1_ref(n, w41.data(), x81.data()));
    }
}

TEST_CASE("quants: Q8_0 round trip is within half a step; the all-zero block has scale 0") {
    std::vector<float> x = wave(64, 0.0f);
    std::fill(x.begin() + 32, x.end(), 0.0f);
    std::vector<block_q8_0> q(2);
    quantize_row_q8_0(x.data(), q.data(), 64);
    std::vector<float> y(64);
    dequantize_row(tensor_type::q8_0, q.data(), y.data(), 64);
    const float d = fp16_to_fp32(q[0].d);
    for (int i = 0; i < 32; ++i) CHECK(std::fabs(x[i] - y[i]) <= d * 0.5f + 1e-3f);
    CHECK(q[1].d == 0);
    for (int i = 32; i < 64; ++i) CHECK(y[i] == 0.0f);
}

TEST_CASE("quants: Q8_1 block sum s equals d times the sum of the quants") {
    const std::vector<float> x = wave(32, 2.0f);
    block_q8_1 b;
    quantize_row_q8_1(x.data(), &b, 32);
    int sum = 0;
    for (int j = 0; j < 32; ++j) sum += b.qs[j];
    // s is computed from the unrounded d, then stored as a half
    CHECK(std::fabs(fp16_to_fp32(b.s) - fp16_to_fp32(b.d) * static_cast<float>(sum)) <= std::fabs(fp16_to_fp32(b.s)) * 2e-3f + 1e-3f);
    int amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::abs(static_cast<int>(b.qs[j])));
    CHECK(amax == 127);
}

TEST_CASE("quants: Q4_0 and Q4_1 dequantize with low nibbles first, then high nibbles") {
    block_q4_0 a{};
    a.d = fp32_to_fp16(0.5f);
    a.qs[0] = 0x9F; // element 0 -> 15, element 16 -> 9
    block_q4_1 b{};
    b.d = fp32_to_fp16(2.0f);
    b.m = fp32_to_fp16(-1.0f);
    b.qs[1] = 0x30; // element 1 -> 0, element 17 -> 3
    float ya[32], yb[32];
    dequantize_row(tensor_type::q4_0, &a, ya, 32);
    dequantize_row(tensor_type::q4_1, &b, yb, 32);
    CHECK(ya[0] == 3.5f);   // (15 - 8) * 0.5
    CHECK(ya[16] == 0.5f);  // (9 - 8) * 0.5
    CHECK(ya[1] == -4.0f);  // (0 - 8) * 0.5
    CHECK(yb[1] == -1.0f);  // 0 * 2 - 1
    CHECK(yb[17] == 5.0f);  // 3 * 2 - 1
}

TEST_CASE("fp16: every half survives a round trip through float, and rounding is to even") {
    for (uint32_t h = 0; h < 65536; ++h) {
        const float f = fp16_to_fp32(static_cast<uint16_t>(h));
        if (std::isnan(f)) continue;
        if (fp32_to_fp16(f) != h) FAIL_CHECK("half " << h << " did not round trip");
    }
    CHECK(fp32_to_fp16(1.0f) == 0x3c00);
    CHECK(fp32_to_fp16(65504.0f) == 0x7bff);
    CHECK(fp32_to_fp16(65520.0f) == 0x7c00);              // rounds up to infinity
    CHECK(fp32_to_fp16(1.0f + 1.0f / 2048) == 0x3c00);   // tie -> even (down)
    CHECK(fp32_to_fp16(1.0f + 3.0f / 2048) == 0x3c02);   // tie -> even (up)
    CHECK(fp16_to_fp32(0x0001) == std::ldexp(1.0f, -24)); // smallest subnormal
}

TEST_CASE("ops: exp_poly is within 2 ulp of libm over the softmax range, 0 at -inf") {
    for (float x = -87.0f; x <= 88.0f; x += 0.01953125f) {
        const float a = exp_poly(x), b = std::exp(x);
        CHECK(std::fabs(a - b) <= 2.0f * std::fabs(std::nextafter(b, INFINITY) - b));
    }
    CHECK(exp_poly(-INFINITY) == 0.0f);
    CHECK(exp_poly(-200.0f) == 0.0f);
    CHECK(exp_poly(0.0f) == 1.0f);
}

TEST_CASE("ops: softmax sums to one, is shift invariant, and gives masked entries weight 0") {
    std::vector<float> x = {1.0f, 2.0f, 3.0f, -INFINITY, 0.5f, 4.0f, 1.0f, 2.0f, 3.0f, -1.0f, -INFINITY};
    std::vector<float> y = x;
    for (float &v : y) v += 10.0f;
    softmax(x.data(), static_cast<int>(x.size()), 1.0f);
    softmax(y.data(), static_cast<int>(y.size()), 1.0f);
    double sum = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        sum += x[i];
        CHECK(x[i] == doctest::Approx(y[i]).epsilon(1e-6));
    }
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));
    CHECK(x[3] == 0.0f);
    CHECK(x[10] == 0.0f);
    CHECK(x[5] == doctest::Approx(std::exp(4.0) / (std::exp(1) * 2 + std::exp(2) * 2 + std::exp(3) * 2 + std::exp(0.5) + std::exp(4) + std::exp(-1))));
}

TEST_CASE("ops: rms_norm scales to unit root mean square times the weight") {
    const float x[4] = {1.0f, -2.0f, 3.0f, -4.0f}, w[4] = {1.0f, 1.0f, 2.0f, 0.5f};
    float y[4];
    rms_norm(x, w, y, 4, 0.0f);
    const float r = std::sqrt((1 + 4 + 9 + 16) / 4.0f);
    CHECK(y[0] == doctest::Approx(1.0f / r));
    CHECK(y[2] == doctest::Approx(6.0f / r));
    CHECK(y[3] == doctest::Approx(-2.0f / r));
}

TEST_CASE("ops: rope leaves position 0 alone and preserves each pair's length elsewhere") {
    std::vector<float> x = wave(64, 0.5f), y = x;
    rope_norm(y.data(), 64, 64, 0, 10000.0f, 1.0f, nullptr);
    CHECK(x == y);
    rope_norm(y.data(), 64, 64, 17, 10000.0f, 1.0f, nullptr);
    for (int i = 0; i < 64; i += 2)
        CHECK(std::hypot(y[i], y[i + 1]) == doctest::Approx(std::hypot(x[i], x[i + 1])).epsilon(1e-5));
    // first pair turns by exactly pos radians
    CHECK(std::atan2(y[1], y[0]) == doctest::Approx(std::remainder(std::atan2(x[1], x[0]) + 17.0, 2 * M_PI)).epsilon(1e-4));
    // a partial rotation (n_rot < head_dim) leaves the tail untouched
    std::vector<float> z = x;
    rope_norm(z.data(), 64, 32, 5, 10000.0f, 1.0f, nullptr);
    CHECK(std::equal(z.begin() + 32, z.end(), x.begin() + 32));
}

TEST_CASE("ops: swiglu is silu(g) * u; f16 dot orders agree with the exact sum") {
    const float g[9] = {-3, -1, 0, 0.5f, 1, 2, 3, 4, -0.25f}, u[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    float y[9];
    swiglu(g, u, y, 9);
    for (int i = 0; i < 9; ++i) CHECK(y[i] == doctest::Approx(g[i] / (1 + std::exp(-g[i])) * u[i]).epsilon(1e-6));

    const std::vector<float> a = wave(96, 0.1f), b = wave(96, 0.9f);
    std::vector<uint16_t> ah(96), bh(96);
    convert_row_f16(a.data(), ah.data(), 96);
    convert_row_f16(b.data(), bh.data(), 96);
    double exact = 0;
    for (int i = 0; i < 96; ++i) exact += static_cast<double>(fp16_to_fp32(ah[i])) * fp16_to_fp32(bh[i]);
    CHECK(dot_f16_lanes(96, ah.data(), bh.data()) == doctest::Approx(exact).epsilon(1e-5));
    CHECK(dot_f16_gemm(96, ah.data(), bh.data()) == doctest::Approx(exact).epsilon(1e-5));
    CHECK(dot_f16_lanes(37, ah.data(), bh.data()) == doctest::Approx(dot_f16_f16_ref(37, ah.data(), bh.data())).epsilon(1e-5));
}

TEST_CASE("ops: geglu is gelu(g) * u at g rounded to half, 0 and g outside [-10, 10]; softcap bounds by c") {
    const float g[8] = {-12, -10, -3, -0.5f, 0, 0.75f, 10, 11}, u[8] = {2, 2, 2, 2, 2, 2, 2, 2};
    float y[8];
    geglu(g, u, y, 8);
    for (int i = 0; i < 8; ++i) {
        const double x = g[i] <= -10 ? 0 : g[i] >= 10 ? g[i] : 0.5 * g[i] * (1 + std::tanh(0.7978845608 * g[i] * (1 + 0.044715 * g[i] * g[i])));
        CHECK(y[i] == doctest::Approx(x * 2).epsilon(2e-3)); // the table holds halves
    }
    // llama.cpp's value (its ffn_geglu on Gemma 3 270M) at the one half where GCC's fma
    // contraction of ggml's gelu changes the table: -0.045501709 * u, not -0.045471191 * u
    const float g1 = -1.9989111f, u1 = 1.0f;
    geglu(&g1, &u1, y, 1);
    CHECK(y[0] == -0.045501708984375f);
    float x[4] = {-1000, -1, 0.5f, 1000};
    softcap(x, 4, 30.0f);
    CHECK(x[0] == doctest::Approx(-30));
    CHECK(x[1] == doctest::Approx(30 * std::tanh(-1.0 / 30)));
    CHECK(x[3] == doctest::Approx(30));
}

TEST_CASE("ops: AVX2 f16 dots are bit-identical to their references in both orders") {
    if (!cpu_has_avx2()) return;
    for (int n : {8, 32, 64, 96, 200, 1024}) {
        CAPTURE(n);
        const std::vector<float> a = wave(n, 0.2f), b = wave(n, 1.1f);
        std::vector<uint16_t> ah(static_cast<size_t>(n)), bh(static_cast<size_t>(n));
        convert_row_f16(a.data(), ah.data(), n);
        convert_row_f16(b.data(), bh.data(), n);
        const float r1 = dot_f16_lanes_ref(n, ah.data(), bh.data()), s1 = dot_f16_lanes_avx2(n, ah.data(), bh.data());
        const float r2 = dot_f16_gemm_ref(n, ah.data(), bh.data()), s2 = dot_f16_gemm_avx2(n, ah.data(), bh.data());
        CHECK(std::memcmp(&r1, &s1, 4) == 0);
        CHECK(std::memcmp(&r2, &s2, 4) == 0);
    }
}

TEST_CASE("ops: paged f16 matvecs over scattered blocks give each row the contiguous dot, bit for bit") {
    // rows of n halves cut into tiles of 32 or 64 columns, stored out of order in a pool of
    // blocks whose stride is larger than a tile (as in the KV cache: other layers lie between);
    // 70 rows: more than one pass of the AVX2 kernels' row buffer, and not a multiple of 4
    const int n_rows = 70;
    for (int block_len : {32, 64}) {
        const int n_blocks = 6, at = 7; // at: the tile's offset inside each block
        const size_t stride = static_cast<size_t>(n_rows) * block_len + 40;
        const std::vector<int32_t> table = {4, 1, 5, 0, 3, 2};
        for (int n : {32, 64, 96, 160, 192, 37, 101}) {
            if (n > n_blocks * block_len) continue;
            CAPTURE(block_len);
            CAPTURE(n);
            std::vector<uint16_t> rows(static_cast<size_t>(n_rows) * n), wh(static_cast<size_t>(n));
            const std::vector<float> w = wave(n, 1.7f);
            convert_row_f16(w.data(), wh.data(), n);
            std::vector<uint16_t> pool(n_blocks * stride, fp32_to_fp16(1000.0f)); // not V's values
            for (int r = 0; r < n_rows; ++r) {
                const std::vector<float> x = wave(n, 0.3f + 0.01f * static_cast<float>(r));
                convert_row_f16(x.data(), &rows[static_cast<size_t>(r) * n], n);
                for (int i = 0; i < n; ++i)
                    pool[table[static_cast<size_t>(i / block_len)] * stride + at + static_cast<size_t>(r) * block_len +
                         i % block_len] = rows[static_cast<size_t>(r) * n + i];
            }
            const uint16_t *v = pool.data() + at;
            std::vector<float> y(n_rows), ya(n_rows);
            const auto row = [&](int r) { return &rows[static_cast<size_t>(r) * n]; };
            const auto same = [](float x, float z) { return std::memcmp(&x, &z, 4) == 0; };
            matvec_f16_lanes_paged_ref(n, n_rows, v, table.data(), stride, block_len, wh.data(), y.data());
            if (cpu_has_avx2()) matvec_f16_lanes_paged_avx2(n, n_rows, v, table.data(), stride, block_len, wh.data(), ya.data());
            for (int r = 0; r < n_rows; ++r) {
                CHECK(same(y[r], dot_f16_lanes_ref(n, row(r), wh.data())));
                if (cpu_has_avx2()) CHECK(same(ya[r], dot_f16_lanes_avx2(n, row(r), wh.data())));
            }
            if (n % 8 != 0) continue;
            matvec_f16_gemm_paged_ref(n, n_rows, v, table.data(), stride, block_len, wh.data(), y.data());
            if (cpu_has_avx2()) matvec_f16_gemm_paged_avx2(n, n_rows, v, table.data(), stride, block_len, wh.data(), ya.data());
            for (int r = 0; r < n_rows; ++r) {
                CHECK(same(y[r], dot_f16_gemm_ref(n, row(r), wh.data())));
                if (cpu_has_avx2()) CHECK(same(ya[r], dot_f16_gemm_avx2(n, row(r), wh.data())));
            }
        }
    }
}

TEST_CASE("kernels: multi-column kernels give each column the one-column result, bit for bit") {
    for (tensor_type t : {tensor_type::q4_0, tensor_type::q4_1, tensor_type::q8_0, tensor_type::f16, tensor_type::f32}) {
        CAPTURE(tensor_type_name(t));
        const int n = 576;
        const std::vector<uint8_t> wq = make_weight(t, wave(n, 0.4f));
        const tensor_type at = activation_type(t);
        const size_t xs = row_bytes(at, n);
        std::vector<uint8_t> xq(xs * kMaxCols);
        for (int c = 0; c < kMaxCols; ++c) {
            const std::vector<float> x = wave(n, 1.0f + static_cast<float>(c));
            quantize_row(at, x.data(), xq.data() + c * xs, n);
        }
        const dot_fn one = dot_kernel(t);
        const dot_cols_fn cols = dot_cols_kernel(t);
        REQUIRE(reinterpret_cast<void *>(cols) != nullptr);
        std::vector<float> xd(static_cast<size_t>(kMaxCols * n / QK * 2));
        for (int c = 0; c < kMaxCols; ++c) activation_scales(at, xq.data() + c * xs, n, xd.data() + c * n / QK * 2);
        const bool eight_bit = at == tensor_type::q8_0 || at == tensor_type::q8_1;
        for (int nc = 1; nc <= kMaxCols; ++nc) {
            float out[kMaxCols], out_blocks[kMaxCols];
            cols(n, wq.data(), xq.data(), xs, eight_bit ? xd.data() : nullptr, nc, out);
            cols(n, wq.data(), xq.data(), xs, nullptr, nc, out_blocks);
            for (int c = 0; c < nc; ++c) {
                const float single = one(n, wq.data(), xq.data() + c * xs);
                CHECK(std::memcmp(&single, &out[c], sizeof(float)) == 0);
                CHECK(std::memcmp(&single, &out_blocks[c], sizeof(float)) == 0);
            }
        }
    }
}

TEST_CASE("ops: AVX2 softmax and swiglu are bit-identical to their references, far tails too") {
    if (!cpu_has_avx2()) return;
    for (int n : {1, 7, 8, 13, 64, 100}) {
        CAPTURE(n);
        std::vector<float> a(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) a[static_cast<size_t>(i)] = 40.0f * std::sin(static_cast<float>(i) * 1.3f) - (i % 5 == 0 ? 150.0f : 0.0f);
        if (n > 3) a[2] = -INFINITY;
        std::vector<float> r = a, s = a;
        softmax_ref(r.data(), n, 0.7f);
        softmax_avx2(s.data(), n, 0.7f);
        CHECK(std::memcmp(r.data(), s.data(), sizeof(float) * r.size()) == 0);
        std::vector<float> u = wave(n, 0.5f), yr(static_cast<size_t>(n)), ys(static_cast<size_t>(n));
        swiglu_ref(a.data(), u.data(), yr.data(), n);
        swiglu_avx2(a.data(), u.data(), ys.data(), n);
        CHECK(std::memcmp(yr.data(), ys.data(), sizeof(float) * yr.size()) == 0);
    }
}

TEST_CASE("ops: AVX2 geglu is bit-identical to its reference on every finite half, ties and the +-10 edges") {
    if (!cpu_has_avx2()) return;
    std::vector<float> g;
    for (uint32_t h = 0; h < 65536; ++h) {
        const float x = fp16_to_fp32(static_cast<uint16_t>(h));
        if (!std::isfinite(x)) continue;
        g.push_back(x);
        g.push_back(std::nextafter(x, 1e30f)); // between halves: the rounding decides the entry
    }
    for (float x : {-10.0f, 10.0f, std::nextafter(-10.0f, 0.0f), std::nextafter(10.0f, 0.0f), -1e30f, 1e30f}) g.push_back(x);
    g.push_back(fp16_to_fp32(0x3c00) + 0x1p-11f); // exactly halfway between 1 and the next half
    const int n = static_cast<int>(g.size());     // not a multiple of 8: the tail too
    const std::vector<float> u = wave(n, 1.5f);
    std::vector<float> yr(g.size()), ys(g.size());
    geglu_ref(g.data(), u.data(), yr.data(), n);
    geglu_avx2(g.data(), u.data(), ys.data(), n);
    int differ = 0;
    for (size_t i = 0; i < g.size(); ++i) differ += std::memcmp(&yr[i], &ys[i], sizeof(float)) != 0;
    CHECK(differ == 0);
}

TEST_CASE("quants: AVX2 activation quantization writes the reference's bytes") {
    if (!cpu_has_avx2()) return;
    const int n = 32 * 9;
    std::vector<float> x = wave(n, 0.3f);
    for (int i = 0; i < 32; ++i) x[static_cast<size_t>(32 + i)] = 0.0f;       // an all-zero block
    for (int i = 0; i < 32; ++i) x[static_cast<size_t>(64 + i)] = static_cast<float>(i) - 15.5f; // ties at .5
    std::vector<block_q8_0> a(n / 32), b(n / 32);
    quantize_row_q8_0_ref(x.data(), a.data(), n);
    quantize_row_q8_0_avx2(x.data(), b.data(), n);
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(block_q8_0)) == 0);
    std::vector<block_q8_1> c(n / 32), d(n / 32);
    quantize_row_q8_1_ref(x.data(), c.data(), n);
    quantize_row_q8_1_avx2(x.data(), d.data(), n);
    CHECK(std::memcmp(c.data(), d.data(), c.size() * sizeof(block_q8_1)) == 0);
    std::vector<uint16_t> e(n), f(n);
    convert_row_f16_ref(x.data(), e.data(), n - 3);
    convert_row_f16_avx2(x.data(), f.data(), n - 3);
    CHECK(e == f);
}

TEST_CASE("kernels: register tiles give every output the one-token AVX2 result, bit for bit, at every shape") {
    struct kernel { tile_fn fn; int rows, cols, offset; };
    struct level { const char *name; kernel q4_0, q4_1, q8_0; };
    const auto k256 = [](tile_fn f) { return kernel{f, kTileRows, kTileCols, 0}; };
    std::vector<level> levels{{"avx2", k256(tile_q4_0_q8_0_avx2), k256(tile_q4_1_q8_1_avx2), k256(tile_q8_0_q8_0_avx2)}};
    if (cpu_has_avx512())
        levels.push_back({"avx512", k256(tile_q4_0_q8_0_avx512), k256(tile_q4_1_q8_1_avx512), k256(tile_q8_0_q8_0_avx512)});
    else MESSAGE("SKIPPED: this CPU lacks AVX-512 F/BW/VL, so the avx512 tiles were not run");
    if (cpu_has_avx512vnni()) {
        levels.push_back({"zmm", {tile_q4_0_q8_0_zmm, kZmmTileRows, kZmmTileCols, 8},
                          {tile_q4_1_q8_1_zmm, kZmmTileRows, kZmmTileCols, 0},
                          {tile_q8_0_q8_0_zmm, kZmmTileRows, kZmmTileCols, 128}});
    } else MESSAGE("SKIPPED: this CPU lacks AVX-512 VNNI, so the zmm tiles were not run");
    constexpr int kRows = std::max(kTileRows, kZmmTileRows), kCols = std::max(kTileCols, kZmmTileCols);
    for (tensor_type t : {tensor_type::q4_0, tensor_type::q4_1, tensor_type::q8_0}) {
        const dot_fn one = t == tensor_type::q4_0 ? dot_q4_0_q8_0_avx2 : t == tensor_type::q4_1 ? dot_q4_1_q8_1_avx2 : dot_q8_0_q8_0_avx2;
        for (int n : kBlockedSizes) {
            CAPTURE(tensor_type_name(t));
            CAPTURE(n);
            const size_t ws = row_bytes(t, n);
            std::vector<uint8_t> w;
            for (int r = 0; r < kRows; ++r) {
                const std::vector<uint8_t> row = make_weight(t, wave(n, 0.4f + 0.3f * static_cast<float>(r)));
                w.insert(w.end(), row.begin(), row.end());
            }
            if (t == tensor_type::q8_0) // the extremes of the signed bytes, taken as unsigned by the zmm tiles
                for (int b = 0; b < n / QK; ++b) {
                    auto *blk = reinterpret_cast<block_q8_0 *>(w.data()) + b;
                    blk->qs[0] = -128, blk->qs[1] = 127, blk->qs[5] = -127;
                }
            const tensor_type at = activation_type(t);
            const size_t xs = row_bytes(at, n);
            const int64_t nb = n / QK;
            std::vector<uint8_t> xq(xs * kCols);
            std::vector<float> xd(static_cast<size_t>(kCols * nb * 2));
            for (int c = 0; c < kCols; ++c) {
                const std::vector<float> x = wave(n, 1.0f + 0.37f * static_cast<float>(c));
                quantize_row(at, x.data(), xq.data() + c * xs, n);
                activation_scales(at, xq.data() + c * xs, n, xd.data() + c * nb * 2);
            }
            const size_t sts = kCols + kTileOut; // padding beyond the columns, as matmul leaves it
            std::vector<float> xt(2 * nb * sts);
            transpose_scales(xd.data(), kCols, nb, xt.data(), sts);
            for (const level &l : levels) {
                CAPTURE(l.name);
                const kernel &k = t == tensor_type::q4_0 ? l.q4_0 : t == tensor_type::q4_1 ? l.q4_1 : l.q8_0;
                std::vector<int32_t> xc(static_cast<size_t>(kCols * nb * 8));
                if (k.offset) offset_sums(xq.data(), kCols, xs, nb, k.offset, xc.data());
                for (int nr = 1; nr <= k.rows; ++nr)
                    for (int nc = 1; nc <= k.cols; ++nc) {
                        float out[kRows * kTileOut];
                        k.fn(n, w.data(), ws, nr, xq.data(), xs, xt.data(), sts, xc.data(), nc, out);
                        int mismatches = 0;
                        for (int r = 0; r < nr; ++r)
                            for (int c = 0; c < nc; ++c)
                                mismatches += !same_bits(out[r * kTileOut + c], one(n, w.data() + r * ws, xq.data() + c * xs));
                        CAPTURE(nr);
                        CAPTURE(nc);
                        CHECK(mismatches == 0);
                    }
                // a tile that starts at a later token reads that token's scales and offsets
                const int c0 = kCols - 3;
                float out[kRows * kTileOut];
                k.fn(n, w.data(), ws, 1, xq.data() + c0 * xs, xs, xt.data() + c0, sts,
                     xc.data() + static_cast<size_t>(c0 * nb * 8), 3, out);
                for (int c = 0; c < 3; ++c) CHECK(same_bits(out[c], one(n, w.data(), xq.data() + (c0 + c) * xs)));
            }
        }
    }
}
