// The chat service: what every front end (WebSocket, HTTP) asks for, on any I/O thread. It owns
// the named sessions (conversations that outlive a connection) and the retained request
// streams (what resume reads), and enforces their limits and lifetimes.
#pragma once

#include <caf/all.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>

#include "include/actorserve/messages.h"
#include "net/config.h"
#include "net/request_stream.h"

namespace actorserve {

class runtime;

struct service_error {
    errc code;
    std::string message;
    int retry_after_ms = 0;
};

class chat_service {
public:
    using clock = std::chrono::steady_clock;

    chat_service(caf::actor_system &sys, const server_config &cfg);
    ~chat_service();

    void attach(runtime &rt);
    bool ready() const { return rt_.load() != nullptr; }
    runtime *rt() const { return rt_.load(); }

    // Starts a request. session_id: continue that conversation; nullopt: a new named session
    // (WebSocket); ephemeral: a session for this request alone, not retained for resume (HTTP).
    // tokens: false keeps no token events (the answer comes whole in done). The stream's first
    // event (start) is appended here.
    std::variant<std::shared_ptr<request_stream>, service_error>
    start(std::optional<std::string> session_id, chat_request req, bool ephemeral, bool tokens);

    std::shared_ptr<request_stream> find(const std::string &request_id);
    void cancel(const request_stream &s);

    // Periodically (the server's timer): cancels requests nobody followed for the retention
    // period, forgets them once ended, and ends idle sessions.
    void sweep();

    // Shutdown: refuse new requests; then how many accepted ones are still running; then end them.
    void drain() { draining_ = true; }
    int running();
    void cancel_all();

    int sessions();
    int retained();

private:
    std::string new_id(const char *prefix);
    struct session_entry {
        caf::actor actor;
        clock::time_point last_used;
        std::shared_ptr<request_stream> current;
    };

    caf::actor_system &sys_;
    const server_config cfg_;
    std::atomic<runtime *> rt_{nullptr};
    std::atomic<bool> draining_{false};
    std::mutex mu_;
    std::map<std::string, session_entry> sessions_;
    std::map<std::string, std::shared_ptr<request_stream>> requests_;   // retained (resumable)
    std::map<request_stream *, std::weak_ptr<request_stream>> ephemeral_; // HTTP, for shutdown
};

} // namespace actorserve
