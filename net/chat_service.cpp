#include "net/chat_service.h"

#include <spdlog/spdlog.h>

#include <sys/random.h>

#include <cerrno>
#include <system_error>

#include "include/actorserve/runtime.h"
#include "net/relay.h"

namespace actorserve {

chat_service::chat_service(caf::actor_system &sys, const server_config &cfg)
    : sys_(sys), cfg_(cfg) {}

chat_service::~chat_service() {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto &[id, s] : sessions_) caf::anon_send_exit(s.actor, caf::exit_reason::user_shutdown);
}

void chat_service::attach(runtime &rt) { rt_.store(&rt); }

// 128 bits from the kernel's CSPRNG (getrandom): an id is all a resume presents, so it must not
// be guessable, and no seeded generator whose state could be rebuilt from the ids it has shown.
std::string chat_service::new_id(const char *prefix) {
    unsigned char bits[16];
    size_t got = 0;
    while (got < sizeof bits) {
        const ssize_t n = ::getrandom(bits + got, sizeof bits - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw std::system_error(errno, std::generic_category(), "getrandom (request and session ids)");
        got += static_cast<size_t>(n);
    }
    static constexpr char hex[] = "0123456789abcdef";
    std::string id(prefix);
    for (unsigned char b : bits) {
        id += hex[b >> 4];
        id += hex[b & 15];
    }
    return id;
}

std::variant<std::shared_ptr<request_stream>, service_error>
chat_service::start(std::optional<std::string> session_id, chat_request req, bool ephemeral, bool tokens) {
    runtime *rt = rt_.load();
    if (!rt) return service_error{errc::overloaded, "the model is still loading", 1000};
    if (draining_) return service_error{errc::overloaded, "the server is shutting down", 0};
    if (req.rag && !rt->rag())
        return service_error{errc::not_found, "rag: retrieval is not enabled on this server ([rag] enabled = false, "
                                              "or its embedding model did not load)"};
    const auto now = clock::now();

    std::unique_lock<std::mutex> lk(mu_);
    caf::actor session;
    std::string sid;
    if (ephemeral) {
        session = rt->open_session();
        sid = new_id("s-");
    } else if (session_id) {
        auto it = sessions_.find(*session_id);
        if (it == sessions_.end())
            return service_error{errc::not_found, "unknown session_id '" + session_id->substr(0, 64) +
                                                      "' (sessions end after " + std::to_string(cfg_.session_idle_s) +
                                                      " s without a request)"};
        if (it->second.current && !it->second.current->ended())
            return service_error{errc::busy, "session " + it->first + " is answering request " +
                                                 it->second.current->request_id() + "; cancel it or wait for its end"};
        session = it->second.actor;
        sid = it->first;
    } else {
        if (static_cast<int>(sessions_.size()) >= cfg_.max_sessions) {
            // Make room by forgetting the least recently used conversation that is not answering.
            auto victim = sessions_.end();
            for (auto it = sessions_.begin(); it != sessions_.end(); ++it)
                if ((!it->second.current || it->second.current->ended()) &&
                    (victim == sessions_.end() || it->second.last_used < victim->second.last_used))
                    victim = it;
            if (victim == sessions_.end())
                return service_error{errc::overloaded,
                                     "all " + std::to_string(cfg_.max_sessions) + " sessions are answering",
                                     cfg_.runtime.retry_after_ms};
            caf::anon_send_exit(victim->second.actor, caf::exit_reason::user_shutdown);
            sessions_.erase(victim);
        }
        session = rt->open_session();
        sid = new_id("s-");
    }
    if (!ephemeral && static_cast<int>(requests_.size()) >= cfg_.max_retained_requests) {
        auto victim = requests_.end();
        for (auto it = requests_.begin(); it != requests_.end(); ++it)
            if (it->second->ended() && (victim == requests_.end() || it->second->created() < victim->second->created()))
                victim = it;
        if (victim == requests_.end())
            return service_error{errc::overloaded,
                                 "all " + std::to_string(cfg_.max_retained_requests) + " retained requests are running",
                                 cfg_.runtime.retry_after_ms};
        requests_.erase(victim);
    }

    auto stream = std::make_shared<request_stream>(new_id("r-"), sid);
    stream->append(stream_event{}); // kind start
    size_t bytes = 0;
    for (const chat_message &m : req.messages) bytes += m.content.size();
    if (cfg_.log_prompts) {
        std::string text;
        for (const chat_message &m : req.messages) text += "[" + m.role + "] " + m.content + " ";
        spdlog::info("request {} session {}: {} messages, {} bytes: {}", stream->request_id(), sid, req.messages.size(),
                     bytes, text);
    } else {
        spdlog::info("request {} session {}: {} messages, {} bytes", stream->request_id(), sid, req.messages.size(), bytes);
    }
    stream->set_relay(spawn_relay(sys_, session, std::move(req), stream, ephemeral, tokens));
    if (ephemeral) {
        ephemeral_[stream.get()] = stream;
    } else {
        requests_[stream->request_id()] = stream;
        auto &e = sessions_[sid];
        e.actor = session;
        e.last_used = now;
        e.current = stream;
    }
    return stream;
}

std::shared_ptr<request_stream> chat_service::find(const std::string &request_id) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = requests_.find(request_id);
    return it == requests_.end() ? nullptr : it->second;
}

void chat_service::cancel(const request_stream &s) {
    if (!s.ended()) caf::anon_send(s.relay(), cancel_atom::value);
}

void chat_service::sweep() {
    const auto now = clock::now();
    const auto retention = std::chrono::seconds(cfg_.retention_s);
    std::lock_guard<std::mutex> lk(mu_);
    for (auto it = requests_.begin(); it != requests_.end();) {
        auto since = it->second->unfollowed_since();
        if (since && now - *since > retention) {
            if (!it->second->ended()) { // nobody came back for it: stop spending the machine on it
                spdlog::info("request {}: unfollowed for {} s, cancelled", it->first, cfg_.retention_s);
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
