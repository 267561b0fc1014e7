// The exact cache: an answer stored under (model, prompt, parameters), returned only for the
// same request again. LFU eviction with a TTL, limits in entries and bytes.
//
//   exact_cache c(limits);
//   auto key = exact_key::make("smollm2", rendered_prompt, params);
//   if (auto hit = c.lookup(key)) ... else { generate; c.insert(key, answer); }
//
// note: only deterministic (greedy) requests are cached unless the caller opts in
// (allow_sampled), since a sampled request asked twice is meant to get two answers.
// Not thread-safe: the cache actor owns it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "cache/lfu_ttl.h"
#include "store/persist.h"
#include "cache/request_key.h"

namespace actorserve {

struct exact_key {
    std::string canonical;     // "model\x1f<len>:prompt\x1fparams": the full key, compared on every hit
    hash128 hash;              // SipHash-128 of canonical
    bool deterministic = true; // greedy sampling

    static exact_key make(std::string_view model, std::string_view rendered_prompt, const generation_params &p);
};

struct exact_cache_stats {
    uint64_t lookups = 0, hits = 0, misses = 0;
    uint64_t skipped = 0;          // lookups and inserts refused as not cacheable (sampled, no opt-in)
    uint64_t inserts = 0;
    uint64_t evictions_lfu = 0;    // dropped for the entry or byte limit
    uint64_t evictions_ttl = 0;    // dropped because they expired
    size_t entries = 0, bytes = 0;
};

class exact_cache {
public:
    // note: per-entry bytes = key + text + finish_reason + kEntryOverhead (the maps, sets and
    // the node), so max_bytes bounds the cache's real memory to within a few percent.
    static constexpr size_t kEntryOverhead = 256;

    explicit exact_cache(cache_limits limits = {}, cache_clock clock = system_clock_ms);

    // The stored answer, or nullopt: not there, expired (and then dropped), or not cacheable.
    std::optional<cached_answer> lookup(const exact_key &key, bool allow_sampled = false);

    // Stores (or replaces) the answer, evicting expired entries first, then the least frequently
    // used, until it fits. An answer larger than max_bytes alone is not stored.
    insert_status insert(const exact_key &key, cached_answer answer, bool allow_sampled = false);

    bool erase(const exact_key &key);
    size_t purge_expired();   // drops every expired entry; returns how many
    void clear();

    const exact_cache_stats &stats() const { return stats_; }
    size_t size() const { return entries_.size(); }
    const cache_limits &limits() const { return limits_; }

    // Whole cache to/from one file (store/persist.h). load() replaces the contents; expired
    // entries are dropped; a bad file is set aside and the cache is left empty.
    bool save(const std::string &path, std::string &err) const;
    cache_load_report load(const std::string &path);

private:
    struct entry {
        exact_key key;
        cached_answer answer;
        size_t bytes = 0;
    };

    static size_t entry_bytes(const exact_key &k, const cached_answer &a) {
        return k.canonical.size() + a.text.size() + a.finish_reason.size() + kEntryOverhead;
    }
    uint64_t find_id(const exact_key &key) const;   // 0 when absent
    void drop(uint64_t id);
    bool evict_one_for_space(int64_t now);

    cache_limits limits_;
    cache_clock clock_;
    uint64_t next_id_ = 1;
    std::unordered_map<uint64_t, entry> entries_;           // id -> entry
    std::unordered_multimap<uint64_t, uint64_t> by_hash_;   // hash.lo -> id (several on a collision)
    lfu_ttl policy_;
    exact_cache_stats stats_;
};

} // namespace actorserve
