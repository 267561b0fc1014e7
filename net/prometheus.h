// GET /metrics: what the runtime and the server measure, in the Prometheus text exposition
// format 0.0.4. Names and meanings are vLLM's with our prefix (vllm:num_requests_running ->
// actorserve_num_requests_running), so dashboards and alerts written for vLLM carry over;
// durations are in seconds, as Prometheus wants, though the runtime keeps milliseconds.
//
//   with label model_name (the runtime, as vLLM labels its engine metrics):
//     actorserve_num_requests_running, _num_requests_waiting, _kv_cache_usage_perc   gauges
//     actorserve_prompt_tokens_total, _generation_tokens_total,
//       _prefix_cache_hit_tokens_total, _preemptions_total,
//       _priority_preemptions_total,
//       _admitted_requests_total{priority="interactive|standard|batch"}              counters
//     actorserve_requests_total{outcome="stop|length|context|cancelled|error|rejected|overloaded"}
//     actorserve_time_to_first_token_seconds, _inter_token_latency_seconds,
//       _e2e_request_latency_seconds, _request_queue_time_seconds,
//       _step_duration_seconds, _batch_size                                          histograms
//   with label model_name, when retrieval is on (docs/rag.md):
//     actorserve_rag_documents, _rag_chunks                                          gauges
//     actorserve_rag_searches_total, _rag_search_errors_total, _rag_overloaded_total,
//       _rag_document_updates_total{outcome="added|replaced|unchanged|rejected|deleted"},
//       _rag_chunks_embedded_total                                                   counters
//     actorserve_rag_search_duration_seconds                                         histogram
//   without labels (the server):
//     actorserve_open_connections, _websocket_connections, _retained_requests,
//       _sessions, _ready                                                            gauges
//     actorserve_connections_refused_total, _request_log_lines_total,
//       _request_log_errors_total                                                    counters
//   when the dynamic temperature is on (docs/policy.md):
//     actorserve_policy_requests_total{kind="factual|code|creative|chat|unclassified"} counter
//   when the prompt-injection guard is on:
//     actorserve_guard_requests_total{outcome="passed|flagged|blocked"}, _guard_unchecked_total counters
//   with label key (the key file's id), when API keys are on:
//     actorserve_key_rate_limited_total{key,limit="rpm|tpm|concurrent"}             counter
//     actorserve_key_requests_running{key}                                           gauge
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "include/actorserve/metrics.h"
#include "net/key_limits.h"
#include "policy/temperature_policy.h"

namespace actorserve {

// What the server knows beside the runtime's metrics_snapshot.
struct server_stats {
    int open_connections = 0;          // HTTP and WebSocket
    int websocket_connections = 0;
    uint64_t connections_refused = 0;  // over server.max_connections, since start
    int retained_requests = 0;         // request streams kept for resume
    int sessions = 0;                  // named sessions (conversations that outlive a connection)
    bool ready = false;                // a runtime is attached: chat requests are served
    struct key_stats {
        std::string id;
        uint64_t refused[kKeyLimits] = {}; // by key_limit
        int running = 0;
    };
    std::vector<key_stats> keys;       // with API keys: one per key
    uint64_t request_log_lines = 0, request_log_errors = 0;
    bool policy = false;                             // the dynamic temperature is on
    uint64_t policy_kinds[kRequestKinds] = {}, policy_unclassified = 0;
    bool guard = false;                              // the prompt-injection guard is on
    uint64_t guard_passed = 0, guard_flagged = 0, guard_blocked = 0, guard_unchecked = 0;
};

// The whole exposition, every family with # HELP and # TYPE. A model_name with quotes,
// backslashes or newlines is escaped. Cost: O(families + buckets), a few KB.
std::string render_prometheus(const metrics_snapshot &m, const server_stats &s, std::string_view model_name);

} // namespace actorserve
