// Runs one load shape against one target and returns every request's record.
//
//   closed loop (rate == 0): `concurrency` virtual users; each sends its next request when its
//     last one ends (after think_ms), so the offered load adapts to the server.
//   open loop (rate > 0): arrivals at exponential intervals (a Poisson process of `rate` per
//     second, from a seeded generator), whatever the server does, so queueing shows; at most
//     max_inflight run at once, and arrivals beyond that are counted as dropped_by_client.
//
// The run stops issuing after `requests` (closed: requests sent; open: arrivals) or `duration_s`,
// whichever comes first, or at ctrl-C; then waits for what is in flight. Every request has its
// own deadline, the run a hard one (timeout_s) after which what is in flight is abandoned.
// One io_context on the calling thread carries every connection.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/loadgen/record.h"
#include "bench/loadgen/request_op.h"
#include "bench/loadgen/target.h"
#include "bench/loadgen/workload.h"

namespace loadgen {

struct load_config {
    int concurrency = 1;            // closed loop users
    double rate = 0;                // > 0: open loop, arrivals per second
    int max_inflight = 256;         // open loop cap
    double think_ms = 0;            // closed loop: pause between a user's requests
    double duration_s = 0;          // 0: no time limit (then requests must be set)
    uint64_t requests = 0;          // 0: no count limit (then duration_s must be set)
    double timeout_s = 900;         // hard limit on the whole run
    double request_timeout_s = 300; // one request, issue to end
    double drain_s = 10;            // after ctrl-C, in-flight requests get this long
};

struct run_options {
    target tgt;
    request_params params;
    load_config load;
    std::vector<prompt> prompts;
    double repeat_fraction = 0;
    uint64_t seed = 1;
    bool progress = true;           // the live line on stderr
};

struct run_result {
    std::string mode;               // "closed" or "open"
    int concurrency = 0;            // closed loop
    double rate = 0;                // open loop
    std::vector<request_record> records; // in order of ending
    double wall_s = 0;              // first issue -> last end
    uint64_t dropped_by_client = 0;
    bool interrupted = false;       // ctrl-C stopped it
    bool timed_out = false;         // the hard limit stopped it
    std::string error;              // non-empty: the run could not start (e.g. unresolvable host)
};

run_result run_load(const run_options &opt);

} // namespace loadgen
