// What the runtime's answer caches are told at start-up (runtime_config::cache): the limits
// of the exact cache (cache/exact_cache.h, evicting by cache/lfu_ttl.h), the semantic cache's
// settings (cache/semantic_cache.h) and the cache actor's own (actors/cache_actor.h).
// Standard library only, like include/actorserve/sampling.h: the cache layer includes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace actorserve {

class wordnet; // cache/wordnet.h

struct cache_limits {
    size_t max_entries = 100000;
    size_t max_bytes = size_t{512} << 20;          // 512 MiB, as counted by each cache's entry_bytes
    int64_t ttl_ms = int64_t{24} * 3600 * 1000;    // 24 h; <= 0: entries never expire
};

// Chosen by bench/cache_eval on tests/cache/eval_set.jsonl with all-MiniLM-L6-v2: the lowest
// threshold at which no near miss of the set is served with the guard on (docs/cache.md).
inline constexpr float kDefaultSemanticThreshold = 0.78f;

enum class semantic_index_kind { flat, hnsw };

struct semantic_settings {
    int dim = 384;                        // all-MiniLM-L6-v2
    float threshold = kDefaultSemanticThreshold;
    bool guard = true;                    // apply the near-miss guard to candidates
    // WordNet for the guard's antonym check; when null and the guard is on, the cache takes
    // wordnet::system() (lexicon_note() says when that is absent).
    std::shared_ptr<const wordnet> lexicon;
    int top_k = 4;                        // candidates above the threshold offered to the guard
    semantic_index_kind index = semantic_index_kind::flat;
    int hnsw_m = 32;                      // graph degree
    int hnsw_ef_construction = 64;
    int hnsw_ef_search = 64;              // raised to k when k is larger
    size_t hnsw_rebuild_min = 64;
    float hnsw_rebuild_fraction = 0.125f;
    cache_limits limits;
};

struct cache_settings {
    bool enabled = false;                 // the runtime API: off unless asked (the server turns it on)
    cache_limits exact;                   // entries, bytes, TTL of the exact cache
    bool semantic = true;                 // needs embed_model_dir
    semantic_settings sem;                // threshold, index kind, guard, limits
    std::string embed_model_dir = "models/all-MiniLM-L6-v2";
    // Threads the cache actor's embedder runs on, its own one included: a question embeds in
    // about 5 ms on one Zen 4 core and 2.7 ms on two while questions come back to back, but on
    // a 2-vCPU VM a second thread that went to sleep between questions woke late (P99 41 ms
    // after 50 ms idle), so one is the default (docs/cache.md, "Latency").
    int embed_threads = 1;
    // Scope ids (semantic_scope_id: model and system prompt) whose requests get exact hits only.
    std::vector<std::string> semantic_off;
    bool debug_hits = false;              // a request's cache_debug may see the cached question
    std::string dir;                      // where the caches persist; "": memory only
    int save_interval_s = 60;
    size_t mailbox_limit = 1024;
};

} // namespace actorserve
