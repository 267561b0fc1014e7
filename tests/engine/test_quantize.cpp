// Weight quantizers against ggml's reference rules on hand-worked blocks, and the model loaded
// with every --weights format.
#include "tests/support/paths.h"
#include <doctest/doctest.h>
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>

#include "engine/forward.h"
#include "engine/fp16.h"
#include "engine/model.h"
#include "engine/quantize.h"
#include "gguf_writer.h"

using namespace actorserve;
using namespace actorserve::testing;

namespace {

constexpr uint16_t kHalfZero = 0x0000, kHalfNegZero = 0x8000, kHalfOne = 0x3c00;

std::array<float, QK> block_of(float fill) {
    std::array<float, QK> x;
    x.fill(fill);
    return x;
}

// Element j's 4-bit value: low nibble of byte j for j < 16, high nibble of byte j-16 after.
int nibble(const uint8_t *qs, int j) { return j < QK / 2 ? qs[j] & 0x0f : qs[j - QK / 2] >> 4; }

} // namespace

// ggml's quantize_row_q8_0_ref: d = amax/127, q = roundf(x * (1/d)), halves away from zero.
TEST_CASE("quantize q8_0: halves round away from zero, unlike the activation quantizer") {
    std::array<float, QK> x = block_of(0.0f);
    x[0] = 127.0f; // amax 127: d = 1, id = 1, so q = round(x)
    x[1] = 2.5f;
    x[2] = -2.5f;
    x[3] = 0.5f;
    x[4] = 1.5f;
    x[5] = -0.49f;
    x[6] = -127.0f;
    block_q8_0 b{};
    quantize_weights_q8_0(x.data(), &b, QK);
    CHECK(b.d == kHalfOne);
    CHECK(b.qs[0] == 127);
    CHECK(b.qs[1] == 3);
    CHECK(b.qs[2] == -3);
    CHECK(b.qs[3] == 1);
    CHECK(b.qs[4] == 2);
    CHECK(b.qs[5] == 0);
    CHECK(b.qs[6] == -127);
    CHECK(b.qs[7] == 0);

    // The activation quantizer (ggml's SIMD path) rounds halves to even: 2.5 -> 2, 0.5 -> 0.
    block_q8_0 a{};
    quantize_row_q8_0(x.data(), &a, QK);
    CHECK(a.qs[1] == 2);
    CHECK(a.qs[3] == 0);
}

TEST_CASE("quantize q8_0: an all-zero block has scale 0 and zero values; the scale is a rounded half") {
    const std::array<float, QK> z = block_of(0.0f);
    block_q8_0 b{};
    std::fill(std::begin(b.qs), std::end(b.qs), int8_t{5});
    quantize_weights_q8_0(z.data(), &b, QK);
    CHECK(b.d == kHalfZero);
    CHECK(std::all_of(std::begin(b.qs), std::end(b.qs), [](int8_t q) { return q == 0; }));

    // amax 1: d = 1/127 is stored as the nearest half, the values use the float d.
    std::array<float, QK> x;
    for (int j = 0; j < QK; ++j) x[j] = std::cos(static_cast<float>(j)) * (j == 0 ? 1.0f : 0.9f);
    quantize_weights_q8_0(x.data(), &b, QK);
    CHECK(b.d == fp32_to_fp16(1.0f / 127.0f));
    const float id = 1.0f / (1.0f / 127.0f);
    for (int j = 0; j < QK; ++j) CHECK(b.qs[j] == static_cast<int8_t>(std::round(x[j] * id)));
}

