// The request log ([request_log], docs/policy.md "Request logs"): one JSON line per finished or
// refused generation request, for accounting and for finding a slow or failed one later. To a
// file, rotated by size (path -> path.1 -> ... -> path.<keep>, the oldest dropped), or to
// stdout ("-") for journald. Lines hold ids, timings, token counts and outcomes; prompt and
// answer text only with server.log_prompts.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace actorserve {

struct request_log_config {
    std::string path;                  // "": off; "-": stdout
    size_t max_bytes = size_t{64} << 20; // a file this large is rotated before the next line
    int keep = 3;                      // rotated files kept
};

class request_log {
public:
    // nullptr with err when the file cannot be opened for appending (its directory is made).
    static std::unique_ptr<request_log> open(const request_log_config &cfg, std::string &err);
    ~request_log();

    // Appends line and a newline, flushed; rotates first when the file would pass max_bytes.
    // A failed write (a full disk) is counted and warned about, never thrown: serving goes on.
    // Any thread.
    void write(std::string_view line);

    uint64_t lines() const { return lines_.load(); }
    uint64_t errors() const { return errors_.load(); }

private:
    explicit request_log(request_log_config cfg) : cfg_(std::move(cfg)) {}
    bool reopen(std::string &err);
    void rotate();

    const request_log_config cfg_;
    std::mutex mu_;
    std::FILE *f_ = nullptr;
    bool stdout_ = false;
    size_t size_ = 0;
    std::atomic<uint64_t> lines_{0}, errors_{0};
};

} // namespace actorserve
