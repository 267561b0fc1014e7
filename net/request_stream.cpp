#include "net/request_stream.h"

namespace actorserve {

void request_stream::append(stream_event e) {
    std::shared_ptr<stream_follower> f;
    const stream_event *end = nullptr; // stays valid: nothing is appended after the end
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (ended_) return; // one end per request; anything after it is a bug upstream, dropped
        if (e.ends()) {
            ended_ = true;
            ended_at_ = clock::now();
            if (!follower_raw_) unfollowed_since_ = ended_at_; // retention counts from the end
        }
        bytes_ += sizeof(stream_event) + e.text.size() + e.message.size();
        events_.push_back(std::move(e));
        if (ended_) end = &events_.back();
        f = follower_.lock();
    }
    if (end && on_end_) on_end_(*end);
    // Outside the lock: the follower posts to its connection's strand, which reads back here.
    if (f) f->on_events(request_id_);
}

size_t request_stream::read(size_t from, const stream_follower *who, std::vector<stream_event> &out) const {
    std::lock_guard<std::mutex> lk(mu_);
    if (who != follower_raw_ || follower_.expired()) return from;
    for (size_t i = from; i < events_.size(); ++i) out.push_back(events_[i]);
    return std::max(from, events_.size());
}

void request_stream::follow(std::weak_ptr<stream_follower> who) {
    std::lock_guard<std::mutex> lk(mu_);
    follower_raw_ = who.lock().get();
    follower_ = std::move(who);
}

void request_stream::unfollow(const stream_follower *who) {
    std::lock_guard<std::mutex> lk(mu_);
    if (who != follower_raw_ || !who) return;
    follower_.reset();
    follower_raw_ = nullptr;
    unfollowed_since_ = clock::now();
}

void request_stream::set_openai(openai_info i) {
    std::lock_guard<std::mutex> lk(mu_);
    openai_ = std::move(i);
}

std::optional<request_stream::openai_info> request_stream::openai() const {
    std::lock_guard<std::mutex> lk(mu_);
    return openai_;
}

std::vector<stream_event> request_stream::snapshot() const {
    std::lock_guard<std::mutex> lk(mu_);
    return events_;
}

bool request_stream::ended() const {
    std::lock_guard<std::mutex> lk(mu_);
    return ended_;
}

size_t request_stream::size() const {
    std::lock_guard<std::mutex> lk(mu_);
    return events_.size();
}

std::optional<request_stream::clock::time_point> request_stream::unfollowed_since() const {
    std::lock_guard<std::mutex> lk(mu_);
    if (follower_raw_ && follower_.expired()) { // its connection went away without unfollowing
        follower_raw_ = nullptr;
        unfollowed_since_ = clock::now();
    }
    if (follower_raw_) return std::nullopt;
    return unfollowed_since_;
}

size_t request_stream::bytes() const {
    std::lock_guard<std::mutex> lk(mu_);
    return bytes_;
}

} // namespace actorserve
