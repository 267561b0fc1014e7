// Paged KV cache: in pool mode, sequences whose block tables are scattered across the pool,
// share prefix blocks, or reuse blocks another sequence wrote give the logits of slot mode bit
// for bit; a sequence whose table is too short fails cleanly.
#include "tests/support/model.h"
#include "tests/support/paths.h"
#include <doctest/doctest.h>
#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>

#include "engine/forward.h"

using namespace actorserve;

namespace {

constexpr int kSteps = 3; // greedy decode steps after each prompt

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
    REQUIRE(out.size() >= 9);
    return out;
}

// Two fixture prompts back to back: long enough to span several blocks.
std::vector<int32_t> concat(const std::vector<int32_t> &a, const std::vector<int32_t> &b) {
    std::vector<int32_t> out = a;
    out.insert(out.end(), b.begin(), b.end());
    return out;
}

const llama_model &model() { return *test_support::default_model().model; }

int n_vocab() { return model().hparams().n_vocab; }

int32_t argmax(const float *l) { return static_cast<int32_t>(std::max_element(l, l + n_vocab()) - l); }

bool same_logits(const float *a, const std::vector<float> &b) {
    return std::memcmp(a, b.data(), sizeof(float) * b.size()) == 0;
}

// Slot mode, one sequence: the prompt in one chunk, then kSteps greedy tokens one at a time.
struct reference {
    std::vector<std::vector<float>> logits; // (kSteps + 1, n_vocab): after the prompt, after each step
    std::vector<int32_t> tokens;            // (kSteps,) the greedy tokens fed
};

reference compute_reference(const std::vector<int32_t> &prompt) {
    context_params cp;
    cp.n_ctx = 256;
    cp.n_threads = 2;
    llama_context ctx(model(), cp);
    std::string err;
    REQUIRE_MESSAGE(ctx.eval(prompt, err), err);
    reference r;
    for (int step = 0; step <= kSteps; ++step) {
        r.logits.emplace_back(ctx.logits().begin(), ctx.logits().end());
        if (step == kSteps) break;
        r.tokens.push_back(argmax(ctx.logits().data()));
        REQUIRE(ctx.eval(std::span<const int32_t>(&r.tokens.back(), 1), err));
    }
    return r;
}

// Each prompt's reference is computed once for all the tests that use it.
const reference &run_slot_mode(const std::vector<int32_t> &prompt) {
    static std::map<std::vector<int32_t>, reference> done;
    auto it = done.find(prompt);
    if (it == done.end()) it = done.emplace(prompt, compute_reference(prompt)).first;
    return it->second;
}

std::vector<batch_token> prompt_batch(std::span<const int32_t> tokens, int seq, int pos0) {
    std::vector<batch_token> b;
    for (size_t i = 0; i < tokens.size(); ++i)
        b.push_back({tokens[i], seq, pos0 + static_cast<int32_t>(i), i + 1 == tokens.size()});
    return b;
}

context_params pool_params(int n_blocks, int n_seq, int block_size = 32) {
    context_params cp;
    cp.n_ctx = 256;
    cp.n_seq = n_seq;
    cp.n_threads = 2;
    cp.kv_block_size = block_size;
    cp.n_kv_blocks = n_blocks;
    return cp;
}

} // namespace

TEST_CASE("paged kv: block size is a multiple of 32 and a block's bytes follow from it") {
    const llama_hparams &hp = model().hparams();
    CHECK(llama_context::kv_bytes_per_block(hp, 32) == static_cast<size_t>(hp.n_layer) * 2 * 32 * hp.n_kv() * 2);
    CHECK(llama_context::kv_bytes_per_block(hp, 40) == llama_context::kv_bytes_per_block(hp, 64));
    context_params cp;
    cp.n_ctx = 100;
    cp.n_seq = 3;
    cp.kv_block_size = 40;
    cp.n_threads = 1;
    llama_context slots(model(), cp);
    CHECK(slots.kv_block_size() == 64);
    CHECK(slots.n_kv_blocks() == 3 * 2); // slot mode: ceil(100 / 64) blocks per sequence
    llama_context pool(model(), pool_params(/*n_blocks=*/5, /*n_seq=*/2));
    CHECK(pool.kv_block_size() == 32);
    CHECK(pool.n_kv_blocks() == 5);
}

