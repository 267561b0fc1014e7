// The "policy" object of a done event (WebSocket) and of an OpenAI response: what the dynamic
// temperature chose for a request that set none (docs/policy.md).
#pragma once

#include <boost/json/object.hpp>

#include <optional>

#include "net/request_stream.h"

namespace actorserve {

// {"kind": "code", "temperature": 0.2, "top_p": 0.95, "similarity": 0.41}; nullopt when the
// policy chose nothing (the request set its temperature, or the policy is off).
std::optional<boost::json::object> render_policy(const stream_event &done);

} // namespace actorserve