// ggml's quantize_row_q4_0_ref: the first element of largest magnitude, max, maps to -8:
// d = max / -8, q = min(15, trunc(x/d + 8.5)).
TEST_CASE("quantize q4_0: largest magnitude negative gives d > 0, values rounded half up") {
    std::array<float, QK> x = block_of(0.0f);
    x[0] = -8.0f; // max = -8: d = 1, id = 1
    x[1] = 0.5f;  // 9.0 -> 9   (half up)
    x[2] = -0.5f; // 8.0 -> 8   (half up, not away from zero)
    x[3] = -1.5f; // 7.0 -> 7
    x[4] = 2.4f;  // 10.9 -> 10
    x[5] = 7.0f;  // 15.5 -> 15
    x[17] = 3.0f; // high nibble of byte 1
    block_q4_0 b{};
    quantize_weights_q4_0(x.data(), &b, QK);
    CHECK(b.d == kHalfOne);
    const int expect[] = {0, 9, 8, 7, 10, 15};
    for (int j = 0; j < 6; ++j) CHECK(nibble(b.qs, j) == expect[j]);
    CHECK(nibble(b.qs, 6) == 8); // zero
    CHECK(nibble(b.qs, 17) == 11);
    CHECK(b.qs[1] == (9 | (11 << 4)));
}

TEST_CASE("quantize q4_0: on a magnitude tie the first wins and the opposite extreme clamps to 15") {
    std::array<float, QK> x = block_of(1.0f);
    x[3] = 4.0f;  // first of largest magnitude: max = 4, d = -0.5, id = -2
    x[9] = -4.0f; // 8 + 8.5 = 16.5 -> 16 -> clamped to 15
    block_q4_0 b{};
    quantize_weights_q4_0(x.data(), &b, QK);
    CHECK(b.d == fp32_to_fp16(-0.5f));
    CHECK(nibble(b.qs, 3) == 0);
    CHECK(nibble(b.qs, 9) == 15);
    CHECK(nibble(b.qs, 0) == 6); // 1 * -2 + 8.5 = 6.5 -> 6
}

TEST_CASE("quantize q4_0: an all-zero block stores d = -0 and every value at the zero point 8") {
    const std::array<float, QK> z = block_of(0.0f);
    block_q4_0 b{};
    quantize_weights_q4_0(z.data(), &b, QK);
    CHECK(b.d == kHalfNegZero); // 0 / -8 is -0; ggml writes it so
    CHECK(std::all_of(std::begin(b.qs), std::end(b.qs), [](uint8_t q) { return q == 0x88; }));
}

// ggml's quantize_row_q4_1_ref: m = min, d = (max - min)/15, q = min(15, trunc((x - m)/d + 0.5)).
TEST_CASE("quantize q4_1: minimum as offset, values rounded half up") {
    std::array<float, QK> x = block_of(0.0f);
    x[0] = -1.0f; // min: m = -1
    x[1] = 14.0f; // max: d = 15/15 = 1
    x[2] = -0.5f; // 0.5 + 0.5 = 1.0 -> 1
    x[3] = 0.49f; // 1.49 + 0.5 -> 1
    x[4] = 2.5f;  // 3.5 + 0.5 = 4.0 -> 4
    block_q4_1 b{};
    quantize_weights_q4_1(x.data(), &b, QK);
    CHECK(b.d == kHalfOne);
    CHECK(b.m == fp32_to_fp16(-1.0f));
    const int expect[] = {0, 15, 1, 1, 4, 1};
    for (int j = 0; j < 6; ++j) CHECK(nibble(b.qs, j) == expect[j]);
}

TEST_CASE("quantize q4_1: a constant block has d = 0 and the constant as its offset") {
    for (float c : {0.0f, 3.0f, -0.1f}) {
        CAPTURE(c);
        const std::array<float, QK> x = block_of(c);
        block_q4_1 b{};
        quantize_weights_q4_1(x.data(), &b, QK);
        CHECK(b.d == kHalfZero);
        CHECK(b.m == fp32_to_fp16(c));
        CHECK(std::all_of(std::begin(b.qs), std::end(b.qs), [](uint8_t q) { return q == 0; }));
    }
}

