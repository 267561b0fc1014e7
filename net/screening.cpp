#include "net/screening.h"

#include <algorithm>

namespace actorserve {

namespace {

constexpr size_t kMaxGuardTexts = 16; // embeddings one request's guard may ask for

} // namespace

std::optional<screening> screening::plan(std::shared_ptr<const temperature_policy> policy,
                                         std::shared_ptr<const injection_guard> guard, const chat_request &req) {
    screening s;
    // the user's text: every user message (the prompt of a raw completion), the last first
    std::vector<const chat_message *> user;
    for (auto it = req.messages.rbegin(); it != req.messages.rend(); ++it)
        if (it->role == "user" || req.raw) user.push_back(&*it);
    if (user.empty()) return std::nullopt;
    if (policy && !req.temperature_set) {
        s.policy_ = std::move(policy);
        s.policy_at_ = 0;
        s.texts_.push_back(user.front()->content);
    }
    if (guard && guard->settings().action != guard_action::off) {
        s.guard_ = std::move(guard);
        size_t n = 0;
        for (const chat_message *m : user) {
            injection_guard::prepared p = s.guard_->prepare(m->content);
            if (n + p.texts.size() > kMaxGuardTexts) {
                p.texts.resize(kMaxGuardTexts - std::min(n, kMaxGuardTexts));
                p.variant.resize(p.texts.size());
            }
            s.first_.push_back(s.texts_.size());
            n += p.texts.size();
            for (const std::string &t : p.texts) s.texts_.push_back(t);
            s.prepared_.push_back(std::move(p));
        }
    }
    if (!s.policy_ && !s.guard_) return std::nullopt;
    return s;
}

bool screening::apply(chat_request &req, const std::vector<std::vector<float>> *vectors,
                      stream_event::policy_outcome &policy, stream_event::guard_outcome &guard) const {
    const bool have = vectors && vectors->size() == texts_.size();
    if (policy_) {
        if (!have) {
            policy.kind = "unclassified";
            policy_->count_unclassified();
        } else {
            const auto c = policy_->classify((*vectors)[static_cast<size_t>(policy_at_)]);
            policy_->count(c.kind);
            policy.kind = std::string(kRequestKindNames[c.kind]);
            policy.similarity = c.similarity;
            req.sampling.temperature = c.temperature;
            if (!req.top_p_set) req.sampling.top_p = c.top_p;
        }
        policy.temperature = req.sampling.temperature;
        policy.top_p = req.sampling.top_p;
    }
    if (!guard_) return false;
    guard.checked = true;
    for (size_t m = 0; m < prepared_.size(); ++m) {
        const injection_guard::prepared &p = prepared_[m];
        std::vector<std::vector<float>> mine;
        if (have)
            for (size_t i = 0; i < p.texts.size(); ++i) mine.push_back((*vectors)[first_[m] + i]);
        const auto v = guard_->judge(p, mine); // without vectors: the rules alone
        guard.flagged |= v.flagged;
        guard.score = std::max(guard.score, v.score);
        for (const std::string &r : v.reasons)
            if (std::find(guard.reasons.begin(), guard.reasons.end(), r) == guard.reasons.end()) guard.reasons.push_back(r);
    }
    if (!have) {
        guard_->count_unchecked();
        guard.reasons.push_back("unchecked");
    }
    guard_->count(guard.flagged);
    return guard.flagged && guard_->settings().action == guard_action::block;
}

} // namespace actorserve
