// The scheduler's decisions driven step by step on the real model, without actors: batching
// never changes what a greedy sequence produces, prefix blocks are reused, memory pressure
// preempts the youngest and recomputes it, and every path ends with all blocks free. Without a
// model, on tiny settings: each request is counted once by how it ended, and admitted once.
#include "tests/support/model.h"
#include "tests/support/questions.h"
#include "tests/support/sampling.h"
#include <doctest/doctest.h>

#include <map>
#include <memory>

#include "scheduling/scheduler_state.h"
#include "scheduling/step_runner.h"
#include "engine/tokenizer.h"

using namespace actorserve;
using test_support::default_model;
using test_support::greedy;
using test_support::kQuestions;

namespace {

struct harness {
    scheduler_state sched;
    step_runner runner;
    std::map<int64_t, std::vector<int32_t>> out;
    std::map<int64_t, std::string> finish;
    int steps = 0;

    harness(const scheduler_settings &s, int n_ctx_engine = 512)
        : sched(s, [](int32_t t) { return default_model().tok->is_eog(t); }),
          runner(*default_model().model, context_params{n_ctx_engine, s.step_tokens, s.max_seqs, 2, s.kv_block_size, s.kv_blocks,
                                                 /*chunk_invariant=*/true}) {}

    void absorb(const std::vector<seq_event> &evs) {
        for (const seq_event &e : evs) {
            if (e.token) out[e.id].push_back(*e.token);
            if (e.ended()) finish[e.id] = e.failed ? "error" : std::string(name(*e.finish));
        }
    }
    void run_to_end(int max_steps = 1000) {
        while (sched.has_work() && steps < max_steps) {
            step_plan p = sched.plan();
            step_result r = runner.run(p);
            REQUIRE_MESSAGE(r.error.empty(), r.error);
            absorb(sched.complete(r.sampled));
            absorb(sched.drain_ended());
            ++steps;
        }
        REQUIRE(!sched.has_work());
    }
};

scheduler_settings small_settings() {
    scheduler_settings s;
    s.max_seqs = 16;
    s.step_tokens = 128;
    s.n_ctx = 512;
    s.kv_block_size = 32;
    s.kv_blocks = 96;
    return s;
}

std::vector<int32_t> prompt_of(const std::string &user) {
    return default_model().tok->encode("<|im_start|>user\n" + user + "<|im_end|>\n<|im_start|>assistant\n", true);
}

} // namespace

TEST_CASE("scheduler: 16 concurrent greedy requests give token for token what each gives alone") {
    constexpr int kMax = 12;
    std::map<int64_t, std::vector<int32_t>> alone;
    for (int i = 0; i < 16; ++i) {
        harness h(small_settings());
        REQUIRE(!h.sched.submit({i, prompt_of(kQuestions[i]), greedy(), kMax}));
        h.run_to_end();
        alone[i] = h.out[i];
        CHECK(!alone[i].empty());
    }
    harness h(small_settings());
    for (int i = 0; i < 16; ++i) REQUIRE(!h.sched.submit({i, prompt_of(kQuestions[i]), greedy(), kMax}));
    h.run_to_end();
    for (int i = 0; i < 16; ++i) CHECK_MESSAGE(h.out[i] == alone[i], "request " << i);
    CHECK(h.sched.kv().n_free() == h.sched.kv().n_blocks());
}

TEST_CASE("scheduler: a second request with the same system prompt skips its cached prefill") {
    const std::string sys = "<|im_start|>system\nYou are a careful assistant who answers in one short sentence, "
                            "politely, and never invents facts; if unsure, you say so plainly.<|im_end|>\n";
    auto p1 = default_model().tok->encode(sys + "<|im_start|>user\nWhat is snow?<|im_end|>\n<|im_start|>assistant\n", true);
    auto p2 = default_model().tok->encode(sys + "<|im_start|>user\nWhat is ice?<|im_end|>\n<|im_start|>assistant\n", true);
    scheduler_settings s = small_settings();
    s.kv_block_size = 32;
    harness h(s);
    REQUIRE(!h.sched.submit({1, p1, greedy(), 4}));
    h.run_to_end();
    const uint64_t computed_first = h.sched.counts().computed_tokens;
    REQUIRE(!h.sched.submit({2, p2, greedy(), 4}));
    h.run_to_end();
    const uint64_t computed_second = h.sched.counts().computed_tokens - computed_first;
    // the shared full blocks of the system prompt are not computed again
    size_t common = 0;
    while (common < p1.size() && common < p2.size() && p1[common] == p2[common]) ++common;
    REQUIRE(common >= 32);
    CHECK(h.sched.counts().prefix_hit_tokens == common / 32 * 32);
    CHECK(computed_second == p2.size() - common / 32 * 32 + h.out[2].size() - 1 + (h.finish[2] == "stop" ? 1 : 0));
    // and the answer is the one a cold cache gives
    harness cold(s);
    REQUIRE(!cold.sched.submit({2, p2, greedy(), 4}));
    cold.run_to_end();
    CHECK(cold.out[2] == h.out[2]);
    CHECK(h.sched.kv().n_free() == h.sched.kv().n_blocks());
}