TEST_CASE("paged kv: scattered, out-of-order block tables give slot mode's logits, bit for bit") {
    const auto base = fixture_prompts();
    const std::vector<int32_t> p0 = base[0], p1 = base[6]; // 37 and 64 tokens
    const reference &r0 = run_slot_mode(p0), &r1 = run_slot_mode(p1);
    for (int block_size : {32, 64}) {
        CAPTURE(block_size);
        llama_context ctx(model(), pool_params(/*n_blocks=*/12, /*n_seq=*/2, block_size));
        const std::vector<int32_t> t0 = block_size == 32 ? std::vector<int32_t>{3, 10} : std::vector<int32_t>{3};
        const std::vector<int32_t> t1 =
            block_size == 32 ? std::vector<int32_t>{9, 2, 7} : std::vector<int32_t>{9, 2};
        ctx.set_blocks(0, t0, 0);
        ctx.set_blocks(1, t1, 0);
        std::vector<batch_token> batch = prompt_batch(p0, 0, 0), b1 = prompt_batch(p1, 1, 0);
        batch.insert(batch.end(), b1.begin(), b1.end());
        std::string err;
        REQUIRE_MESSAGE(ctx.decode(batch, err), err);
        for (int step = 0; step <= kSteps; ++step) {
            CAPTURE(step);
            REQUIRE(ctx.n_outputs() == 2);
            CHECK(same_logits(ctx.logits(0), r0.logits[step]));
            CHECK(same_logits(ctx.logits(1), r1.logits[step]));
            if (step == kSteps) break;
            batch = {{r0.tokens[step], 0, ctx.n_past(0), true}, {r1.tokens[step], 1, ctx.n_past(1), true}};
            REQUIRE_MESSAGE(ctx.decode(batch, err), err);
        }
    }
}

TEST_CASE("paged kv: a sequence given another's first two blocks computes only the rest, same logits") {
    const auto base = fixture_prompts();
    const std::vector<int32_t> prompt = concat(base[6], base[8]); // 64 + 7 tokens
    REQUIRE(prompt.size() >= 2 * 32 + 2); // the rest is a chunk of several tokens, as A's was
    const reference &ref = run_slot_mode(prompt);
    llama_context ctx(model(), pool_params(/*n_blocks=*/8, /*n_seq=*/2));
    std::string err;

    // A computes the whole prompt in blocks 6, 1, 4, 3
    const std::vector<int32_t> ta = {6, 1, 4, 3};
    ctx.set_blocks(0, ta, 0);
    REQUIRE_MESSAGE(ctx.decode(prompt_batch(prompt, 0, 0), err), err);
    const std::vector<float> a_logits(ctx.logits(0), ctx.logits(0) + n_vocab());
    CHECK(same_logits(ctx.logits(0), ref.logits[0]));

    // B reuses A's blocks 6 and 1 (positions 0..63) and computes positions 64.. in its own
    const std::vector<int32_t> tb = {6, 1, 0, 5};
    ctx.set_blocks(1, tb, 2 * 32);
    CHECK(ctx.n_past(1) == 64);
    REQUIRE_MESSAGE(ctx.decode(prompt_batch(std::span(prompt).subspan(64), 1, 64), err), err);
    CHECK(same_logits(ctx.logits(0), a_logits));

    // both continue together; neither disturbed the other's KV
    for (int step = 0; step < kSteps; ++step) {
        CAPTURE(step);
        const int32_t t = ref.tokens[static_cast<size_t>(step)];
        const std::vector<batch_token> batch = {{t, 0, ctx.n_past(0), true}, {t, 1, ctx.n_past(1), true}};
        REQUIRE_MESSAGE(ctx.decode(batch, err), err);
        CHECK(same_logits(ctx.logits(0), ref.logits[step + 1]));
        CHECK(same_logits(ctx.logits(1), ref.logits[step + 1]));
    }
}

