// Per-key limits (docs/policy.md, "Per-key limits and priorities"): what a line of the API keys
// file may add after the key, and the limiter that enforces it.
//
//   sk-team-a  id=team-a rpm=60 tpm=20000 concurrent=4 priority=interactive
//   sk-nightly id=nightly priority=batch
//
// rpm: generation requests started in the last 60 s; tpm: prompt + completion tokens of the
// requests that ended in the last 60 s (a request is refused while that sum is at the limit, so
// one request may take it past); concurrent: requests running at once. 0 or absent: no limit.
// Over a limit the request is refused with rate_limited (429), the limit named and Retry-After
// the time until the window lets one more in.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "include/actorserve/priority.h"

namespace actorserve {

struct key_settings {
    std::string id;      // what logs and /metrics call the key; default "key:<n>" (n from 0)
    int rpm = 0, tpm = 0, concurrent = 0;
    priority_class priority = priority_class::standard;
};

// Parses the settings after a key ("rpm=60 priority=batch"). False with err naming the setting.
bool parse_key_settings(std::string_view text, key_settings &out, std::string &err);

enum class key_limit : uint8_t { rpm = 0, tpm = 1, concurrent = 2 };
inline constexpr int kKeyLimits = 3;
constexpr std::string_view name(key_limit l) {
    return l == key_limit::rpm ? "rpm" : l == key_limit::tpm ? "tpm" : "concurrent";
}

class key_limiter {
public:
    using clock = std::chrono::steady_clock;

    explicit key_limiter(std::vector<key_settings> keys);

    struct refusal {
        key_limit limit;
        std::string message;  // names the key's id, the limit and its value
        int retry_after_ms;   // >= 1
    };
    // A request of key `key` starts: refused, or counted (rpm) and holding a place (concurrent)
    // until finish(). concurrent_retry_ms: the hint when the concurrency limit refuses (no window
    // says when a running request ends).
    std::optional<refusal> admit(size_t key, clock::time_point now, int concurrent_retry_ms = 1000);
    // It ended, having used `tokens` (prompt + completion).
    void finish(size_t key, int64_t tokens, clock::time_point now);

    size_t size() const { return keys_.size(); }
    const key_settings &settings(size_t key) const { return keys_[key].cfg; }
    // Refusals of key `key` by limit, since start.
    uint64_t refused(size_t key, key_limit l) const;
    int running(size_t key) const;

private:
    struct state {
        key_settings cfg;
        std::deque<clock::time_point> started;                  // rpm window
        std::deque<std::pair<clock::time_point, int64_t>> used; // tpm window
        int64_t used_sum = 0;
        int running = 0;
        uint64_t refused[kKeyLimits] = {};
    };
    void expire(state &s, clock::time_point now);

    mutable std::mutex mu_;
    std::vector<state> keys_;
};

} // namespace actorserve
