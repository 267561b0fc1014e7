// The "cache_debug" object of a done event (WebSocket) and of an OpenAI response: what a
// request that asked with "cache_debug": true is told about the caches (docs/cache.md, "Auditing
// a hit"). Absent when the request did not ask.
#pragma once

#include <boost/json/object.hpp>

#include <optional>

#include "net/request_stream.h"

namespace actorserve {

// {"scope": "<16 hex>", "cached_question": "..."} (the question with a semantic hit only), or
// {"refused": "why not"}; nullopt when there is nothing to say.
std::optional<boost::json::object> render_cache_debug(const stream_event &done);

} // namespace actorserve
