#include "net/tokenize_api.h"

#include <boost/json.hpp>

#include "engine/tokenizer.h"
#include "engine/utf8.h"
#include "net/json_request.h"

namespace actorserve {

std::optional<request_problem> parse_tokenize(simdjson::dom::parser &parser, std::string_view body,
                                              const request_limits &limits, tokenize_request &out) {
    simdjson::dom::object obj;
    if (auto p = parse_object(parser, body, obj)) return p;
    bool have_content = false;
    for (auto [k, v] : obj) {
        const std::string_view key = k;
        if (key == "content") {
            if (auto p = get_string(v, key, out.content)) return p;
            if (out.content.size() > limits.max_request_bytes)
                return request_problem{errc::too_large,
                                       "content is " + std::to_string(out.content.size()) + " bytes, over the limit of " +
                                           std::to_string(limits.max_request_bytes),
                                       "content"};
            have_content = true;
        } else if (key == "add_special") {
            if (auto p = get_bool(v, key, out.add_special)) return p;
        } else if (key == "parse_special") {
            if (auto p = get_bool(v, key, out.parse_special)) return p;
        } else if (key == "with_pieces") {
            if (auto p = get_bool(v, key, out.with_pieces)) return p;
        } else {
            return request_problem{errc::invalid_request,
                                   std::string(key.substr(0, 96)) +
                                       " is not a field of /tokenize (content, add_special, parse_special, with_pieces)",
                                   std::string(key.substr(0, 96))};
        }
    }
    if (!have_content) return request_problem{errc::invalid_request, "content is missing", "content"};
    return std::nullopt;
}

std::optional<request_problem> parse_detokenize(simdjson::dom::parser &parser, std::string_view body,
                                                const request_limits &limits, int32_t n_vocab, detokenize_request &out) {
    simdjson::dom::object obj;
    if (auto p = parse_object(parser, body, obj)) return p;
    bool have_tokens = false;
    for (auto [k, v] : obj) {
        const std::string_view key = k;
        if (key != "tokens")
            return request_problem{errc::invalid_request,
                                   std::string(key.substr(0, 96)) + " is not a field of /detokenize (tokens)",
                                   std::string(key.substr(0, 96))};
        simdjson::dom::array a;
        if (v.get_array().get(a)) return request_problem{errc::invalid_request, "tokens must be an array of token ids", "tokens"};
        // A token is at least two bytes of the body ("0,"), so the body's bound bounds this too.
        for (simdjson::dom::element e : a) {
            const std::string where = "tokens[" + std::to_string(out.tokens.size()) + "]";
            int64_t id = 0;
            if (auto p = get_int(e, where, id)) return p;
            if (id < 0 || id >= n_vocab)
                return request_problem{errc::invalid_request,
                                       where + " is " + std::to_string(id) + ", outside the vocabulary [0, " +
                                           std::to_string(n_vocab) + ")",
                                       "tokens"};
            out.tokens.push_back(static_cast<int32_t>(id));
        }
        if (out.tokens.size() > limits.max_request_bytes)
            return request_problem{errc::too_large, "tokens: more than " + std::to_string(limits.max_request_bytes), "tokens"};
        have_tokens = true;
    }
    if (!have_tokens) return request_problem{errc::invalid_request, "tokens is missing", "tokens"};
    return std::nullopt;
}

std::string render_tokenize(const tokenizer &tok, const tokenize_request &r) {
    std::vector<int32_t> ids;
    if (r.add_special && tok.add_bos() && tok.bos() >= 0) ids.push_back(tok.bos());
    const std::vector<int32_t> body = tok.encode(r.content, r.parse_special);
    ids.insert(ids.end(), body.begin(), body.end());
    boost::json::array out;
    out.reserve(ids.size());
    for (int32_t id : ids) {
        if (!r.with_pieces) {
            out.emplace_back(id);
            continue;
        }
        const std::string piece = tok.token_bytes(id, /*render_special=*/true);
        boost::json::value p;
        if (is_valid_utf8(piece)) {
            p = boost::json::string(piece);
        } else {
            boost::json::array bytes;
            for (unsigned char c : piece) bytes.emplace_back(static_cast<int>(c));
            p = std::move(bytes);
        }
        out.emplace_back(boost::json::object{{"id", id}, {"piece", std::move(p)}});
    }
    return boost::json::serialize(boost::json::object{{"tokens", std::move(out)}});
}

std::string render_detokenize(const tokenizer &tok, const detokenize_request &r) {
    utf8_stream s;
    std::string text = s.push(tok.decode(r.tokens, /*render_special=*/true));
    text += s.flush();
    return boost::json::serialize(boost::json::object{{"content", std::move(text)}});
}

} // namespace actorserve
