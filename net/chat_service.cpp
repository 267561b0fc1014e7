#include "net/chat_service.h"

#include <spdlog/spdlog.h>

#include <charconv>

#include "include/actorserve/runtime.h"
#include "net/random_id.h"
#include "net/relay.h"
#include "net/request_record.h"

namespace actorserve {

chat_service::chat_service(caf::actor_system &sys, const server_config &cfg)
    : sys_(sys), cfg_(cfg) {}

chat_service::~chat_service() {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto &[id, s] : sessions_) caf::anon_send_exit(s.actor, caf::exit_reason::user_shutdown);
}

void chat_service::attach(runtime &rt) { rt_.store(&rt); }

void chat_service::set_keys(std::vector<key_settings> keys) {
    limiter_ = keys.empty() ? nullptr : std::make_shared<key_limiter>(std::move(keys));
}

bool owns(const std::string &owner, const caller &c) {
    if (!c.principal.empty() && same_secret(owner, c.principal)) return true;
    static constexpr std::string_view conn = "conn:";
    return c.token && owner.size() > conn.size() && std::string_view(owner).substr(0, conn.size()) == conn &&
           same_secret(std::string_view(owner).substr(conn.size()), *c.token);
}

namespace {

std::string whose(const std::string &owner) {
    return owner.rfind("key:", 0) == 0 ? "another API key" : "another client";
}

std::string how_to_own(const std::string &owner) {
    return owner.rfind("key:", 0) == 0 ? "" : " (give the resume_token of its start event)";
}

// The key index of principal "key:<n>" when it is below n_keys; -1 otherwise.
int64_t key_of(const std::string &principal, size_t n_keys) {
    if (principal.rfind("key:", 0) != 0) return -1;
    size_t k = 0;
    auto [end, ec] = std::from_chars(principal.data() + 4, principal.data() + principal.size(), k);
    return ec == std::errc() && end == principal.data() + principal.size() && k < n_keys ? static_cast<int64_t>(k) : -1;
}

// Room for one more item of `owner` in `items` (sessions or retained requests): nullopt when
// there is room; otherwise the item to forget (or items.end() when none may go) and whether the
// owner is at its quota. At its quota an owner makes room among its own items; at the server's
// cap room is made among the items of whoever holds the most, so that one client cannot push
// out everyone else's. Only evictable items go, the oldest (smallest age key) first.
template <class Map, class OwnerOf, class Evictable, class Age>
std::optional<std::pair<typename Map::iterator, bool>> make_room(Map &items, const std::string &owner, int quota, int cap,
                                                                 OwnerOf owner_of, Evictable evictable, Age age) {
    int mine = 0;
    for (const auto &kv : items) mine += owner_of(kv.second) == owner;
    const bool at_quota = mine >= quota;
    if (!at_quota && static_cast<int>(items.size()) < cap) return std::nullopt;
    std::map<std::string_view, int> held; // at the cap: who holds how many
    if (!at_quota)
        for (const auto &kv : items) ++held[owner_of(kv.second)];
    auto victim = items.end();
    for (auto it = items.begin(); it != items.end(); ++it) {
        if ((at_quota && owner_of(it->second) != owner) || !evictable(it->second)) continue;
        if (victim == items.end()) {
            victim = it;
            continue;
        }
        const int n = at_quota ? 0 : held[owner_of(it->second)], m = at_quota ? 0 : held[owner_of(victim->second)];
        if (n > m || (n == m && age(it->second) < age(victim->second))) victim = it;
    }
    return std::pair{victim, at_quota};
}

} // namespace

std::optional<service_error> chat_service::make_room_for_session(const std::string &owner) {
    auto room = make_room(
        sessions_, owner, cfg_.max_sessions_per_client, cfg_.max_sessions,
        [](const session_entry &e) -> const std::string & { return e.owner; },
        [](const session_entry &e) { return !e.current || e.current->ended(); },
        [](const session_entry &e) { return e.last_used; });
    if (!room) return std::nullopt;
    const auto [victim, at_quota] = *room;
    if (victim == sessions_.end())
        return service_error{errc::overloaded,
                             at_quota ? "this client's " + std::to_string(cfg_.max_sessions_per_client) +
                                            " sessions are all answering (sessions.max_sessions_per_client)"
                                      : "all " + std::to_string(cfg_.max_sessions) + " sessions are answering",
                             cfg_.runtime.retry_after_ms};
    caf::anon_send_exit(victim->second.actor, caf::exit_reason::user_shutdown);
    sessions_.erase(victim);
    return std::nullopt;
}