TEST_CASE("convert_rows: f16 rounds to nearest even; rows split over threads give the same bytes") {
    // 1 + 2^-11 lies halfway between 1 and the next half: rounds to even (1). 1 + 3*2^-11
    // lies halfway between 1+2^-10 and 1+2^-9: rounds to even (1+2^-9).
    const float src[] = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, -65520.0f, 0x1p-25f};
    uint16_t h[4];
    thread_pool one(1);
    convert_rows(tensor_type::f32, reinterpret_cast<const uint8_t *>(src), tensor_type::f16,
                 reinterpret_cast<uint8_t *>(h), 4, 1, one);
    CHECK(h[0] == 0x3c00);
    CHECK(h[1] == 0x3c02);
    CHECK(h[2] == 0xfc00); // rounds to -inf: beyond the largest half 65504 by half an ulp
    CHECK(h[3] == 0x0000); // exactly half the smallest subnormal: to even, zero

    constexpr int n_in = 96, n_rows = 13;
    std::vector<float> m(n_in * n_rows);
    for (size_t i = 0; i < m.size(); ++i) m[i] = 0.1f + 2.0f * std::cos(static_cast<float>(i));
    thread_pool two(2);
    for (tensor_type to : {tensor_type::q4_0, tensor_type::q4_1, tensor_type::q8_0, tensor_type::f16}) {
        CAPTURE(tensor_type_name(to));
        const size_t rb = row_bytes(to, n_in);
        std::vector<uint8_t> serial(rb * n_rows), parallel(rb * n_rows);
        convert_rows(tensor_type::f32, reinterpret_cast<const uint8_t *>(m.data()), to, serial.data(), n_in, n_rows, one);
        convert_rows(tensor_type::f32, reinterpret_cast<const uint8_t *>(m.data()), to, parallel.data(), n_in, n_rows, two);
        CHECK(serial == parallel);
        // and each row is the row quantizer's output
        std::vector<uint8_t> row(rb);
        if (to == tensor_type::q4_0) quantize_weights_q4_0(&m[n_in * 5], reinterpret_cast<block_q4_0 *>(row.data()), n_in);
        if (to == tensor_type::q4_1) quantize_weights_q4_1(&m[n_in * 5], reinterpret_cast<block_q4_1 *>(row.data()), n_in);
        if (to == tensor_type::q8_0) quantize_weights_q8_0(&m[n_in * 5], reinterpret_cast<block_q8_0 *>(row.data()), n_in);
        if (to == tensor_type::f16) convert_row_f16_ref(&m[n_in * 5], reinterpret_cast<uint16_t *>(row.data()), n_in);
        CHECK(std::equal(row.begin(), row.end(), serial.begin() + 5 * rb));
    }
}

TEST_CASE("weight formats: names parse and print back") {
    for (const char *name : {"native", "f32", "f16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k", "q5_k", "q6_k"}) {
        const auto f = parse_weight_format(name);
        REQUIRE(f);
        CHECK(std::string(weight_format_name(*f)) == name);
    }
    CHECK_FALSE(parse_weight_format("q3_k"));
    CHECK_FALSE(parse_weight_format("Q8_0"));
}

// ---- a tiny model whose feed-forward width (80) is not a multiple of 32 ----

