#include "actors/executor.h"

#include "actors/protocol.h"
#include "actors/step_runner.h"

namespace actorserve {

namespace {

caf::behavior cpu_executor(caf::event_based_actor *self, std::shared_ptr<const llama_model> model,
                           context_params params) {
    (void)self;
    // note: the runner (and its KV pool) is built here, on the executor's own thread, and is
    // only ever touched from it. `model` is captured so the weights outlive every step.
    auto runner = std::make_shared<step_runner>(*model, params);
    return {
        [model, runner](step_atom, const step_plan &plan) { return runner->run(plan); },
        [runner](release_atom, const std::vector<int64_t> &ids) { runner->forget(ids); },
    };
}

} // namespace

caf::actor spawn_cpu_executor(caf::actor_system &sys, std::shared_ptr<const llama_model> model,
                              const context_params &params) {
    return sys.spawn<caf::detached>(cpu_executor, std::move(model), params);
}

} // namespace actorserve