TEST_CASE("scheduler: when KV memory runs out the youngest sequence is preempted, recomputed, and unchanged") {
    constexpr int kMax = 60;
    const char *stories[] = {"Tell me a long story about a dragon.", "Tell me a long story about a ship.",
                             "Tell me a long story about a robot.", "Tell me a long story about a forest."};
    scheduler_settings s = small_settings();
    s.kv_block_size = 32;
    s.kv_blocks = 4; // 128 positions for 4 sequences of ~20 prompt + 60 generated tokens
    std::map<int64_t, std::vector<int32_t>> alone;
    for (int i = 0; i < 4; ++i) {
        harness h(s);
        REQUIRE(!h.sched.submit({i, prompt_of(stories[i]), greedy(), kMax}));
        h.run_to_end();
        alone[i] = h.out[i];
        CHECK(alone[i].size() > 20); // long enough to need a second block
    }
    harness h(s);
    for (int i = 0; i < 4; ++i) REQUIRE(!h.sched.submit({i, prompt_of(stories[i]), greedy(), kMax}));
    h.run_to_end();
    CHECK(h.sched.counts().preempted > 0);
    for (int i = 0; i < 4; ++i) CHECK_MESSAGE(h.out[i] == alone[i], "request " << i);
    CHECK(h.sched.kv().n_free() == h.sched.kv().n_blocks());
}

TEST_CASE("scheduler: a full queue answers overloaded and a request that can never fit names its size") {
    scheduler_settings s = small_settings();
    s.max_waiting = 2;
    s.kv_blocks = 4; // 128 positions
    scheduler_state sched(s, [](int32_t) { return false; });
    std::vector<int32_t> p(10, 1);
    REQUIRE(!sched.submit({1, p, greedy(), 8}));
    REQUIRE(!sched.submit({2, p, greedy(), 8}));
    auto r = sched.submit({3, p, greedy(), 8});
    REQUIRE(r);
    CHECK(r->code == errc::overloaded);
    auto big = sched.submit({4, std::vector<int32_t>(100, 1), greedy(), 100});
    REQUIRE(big);
    CHECK(big->code == errc::exceed_context);
    CHECK(big->message == "request needs up to 200 tokens of KV memory (prompt 100 + max_tokens 100), the KV cache holds 128");
    auto empty = sched.submit({5, {}, greedy(), 8});
    REQUIRE(empty);
    CHECK(empty->code == errc::invalid_request);
}

TEST_CASE("scheduler: cancelling frees the sequence and its blocks before the next step") {
    harness h(small_settings());
    REQUIRE(!h.sched.submit({1, prompt_of(kQuestions[0]), greedy(), 50}));
    REQUIRE(!h.sched.submit({2, prompt_of(kQuestions[1]), greedy(), 50}));
    REQUIRE(!h.sched.submit({3, prompt_of(kQuestions[2]), greedy(), 50}));
    for (int i = 0; i < 3; ++i) {
        step_plan p = h.sched.plan();
        h.absorb(h.sched.complete(h.runner.run(p).sampled));
    }
    REQUIRE(h.sched.n_running() == 3);
    const int free_before = h.sched.kv().n_free();
    CHECK(h.sched.cancel(2));
    CHECK(h.sched.n_running() == 2);
    CHECK(h.sched.kv().n_free() > free_before);
    h.absorb(h.sched.drain_ended());
    CHECK(h.finish[2] == "cancelled");
    // cancelled while its step is in flight: ends when the step completes
    step_plan p = h.sched.plan();
    CHECK(p.released == std::vector<int64_t>{2});
    CHECK(h.sched.cancel(3));
    h.absorb(h.sched.complete(h.runner.run(p).sampled));
    CHECK(h.finish[3] == "cancelled");
    CHECK(!h.sched.cancel(99));
    h.run_to_end();
    CHECK((h.finish[1] == "length" || h.finish[1] == "stop"));
    CHECK(h.sched.kv().n_free() == h.sched.kv().n_blocks());
}

