// The scheduler actor: admits requests, forms every step's batch (continuous batching through
// scheduler_state), keeps one step in flight on the executor, and streams each sequence's
// tokens to the actor that submitted it.
//
//   (submit_atom, gen_request)   queue it; a gen_event with failed (and code, error) says why not
//   (cancel_atom, int64_t id)    end a request; its blocks are free before the next step
//   (cancel_atom, int64_t id, stop_atom)
//                                the same, for a stop string the session found: it ends (and
//                                is counted) as "stop", not "cancelled"
//   (tick_atom)                  internal: the batch-forming wait is over
//   (placement_atom, actor p)    with several devices: tell p the free KV blocks after every
//                                report (actors/placement.h)
//
// Backpressure: a submit beyond max_waiting queued requests, or arriving while the mailbox
// holds more than mailbox_limit messages, is answered at once with errc::overloaded and a
// retry hint; nothing queues without bound and nothing is dropped silently.
// A submitter that terminates has its requests cancelled (the scheduler monitors it).
#pragma once

#include <caf/all.hpp>

#include <chrono>
#include <functional>
#include <memory>

#include "actors/interfaces.h"
#include "scheduling/scheduler_state.h"

namespace actorserve {

struct scheduler_config {
    scheduler_settings sched;
    // Longest a request waits for others to join before the first step of an idle runtime.
    // note: this is the only wait; once steps run, requests join at the next step boundary
    // (continuous batching), unlike a static batcher that holds every batch for a window.
    std::chrono::milliseconds batch_wait{2};
    size_t mailbox_limit = 4096;
    int retry_after_ms = 1000;
    int device = 0;        // which device's executor it drives (metrics are kept per device)
};

scheduler_actor spawn_scheduler(caf::actor_system &sys, const scheduler_config &cfg, executor_actor executor,
                                metrics_actor metrics, std::function<bool(int32_t)> is_eog);

} // namespace actorserve
