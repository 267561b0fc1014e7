// Shared by the fuzz targets of the file loaders (fuzz_cache_file.cpp, fuzz_kb_file.cpp): a
// scratch folder per process, a payload written as a whole cache file, the load's outcome
// checked, and the folder emptied after each input (a corrupt file is set aside beside it).
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "store/persist.h"

namespace actorserve::fuzz_files {

[[noreturn]] inline void die(const std::string &what) {
    std::fprintf(stderr, "fuzz: %s\n", what.c_str());
    std::abort();
}

inline const std::string &scratch() {
    static const std::string dir = [] {
        const char *base = std::getenv("TMPDIR");
        std::string d = std::string(base && *base ? base : "/tmp") + "/actorserve-fuzz-" + std::to_string(::getpid());
        std::filesystem::create_directories(d);
        return d;
    }();
    return dir;
}

// Saves `cache` (anything with save(path, err)) and writes the payload of its file to `out`.
template <class Cache>
void save_payload_seed(const Cache &cache, const std::string &out) {
    const std::string path = scratch() + "/seed.bin";
    std::string err;
    if (!cache.save(path, err)) die("save: " + err);
    std::ifstream in(path, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    const std::string file = bytes.str();
    if (file.size() < 32) die("a saved file shorter than its header");
    std::filesystem::create_directories(std::filesystem::path(out).parent_path());
    std::ofstream(out, std::ios::binary) << file.substr(32);
    std::filesystem::remove(path);
}

// Writes payload as a valid file of `kind`, loads it into `cache`, checks the report.
template <class Cache, class Size>
void check_load(Cache &cache, std::string_view payload, cache_file_kind kind, Size size) {
    const std::string path = scratch() + "/cache.bin";
    std::string err;
    if (!write_cache_file(path, kind, payload, err)) die("write_cache_file: " + err);
    const cache_load_report r = cache.load(path);
    switch (r.result) {
    case cache_load_report::outcome::loaded:
        if (size() != r.entries) die("loaded " + std::to_string(r.entries) + " entries but holds " + std::to_string(size()));
        break;
    case cache_load_report::outcome::corrupt:
        if (r.message.empty()) die("corrupt without a message");
        if (size() != 0) die("a corrupt file left entries behind");
        break;
    default:
        die("unexpected outcome: " + r.message);
    }
    std::error_code ec;
    for (const auto &e : std::filesystem::directory_iterator(scratch(), ec)) std::filesystem::remove(e.path(), ec);
}

} // namespace actorserve::fuzz_files
