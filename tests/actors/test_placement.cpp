// Several devices: the `devices` setting, the placement choice, and real schedulers and
// executors behind a placement actor. Two CPU executors stand in for two GPUs here (the
// placement does not know what a device is), so this runs on any machine: requests are spread
// over both, each sequence gives exactly what one device gives it, cancellation reaches the
// device holding the request, and both pools end empty.
#include "tests/support/model.h"
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <thread>

#include "actors/devices.h"
#include "actors/executor.h"
#include "actors/metrics.h"
#include "actors/placement.h"
#include "actors/protocol.h"
#include "actors/scheduler.h"
#include "engine/tokenizer.h"
#include "gpu/gpu_context.h"

using namespace actorserve;
using namespace std::chrono_literals;
using test_support::default_model;

TEST_CASE("devices: specs resolve, and bad ones are refused by name") {
    std::vector<std::string> notes;
    std::string err, why;
    const int n_gpu = gpu_device_count(why);

    auto cpu = resolve_devices("cpu", notes, err);
    REQUIRE(cpu);
    REQUIRE(cpu->size() == 1);
    CHECK_FALSE(cpu->front().gpu);
    CHECK(cpu->front().name() == "cpu");

    notes.clear();
    auto any = resolve_devices("auto", notes, err);
    REQUIRE(any);
    if (n_gpu == 0) {
        REQUIRE(any->size() == 1);
        CHECK_FALSE(any->front().gpu);
        REQUIRE(notes.size() == 1); // the operator is told why the CPU runs
        CHECK(notes.front().find("running on the CPU") != std::string::npos);
    } else {
        CHECK(static_cast<int>(any->size()) == n_gpu);
        CHECK(any->front().name() == "cuda:0");
    }

    CHECK_FALSE(resolve_devices("gpu", notes, err));
    CHECK(err.find("\"gpu\" is not a device") != std::string::npos);
    CHECK_FALSE(resolve_devices("0,,1", notes, err));
    CHECK(err.find("\"\" is not a device") != std::string::npos);
    CHECK_FALSE(resolve_devices("cuda:0,0", notes, err));
    CHECK(err.find("listed twice") != std::string::npos);
    CHECK_FALSE(resolve_devices(std::to_string(n_gpu), notes, err)); // one past the last
    CHECK(err.find("cuda:" + std::to_string(n_gpu) + " asked for") != std::string::npos);
}

TEST_CASE("placement: the most free KV blocks, then the shorter queue, then the lower index") {
    CHECK(choose_device({{10, 0}, {20, 0}}) == 1);
    CHECK(choose_device({{20, 0}, {10, 0}}) == 0);
    CHECK(choose_device({{10, 3}, {10, 1}, {10, 2}}) == 1);
    CHECK(choose_device({{10, 1}, {10, 1}}) == 0);
    CHECK(choose_device({{-5, 0}, {-2, 9}}) == 1); // estimates may run below zero
}

namespace {

// One device: an executor, its scheduler, and a metrics actor of its own, so the test can see
// what each device did.
struct device_rig {
    executor_actor executor;
    scheduler_actor scheduler;
    metrics_actor metrics;
    device_rig(caf::actor_system &sys, int index, const scheduler_settings &s) {
        context_params cp;
        cp.n_ctx = s.n_ctx;
        cp.n_batch = s.step_tokens;
        cp.n_seq = s.max_seqs;
        cp.n_threads = 1;
        cp.kv_block_size = s.kv_block_size;
        cp.n_kv_blocks = s.kv_blocks;
        cp.chunk_invariant = true;
        metrics = spawn_metrics(sys, std::chrono::milliseconds(5000));
        executor = spawn_executor(sys, default_model().model, std::make_unique<llama_context>(*default_model().model, cp),
                                  cp.n_batch, device_choice{}, metrics);
        scheduler_config sc;
        sc.sched = s;
        sc.device = index;
        const tokenizer *tok = default_model().tok.get();
        scheduler = spawn_scheduler(sys, sc, executor, metrics, [tok](int32_t t) { return tok->is_eog(t); });
    }
    void stop() {
        caf::anon_send_exit(scheduler, caf::exit_reason::user_shutdown);
        caf::anon_send_exit(executor, caf::exit_reason::user_shutdown);
        caf::anon_send_exit(metrics, caf::exit_reason::user_shutdown);
    }
};

scheduler_settings small_settings() {
    scheduler_settings s;
    s.max_seqs = 8;
    s.step_tokens = 128;
    s.n_ctx = 256;
    s.kv_block_size = 32;
    s.kv_blocks = 64;
    return s;
}

gen_request request(int64_t id, const std::string &text, int max_tokens) {
    gen_request r;
    r.id = id;
    r.prompt = default_model().tok->encode(text, false);
    r.sampling.temperature = 0.0f;
    r.max_tokens = max_tokens;
    return r;
}

struct result {
    std::vector<int32_t> tokens;
    std::string finish;
};

std::map<int64_t, result> collect(caf::scoped_actor &self, size_t n) {
    std::map<int64_t, result> out;
    size_t ended = 0;
    bool timed_out = false;
    while (ended < n && !timed_out)
        self->receive(
            [&](gen_event &e) {
                result &r = out[e.id];
                r.tokens.insert(r.tokens.end(), e.tokens.begin(), e.tokens.end());
                if (e.ended()) {
                    r.finish = e.failed ? "failed" : std::string(name(*e.finish));
                    ++ended;
                }
            },
            caf::after(120s) >> [&] { timed_out = true; });
    REQUIRE_MESSAGE(!timed_out, "requests did not end");
    return out;
}

metrics_snapshot snapshot(caf::scoped_actor &self, const metrics_source &metrics) {
    metrics_snapshot snap;
    self->request(metrics, 10s, get_atom::value)
        .receive([&](metrics_snapshot &s) { snap = s; }, [&](caf::error &e) { FAIL(caf::to_string(e)); });
    return snap;
}

const char *kPrompts[] = {"The capital of France is", "One, two, three,", "Water boils at", "The sky is blue because",
                          "A spider has", "Bees make", "Hamlet was written by", "The opposite of cold is"};

} // namespace

