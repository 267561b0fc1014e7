// Perplexity against llama.cpp's on the same tokens: tests/fixtures/perplexity_smollm2.json,
// made by scripts/ref_perplexity.py (the command is in the fixture).
#include "tests/support/paths.h"
#include <doctest/doctest.h>
#include <simdjson.h>

#include <cmath>
#include <numeric>

#include "engine/forward.h"
#include "engine/perplexity.h"

using namespace actorserve;

namespace {

// Our logits are llama.cpp's (see test_forward_golden.cpp), so the figures agree far more
// closely than this; 1% is the promise to an operator comparing the two tools.
constexpr double kTolPpl = 0.01;

// Chunks scored here: each is 512 tokens through the model, about 4 s on 2 cores in Release
// and six times that under the address sanitizer.
#if defined(__SANITIZE_ADDRESS__)
constexpr int kChunks = 1;
#else
constexpr int kChunks = 2;
#endif

struct fixture {
    int n_ctx = 0;
    bool add_bos = false;
    std::vector<double> running_ppl;
    std::vector<int32_t> tokens;
};

fixture load_fixture() {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    const std::string path = test_paths::fixtures() + "/perplexity_smollm2.json";
    REQUIRE_MESSAGE(parser.load(path).get(doc) == simdjson::SUCCESS, "cannot read " << path);
    fixture f;
    f.n_ctx = static_cast<int>(int64_t(doc["n_ctx"]));
    f.add_bos = bool(doc["add_bos"]);
    for (double v : doc["running_ppl"].get_array()) f.running_ppl.push_back(v);
    for (int64_t v : doc["tokens"].get_array()) f.tokens.push_back(static_cast<int32_t>(v));
    return f;
}

} // namespace

TEST_CASE("log_softmax: the log of a softmax probability, shifted by the maximum") {
    const float uniform[] = {2.0f, 2.0f, 2.0f, 2.0f};
    CHECK(log_softmax(uniform, 1) == doctest::Approx(std::log(0.25)).epsilon(1e-12));
    // p = e^3 / (e^3 + e^1 + 1)
    const float l[] = {3.0f, 1.0f, 0.0f};
    CHECK(log_softmax(l, 0) == doctest::Approx(3.0 - std::log(std::exp(3.0) + std::exp(1.0) + 1.0)).epsilon(1e-7));
    CHECK(log_softmax(l, 2) == doctest::Approx(-std::log(std::exp(3.0) + std::exp(1.0) + 1.0)).epsilon(1e-7));
}

TEST_CASE("perplexity: first chunks of GPL-3 within 1% of llama.cpp's figure") {
    std::string err;
    auto model = llama_model::load(test_paths::model(), err);
    REQUIRE_MESSAGE(model, "cannot load the model (run scripts/setup.sh): " << err);
    const fixture f = load_fixture();
    REQUIRE(f.running_ppl.size() >= static_cast<size_t>(kChunks));
    REQUIRE(f.tokens.size() >= static_cast<size_t>(kChunks * f.n_ctx));
    CHECK_FALSE(f.add_bos); // SmolLM2: no BOS, so no first-token replacement either

    llama_context ctx(*model, context_params{.n_ctx = f.n_ctx, .n_batch = f.n_ctx, .n_threads = 2});
    // Exactly kChunks chunks of tokens: llama.cpp's rule of at least two chunks holds, and
    // --chunks limits the rest.
    const std::span<const int32_t> tokens(f.tokens.data(), static_cast<size_t>(std::max(2, kChunks) * f.n_ctx));
    perplexity_result r;
    int calls = 0;
    REQUIRE_MESSAGE(perplexity(ctx, tokens, perplexity_params{.n_ctx = f.n_ctx, .n_chunks = kChunks}, r, err,
                               [&](int k, double) { CHECK(k == calls++); }),
                    err);
    CHECK(calls == kChunks);
    CHECK(r.n_chunks == kChunks);
    CHECK(r.n_scored == kChunks * (f.n_ctx - 1 - f.n_ctx / 2));
    REQUIRE(r.running_ppl.size() == static_cast<size_t>(kChunks));
    for (int k = 0; k < kChunks; ++k) {
        CAPTURE(k);
        CHECK(std::abs(r.running_ppl[k] / f.running_ppl[k] - 1.0) < kTolPpl);
    }
    CHECK(r.ppl == doctest::Approx(r.running_ppl.back()).epsilon(1e-12));
    CHECK(r.ppl_err > 0.0);
    CHECK(r.ppl_err < r.ppl);
    MESSAGE("ours " << r.ppl << ", llama.cpp " << f.running_ppl[kChunks - 1]);
}

TEST_CASE("perplexity: too few tokens, or a chunk larger than the context, is refused with the counts") {
    std::string err;
    auto model = llama_model::load(test_paths::model(), err);
    REQUIRE_MESSAGE(model, err);
    llama_context ctx(*model, context_params{.n_ctx = 64, .n_threads = 1});
    std::vector<int32_t> tokens(100, 42);
    perplexity_result r;
    CHECK_FALSE(perplexity(ctx, tokens, perplexity_params{.n_ctx = 64}, r, err));
    CHECK(err == "the text has 100 tokens; perplexity with a context of 64 needs at least 128");
    CHECK_FALSE(perplexity(ctx, tokens, perplexity_params{.n_ctx = 128}, r, err));
    CHECK(err == "chunks of 128 tokens do not fit a context of 64");
}
