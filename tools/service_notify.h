// systemd's service protocol for `actorserve serve` (docs/deploy.md): READY=1 once the model is
// loaded and the server answers, STOPPING=1 at shutdown, STATUS= lines, and WATCHDOG=1 from the
// runtime's heartbeat while the unit sets WatchdogSec=. Through libsystemd's sd_notify: without
// NOTIFY_SOCKET (not started by systemd) every call does nothing.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace actorserve {
class runtime;
}

namespace actorserve::cli {

class service_notifier {
public:
    // stall: a step in flight this long counts as hung (server.watchdog_step_s).
    explicit service_notifier(std::chrono::seconds stall) : stall_(stall) {}
    ~service_notifier() { stop_watchdog(); }
    service_notifier(const service_notifier &) = delete;
    service_notifier &operator=(const service_notifier &) = delete;

    void status(const std::string &text);
    void ready(const std::string &text);
    void stopping(const std::string &text);

    // When the unit asked for a watchdog (WATCHDOG_USEC for this process), a thread sends
    // WATCHDOG=1 every half period while every scheduler answers and no step has run past the
    // stall limit; otherwise it stops sending (and logs why once), and systemd restarts the
    // service when the period ends. `rt` must outlive the watchdog (stop_watchdog first).
    void start_watchdog(const runtime &rt);
    void stop_watchdog();

private:
    void watch(const runtime &rt, std::chrono::microseconds period);

    std::chrono::seconds stall_;
    std::thread thread_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
};

} // namespace actorserve::cli
