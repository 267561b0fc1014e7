// The GPU API in a build without the CUDA backend (ACTORSERVE_CUDA=OFF): there are no devices,
// and every question is answered with that reason, so the runtime and the tools need no #ifdef.
#include "gpu/gpu_context.h"

namespace actorserve {

namespace {
constexpr const char *k_no_cuda =
    "this build has no CUDA backend (configure with -DACTORSERVE_CUDA=ON where the CUDA toolkit is installed)";
}

int gpu_device_count(std::string &why) {
    why = k_no_cuda;
    return 0;
}

bool gpu_device_query(int device, gpu_device_info &, std::string &err) {
    err = "GPU " + std::to_string(device) + ": " + k_no_cuda;
    return false;
}

struct gpu_context::impl {};

std::unique_ptr<gpu_context> gpu_context::create(const llama_model &, const context_params &, int device,
                                                 std::string &err) {
    err = "GPU " + std::to_string(device) + ": " + k_no_cuda;
    return nullptr;
}

// Never reached: create() returns no context in this build.
gpu_context::gpu_context(std::unique_ptr<impl> p) : p_(std::move(p)) {}
gpu_context::~gpu_context() = default;
bool gpu_context::decode(std::span<const batch_token>, std::string &err) {
    err = k_no_cuda;
    return false;
}
const float *gpu_context::logits(size_t) const { return nullptr; }
void gpu_context::set_blocks(int, std::span<const int32_t>, int) {}
void gpu_context::clear(int) {}
int gpu_context::n_past(int) const { return 0; }
const llama_model &gpu_context::model() const { std::abort(); }
int gpu_context::n_vocab() const { std::abort(); }
bool gpu_context::eval(std::span<const int32_t>, std::string &err) {
    err = k_no_cuda;
    return false;
}
void gpu_context::truncate(int, int) {}
int gpu_context::device() const { return -1; }
void gpu_context::use_graphs(bool) {}
bool gpu_context::graphs_in_use() const { return false; }
int gpu_context::kv_block_size() const { return 0; }
int gpu_context::n_kv_blocks() const { return 0; }
size_t gpu_context::weight_bytes() const { return 0; }
size_t gpu_context::kv_bytes() const { return 0; }
size_t gpu_context::scratch_bytes() const { return 0; }

} // namespace actorserve
