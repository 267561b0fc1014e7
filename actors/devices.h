// Which devices the runtime runs on, from the `devices` setting, and the decoder (forward pass
// with its KV pool) each one gets.
//
//   "auto"        every visible CUDA device; the CPU when there is none (a note says why)
//   "cpu"         the CPU engine only
//   "0,1"         these CUDA devices ("cuda:0,cuda:1" is the same); one that cannot be opened
//                 is an error, never a silent fall-back to the CPU
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/decoder.h"
#include "engine/forward.h"
#include "include/actorserve/metrics.h"

namespace actorserve {

struct device_choice {
    bool gpu = false;
    int index = 0; // CUDA device index when gpu
    std::string name() const { return gpu ? "cuda:" + std::to_string(index) : "cpu"; }
};

// The devices a spec names; nullopt with err for a malformed spec or a device index out of
// range. notes gets what an operator should read (e.g. "no CUDA device (...): running on the CPU").
std::optional<std::vector<device_choice>> resolve_devices(const std::string &spec, std::vector<std::string> &notes,
                                                          std::string &err);

// A decoder for the device: llama_context on the CPU, gpu_context on a GPU (weights uploaded
// now). nullptr with err naming the device and the problem.
std::unique_ptr<batch_decoder> open_decoder(const device_choice &d, const llama_model &model,
                                            const context_params &params, std::string &err);

// What the device's decoder holds, and the device's memory as it is now (GPU: cudaMemGetInfo).
device_metrics probe_device(const device_choice &d, const batch_decoder &ctx);

} // namespace actorserve