TEST_CASE("placement: two devices share the requests, and each answer is the one-device answer") {
    caf::actor_system_config cfg;
    caf::actor_system sys{cfg};
    caf::scoped_actor self{sys};
    const scheduler_settings s = small_settings();

    // Reference: every prompt on one device.
    std::map<int64_t, result> alone;
    {
        device_rig one(sys, 0, s);
        for (int64_t i = 0; i < 8; ++i) self->send(one.scheduler, submit_atom::value, request(i, kPrompts[i], 12));
        alone = collect(self, 8);
        one.stop();
    }

    device_rig d0(sys, 0, s), d1(sys, 1, s);
    placement_actor place = spawn_placement(sys, {d0.scheduler, d1.scheduler}, {s.kv_blocks, s.kv_blocks}, s.kv_block_size);
    self->send(d0.scheduler, placement_atom::value, place);
    self->send(d1.scheduler, placement_atom::value, place);
    std::this_thread::sleep_for(100ms); // their first reports (all blocks free) arrive first

    for (int64_t i = 0; i < 8; ++i) self->send(place, submit_atom::value, request(i, kPrompts[i], 12));
    auto both = collect(self, 8);
    for (int64_t i = 0; i < 8; ++i) {
        INFO("prompt " << i);
        CHECK(both[i].finish == alone[i].finish);
        CHECK(both[i].tokens == alone[i].tokens);
    }
    const metrics_snapshot m0 = snapshot(self, d0.metrics), m1 = snapshot(self, d1.metrics);
    // Eight one-block requests sent at once against two empty pools of 64: the estimate
    // alternates them, unless a step's report lands in between; either way both devices work.
    CHECK(m0.requests_admitted + m1.requests_admitted == 8);
    CHECK(m0.requests_admitted >= 2);
    CHECK(m1.requests_admitted >= 2);

    // A cancel sent to the placement actor ends the request on whichever device holds it.
    self->send(place, submit_atom::value, request(100, "Tell me a very long story about a dragon.", 200));
    self->send(place, submit_atom::value, request(101, "Tell me a very long story about a knight.", 200));
    self->send(place, cancel_atom::value, int64_t{100});
    self->send(place, cancel_atom::value, int64_t{101});
    auto cancelled = collect(self, 2);
    CHECK(cancelled[100].finish == "cancelled");
    CHECK(cancelled[101].finish == "cancelled");

    // Both pools end empty (their last reports follow the ends).
    std::this_thread::sleep_for(100ms);
    CHECK(snapshot(self, d0.metrics).kv_blocks_used == 0);
    CHECK(snapshot(self, d1.metrics).kv_blocks_used == 0);
    // The executors reported their devices.
    REQUIRE(snapshot(self, d0.metrics).devices.size() == 1);
    CHECK(snapshot(self, d0.metrics).devices.front().name == "cpu");
    CHECK(snapshot(self, d0.metrics).devices.front().kv_bytes > 0);

    caf::anon_send_exit(place, caf::exit_reason::user_shutdown);
    d0.stop();
    d1.stop();
}
