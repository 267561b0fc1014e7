// How a request stream wakes the connection that follows it, safely across shutdown.
//
// Streams are appended to on the actors' threads, while a connection and everything it holds
// (its socket, its strand) belong to the server's io_context. A connection reached from an actor
// thread could be kept alive there, or be posted to, while the server destroys the io_context:
// both are use after free. So a stream holds a stream_waker, which holds no I/O object: it
// reaches its connection only through the server's io_gate, and once the server has closed the
// gate no thread outside the I/O threads owns or touches an I/O object again.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "net/request_stream.h"

namespace actorserve {

class io_gate {
public:
    // Runs f while the server's I/O objects exist; false, without running it, once they may not.
    template <class F> bool run(F &&f) {
        std::lock_guard<std::mutex> lk(mu_);
        if (closed_) return false;
        f();
        return true;
    }
    // Waits for any f still running, then lets none run again.
    void close() {
        std::lock_guard<std::mutex> lk(mu_);
        closed_ = true;
    }

private:
    std::mutex mu_;
    bool closed_ = false;
};

class stream_waker final : public stream_follower {
public:
    // wake: posts the connection's work onto its strand. It must hold the connection weakly and
    // drop any strong reference it takes before returning (inside the gate).
    stream_waker(std::shared_ptr<io_gate> gate, std::function<void(const std::string &)> wake)
        : gate_(std::move(gate)), wake_(std::move(wake)) {}

    void on_events(const std::string &request_id) override {
        gate_->run([&] { wake_(request_id); });
    }

private:
    std::shared_ptr<io_gate> gate_;
    std::function<void(const std::string &)> wake_;
};

} // namespace actorserve
