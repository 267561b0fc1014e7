// The executor: one per device. It owns its engine context (weights in use, the KV pool and
// the per-sequence samplers) and runs each planned step on its own thread — it is spawned
// detached, so a step that takes 100 ms blocks no CAF worker and no other actor.
//
//   (step_atom, step_plan)          => step_result   (the scheduler keeps one in flight)
//   (release_atom, vector<int64_t>)                  forget ended sequences
//
// The GPU executors speak the same two messages.
#pragma once

#include <caf/all.hpp>

#include <memory>

#include "engine/forward.h"
#include "engine/model.h"

namespace actorserve {

// params: pool mode (n_kv_blocks > 0); see step_runner.
caf::actor spawn_cpu_executor(caf::actor_system &sys, std::shared_ptr<const llama_model> model,
                              const context_params &params);

} // namespace actorserve
