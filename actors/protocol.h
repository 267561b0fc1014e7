// Messages between the runtime's own actors (sessions, scheduler, executor, metrics).
//
//   session   -> scheduler  (submit_atom, gen_request)      queue a generation
//   session   -> scheduler  (cancel_atom, int64_t id)       end it wherever it is
//   scheduler -> session    gen_event                       tokens of a step, or the end
//   scheduler -> executor   (step_atom, step_plan)          => step_result  (one in flight)
//   scheduler -> executor   (release_atom, vector<int64_t>) forget ended sequences
//   scheduler -> self       (tick_atom)                     a batch has had time to form
//   watchdog  -> scheduler  (heartbeat_atom)                => int64_t: ms the step in flight has run (0: none)
//   scheduler -> metrics    metrics_sample                  after every step
//   executor  -> metrics    device_metrics                  at start, then every few seconds
//   scheduler -> placement  (kv_free_atom, int device, int free_blocks, int waiting)
//                                                           with several devices, after every report
//   anyone    -> metrics    (get_atom)                      => metrics_snapshot
//   cache     -> metrics    cache_metrics                   after every lookup and store
//   rag       -> metrics    rag_metrics                     after every search and change
//
// The cache and RAG actors' messages are in actors/cache_messages.h and include/actorserve/rag_messages.h;
// actors/interfaces.h is this table as the compiler sees it: each actor's typed interface.
#pragma once

#include <caf/all.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "scheduling/scheduler_state.h"
#include "scheduling/step_runner.h"
#include "include/actorserve/messages.h"
#include "include/actorserve/metrics.h"

namespace actorserve {

using submit_atom = caf::atom_constant<caf::atom("submit")>;
using step_atom = caf::atom_constant<caf::atom("step")>;
using release_atom = caf::atom_constant<caf::atom("release")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;
using kv_free_atom = caf::atom_constant<caf::atom("kvfree")>;
using placement_atom = caf::atom_constant<caf::atom("placement")>;
using stop_atom = caf::atom_constant<caf::atom("stop")>;
using heartbeat_atom = caf::atom_constant<caf::atom("heartbeat")>;

// Scheduler -> session: what one step (or a rejection) meant for one request.
struct gen_event {
    int64_t id = 0;
    std::vector<int32_t> tokens;        // sampled this step (at most one today)
    std::vector<token_logprobs> logprobs; // one per token, when the request asked (gen_request::logprobs)
    std::optional<finish_reason> finish; // the request ended, and why
    bool failed = false;                // or it ended without an answer: refused at submit, or
                                        // its step failed; code and error say which
    int n_prompt = 0, n_cached = 0, n_generated = 0; // with finish
    errc code = errc::internal;         // with failed
    std::string error;                  // with failed
    int retry_after_ms = 0;
    bool ended() const { return finish || failed; }
};

struct metrics_sample {
    int device = 0;                     // the reporting scheduler's device, in runtime order
    double step_ms = 0.0;
    int batch_seqs = 0;
    int generated = 0;                  // tokens delivered this step
    int queue_depth = 0, running = 0;
    int kv_used = 0, kv_total = 0, kv_cached = 0;
    scheduler_counts counts;
    std::vector<double> ttft_ms;        // requests that got their first token this step
    std::vector<double> itl_ms;         // gaps between consecutive tokens of a request
    std::vector<double> queue_ms;       // requests admitted for the first time: submit to admission
    std::vector<double> e2e_ms;         // requests that ended: submit to end
};

} // namespace actorserve

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::gen_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::gen_event)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::step_plan)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::step_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::metrics_sample)
