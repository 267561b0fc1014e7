// POST /v1/embeddings (OpenAI's shape, docs/protocol.md): the body read into an embed_request
// and the embeddings actor's reply rendered.
//
//   {"input": str | [str, ...], "model": "all-MiniLM-L6-v2", "encoding_format": "float" | "base64",
//    "dimensions": 384, "user": str}
//   -> {"object": "list", "data": [{"object": "embedding", "index": i, "embedding": [...] | "<base64>"}],
//       "model": ..., "usage": {"prompt_tokens": n, "total_tokens": n}}
//
// base64 is the vector's float32 values, little-endian, as OpenAI sends them (the openai Python
// client asks for it by default). Token-id inputs are refused: the ids of which tokenizer would
// be a guess.
#pragma once

#include <simdjson.h>

#include <optional>
#include <string>
#include <string_view>

#include "include/actorserve/embed_messages.h"
#include "include/actorserve/request_check.h"

namespace actorserve {

struct embeddings_call {
    embed_request req;
    bool base64 = false;
};

// Problems name the field: a wrong type or an unsupported value (400), another model (404),
// texts over the limits (413: limits.max_request_bytes in all). The embeddings actor checks the
// rest (empty or malformed texts, dimensions).
std::optional<request_problem> parse_embeddings(simdjson::dom::parser &parser, std::string_view body,
                                                const request_limits &limits, const embedding_settings &s,
                                                embeddings_call &out);

std::string render_embeddings(const embed_reply &r, bool base64, const std::string &model_id);

} // namespace actorserve
