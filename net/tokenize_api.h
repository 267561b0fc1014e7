// POST /tokenize and POST /detokenize, as llama-server names them (docs/protocol.md): the
// bodies read and the answers rendered. Text in and out is the generation model's tokenizer's.
//
//   /tokenize   {"content": str, "add_special": false, "parse_special": true, "with_pieces": false}
//               -> {"tokens": [id, ...]}  or, with_pieces, [{"id": id, "piece": str | [byte, ...]}]
//   /detokenize {"tokens": [id, ...]}  -> {"content": str}
//
// note: a piece that is not whole UTF-8 (a byte-level token inside a character) is given as its
// bytes, as llama-server does; detokenized text that is not whole UTF-8 has U+FFFD where the
// bytes break, so the answer is always valid JSON text.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "include/actorserve/request_check.h"

namespace actorserve {

class tokenizer;

struct tokenize_request {
    std::string content;
    bool add_special = false;   // BOS first, when the model's file asks for one
    bool parse_special = true;  // "<|im_start|>" written in the text is its control token
    bool with_pieces = false;
};

struct detokenize_request {
    std::vector<int32_t> tokens;
};

// Problems name the field: a wrong type (400), content over the limit (413), a token outside
// the vocabulary (400, naming its index), an unknown field (400).
std::optional<request_problem> parse_tokenize(simdjson::dom::parser &parser, std::string_view body,
                                              const request_limits &limits, tokenize_request &out);
std::optional<request_problem> parse_detokenize(simdjson::dom::parser &parser, std::string_view body,
                                                const request_limits &limits, int32_t n_vocab, detokenize_request &out);

// cost: the tokenizer's (O(len log len)); content is bounded by limits.max_request_bytes.
std::string render_tokenize(const tokenizer &tok, const tokenize_request &r);
std::string render_detokenize(const tokenizer &tok, const detokenize_request &r);

} // namespace actorserve
