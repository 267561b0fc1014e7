#include "net/relay.h"

#include <chrono>

namespace actorserve {

namespace {

struct relay_st {
    relay_st() = default; // CAF 0.17.6 + C++20 state initialisation (see actors/scheduler.cpp)
    chat_session session;
    std::shared_ptr<request_stream> stream;
    int64_t id = 0;
    bool own_session = false;
    bool tokens = true;
};

using self_ptr = caf::stateful_actor<relay_st> *;

caf::behavior relay_actor(self_ptr self, chat_session session, chat_request req, std::shared_ptr<request_stream> stream,
                          bool own_session, bool tokens) {
    auto &st = self->state;
    st.own_session = own_session;
    st.tokens = tokens;
    if (own_session) // by value: the state is gone by the time attached functors run
        self->attach_functor([s = session] { caf::anon_send_exit(s, caf::exit_reason::user_shutdown); });
    st.session = std::move(session);
    st.stream = std::move(stream);
    st.id = req.id;
    // A session that dies (the runtime stopped) without answering would leave the request open.
    self->monitor(st.session);
    self->set_down_handler([self](caf::down_msg &) {
        stream_event e;
        e.kind = stream_event::error;
        e.code = errc::internal;
        e.message = "the session ended before answering";
        self->state.stream->append(std::move(e));
        self->quit();
    });
    self->send(st.session, std::move(req));
    return {
        [self](const chat_delta &d) {
            if (!self->state.tokens) return;
            stream_event e;
            e.kind = stream_event::token;
            e.text = d.text;
            self->state.stream->append(std::move(e));
        },
        [self](const chat_done &d) {
            stream_event e;
            e.kind = stream_event::done;
            e.text = d.text;
            e.finish_reason = d.finish_reason;
            e.usage = d.usage;
            e.ttft_ms = d.ttft_ms;
            e.cached = d.cached;
            e.similarity = d.similarity;
            e.sources = d.sources;
            e.cache_scope = d.cache_scope;
            e.cached_question = d.cached_question;
            e.cache_debug_refused = d.cache_debug_refused;
            e.total_ms = std::chrono::duration<double, std::milli>(request_stream::clock::now() -
                                                                   self->state.stream->created())
                             .count();
            self->state.stream->append(std::move(e));
            self->quit();
        },
        [self](const chat_error &err) {
            stream_event e;
            e.kind = stream_event::error;
            e.code = err.code;
            e.message = err.message;
            e.retry_after_ms = err.retry_after_ms;
            self->state.stream->append(std::move(e));
            self->quit();
        },
        [self](cancel_atom) { self->send(self->state.session, cancel_atom::value, self->state.id); },
    };
}

} // namespace

caf::actor spawn_relay(caf::actor_system &sys, chat_session session, chat_request req,
                       std::shared_ptr<request_stream> stream, bool own_session, bool tokens) {
    return sys.spawn(relay_actor, std::move(session), std::move(req), std::move(stream), own_session, tokens);
}

} // namespace actorserve
