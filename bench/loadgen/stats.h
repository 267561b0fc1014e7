// Report arithmetic: percentiles and the summary of one run.
//
// Percentiles are nearest-rank on the sorted samples: the p-th percentile of n samples is the
// sample at rank ceil(p/100 * n) (1-based), so it is always a measured value, never an
// interpolation. P100 is the maximum; with one sample every percentile is that sample.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bench/loadgen/record.h"

namespace loadgen {

// p in (0, 100]; `sorted` ascending and non-empty (asserted).
double percentile_nearest_rank(const std::vector<double> &sorted, double p);

struct latency_summary {
    size_t n = 0; // samples; the fields below are 0 when n == 0
    double p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0;
};

latency_summary summarize(std::vector<double> samples); // O(n log n): sorts a copy

struct run_summary {
    uint64_t requests = 0;          // ended requests (every record)
    uint64_t ok = 0;
    uint64_t overloaded = 0;
    uint64_t errors = 0;            // neither ok nor overloaded
    std::map<std::string, uint64_t> errors_by_type; // "timeout" -> 2 (without the "error:" prefix)
    uint64_t dropped_by_client = 0; // open loop: arrivals refused because --max-inflight were running
    uint64_t cached = 0;            // ok requests the server answered from its cache
    uint64_t prefix_hits = 0;       // ok requests with cached_tokens > 0
    uint64_t output_tokens = 0;     // over ok requests
    double wall_s = 0;              // first issue -> last end
    double req_per_s = 0;           // ok / wall_s
    double output_tok_per_s = 0;    // output_tokens / wall_s
    double cache_hit_share = 0;     // cached / ok
    latency_summary ttft_ms;        // ok requests that got a token
    latency_summary itl_ms;         // every gap of every ok request, pooled
    latency_summary e2e_ms;         // ok requests
    latency_summary output_tokens_per_request; // ok requests
};

run_summary summarize_run(const std::vector<request_record> &records, double wall_s, uint64_t dropped_by_client);

} // namespace loadgen
