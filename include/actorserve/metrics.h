// What the runtime measures, as the metrics actor hands it out: (get_atom) -> metrics_snapshot.
#pragma once

#include <caf/all.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "include/actorserve/messages.h" // get_atom

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

// Bucket upper bounds, in milliseconds. The latency ones are vLLM's (vllm/v1/metrics/loggers.py,
// there in seconds), so dashboards built for vLLM read ours the same way; where vLLM starts
// coarse, finer bounds come first, because a small model on a CPU (or a GPU) answers in a few
// milliseconds and queues rarely last longer than one step.
inline std::vector<double> ttft_buckets_ms() {      // vLLM's time_to_first_token buckets
    return {1, 5, 10, 20, 40, 60, 80, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000, 20000,
            40000, 80000, 160000, 640000, 2560000};
}
inline std::vector<double> itl_buckets_ms() {       // vLLM's inter_token_latency, after 1-5 ms
    return {1, 2.5, 5, 10, 25, 50, 75, 100, 150, 200, 300, 400, 500, 750, 1000, 2500, 5000, 7500,
            10000, 20000, 40000, 80000};
}
inline std::vector<double> request_buckets_ms() {   // e2e and queue: vLLM's request latency, after 1-200 ms
    return {1, 2.5, 5, 10, 25, 50, 100, 200, 300, 500, 800, 1000, 1500, 2000, 2500, 5000, 10000, 15000,
            20000, 30000, 40000, 50000, 60000, 120000, 240000, 480000, 960000, 1920000, 7680000};
}
inline std::vector<double> step_buckets_ms() {     // ours: vLLM has no step duration
    return {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 30000};
}
inline std::vector<double> batch_size_buckets() { return {1, 2, 4, 8, 16, 32, 64, 128, 256}; }

// How requests ended, each counted once. The first five are accepted requests (their sum is
// requests_finished); the last two were refused by the scheduler at submit.
// note: a request the session refuses before submitting (a malformed one, a prompt longer than
// the context, a busy session) never reaches the scheduler and is not counted here.
struct request_outcomes {
    uint64_t stop = 0;        // an end-of-generation token, or a stop string the session
                              // reported as such (stop_atom, actors/scheduler.h)
    uint64_t length = 0;      // max_tokens generated
    uint64_t context = 0;     // the context filled up
    uint64_t cancelled = 0;   // by its client or session, or its client or session went away
    uint64_t error = 0;       // the step computing it failed
    uint64_t rejected = 0;    // it can never run: longer than the context or the KV pool, or invalid
    uint64_t overloaded = 0;  // the queue (max_waiting) or the scheduler's mailbox was full
};

// The answer caches (actors/cache_actor.h), as the cache actor last reported them.
struct cache_metrics {
    bool enabled = false, semantic_enabled = false;
    uint64_t lookups = 0;             // requests offered to the caches
    uint64_t hits_exact = 0, hits_semantic = 0, misses = 0;
    uint64_t bypassed = 0;            // not looked up: the cache actor's mailbox was over its limit
    uint64_t guard_rejections = 0;    // semantic candidates above the threshold that the
                                      // near-miss guard refused
    uint64_t semantic_off = 0;        // first questions of a scope whose semantic hits are off
    uint64_t stores = 0;              // answers stored
    uint64_t stores_dropped = 0;      // answers not stored: the mailbox was over its limit
    uint64_t evictions_exact_lfu = 0, evictions_exact_ttl = 0;
    uint64_t evictions_semantic_lfu = 0, evictions_semantic_ttl = 0;
    uint64_t entries_exact = 0, entries_semantic = 0;
    uint64_t bytes_exact = 0, bytes_semantic = 0;
    uint64_t save_errors = 0;         // saves of [cache] dir that failed (the previous files kept)
};

struct rag_metrics {
    bool enabled = false;
    uint64_t documents = 0, chunks = 0;   // gauges: what the knowledge base holds
    uint64_t searches = 0;                // searches answered (HTTP and chat)
    uint64_t search_errors = 0;           // refused as a caller's mistake
    uint64_t overloaded = 0;              // refused: a mailbox over its limit
    uint64_t documents_added = 0, documents_replaced = 0, documents_unchanged = 0;
    uint64_t documents_rejected = 0, documents_deleted = 0;
    uint64_t chunks_embedded = 0;
    uint64_t save_errors = 0;             // saves of the knowledge-base file that failed (the previous file kept)
    histogram search_ms{request_buckets_ms()};  // search latency, embedding the query included
};

// One executor's device: what it holds, and the device's memory (GPUs; 0 for the CPU).
struct device_metrics {
    std::string name;                 // "cpu", "cuda:0"
    std::string description;          // "NVIDIA H200", "CPU, 2 threads"
    uint64_t weight_bytes = 0;        // the model's weights as this executor holds them
    uint64_t kv_bytes = 0;            // its KV pool
    uint64_t scratch_bytes = 0;       // activations and workspace (GPU)
    uint64_t total_bytes = 0, free_bytes = 0; // the device's memory, as last probed
};

struct metrics_snapshot {
    // gauges, as of the scheduler's last report: after every step, and at once when it refuses
    // or ends a request while no step is due
    int queue_depth = 0;          // requests waiting for admission
    int running = 0;              // sequences holding a KV slot
    int kv_blocks_used = 0;
    int kv_blocks_total = 0;
    int kv_blocks_cached = 0;     // free blocks still holding reusable prefixes
    double tokens_per_s = 0.0;    // generated tokens per second over the last few seconds
    // counters since start
    uint64_t steps = 0;
    uint64_t requests_admitted = 0;
    uint64_t requests_finished = 0;            // accepted requests that ended, however
    uint64_t requests_rejected_overloaded = 0; // = outcomes.overloaded
    request_outcomes outcomes;
    uint64_t preemptions = 0;
    uint64_t preemptions_for_priority = 0; // of preemptions: for a waiting request of a higher class
    uint64_t admitted_by_class[3] = {};    // admitted requests by priority_class (interactive, standard, batch)
    uint64_t prompt_tokens = 0;       // prompt tokens of admitted requests
    uint64_t prefix_hit_tokens = 0;   // prompt tokens served from cached KV blocks
    uint64_t computed_tokens = 0;     // tokens run through the model (recomputation included)
    uint64_t generated_tokens = 0;
    // distributions, milliseconds (batch_size in sequences):
    //   ttft_ms   submit to the first token          itl_ms    between consecutive tokens
    //   e2e_ms    submit to the end, told to its     queue_ms  submit to its first admission
    //             submitter (refusals excluded)                (a KV slot and blocks, in a step)
    histogram ttft_ms{ttft_buckets_ms()}, itl_ms{itl_buckets_ms()};
    histogram e2e_ms{request_buckets_ms()}, queue_ms{request_buckets_ms()};
    histogram step_ms{step_buckets_ms()}, batch_size{batch_size_buckets()};
    cache_metrics cache;
    rag_metrics rag;
    std::vector<device_metrics> devices; // one per executor, in device order
};

// What a client may ask the metrics actor (runtime::metrics()): the snapshot. The actor takes
// more (the samples of the schedulers, executors, caches and retrieval: metrics_actor in
// actors/protocol.h); a metrics_source handle lets a client send only this.
using metrics_source = caf::typed_actor<caf::replies_to<get_atom>::with<metrics_snapshot>>;

} // namespace actorserve

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::metrics_snapshot)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::cache_metrics)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::rag_metrics)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::device_metrics)
