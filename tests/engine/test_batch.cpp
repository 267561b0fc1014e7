// Batched forward: sixteen sequences run together give each sequence exactly the logits it
// gets alone, for the prompt and for every decode step after it.
#include "tests/support/paths.h"
#include <doctest/doctest.h>
#include <simdjson.h>

#include <algorithm>
#include <cstring>

#include "engine/forward.h"

using namespace actorserve;

namespace {

constexpr int kSeqs = 16, kSteps = 8;

std::vector<std::vector<int32_t>> fixture_prompts() {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    const std::string path = test_paths::fixtures() + "/generation_smollm2.json";
    REQUIRE_MESSAGE(parser.load(path).get(doc) == simdjson::SUCCESS, "cannot read " << path);
    std::vector<std::vector<int32_t>> out;
    for (simdjson::dom::element p : doc["prompts"].get_array()) {
        out.emplace_back();
        for (int64_t v : p["prompt_ids"].get_array()) out.back().push_back(static_cast<int32_t>(v));
    }
    return out;
}

int32_t argmax(const float *l, int n) { return static_cast<int32_t>(std::max_element(l, l + n) - l); }

} // namespace

TEST_CASE("batch: 16 sequences decoded together match each sequence run alone, bit for bit") {
    std::string err;
    auto model = llama_model::load(test_paths::model(), err);
    REQUIRE_MESSAGE(model, "cannot load the model (run scripts/setup.sh): " << err);
    const int V = model->hparams().n_vocab;
    const std::vector<std::vector<int32_t>> base = fixture_prompts();
    REQUIRE(base.size() >= 8);
    // 16 prompts: the fixture's, then a few again with one token dropped (other lengths)
    std::vector<std::vector<int32_t>> prompts;
    for (int s = 0; s < kSeqs; ++s) {
        std::vector<int32_t> p = base[static_cast<size_t>(s) % base.size()];
        if (s >= static_cast<int>(base.size())) p.pop_back();
        prompts.push_back(std::move(p));
    }

    // alone: logits after the prompt and after each greedy step, per sequence
    std::vector<std::vector<std::vector<float>>> alone(kSeqs);
    for (int s = 0; s < kSeqs; ++s) {
        context_params cp;
        cp.n_ctx = 256;
        cp.n_threads = 2;
        llama_context ctx(*model, cp);
        REQUIRE(ctx.eval(prompts[s], err));
        for (int step = 0; step <= kSteps; ++step) {
            alone[s].emplace_back(ctx.logits().begin(), ctx.logits().end());
            const int32_t t = argmax(ctx.logits().data(), V);
            if (step < kSteps) REQUIRE(ctx.eval(std::span<const int32_t>(&t, 1), err));
        }
    }

    // together: one batch holding all 16 prompts, then 16 tokens per step
    context_params cp;
    cp.n_ctx = 256;
    cp.n_seq = kSeqs;
    cp.n_batch = 1024;
    cp.n_threads = 2;
    llama_context ctx(*model, cp);
    std::vector<batch_token> batch;
    for (int s = 0; s < kSeqs; ++s)
        for (size_t i = 0; i < prompts[s].size(); ++i)
            batch.push_back({prompts[s][i], s, static_cast<int32_t>(i), i + 1 == prompts[s].size()});
    REQUIRE_MESSAGE(ctx.decode(batch, err), err);
    for (int step = 0; step <= kSteps; ++step) {
        REQUIRE(ctx.n_outputs() == kSeqs);
        batch.clear();
        for (int s = 0; s < kSeqs; ++s) {
            CAPTURE(s);
            CAPTURE(step);
            CHECK(std::memcmp(ctx.logits(static_cast<size_t>(s)), alone[s][step].data(), sizeof(float) * V) == 0);
            const int32_t t = argmax(ctx.logits(static_cast<size_t>(s)), V);
            batch.push_back({t, s, ctx.n_past(s), true});
        }
        if (step < kSteps) REQUIRE(ctx.decode(batch, err));
    }
}

TEST_CASE("batch: positions must continue each sequence; a bad batch changes nothing") {
    std::string err;
    auto model = llama_model::load(test_paths::model(), err);
    REQUIRE(model);
    context_params cp;
    cp.n_ctx = 16;
    cp.n_seq = 2;
    cp.n_batch = 8;
    cp.n_threads = 1;
    llama_context ctx(*model, cp);
    const std::vector<batch_token> gap = {{1, 0, 0, false}, {2, 0, 2, true}};
    CHECK_FALSE(ctx.decode(gap, err));
    CHECK(err == "token at index 1 has position 2 but sequence 0 continues at 1");
    const std::vector<batch_token> bad_seq = {{1, 2, 0, true}};
    CHECK_FALSE(ctx.decode(bad_seq, err));
    CHECK(err == "sequence 2 at index 0 is outside [0, 2)");
    CHECK_FALSE(ctx.decode(std::vector<batch_token>(9, batch_token{}), err));
    CHECK(err == "batch of 9 tokens exceeds n_batch 8");
    CHECK(ctx.n_past(0) == 0);
    CHECK(ctx.n_past(1) == 0);
    const std::vector<batch_token> ok = {{1, 1, 0, false}, {2, 0, 0, true}, {3, 1, 1, true}};
    REQUIRE(ctx.decode(ok, err));
    CHECK(ctx.n_past(0) == 1);
    CHECK(ctx.n_past(1) == 2);
    CHECK(ctx.n_outputs() == 2);
}
