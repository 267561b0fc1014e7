// What the runtime measures, as the metrics actor hands it out: (get_atom) -> metrics_snapshot.
#pragma once

#include <caf/all.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace actorserve {

// Cumulative fixed-bucket histogram (the Prometheus kind): counts[i] observations <= bounds[i],
// counts.back() all of them.
struct histogram {
    std::vector<double> bounds;    // ascending upper bounds
    std::vector<uint64_t> counts;  // (bounds.size() + 1,) cumulative; last = total
    double sum = 0.0;

    histogram() = default;
    explicit histogram(std::vector<double> upper_bounds);
    void observe(double v);
    uint64_t count() const { return counts.empty() ? 0 : counts.back(); }
    // Upper bound of the bucket holding the q-quantile (0 < q <= 1); +inf past the last bound,
    // 0 when empty. note: bucket resolution only; bench/ computes exact percentiles itself.
    double quantile(double q) const;
};

struct metrics_snapshot {
    // gauges, as of the last step
    int queue_depth = 0;          // requests waiting for admission
    int running = 0;              // sequences holding a KV slot
    int kv_blocks_used = 0;
    int kv_blocks_total = 0;
    int kv_blocks_cached = 0;     // free blocks still holding reusable prefixes
    double tokens_per_s = 0.0;    // generated tokens per second over the last few seconds
    // counters since start
    uint64_t steps = 0;
    uint64_t requests_admitted = 0;
    uint64_t requests_finished = 0;
    uint64_t requests_rejected_overloaded = 0;
    uint64_t preemptions = 0;
    uint64_t prompt_tokens = 0;
    uint64_t prefix_hit_tokens = 0;   // prompt tokens served from cached KV blocks
    uint64_t computed_tokens = 0;     // tokens run through the model (recomputation included)
    uint64_t generated_tokens = 0;
    // distributions, milliseconds (batch_size in sequences)
    histogram ttft_ms, itl_ms, step_ms, batch_size;
};

} // namespace actorserve

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::metrics_snapshot)
