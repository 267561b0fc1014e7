// Cache files: one versioned binary file per cache, written atomically, checked on load.
//
// Layout (all integers little-endian):
//   offset  size  field
//        0     8  magic "ASCACHE\0"
//        8     4  format version (kCacheFormatVersion)
//       12     4  kind (1 exact, 2 semantic, 3 knowledge base: rag/knowledge_base.h)
//       16     8  payload length in bytes
//       24     8  SipHash-2-4 (64-bit) of the payload
//       32     n  payload, laid out by the cache that wrote it (docs/cache.md)
//
// Writing: the bytes go to "<file>.tmp-<pid>" in the same folder, which is fsynced, renamed over
// <file>, and then the folder is fsynced, so after a crash the file is either the old one or
// the new one, whole. Loading: a file that is missing is an empty cache; one that is short,
// long, of another kind or version, or fails its checksum or its payload's own checks is
// renamed to "<file>.corrupt-<UTC time>" and reported, and the cache starts empty. A killed
// save's temporary file is removed by the next load.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace actorserve {

inline constexpr uint32_t kCacheFormatVersion = 1;
enum class cache_file_kind : uint32_t { exact = 1, semantic = 2, rag = 3 };

// What a load did, for the log line at start-up.
struct cache_load_report {
    enum class outcome { loaded, missing, corrupt, io_error };
    outcome result = outcome::missing;
    std::string message;     // names the file and the problem when not `loaded`/`missing`
    std::string set_aside;   // where a corrupt file was moved ("" when it was not)
    size_t entries = 0;      // entries restored
    size_t expired = 0;      // entries in the file that had expired and were dropped
    size_t stale_temps = 0;  // "<file>.tmp-<pid>" left by a save that was killed, removed
};

// The temporary files of saves of `path` that never finished ("<file>.tmp-<pid>" of a process
// that is gone, or of this one's pid from an earlier life), removed; their count. Reading the
// file (read_cache_file) does this first.
size_t remove_stale_temps(const std::string &path);

// " (N temporary files of an unfinished save removed)" for a start-up line; "" when none were.
std::string stale_temps_note(const cache_load_report &r);

// Appends fixed-size little-endian fields and length-prefixed strings.
class byte_writer {
public:
    void u8(uint8_t v) { buf_.push_back(static_cast<char>(v)); }
    void u32(uint32_t v) { put_le(v, 4); }
    void u64(uint64_t v) { put_le(v, 8); }
    void i64(int64_t v) { put_le(static_cast<uint64_t>(v), 8); }
    void f32(float v) {
        uint32_t b;
        std::memcpy(&b, &v, 4);
        u32(b);
    }
    void str(std::string_view s) {
        u64(s.size());
        buf_.append(s);
    }
    const std::string &bytes() const { return buf_; }

private:
    void put_le(uint64_t v, int n) {
        for (int i = 0; i < n; ++i) buf_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    }
    std::string buf_;
};

// Reads what byte_writer wrote. Every read checks the bounds; the first failure sets error()
// (with the offset) and makes all later reads fail, so a parser can check once at the end of
// a record.
class byte_reader {
public:
    explicit byte_reader(std::string_view data) : data_(data) {}
    bool u8(uint8_t &v);
    bool u32(uint32_t &v);
    bool u64(uint64_t &v);
    bool i64(int64_t &v);
    bool f32(float &v);
    bool str(std::string &s, size_t max_len = size_t{1} << 30);
    bool ok() const { return error_.empty(); }
    bool at_end() const { return pos_ == data_.size(); }
    const std::string &error() const { return error_; }
    void fail(const std::string &what);

private:
    bool take(size_t n, const char *what, const char *&p);
    std::string_view data_;
    size_t pos_ = 0;
    std::string error_;
};

// Writes header + payload to `path` atomically. false with err naming the file and the step.
bool write_cache_file(const std::string &path, cache_file_kind kind, std::string_view payload, std::string &err);

// Reads and checks the header and checksum. On `loaded`, payload holds the payload bytes. On
// `corrupt`, the file has already been set aside (report.set_aside) and report.message says why.
cache_load_report read_cache_file(const std::string &path, cache_file_kind kind, std::string &payload);

// Renames a file whose payload failed the cache's own checks to "<path>.corrupt-<UTC time>" and
// fills report (outcome corrupt, message "<path>: <problem>", set_aside).
void set_aside_corrupt(const std::string &path, const std::string &problem, cache_load_report &report);

} // namespace actorserve
