// One completion: evaluate a prompt, then sample and evaluate one token at a time, streaming
// the text through token_bytes -> utf8_stream -> stop_filter -> on_text.
//
// note: each chunk passed to on_text is non-empty, well-formed UTF-8 (no character is split
// between chunks) and free of stop strings; end-of-generation tokens are never emitted.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/forward.h"
#include "engine/sampler.h"
#include "engine/tokenizer.h"

namespace actorserve {

struct generate_params {
    int max_tokens = 256;           // >= 1: tokens sampled at most
    std::vector<std::string> stop;  // stop strings; the text before the first one is emitted
    sampling_params sampling;
    bool render_special = false;    // emit the text of control tokens other than end-of-generation
};

struct generate_stats {
    int n_prompt = 0;               // tokens of the prompt evaluated
    int n_generated = 0;            // tokens sampled, not counting an end-of-generation token
    double prompt_ms = 0.0;         // prompt evaluation
    double gen_ms = 0.0;            // from the end of the prompt to the end of generation
    std::string finish_reason;      // "stop" (end-of-generation token or stop string), "length",
                                    // "context" (no room left to evaluate), "cancelled"
    std::vector<int32_t> tokens;    // (n_generated,) the sampled ids, in order
};

// Appends `prompt` to the sequence in ctx (at ctx.n_past(): the whole prompt for a fresh
// context, or the tokens after what the KV cache already holds in a conversation) and
// generates. on_text may be empty; returning false from it cancels (finish "cancelled").
// After return the KV cache holds the prompt and every sampled token except the last one
// (ctx.n_past() says how many). The repetition penalty sees prompt + generated tokens.
// Returns false with err set for invalid params, an empty prompt, a prompt that does not fit
// ("prompt has 3000 tokens, the context has room for 2048") or a failed eval; a full context
// during generation is not an error.
bool generate(llama_context &ctx, const tokenizer &tok, std::span<const int32_t> prompt,
              const generate_params &params, const std::function<bool(std::string_view)> &on_text,
              generate_stats &stats, std::string &err);

} // namespace actorserve