TEST_CASE("paged kv: blocks that held another sequence's KV give a new sequence clean logits") {
    const auto base = fixture_prompts();
    const std::vector<int32_t> garbage = base[4]; // 60 tokens over blocks 2, 4
    const std::vector<int32_t> prompt = base[0];  // 37 tokens, then kSteps
    const reference &ref = run_slot_mode(prompt);
    llama_context ctx(model(), pool_params(/*n_blocks=*/6, /*n_seq=*/2));
    std::string err;
    const std::vector<int32_t> tg = {2, 4};
    ctx.set_blocks(1, tg, 0);
    REQUIRE_MESSAGE(ctx.decode(prompt_batch(garbage, 1, 0), err), err);
    ctx.clear(1);
    CHECK(ctx.n_past(1) == 0);

    // slot 0 (eval's sequence) reuses them: block 2 held positions 0..31 and now holds 32..63,
    // so past the new sequence's end lie the old one's values (cleared when 32 is written)
    const std::vector<int32_t> t0 = {4, 2};
    ctx.set_blocks(0, t0, 0);
    REQUIRE_MESSAGE(ctx.eval(prompt, err), err);
    for (int step = 0; step <= kSteps; ++step) {
        CAPTURE(step);
        CHECK(same_logits(ctx.logits().data(), ref.logits[step]));
        if (step == kSteps) break;
        REQUIRE(ctx.eval(std::span<const int32_t>(&ref.tokens[static_cast<size_t>(step)], 1), err));
    }
}

TEST_CASE("paged kv: decoding past a table's blocks fails, names the problem and changes nothing") {
    const auto base = fixture_prompts();
    const std::vector<int32_t> prompt = base[0]; // 37 tokens: needs two blocks of 32
    const reference &ref = run_slot_mode(prompt);
    llama_context ctx(model(), pool_params(/*n_blocks=*/4, /*n_seq=*/2));
    std::string err;

    // an empty slot holds nothing
    CHECK_FALSE(ctx.eval(prompt, err));
    CHECK(err == "KV blocks exhausted: sequence 0 has 0 tokens + 37 new but its 0 blocks of 32 hold 0 positions");

    const std::vector<int32_t> one = {3};
    ctx.set_blocks(0, one, 0);
    ctx.set_blocks(1, one, 0); // slot 1 is only decoded in failing batches: never written
    std::vector<batch_token> batch = prompt_batch(std::span(prompt).subspan(0, 2), 1, 0);
    const std::vector<batch_token> b0 = prompt_batch(prompt, 0, 0);
    batch.insert(batch.end(), b0.begin(), b0.end());
    CHECK_FALSE(ctx.decode(batch, err));
    CHECK(err == "KV blocks exhausted: sequence 0 would reach position 32 but its 1 blocks of 32 hold 32 positions");
    CHECK(ctx.n_past(0) == 0);
    CHECK(ctx.n_past(1) == 0);

    // extended, the same batch of slot 0 runs and matches slot mode
    const std::vector<int32_t> two = {3, 1};
    ctx.set_blocks(0, two, 0);
    REQUIRE_MESSAGE(ctx.decode(b0, err), err);
    CHECK(same_logits(ctx.logits(0), ref.logits[0]));
    for (int step = 0; step < kSteps; ++step) {
        const std::vector<batch_token> one_token = {{ref.tokens[static_cast<size_t>(step)], 0, ctx.n_past(0), true}};
        REQUIRE_MESSAGE(ctx.decode(one_token, err), err);
        CHECK(same_logits(ctx.logits(0), ref.logits[step + 1]));
    }

    // n_ctx still bounds a sequence whose table reaches further
    context_params cp = pool_params(/*n_blocks=*/4, /*n_seq=*/1);
    cp.n_ctx = 40;
    llama_context small(model(), cp);
    small.set_blocks(0, two, 0);
    REQUIRE(small.eval(prompt, err));
    const std::vector<int32_t> four = {1, 2, 3, 4};
    CHECK_FALSE(small.eval(four, err));
    CHECK(err == "context overflow: 37 tokens so far + 4 new > context size 40");
    CHECK(small.n_past() == 37);
}
