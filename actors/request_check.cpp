// The one check of a request's fields (include/actorserve/request_check.h).
#include "include/actorserve/request_check.h"

#include "engine/sampler.h"
#include "engine/utf8.h"
#include "include/actorserve/messages.h"

namespace actorserve {

namespace {

request_problem bad(std::string param, std::string message, errc code = errc::invalid_request) {
    return {code, std::move(message), std::move(param)};
}

} // namespace

std::optional<request_problem> check_request(const chat_request &r, const request_limits &limits) {
    if (r.messages.empty()) return bad("messages", "messages is empty");
    if (r.raw && r.messages.size() != 1)
        return bad("messages", "a raw prompt is one message, got " + std::to_string(r.messages.size()));
    size_t bytes = 0;
    for (size_t i = 0; i < r.messages.size(); ++i) {
        const chat_message &m = r.messages[i];
        const std::string where = "messages[" + std::to_string(i) + "]";
        if (m.role != "system" && m.role != "user" && m.role != "assistant")
            return bad(where + ".role", where + ".role must be system, user or assistant, got '" + m.role.substr(0, 32) + "'");
        if (!is_valid_utf8(m.content)) return bad(where + ".content", where + ".content is not valid UTF-8");
        bytes += m.content.size();
    }
    if (bytes > limits.max_request_bytes)
        return bad("messages", "messages hold " + std::to_string(bytes) + " bytes (limit " +
                                   std::to_string(limits.max_request_bytes) + ")", errc::too_large);
    if (r.max_tokens < 1 || r.max_tokens > limits.max_tokens)
        return bad("max_tokens", "max_tokens must be in [1, " + std::to_string(limits.max_tokens) + "], got " +
                                     std::to_string(r.max_tokens), errc::unprocessable);
    if (auto m = validate(r.sampling)) {
        // The engine's message starts with the parameter's name (engine/sampler.h).
        std::string param = m->substr(0, m->find(' '));
        return bad(std::move(param), std::move(*m), errc::unprocessable);
    }
    if (r.stop.size() > limits.max_stop)
        return bad("stop", "stop holds " + std::to_string(r.stop.size()) + " strings (at most " +
                               std::to_string(limits.max_stop) + ")", errc::unprocessable);
    if (r.logprobs < -1 || r.logprobs > 20)
        return bad("top_logprobs", "top_logprobs must be in [0, 20], got " + std::to_string(r.logprobs), errc::unprocessable);
    if (r.rag) {
        if (r.raw) return bad("rag", "rag needs chat messages, not a raw prompt");
        if (r.messages.back().role != "user")
            return bad("rag", "rag searches with the last message, which must be the user's; it is the " +
                                  r.messages.back().role + "'s");
    }
    return std::nullopt;
}

request_problem rag_unavailable(bool stopped) {
    if (stopped) return bad("rag", "retrieval (rag) is unavailable: the knowledge base stopped", errc::not_found);
    return bad("rag", "retrieval (rag) is not enabled on this server ([rag] enabled = false, or its embedding model "
                      "did not load)", errc::not_found);
}

} // namespace actorserve
