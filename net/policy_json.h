// The "policy" and "guard" objects of a done event (WebSocket) and of an OpenAI response: what
// the dynamic temperature chose for a request that set none, and what the prompt-injection guard
// saw (docs/policy.md).
#pragma once

#include <boost/json/object.hpp>

#include <optional>

#include "net/request_stream.h"

namespace actorserve {

// {"kind": "code", "temperature": 0.2, "top_p": 0.95, "similarity": 0.41}; nullopt when the
// policy chose nothing (the request set its temperature, or the policy is off).
std::optional<boost::json::object> render_policy(const stream_event &done);

// {"flagged": true, "score": 0.97, "reasons": ["classifier", "confusables"]}: with always (the
// request log) whenever the guard ran, else (answers) only when it flagged the request.
std::optional<boost::json::object> render_guard(const stream_event &done, bool always = false);

} // namespace actorserve
