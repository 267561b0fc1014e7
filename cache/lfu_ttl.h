// Eviction bookkeeping shared by the exact and the semantic cache: least frequently used first,
// least recently used among equals, and a time to live per entry.
//
// note: the policy knows entries only by their 64-bit id; the cache owning it keeps the entries
// and calls erase() whenever it drops one, so the two always hold the same ids.
// cost: O(log n) per insert, touch, erase and victim (two ordered sets); memory ~150 bytes per id.
// Not thread-safe: each cache is owned by one actor.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "include/actorserve/cache_settings.h" // cache_limits

namespace actorserve {

// Milliseconds since the Unix epoch. Wall time, not steady time: expiry times are written to
// disk and must mean the same after a restart. Tests inject their own.
using cache_clock = std::function<int64_t()>;

inline int64_t system_clock_ms() {
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

class lfu_ttl {
public:
    struct meta {
        uint64_t freq = 0;      // 1 at insert, +1 per hit
        uint64_t tick = 0;      // last use, from a counter (larger = more recent)
        int64_t expires_ms = 0; // expired when now >= expires_ms; INT64_MAX: never
    };

    void insert(uint64_t id, int64_t expires_ms, uint64_t freq = 1) {
        meta m{freq, ++tick_, expires_ms};
        meta_[id] = m;
        order_.emplace(m.freq, m.tick, id);
        expiry_.emplace(m.expires_ms, id);
    }

    // A hit: one more use, and the most recent.
    void touch(uint64_t id) {
        auto it = meta_.find(id);
        if (it == meta_.end()) return;
        order_.erase({it->second.freq, it->second.tick, id});
        it->second.freq += 1;
        it->second.tick = ++tick_;
        order_.emplace(it->second.freq, it->second.tick, id);
    }

    void erase(uint64_t id) {
        auto it = meta_.find(id);
        if (it == meta_.end()) return;
        order_.erase({it->second.freq, it->second.tick, id});
        expiry_.erase({it->second.expires_ms, id});
        meta_.erase(it);
    }

    // The entry to evict for space: lowest use count, least recently used among those.
    std::optional<uint64_t> victim() const {
        if (order_.empty()) return std::nullopt;
        return std::get<2>(*order_.begin());
    }

    // The entry that expires first, if it has expired by `now_ms`.
    std::optional<uint64_t> first_expired(int64_t now_ms) const {
        if (expiry_.empty() || expiry_.begin()->first > now_ms) return std::nullopt;
        return expiry_.begin()->second;
    }

    bool expired(uint64_t id, int64_t now_ms) const {
        auto it = meta_.find(id);
        return it != meta_.end() && now_ms >= it->second.expires_ms;
    }

    const meta *find(uint64_t id) const {
        auto it = meta_.find(id);
        return it == meta_.end() ? nullptr : &it->second;
    }

    size_t size() const { return meta_.size(); }

    void clear() {
        meta_.clear();
        order_.clear();
        expiry_.clear();
    }

private:
    uint64_t tick_ = 0;
    std::unordered_map<uint64_t, meta> meta_;
    std::set<std::tuple<uint64_t, uint64_t, uint64_t>> order_;  // (freq, tick, id), victim first
    std::set<std::pair<int64_t, uint64_t>> expiry_;             // (expires_ms, id), soonest first
};

inline int64_t expiry_after(int64_t now_ms, int64_t ttl_ms) {
    return ttl_ms <= 0 ? INT64_MAX : now_ms + ttl_ms;
}

} // namespace actorserve
