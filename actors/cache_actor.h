// The cache actor: the answer caches (cache/exact_cache.h, cache/semantic_cache.h) in front of
// the scheduler. A session asks it before submitting; a hit is answered from the caches without
// touching an executor, a miss goes on to the scheduler and its answer is stored once complete.
//
//   session -> cache  (lookup_atom, cache_query)    => cache_reply (sent back, never dropped)
//   session -> cache  (store_atom, cache_store)     a finished answer ("stop" or "length")
//   cache   -> self   (save_atom)                   every settings.save_interval_s, if changed
//   cache   -> metrics cache_metrics                after every lookup and store
//
// Exact: the rendered prompt (whitespace normalised), the model and every parameter that can
// change the answer. Semantic: only a first question (no earlier turns), looked up by the
// meaning of its last user message within the scope model + system prompt + parameters, and
// passed by the near-miss guard.
//
// Backpressure: the actor has its own thread (embedding a question takes milliseconds) and a
// mailbox limit. Over the limit a lookup is answered at once with `bypass` (the request goes on
// to the scheduler, which has its own limits) and a store is dropped; both are counted in the
// metrics, never silent. The caches are saved to settings.dir on that interval and when the
// actor exits; a corrupt file found at start-up is set aside (store/persist.h).
#pragma once

#include <caf/all.hpp>

#include <memory>
#include <string>
#include <vector>

#include "actors/cache_messages.h"
#include "include/actorserve/cache_settings.h"
#include "actors/interfaces.h"

namespace actorserve {

// Built by the runtime: loads the saved caches and the embedding model (what it did goes to
// `notes`, one line each, for the log) and spawns the actor on its own thread.
cache_actor spawn_cache(caf::actor_system &sys, const cache_settings &s, const std::string &model_name,
                        metrics_actor metrics, std::vector<std::string> &notes);

} // namespace actorserve
