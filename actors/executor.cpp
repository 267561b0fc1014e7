#include "actors/executor.h"

#include <chrono>

#include "actors/protocol.h"
#include "scheduling/step_runner.h"

namespace actorserve {

namespace {

constexpr auto k_probe_every = std::chrono::seconds(5);

struct executor_st {
    executor_st() = default;
    std::shared_ptr<const llama_model> model; // outlives every step
    std::unique_ptr<step_runner> runner;
    device_choice device;
    metrics_actor metrics;
    std::chrono::steady_clock::time_point probed;
};

using self_ptr = executor_actor::stateful_pointer<executor_st>;

void probe(self_ptr self) {
    auto &st = self->state;
    if (!st.metrics) return;
    st.probed = std::chrono::steady_clock::now();
    self->send(st.metrics, probe_device(st.device, st.runner->context()));
}

// note: the decoder was built by the runtime and handed over at spawn; from here on it is only
// ever touched from this actor's own thread.
executor_actor::behavior_type executor(self_ptr self, std::shared_ptr<const llama_model> model,
                                       std::shared_ptr<std::unique_ptr<batch_decoder>> ctx, int n_batch,
                                       device_choice device, metrics_actor metrics) {
    auto &st = self->state;
    st.model = std::move(model);
    st.runner = std::make_unique<step_runner>(std::move(*ctx), n_batch);
    st.device = device;
    st.metrics = std::move(metrics);
    probe(self);
    return {
        [self](step_atom, const step_plan &plan) {
            step_result r = self->state.runner->run(plan);
            if (std::chrono::steady_clock::now() - self->state.probed > k_probe_every) probe(self);
            return r;
        },
        [self](release_atom, const std::vector<int64_t> &ids) { self->state.runner->forget(ids); },
    };
}

} // namespace

executor_actor spawn_executor(caf::actor_system &sys, std::shared_ptr<const llama_model> model,
                              std::unique_ptr<batch_decoder> ctx, int n_batch, device_choice device,
                              metrics_actor metrics) {
    // A message argument must be copyable: the unique decoder travels inside a shared_ptr.
    auto box = std::make_shared<std::unique_ptr<batch_decoder>>(std::move(ctx));
    return sys.spawn<caf::detached>(executor, std::move(model), std::move(box), n_batch, device, std::move(metrics));
}

} // namespace actorserve
