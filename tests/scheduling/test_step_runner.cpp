// The scheduler and the step runner together on tiny configurations (blocks of 4 positions, a
// handful of slots and blocks) over the scripted decoder (tests/support/scripted_decoder.h):
// every output is compared with the one the scripted model gives by definition, so a position
// the scheduler claimed was in the blocks but is not (a prefix, a chunk, a recomputed
// sequence) shows up as a wrong token or a failed step. The real model's part (its bits do not
// depend on batching) is in test_scheduler_state.
#include "tests/support/sampling.h"
#include "tests/support/scripted_decoder.h"
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>

#include "scheduling/scheduler_state.h"
#include "scheduling/step_runner.h"

using namespace actorserve;
using test_support::greedy;
using test_support::scripted_decoder;

namespace {

struct tiny_harness {
    scheduler_state sched;
    scripted_decoder *dec; // owned by runner
    step_runner runner;
    std::map<int64_t, std::vector<int32_t>> out;
    std::map<int64_t, std::string> finish;
    int steps = 0;

    explicit tiny_harness(const scheduler_settings &s) : tiny_harness(s, std::make_unique<scripted_decoder>(s.max_seqs, s.kv_blocks, s.kv_block_size)) {}

    void absorb(const std::vector<seq_event> &evs) {
        for (const seq_event &e : evs) {
            if (e.token) out[e.id].push_back(*e.token);
            if (e.ended()) finish[e.id] = e.failed ? "error" : std::string(name(*e.finish));
        }
    }
    // One step: plan, run, complete. Returns the runner's error ("" on success).
    std::string step() {
        step_plan p = sched.plan();
        step_result r = runner.run(p);
        if (!r.error.empty()) {
            absorb(sched.abort_in_flight());
            return r.error;
        }
        absorb(sched.complete(r.sampled));
        absorb(sched.drain_ended());
        ++steps;
        return {};
    }
    void run_to_end(int max_steps = 2000) {
        while (sched.has_work() && steps < max_steps) {
            const std::string err = step();
            REQUIRE_MESSAGE(err.empty(), err);
        }
        REQUIRE(!sched.has_work());
    }

private:
    tiny_harness(const scheduler_settings &s, std::unique_ptr<scripted_decoder> d)
        : sched(s, [](int32_t t) { return t == 0; }), dec(d.get()), runner(std::move(d), s.step_tokens) {}
};

scheduler_settings tiny_settings() {
    scheduler_settings s;
    s.max_seqs = 3;
    s.step_tokens = 8; // prompts longer than 8 - (decoding sequences) come in chunks
    s.n_ctx = 64;
    s.kv_block_size = 4;
    s.kv_blocks = 48;
    return s;
}

// What the scripted model answers, greedy, by definition.
struct answer {
    std::vector<int32_t> tokens;
    std::string finish;
};
answer expected(std::vector<int32_t> seq, int max_tokens) {
    answer a;
    for (int i = 0; i < max_tokens; ++i) {
        const int32_t t = scripted_decoder::next_token(seq);
        if (t == 0) return a.finish = "stop", a; // is_eog
        a.tokens.push_back(t);
        seq.push_back(t);
    }
    a.finish = "length";
    return a;
}

std::vector<int32_t> random_prompt(std::mt19937 &rng, int n) {
    std::uniform_int_distribution<int32_t> tok(1, scripted_decoder::kVocab - 1);
    std::vector<int32_t> p(static_cast<size_t>(n));
    for (auto &t : p) t = tok(rng);
    return p;
}

} // namespace

TEST_CASE("step runner: many requests through few slots and chunked prompts give the scripted answers") {
    std::mt19937 rng(7);
    std::map<int64_t, std::vector<int32_t>> prompts;
    tiny_harness h(tiny_settings());
    for (int i = 0; i < 10; ++i) {
        prompts[i] = random_prompt(rng, 3 + 2 * i); // 3 .. 21 tokens: some span several chunks
        REQUIRE(!h.sched.submit({i, prompts[i], greedy(), 15}));
    }
    h.run_to_end();
    for (auto &[id, p] : prompts) {
        const answer a = expected(p, 15);
        CHECK_MESSAGE(h.out[id] == a.tokens, "request " << id);
        CHECK_MESSAGE(h.finish[id] == a.finish, "request " << id);
    }
    CHECK(h.sched.kv().n_free() == h.sched.kv().n_blocks());
    CHECK(h.runner.n_tracked() <= 3);
    // every token was computed once: nothing shared, nothing preempted
    CHECK(h.sched.counts().preempted == 0);
    CHECK(static_cast<uint64_t>(h.dec->tokens_computed()) == h.sched.counts().computed_tokens);
}