namespace {

std::string write_tiny_ff80_model() {
    constexpr uint64_t E = 64, F = 80, V = 16, HD = 32;
    gguf_writer w;
    w.kv("general.architecture", meta::str("llama"));
    w.kv("llama.block_count", meta::u32(1));
    w.kv("llama.context_length", meta::u32(64));
    w.kv("llama.embedding_length", meta::u32(E));
    w.kv("llama.feed_forward_length", meta::u32(F));
    w.kv("llama.attention.head_count", meta::u32(2));
    w.kv("llama.attention.head_count_kv", meta::u32(1));
    float seed = 0.0f;
    auto add = [&](const std::string &name, std::vector<uint64_t> dims) {
        uint64_t n = 1;
        for (uint64_t d : dims) n *= d;
        std::vector<uint8_t> bytes(n * 4);
        seed += 0.1f;
        for (uint64_t i = 0; i < n; ++i) {
            const float v = 0.05f * std::cos(static_cast<float>(i) * 0.7f + seed);
            std::memcpy(bytes.data() + i * 4, &v, 4);
        }
        w.tensor(name, tensor_type::f32, dims, bytes);
    };
    add("token_embd.weight", {E, V});
    add("output_norm.weight", {E});
    add("blk.0.attn_norm.weight", {E});
    add("blk.0.attn_q.weight", {E, 2 * HD});
    add("blk.0.attn_k.weight", {E, HD});
    add("blk.0.attn_v.weight", {E, HD});
    add("blk.0.attn_output.weight", {2 * HD, E});
    add("blk.0.ffn_norm.weight", {E});
    add("blk.0.ffn_gate.weight", {E, F});
    add("blk.0.ffn_up.weight", {E, F});
    add("blk.0.ffn_down.weight", {F, E});
    char path[] = "/tmp/actorserve-test-quantize-XXXXXX";
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    const gguf_image img = w.build();
    REQUIRE(write(fd, img.bytes.data(), img.bytes.size()) == static_cast<ssize_t>(img.bytes.size()));
    close(fd);
    return path;
}

} // namespace

TEST_CASE("load: a matrix whose rows cannot be split into blocks of 32 is refused by name for block formats") {
    const std::string path = write_tiny_ff80_model();
    for (weight_format f : {weight_format::q8_0, weight_format::q4_0, weight_format::q4_1}) {
        CAPTURE(weight_format_name(f));
        std::string err;
        CHECK(llama_model::load(path, load_options{.weights = f, .n_threads = 1}, err) == nullptr);
        CHECK(err.find("tensor 'blk.0.ffn_down.weight' has rows of 80 elements, not a multiple of 32") != std::string::npos);
        CHECK(err.find(path) == 0);
    }
    for (weight_format f : {weight_format::native, weight_format::f16, weight_format::f32}) {
        CAPTURE(weight_format_name(f));
        std::string err;
        auto m = llama_model::load(path, load_options{.weights = f, .n_threads = 1}, err);
        REQUIRE_MESSAGE(m, err);
        llama_context ctx(*m, context_params{.n_ctx = 8, .n_threads = 1});
        const int32_t toks[] = {1, 2, 3};
        REQUIRE_MESSAGE(ctx.eval(toks, err), err);
        CHECK(std::all_of(ctx.logits().begin(), ctx.logits().end(), [](float v) { return std::isfinite(v); }));
    }
    std::remove(path.c_str());
}

// ---- the real model, every format ----

