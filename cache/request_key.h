// What identifies a request to the caches: the model, the prompt and the parameters that can
// change the answer, serialised canonically so that equal requests give equal bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "store/hash.h"
#include "engine/chat_template.h"
#include "engine/sampler.h"

namespace actorserve {

// The parameters of a request that decide its answer, besides the prompt.
struct generation_params {
    sampling_params sampling;
    int max_tokens = 256;
    std::vector<std::string> stop;   // order does not matter to the answer; canonicalised sorted
};

// Greedy decoding: the answer is a function of the prompt and the parameters.
// note: matches the sampler, which takes temperature <= 0 as argmax.
inline bool is_deterministic(const sampling_params &p) { return p.temperature <= 0.0f; }

// The canonical text of the parameters, e.g. "t=0;rp=1.1;rln=64;max=256;stop=[5:<end>]".
// Parameters that cannot change the answer are left out: under greedy decoding temperature,
// top_k, top_p, min_p and seed; with repeat_penalty 1 (or repeat_last_n 0) the penalty pair.
// Floats are written as their exact bit patterns, so 0.1f and 0.10000001f differ.
std::string canonical_params(const generation_params &p);

// The prompt as the exact cache keys it: the template's markers set off by 0xFF bytes, which
// valid UTF-8 (all message text is checked) never holds, so that a message spelling out
// "<|im_end|>" cannot share a key with a prompt whose turns really end there. The session keys
// with it, and so does bench/cache_fill, which writes caches the server must find.
std::string marked_prompt(const rendered_chat &chat);

// Trims and collapses every run of ASCII whitespace to one space: prompts that differ only in
// spacing or line breaks are the same request.
// note: this is a deliberate approximation; "a\n\nb" and "a b" tokenize differently, and a model
// could answer them differently. The work item asks for it; see docs/cache.md.
std::string normalise_whitespace(std::string_view s);

// An answer as the caches store it.
struct cached_answer {
    std::string text;
    std::string finish_reason;       // "stop", "length"
    int completion_tokens = 0;
};

enum class insert_status { stored, replaced, not_cacheable, too_large, invalid };

} // namespace actorserve
