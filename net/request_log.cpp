#include "net/request_log.h"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace actorserve {

std::unique_ptr<request_log> request_log::open(const request_log_config &cfg, std::string &err) {
    std::unique_ptr<request_log> log(new request_log(cfg));
    if (cfg.path == "-") {
        log->stdout_ = true;
        log->f_ = stdout;
        return log;
    }
    const std::filesystem::path dir = std::filesystem::path(cfg.path).parent_path();
    std::error_code ec;
    if (!dir.empty()) std::filesystem::create_directories(dir, ec);
    if (!log->reopen(err)) return nullptr;
    return log;
}

request_log::~request_log() {
    if (f_ && !stdout_) std::fclose(f_);
}

bool request_log::reopen(std::string &err) {
    if (f_) std::fclose(f_);
    f_ = std::fopen(cfg_.path.c_str(), "a");
    if (!f_) {
        err = "cannot open the request log " + cfg_.path + ": " + std::strerror(errno);
        return false;
    }
    std::error_code ec;
    const auto n = std::filesystem::file_size(cfg_.path, ec);
    size_ = ec ? 0 : static_cast<size_t>(n);
    return true;
}

void request_log::rotate() {
    std::error_code ec;
    const std::string &p = cfg_.path;
    if (cfg_.keep <= 0) {
        std::filesystem::remove(p, ec);
    } else {
        std::filesystem::remove(p + "." + std::to_string(cfg_.keep), ec);
        for (int i = cfg_.keep - 1; i >= 1; --i)
            std::filesystem::rename(p + "." + std::to_string(i), p + "." + std::to_string(i + 1), ec);
        std::filesystem::rename(p, p + ".1", ec);
    }
    std::string err;
    if (!reopen(err)) {
        f_ = nullptr;
        spdlog::warn("{}", err);
    }
}

void request_log::write(std::string_view line) {
    std::lock_guard<std::mutex> lk(mu_);
    if (!stdout_ && f_ && size_ > 0 && size_ + line.size() + 1 > cfg_.max_bytes) rotate();
    if (!stdout_ && !f_) {
        std::string err;
        if (!reopen(err)) f_ = nullptr; // tried again at every line
    }
    bool ok = f_ != nullptr;
    if (ok) {
        ok = std::fwrite(line.data(), 1, line.size(), f_) == line.size() && std::fputc('\n', f_) != EOF;
        ok = std::fflush(f_) == 0 && ok;
    }
    if (!ok) {
        // Said once, then every 1000th: a full disk must not flood the log about the log.
        const uint64_t n = errors_.fetch_add(1);
        if (n % 1000 == 0)
            spdlog::warn("request log {}: a line could not be written ({}; {} so far)", cfg_.path,
                         f_ ? std::strerror(errno) : "not open", n + 1);
        if (f_ && !stdout_) std::clearerr(f_);
        return;
    }
    size_ += line.size() + 1;
    lines_.fetch_add(1);
}

} // namespace actorserve
