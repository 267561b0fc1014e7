// OpenAI's tools on a model whose chat template renders none: tool_choice "required" or a named
// function constrains the answer to the call's JSON, {"name": ..., "arguments": {...}} (the
// functions' parameter schemas compiled as response_format's are, engine/json_grammar.h), the
// functions are described to the model in a system message, and the answer is returned as
// tool_calls. tool_choice "auto" (the default with tools) is refused: only a template that
// renders tools lets the model choose between calling one and answering.
#pragma once

#include <simdjson.h>

#include <optional>
#include <string>
#include <variant>

#include "include/actorserve/messages.h"
#include "include/actorserve/request_check.h"

namespace actorserve {

struct tool_request {
    std::string tools_json;   // the tools array as given (minified), for the system message
    std::string choice;       // "none", "auto", "required", or the named function
    bool present = false;     // tools was given (and not empty)
};

// Reads tools / tool_choice fields as they come.
std::optional<request_problem> read_tools(simdjson::dom::element v, tool_request &t);
std::optional<request_problem> read_tool_choice(simdjson::dom::element v, tool_request &t);

// After the whole body: refuses auto, compiles the call grammar into req.grammar and adds the
// system message. Returns whether the answer is a tool call (false: tools absent or "none").
std::variant<bool, request_problem> apply_tools(simdjson::dom::parser &parser, const tool_request &t, chat_request &req);

// The JSON text of a tool call answer as OpenAI's tool_calls array; nullopt when the text is
// not a whole call (cut by max_tokens).
std::optional<std::string> tool_calls_json(const std::string &answer, const std::string &call_id);

} // namespace actorserve
