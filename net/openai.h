// The OpenAI-compatible API's bodies: /v1/chat/completions and /v1/completions requests read
// into a chat_request; responses, stream chunks and errors rendered as OpenAI defines them.
#pragma once

#include <simdjson.h>

#include <string>
#include <variant>
#include <vector>

#include "net/config.h"
#include "net/json_request.h"
#include "net/request_stream.h"

namespace actorserve {

constexpr int kMaxChoices = 16; // n: choices of one request

struct openai_request {
    bool chat = true;          // chat.completion; false: text_completion (raw prompt)
    chat_request req;
    bool stream = false;
    bool include_usage = false;
    int n = 1;                 // choices, each a sequence of its own (seed + i)
    bool tool_call = false;    // tools with tool_choice required or named: answered as tool_calls
    std::string model;
    bool responses = false;    // the Responses API's (net/responses_api.h): rendered as its events
};

std::variant<openai_request, request_problem> parse_openai(simdjson::dom::parser &parser, std::string_view body,
                                                           bool chat, const server_config &cfg,
                                                           const std::string &model_name);

// One response object for a whole answer (stream: false): the request's done event (usage,
// cache and RAG extensions) and each choice's end (n = 1: done itself; n > 1: the choice_end
// events, in any order).
std::string render_openai_response(const openai_request &r, const std::string &id, int64_t created,
                                   const std::string &model, const stream_event &done,
                                   const std::vector<stream_event> &ends);
// A stream chunk: role (first), a content delta, the finish reason (last), or usage.
std::string render_openai_chunk(const openai_request &r, const std::string &id, int64_t created,
                                const std::string &model, const stream_event &e, bool first);
std::string render_openai_usage_chunk(const openai_request &r, const std::string &id, int64_t created,
                                      const std::string &model, const chat_usage &u);
// {"error": {...}} with our code in type/code.
std::string render_openai_error(errc code, std::string_view message, std::string_view param = {});
std::string render_models(const std::string &model, int64_t created);

} // namespace actorserve
