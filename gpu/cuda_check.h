// CUDA and cuBLAS status codes turned into messages that name the device and the call, e.g.
// "GPU 0: cudaMalloc (KV cache): out of memory". The GPU API never throws: its functions return
// false or nullptr and hand such a message back in err.
#pragma once

#include <string>
#include <string_view>

#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace actorserve {

inline std::string cuda_error_text(int device, std::string_view call, cudaError_t e) {
    return "GPU " + std::to_string(device) + ": " + std::string(call) + ": " + cudaGetErrorString(e) + " (" +
           cudaGetErrorName(e) + ")";
}

inline std::string cublas_error_text(int device, std::string_view call, cublasStatus_t s) {
    return "GPU " + std::to_string(device) + ": " + std::string(call) + ": " + cublasGetStatusString(s);
}

// True on cudaSuccess; otherwise err describes the failure. The runtime's last-error slot is
// cleared too, so that a later cudaGetLastError() after a kernel launch does not report this
// failure again (sticky errors, which end the context, stay whatever we do).
inline bool cuda_ok(cudaError_t e, int device, std::string_view call, std::string &err) {
    if (e == cudaSuccess) return true;
    (void)cudaGetLastError();
    err = cuda_error_text(device, call, e);
    return false;
}

inline bool cublas_ok(cublasStatus_t s, int device, std::string_view call, std::string &err) {
    if (s == CUBLAS_STATUS_SUCCESS) return true;
    err = cublas_error_text(device, call, s);
    return false;
}

} // namespace actorserve
