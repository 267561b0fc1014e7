// How a request wants its tokens drawn: the sampler's parameters, as the programmatic API, the
// network and the engine's sampler (engine/sampler.h) all read them.
//
// note: this header, like errc.h, finish_reason.h, chat_message.h and retrieval.h, depends on
// the standard library only; every layer may include it, the engine included.
#pragma once

#include <cstdint>

namespace actorserve {

struct sampling_params {
    float temperature = 0.8f;   // <= 0: greedy (argmax, lowest id on ties)
    int top_k = 40;             // keep the k highest logits; 0 = off
    float top_p = 0.95f;        // keep the smallest most-likely set with cumulative p >= top_p; 1 = off
    float min_p = 0.05f;        // keep tokens with p >= min_p * p_max; 0 = off
    float repeat_penalty = 1.0f; // 1 = off
    int repeat_last_n = 64;     // history tokens the penalty looks at; 0 = off
    uint64_t seed = 0;
};

} // namespace actorserve
