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
#include "net/key_limits.h"
#include "net/request_log.h"
#include "net/request_stream.h"
#include "policy/temperature_policy.h"

namespace actorserve {

class runtime;

struct service_error {
    errc code;
    std::string message;
    int retry_after_ms = 0;
};

// Who asks (docs/protocol.md, "Security model"). A request or session belongs to the principal
// that created it: "key:<n>" (the n-th line of the API keys file) when keys are on; otherwise
// "conn:<resume token>", the secret of the WebSocket connection that created it, which its
// start events show as resume_token. Only its owner may resume it, cancel it or continue it:
// the same principal, or (keys off) whoever presents the resume token. HTTP requests belong to
// nobody and are not retained, except OpenAI streams: they belong to the key, or (keys off) to a
// secret of their own that the stream's resume URL carries.
struct caller {
    std::string principal;
    std::optional<std::string> token; // a resume_token given with the message
    std::string api = "ws";           // the front end asking, as the request log names it
};

// True when c may act on what `owner` created.
bool owns(const std::string &owner, const caller &c);

class chat_service {
public:
    using clock = std::chrono::steady_clock;

    chat_service(caf::actor_system &sys, const server_config &cfg);
    ~chat_service();

    void attach(runtime &rt);
    // The API keys' settings, one per key of the keys file (before any request): their limits
    // and priority classes apply to requests of principal "key:<n>" from then on.
    void set_keys(std::vector<key_settings> keys);
    // Where finished and refused requests are logged (net/request_log.h); null: nowhere.
    void set_request_log(std::shared_ptr<request_log> log) { log_ = std::move(log); }
    // The dynamic temperature (policy/temperature_policy.h) and the embedder it asks; null: off.
    // The prompt-injection guard (policy/injection_guard.h); null: off.
    void set_policy(std::shared_ptr<const temperature_policy> p, std::shared_ptr<const injection_guard> g,
                    embed_actor embed) {
        policy_ = std::move(p);
        guard_ = std::move(g);
        embed_ = std::move(embed);
    }
    const temperature_policy *policy() const { return policy_.get(); }
    const injection_guard *guard() const { return guard_.get(); }
    const key_limiter *limiter() const { return limiter_.get(); }
    const request_log *log() const { return log_.get(); }
    bool ready() const { return rt_.load() != nullptr; }
    runtime *rt() const { return rt_.load(); }

    // Starts a request. session_id: continue that conversation; nullopt: a new named session
    // (WebSocket); ephemeral: a session for this request alone, not retained for resume (HTTP).
    // tokens: false keeps no token events (the answer comes whole in done). retain (with
    // ephemeral): the session is the request's alone but the request is retained for resume, as
    // an OpenAI stream is (GET /v1/streams/{id}). request_id: the id to give it (random, "r-..."),
    // when the caller needs it first; nullopt: a new one. choices (with ephemeral): OpenAI's n,
    // that many sessions answering side by side (net/relay.h). The stream's first event (start)
    // is appended here.
    // Quotas: one principal holds at most sessions.max_per_client sessions and
    // max_retained_per_client retained requests, and at its quota makes room among its own;
    // when the server's caps are reached, room is made among the largest holder's.
    std::variant<std::shared_ptr<request_stream>, service_error>
    start(const caller &who, std::optional<std::string> session_id, chat_request req, bool ephemeral, bool tokens,
          bool retain = false, std::optional<std::string> request_id = std::nullopt, int choices = 1);

    // A retained request that `who` owns: not_found when unknown, forbidden when another's.
    std::variant<std::shared_ptr<request_stream>, service_error> find(const std::string &request_id, const caller &who);
    void cancel(request_stream &s);

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
    std::optional<service_error> make_room_for_session(const std::string &owner);
    std::optional<service_error> make_room_for_request(const std::string &owner);

    struct session_entry {
        std::string owner;
        chat_session actor;
        clock::time_point last_used;
        std::shared_ptr<request_stream> current;
    };

    caf::actor_system &sys_;
    const server_config cfg_;
    std::shared_ptr<key_limiter> limiter_;  // null without keys
    std::shared_ptr<request_log> log_;
    std::shared_ptr<const temperature_policy> policy_;
    std::shared_ptr<const injection_guard> guard_;
    embed_actor embed_;
    std::atomic<runtime *> rt_{nullptr};
    std::atomic<bool> draining_{false};
    std::mutex mu_;
    std::map<std::string, session_entry> sessions_;
    std::map<std::string, std::shared_ptr<request_stream>> requests_;   // retained (resumable)
    std::map<request_stream *, std::weak_ptr<request_stream>> ephemeral_; // HTTP, for shutdown
};

} // namespace actorserve
