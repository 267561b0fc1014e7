#include "actors/placement.h"

#include "actors/protocol.h"
#include "actors/scheduler.h"

namespace actorserve {

size_t choose_device(const std::vector<placement_view> &devices) {
    size_t best = 0;
    for (size_t i = 1; i < devices.size(); ++i) {
        const placement_view &a = devices[i], &b = devices[best];
        if (a.free_blocks > b.free_blocks || (a.free_blocks == b.free_blocks && a.waiting < b.waiting)) best = i;
    }
    return best;
}

namespace {

struct placement_st {
    placement_st() = default;
    std::vector<submit_target> schedulers;
    std::vector<placement_view> view;
    int block_size = 32;
};

using self_ptr = placement_actor::stateful_pointer<placement_st>;

placement_actor::behavior_type placement_impl(self_ptr self, std::vector<submit_target> schedulers,
                                              std::vector<int> kv_blocks, int block_size) {
    auto &st = self->state;
    st.schedulers = std::move(schedulers);
    st.block_size = block_size;
    for (int b : kv_blocks) st.view.push_back({b, 0});
    // A scheduler that dies takes its device's requests with it; the sessions see it through
    // their own monitor of this actor, which ends with it.
    for (const submit_target &s : st.schedulers) self->link_to(s);
    return {
        [self](submit_atom a, gen_request &r) {
            auto &s = self->state;
            const size_t d = choose_device(s.view);
            // Until the device reports again, count this request's blocks as taken there.
            const int64_t tokens = static_cast<int64_t>(r.prompt.size()) + r.max_tokens;
            s.view[d].free_blocks -= static_cast<int>((tokens + s.block_size - 1) / s.block_size);
            ++s.view[d].waiting;
            self->delegate(s.schedulers[d], a, std::move(r));
        },
        [self](cancel_atom a, int64_t id) {
            for (const submit_target &s : self->state.schedulers) self->send(s, a, id);
        },
        [self](cancel_atom a, int64_t id, stop_atom b) {
            for (const submit_target &s : self->state.schedulers) self->send(s, a, id, b);
        },
        [self](kv_free_atom, int device, int free_blocks, int waiting) {
            auto &v = self->state.view;
            if (device < 0 || static_cast<size_t>(device) >= v.size()) return;
            v[static_cast<size_t>(device)] = {free_blocks, waiting};
        },
    };
}

} // namespace

placement_actor spawn_placement(caf::actor_system &sys, std::vector<submit_target> schedulers,
                                std::vector<int> kv_blocks, int block_size) {
    return sys.spawn(placement_impl, std::move(schedulers), std::move(kv_blocks), block_size);
}

} // namespace actorserve