namespace {

// Drives a scheduler with no model: every sequence that samples gets `token`. Returns the
// requests each plan admitted for the first time, one list per plan.
std::vector<std::vector<int64_t>> drive(scheduler_state &sched, int32_t token, int max_steps = 100) {
    std::vector<std::vector<int64_t>> admitted;
    for (int i = 0; i < max_steps && sched.has_work(); ++i) {
        step_plan p = sched.plan();
        admitted.push_back(sched.newly_admitted());
        std::vector<std::pair<int64_t, int32_t>> sampled;
        for (const step_seq &q : p.seqs)
            if (q.sample) sampled.emplace_back(q.id, token);
        sched.complete(sampled);
    }
    return admitted;
}

} // namespace

TEST_CASE("scheduler: every request is counted once by how it ended, and its queue ends at first admission") {
    scheduler_settings s;
    s.max_seqs = 2;
    s.step_tokens = 8;
    s.max_waiting = 3;
    s.n_ctx = 8;
    s.kv_block_size = 4;
    s.kv_blocks = 4; // 16 positions
    constexpr int32_t kEog = 99;
    scheduler_state sched(s, [](int32_t t) { return t == kEog; });
    std::map<int64_t, std::string> finish;
    auto absorb = [&](const std::vector<seq_event> &evs) {
        for (const seq_event &e : evs)
            if (e.ended()) finish[e.id] = e.failed ? "error" : std::string(name(*e.finish));
    };
    REQUIRE(!sched.submit({1, {1, 2, 3}, greedy(), 2}));          // ends at max_tokens
    REQUIRE(!sched.submit({2, {1, 2, 3, 4, 5}, greedy(), 10}));   // ends when the context is full
    REQUIRE(!sched.submit({3, {7}, greedy(), 4}));                // ends on an end-of-generation token
    CHECK(sched.submit({4, std::vector<int32_t>(8, 1), greedy(), 1})->code == errc::exceed_context);
    CHECK(sched.submit({5, {}, greedy(), 1})->code == errc::invalid_request);
    CHECK(sched.submit({6, {5}, greedy(), 1})->code == errc::overloaded); // 3 already wait
    CHECK(sched.counts().rejected == 2);
    CHECK(sched.counts().rejected_overloaded == 1);

    // 1 and 2 take both slots and the whole budget (3 + 5 tokens); 3 waits for a slot
    sched.plan();
    CHECK(sched.newly_admitted() == std::vector<int64_t>{1, 2});
    absorb(sched.complete({{1, 10}, {2, 11}}));
    sched.plan();
    CHECK(sched.newly_admitted().empty()); // decoding is not admission
    absorb(sched.complete({{1, 12}, {2, 13}}));
    CHECK(finish[1] == "length");
    sched.plan();
    CHECK(sched.newly_admitted() == std::vector<int64_t>{3});
    absorb(sched.complete({{2, 14}, {3, kEog}}));
    CHECK(finish[2] == "context");
    CHECK(finish[3] == "stop");

    // cancelled while waiting, by the client and for a stop string; a failed step ends in error
    REQUIRE(!sched.submit({7, {1, 2}, greedy(), 4}));
    REQUIRE(!sched.submit({8, {3}, greedy(), 4}));
    REQUIRE(!sched.submit({9, {4}, greedy(), 4}));
    CHECK(sched.cancel(8));
    CHECK(sched.cancel(9, /*stop_string=*/true));
    absorb(sched.drain_ended());
    CHECK(finish[8] == "cancelled");
    CHECK(finish[9] == "stop");
    sched.plan();
    CHECK(sched.newly_admitted() == std::vector<int64_t>{7});
    absorb(sched.abort_in_flight());
    CHECK(finish[7] == "error");
    CHECK(!sched.has_work());

    const scheduler_counts &c = sched.counts();
    CHECK(c.stop == 2);
    CHECK(c.length == 1);
    CHECK(c.context == 1);
    CHECK(c.cancelled == 1);
    CHECK(c.error == 1);
    CHECK(c.finished == c.stop + c.length + c.context + c.cancelled + c.error);
    CHECK(c.admitted == 4); // 1, 2, 3, 7: a request cancelled while waiting was never admitted
    CHECK(c.rejected == 2);
    CHECK(c.rejected_overloaded == 1);
}

TEST_CASE("scheduler: a sequence preempted before its first token is admitted and counted once") {
    scheduler_settings s;
    s.max_seqs = 2;
    s.step_tokens = 2; // prompts go in chunks of 2, so the second is mid-prompt when memory runs out
    s.n_ctx = 12;
    s.kv_block_size = 4;
    s.kv_blocks = 3; // 12 positions
    scheduler_state sched(s, [](int32_t) { return false; });
    REQUIRE(!sched.submit({1, {1, 2, 3}, greedy(), 4}));                 // 1 block, a 2nd to decode
    REQUIRE(!sched.submit({2, {20, 21, 22, 23, 24, 25, 26, 27}, greedy(), 1})); // 2 blocks
    const auto admitted = drive(sched, 50);
    std::vector<int64_t> all;
    for (const auto &a : admitted) all.insert(all.end(), a.begin(), a.end());
    CHECK(all == std::vector<int64_t>{1, 2});
    CHECK(sched.counts().preempted == 1);
    CHECK(sched.counts().admitted == 2);
    CHECK(sched.counts().prompt_tokens == 3 + 8);
    CHECK(sched.counts().length == 2);
    CHECK(sched.kv().n_free() == sched.kv().n_blocks());
}

