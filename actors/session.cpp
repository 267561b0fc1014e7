#include "actors/session.h"

#include <atomic>
#include <chrono>
#include <optional>

#include "actors/protocol.h"
#include "actors/scheduler.h"
#include "engine/stop_filter.h"
#include "engine/utf8.h"

namespace actorserve {

namespace {

using clock_type = std::chrono::steady_clock;

// Generation ids are unique across sessions: the scheduler keys its sequences by them.
std::atomic<int64_t> next_gen_id{1};

struct session_st {
    session_st() = default; // see actors/scheduler.cpp: CAF 0.17.6 + C++20 state initialisation
    struct active {
        int64_t client_id = 0, gen_id = 0;
        caf::actor client;
        std::vector<chat_message> asked;  // this request's messages, kept as turns on success
        utf8_stream utf8;
        stop_filter stop{{}};
        std::string text;
        clock_type::time_point t0;
        double ttft_ms = -1.0;
        bool stopped = false;             // a stop string ended it; the scheduler is cancelling
        bool client_gone = false;         // the client terminated; nothing more is sent
        bool raw = false;                 // a raw prompt: not a turn of the conversation
    };
    session_config cfg;
    caf::actor scheduler;
    std::vector<chat_message> turns;
    std::optional<active> cur;
};

using self_ptr = caf::stateful_actor<session_st> *;

void send_error(self_ptr self, const caf::actor &to, int64_t id, errc code, std::string msg, int retry = 0) {
    self->send(to, chat_error{id, code, std::move(msg), retry});
}

void emit(self_ptr self, std::string_view piece) {
    auto &a = *self->state.cur;
    if (piece.empty() || a.stopped) return;
    auto r = a.stop.push(piece);
    if (!r.emit.empty()) {
        if (a.ttft_ms < 0) a.ttft_ms = std::chrono::duration<double, std::milli>(clock_type::now() - a.t0).count();
        a.text += r.emit;
        self->send(a.client, chat_delta{a.client_id, std::move(r.emit)});
    }
    if (r.stopped) {
        a.stopped = true;
        // Ended by a stop string: the scheduler counts it as "stop", not as a cancel.
        self->send(self->state.scheduler, cancel_atom::value, a.gen_id, stop_atom::value);
    }
}

// The request is over: stop watching its client (one monitor per request would pile up over a
// long conversation) and forget it.
void end_request(self_ptr self) {
    auto &st = self->state;
    if (!st.cur->client_gone) self->demonitor(st.cur->client);
    st.cur.reset();
}

void finish(self_ptr self, const gen_event &e) {
    auto &st = self->state;
    auto &a = *st.cur;
    if (a.client_gone) {
        end_request(self);
        return;
    }
    if (e.finish == "rejected" || e.finish == "error") {
        send_error(self, a.client, a.client_id, e.code, e.error, e.retry_after_ms);
        end_request(self);
        return;
    }
    if (!a.stopped) {
        emit(self, a.utf8.flush());
        std::string rest = a.stop.flush();
        if (!rest.empty()) {
            a.text += rest;
            self->send(a.client, chat_delta{a.client_id, std::move(rest)});
        }
    }
    chat_done d;
    d.id = a.client_id;
    d.finish_reason = a.stopped ? "stop" : e.finish;
    d.text = a.text;
    d.usage = {e.n_prompt, e.n_cached, e.n_generated};
    d.ttft_ms = a.ttft_ms < 0 ? 0.0 : a.ttft_ms;
    if (d.finish_reason != "cancelled" && !a.raw) {
        st.turns.insert(st.turns.end(), a.asked.begin(), a.asked.end());
        st.turns.push_back({"assistant", a.text});
    }
    self->send(a.client, std::move(d));
    end_request(self);
}

struct problem {
    errc code;
    std::string message;
};

std::optional<problem> check(const chat_request &r, const session_config &cfg) {
    if (r.messages.empty()) return problem{errc::invalid_request, "messages is empty"};
    if (r.raw && r.messages.size() != 1)
        return problem{errc::invalid_request, "a raw prompt is one message, got " + std::to_string(r.messages.size())};
    size_t bytes = 0;
    for (const chat_message &m : r.messages) {
        if (m.role != "system" && m.role != "user" && m.role != "assistant")
            return problem{errc::invalid_request,
                           "message role must be system, user or assistant, got '" + m.role.substr(0, 32) + "'"};
        if (!is_valid_utf8(m.content)) return problem{errc::invalid_request, "message content is not valid UTF-8"};
        bytes += m.content.size();
    }
    if (bytes > cfg.max_request_bytes)
        return problem{errc::too_large, "messages hold " + std::to_string(bytes) + " bytes (limit " +
                                            std::to_string(cfg.max_request_bytes) + ")"};
    if (r.max_tokens < 1) return problem{errc::unprocessable, "max_tokens must be >= 1, got " + std::to_string(r.max_tokens)};
    if (auto bad = validate(r.sampling)) return problem{errc::unprocessable, *bad};
    return std::nullopt;
}

caf::behavior session_actor(self_ptr self, session_config cfg, caf::actor scheduler) {
    self->state.cfg = std::move(cfg);
    self->state.scheduler = scheduler;
    self->monitor(scheduler);
    self->set_down_handler([self](caf::down_msg &dm) {
        auto &st = self->state;
        if (dm.source == st.scheduler.address()) {
            if (st.cur) send_error(self, st.cur->client, st.cur->client_id, errc::internal, "the runtime stopped");
            self->quit(dm.reason);
        } else if (st.cur && dm.source == st.cur->client.address() && !st.cur->stopped) {
            self->send(st.scheduler, cancel_atom::value, st.cur->gen_id); // nobody to stream to
            st.cur->stopped = true;
            st.cur->client_gone = true;
        }
    });
    return {
        [self](chat_request &r) {
            auto &st = self->state;
            auto client = caf::actor_cast<caf::actor>(self->current_sender());
            if (!client) return;
            if (st.cur) {
                send_error(self, client, r.id, errc::busy, "this session already has a request in flight");
                return;
            }
            if (auto bad = check(r, st.cfg)) {
                send_error(self, client, r.id, bad->code, std::move(bad->message));
                return;
            }
            std::vector<int32_t> prompt;
            if (r.raw) {
                prompt = encode_prompt(*st.cfg.tok, r.messages[0].content);
            } else {
                std::vector<chat_message> all = st.turns;
                all.insert(all.end(), r.messages.begin(), r.messages.end());
                prompt = encode_prompt(*st.cfg.tok, st.cfg.tmpl->render(all, true));
            }
            if (static_cast<int>(prompt.size()) >= st.cfg.n_ctx) {
                send_error(self, client, r.id, errc::exceed_context,
                           "prompt has " + std::to_string(prompt.size()) + " tokens, the context has room for " +
                               std::to_string(st.cfg.n_ctx - 1) + " plus one generated token");
                return;
            }
            session_st::active a;
            a.client_id = r.id;
            a.gen_id = next_gen_id++;
            a.client = client;
            a.asked = std::move(r.messages);
            a.raw = r.raw;
            a.stop = stop_filter(std::move(r.stop));
            a.t0 = clock_type::now();
            self->monitor(client);
            gen_request g{a.gen_id, std::move(prompt), r.sampling, r.max_tokens};
            st.cur = std::move(a);
            self->send(st.scheduler, submit_atom::value, std::move(g));
        },
        [self](cancel_atom, int64_t client_id) {
            auto &st = self->state;
            if (st.cur && st.cur->client_id == client_id)
                self->send(st.scheduler, cancel_atom::value, st.cur->gen_id);
        },
        [self](const gen_event &e) {
            auto &st = self->state;
            if (!st.cur || e.id != st.cur->gen_id) return; // a request already answered
            for (int32_t t : e.tokens) emit(self, st.cur->utf8.push(st.cfg.tok->token_bytes(t, false)));
            if (!e.finish.empty()) finish(self, e);
        },
    };
}

} // namespace

caf::actor spawn_session(caf::actor_system &sys, const session_config &cfg, caf::actor scheduler) {
    return sys.spawn(session_actor, cfg, std::move(scheduler));
}

} // namespace actorserve