TEST_CASE("step runner: a shared prefix is read from the cached blocks, never recomputed, and answers as cold") {
    std::mt19937 rng(11);
    const std::vector<int32_t> sys = random_prompt(rng, 10); // two full blocks of 4, and 2 more
    auto with = [&](std::vector<int32_t> tail) {
        std::vector<int32_t> p = sys;
        p.insert(p.end(), tail.begin(), tail.end());
        return p;
    };
    const auto p1 = with(random_prompt(rng, 5)), p2 = with(random_prompt(rng, 6));
    tiny_harness h(tiny_settings());
    REQUIRE(!h.sched.submit({1, p1, greedy(), 6}));
    h.run_to_end();
    const int64_t first = h.dec->tokens_computed();
    REQUIRE(!h.sched.submit({2, p2, greedy(), 6}));
    h.run_to_end();
    CHECK(h.sched.counts().prefix_hit_tokens == 8);
    const answer a2 = expected(p2, 6);
    CHECK(h.out[2] == a2.tokens);
    // prompt minus the 8 cached positions, then one per generated token but the last
    const auto n_gen = static_cast<int64_t>(a2.tokens.size()) + (a2.finish == "stop" ? 1 : 0);
    CHECK(h.dec->tokens_computed() - first == static_cast<int64_t>(p2.size()) - 8 + n_gen - 1);
    CHECK(h.out[1] == expected(p1, 6).tokens);
    CHECK(h.sched.kv().n_free() == h.sched.kv().n_blocks());
}

TEST_CASE("step runner: requests sharing a prefix at the same time all read it correctly") {
    std::mt19937 rng(13);
    const std::vector<int32_t> sys = random_prompt(rng, 12);
    tiny_harness h(tiny_settings());
    std::map<int64_t, std::vector<int32_t>> prompts;
    for (int i = 0; i < 6; ++i) {
        prompts[i] = sys;
        const auto tail = random_prompt(rng, 1 + i);
        prompts[i].insert(prompts[i].end(), tail.begin(), tail.end());
        REQUIRE(!h.sched.submit({i, prompts[i], greedy(), 10}));
    }
    h.run_to_end();
    for (auto &[id, p] : prompts) CHECK_MESSAGE(h.out[id] == expected(p, 10).tokens, "request " << id);
    CHECK(h.sched.counts().prefix_hit_tokens > 0);
    CHECK(h.sched.kv().n_free() == h.sched.kv().n_blocks());
}

TEST_CASE("step runner: identical prompts at once (n choices) compute their full blocks once, then decode side by side") {
    std::mt19937 rng(23);
    const std::vector<int32_t> prompt = random_prompt(rng, 14); // 3 full blocks of 4, and 2
    scheduler_settings s = tiny_settings();
    s.step_tokens = 48; // room for all three prompts in one step: only the deferral keeps two out
    tiny_harness h(s);
    for (int i = 0; i < 3; ++i) {
        sampling_params p = test_support::greedy();
        p.temperature = 1.0f;
        p.top_k = 0;
        p.seed = 100 + static_cast<uint64_t>(i);
        REQUIRE(!h.sched.submit({i, prompt, p, 8}));
    }
    // The first step computes the first choice's prompt chunk alone: the others wait for its blocks.
    step_plan first = h.sched.plan();
    REQUIRE(first.seqs.size() == 1);
    CHECK(first.seqs[0].id == 0);
    step_result r = h.runner.run(first);
    REQUIRE(r.error.empty());
    h.absorb(h.sched.complete(r.sampled));
    h.run_to_end();
    // Choices 1 and 2 found 12 positions cached each; each sampled its own answer.
    CHECK(h.sched.counts().prefix_hit_tokens == 24);
    for (int i = 0; i < 3; ++i) CHECK_MESSAGE(!h.out[i].empty(), "choice " << i);
    CHECK(h.sched.kv().n_free() == h.sched.kv().n_blocks());
}

TEST_CASE("step runner: different prompts that share only a system prompt are not held back") {
    std::mt19937 rng(29);
    const std::vector<int32_t> sys = random_prompt(rng, 8);
    scheduler_settings s = tiny_settings();
    s.step_tokens = 48;
    tiny_harness h(s);
    for (int i = 0; i < 2; ++i) {
        std::vector<int32_t> p = sys;
        const auto tail = random_prompt(rng, 5);
        p.insert(p.end(), tail.begin(), tail.end());
        REQUIRE(!h.sched.submit({i, p, greedy(), 4}));
    }
    step_plan first = h.sched.plan();
    CHECK(first.seqs.size() == 2); // both admitted in the first step
    step_result r = h.runner.run(first);
    REQUIRE(r.error.empty());
    h.absorb(h.sched.complete(r.sampled));
    h.run_to_end();
}

