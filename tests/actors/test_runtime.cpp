// The runtime through its public API, with real CAF actors: sessions stream text, concurrent
// requests get exactly what they get alone, cancellation and floods end every request
// explicitly, and the KV pool is empty once every session is done.
#include "tests/support/paths.h"
#include "tests/support/questions.h"
#include "tests/support/sampling.h"
#include <doctest/doctest.h>

#include <algorithm>
#include <map>

#include "include/actorserve/runtime.h"

using namespace actorserve;
using namespace std::chrono_literals;
using test_support::greedy;
using test_support::kQuestions;

namespace {

runtime_config small_config() {
    runtime_config c;
    c.model_path = test_paths::model();
    c.n_threads = 2;
    c.n_ctx = 512;
    c.max_seqs = 16;
    c.step_tokens = 256;
    c.kv_capacity_mib = 64;
    return c;
}

struct outcome {
    std::string text;           // the deltas joined
    std::optional<chat_done> done;
    std::optional<chat_error> error;
};

// Receives events for the given request ids until each has ended (or 120 s pass).
std::map<int64_t, outcome> collect(caf::scoped_actor &self, size_t n) {
    std::map<int64_t, outcome> out;
    size_t ended = 0;
    bool timed_out = false;
    while (ended < n && !timed_out) {
        self->receive(
            [&](chat_delta &d) { out[d.id].text += d.text; },
            [&](chat_done &d) { out[d.id].done = d; ++ended; },
            [&](chat_error &e) { out[e.id].error = e; ++ended; },
            caf::after(120s) >> [&] { timed_out = true; });
    }
    REQUIRE_MESSAGE(!timed_out, "requests did not end");
    return out;
}

metrics_snapshot metrics_of(caf::scoped_actor &self, runtime &rt) {
    metrics_snapshot snap;
    self->request(rt.metrics(), 10s, get_atom::value).receive(
        [&](metrics_snapshot &s) { snap = s; }, [&](caf::error &e) { FAIL("metrics: " << caf::to_string(e)); });
    return snap;
}

} // namespace

TEST_CASE("runtime: 16 concurrent sessions stream what each streams alone") {
    caf::actor_system_config cfg;
    runtime::tune(cfg);
    caf::actor_system sys{cfg};
    std::string err;
    auto rt = runtime::start(sys, small_config(), err);
    REQUIRE_MESSAGE(rt, err);
    caf::scoped_actor self{sys};

    std::map<int64_t, std::string> alone;
    for (int i = 0; i < 16; ++i) {
        actorserve::chat_session s = rt->open_session();
        self->send(s, chat_request{i, {{"user", kQuestions[i]}}, greedy(), 16, {}});
        auto r = collect(self, 1);
        REQUIRE_MESSAGE(r[i].done, "request " << i << ": " << (r[i].error ? r[i].error->message : ""));
        CHECK(r[i].done->text == r[i].text);
        CHECK(r[i].done->usage.completion_tokens > 0);
        alone[i] = r[i].text;
        self->send_exit(s, caf::exit_reason::user_shutdown);
    }

    std::vector<actorserve::chat_session> sessions;
    for (int i = 0; i < 16; ++i) sessions.push_back(rt->open_session());
    for (int i = 0; i < 16; ++i) self->send(sessions[i], chat_request{i, {{"user", kQuestions[i]}}, greedy(), 16, {}});
    auto together = collect(self, 16);
    for (int i = 0; i < 16; ++i) {
        REQUIRE_MESSAGE(together[i].done, "request " << i);
        CHECK_MESSAGE(together[i].text == alone[i], "request " << i);
    }
    const metrics_snapshot m = metrics_of(self, *rt);
    CHECK(m.batch_size.quantile(1.0) >= 8); // they really ran together
    CHECK(m.requests_finished == 32);
    for (auto &s : sessions) self->send_exit(s, caf::exit_reason::user_shutdown);
}

TEST_CASE("runtime: a session's second turn reuses the first turn's KV blocks") {
    caf::actor_system_config cfg;
    runtime::tune(cfg);
    caf::actor_system sys{cfg};
    std::string err;
    auto rt = runtime::start(sys, small_config(), err);
    REQUIRE_MESSAGE(rt, err);
    caf::scoped_actor self{sys};
    actorserve::chat_session s = rt->open_session();
    self->send(s, chat_request{1, {{"system", "You are a helpful assistant who answers briefly and kindly, in plain words."},
                                   {"user", "What is the capital of France?"}}, greedy(), 24, {}});
    auto first = collect(self, 1);
    REQUIRE(first[1].done);
    self->send(s, chat_request{2, {{"user", "And of Spain?"}}, greedy(), 8, {}});
    auto second = collect(self, 1);
    REQUIRE(second[2].done);
    const chat_usage &u = second[2].done->usage;
    CHECK(u.prompt_tokens > first[1].done->usage.prompt_tokens);
    CHECK(u.cached_tokens >= 32);
    CHECK(u.cached_tokens % 32 == 0);
    self->send_exit(s, caf::exit_reason::user_shutdown);
}

