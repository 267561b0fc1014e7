// libFuzzer target: the safetensors reader (engine/safetensors.h) on any bytes. Every tensor it
// accepts has its first and last byte read, so a header that points outside the file is caught
// by AddressSanitizer rather than later, in the embedder.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    std::string err;
    auto file = actorserve::safetensors_file::from_memory(data, size, "fuzz.safetensors", err);
    if (!file) return 0;
    volatile uint8_t sink = 0;
    for (const auto &t : file->tensors()) {
        (void)t.shape_string();
        (void)file->tensor(t.name);
        if (t.nbytes > 0) sink = static_cast<uint8_t>(sink ^ t.data[0] ^ t.data[t.nbytes - 1]);
    }
    for (const auto &kv : file->metadata()) (void)kv;
    (void)sink;
    return 0;
}
