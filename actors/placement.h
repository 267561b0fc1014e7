// Placement across devices: with more than one device the runtime runs one scheduler per
// device (each with its own executor and KV pool), and sessions talk to this actor instead.
//
//   (submit_atom, gen_request)        forwarded (sender kept, so the tokens flow straight from
//                                     that scheduler to the session) to the device with the most
//                                     free KV blocks, net of what was placed there since its
//                                     last report; ties go to the shorter queue, then the lower index
//   (cancel_atom, id [, stop_atom])   to every scheduler: only the one holding it acts
//   (kv_free_atom, device, free, waiting)  a scheduler's report after each step
//
// note: a sequence stays on its device for its whole life, preemption included: KV does not
// move between devices.
#pragma once

#include <caf/all.hpp>

#include <vector>

#include "actors/interfaces.h"

namespace actorserve {

// schedulers[i] drives device i, whose pool holds kv_blocks[i] blocks of block_size positions.
placement_actor spawn_placement(caf::actor_system &sys, std::vector<submit_target> schedulers,
                                std::vector<int> kv_blocks, int block_size);

// The choice alone (no CAF), for tests: index of the device to place a request on.
struct placement_view {
    int free_blocks = 0; // as last reported, minus the estimate of what was placed since
    int waiting = 0;
};
size_t choose_device(const std::vector<placement_view> &devices);

} // namespace actorserve