namespace {

gen_request classed(int64_t id, std::vector<int32_t> prompt, int max_tokens, priority_class c) {
    gen_request r{id, std::move(prompt), greedy(), max_tokens};
    r.priority = c;
    return r;
}

// Every plan's first admissions, joined, without the empty plans.
std::vector<int64_t> joined(const std::vector<std::vector<int64_t>> &admitted) {
    std::vector<int64_t> all;
    for (const auto &a : admitted) all.insert(all.end(), a.begin(), a.end());
    return all;
}

} // namespace

TEST_CASE("scheduler: a higher class is admitted first and takes a lower class's slot; equal classes wait their turn") {
    scheduler_settings s;
    s.max_seqs = 1;
    s.step_tokens = 8;
    s.n_ctx = 16;
    s.kv_block_size = 4;
    s.kv_blocks = 8;
    scheduler_state sched(s, [](int32_t) { return false; });
    using enum priority_class;
    REQUIRE(!sched.submit(classed(1, {1, 2, 3}, 3, batch)));
    sched.plan(); // 1 runs alone
    CHECK(sched.newly_admitted() == std::vector<int64_t>{1});
    sched.complete({{1, 5}});
    REQUIRE(!sched.submit(classed(2, {4, 5}, 3, batch)));
    REQUIRE(!sched.submit(classed(3, {6, 7}, 3, standard)));
    REQUIRE(!sched.submit(classed(4, {8, 9}, 3, interactive)));
    REQUIRE(!sched.submit(classed(5, {10, 11}, 3, standard)));
    // 4 (interactive) takes the one slot from 1 (batch); the standard ones 3 and 5 then wait
    // for 4 to end rather than preempting it, and each other; 1 resumes before 2 (it came first).
    const auto order = joined(drive(sched, 5));
    CHECK(order == std::vector<int64_t>{4, 3, 5, 2});
    CHECK(sched.counts().preempted_for_priority == 1);
    CHECK(sched.counts().preempted == 1);
    CHECK(sched.counts().length == 5); // each ran to max_tokens: preemption lost nothing
    CHECK(sched.counts().admitted_by_class[0] == 1);
    CHECK(sched.counts().admitted_by_class[1] == 2);
    CHECK(sched.counts().admitted_by_class[2] == 2);
    CHECK(sched.kv().n_free() == sched.kv().n_blocks());
}

TEST_CASE("scheduler: under memory pressure an interactive request preempts batch sequences, youngest first") {
    scheduler_settings s;
    s.max_seqs = 4;
    s.step_tokens = 32;
    s.n_ctx = 16;
    s.kv_block_size = 4;
    s.kv_blocks = 6; // 24 positions: three batch sequences of 8 fill the pool
    scheduler_state sched(s, [](int32_t) { return false; });
    using enum priority_class;
    for (int64_t id = 1; id <= 3; ++id)
        REQUIRE(!sched.submit(classed(id, std::vector<int32_t>(7, static_cast<int32_t>(id * 10)), 4, batch)));
    sched.plan();
    CHECK(sched.newly_admitted() == std::vector<int64_t>{1, 2, 3});
    sched.complete({{1, 5}, {2, 5}, {3, 5}}); // each holds 2 blocks: the pool is full
    // a slot is free but not the blocks: the interactive one preempts the youngest batch (3)
    REQUIRE(!sched.submit(classed(9, std::vector<int32_t>(7, 90), 2, interactive)));
    step_plan p = sched.plan();
    CHECK(sched.newly_admitted() == std::vector<int64_t>{9});
    CHECK(sched.counts().preempted_for_priority >= 1);
    bool three_runs = false;
    for (const step_seq &q : p.seqs) three_runs |= q.id == 3;
    CHECK_FALSE(three_runs);
    std::vector<std::pair<int64_t, int32_t>> sampled;
    for (const step_seq &q : p.seqs)
        if (q.sample) sampled.emplace_back(q.id, 5);
    sched.complete(sampled);
    drive(sched, 5);
    CHECK(!sched.has_work());
    CHECK(sched.counts().finished == 4);
    CHECK(sched.counts().error == 0);
    CHECK(sched.kv().n_free() == sched.kv().n_blocks());
}
