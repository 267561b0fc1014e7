#include "net/openai_logprobs.h"

#include <cstdio>

#include "engine/utf8.h"

namespace actorserve {

namespace {

std::string token_name(const std::string &bytes) {
    if (is_valid_utf8(bytes)) return bytes;
    std::string s = "bytes:";
    char hex[5];
    for (unsigned char c : bytes) {
        std::snprintf(hex, sizeof hex, "\\x%02x", c);
        s += hex;
    }
    return s;
}

boost::json::array byte_list(const std::string &bytes) {
    boost::json::array a;
    a.reserve(bytes.size());
    for (unsigned char c : bytes) a.emplace_back(static_cast<int>(c));
    return a;
}

boost::json::object entry(const std::string &bytes, float logprob) {
    return {{"token", token_name(bytes)}, {"logprob", logprob}, {"bytes", byte_list(bytes)}};
}

} // namespace

boost::json::value render_chat_logprobs(const std::vector<token_logprob> &lps) {
    boost::json::array content;
    content.reserve(lps.size());
    for (const token_logprob &t : lps) {
        boost::json::object o = entry(t.bytes, t.logprob);
        boost::json::array top;
        for (const token_alternative &a : t.top) top.emplace_back(entry(a.bytes, a.logprob));
        o["top_logprobs"] = std::move(top);
        content.emplace_back(std::move(o));
    }
    return boost::json::object{{"content", std::move(content)}, {"refusal", nullptr}};
}

boost::json::value render_completion_logprobs(const std::vector<token_logprob> &lps, size_t text_offset) {
    boost::json::array tokens, token_logprobs, top_logprobs, offsets;
    for (const token_logprob &t : lps) {
        tokens.emplace_back(token_name(t.bytes));
        token_logprobs.emplace_back(t.logprob);
        boost::json::object top;
        for (const token_alternative &a : t.top) {
            std::string name = token_name(a.bytes);
            if (!top.contains(name)) top[name] = a.logprob; // tokens of one name (specials): the likeliest
        }
        top_logprobs.emplace_back(std::move(top));
        offsets.emplace_back(text_offset);
        text_offset += t.bytes.size();
    }
    return boost::json::object{{"tokens", std::move(tokens)},
                               {"token_logprobs", std::move(token_logprobs)},
                               {"top_logprobs", std::move(top_logprobs)},
                               {"text_offset", std::move(offsets)}};
}

} // namespace actorserve
