// The metrics actor: folds the scheduler's per-step samples into counters, gauges and
// histograms and answers (get_atom) with a metrics_snapshot. Cheap: O(samples) per step.
#pragma once

#include <caf/all.hpp>

#include <chrono>

#include "actors/interfaces.h"

namespace actorserve {

// tokens_per_s is measured over the last `rate_window`.
// note: CAF 0.17.6 binds a reference through a null pointer when a function-based actor is
// spawned with no arguments (UBSan reports it), so every actor here takes at least one.
metrics_actor spawn_metrics(caf::actor_system &sys, std::chrono::milliseconds rate_window);

} // namespace actorserve
