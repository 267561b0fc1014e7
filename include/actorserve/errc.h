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
    forbidden,           // not allowed: another client's request, an Origin or Host not allowed
    too_large,           // a body or message over the size limit
    unprocessable,       // well-formed, but a value is out of range (the message names it)
    rate_limited,        // too many connections
    unsupported_media,   // a body that is not application/json where JSON is required
    prompt_injection,    // the prompt-injection guard refused a user message ([policy] guard = "block")
};

// The code's name as clients see it ("overloaded", "too_large", ...).
constexpr std::string_view name(errc e) {
    switch (e) {
    case errc::invalid_request: return "invalid_request";
    case errc::exceed_context: return "exceed_context";
    case errc::overloaded: return "overloaded";
    case errc::cancelled: return "cancelled";
    case errc::busy: return "busy";
    case errc::unauthorized: return "unauthorized";
    case errc::not_found: return "not_found";
    case errc::internal: return "internal";
    case errc::forbidden: return "forbidden";
    case errc::too_large: return "too_large";
    case errc::unprocessable: return "unprocessable";
    case errc::rate_limited: return "rate_limited";
    case errc::unsupported_media: return "unsupported_media_type";
    case errc::prompt_injection: return "prompt_injection";
    }
    return "internal";
}

struct errc_info {
    int http_status;        // status an HTTP front end answers with
    std::string_view type;  // machine-readable type string of the error body
};

constexpr errc_info info(errc e) {
    switch (e) {
    case errc::invalid_request: return {400, "invalid_request_error"};
    case errc::exceed_context: return {422, "exceed_context_size_error"};
    case errc::overloaded: return {503, "overloaded_error"};
    case errc::cancelled: return {499, "cancelled_error"};
    case errc::busy: return {409, "busy_error"};
    case errc::unauthorized: return {401, "authentication_error"};
    case errc::not_found: return {404, "not_found_error"};
    case errc::internal: return {500, "internal_error"};
    case errc::forbidden: return {403, "permission_error"};
    case errc::too_large: return {413, "request_too_large_error"};
    case errc::unprocessable: return {422, "unprocessable_error"};
    case errc::rate_limited: return {429, "rate_limit_error"};
    case errc::unsupported_media: return {415, "invalid_request_error"};
    case errc::prompt_injection: return {400, "invalid_request_error"};
    }
    return {500, "internal_error"};
}

} // namespace actorserve
