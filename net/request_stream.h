// One request's events, kept in order so that any connection can read them from any point: the
// basis of resume. The relay actor appends (its thread); connections read by index (their
// strands). Event i of the log is the event with event_id i on the wire.
//
// A stream has at most one follower: the connection its events go to, represented by that
// connection's stream_waker (net/stream_waker.h). append() wakes it; the connection then reads
// what it has not sent yet. A new follower (resume) replaces the old one,
// which notices on its next read and stops.
#pragma once

#include <caf/all.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "include/actorserve/messages.h"

namespace actorserve {

struct stream_event {
    enum kind_t : uint8_t { start, token, done, error } kind = start;
    std::string text;               // token: the delta; done: the whole answer
    actorserve::finish_reason finish_reason = actorserve::finish_reason::stop; // done
    chat_usage usage;               // done
    double ttft_ms = 0, total_ms = 0; // done
    errc code = errc::internal;     // error
    std::string message;            // error
    int retry_after_ms = 0;         // error
    std::string cached;             // done: "exact" or "semantic" when the caches answered
    float similarity = 0.0f;        // done, with cached
    std::vector<rag_source> sources; // done, with rag: the passages the prompt gave, numbered
    std::string cache_scope, cached_question, cache_debug_refused; // done, with cache_debug
    std::vector<token_logprob> logprobs; // token: its tokens'; done: every token's (chat_request::logprobs)
    size_t text_offset = 0;         // token: bytes of the answer before this delta
    // OpenAI's n > 1 (net/relay.h): the choice a token event belongs to; choice_end: that
    // choice ended, with what a done event holds for it (text, finish_reason, usage, logprobs).
    int choice = 0;
    bool choice_end = false;
    // done: what the dynamic temperature chose (policy/temperature_policy.h); kind empty: nothing
    // (the request set its temperature, or the policy is off)
    struct policy_outcome {
        std::string kind;         // factual, code, creative, chat; "unclassified": no vector came
        float temperature = 0, top_p = 0, similarity = 0;
    } policy;
    // done: what the prompt-injection guard saw (policy/injection_guard.h); checked false: it
    // did not run (off)
    struct guard_outcome {
        bool checked = false, flagged = false;
        float score = 0;
        std::vector<std::string> reasons;
    } guard;
    bool ends() const { return kind == done || kind == error; }
};

// Whoever sends a stream's events somewhere: told (on any thread) that more have arrived.
class stream_follower {
public:
    virtual ~stream_follower() = default;
    virtual void on_events(const std::string &request_id) = 0;
};

class request_stream {
public:
    using clock = std::chrono::steady_clock;

    // owner: the principal it belongs to (net/chat_service.h, caller); empty for HTTP requests.
    request_stream(std::string request_id, std::string session_id, std::string owner = {})
        : request_id_(std::move(request_id)), session_id_(std::move(session_id)), owner_(std::move(owner)),
          created_(clock::now()), unfollowed_since_(created_) {}

    const std::string &request_id() const { return request_id_; }
    const std::string &session_id() const { return session_id_; }
    const std::string &owner() const { return owner_; }
    // What the start event shows its owner for resume from another connection: the connection
    // secret when the owner is one; empty when it is an API key (the key itself is the proof).
    std::string_view resume_token() const {
        return owner_.rfind("conn:", 0) == 0 ? std::string_view(owner_).substr(5) : std::string_view();
    }
    clock::time_point created() const { return created_; }

    void append(stream_event e);

    // An OpenAI stream's rendering (chat or text completion, usage chunk, response id), so that
    // a connection that resumes it renders its events as the first did. Unset: a WebSocket one.
    struct openai_info {
        bool chat = true;
        bool include_usage = false;
        int n = 1;                 // choices
        bool tool_call = false;    // answered as tool_calls (net/openai_tools.h)
        int logprobs = -1;         // chat_request::logprobs
        std::string response_id;
        // A response of the Responses API (net/responses_api.h), and what its object shows.
        bool responses = false;
        int64_t created_at = 0;
        int max_output_tokens = 0;
        float temperature = 1.0f, top_p = 1.0f;
        bool background = false;
        // Cancelled when nobody has followed it this long (a stream whose client left and did
        // not resume: server.sse_resume_grace_s); -1: only sessions.retention_s ends it.
        int grace_s = -1;
    };
    // Every event so far, whoever follows (a retrieved response's object).
    std::vector<stream_event> snapshot() const;
    void set_openai(openai_info i);
    std::optional<openai_info> openai() const;

    // Copies events [from, end) into out; returns the index after the last copied. Does nothing
    // and returns `from` when `who` is no longer the follower.
    size_t read(size_t from, const stream_follower *who, std::vector<stream_event> &out) const;

    // The follower from now on, replacing any other.
    void follow(std::weak_ptr<stream_follower> who);
    // `who` stops following (its connection closed); a no-op when someone else follows now.
    void unfollow(const stream_follower *who);

    bool ended() const;
    // A cancel was sent (chat_service::cancel) and the end it causes may not have come yet.
    void mark_cancelling() { cancelling_ = true; }
    bool cancelling() const { return cancelling_; }
    size_t size() const; // events appended so far
    // Nobody has followed it since this time (nullopt: followed now).
    std::optional<clock::time_point> unfollowed_since() const;
    size_t bytes() const;

    // Called once, on the thread that appends it, with the event that ends the request (set
    // before the relay starts): the per-key limits and the request log hear of the end there.
    void set_on_end(std::function<void(const stream_event &)> f) { on_end_ = std::move(f); }

    // The relay actor that turns the session's answers into events; cancel goes through it.
    void set_relay(caf::actor a) { relay_ = std::move(a); }
    const caf::actor &relay() const { return relay_; }

private:
    const std::string request_id_, session_id_, owner_;
    const clock::time_point created_;
    caf::actor relay_; // set once, before any other thread sees the stream
    std::function<void(const stream_event &)> on_end_; // likewise
    mutable std::mutex mu_;
    std::vector<stream_event> events_;
    size_t bytes_ = 0;
    bool ended_ = false;
    clock::time_point ended_at_{};
    std::weak_ptr<stream_follower> follower_;
    mutable const stream_follower *follower_raw_ = nullptr; // identity of follower_, for read()
    mutable clock::time_point unfollowed_since_;
    std::optional<openai_info> openai_;
    std::atomic<bool> cancelling_{false};
};

} // namespace actorserve
