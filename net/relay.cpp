#include "net/relay.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "net/screening.h"

namespace actorserve {

namespace {

struct relay_st {
    relay_st() = default; // CAF 0.17.6 + C++20 state initialisation (see actors/scheduler.cpp)
    std::vector<chat_session> sessions; // one per choice; choice i's requests carry id i
    std::shared_ptr<request_stream> stream;
    bool own_session = false;
    bool tokens = true;
    std::vector<size_t> text_bytes;     // of each choice's deltas so far
    std::vector<bool> ended;            // each choice's
    size_t remaining = 0;               // choices not ended yet
    stream_event total;                 // n > 1: the done event (choice 0's, usage summed)
    int completion_tokens = 0;          // n > 1: of the choices ended so far
    bool failed = false;
    bool sent = false;                  // the requests went to the sessions
    bool cancel_pending = false;        // a cancel came before they did
    stream_event::policy_outcome policy; // the dynamic temperature's choice
    stream_event::guard_outcome guard;   // the prompt-injection guard's verdict
};

using self_ptr = caf::stateful_actor<relay_st> *;

size_t n_choices(self_ptr self) { return self->state.sessions.size(); }

// Ends the request with an error; with several choices the others are cancelled first.
void fail(self_ptr self, stream_event e) {
    auto &st = self->state;
    st.failed = true;
    for (size_t i = 0; i < st.sessions.size(); ++i)
        if (!st.ended[i]) self->send(st.sessions[i], cancel_atom::value, static_cast<int64_t>(i));
    st.stream->append(std::move(e));
    self->quit();
}

stream_event done_event(self_ptr self, const chat_done &d) {
    stream_event e;
    e.kind = stream_event::done;
    e.text = d.text;
    e.finish_reason = d.finish_reason;
    e.usage = d.usage;
    e.ttft_ms = d.ttft_ms;
    e.cached = d.cached;
    e.similarity = d.similarity;
    e.sources = d.sources;
    e.logprobs = d.logprobs;
    e.cache_scope = d.cache_scope;
    e.cached_question = d.cached_question;
    e.cache_debug_refused = d.cache_debug_refused;
    e.policy = self->state.policy;
    e.guard = self->state.guard;
    e.total_ms = std::chrono::duration<double, std::milli>(request_stream::clock::now() - self->state.stream->created()).count();
    return e;
}

caf::behavior relay_actor(self_ptr self, std::vector<chat_session> sessions, chat_request req,
                          std::shared_ptr<request_stream> stream, bool own_session, bool tokens, relay_policy policy) {
    auto &init = self->state;
    init.own_session = own_session;
    init.tokens = tokens;
    const size_t n = sessions.size();
    init.text_bytes.assign(n, 0);
    init.ended.assign(n, false);
    init.remaining = n;
    for (const chat_session &s : sessions) {
        if (own_session) // by value: the state is gone by the time attached functors run
            self->attach_functor([s] { caf::anon_send_exit(s, caf::exit_reason::user_shutdown); });
        // A session that dies (the runtime stopped) without answering would leave the request open.
        self->monitor(s);
    }
    init.sessions = std::move(sessions);
    init.stream = std::move(stream);
    self->set_down_handler([self](caf::down_msg &) {
        stream_event e;
        e.kind = stream_event::error;
        e.code = errc::internal;
        e.message = "the session ended before answering";
        fail(self, std::move(e));
    });
    // Choice i: its own seed, seed + i, so that it is the answer a request with that seed gets
    // alone; its own session, so that the choices decode side by side in one batch.
    auto send_all = [self](const chat_request &what) {
        auto &st = self->state;
        if (st.failed) return;
        st.sent = true;
        for (size_t i = 0; i < st.sessions.size(); ++i) {
            chat_request r = what;
            r.id = static_cast<int64_t>(i);
            r.sampling.seed += i;
            self->send(st.sessions[i], std::move(r));
            if (st.cancel_pending) self->send(st.sessions[i], cancel_atom::value, static_cast<int64_t>(i));
        }
    };
    auto screen = screening::plan(policy.policy, policy.guard, req);
    if (!screen || !policy.embed) {
        send_all(req);
    } else {
        // The user text embedded first (a few ms): its kind and the guard's verdict decide how,
        // and whether, the request goes on.
        auto scr = std::make_shared<screening>(std::move(*screen));
        auto asked = std::make_shared<chat_request>(std::move(req));
        auto decide = [self, scr, asked, send_all](const std::vector<std::vector<float>> *vectors) {
            auto &st = self->state;
            if (!scr->apply(*asked, vectors, st.policy, st.guard)) {
                if (st.guard.flagged) spdlog::info("the prompt-injection guard flagged a request ({:.2f})", st.guard.score);
                return send_all(*asked);
            }
            spdlog::info("the prompt-injection guard refused a request ({:.2f})", st.guard.score);
            stream_event e;
            e.kind = stream_event::error;
            e.code = errc::prompt_injection;
            std::string why;
            for (const std::string &r : st.guard.reasons) why += (why.empty() ? "" : ", ") + r;
            e.message = "the prompt-injection guard refused this request: a user message reads as an attempt to override "
                        "or extract the instructions, smuggle role markers or switch persona (" + why + ")";
            e.guard = st.guard;
            fail(self, std::move(e));
        };
        self->request(policy.embed, std::chrono::seconds(10), embed_request{scr->texts(), 0})
            .then([decide](embed_reply &r) { decide(r.ok ? &r.vectors : nullptr); },
                  [decide](caf::error &) { decide(nullptr); });
    }
    return {
        [self](const chat_delta &d) {
            auto &st = self->state;
            const auto i = static_cast<size_t>(d.id);
            if (i >= n_choices(self) || st.failed) return;
            const size_t offset = st.text_bytes[i];
            st.text_bytes[i] += d.text.size();
            if (!st.tokens) return;
            stream_event e;
            e.kind = stream_event::token;
            e.choice = static_cast<int>(i);
            e.text = d.text;
            e.logprobs = d.logprobs;
            e.text_offset = offset;
            st.stream->append(std::move(e));
        },
        [self](const chat_done &d) {
            auto &st = self->state;
            const auto i = static_cast<size_t>(d.id);
            if (i >= n_choices(self) || st.ended[i] || st.failed) return;
            st.ended[i] = true;
            --st.remaining;
            stream_event e = done_event(self, d);
            if (n_choices(self) == 1) {
                st.stream->append(std::move(e));
                return self->quit();
            }
            // Several choices: each end is an event of its own; the request's done follows the
            // last, its usage the prompt once and every choice's completion tokens.
            st.completion_tokens += e.usage.completion_tokens;
            if (i == 0) {
                st.total = e;
                st.total.logprobs.clear();
            }
            e.kind = stream_event::token;
            e.choice = static_cast<int>(i);
            e.choice_end = true;
            e.text_offset = st.text_bytes[i];
            st.stream->append(std::move(e));
            if (st.remaining > 0) return;
            st.total.usage.completion_tokens = st.completion_tokens;
            st.total.total_ms = std::chrono::duration<double, std::milli>(request_stream::clock::now() - st.stream->created()).count();
            st.stream->append(std::move(st.total));
            self->quit();
        },
        [self](const chat_error &err) {
            auto &st = self->state;
            const auto i = static_cast<size_t>(err.id);
            if (i >= n_choices(self) || st.failed) return;
            st.ended[i] = true;
            stream_event e;
            e.kind = stream_event::error;
            e.code = err.code;
            e.message = n_choices(self) > 1 ? "choice " + std::to_string(i) + ": " + err.message : err.message;
            e.retry_after_ms = err.retry_after_ms;
            e.policy = st.policy;
            e.guard = st.guard;
            fail(self, std::move(e));
        },
        [self](cancel_atom) {
            auto &st = self->state;
            if (!st.sent) {
                st.cancel_pending = true;
                return;
            }
            for (size_t i = 0; i < st.sessions.size(); ++i)
                if (!st.ended[i]) self->send(st.sessions[i], cancel_atom::value, static_cast<int64_t>(i));
        },
    };
}

} // namespace

caf::actor spawn_relay(caf::actor_system &sys, std::vector<chat_session> sessions, chat_request req,
                       std::shared_ptr<request_stream> stream, bool own_session, bool tokens, relay_policy policy) {
    return sys.spawn(relay_actor, std::move(sessions), std::move(req), std::move(stream), own_session, tokens,
                     std::move(policy));
}

} // namespace actorserve