std::optional<service_error> chat_service::make_room_for_request(const std::string &owner) {
    using entry = std::shared_ptr<request_stream>;
    auto room = make_room(
        requests_, owner, cfg_.max_retained_per_client, cfg_.max_retained_requests,
        [](const entry &r) -> const std::string & { return r->owner(); }, [](const entry &r) { return r->ended(); },
        [](const entry &r) { return r->created(); });
    if (!room) return std::nullopt;
    const auto [victim, at_quota] = *room;
    if (victim == requests_.end())
        return service_error{errc::overloaded,
                             at_quota ? "this client's " + std::to_string(cfg_.max_retained_per_client) +
                                            " retained requests are all running (sessions.max_retained_per_client)"
                                      : "all " + std::to_string(cfg_.max_retained_requests) +
                                            " retained requests are running",
                             cfg_.runtime.retry_after_ms};
    requests_.erase(victim);
    return std::nullopt;
}

std::variant<std::shared_ptr<request_stream>, service_error>
chat_service::start(const caller &who, std::optional<std::string> session_id, chat_request req, bool ephemeral,
                    bool tokens, bool retain, std::optional<std::string> request_id, int choices) {
    runtime *rt = rt_.load();
    if (!rt) return service_error{errc::overloaded, "the model is still loading", 1000};
    if (draining_) return service_error{errc::overloaded, "the server is shutting down", 0};
    if (req.rag && !rt->rag()) {
        request_problem p = rag_unavailable();
        return service_error{p.code, std::move(p.message)};
    }
    const auto now = clock::now();

    std::unique_lock<std::mutex> lk(mu_);
    chat_session session;
    std::string sid, owner = who.principal;
    if (ephemeral) {
        session = rt->open_session();
        sid = random_id("s-");
    } else if (session_id) {
        auto it = sessions_.find(*session_id);
        if (it == sessions_.end())
            return service_error{errc::not_found, "unknown session_id '" + session_id->substr(0, 64) +
                                                      "' (sessions end after " + std::to_string(cfg_.session_idle_s) +
                                                      " s without a request)"};
        if (!owns(it->second.owner, who))
            return service_error{errc::forbidden, "session " + it->first + " belongs to " + whose(it->second.owner) +
                                                      how_to_own(it->second.owner)};
        if (it->second.current && !it->second.current->ended())
            return service_error{errc::busy, "session " + it->first + " is answering request " +
                                                 it->second.current->request_id() + "; cancel it or wait for its end"};
        session = it->second.actor;
        sid = it->first;
        owner = it->second.owner; // its requests stay its owner's, whichever connection asks
    } else {
        if (auto refused = make_room_for_session(owner)) return *refused;
        session = rt->open_session();
        sid = random_id("s-");
    }
    const bool retained = !ephemeral || retain;
    if (retained)
        if (auto refused = make_room_for_request(owner)) return *refused;

    // The key's limits and class (net/key_limits.h), last: nothing refuses the request after
    // its place is taken, which the end event gives back.
    const int64_t key = limiter_ ? key_of(who.principal, limiter_->size()) : -1;
    request_record rec;
    rec.request_id = request_id ? *request_id : random_id("r-");
    rec.session_id = sid;
    rec.key = key >= 0 ? limiter_->settings(static_cast<size_t>(key)).id : std::string();
    rec.api = who.api;
    rec.choices = choices;
    rec.rag = req.rag.has_value();
    rec.max_tokens = req.max_tokens;
    if (req.temperature_set) rec.temperature = req.sampling.temperature;
    rec.started = std::chrono::system_clock::now();
    if (cfg_.log_prompts) rec.messages = req.messages;
    if (key >= 0) {
        req.priority = limiter_->settings(static_cast<size_t>(key)).priority;
        rec.priority = req.priority;
        if (auto over = limiter_->admit(static_cast<size_t>(key), now, cfg_.runtime.retry_after_ms)) {
            spdlog::info("request refused: {}", over->message);
            if (log_) log_->write(render_refused_record(rec, name(over->limit), over->message, over->retry_after_ms));
            return service_error{errc::rate_limited, std::move(over->message), over->retry_after_ms};
        }
    }

    auto stream = std::make_shared<request_stream>(rec.request_id, sid, retained ? owner : std::string());
    if (key >= 0 || log_)
        stream->set_on_end([limiter = key >= 0 ? limiter_ : nullptr, k = static_cast<size_t>(std::max<int64_t>(key, 0)),
                            log = log_, rec = std::move(rec),
                            text = cfg_.log_prompts](const stream_event &end) {
            if (limiter)
                limiter->finish(k, int64_t{end.usage.prompt_tokens} + end.usage.completion_tokens,
                                key_limiter::clock::now());
            if (log) log->write(render_request_record(rec, end, text));
        });
    stream->append(stream_event{}); // kind start
    size_t bytes = 0;
    for (const chat_message &m : req.messages) bytes += m.content.size();
    // Ids are capabilities: the info level names none (debug does, for tracing one request).
    spdlog::debug("request {} session {}", stream->request_id(), sid);
    if (cfg_.log_prompts) {
        std::string text;
        for (const chat_message &m : req.messages) text += "[" + m.role + "] " + m.content + " ";
        spdlog::info("chat request: {} messages, {} bytes: {}", req.messages.size(), bytes, text);
    } else {
        spdlog::info("chat request: {} messages, {} bytes", req.messages.size(), bytes);
    }
    std::vector<chat_session> sessions{session};
    for (int i = 1; ephemeral && i < choices; ++i) sessions.push_back(rt->open_session());
    stream->set_relay(spawn_relay(sys_, std::move(sessions), std::move(req), stream, ephemeral, tokens,
                                  relay_policy{policy_, guard_, embed_}));
    if (ephemeral && retain) {
        requests_[stream->request_id()] = stream; // its session ends with the request (the relay's)
    } else if (ephemeral) {
        ephemeral_[stream.get()] = stream;
    } else {
        requests_[stream->request_id()] = stream;
        auto &e = sessions_[sid];
        e.owner = owner;
        e.actor = session;
        e.last_used = now;
        e.current = stream;
    }
    return stream;
}

