// Which CUDA devices this process sees, and what one of them holds.
#include <cuda_runtime.h>

#include <filesystem>

#include "gpu/cuda_check.h"
#include "gpu/gpu_context.h"

namespace actorserve {

int gpu_device_count(std::string &why) {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ")";
        // Without a driver at all the runtime says the driver is too old; say what is missing.
        std::error_code ec;
        if (e == cudaErrorInsufficientDriver && !std::filesystem::exists("/proc/driver/nvidia/version", ec))
            why = "no NVIDIA driver is loaded (/proc/driver/nvidia/version does not exist; " + why + ")";
        return 0;
    }
    if (n <= 0) {
        why = "cudaGetDeviceCount: no CUDA-capable device is detected";
        return 0;
    }
    return n;
}

// note: leaves `device` current on the calling thread. Restoring the previous one could create
// a context on a device nobody asked for (cudaSetDevice initializes it), and every gpu_context
// method selects its own device first anyway.
bool gpu_device_query(int device, gpu_device_info &info, std::string &err) {
    std::string why;
    const int n = gpu_device_count(why);
    if (device < 0 || device >= n) {
        err = "GPU " + std::to_string(device) + ": no such device (" +
              (n == 0 ? why : std::to_string(n) + " visible") + ")";
        return false;
    }
    cudaDeviceProp prop{};
    if (!cuda_ok(cudaGetDeviceProperties(&prop, device), device, "cudaGetDeviceProperties", err)) return false;
    if (!cuda_ok(cudaSetDevice(device), device, "cudaSetDevice", err)) return false;
    size_t free_bytes = 0, total_bytes = 0;
    if (!cuda_ok(cudaMemGetInfo(&free_bytes, &total_bytes), device, "cudaMemGetInfo", err)) return false;
    info.index = device;
    info.name = prop.name;
    info.cc_major = prop.major;
    info.cc_minor = prop.minor;
    info.total_bytes = total_bytes;
    info.free_bytes = free_bytes;
    return true;
}

} // namespace actorserve
