// The cache actor's messages (actors/cache_actor.h has the protocol, actors/interfaces.h its
// typed interface).
#pragma once

#include <caf/all.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "cache/request_key.h"
#include "cache/semantic_cache.h"

namespace actorserve {

using lookup_atom = caf::atom_constant<caf::atom("lookup")>;
using store_atom = caf::atom_constant<caf::atom("store")>;
using save_atom = caf::atom_constant<caf::atom("save")>;

struct cache_query {
    int64_t gen_id = 0;
    std::string prompt;                   // the rendered prompt (or the raw one)
    generation_params params;
    bool allow_sampled = false;           // the client opted a sampled request in
    bool semantic_ok = false;             // a first question: no earlier turns, one user message
    std::string system_prompt;            // with semantic_ok
    std::string question;                 // with semantic_ok: the user message
    bool debug = false;                   // the client asked which entry served it
};

struct cache_reply {
    enum kind_t : uint8_t { miss, exact, semantic, bypass } kind = miss;
    int64_t gen_id = 0;
    cached_answer answer;                 // exact, semantic
    float similarity = 0.0f;              // exact: 1; semantic: the cosine
    std::vector<float> vec;               // miss with semantic_ok: the question's embedding,
                                          // handed back with the store
    // With query.debug: the scope's id, the cached question of a semantic hit, or why not.
    std::string scope_id, cached_question, debug_refused;
};

struct cache_store {
    cache_query query;
    std::vector<float> vec;
    cached_answer answer;
};

} // namespace actorserve

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::cache_query)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::cache_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::cache_store)
