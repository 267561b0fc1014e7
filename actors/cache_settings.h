// What the runtime's answer caches are told at start-up (runtime_config::cache): the cache
// actor (actors/cache_actor.h) reads them.
#pragma once

#include <string>
#include <vector>

#include "cache/lfu_ttl.h"        // cache_limits
#include "cache/semantic_cache.h" // semantic_settings

namespace actorserve {

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
