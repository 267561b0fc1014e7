// Reading request bodies and WebSocket messages (simdjson's DOM) into the runtime's request
// types, with errors that name the field, what it must be, and what it was.
#pragma once

#include <simdjson.h>

#include <optional>
#include <string>
#include <string_view>

#include "include/actorserve/messages.h"
#include "include/actorserve/request_check.h"

namespace actorserve {


// The text as one JSON object. Problems: not JSON (simdjson's reason, which covers invalid
// UTF-8), not an object.
std::optional<request_problem> parse_object(simdjson::dom::parser &parser, std::string_view text,
                                            simdjson::dom::object &out);

// Typed getters: a problem when the value has another type.
std::optional<request_problem> get_string(simdjson::dom::element v, std::string_view key, std::string &out);
std::optional<request_problem> get_bool(simdjson::dom::element v, std::string_view key, bool &out);
std::optional<request_problem> get_int(simdjson::dom::element v, std::string_view key, int64_t &out);
std::optional<request_problem> get_number(simdjson::dom::element v, std::string_view key, double &out);

// A sampling or length field shared by the WebSocket protocol and the OpenAI API (temperature,
// top_p, top_k, min_p, repeat_penalty, seed, max_tokens, stop, cache, rag) into r. nullopt and handled =
// false when `key` is none of them. Only types are checked (and that a number fits its field);
// ranges are check_request's, which the parsers call on the whole request.
std::optional<request_problem> read_generation_field(std::string_view key, simdjson::dom::element v,
                                                     chat_request &r, bool &handled);

// A messages array ([{role, content}, ...]) appended to out.
std::optional<request_problem> read_messages(simdjson::dom::element v, std::string_view key,
                                             std::vector<chat_message> &out);

} // namespace actorserve
