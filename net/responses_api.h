// POST /v1/responses, OpenAI's Responses API for text in and text out (docs/protocol.md): the
// body read into a chat request, and the response object and its stream events rendered from a
// request's stream events, so that a response is the same whether it is streamed, retrieved
// while it runs (GET /v1/responses/{id}) or replayed from a sequence number.
//
// Sequence numbers follow from the stream events (net/request_stream.h) one to one: the start
// event gives 0-3 (response.created, response.in_progress, response.output_item.added,
// response.content_part.added), the i-th event, a piece of text, gives 3 + i
// (response.output_text.delta), and the last one the rest (the done events and
// response.completed / response.incomplete, or response.failed).
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "net/config.h"
#include "net/request_stream.h"

namespace actorserve {

struct responses_request {
    chat_request req;
    bool stream = false;
    bool background = false;
    std::string instructions;     // a system message before the input
    std::string model;
};

// Problems name the field. Refused (400): tools, a text.format other than text, previous_response_id,
// conversation, input items other than messages of text, store: false with background.
std::variant<responses_request, request_problem> parse_responses(simdjson::dom::parser &parser, std::string_view body,
                                                                  const server_config &cfg, const std::string &model_name);

// What a response object says, taken from its stream's events so far.
struct response_view {
    std::string id;               // resp_...
    int64_t created_at = 0;
    std::string model;
    std::string status;           // queued, in_progress, completed, incomplete, cancelled, failed
    std::string text;             // the output so far
    std::optional<chat_usage> usage;
    std::string incomplete_reason; // with incomplete: max_output_tokens
    errc error_code = errc::internal;
    std::string error;            // with failed
    int max_output_tokens = 0;
    double temperature = 1.0, top_p = 1.0;
    bool background = false;
};

// The view of a response whose stream holds `events` (from its start); advance: one event more.
response_view view_of(const std::vector<stream_event> &events, response_view base);
void advance(response_view &v, const stream_event &e);
std::string render_response(const response_view &v);

// The first sequence number of the stream event at `index`, and how many it makes.
size_t first_sequence(size_t index);
size_t sequences_of(const stream_event &e);
// The stream events of response v's event at `index`, as (type, JSON), in sequence order.
// v is the response as this event leaves it (its text so far, its status).
std::vector<std::pair<std::string, std::string>> response_events(const stream_event &e, size_t index,
                                                                  const response_view &v);

} // namespace actorserve
