// main() of the GPU tests (tests/gpu/test_*.cpp): with no CUDA device visible (a build without
// CUDA, no driver, no device) it prints why and exits 77, which ctest reports as Skipped
// (SKIP_RETURN_CODE in tests/CMakeLists.txt); otherwise it runs doctest as doctest_main would.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "gpu/gpu_context.h"

int main(int argc, char **argv) {
    std::string why;
    if (actorserve::gpu_device_count(why) == 0) {
        std::printf("skipped: no CUDA device: %s\n", why.c_str());
        return 77;
    }
    doctest::Context ctx;
    ctx.applyCommandLine(argc, argv);
    return ctx.run();
}
