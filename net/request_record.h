// What the request log (net/request_log.h) says about one request: gathered when it starts,
// completed by its end event, rendered as one JSON line.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "include/actorserve/chat_message.h"
#include "include/actorserve/priority.h"
#include "net/request_stream.h"

namespace actorserve {

struct request_record {
    std::string request_id, session_id;
    std::string key;                       // the key's id; "": no API keys
    std::string api;                       // "ws", "chat.completions", "completions", "responses"
    priority_class priority = priority_class::standard;
    int choices = 1;
    bool rag = false;                      // retrieval was asked for
    int max_tokens = 0;
    std::optional<float> temperature;      // as the request set it (nullopt: it did not; the
                                           // end's policy then says what was chosen)
    std::chrono::system_clock::time_point started;
    // With server.log_prompts only: the messages as sent.
    std::optional<std::vector<chat_message>> messages;
};

// One line, no newline. end: the request's done or error event. A refused request (over a
// key's limit) has no end event: refused names the limit and message says why.
std::string render_request_record(const request_record &r, const stream_event &end, bool with_text);
std::string render_refused_record(const request_record &r, std::string_view limit, std::string_view message,
                                  int retry_after_ms);

} // namespace actorserve