namespace {

std::vector<const weight_matrix *> matrices(const llama_model &m) {
    std::vector<const weight_matrix *> out{&m.token_embd()};
    if (!m.tied_output()) out.push_back(&m.output());
    for (const llama_layer &l : m.layers())
        for (const weight_matrix *w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) out.push_back(w);
    return out;
}

std::vector<std::vector<int32_t>> fixture_prompts() {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    const std::string path = test_paths::fixtures() + "/generation_smollm2.json";
    REQUIRE_MESSAGE(parser.load(path).get(doc) == simdjson::SUCCESS, "cannot read " << path);
    std::vector<std::vector<int32_t>> out;
    for (simdjson::dom::element p : doc["prompts"].get_array()) {
        std::vector<int32_t> ids;
        for (int64_t v : p["prompt_ids"].get_array()) ids.push_back(static_cast<int32_t>(v));
        out.push_back(std::move(ids));
    }
    return out;
}

std::vector<float> logits_after(const llama_model &m, const std::vector<int32_t> &prompt) {
    llama_context ctx(m, context_params{.n_ctx = 256, .n_threads = 2});
    std::string err;
    REQUIRE_MESSAGE(ctx.eval(prompt, err), err);
    return {ctx.logits().begin(), ctx.logits().end()};
}

int32_t argmax(const std::vector<float> &v) {
    return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// Top-1 minus top-2 logit.
float margin(std::vector<float> v) {
    std::partial_sort(v.begin(), v.begin() + 2, v.end(), std::greater<>());
    return v[0] - v[1];
}

} // namespace

TEST_CASE("load: every weight format gives a working model; f32, f16 and q8_0 pick native's top token") {
    std::string err;
    auto native = llama_model::load(test_paths::model(), err);
    REQUIRE_MESSAGE(native, "cannot load the model (run scripts/setup.sh): " << err);
    CHECK(native->owned_weight_bytes() == 0);
    for (const weight_matrix *w : matrices(*native)) CHECK(w->data == w->tensor->data); // in place

    // Where native's choice is clear (top-1 ahead by more than half a logit; 7 of the 10
    // fixture prompts) a format that keeps the weights' information must agree. f32 holds the
    // Q4_1 values exactly, f16 nearly, q8_0 to within 1/254 of a block's range; the logits still
    // move by a few hundredths, since the activations are then quantized differently.
    constexpr float kClearMargin = 0.5f;
#if defined(__SANITIZE_ADDRESS__)
    constexpr int kCompared = 2; // six times slower there
#else
    constexpr int kCompared = 4; // of the clear prompts, per format
#endif
    const std::vector<std::vector<int32_t>> prompts = fixture_prompts();
    REQUIRE(prompts.size() >= 8);
    std::vector<std::vector<float>> ref;
    int n_clear = 0;
    for (const std::vector<int32_t> &p : prompts) {
        ref.push_back(logits_after(*native, p));
        n_clear += margin(ref.back()) > kClearMargin ? 1 : 0;
    }
    REQUIRE(n_clear >= kCompared);

    struct expect { weight_format f; tensor_type type; bool same_top; };
    for (const expect e : {expect{weight_format::f32, tensor_type::f32, true}, expect{weight_format::f16, tensor_type::f16, true},
                           expect{weight_format::q8_0, tensor_type::q8_0, true}, expect{weight_format::q4_0, tensor_type::q4_0, false},
                           expect{weight_format::q4_1, tensor_type::q4_1, false}}) {
        CAPTURE(weight_format_name(e.f));
        auto m = llama_model::load(test_paths::model(), load_options{.weights = e.f, .n_threads = 2}, err);
        REQUIRE_MESSAGE(m, err);
        CHECK(m->weights() == e.f);
        CHECK(m->tied_output());
        uint64_t held = 0;
        for (const weight_matrix *w : matrices(*m)) {
            CAPTURE(w->tensor->name);
            CHECK(w->type == e.type);
            // a matrix already stored in the target format stays in the mapping
            CHECK((w->data == w->tensor->data) == (w->tensor->type == e.type));
            held += w->row_bytes * static_cast<uint64_t>(w->n_out);
        }
        // norm vectors are F32 in this file and stay mapped; everything else is as held
        CHECK(m->resident_weight_bytes() > held);
        CHECK(m->resident_weight_bytes() < held + (1u << 20));

        // kCompared clear prompts for the formats held to native's choice, two for the others
        int n_run = 0;
        for (size_t i = 0; i < ref.size() && n_run < (e.same_top ? kCompared : 2); ++i) {
            if (e.same_top && margin(ref[i]) <= kClearMargin) continue;
            ++n_run;
            CAPTURE(i);
            const std::vector<float> l = logits_after(*m, prompts[i]);
            CHECK(std::all_of(l.begin(), l.end(), [](float v) { return std::isfinite(v); }));
            if (e.same_top) CHECK(argmax(l) == argmax(ref[i]));
        }
    }
}

TEST_CASE("quantize q5_0, q5_1 and the K-quants: llama.cpp's quantizer's bytes on random rows") {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    const std::string path = test_paths::fixtures() + "/quantizer_reference.json";
    REQUIRE_MESSAGE(parser.load(path).get(doc) == simdjson::SUCCESS, "cannot read " << path);
    auto hex = [](std::string_view h) {
        std::vector<uint8_t> out;
        for (size_t i = 0; i + 1 < h.size(); i += 2) out.push_back(static_cast<uint8_t>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16)));
        return out;
    };
    int n_cases = 0;
    for (simdjson::dom::element c : doc["cases"].get_array()) {
        const std::string type{std::string_view(c["type"])};
        const int64_t n = int64_t(c["n"]);
        const std::vector<uint8_t> fb = hex(c["floats"]), want = hex(c["bytes"]);
        std::vector<float> x(fb.size() / 4);
        std::memcpy(x.data(), fb.data(), fb.size());
        const tensor_type t = type == "Q5_0" ? tensor_type::q5_0 : type == "Q5_1" ? tensor_type::q5_1
                            : type == "Q4_K" ? tensor_type::q4_k : type == "Q5_K" ? tensor_type::q5_k : tensor_type::q6_k;
        const int64_t rows = static_cast<int64_t>(x.size()) / n;
        const size_t rb = row_bytes(t, n);
        REQUIRE(want.size() == rb * static_cast<size_t>(rows));
        CAPTURE(type);
        CAPTURE(std::string(std::string_view(c["tensor"])));
        for (int64_t r = 0; r < rows; ++r) {
            std::vector<uint8_t> got(rb);
            const float *row = x.data() + r * n;
            switch (t) {
            case tensor_type::q5_0: quantize_weights_q5_0(row, reinterpret_cast<block_q5_0 *>(got.data()), n); break;
            case tensor_type::q5_1: quantize_weights_q5_1(row, reinterpret_cast<block_q5_1 *>(got.data()), n); break;
            case tensor_type::q4_k: quantize_weights_q4_k(row, reinterpret_cast<block_q4_k *>(got.data()), n); break;
            case tensor_type::q5_k: quantize_weights_q5_k(row, reinterpret_cast<block_q5_k *>(got.data()), n); break;
            default: quantize_weights_q6_k(row, reinterpret_cast<block_q6_k *>(got.data()), n); break;
            }
            CAPTURE(r);
            CHECK(std::memcmp(got.data(), want.data() + static_cast<size_t>(r) * rb, rb) == 0);
        }
        ++n_cases;
    }
    CHECK(n_cases == 10);
}

