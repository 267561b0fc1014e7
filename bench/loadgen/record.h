// One measured request: what the load generator keeps for every request it issued.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loadgen {

// Outcomes, as they appear in reports: "ok", "overloaded" (WebSocket error code `overloaded`,
// HTTP 503 or 429), "error:<type>" (the server's error type, or one of ours: connect, timeout,
// aborted, protocol, http_<status>, incomplete).
inline constexpr const char *kOk = "ok";
inline constexpr const char *kOverloaded = "overloaded";

struct request_record {
    uint64_t id = 0;             // issue order within the run, from 0
    double start_ms = 0;         // issue time, since the run started
    double connect_ms = -1;      // issue -> connection ready (TCP + WebSocket upgrade); <0: never
    double ttft_ms = -1;         // issue -> first token event / first content delta; <0: none came
    double e2e_ms = 0;           // issue -> the request ended (done, error, [DONE], failure)
    std::vector<double> itl_ms;  // (token_events - 1,) gaps between consecutive token events
    int64_t token_events = 0;    // token events / non-empty content deltas received
    int64_t output_tokens = 0;   // usage.completion_tokens when given, else token_events
    int64_t prompt_tokens = -1;  // usage.prompt_tokens; -1: not reported
    int64_t cached_tokens = -1;  // prompt tokens served from the server's prefix cache; -1: not reported
    bool cached = false;         // the server said the whole answer came from its cache ("cached": true)
    std::string outcome;         // kOk, kOverloaded or "error:<type>"
    std::string finish_reason;   // as the server gave it
    int prompt_index = -1;       // index into the prompt set
    bool repeated = false;       // a resend of an earlier prompt (--repeat-fraction)
    bool paraphrased = false;    // ... lightly reworded

    bool ok() const { return outcome == kOk; }
};

} // namespace loadgen
