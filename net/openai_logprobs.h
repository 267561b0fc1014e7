// The logprobs of an OpenAI choice, in the two shapes OpenAI defines them:
//   chat:        {"content": [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob", "bytes"}]}],
//                 "refusal": null}
//   completions: {"tokens": [...], "token_logprobs": [...], "top_logprobs": [{token: logprob}],
//                 "text_offset": [...]}
// A token whose bytes are not valid UTF-8 by themselves (part of a character) is named
// "bytes:\xe2\x80" as OpenAI names such tokens; its "bytes" are exact.
#pragma once

#include <boost/json.hpp>

#include <vector>

#include "include/actorserve/messages.h"

namespace actorserve {

// text_offset: bytes of the answer before the first of these tokens (completions only).
boost::json::value render_chat_logprobs(const std::vector<token_logprob> &lps);
boost::json::value render_completion_logprobs(const std::vector<token_logprob> &lps, size_t text_offset);

} // namespace actorserve
