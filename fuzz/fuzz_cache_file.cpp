// libFuzzer target: the cache file loaders (cache/exact_cache.h, cache/semantic_cache.h) on any
// payload. The input is the payload of a cache file: it is written with a valid header and
// checksum (store/persist.h write_cache_file), so the fuzzer reaches the payload decoders rather
// than stopping at the checksum, then each cache loads it. A load ends `loaded` (and the cache
// holds what it reported) or `corrupt` with a message; anything else aborts.
//
// ACTORSERVE_FUZZ_WRITE_SEEDS=<folder>: writes the payloads of small real caches there (the seed
// corpus, fuzz/corpus/cache_file) and exits.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cache/exact_cache.h"
#include "cache/semantic_cache.h"
#include "fuzz/fuzz_files.h"
#include "store/persist.h"

namespace {

using namespace actorserve;

void write_seeds(const std::string &dir) {
    exact_cache exact;
    generation_params p;
    for (int i = 0; i < 3; ++i)
        exact.insert(exact_key::make("fuzz-model", "question " + std::to_string(i), p), {"answer " + std::to_string(i), "stop", 2},
                     /*allow_sampled=*/true);
    semantic_cache sem;
    std::vector<float> v(size_t(sem.settings().dim), 0.0f);
    for (int i = 0; i < 3; ++i) {
        std::fill(v.begin(), v.end(), 0.0f);
        v[size_t(i)] = 1.0f;
        sem.insert(i == 2 ? "other-scope" : "", v, "What is question " + std::to_string(i) + "?", {"answer", "stop", 1});
    }
    fuzz_files::save_payload_seed(exact, dir + "/exact");
    fuzz_files::save_payload_seed(sem, dir + "/semantic");
    std::exit(0);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    if (const char *dir = std::getenv("ACTORSERVE_FUZZ_WRITE_SEEDS")) write_seeds(dir);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static exact_cache exact;
    static semantic_cache sem;
    const std::string_view payload(reinterpret_cast<const char *>(data), size);
    fuzz_files::check_load(exact, payload, cache_file_kind::exact, [&] { return exact.size(); });
    fuzz_files::check_load(sem, payload, cache_file_kind::semantic, [&] { return sem.size(); });
    return 0;
}
