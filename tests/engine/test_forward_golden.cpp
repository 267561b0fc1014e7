// The forward pass against llama.cpp: logits after each reference prompt and greedy
// continuations, from tests/fixtures/generation_smollm2.json (scripts/gen_reference.py).
#include "tests/support/model.h"
#include "tests/support/paths.h"
#include <doctest/doctest.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/forward.h"
#include "engine/quants.h"

using namespace actorserve;

namespace {

// The fixture stores logits rounded to 5 decimals. Our logits are bit-identical to
// llama.cpp's AVX2 build (see the note in forward.cpp), so the only difference is that
// rounding; 1e-4 leaves room for nothing else.
constexpr double kTolLogit = 1e-4;
constexpr int kMinGreedyTokens = 32; // the agreement promised; in practice all 64 agree

struct golden_prompt {
    std::string name;
    std::vector<int32_t> prompt_ids, greedy_ids;
    std::vector<std::pair<int32_t, double>> top5;
};

std::vector<golden_prompt> load_fixture() {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    const std::string path = test_paths::fixtures() + "/generation_smollm2.json";
    REQUIRE_MESSAGE(parser.load(path).get(doc) == simdjson::SUCCESS, "cannot read " << path);
    std::vector<golden_prompt> out;
    for (simdjson::dom::element p : doc["prompts"].get_array()) {
        golden_prompt g;
        g.name = std::string(std::string_view(p["name"]));
        for (int64_t v : p["prompt_ids"].get_array()) g.prompt_ids.push_back(static_cast<int32_t>(v));
        for (int64_t v : p["greedy_ids"].get_array()) g.greedy_ids.push_back(static_cast<int32_t>(v));
        for (simdjson::dom::array pair : p["top5"].get_array())
            g.top5.emplace_back(static_cast<int32_t>(int64_t(pair.at(0))), double(pair.at(1)));
        out.push_back(std::move(g));
    }
    return out;
}

int32_t argmax(std::span<const float> v) {
    return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

const llama_model &model() { return *test_support::default_model().model; }

} // namespace

TEST_CASE("golden: logits after each prompt and greedy continuations match llama.cpp") {
    // The fixture was made with llama.cpp's AVX2 kernels; our bit-for-bit agreement holds for
    // our AVX2 kernels and for the AVX-512 ones, which give the AVX2 kernels' bits.
    MESSAGE("kernels: " << std::string(simd_level()));
    REQUIRE_MESSAGE(std::string(simd_level()) != "ref", "reference kernels are not llama.cpp's order");
    const std::vector<golden_prompt> prompts = load_fixture();
    REQUIRE(prompts.size() >= 8);
    for (const golden_prompt &g : prompts) {
        CAPTURE(g.name);
        context_params cp;
        cp.n_ctx = 2048;
        cp.n_threads = 2;
        llama_context ctx(model(), cp);
        std::string err;
        REQUIRE_MESSAGE(ctx.eval(g.prompt_ids, err), err);

        // top-5 after the prompt: same ids in the same order, logits within kTolLogit
        std::vector<int32_t> order(ctx.logits().size());
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + 5, order.end(),
                          [&](int32_t a, int32_t b) { return ctx.logits()[a] > ctx.logits()[b]; });
        for (size_t k = 0; k < g.top5.size(); ++k) {
            CAPTURE(k);
            CHECK(order[k] == g.top5[k].first);
            CHECK(std::fabs(ctx.logits()[g.top5[k].first] - g.top5[k].second) <= kTolLogit);
        }

        // greedy: our own choices, fed back, must reproduce llama.cpp's token for token
        int agree = 0;
        for (size_t s = 0; s < g.greedy_ids.size(); ++s) {
            const int32_t t = argmax(ctx.logits());
            if (t != g.greedy_ids[s]) break;
            ++agree;
            REQUIRE(ctx.eval(std::span<const int32_t>(&t, 1), err));
        }
        INFO("greedy tokens identical to llama.cpp: " << agree << " of " << g.greedy_ids.size());
        CHECK(agree >= kMinGreedyTokens);
        CHECK(agree == static_cast<int>(g.greedy_ids.size()));
    }
}

TEST_CASE("forward: a prompt fed token by token picks the same next token as the prompt in one chunk") {
    // Chunks of one token use vec_dot order; a one-chunk prompt uses GEMM order. The two
    // contexts must agree on the greedy token and closely on the logits, not bit for bit
    // (differences of summation order grow to a few tenths in this model; see docs/engine.md).
    const std::vector<int32_t> prompt = {504, 3575, 282, 4649, 314}; // "The capital of France is"
    context_params cp;
    cp.n_threads = 2;
    llama_context whole(model(), cp), stepwise(model(), cp);
    std::string err;
    REQUIRE(whole.eval(prompt, err));
    for (int32_t t : prompt) REQUIRE(stepwise.eval(std::span<const int32_t>(&t, 1), err));
    CHECK(whole.n_past() == stepwise.n_past());
    CHECK(argmax(whole.logits()) == argmax(stepwise.logits()));
    float maxdiff = 0.0f;
    for (size_t i = 0; i < whole.logits().size(); ++i)
        maxdiff = std::max(maxdiff, std::fabs(whole.logits()[i] - stepwise.logits()[i]));
    CHECK(maxdiff < 1.0f);
}

TEST_CASE("forward: truncate rewinds the sequence so a re-run reproduces the logits") {
    context_params cp;
    cp.n_threads = 2;
    llama_context ctx(model(), cp);
    std::string err;
    const std::vector<int32_t> a = {504, 3575, 282}, b = {4649, 314};
    REQUIRE(ctx.eval(a, err));
    REQUIRE(ctx.eval(b, err));
    const std::vector<float> first(ctx.logits().begin(), ctx.logits().end());
    ctx.truncate(3);
    REQUIRE(ctx.eval(b, err));
    CHECK(std::equal(first.begin(), first.end(), ctx.logits().begin()));
}

TEST_CASE("forward: bad input is refused with a message and changes nothing") {
    context_params cp;
    cp.n_ctx = 8;
    cp.n_threads = 1;
    llama_context ctx(model(), cp);
    std::string err;
    CHECK_FALSE(ctx.eval(std::vector<int32_t>{}, err));
    CHECK(err.find("empty") != std::string::npos);
    CHECK_FALSE(ctx.eval(std::vector<int32_t>{1, 49152}, err));
    CHECK(err.find("token id 49152 at index 1 is outside the vocabulary [0, 49152)") != std::string::npos);
    CHECK_FALSE(ctx.eval(std::vector<int32_t>{-1}, err));
    CHECK_FALSE(ctx.eval(std::vector<int32_t>(9, 1), err));
    CHECK(err.find("context overflow: 0 tokens so far + 9 new > context size 8") != std::string::npos);
    CHECK(ctx.n_past() == 0);
    REQUIRE(ctx.eval(std::vector<int32_t>(8, 1), err));
    CHECK(ctx.n_past() == 8);
    CHECK_FALSE(ctx.eval(std::vector<int32_t>{1}, err));
    CHECK(ctx.n_past() == 8);
}
