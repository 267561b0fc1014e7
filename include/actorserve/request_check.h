// The one check of a chat request's own fields, shared by every way in: the WebSocket protocol
// and the OpenAI API (net/) call it after reading a body, the session (the programmatic API)
// before it renders a prompt. The same bad request gets the same code and message whichever way
// it came. Lower layers keep only what they alone can judge (the KV pool, the queue) and assert
// the rest.
//
// Codes: a field of the wrong shape or value (an unknown role, a raw prompt of two messages,
// invalid UTF-8) is errc::invalid_request; a number outside its range errc::unprocessable; too
// much text errc::too_large; a prompt longer than the context errc::exceed_context.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "include/actorserve/errc.h"

namespace actorserve {

struct chat_request; // include/actorserve/messages.h; this header stays free of CAF

struct request_problem {
    errc code = errc::invalid_request;
    std::string message;                  // names the field and what it must be
    std::string param;                    // the offending field, when there is one
};

struct request_limits {
    int max_tokens = 2048;                // max_tokens must be in [1, max_tokens]
    size_t max_request_bytes = 1 << 20;   // message text per request
    size_t max_stop = 16;                 // stop strings
};

// nullopt when r may be rendered and submitted.
std::optional<request_problem> check_request(const chat_request &r, const request_limits &limits);

// What a request with `rag` hears when the server has no knowledge base (`stopped`: it had one,
// and it stopped). The same for a chat request and for the /v1/rag routes.
request_problem rag_unavailable(bool stopped = false);

// The prompt as the model will see it, `n_prompt` tokens, against a context of n_ctx positions
// (one is left for the first generated token). `what` names it in the message ("prompt", or
// "prompt with the retrieved passages"). Inline: the scheduler (scheduling/, which links nothing
// of the actors) asks it too.
inline std::optional<request_problem> check_prompt(int n_prompt, int n_ctx, const char *what = "prompt") {
    if (n_prompt == 0) return request_problem{errc::invalid_request, std::string("the ") + what + " is empty", "messages"};
    if (n_prompt >= n_ctx)
        return request_problem{errc::exceed_context,
                               std::string(what) + " has " + std::to_string(n_prompt) + " tokens, the context has room for " +
                                   std::to_string(n_ctx - 1) + " plus one generated token",
                               "messages"};
    return std::nullopt;
}

} // namespace actorserve
