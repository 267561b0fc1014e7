#include "actors/session.h"

#include <atomic>
#include <chrono>
#include <optional>

#include "actors/cache_actor.h"
#include "actors/protocol.h"
#include "actors/rag_actor.h"
#include "actors/scheduler.h"
#include "engine/stop_filter.h"
#include "engine/utf8.h"
#include "rag/prompt.h"

namespace actorserve {

namespace {

using clock_type = std::chrono::steady_clock;

// Generation ids are unique across sessions: the scheduler keys its sequences by them.
std::atomic<int64_t> next_gen_id{1};

struct session_st {
    session_st() = default; // see actors/scheduler.cpp: CAF 0.17.6 + C++20 state initialisation
    struct active {
        int64_t client_id = 0, gen_id = 0;
        chat_listener client;
        std::vector<chat_message> asked;  // this request's messages, kept as turns on success
        utf8_stream utf8;
        stop_filter stop{{}};
        std::string text;
        clock_type::time_point t0;
        double ttft_ms = -1.0;
        bool stopped = false;             // a stop string ended it; the scheduler is cancelling
        bool client_gone = false;         // the client terminated; nothing more is sent
        bool raw = false;                 // a raw prompt: not a turn of the conversation
        // caches
        std::optional<cache_query> query; // cacheable: what was looked up, stored on completion
        std::vector<float> vec;           // the question's embedding (a semantic miss)
        std::optional<gen_request> held;  // submitted once the cache has answered
        bool cancel_held = false;         // cancelled while the cache (or the RAG actor) was asked
        int n_prompt = 0;
        // cache_debug: what done tells (see chat_done)
        bool cache_debug = false;
        std::string cache_scope, cache_debug_refused;
        // retrieval
        std::optional<chat_request> searching; // waiting for the RAG actor's passages
        std::vector<rag_source> sources;  // the passages the prompt gave, for chat_done
        // logprobs (chat_request::logprobs)
        int logprobs = -1;
        std::vector<token_logprob> lp_pending; // tokens whose text is not in a delta yet
        std::vector<token_logprob> lp_sent;    // tokens whose text is, for chat_done
    };
    session_config cfg;
    submit_target scheduler;
    std::vector<chat_message> turns;
    std::optional<active> cur;
    bool rag_lost = false;                // the RAG actor this session was given has exited
};

using self_ptr = session_actor::stateful_pointer<session_st>;

void send_error(self_ptr self, const chat_listener &to, int64_t id, errc code, std::string msg, int retry = 0) {
    self->send(to, chat_error{id, code, std::move(msg), retry});
}

// A delta of the answer, with the logprobs of the tokens that arrived since the last one.
// note: a token whose text a stop string held back and then cut never reaches a delta, and its
// logprobs are dropped with it.
void send_delta(self_ptr self, std::string text) {
    auto &a = *self->state.cur;
    chat_delta d{a.client_id, std::move(text), {}};
    if (a.logprobs >= 0) {
        a.lp_sent.insert(a.lp_sent.end(), a.lp_pending.begin(), a.lp_pending.end());
        d.logprobs = std::move(a.lp_pending);
        a.lp_pending.clear();
    }
    self->send(a.client, std::move(d));
}

token_logprob logprob_of(const tokenizer &tok, const token_logprobs &l) {
    token_logprob t{tok.token_bytes(l.id, false), l.logprob, {}};
    t.top.reserve(l.top.size());
    for (const auto &[id, lp] : l.top) t.top.push_back({tok.token_bytes(id, false), lp});
    return t;
}

void emit(self_ptr self, std::string_view piece) {
    auto &a = *self->state.cur;
    if (piece.empty() || a.stopped) return;
    auto r = a.stop.push(piece);
    if (!r.emit.empty()) {
        if (a.ttft_ms < 0) a.ttft_ms = std::chrono::duration<double, std::milli>(clock_type::now() - a.t0).count();
        a.text += r.emit;
        send_delta(self, std::move(r.emit));
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
    if (!st.cur->client_gone) self->demonitor(st.cur->client.address());
    st.cur.reset();
}

void finish(self_ptr self, const gen_event &e) {
    auto &st = self->state;
    auto &a = *st.cur;
    if (a.client_gone) {
        end_request(self);
        return;
    }
    if (e.failed) {
        send_error(self, a.client, a.client_id, e.code, e.error, e.retry_after_ms);
        end_request(self);
        return;
    }
    if (!a.stopped) {
        emit(self, a.utf8.flush());
        std::string rest = a.stop.flush();
        if (!rest.empty()) {
            a.text += rest;
            send_delta(self, std::move(rest));
        }
    }
    chat_done d;
    d.id = a.client_id;
    d.finish_reason = a.stopped ? finish_reason::stop : *e.finish;
    d.text = a.text;
    d.usage = {e.n_prompt, e.n_cached, e.n_generated};
    d.ttft_ms = a.ttft_ms < 0 ? 0.0 : a.ttft_ms;
    d.sources = std::move(a.sources);
    d.logprobs = std::move(a.lp_sent);
    if (a.cache_debug) {
        d.cache_scope = a.cache_scope;
        d.cache_debug_refused = a.cache_debug_refused;
    }
    if (d.finish_reason != finish_reason::cancelled && !a.raw) {
        st.turns.insert(st.turns.end(), a.asked.begin(), a.asked.end());
        st.turns.push_back({"assistant", a.text});
    }
    if (a.query && (d.finish_reason == finish_reason::stop || d.finish_reason == finish_reason::length))
        self->send(st.cfg.cache, store_atom::value,
                   cache_store{std::move(*a.query), std::move(a.vec),
                               cached_answer{a.text, std::string(name(d.finish_reason)), e.n_generated}});
    self->send(a.client, std::move(d));
    end_request(self);
}

// Pieces of about a word, for streaming a cached answer the way a generated one arrives. The
// text is valid UTF-8 and pieces end after an ASCII space or at a character boundary.
std::vector<std::string> word_pieces(const std::string &text) {
    constexpr size_t kMaxPiece = 32;
    std::vector<std::string> out;
    size_t start = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        const bool space = text[i] == ' ' || text[i] == '\n';
        const bool next_starts_char = i + 1 >= text.size() || (static_cast<unsigned char>(text[i + 1]) & 0xC0) != 0x80;
        if ((space && i + 1 > start) || (i + 1 - start >= kMaxPiece && next_starts_char)) {
            out.push_back(text.substr(start, i + 1 - start));
            start = i + 1;
        }
    }
    if (start < text.size()) out.push_back(text.substr(start));
    return out;
}

// The caches answered: stream their text, then done, as a generated answer would end.
void answer_from_cache(self_ptr self, cache_reply &r) {
    auto &st = self->state;
    auto &a = *st.cur;
    for (std::string &piece : word_pieces(r.answer.text)) {
        if (a.ttft_ms < 0) a.ttft_ms = std::chrono::duration<double, std::milli>(clock_type::now() - a.t0).count();
        self->send(a.client, chat_delta{a.client_id, std::move(piece), {}});
    }
    a.text = r.answer.text;
    chat_done d;
    d.id = a.client_id;
    // The cache file holds the reason as text (cache/request_key.h); only stop and length are stored.
    d.finish_reason = parse_finish_reason(r.answer.finish_reason).value_or(finish_reason::stop);
    d.text = a.text;
    d.usage = {a.n_prompt, a.n_prompt, r.answer.completion_tokens};
    d.ttft_ms = a.ttft_ms < 0 ? 0.0 : a.ttft_ms;
    d.cached = r.kind == cache_reply::exact ? "exact" : "semantic";
    d.similarity = r.similarity;
    d.cache_scope = std::move(r.scope_id);
    d.cached_question = std::move(r.cached_question);
    d.cache_debug_refused = std::move(r.debug_refused);
    if (!a.raw) {
        st.turns.insert(st.turns.end(), a.asked.begin(), a.asked.end());
        st.turns.push_back({"assistant", a.text});
    }
    self->send(a.client, std::move(d));
    end_request(self);
}

// What the caches are asked for this request, or nullopt when it is not cacheable.
std::optional<cache_query> cache_query_for(const session_st &st, const chat_request &r, const std::string &prompt,
                                           int64_t gen_id) {
    if (!st.cfg.cache || r.cache == false || r.logprobs >= 0 || r.grammar) return std::nullopt;
    const bool opted_in = r.cache == true;
    if (!opted_in && r.sampling.temperature > 0.0f) return std::nullopt; // only greedy answers repeat
    cache_query q;
    q.gen_id = gen_id;
    q.prompt = prompt;
    q.params = generation_params{r.sampling, r.max_tokens, r.stop};
    q.allow_sampled = opted_in;
    q.debug = r.cache_debug;
    // The meaning of a question decides its answer only when nothing came before it.
    if (!r.raw && st.turns.empty() && r.messages.back().role == "user") {
        bool only_system_before = true;
        for (size_t i = 0; i + 1 < r.messages.size(); ++i) only_system_before &= r.messages[i].role == "system";
        if (only_system_before) {
            q.semantic_ok = true;
            for (size_t i = 0; i + 1 < r.messages.size(); ++i) q.system_prompt += r.messages[i].content + "\n";
            q.question = r.messages.back().content;
        }
    }
    return q;
}

// The request in flight (st.cur, client monitored) is checked: render what the model is shown
// (`shown`: the earlier turns and this request's messages, passages added with retrieval),
// check it fits the context, and ask the caches or submit.
void submit(self_ptr self, chat_request &r, std::vector<chat_message> shown) {
    auto &st = self->state;
    auto &a = *st.cur;
    // A raw prompt is the caller's own (special tokens in it parse); a chat's markers are the
    // template's alone, and message text stays text.
    std::string rendered;
    std::vector<int32_t> prompt;
    if (r.raw) {
        rendered = r.messages[0].content;
        prompt = encode_prompt(*st.cfg.tok, rendered);
    } else {
        const rendered_chat chat = st.cfg.tmpl->render_marked(shown, true);
        prompt = encode_prompt(*st.cfg.tok, chat.text, chat.controls);
        rendered = marked_prompt(chat);
    }
    if (auto bad = check_prompt(static_cast<int>(prompt.size()), st.cfg.n_ctx,
                                r.rag ? "prompt with the retrieved passages" : "prompt")) {
        send_error(self, a.client, a.client_id, bad->code, std::move(bad->message));
        return end_request(self);
    }
    // A grounded answer depends on the knowledge base, which changes: never cached.
    if (!r.rag) a.query = cache_query_for(st, r, rendered, a.gen_id);
    a.cache_debug = r.cache_debug;
    if (r.cache_debug && !a.query)
        a.cache_debug_refused = r.rag ? "a grounded answer is never cached"
                                : r.logprobs >= 0 ? "an answer with logprobs is never cached"
                                : r.grammar       ? "a structured answer is never cached"
                                                  : "the caches were not asked (off, or a sampled request)";
    a.n_prompt = static_cast<int>(prompt.size());
    a.asked = std::move(r.messages);
    a.raw = r.raw;
    a.stop = stop_filter(std::move(r.stop));
    a.logprobs = r.logprobs;
    gen_request g{a.gen_id, std::move(prompt), r.sampling, r.max_tokens, r.logprobs, r.grammar,
                  r.grammar ? st.cfg.vocab : nullptr, r.priority};
    if (a.query) {
        a.held = std::move(g);
        self->send(st.cfg.cache, lookup_atom::value, *a.query);
        return;
    }
    self->send(st.scheduler, submit_atom::value, std::move(g));
}

// The conversation as the model sees it with the passages: the citation instructions appended
// to the leading system message (or a system message of their own), then, just before the
// question, a user turn holding the fenced passages and a fixed assistant reply acknowledging
// them, so that the last turn is the question alone. Tried on the 135M default model, this
// layout answered from the passages, where passages and question in one user turn made it
// continue the fenced list instead, and passages in the system message would have raised
// document text to the most trusted role (docs/rag.md).
std::vector<chat_message> with_passages(const std::vector<chat_message> &turns, const std::vector<chat_message> &asked,
                                        const rag_prompt &p) {
    std::vector<chat_message> all = turns;
    all.insert(all.end(), asked.begin(), asked.end());
    if (!p.instructions.empty()) {
        if (all.front().role == "system") {
            all.front().content += "\n\n";
            all.front().content += p.instructions;
        } else {
            all.insert(all.begin(), chat_message{"system", p.instructions});
        }
    }
    if (!p.context.empty()) {
        std::string sources = "Sources:\n\n";
        sources += p.context;
        const auto question = all.end() - 1;
        all.insert(question, {chat_message{"user", std::move(sources)},
                              chat_message{"assistant", "I have read the sources. What is your question?"}});
    }
    return all;
}

void on_passages(self_ptr self, int64_t gen_id, rag_search_reply &rep);

// Sends the request's search; the reply (or the RAG actor's failure) comes to on_passages.
void ask_rag(self_ptr self) {
    auto &st = self->state;
    const chat_request &r = *st.cur->searching;
    const rag_options &o = *r.rag;
    rag_search s;
    s.req.query = r.messages.back().content;
    s.req.top_k = o.top_k ? o.top_k : st.cfg.rag_top_k;
    s.req.filters = o.filters;
    s.req.mode = o.mode;
    const int64_t gen_id = st.cur->gen_id;
    // A search is milliseconds; the timeout only guards against a knowledge base that hangs.
    self->request(st.cfg.rag, std::chrono::seconds(60), std::move(s))
        .then([self, gen_id](rag_search_reply &rep) { on_passages(self, gen_id, rep); },
              [self, gen_id](caf::error &e) {
                  rag_search_reply rep;
                  rep.code = errc::internal;
                  rep.error = "retrieval (rag) failed: ";
                  rep.error += e == caf::sec::request_receiver_down ? "the knowledge base stopped" : caf::to_string(e);
                  on_passages(self, gen_id, rep);
              });
}

void on_passages(self_ptr self, int64_t gen_id, rag_search_reply &rep) {
    auto &st = self->state;
    if (!st.cur || st.cur->gen_id != gen_id || !st.cur->searching) return;
    auto &a = *st.cur;
    if (a.client_gone) return end_request(self);
    if (a.cancel_held) {
        chat_done d;
        d.id = a.client_id;
        d.finish_reason = finish_reason::cancelled;
        self->send(a.client, std::move(d));
        return end_request(self);
    }
    chat_request r = std::move(*a.searching);
    a.searching.reset();
    if (!rep.ok) {
        send_error(self, a.client, a.client_id, rep.code, std::move(rep.error),
                   rep.code == errc::overloaded ? st.cfg.retry_after_ms : 0);
        return end_request(self);
    }
    const size_t budget = r.rag->budget_tokens ? r.rag->budget_tokens : st.cfg.rag_budget_tokens;
    auto tok = st.cfg.tok;
    // cost: one tokenization of each passage kept (and of the fenced text); the model's
    // tokenizer, so that the budget is what the prompt really spends.
    const rag_prompt p = build_rag_prompt(rep.passages, budget,
                                          [tok](std::string_view text) { return tok->encode(text, false).size(); });
    for (size_t i = 0; i < p.cited.size(); ++i) {
        const passage &c = p.cited[i];
        rag_source src;
        src.number = static_cast<int>(i + 1);
        src.chunk_id = c.chunk_id;
        src.doc_id = c.doc_id;
        src.source = c.source;
        src.title = c.title;
        src.heading = c.heading;
        src.score = c.score;
        src.flagged = looks_like_injection(c.text);
        a.sources.push_back(std::move(src));
    }
    submit(self, r, with_passages(st.turns, r.messages, p));
}

session_actor::behavior_type session_impl(self_ptr self, session_config cfg, submit_target scheduler) {
    self->state.cfg = std::move(cfg);
    self->state.scheduler = scheduler;
    self->monitor(scheduler);
    if (self->state.cfg.cache) self->monitor(self->state.cfg.cache);
    if (self->state.cfg.rag) self->monitor(self->state.cfg.rag);
    self->set_down_handler([self](caf::down_msg &dm) {
        auto &st = self->state;
        if (dm.source == st.scheduler.address()) {
            if (st.cur) send_error(self, st.cur->client, st.cur->client_id, errc::internal, "the runtime stopped");
            self->quit(dm.reason);
        } else if (st.cfg.cache && dm.source == st.cfg.cache.address()) {
            // The caches are gone (they failed): carry on without them; a request waiting for
            // their answer goes to the scheduler as a miss.
            st.cfg.cache = cache_actor{};
            if (st.cur && st.cur->held) {
                cache_reply miss;
                miss.kind = cache_reply::bypass;
                miss.gen_id = st.cur->gen_id;
                self->send(self, std::move(miss));
            }
        } else if (st.cfg.rag && dm.source == st.cfg.rag.address()) {
            // Retrieval is gone: later rag requests are refused by name; a search in flight
            // fails through its request (request_receiver_down) and is answered with an error.
            st.cfg.rag = rag_actor{};
            st.rag_lost = true;
        } else if (st.cur && dm.source == st.cur->client.address() && !st.cur->stopped) {
            self->send(st.scheduler, cancel_atom::value, st.cur->gen_id); // nobody to stream to
            st.cur->stopped = true;
            st.cur->client_gone = true;
        }
    });
    return {
        [self](chat_request &r) {
            auto &st = self->state;
            // Whoever asks hears chat_delta, chat_done, chat_error (include/actorserve/messages.h).
            auto client = caf::actor_cast<chat_listener>(self->current_sender());
            if (!client) return;
            if (st.cur) {
                send_error(self, client, r.id, errc::busy, "this session already has a request in flight");
                return;
            }
            if (auto bad = check_request(r, st.cfg.limits)) {
                send_error(self, client, r.id, bad->code, std::move(bad->message));
                return;
            }
            session_st::active a;
            a.client_id = r.id;
            a.gen_id = next_gen_id++;
            a.client = client;
            a.t0 = clock_type::now();
            if (r.rag) {
                if (!st.cfg.rag) {
                    request_problem bad = rag_unavailable(st.rag_lost);
                    send_error(self, client, r.id, bad.code, std::move(bad.message));
                    return;
                }
                self->monitor(client);
                a.searching = std::move(r);
                st.cur = std::move(a);
                return ask_rag(self);
            }
            self->monitor(client);
            st.cur = std::move(a);
            std::vector<chat_message> all;
            if (!r.raw) {
                all = st.turns;
                all.insert(all.end(), r.messages.begin(), r.messages.end());
            }
            submit(self, r, std::move(all));
        },
        [self](cache_reply &r) {
            auto &st = self->state;
            if (!st.cur || r.gen_id != st.cur->gen_id || !st.cur->held) return;
            auto &a = *st.cur;
            if (a.client_gone) return end_request(self);
            if (a.cancel_held) {
                chat_done d;
                d.id = a.client_id;
                d.finish_reason = finish_reason::cancelled;
                d.usage = {a.n_prompt, 0, 0};
                self->send(a.client, std::move(d));
                return end_request(self);
            }
            if (r.kind == cache_reply::exact || r.kind == cache_reply::semantic) return answer_from_cache(self, r);
            if (r.kind == cache_reply::bypass) a.query.reset(); // the cache is busy: not stored either
            a.cache_scope = std::move(r.scope_id);
            a.cache_debug_refused = r.kind == cache_reply::bypass ? "the cache actor was busy: not asked" : std::move(r.debug_refused);
            a.vec = std::move(r.vec);
            gen_request g = std::move(*a.held);
            a.held.reset();
            self->send(st.scheduler, submit_atom::value, std::move(g));
        },
        [self](cancel_atom, int64_t client_id) {
            auto &st = self->state;
            if (!st.cur || st.cur->client_id != client_id) return;
            if (st.cur->held || st.cur->searching) st.cur->cancel_held = true; // answered when the cache (or RAG actor) replies
            else self->send(st.scheduler, cancel_atom::value, st.cur->gen_id);
        },
        [self](const gen_event &e) {
            auto &st = self->state;
            if (!st.cur || e.id != st.cur->gen_id) return; // a request already answered
            for (size_t i = 0; i < e.tokens.size(); ++i) {
                if (i < e.logprobs.size() && !st.cur->stopped)
                    st.cur->lp_pending.push_back(logprob_of(*st.cfg.tok, e.logprobs[i]));
                emit(self, st.cur->utf8.push(st.cfg.tok->token_bytes(e.tokens[i], false)));
            }
            if (e.ended()) finish(self, e);
        },
    };
}

} // namespace

session_actor spawn_session(caf::actor_system &sys, const session_config &cfg, submit_target scheduler) {
    return sys.spawn(session_impl, cfg, std::move(scheduler));
}

} // namespace actorserve
