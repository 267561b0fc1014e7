// The 5-bit and K-quant formats: dequantization against the PyPI `gguf` package's values
// (tests/fixtures/quant_blocks.json, scripts/gen_quant_reference.py), every dot against those
// values, each SIMD level against the reference, tiles and multi-column kernels against the
// one-token kernel, and the Q8_K activation quantizer's rules.
#include "tests/support/paths.h"
#include <doctest/doctest.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "engine/fp16.h"
#include "engine/quants.h"
#include "engine/quants_k.h"

using namespace actorserve;

namespace {

struct format_blocks {
    tensor_type type;
    std::vector<uint8_t> bytes;
    std::vector<float> values; // gguf's dequantization
    int64_t n() const { return static_cast<int64_t>(values.size()); }
};

tensor_type type_named(std::string_view name) {
    static const std::map<std::string_view, tensor_type> types = {
        {"Q5_0", tensor_type::q5_0}, {"Q5_1", tensor_type::q5_1}, {"Q4_K", tensor_type::q4_k},
        {"Q5_K", tensor_type::q5_k}, {"Q6_K", tensor_type::q6_k}};
    auto it = types.find(name);
    REQUIRE_MESSAGE(it != types.end(), "unknown type " << name);
    return it->second;
}

const std::vector<format_blocks> &fixture() {
    static const std::vector<format_blocks> formats = [] {
        simdjson::dom::parser parser;
        simdjson::dom::element doc;
        const std::string path = test_paths::fixtures() + "/quant_blocks.json";
        REQUIRE_MESSAGE(parser.load(path).get(doc) == simdjson::SUCCESS, "cannot read " << path);
        std::vector<format_blocks> out;
        for (simdjson::dom::element f : doc["formats"].get_array()) {
            format_blocks fb;
            fb.type = type_named(std::string_view(f["type"]));
            const std::string_view hex = f["bytes"];
            for (size_t i = 0; i + 1 < hex.size(); i += 2)
                fb.bytes.push_back(static_cast<uint8_t>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
            for (double v : f["values"].get_array()) fb.values.push_back(static_cast<float>(v));
            REQUIRE(fb.bytes.size() == row_bytes(fb.type, fb.n()));
            out.push_back(std::move(fb));
        }
        REQUIRE(out.size() == 5);
        return out;
    }();
    return formats;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

std::vector<float> wave(int64_t n, float phase) {
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = 0.1f + 2.0f * std::cos(static_cast<float>(i) * 0.37f + phase);
    return x;
}

std::vector<uint8_t> activations(tensor_type weight, const std::vector<float> &x) {
    const tensor_type at = activation_type(weight);
    const int64_t n = static_cast<int64_t>(x.size());
    std::vector<uint8_t> q(row_bytes(at, n));
    quantize_row(at, x.data(), q.data(), n);
    return q;
}

struct dot_pair { tensor_type type; dot_fn ref, avx2; };
const dot_pair kDots[] = {
    {tensor_type::q5_0, dot_q5_0_q8_0_ref, dot_q5_0_q8_0_avx2}, {tensor_type::q5_1, dot_q5_1_q8_1_ref, dot_q5_1_q8_1_avx2},
    {tensor_type::q4_k, dot_q4_k_q8_k_ref, dot_q4_k_q8_k_avx2}, {tensor_type::q5_k, dot_q5_k_q8_k_ref, dot_q5_k_q8_k_avx2},
    {tensor_type::q6_k, dot_q6_k_q8_k_ref, dot_q6_k_q8_k_avx2},
};

} // namespace

TEST_CASE("kquants: every format dequantizes to the gguf package's values, bit for bit") {
    for (const format_blocks &f : fixture()) {
        CAPTURE(tensor_type_name(f.type));
        std::vector<float> y(f.values.size());
        dequantize_row(f.type, f.bytes.data(), y.data(), f.n());
        int mismatches = 0, first = -1;
        for (size_t i = 0; i < y.size(); ++i)
            if (!same_bits(y[i], f.values[i]) && !(std::isnan(y[i]) && std::isnan(f.values[i]))) {
                if (first < 0) first = static_cast<int>(i);
                ++mismatches;
            }
        CAPTURE(first);
        CHECK(mismatches == 0);
    }
}

TEST_CASE("kquants: each dot equals the dequantized weights times the dequantized activations") {
    for (const dot_pair &p : kDots)
        for (const format_blocks &f : fixture()) {
            if (f.type != p.type) continue;
            CAPTURE(tensor_type_name(f.type));
            const std::vector<float> x = wave(f.n(), 0.9f);
            const std::vector<uint8_t> xq = activations(f.type, x);
            // the activations as the kernel sees them: Q8_K is q * d, Q8_0 / Q8_1 through their blocks
            std::vector<float> xa(static_cast<size_t>(f.n()));
            if (activation_type(f.type) == tensor_type::q8_k) {
                const auto *b = reinterpret_cast<const block_q8_k *>(xq.data());
                for (int64_t i = 0; i < f.n(); ++i) xa[static_cast<size_t>(i)] = b[i / QK_K].qs[i % QK_K] * b[i / QK_K].d;
            } else if (activation_type(f.type) == tensor_type::q8_0) {
                dequantize_row(tensor_type::q8_0, xq.data(), xa.data(), f.n());
            } else {
                const auto *b = reinterpret_cast<const block_q8_1 *>(xq.data());
                for (int64_t i = 0; i < f.n(); ++i) xa[static_cast<size_t>(i)] = b[i / QK].qs[i % QK] * fp16_to_fp32(b[i / QK].d);
            }
            double exact = 0, mag = 0;
            for (size_t i = 0; i < xa.size(); ++i) {
                exact += static_cast<double>(f.values[i]) * xa[i];
                mag += std::fabs(static_cast<double>(f.values[i]) * xa[i]);
            }
            for (dot_fn fn : {p.ref, p.avx2}) {
                if (fn == p.avx2 && !cpu_has_avx2()) continue;
                const float got = fn(f.n(), f.bytes.data(), xq.data());
                // Q8_1's s is d * sum(q) rounded to half: the one inexact term of Q5_1
                const double tol = 1e-5 * mag + (f.type == tensor_type::q5_1 ? 1e-3 * mag : 0.0);
                CHECK(std::fabs(got - exact) <= tol);
            }
        }
}

namespace {
// A weight row of random bytes with every half-precision scale set to a finite value of either
// sign: all bit patterns of the quants, nothing that overflows.
std::vector<uint8_t> random_row(tensor_type t, int64_t n, uint64_t seed) {
    std::vector<uint8_t> row(row_bytes(t, n));
    for (uint8_t &b : row) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        b = static_cast<uint8_t>(seed >> 56);
    }
    const tensor_type_traits *tr = tensor_traits(static_cast<uint32_t>(t));
    std::vector<size_t> halves; // byte offsets of the scale fields in a block
    switch (t) {
    case tensor_type::q5_0: case tensor_type::q6_k: halves = {t == tensor_type::q5_0 ? 0u : 208u}; break;
    default: halves = {0, 2}; break; // q5_1 (d, m), q4_k and q5_k (d, dmin)
    }
    for (size_t b = 0; b < row.size() / tr->type_size; ++b)
        for (size_t k = 0; k < halves.size(); ++k) {
            const float v = (((b + k) % 3) == 0 ? -1.0f : 1.0f) * std::ldexp(1.0f + 0.1f * static_cast<float>(b % 7), -8 - static_cast<int>(k));
            const uint16_t h = fp32_to_fp16(v);
            std::memcpy(&row[b * tr->type_size + halves[k]], &h, 2);
        }
    return row;
}
constexpr int64_t kSizes32[] = {32, 64, 96, 576, 32 * 37};
constexpr int64_t kSizesK[] = {256, 512, 1536, 256 * 5};
} // namespace

TEST_CASE("kquants: the K-quant references are llama.cpp's AVX2 order: every level gives their bits") {
    for (const dot_pair &p : kDots) {
        const bool k = activation_type(p.type) == tensor_type::q8_k;
        for (int64_t n : k ? std::vector<int64_t>(std::begin(kSizesK), std::end(kSizesK))
                           : std::vector<int64_t>(std::begin(kSizes32), std::end(kSizes32))) {
            CAPTURE(tensor_type_name(p.type));
            CAPTURE(n);
            const std::vector<uint8_t> w = random_row(p.type, n, 7 + static_cast<uint64_t>(n));
            const std::vector<uint8_t> x = activations(p.type, wave(n, 0.2f));
            const float r = p.ref(n, w.data(), x.data());
            CHECK(std::isfinite(r));
            if (!cpu_has_avx2()) continue;
            const float a = p.avx2(n, w.data(), x.data());
            if (k) CHECK(same_bits(a, r));
            else CHECK(std::fabs(a - r) <= kTolDot * std::fmax(1.0f, std::fabs(r)) * static_cast<float>(n));
            CHECK(same_bits(dot_kernel(p.type)(n, w.data(), x.data()), a)); // the selected level, whichever it is
        }
    }
}

TEST_CASE("kquants: Q5 AVX-512 dots and multi-column kernels are bit-identical to AVX2's") {
    struct level { const char *name; bool ok; dot_fn d50, d51; dot_cols_fn c50, c51; };
    const level levels[] = {
        {"avx2", cpu_has_avx2(), dot_q5_0_q8_0_avx2, dot_q5_1_q8_1_avx2, cols_q5_0_q8_0_avx2, cols_q5_1_q8_1_avx2},
        {"avx512", cpu_has_avx512(), dot_q5_0_q8_0_avx512, dot_q5_1_q8_1_avx512, cols_q5_0_q8_0_avx512, cols_q5_1_q8_1_avx512},
        {"avx512vnni", cpu_has_avx512vnni(), dot_q5_0_q8_0_avx512vnni, dot_q5_1_q8_1_avx512vnni, cols_q5_0_q8_0_avx512vnni,
         cols_q5_1_q8_1_avx512vnni},
    };
    for (const level &l : levels) {
        if (!l.ok) {
            MESSAGE("SKIPPED: this CPU lacks " << l.name);
            continue;
        }
        CAPTURE(l.name);
        for (tensor_type t : {tensor_type::q5_0, tensor_type::q5_1}) {
            CAPTURE(tensor_type_name(t));
            const int64_t n = 576;
            const tensor_type at = activation_type(t);
            const std::vector<uint8_t> w = random_row(t, n, 11);
            const size_t xs = row_bytes(at, n);
            std::vector<uint8_t> x(xs * kMaxCols);
            std::vector<float> xd(static_cast<size_t>(kMaxCols * n / QK * 2));
            for (int c = 0; c < kMaxCols; ++c) {
                const std::vector<uint8_t> xc = activations(t, wave(n, 1.0f + static_cast<float>(c)));
                std::memcpy(x.data() + c * xs, xc.data(), xs);
                activation_scales(at, x.data() + c * xs, n, xd.data() + c * n / QK * 2);
            }
            const dot_fn dot = t == tensor_type::q5_0 ? l.d50 : l.d51;
            const dot_cols_fn cols = t == tensor_type::q5_0 ? l.c50 : l.c51;
            const dot_fn base = t == tensor_type::q5_0 ? dot_q5_0_q8_0_avx2 : dot_q5_1_q8_1_avx2;
            for (int nc = 1; nc <= kMaxCols; ++nc) {
                float out[kMaxCols], out_blocks[kMaxCols];
                cols(n, w.data(), x.data(), xs, xd.data(), nc, out);
                cols(n, w.data(), x.data(), xs, nullptr, nc, out_blocks);
                for (int c = 0; c < nc; ++c) {
                    const float one = base(n, w.data(), x.data() + c * xs);
                    CHECK(same_bits(dot(n, w.data(), x.data() + c * xs), one));
                    CHECK(same_bits(out[c], one));
                    CHECK(same_bits(out_blocks[c], one));
                }
            }
        }
    }
}

TEST_CASE("kquants: Q5 register tiles give every output the one-token AVX2 result, bit for bit") {
    if (!cpu_has_avx2()) {
        MESSAGE("SKIPPED: no AVX2");
        return;
    }
    struct kernel { const char *name; bool ok; tile_fn q50, q51; int rows, cols, offset; };
    const kernel kernels[] = {
        {"avx2", true, tile_q5_0_q8_0_avx2, tile_q5_1_q8_1_avx2, kTileRows, kTileCols, 0},
        {"avx512", cpu_has_avx512(), tile_q5_0_q8_0_avx512, tile_q5_1_q8_1_avx512, kTileRows, kTileCols, 0},
        {"zmm", cpu_has_avx512vnni(), tile_q5_0_q8_0_zmm, tile_q5_1_q8_1_zmm, kZmmTileRows, kZmmTileCols, 16}};
    constexpr int kRows = std::max(kTileRows, kZmmTileRows), kCols = std::max(kTileCols, kZmmTileCols);
    for (tensor_type t : {tensor_type::q5_0, tensor_type::q5_1})
        for (int64_t n : kSizes32) {
            CAPTURE(tensor_type_name(t));
            CAPTURE(n);
            const tensor_type at = activation_type(t);
            const size_t ws = row_bytes(t, n), xs = row_bytes(at, n);
            const int64_t nb = n / QK;
            std::vector<uint8_t> w, x;
            std::vector<float> xd(static_cast<size_t>(kCols * nb * 2));
            for (int r = 0; r < kRows; ++r) {
                const std::vector<uint8_t> row = random_row(t, n, 100 + static_cast<uint64_t>(r));
                w.insert(w.end(), row.begin(), row.end());
            }
            for (int c = 0; c < kCols; ++c) {
                const std::vector<uint8_t> xc = activations(t, wave(n, 0.5f + 0.3f * static_cast<float>(c)));
                x.insert(x.end(), xc.begin(), xc.end());
                activation_scales(at, x.data() + c * xs, n, xd.data() + c * nb * 2);
            }
            const size_t sts = kCols + kTileOut;
            std::vector<float> xt(static_cast<size_t>(2 * nb) * sts);
            transpose_scales(xd.data(), kCols, nb, xt.data(), sts);
            const dot_fn one = t == tensor_type::q5_0 ? dot_q5_0_q8_0_avx2 : dot_q5_1_q8_1_avx2;
            for (const kernel &k : kernels) {
                if (!k.ok) continue;
                CAPTURE(k.name);
                std::vector<int32_t> xc(static_cast<size_t>(kCols * nb * 8));
                const int offset = t == tensor_type::q5_0 ? k.offset : 0;
                if (offset) offset_sums(x.data(), kCols, xs, nb, offset, xc.data());
                for (int nr = 1; nr <= k.rows; ++nr)
                    for (int nc = 1; nc <= k.cols; ++nc) {
                        float out[kRows * kTileOut];
                        (t == tensor_type::q5_0 ? k.q50 : k.q51)(n, w.data(), ws, nr, x.data(), xs, xt.data(), sts, xc.data(), nc, out);
                        int mismatches = 0;
                        for (int r = 0; r < nr; ++r)
                            for (int c = 0; c < nc; ++c)
                                mismatches += !same_bits(out[r * kTileOut + c], one(n, w.data() + r * ws, x.data() + c * xs));
                        CAPTURE(nr);
                        CAPTURE(nc);
                        CHECK(mismatches == 0);
                    }
            }
        }
}

TEST_CASE("kquants: Q8_K maps the largest magnitude to -127, keeps sums, rounds within half a step") {
    std::vector<float> x = wave(512, 0.3f);
    x[300] = -5.0f; // the largest magnitude of block 1, negative
    x[301] = 5.0f;  // a tie after it: the first one decides the sign of d
    std::vector<float> zeros(256, 0.0f);
    x.insert(x.end(), zeros.begin(), zeros.end()); // block 2: all zero
    std::vector<block_q8_k> y(3);
    quantize_row_q8_k(x.data(), y.data(), 768);
    CHECK(y[1].qs[300 - 256] == -127);
    CHECK(y[1].qs[301 - 256] == 127);
    CHECK(y[1].d == doctest::Approx(5.0f / 127.0f));
    CHECK(y[2].d == 0.0f);
    for (int b = 0; b < 3; ++b) {
        for (int i = 0; i < 16; ++i) {
            int s = 0;
            for (int j = 0; j < 16; ++j) s += y[b].qs[16 * i + j];
            CHECK(y[b].bsums[i] == s);
        }
        for (int j = 0; j < QK_K; ++j)
            CHECK(std::fabs(x[static_cast<size_t>(256 * b + j)] - y[b].qs[j] * y[b].d) <= 0.5f * std::fabs(y[b].d) * 1.0001f);
    }
}

TEST_CASE("kquants: K-quant register tiles give every output the one-row kernel's bits, at every shape") {
    if (!cpu_has_avx2()) {
        MESSAGE("SKIPPED: no AVX2");
        return;
    }
    struct kernel { const char *name; bool ok; tile_fn q4, q5, q6; int rows; };
    const kernel kernels[] = {
        {"avx2", true, tile_q4_k_q8_k_avx2, tile_q5_k_q8_k_avx2, tile_q6_k_q8_k_avx2, kKTileRows},
        {"avx512", cpu_has_avx512(), tile_q4_k_q8_k_avx512, tile_q5_k_q8_k_avx512, tile_q6_k_q8_k_avx512, kKTileRowsWide}};
    for (tensor_type t : {tensor_type::q4_k, tensor_type::q5_k, tensor_type::q6_k})
        for (int64_t n : kSizesK) {
            CAPTURE(tensor_type_name(t));
            CAPTURE(n);
            const size_t ws = row_bytes(t, n), xs = row_bytes(tensor_type::q8_k, n);
            std::vector<uint8_t> w, x;
            for (int r = 0; r < kKTileRowsWide; ++r) {
                const std::vector<uint8_t> row = random_row(t, n, 300 + static_cast<uint64_t>(r));
                w.insert(w.end(), row.begin(), row.end());
            }
            for (int c = 0; c < kKTileCols; ++c) {
                const std::vector<uint8_t> xc = activations(t, wave(n, 0.7f * static_cast<float>(c)));
                x.insert(x.end(), xc.begin(), xc.end());
            }
            const dot_fn one = dot_kernel(t);
            for (const kernel &k : kernels) {
                if (!k.ok) continue;
                CAPTURE(k.name);
                const tile_fn fn = t == tensor_type::q4_k ? k.q4 : t == tensor_type::q5_k ? k.q5 : k.q6;
                for (int nr = 1; nr <= k.rows; ++nr)
                    for (int nc = 1; nc <= kKTileCols; ++nc) {
                        float out[kKTileRowsWide * kTileOut];
                        fn(n, w.data(), ws, nr, x.data(), xs, nullptr, 0, nullptr, nc, out);
                        int mismatches = 0;
                        for (int r = 0; r < nr; ++r)
                            for (int c = 0; c < nc; ++c)
                                mismatches += !same_bits(out[r * kTileOut + c], one(n, w.data() + r * ws, x.data() + c * xs));
                        CAPTURE(nr);
                        CAPTURE(nc);
                        CHECK(mismatches == 0);
                    }
            }
        }
}

TEST_CASE("kquants: the 512-bit K-quant kernel gives every output the one-row kernel's bits, tails too") {
    if (kzmm_kernel(tensor_type::q4_k) == nullptr) {
        MESSAGE("SKIPPED: the selected level is not avx512vnni");
        return;
    }
    constexpr int kTokens = 37; // two whole tiles of 16 and a tail of 5
    for (tensor_type t : {tensor_type::q4_k, tensor_type::q5_k, tensor_type::q6_k})
        for (int64_t n : kSizesK) {
            CAPTURE(tensor_type_name(t));
            CAPTURE(n);
            const size_t ws = row_bytes(t, n), xs = row_bytes(tensor_type::q8_k, n);
            std::vector<uint8_t> w, x;
            for (int r = 0; r < kKzRows; ++r) {
                const std::vector<uint8_t> row = random_row(t, n, 700 + static_cast<uint64_t>(r));
                w.insert(w.end(), row.begin(), row.end());
            }
            for (int c = 0; c < kTokens; ++c) {
                std::vector<float> v = wave(n, 0.37f * static_cast<float>(c));
                if (c == 3) std::fill(v.begin(), v.end(), 0.0f); // a token of zeros: d = 0
                const std::vector<uint8_t> xc = activations(t, v);
                x.insert(x.end(), xc.begin(), xc.end());
            }
            const int64_t nb = n / QK_K, tiles = (kTokens + kKzTokens - 1) / kKzTokens;
            std::vector<int32_t> pack(static_cast<size_t>(tiles * nb) * kKzWords);
            for (int64_t tile = 0; tile < tiles; ++tile) kzmm_pack(x.data(), xs, kTokens, nb, tile, pack.data());
            const dot_fn one = dot_kernel(t);
            const kzmm_fn fn = kzmm_kernel(t);
            for (int nr = 1; nr <= kKzRows; ++nr)
                for (int64_t first = 0; first < kTokens; first += kKzTokens) // from each tile's start
                    for (int64_t nt : {int64_t{1}, int64_t{5}, kTokens - first}) {
                        std::vector<float> y(static_cast<size_t>(kTokens * kKzRows), -1.0f);
                        fn(n, w.data(), ws, nr, pack.data() + static_cast<size_t>(first / kKzTokens * nb) * kKzWords, nt,
                           y.data() + first * kKzRows, kKzRows);
                        int mismatches = 0, touched = 0;
                        for (int64_t c = 0; c < kTokens; ++c)
                            for (int r = 0; r < kKzRows; ++r) {
                                const float got = y[static_cast<size_t>(c * kKzRows + r)];
                                if (c >= first && c < first + nt && r < nr)
                                    mismatches += !same_bits(got, one(n, w.data() + r * ws, x.data() + c * xs));
                                else
                                    touched += got != -1.0f;
                            }
                        CAPTURE(nr);
                        CAPTURE(first);
                        CAPTURE(nt);
                        CHECK(mismatches == 0);
                        CHECK(touched == 0);
                    }
        }
}

TEST_CASE("kquants: the AVX2 Q8_K quantizer writes the reference's bytes, ties and extremes too") {
    if (!cpu_has_avx2()) {
        MESSAGE("SKIPPED: no AVX2");
        return;
    }
    for (int variant = 0; variant < 4; ++variant) {
        std::vector<float> x = wave(1024, 0.1f * static_cast<float>(variant));
        if (variant == 1) x[17] = -9.0f, x[200] = 9.0f;                     // a tie: the first decides
        if (variant == 2) std::fill(x.begin() + 256, x.begin() + 512, 0.0f); // an all-zero block
        if (variant == 3)
            for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 255) - 127) * 0.5f; // halves
        std::vector<block_q8_k> a(4), b(4);
        quantize_row_q8_k_ref(x.data(), a.data(), 1024);
        quantize_row_q8_k_avx2(x.data(), b.data(), 1024);
        CAPTURE(variant);
        CHECK(std::memcmp(a.data(), b.data(), 4 * sizeof(block_q8_k)) == 0);
    }
}
