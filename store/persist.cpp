#include "store/persist.h"

#include "store/hash.h"

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

namespace actorserve {
namespace {

constexpr char kMagic[8] = {'A', 'S', 'C', 'A', 'C', 'H', 'E', '\0'};
constexpr size_t kHeaderBytes = 32;

std::string errno_text() { return std::strerror(errno); }

uint64_t get_le(const char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
    return v;
}

bool write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = ::write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        p += w;
        n -= static_cast<size_t>(w);
    }
    return true;
}

std::string utc_stamp() {
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
    return buf;
}

} // namespace

bool byte_reader::take(size_t n, const char *what, const char *&p) {
    if (!ok()) return false;
    if (data_.size() - pos_ < n) {
        fail(std::string("truncated ") + what + ": needs " + std::to_string(n) + " bytes, " +
             std::to_string(data_.size() - pos_) + " left");
        return false;
    }
    p = data_.data() + pos_;
    pos_ += n;
    return true;
}

void byte_reader::fail(const std::string &what) {
    if (ok()) error_ = "payload offset " + std::to_string(pos_) + ": " + what;
}

bool byte_reader::u8(uint8_t &v) {
    const char *p;
    if (!take(1, "u8", p)) return false;
    v = static_cast<uint8_t>(*p);
    return true;
}
bool byte_reader::u32(uint32_t &v) {
    const char *p;
    if (!take(4, "u32", p)) return false;
    v = static_cast<uint32_t>(get_le(p, 4));
    return true;
}
bool byte_reader::u64(uint64_t &v) {
    const char *p;
    if (!take(8, "u64", p)) return false;
    v = get_le(p, 8);
    return true;
}
bool byte_reader::i64(int64_t &v) {
    uint64_t u;
    if (!u64(u)) return false;
    v = static_cast<int64_t>(u);
    return true;
}
bool byte_reader::f32(float &v) {
    uint32_t b;
    if (!u32(b)) return false;
    std::memcpy(&v, &b, 4);
    return true;
}
bool byte_reader::str(std::string &s, size_t max_len) {
    uint64_t n;
    if (!u64(n)) return false;
    if (n > max_len) {
        fail("string length " + std::to_string(n) + " over the limit " + std::to_string(max_len));
        return false;
    }
    const char *p;
    if (!take(static_cast<size_t>(n), "string", p)) return false;
    s.assign(p, static_cast<size_t>(n));
    return true;
}

bool write_cache_file(const std::string &path, cache_file_kind kind, std::string_view payload, std::string &err) {
    namespace fs = std::filesystem;
    byte_writer h;
    for (char c : kMagic) h.u8(static_cast<uint8_t>(c));
    h.u32(kCacheFormatVersion);
    h.u32(static_cast<uint32_t>(kind));
    h.u64(payload.size());
    h.u64(siphash64(payload));

    fs::path target(path);
    fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
    const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        err = tmp + ": cannot create: " + errno_text();
        return false;
    }
    if (!write_all(fd, h.bytes().data(), h.bytes().size()) || !write_all(fd, payload.data(), payload.size())) {
        err = tmp + ": write failed: " + errno_text();
        ::close(fd);
        ::unlink(tmp.c_str());
        return false;
    }
    if (::fsync(fd) != 0) {
        err = tmp + ": fsync failed: " + errno_text();
        ::close(fd);
        ::unlink(tmp.c_str());
        return false;
    }
    ::close(fd);
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        err = path + ": rename from " + tmp + " failed: " + errno_text();
        ::unlink(tmp.c_str());
        return false;
    }
    // The rename is durable only once the folder's entry is on disk.
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        err = dir.string() + ": cannot open folder to fsync: " + errno_text();
        return false;
    }
    bool synced = ::fsync(dfd) == 0;
    if (!synced) err = dir.string() + ": fsync of folder failed: " + errno_text();
    ::close(dfd);
    return synced;
}

