// What each actor accepts, as CAF typed_actor interfaces: the compiler checks every send and
// request between the runtime's actors against them. The messages are in actors/protocol.h
// (sessions, schedulers, executors, metrics) and actors/cache_messages.h; the public ones, and
// their messages, in include/actorserve/ (metrics_source, chat_session, rag_actor).
//
// note: a typed actor may send only to typed handles. Whoever submits to a scheduler or asks the
// cache is untyped (a session, a test's scoped_actor); the receiver casts the sender to the sink
// interface below (gen_sink, cache_sink), which is what the protocol requires of it.
#pragma once

#include <caf/all.hpp>

#include <string>
#include <vector>

#include "actors/cache_messages.h"
#include "actors/protocol.h"
#include "include/actorserve/metrics.h"
#include "include/actorserve/rag_messages.h"

namespace actorserve {

// executor (actors/executor.h)
using executor_actor = caf::typed_actor<caf::replies_to<step_atom, step_plan>::with<step_result>,
                                        caf::reacts_to<release_atom, std::vector<int64_t>>>;

// metrics (actors/metrics.h): the public get, and the samples the other actors send it
using metrics_actor = metrics_source::extend<caf::reacts_to<metrics_sample>, caf::reacts_to<cache_metrics>,
                                             caf::reacts_to<rag_metrics>, caf::reacts_to<device_metrics>>;

// Who submits: it hears its requests' gen_events.
using gen_sink = caf::typed_actor<caf::reacts_to<gen_event>>;

// Where a session submits: the scheduler of its device, or the placement actor in front of
// several (the sender of a submit hears the gen_events).
using submit_target = caf::typed_actor<caf::reacts_to<submit_atom, gen_request>,
                                       caf::reacts_to<cancel_atom, int64_t>,
                                       caf::reacts_to<cancel_atom, int64_t, stop_atom>>;

// placement (actors/placement.h): a submit target that hears each scheduler's free KV blocks
using placement_actor = submit_target::extend<caf::reacts_to<kv_free_atom, int, int, int>>;

// scheduler (actors/scheduler.h)
using scheduler_actor = submit_target::extend<caf::reacts_to<tick_atom>,
                                              caf::reacts_to<placement_atom, placement_actor>,
                                              caf::replies_to<heartbeat_atom>::with<int64_t>>;

// Who asks the cache: it hears the cache_reply.
using cache_sink = caf::typed_actor<caf::reacts_to<cache_reply>>;

// cache (actors/cache_actor.h)
using cache_actor = caf::typed_actor<caf::reacts_to<lookup_atom, cache_query>, caf::reacts_to<store_atom, cache_store>,
                                     caf::reacts_to<save_atom>>;

// session (actors/session.h): what its client sends (chat_session, public), and what the
// scheduler and the cache answer it with
using session_actor = chat_session::extend<caf::reacts_to<gen_event>, caf::reacts_to<cache_reply>>;

// rag (actors/rag_actor.h): rag_actor, public, in include/actorserve/rag_messages.h

} // namespace actorserve
