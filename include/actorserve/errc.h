// The one error enum every front end reports (programmatic API, WebSocket, HTTP), with the
// table that maps each code to what a client sees.
#pragma once

#include <cstdint>
#include <string_view>

namespace actorserve {

enum class errc : uint8_t {
    invalid_request = 1, // malformed or out-of-range input; the message names the field
    exceed_context,      // prompt (+ max_tokens) cannot fit the context or the KV capacity
    overloaded,          // a bounded queue is full; retry after the hint
    cancelled,           // the client or its session ended the request
    busy,                // a session already has a request in flight
    unauthorized,
    not_found,
    internal,            // a bug or a failed engine call; the message says which
};

struct errc_info {
    int http_status;        // status an HTTP front end answers with
    std::string_view type;  // machine-readable type string of the error body
};

constexpr errc_info info(errc e) {
    switch (e) {
    case errc::invalid_request: return {400, "invalid_request_error"};
    case errc::exceed_context: return {400, "exceed_context_size_error"};
    case errc::overloaded: return {503, "overloaded_error"};
    case errc::cancelled: return {499, "cancelled_error"};
    case errc::busy: return {409, "busy_error"};
    case errc::unauthorized: return {401, "authentication_error"};
    case errc::not_found: return {404, "not_found_error"};
    case errc::internal: return {500, "internal_error"};
    }
    return {500, "internal_error"};
}

} // namespace actorserve
