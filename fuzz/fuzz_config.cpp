// libFuzzer target: the TOML config loader (net/config.h, load_config_text) on any bytes, then
// validate() on whatever loads. Either may refuse, with a message; nothing else may happen.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "net/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    actorserve::server_config cfg;
    std::string err;
    const bool ok = actorserve::load_config_text(std::string_view(reinterpret_cast<const char *>(data), size), "fuzz.toml", cfg, err);
    if (!ok && err.empty()) {
        std::fprintf(stderr, "fuzz_config: refused without a message\n");
        std::abort();
    }
    if (ok) (void)actorserve::validate(cfg, err);
    return 0;
}
