#include "actors/scheduler.h"

#include <algorithm>
#include <unordered_map>

#include "actors/protocol.h"

namespace actorserve {

namespace {

using clock_type = std::chrono::steady_clock;

double ms_between(clock_type::time_point a, clock_type::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

// note: every state struct declares its default constructor. Under C++20, CAF 0.17.6 would
// otherwise aggregate-initialise the state from the actor pointer, silently setting its first
// member.
struct scheduler_st {
    scheduler_st() = default;
    struct client {
        gen_sink sink;
        clock_type::time_point submitted, last_token;
        bool got_first = false;
    };
    std::unique_ptr<scheduler_state> core;
    scheduler_config cfg;
    executor_actor executor;
    metrics_actor metrics;
    placement_actor placement; // with several devices, the actor placing requests on them
    std::unordered_map<int64_t, client> clients;
    // Submitters monitored, with how many of their requests are open: one monitor per peer,
    // dropped with its last request, so a long conversation does not pile them up.
    std::unordered_map<caf::actor_addr, int> watched;
    bool tick_pending = false;
    clock_type::time_point step_start;
    metrics_sample sample; // accumulated between steps
    uint64_t mailbox_overloaded = 0; // submits refused for a full mailbox (core counts the rest)
};

using self_ptr = scheduler_actor::stateful_pointer<scheduler_st>;

void watch(self_ptr self, const gen_sink &sink) {
    if (self->state.watched[sink.address()]++ == 0) self->monitor(sink);
}

void unwatch(self_ptr self, const gen_sink &sink) {
    auto &w = self->state.watched;
    auto it = w.find(sink.address());
    if (it == w.end() || --it->second > 0) return;
    w.erase(it);
    self->demonitor(sink.address());
}

void reject(self_ptr self, const gen_sink &sink, int64_t id, errc code, std::string message) {
    gen_event e;
    e.id = id;
    e.failed = true;
    e.code = code;
    e.error = std::move(message);
    if (code == errc::overloaded) e.retry_after_ms = self->state.cfg.retry_after_ms;
    self->send(sink, std::move(e));
}

// Sends each sequence's events to its submitter, and notes latencies for metrics.
void deliver(self_ptr self, const std::vector<seq_event> &events, const std::string &error = {},
             std::vector<std::pair<int64_t, token_logprobs>> *logprobs = nullptr) {
    auto &st = self->state;
    const auto now = clock_type::now();
    for (const seq_event &e : events) {
        auto it = st.clients.find(e.id);
        if (it == st.clients.end()) continue;
        auto &c = it->second;
        gen_event g;
        g.id = e.id;
        if (e.token) {
            g.tokens.push_back(*e.token);
            if (logprobs) {
                auto lp = std::find_if(logprobs->begin(), logprobs->end(), [&](const auto &x) { return x.first == e.id; });
                if (lp != logprobs->end()) g.logprobs.push_back(std::move(lp->second));
            }
            if (!c.got_first) st.sample.ttft_ms.push_back(ms_between(c.submitted, now));
            else st.sample.itl_ms.push_back(ms_between(c.last_token, now));
            c.got_first = true;
            c.last_token = now;
            ++st.sample.generated;
        }
        if (e.ended()) {
            g.finish = e.finish;
            g.n_prompt = e.n_prompt;
            g.n_cached = e.n_cached;
            g.n_generated = e.n_generated;
            if (e.failed) {
                g.failed = true;
                g.code = errc::internal;
                g.error = error.empty() ? "the step failed" : error;
            }
        }
        self->send(c.sink, std::move(g));
        if (e.ended()) {
            st.sample.e2e_ms.push_back(ms_between(c.submitted, now));
            unwatch(self, c.sink);
            st.clients.erase(it);
        }
    }
}

void report(self_ptr self) {
    auto &st = self->state;
    metrics_sample &m = st.sample;
    m.queue_depth = st.core->n_waiting();
    m.running = st.core->n_running();
    m.kv_total = st.core->kv().n_blocks();
    m.kv_used = m.kv_total - st.core->kv().n_free();
    m.kv_cached = st.core->kv().n_cached_blocks();
    m.counts = st.core->counts();
    m.counts.rejected_overloaded += st.mailbox_overloaded;
    m.device = st.cfg.device;
    if (st.placement)
        self->send(st.placement, kv_free_atom::value, st.cfg.device, st.core->kv().n_free(), m.queue_depth);
    self->send(st.metrics, std::move(m));
    m = metrics_sample{};
}

// Reports now what changed outside a step (a refusal, a cancellation, a departed client), unless
// a step is in flight or about to start: its report will carry it. Without this, an idle
// runtime's metrics would stay stale until the next request ran.
// note: the sample holds no step fields here (batch_seqs is set only while a step is in flight).
void report_if_idle(self_ptr self) {
    auto &st = self->state;
    if (!st.core->in_flight() && !st.tick_pending) report(self);
}

void kick(self_ptr self);

void run_step(self_ptr self) {
    auto &st = self->state;
    step_plan plan = st.core->plan();
    if (plan.seqs.empty()) {
        if (!plan.released.empty()) self->send(st.executor, release_atom::value, std::move(plan.released));
        return;
    }
    st.step_start = clock_type::now();
    st.sample.batch_seqs = static_cast<int>(plan.seqs.size());
    for (int64_t id : st.core->newly_admitted()) {
        auto it = st.clients.find(id);
        if (it != st.clients.end()) st.sample.queue_ms.push_back(ms_between(it->second.submitted, st.step_start));
    }
    self->request(st.executor, caf::infinite, step_atom::value, std::move(plan))
        .then(
            [self](step_result &r) {
                auto &s = self->state;
                s.sample.step_ms = ms_between(s.step_start, clock_type::now());
                if (r.error.empty()) deliver(self, s.core->complete(r.sampled), {}, &r.logprobs);
                else deliver(self, s.core->abort_in_flight(), "engine: " + r.error);
                deliver(self, s.core->drain_ended());
                report(self);
                kick(self);
            },
            [self](caf::error &err) {
                auto &s = self->state;
                deliver(self, s.core->abort_in_flight(), "executor: " + self->system().render(err));
                deliver(self, s.core->drain_ended());
                report(self);
                kick(self);
            });
}

void kick(self_ptr self) {
    auto &st = self->state;
    if (st.core->in_flight() || st.tick_pending || !st.core->has_work()) return;
    const bool idle = st.core->n_running() == 0;
    if (idle && st.core->n_waiting() < st.cfg.sched.max_seqs && st.cfg.batch_wait.count() > 0) {
        st.tick_pending = true; // let a batch form; the runtime was idle, so nobody waits on us
        self->delayed_send(self, st.cfg.batch_wait, tick_atom::value);
        return;
    }
    run_step(self);
}

void cancel(self_ptr self, int64_t id, bool stop_string) {
    auto &s = self->state;
    if (!s.core->cancel(id, stop_string)) return;
    deliver(self, s.core->drain_ended());
    kick(self);
    report_if_idle(self);
}

scheduler_actor::behavior_type scheduler_impl(self_ptr self, scheduler_config cfg, executor_actor executor,
                                              metrics_actor metrics, std::function<bool(int32_t)> is_eog) {
    auto &st = self->state;
    st.core = std::make_unique<scheduler_state>(cfg.sched, std::move(is_eog));
    st.cfg = cfg;
    st.executor = std::move(executor);
    st.metrics = std::move(metrics);
    self->set_down_handler([self](caf::down_msg &dm) {
        auto &s = self->state;
        std::vector<int64_t> gone;
        for (const auto &[id, c] : s.clients)
            if (c.sink.address() == dm.source) gone.push_back(id);
        for (int64_t id : gone) {
            s.core->cancel(id);
            s.clients.erase(id); // nobody to tell
        }
        s.watched.erase(dm.source);
        deliver(self, s.core->drain_ended()); // anyone else's ends, should there be any
        kick(self);                           // the freed blocks may admit a waiting request
        report_if_idle(self);
    });
    return {
        [self](submit_atom, gen_request &r) {
            auto &s = self->state;
            // Whoever submits hears the gen_events (the protocol table): sessions, and the tests.
            auto sink = caf::actor_cast<gen_sink>(self->current_sender());
            if (!sink) return; // an anonymous submitter could never hear back
            const size_t queued = self->mailbox().size();
            if (queued > s.cfg.mailbox_limit) {
                ++s.mailbox_overloaded;
                reject(self, sink, r.id, errc::overloaded,
                       "the scheduler's mailbox holds " + std::to_string(queued) + " messages (limit " +
                           std::to_string(s.cfg.mailbox_limit) + ")");
                report_if_idle(self);
                return;
            }
            const int64_t id = r.id;
            if (auto bad = s.core->submit(std::move(r))) {
                reject(self, sink, id, bad->code, bad->message);
                report_if_idle(self);
                return;
            }
            watch(self, sink);
            s.clients[id] = {sink, clock_type::now(), {}, false};
            kick(self);
        },
        [self](cancel_atom, int64_t id) { cancel(self, id, false); },
        [self](cancel_atom, int64_t id, stop_atom) { cancel(self, id, true); },
        [self](placement_atom, placement_actor p) {
            self->state.placement = std::move(p);
            report(self);
        },
        // The service watchdog's question (runtime::longest_step): a scheduler that answers is
        // alive; how long its step has run says whether its executor is.
        [self](heartbeat_atom) -> int64_t {
            auto &s = self->state;
            if (!s.core->in_flight()) return 0;
            return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - s.step_start).count();
        },
        [self](tick_atom) {
            auto &s = self->state;
            s.tick_pending = false;
            if (!s.core->in_flight() && s.core->has_work()) run_step(self);
            report_if_idle(self); // what was to run may have been cancelled during the wait
        },
    };
}

} // namespace

scheduler_actor spawn_scheduler(caf::actor_system &sys, const scheduler_config &cfg, executor_actor executor,
                                metrics_actor metrics, std::function<bool(int32_t)> is_eog) {
    return sys.spawn(scheduler_impl, cfg, std::move(executor), std::move(metrics), std::move(is_eog));
}

} // namespace actorserve
