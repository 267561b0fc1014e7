// What a request goes through before it reaches a session (net/relay.cpp): the dynamic
// temperature (policy/temperature_policy.h) and the prompt-injection guard
// (policy/injection_guard.h), both on embeddings of its user text that one request to the
// runtime's embeddings actor computes.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "include/actorserve/messages.h"
#include "net/request_stream.h"
#include "policy/injection_guard.h"
#include "policy/temperature_policy.h"

namespace actorserve {

class screening {
public:
    // nullopt when nothing is to be done: the policy is off or the request set its temperature,
    // and the guard is off (or there is no user text).
    static std::optional<screening> plan(std::shared_ptr<const temperature_policy> policy,
                                         std::shared_ptr<const injection_guard> guard, const chat_request &req);

    // The texts to embed, in one request.
    const std::vector<std::string> &texts() const { return texts_; }

    // Applies the vectors (nullptr: none came: the embedder overloaded or failed) to req and
    // says what was done; true when the guard blocks the request.
    bool apply(chat_request &req, const std::vector<std::vector<float>> *vectors, stream_event::policy_outcome &policy,
               stream_event::guard_outcome &guard) const;

private:
    std::shared_ptr<const temperature_policy> policy_;
    std::shared_ptr<const injection_guard> guard_;
    std::vector<std::string> texts_;
    int policy_at_ = -1;                               // index of the policy's text, -1: none
    std::vector<injection_guard::prepared> prepared_;  // one per user message checked
    std::vector<size_t> first_;                        // index of each one's first text
};

} // namespace actorserve
