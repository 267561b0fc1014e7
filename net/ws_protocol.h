// The WebSocket chat protocol's messages (docs/protocol.md): client messages parsed from JSON,
// server events rendered to JSON.
#pragma once

#include <simdjson.h>

#include <optional>
#include <string>
#include <variant>

#include "net/config.h"
#include "net/json_request.h"
#include "net/request_stream.h"

namespace actorserve {

// resume_token (keys off): proves that a request or session created on another connection is
// the sender's (the start event showed it; net/chat_service.h, caller).
struct ws_chat {
    std::optional<std::string> session_id;
    std::optional<std::string> resume_token;
    chat_request req;
    bool stream = true;
};
struct ws_cancel {
    std::string request_id;
    std::optional<std::string> resume_token;
};
struct ws_resume {
    std::string request_id;
    int64_t last_event_id = -1;
    std::optional<std::string> resume_token;
};
using ws_message = std::variant<ws_chat, ws_cancel, ws_resume>;

std::variant<ws_message, request_problem> parse_ws_message(simdjson::dom::parser &parser, std::string_view text,
                                                           const server_config &cfg);

// Event `event_id` of stream s as the client sees it.
std::string render_event(const request_stream &s, size_t event_id, const stream_event &e);
// An error that belongs to no request (a message that could not start one).
std::string render_error(errc code, std::string_view message, int retry_after_ms = 0);

} // namespace actorserve
