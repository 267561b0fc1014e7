// The retrieval API's bodies (docs/api.md): POST /v1/rag/documents and POST /v1/rag/search read
// into the RAG actor's messages (include/actorserve/rag_messages.h), the "rag" field of a chat request read into
// rag_options, and the actor's replies rendered as JSON. Parsing only: no actor is asked here.
//
// Problems name the field as the client spelled it ("documents[2]: text is missing",
// "filters.since must be Unix seconds or an ISO 8601 date, got 'yesterday'", "rag.top_k must be
// in [1, 50], got 0"). A wrong type or an unknown value is errc::invalid_request (400), a number
// out of range errc::unprocessable (422), as for the chat fields (net/json_request.h).
#pragma once

#include <boost/json/fwd.hpp>
#include <simdjson.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "include/actorserve/rag_messages.h"
#include "include/actorserve/messages.h"
#include "net/json_request.h"

namespace actorserve {

// The limits a request is checked against: the runtime's RAG settings.
struct rag_limits {
    size_t default_top_k = 4;
    size_t max_top_k = 50;
    size_t max_documents = 1000;        // per POST /v1/rag/documents
    size_t max_budget_tokens = 8192;    // rag.budget_tokens of a chat request
};

// {"documents": [doc, ...]} or one doc, where doc is an object read by parse_document_json
// (rag/document.h): "text" (required), "id", "source", "title", "tags", "timestamp", "format".
// Ids: "id" when given, else "source", else "doc-" and 16 hex digits of a hash of the text (the
// same text gets the same id, so posting it twice is `unchanged`). source: given, else the id.
// note: an element is re-serialised to be handed to parse_document_json: one extra copy of the
// body, which is small next to chunking and embedding it.
std::optional<request_problem> parse_rag_documents(simdjson::dom::parser &parser, std::string_view body,
                                                   const rag_limits &lim, std::vector<document_input> &out);

// {"query", "top_k"?, "mode"?, "filters"?}; unknown fields are refused.
std::optional<request_problem> parse_rag_search(simdjson::dom::parser &parser, std::string_view body,
                                                const rag_limits &lim, search_request &out);

// The "rag" field of a chat request (WebSocket or OpenAI): true (the runtime's defaults), false
// or null (none), or {"top_k", "mode", "filters", "budget_tokens"}. key names the field in
// problems ("rag").
std::optional<request_problem> read_rag_options(simdjson::dom::element v, std::string_view key,
                                                std::optional<rag_options> &out);

// A path segment with %XX escapes decoded ("a%2Fb" -> "a/b"); nullopt on a malformed escape.
// '+' stays '+' (it means a space only in query strings).
std::optional<std::string> percent_decode(std::string_view s);

// "hybrid" | "bm25" | "dense".
std::optional<retrieval_mode> parse_retrieval_mode(std::string_view s);
const char *mode_name(retrieval_mode m);

std::string render_rag_ingest(const rag_ingest_reply &r);
std::string render_rag_documents(const rag_status &s);
std::string render_rag_search(const rag_search_reply &r);
std::string render_rag_deleted(const std::string &doc_id);

// A chat answer's sources, for the WebSocket done event and the OpenAI response:
// [{"number", "id", "doc_id", "source", "title", "heading", "score"}] (with "flagged": true for a
// passage that read as instructions and was quoted as data).
boost::json::array render_rag_sources(const std::vector<rag_source> &sources);

} // namespace actorserve