TEST_CASE("load: the 5-bit and K-quant formats, with llama.cpp's fallback where rows are not multiples of 256") {
    std::string err;
    const std::vector<std::vector<int32_t>> prompts = fixture_prompts();
    REQUIRE(!prompts.empty());
    struct expect { weight_format f; tensor_type k, fallback; };
    for (const expect e : {expect{weight_format::q5_0, tensor_type::q5_0, tensor_type::q5_0},
                           expect{weight_format::q5_1, tensor_type::q5_1, tensor_type::q5_1},
                           expect{weight_format::q4_k, tensor_type::q4_k, tensor_type::q5_0},
                           expect{weight_format::q5_k, tensor_type::q5_k, tensor_type::q5_1},
                           expect{weight_format::q6_k, tensor_type::q6_k, tensor_type::q8_0}}) {
        CAPTURE(weight_format_name(e.f));
        auto m = llama_model::load(test_paths::model(), load_options{.weights = e.f, .n_threads = 2}, err);
        REQUIRE_MESSAGE(m, err);
        for (const weight_matrix *w : matrices(*m)) {
            CAPTURE(w->tensor->name);
            CHECK(w->type == (w->n_in % 256 == 0 ? e.k : e.fallback)); // SmolLM2: rows of 1536 and 576
        }
        const std::vector<float> l = logits_after(*m, prompts[0]);
        CHECK(std::all_of(l.begin(), l.end(), [](float v) { return std::isfinite(v); }));
    }
}
