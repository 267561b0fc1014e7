// Sampling parameters the tests share.
#pragma once

#include "cache/request_key.h"
#include "engine/sampler.h"

namespace test_support {

// Greedy decoding (argmax, lowest id on ties): the answer is a function of the prompt, so a test
// can compare it with a reference, with another run, or with what a cache kept.
inline actorserve::sampling_params greedy() {
    actorserve::sampling_params p;
    p.temperature = 0.0f;
    return p;
}

// The same as the cache keys a request: greedy sampling, the other generation parameters at
// their defaults.
inline actorserve::generation_params greedy_generation() {
    actorserve::generation_params p;
    p.sampling = greedy();
    return p;
}

} // namespace test_support