TEST_CASE("step runner: under memory pressure the youngest is preempted and recomputed to the same answer") {
    std::mt19937 rng(17);
    scheduler_settings s = tiny_settings();
    s.kv_blocks = 12; // 48 positions for 3 sequences of up to 8 + 30
    tiny_harness h(s);
    std::map<int64_t, std::vector<int32_t>> prompts;
    for (int i = 0; i < 5; ++i) {
        prompts[i] = random_prompt(rng, 6 + i);
        REQUIRE(!h.sched.submit({i, prompts[i], greedy(), 30}));
    }
    h.run_to_end();
    CHECK(h.sched.counts().preempted > 0);
    for (auto &[id, p] : prompts) {
        const answer a = expected(p, 30);
        CHECK_MESSAGE(h.out[id] == a.tokens, "request " << id);
        CHECK_MESSAGE(h.finish[id] == a.finish, "request " << id);
    }
    // recomputation is extra work the decoder did
    CHECK(static_cast<uint64_t>(h.dec->tokens_computed()) == h.sched.counts().computed_tokens);
    CHECK(h.sched.kv().n_free() == h.sched.kv().n_blocks());
}

TEST_CASE("step runner: a failed step ends its sequences with an error, frees their blocks, and the rest go on") {
    std::mt19937 rng(19);
    tiny_harness h(tiny_settings());
    const auto p1 = random_prompt(rng, 5), p2 = random_prompt(rng, 6);
    REQUIRE(!h.sched.submit({1, p1, greedy(), 20}));
    REQUIRE(!h.sched.submit({2, p2, greedy(), 20}));
    REQUIRE(h.step().empty());
    REQUIRE(h.step().empty());
    h.dec->fail_next("device lost");
    CHECK(h.step() == "device lost");
    CHECK(h.finish[1] == "error");
    CHECK(h.finish[2] == "error");
    CHECK(!h.sched.has_work());
    CHECK(h.sched.kv().n_free() == h.sched.kv().n_blocks());
    CHECK(h.sched.counts().error == 2);
    // the runner forgets them with the next plan; a new request runs as if nothing happened
    REQUIRE(!h.sched.submit({3, p1, greedy(), 20}));
    REQUIRE(h.step().empty());
    CHECK(h.runner.n_tracked() == 1);
    h.run_to_end();
    CHECK(h.out[3] == expected(p1, 20).tokens);
}

TEST_CASE("step runner: cancelling mid-stream frees the slot for a waiting request that then reads only its own tokens") {
    std::mt19937 rng(23);
    scheduler_settings s = tiny_settings();
    s.max_seqs = 2;
    tiny_harness h(s);
    std::map<int64_t, std::vector<int32_t>> prompts;
    for (int i = 0; i < 4; ++i) {
        prompts[i] = random_prompt(rng, 4 + i);
        REQUIRE(!h.sched.submit({i, prompts[i], greedy(), 25}));
    }
    for (int i = 0; i < 4; ++i) REQUIRE(h.step().empty());
    CHECK(h.sched.cancel(0));
    h.run_to_end();
    CHECK(h.finish[0] == "cancelled");
    const auto a0 = expected(prompts[0], 25).tokens;
    CHECK(std::equal(h.out[0].begin(), h.out[0].end(), a0.begin())); // a prefix of its answer
    for (int64_t id = 1; id < 4; ++id) CHECK_MESSAGE(h.out[id] == expected(prompts[id], 25).tokens, "request " << id);
    CHECK(h.sched.kv().n_free() == h.sched.kv().n_blocks());
}

TEST_CASE("scripted decoder: refuses what the engine refuses and what the engine would compute wrong") {
    scripted_decoder d(2, 4, 4);
    std::string err;
    const std::vector<int32_t> t0{0, 1}, t1{1};
    d.set_blocks(0, t0, 0);
    CHECK(!d.decode(std::vector<batch_token>{{5, 0, 1, true}}, err)); // skips position 0
    CHECK(err.find("expected 0") != std::string::npos);
    CHECK(d.decode(std::vector<batch_token>{{5, 0, 0, false}, {6, 0, 1, true}}, err));
    CHECK(d.logits(0)[scripted_decoder::next_token(std::vector<int32_t>{5, 6})] == scripted_decoder::kPeak);
    // a slot that claims positions nobody wrote
    d.set_blocks(1, t1, 3);
    CHECK(!d.decode(std::vector<batch_token>{{7, 1, 3, true}}, err));
    CHECK(err.find("never written") != std::string::npos);
    // a slot that writes over the block slot 0 reads, in the same batch
    d.set_blocks(1, t0, 0);
    CHECK(!d.decode(std::vector<batch_token>{{6, 0, 2, true}, {9, 1, 0, true}}, err));
    CHECK(err.find("still reads") != std::string::npos);
    // sharing it with the same tokens is fine
    CHECK(d.decode(std::vector<batch_token>{{6, 0, 2, true}, {5, 1, 0, true}}, err));
    CHECK(d.tokens_computed() == 4);
}