void set_aside_corrupt(const std::string &path, const std::string &problem, cache_load_report &report) {
    report.result = cache_load_report::outcome::corrupt;
    report.entries = 0;
    report.expired = 0;
    std::string aside = path + ".corrupt-" + utc_stamp();
    // Two failures in one second must not overwrite the first file set aside.
    for (int i = 1; std::filesystem::exists(aside); ++i) aside = path + ".corrupt-" + utc_stamp() + "-" + std::to_string(i);
    if (::rename(path.c_str(), aside.c_str()) == 0) {
        report.set_aside = aside;
        report.message = path + ": " + problem + "; set aside as " + aside + ", starting empty";
    } else {
        report.message = path + ": " + problem + "; could not set it aside (" + errno_text() + "), starting empty";
    }
}

size_t remove_stale_temps(const std::string &path) {
    namespace fs = std::filesystem;
    const fs::path target(path);
    const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
    const std::string prefix = target.filename().string() + ".tmp-";
    std::error_code ec;
    size_t removed = 0;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.rfind(prefix, 0) != 0) continue;
        const std::string digits = name.substr(prefix.size());
        if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
        const auto pid = static_cast<pid_t>(std::stol(digits));
        // a save in progress in another live process is left alone
        const bool gone = pid == ::getpid() || (::kill(pid, 0) != 0 && errno == ESRCH);
        std::error_code rm;
        if (gone && fs::remove(it->path(), rm)) ++removed;
    }
    return removed;
}

std::string stale_temps_note(const cache_load_report &r) {
    if (!r.stale_temps) return "";
    return " (" + std::to_string(r.stale_temps) + (r.stale_temps == 1 ? " temporary file" : " temporary files") +
           " of an unfinished save removed)";
}

cache_load_report read_cache_file(const std::string &path, cache_file_kind kind, std::string &payload) {
    cache_load_report report;
    payload.clear();
    report.stale_temps = remove_stale_temps(path);
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        if (!std::filesystem::exists(path)) {
            report.result = cache_load_report::outcome::missing;
            report.message = path + ": no cache file, starting empty";
        } else {
            report.result = cache_load_report::outcome::io_error;
            report.message = path + ": cannot open: " + errno_text();
        }
        return report;
    }
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) {
        report.result = cache_load_report::outcome::io_error;
        report.message = path + ": read failed";
        return report;
    }
    if (data.size() < kHeaderBytes) {
        set_aside_corrupt(path, "truncated: " + std::to_string(data.size()) + " bytes, shorter than the " +
                                    std::to_string(kHeaderBytes) + "-byte header", report);
        return report;
    }
    if (std::memcmp(data.data(), kMagic, sizeof kMagic) != 0) {
        set_aside_corrupt(path, "not a cache file (bad magic)", report);
        return report;
    }
    const auto version = static_cast<uint32_t>(get_le(data.data() + 8, 4));
    const auto file_kind = static_cast<uint32_t>(get_le(data.data() + 12, 4));
    const uint64_t len = get_le(data.data() + 16, 8);
    const uint64_t sum = get_le(data.data() + 24, 8);
    if (version != kCacheFormatVersion) {
        set_aside_corrupt(path, "format version " + std::to_string(version) + ", this build reads " +
                                    std::to_string(kCacheFormatVersion), report);
        return report;
    }
    if (file_kind != static_cast<uint32_t>(kind)) {
        set_aside_corrupt(path, "holds cache kind " + std::to_string(file_kind) + ", expected " +
                                    std::to_string(static_cast<uint32_t>(kind)), report);
        return report;
    }
    if (len != data.size() - kHeaderBytes) {
        set_aside_corrupt(path, std::string(len > data.size() - kHeaderBytes ? "truncated" : "trailing bytes") +
                                    ": header says " + std::to_string(len) + " payload bytes, file has " +
                                    std::to_string(data.size() - kHeaderBytes), report);
        return report;
    }
    std::string_view body(data.data() + kHeaderBytes, data.size() - kHeaderBytes);
    if (siphash64(body) != sum) {
        set_aside_corrupt(path, "checksum mismatch (file damaged)", report);
        return report;
    }
    payload.assign(body);
    report.result = cache_load_report::outcome::loaded;
    return report;
}

} // namespace actorserve