std::variant<std::shared_ptr<request_stream>, service_error> chat_service::find(const std::string &request_id,
                                                                               const caller &who) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = requests_.find(request_id);
    if (it == requests_.end())
        return service_error{errc::not_found, "request '" + request_id.substr(0, 64) +
                                                  "' is unknown or no longer retained (events are kept " +
                                                  std::to_string(cfg_.retention_s) +
                                                  " s after the last connection following it closed)"};
    if (!owns(it->second->owner(), who))
        return service_error{errc::forbidden, "request " + it->first + " belongs to " + whose(it->second->owner()) +
                                                  how_to_own(it->second->owner())};
    return it->second;
}

void chat_service::cancel(request_stream &s) {
    if (s.ended()) return;
    s.mark_cancelling();
    caf::anon_send(s.relay(), cancel_atom::value);
}

void chat_service::sweep() {
    const auto now = clock::now();
    const auto retention = std::chrono::seconds(cfg_.retention_s);
    std::lock_guard<std::mutex> lk(mu_);
    for (auto it = requests_.begin(); it != requests_.end();) {
        auto since = it->second->unfollowed_since();
        if (since && !it->second->ended()) {
            // A stream whose client left and did not come back within its grace: stop spending
            // the machine on it; its events stay for retention (a late resume reads its end).
            const auto info = it->second->openai();
            if (info && info->grace_s >= 0 && now - *since >= std::chrono::seconds(info->grace_s)) {
                spdlog::info("a stream nobody resumed for {} s was cancelled", info->grace_s);
                cancel(*it->second);
            }
        }
        if (since && now - *since > retention) {
            if (!it->second->ended()) { // nobody came back for it: stop spending the machine on it
                spdlog::info("a request unfollowed for {} s was cancelled", cfg_.retention_s);
                spdlog::debug("request {}: unfollowed, cancelled", it->first);
                cancel(*it->second); // its relay holds the stream until the session confirms
            }
            it = requests_.erase(it);
            continue;
        }
        ++it;
    }
    for (auto it = ephemeral_.begin(); it != ephemeral_.end();) {
        auto s = it->second.lock();
        if (!s || s->ended()) it = ephemeral_.erase(it);
        else ++it;
    }
    const auto idle = std::chrono::seconds(cfg_.session_idle_s);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
        auto &e = it->second;
        if ((!e.current || e.current->ended()) && now - e.last_used > idle) {
            caf::anon_send_exit(e.actor, caf::exit_reason::user_shutdown);
            it = sessions_.erase(it);
        } else {
            ++it;
        }
    }
}

int chat_service::running() {
    std::lock_guard<std::mutex> lk(mu_);
    int n = 0;
    for (auto &[id, s] : requests_) n += !s->ended();
    for (auto &[p, w] : ephemeral_)
        if (auto s = w.lock(); s && !s->ended()) ++n;
    return n;
}

void chat_service::cancel_all() {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto &[id, s] : requests_) cancel(*s);
    for (auto &[p, w] : ephemeral_)
        if (auto s = w.lock()) cancel(*s);
}

int chat_service::sessions() {
    std::lock_guard<std::mutex> lk(mu_);
    return static_cast<int>(sessions_.size());
}

int chat_service::retained() {
    std::lock_guard<std::mutex> lk(mu_);
    return static_cast<int>(requests_.size());
}

} // namespace actorserve