TEST_CASE("runtime: cancelling a request ends it with 'cancelled' and frees its KV blocks") {
    caf::actor_system_config cfg;
    runtime::tune(cfg);
    caf::actor_system sys{cfg};
    std::string err;
    auto rt = runtime::start(sys, small_config(), err);
    REQUIRE_MESSAGE(rt, err);
    caf::scoped_actor self{sys};
    actorserve::chat_session s = rt->open_session();
    self->send(s, chat_request{7, {{"user", "Tell me a long story about a dragon."}}, greedy(), 400, {}});
    bool cancelled = false;
    std::optional<chat_done> done;
    while (!done) {
        self->receive(
            [&](chat_delta &) {
                if (!cancelled) self->send(s, cancel_atom::value, int64_t{7});
                cancelled = true;
            },
            [&](chat_done &d) { done = d; },
            [&](chat_error &e) { FAIL(e.message); },
            caf::after(120s) >> [&] { FAIL("no answer"); });
    }
    CHECK(done->finish_reason == finish_reason::cancelled);
    CHECK(done->usage.completion_tokens < 400);
    // busy and invalid requests are refused by name
    self->send(s, chat_request{8, {{"robot", "hi"}}, greedy(), 4, {}});
    auto bad = collect(self, 1);
    REQUIRE(bad[8].error);
    CHECK(bad[8].error->code == errc::invalid_request);
    CHECK(bad[8].error->message == "messages[0].role must be system, user or assistant, got 'robot'");
    // once nothing runs, every block is free (cached prefixes count as free)
    metrics_snapshot m;
    for (int i = 0; i < 50; ++i) {
        m = metrics_of(self, *rt);
        if (m.running == 0) break;
        std::this_thread::sleep_for(20ms);
    }
    CHECK(m.running == 0);
    CHECK(m.kv_blocks_used == 0);
    self->send_exit(s, caf::exit_reason::user_shutdown);
}

TEST_CASE("runtime: a flood of many times the capacity ends every request, done or overloaded") {
    caf::actor_system_config cfg;
    runtime::tune(cfg);
    caf::actor_system sys{cfg};
    std::string err;
    runtime_config c = small_config();
    c.max_seqs = 4;
    c.max_waiting = 4;
    auto rt = runtime::start(sys, c, err);
    REQUIRE_MESSAGE(rt, err);
    caf::scoped_actor self{sys};
    constexpr int kFlood = 64;
    std::vector<actorserve::chat_session> sessions;
    for (int i = 0; i < kFlood; ++i) sessions.push_back(rt->open_session());
    for (int i = 0; i < kFlood; ++i)
        self->send(sessions[i], chat_request{i, {{"user", kQuestions[i % 16]}}, greedy(), 4, {}});
    auto r = collect(self, kFlood);
    int done = 0, overloaded = 0;
    for (auto &[id, o] : r) {
        if (o.done) {
            ++done;
            CHECK(o.done->finish_reason != finish_reason::cancelled);
        } else {
            REQUIRE(o.error);
            CHECK(o.error->code == errc::overloaded);
            CHECK(o.error->retry_after_ms > 0);
            ++overloaded;
        }
    }
    CHECK(done + overloaded == kFlood);
    CHECK(done >= c.max_waiting); // what was accepted still finished
    CHECK(overloaded > 0);   // and the rest was told, not queued without bound
    const metrics_snapshot m = metrics_of(self, *rt);
    CHECK(m.requests_rejected_overloaded == static_cast<uint64_t>(overloaded));
    for (auto &s : sessions) self->send_exit(s, caf::exit_reason::user_shutdown);
}

TEST_CASE("runtime: ending a session mid-answer frees its sequence and KV blocks") {
    caf::actor_system_config cfg;
    runtime::tune(cfg);
    caf::actor_system sys{cfg};
    std::string err;
    auto rt = runtime::start(sys, small_config(), err);
    REQUIRE_MESSAGE(rt, err);
    caf::scoped_actor self{sys};
    actorserve::chat_session s = rt->open_session();
    self->send(s, chat_request{1, {{"user", "Tell me a long story about a dragon."}}, greedy(), 400, {}});
    self->receive([](chat_delta &) {}, caf::after(120s) >> [] { FAIL("no answer"); });
    self->send_exit(s, caf::exit_reason::user_shutdown); // the session ends, its answer unfinished
    metrics_snapshot m;
    for (int i = 0; i < 100; ++i) {
        m = metrics_of(self, *rt);
        if (m.running == 0 && m.kv_blocks_used == 0) break;
        std::this_thread::sleep_for(20ms);
    }
    CHECK(m.running == 0);
    CHECK(m.kv_blocks_used == 0);
}

TEST_CASE("runtime: the watchdog's heartbeat is 0 when idle and the running step's age during a prompt") {
    caf::actor_system_config cfg;
    runtime::tune(cfg);
    caf::actor_system sys{cfg};
    std::string err;
    auto rt = runtime::start(sys, small_config(), err);
    REQUIRE_MESSAGE(rt, err);
    auto idle = rt->longest_step(2s);
    REQUIRE(idle);
    CHECK(idle->count() == 0);

    // A long prompt's prefill steps (256 tokens each) run for tens of milliseconds: the
    // schedulers keep answering meanwhile, and some answer names a step in flight.
    caf::scoped_actor self{sys};
    actorserve::chat_session s = rt->open_session();
    std::string prompt;
    for (int i = 0; i < 40; ++i) prompt += "The quick brown fox jumps over the lazy dog. ";
    self->send(s, chat_request{1, {{"user", prompt}}, greedy(), 4, {}});
    std::chrono::milliseconds longest{0};
    int answers = 0;
    bool ended = false;
    while (!ended) {
        auto step = rt->longest_step(2s);
        REQUIRE_MESSAGE(step, "a scheduler did not answer the heartbeat while busy");
        ++answers;
        longest = std::max(longest, *step);
        self->receive([&](chat_delta &) {}, [&](chat_done &) { ended = true; },
                      [&](chat_error &e) { FAIL(e.message); }, caf::after(1ms) >> [] {});
    }
    MESSAGE(answers << " heartbeats during the request, the longest step seen " << longest.count() << " ms");
    CHECK(longest.count() > 0);
    CHECK(longest < 60s);
    self->send_exit(s, caf::exit_reason::user_shutdown);
}
