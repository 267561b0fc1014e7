// The bounded queue of bytes a connection has yet to send, one for WebSocket frames and for
// server-sent events alike. Writes go out one at a time, in order; the one being written stays
// at the front (the socket holds its buffer) until done() says it is out. Over the limit, the
// client is not reading: push() answers false, having dropped all but the write in flight, and
// the connection closes (never grows without bound, never drops a message silently: the close is
// what the client hears).
#pragma once

#include <cassert>
#include <cstddef>
#include <deque>
#include <string>

namespace actorserve {

class write_queue {
public:
    explicit write_queue(size_t limit_bytes) : limit_(limit_bytes) {}

    // Queues msg. False when the unsent bytes are now over the limit.
    bool push(std::string msg) {
        bytes_ += msg.size();
        q_.push_back(std::move(msg));
        if (bytes_ <= limit_) return true;
        while (q_.size() > (writing_ ? 1u : 0u)) {
            bytes_ -= q_.back().size();
            q_.pop_back();
        }
        return false;
    }

    // The next write to start: call when !writing() and !empty(); it stays at the front.
    const std::string &start() {
        assert(!writing_ && !q_.empty());
        writing_ = true;
        return q_.front();
    }
    // The write start() began has completed (successfully or not).
    void done() {
        assert(writing_);
        writing_ = false;
        bytes_ -= q_.front().size();
        q_.pop_front();
    }
    // Drops what is not being written (a write in flight completes with done()).
    void clear() {
        while (q_.size() > (writing_ ? 1u : 0u)) {
            bytes_ -= q_.back().size();
            q_.pop_back();
        }
    }

    bool writing() const { return writing_; }
    bool empty() const { return q_.empty(); }
    size_t bytes() const { return bytes_; }
    size_t limit() const { return limit_; }

private:
    size_t limit_;
    std::deque<std::string> q_;
    size_t bytes_ = 0;
    bool writing_ = false;
};

} // namespace actorserve
