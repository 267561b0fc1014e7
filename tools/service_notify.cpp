#include "tools/service_notify.h"

#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

#include <cstdint>

#include "include/actorserve/runtime.h"

namespace actorserve::cli {

namespace {

void notify(const std::string &state) {
    const int rc = sd_notify(0, state.c_str());
    if (rc < 0) spdlog::warn("systemd notify ({}) failed: error {}", state.substr(0, state.find('\n')), -rc);
}

} // namespace

void service_notifier::status(const std::string &text) { notify("STATUS=" + text); }

void service_notifier::ready(const std::string &text) { notify("READY=1\nSTATUS=" + text); }

void service_notifier::stopping(const std::string &text) { notify("STOPPING=1\nSTATUS=" + text); }

void service_notifier::start_watchdog(const runtime &rt) {
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return;
    spdlog::info("systemd watchdog: every {} ms while the schedulers answer and no step runs past {} s",
                 usec / 2000, stall_.count());
    thread_ = std::thread([this, &rt, usec] { watch(rt, std::chrono::microseconds(usec)); });
}

void service_notifier::stop_watchdog() {
    {
        std::lock_guard lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void service_notifier::watch(const runtime &rt, std::chrono::microseconds period) {
    using namespace std::chrono;
    const auto every = duration_cast<milliseconds>(period / 2);
    const auto ask_timeout = std::max(milliseconds(1), every / 2);
    bool healthy = true;
    std::unique_lock lock(mu_);
    while (!stop_) {
        lock.unlock();
        const std::optional<milliseconds> step = rt.longest_step(ask_timeout);
        const bool ok = step && *step < stall_;
        if (ok) notify("WATCHDOG=1");
        if (ok != healthy) {
            if (ok) spdlog::info("systemd watchdog: the schedulers answer again; keep-alives resumed");
            else if (!step) spdlog::error("systemd watchdog: a scheduler did not answer within {} ms; keep-alives stopped", ask_timeout.count());
            else spdlog::error("systemd watchdog: a step has run {} s (server.watchdog_step_s = {}); keep-alives stopped",
                               duration_cast<seconds>(*step).count(), stall_.count());
            healthy = ok;
        }
        lock.lock();
        cv_.wait_for(lock, every, [this] { return stop_; });
    }
}

} // namespace actorserve::cli
