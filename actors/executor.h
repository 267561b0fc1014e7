// The executor: one per device (the CPU, or each GPU of --devices). It owns its decoder (weights
// in use, the KV pool) and the per-sequence samplers, and runs each planned step on its own
// thread: it is spawned detached, so a step that takes 100 ms blocks no CAF worker and no other
// actor. The CPU and GPU executors are the same actor around a different decoder
// (engine/decoder.h), so the scheduler does not care where a step runs.
//
//   (step_atom, step_plan)          => step_result   (the scheduler keeps one in flight)
//   (release_atom, vector<int64_t>)                  forget ended sequences
//
// It reports its device (device_metrics) to the metrics actor when it starts and, after a step,
// at most every few seconds.
#pragma once

#include <caf/all.hpp>

#include <memory>

#include "actors/devices.h"
#include "actors/interfaces.h"
#include "engine/forward.h"
#include "engine/model.h"

namespace actorserve {

// ctx: built for pool mode (n_kv_blocks > 0) with n_batch >= the scheduler's step_tokens; see
// step_runner. `model` is kept alive as long as the executor.
executor_actor spawn_executor(caf::actor_system &sys, std::shared_ptr<const llama_model> model,
                              std::unique_ptr<batch_decoder> ctx, int n_batch, device_choice device,
                              metrics_actor metrics);

} // namespace actorserve
