// The metrics actor: folds the scheduler's per-step samples into counters, gauges and
// histograms and answers (get_atom) with a metrics_snapshot. Cheap: O(samples) per step.
#pragma once

#include <caf/all.hpp>

namespace actorserve {

caf::behavior metrics_actor(caf::event_based_actor *self);

} // namespace actorserve
