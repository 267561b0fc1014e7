#include "net/prometheus.h"

#include <algorithm>

#include <charconv>
#include <cmath>
#include <utility>

namespace actorserve {

namespace {

// A number as Prometheus parses it (Go's strconv.ParseFloat): the shortest decimal that reads
// back to the same double, and +Inf, -Inf, NaN spelled so. std::to_chars ignores the locale,
// which printf and streams do not (a German locale would write 0,5).
void put_double(std::string &out, double v) {
    if (std::isnan(v)) {
        out += "NaN";
        return;
    }
    if (std::isinf(v)) {
        out += v > 0 ? "+Inf" : "-Inf";
        return;
    }
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}

void put_count(std::string &out, uint64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}

// A label value between double quotes: backslash, double quote and newline are escaped.
std::string label_value(std::string_view v) {
    std::string out;
    for (char c : v) {
        if (c == '\\') out += "\\\\";
        else if (c == '"') out += "\\\"";
        else if (c == '\n') out += "\\n";
        else out += c;
    }
    return out;
}

class exposition {
public:
    explicit exposition(std::string_view model_name) : model_("model_name=\"" + label_value(model_name) + "\"") {}

    // note: HELP texts here are constants without backslashes or newlines, which HELP would
    // have to escape.
    void family(std::string_view name, std::string_view type, std::string_view help) {
        out_.append("# HELP ").append(name).append(" ").append(help).append("\n");
        out_.append("# TYPE ").append(name).append(" ").append(type).append("\n");
    }

    // One sample of a runtime metric, labelled with the model (and `extra`, "key=\"value\"").
    void model_sample(std::string_view name, double v, std::string_view extra = {}) {
        out_.append(name).append("{").append(model_);
        if (!extra.empty()) out_.append(",").append(extra);
        out_.append("} ");
        put_double(out_, v);
        out_ += '\n';
    }
    void model_count(std::string_view name, uint64_t v, std::string_view extra = {}) {
        out_.append(name).append("{").append(model_);
        if (!extra.empty()) out_.append(",").append(extra);
        out_.append("} ");
        put_count(out_, v);
        out_ += '\n';
    }

    // One sample of a server metric: no labels.
    void plain(std::string_view name, double v) {
        out_.append(name).append(" ");
        put_double(out_, v);
        out_ += '\n';
    }
    void labelled_count(std::string_view name, uint64_t v, std::string_view labels) {
        out_.append(name).append("{").append(labels).append("} ");
        put_count(out_, v);
        out_ += '\n';
    }
    void plain_count(std::string_view name, uint64_t v) {
        out_.append(name).append(" ");
        put_count(out_, v);
        out_ += '\n';
    }

    // A histogram, its bounds and sum divided by `per_unit` (1000: milliseconds to seconds).
    // Buckets are cumulative already (include/actorserve/metrics.h) and end with +Inf = _count.
    // note: divided, not multiplied by 1e-3: division is correctly rounded, so 9 ms prints
    // 0.009, where 9 * 1e-3 prints 0.009000000000000001 (1e-3 is not exact in binary).
    void histogram_family(std::string_view name, std::string_view help, const histogram &h, double per_unit) {
        family(name, "histogram", help);
        const std::string bucket = std::string(name) + "_bucket";
        const bool whole = h.counts.size() == h.bounds.size() + 1; // a default histogram has neither
        if (whole) {
            for (size_t i = 0; i < h.bounds.size(); ++i) {
                std::string le = "le=\"";
                put_double(le, h.bounds[i] / per_unit);
                le += '"';
                model_count(bucket, h.counts[i], le);
            }
        }
        model_count(bucket, h.count(), "le=\"+Inf\"");
        model_sample(std::string(name) + "_sum", h.sum / per_unit);
        model_count(std::string(name) + "_count", h.count());
    }

    std::string take() { return std::move(out_); }

private:
    std::string model_;  // the model_name label, rendered once
    std::string out_;
};

} // namespace

std::string render_prometheus(const metrics_snapshot &m, const server_stats &s, std::string_view model_name) {
    exposition e(model_name);
    constexpr double ms = 1000; // per second

    e.family("actorserve_num_requests_running", "gauge", "Number of requests in model execution batches (holding a KV slot).");
    e.model_sample("actorserve_num_requests_running", m.running);
    e.family("actorserve_num_requests_waiting", "gauge", "Number of requests waiting to be processed (queued for admission).");
    e.model_sample("actorserve_num_requests_waiting", m.queue_depth);
    e.family("actorserve_kv_cache_usage_perc", "gauge",
             "KV-cache usage. 1 means 100 percent usage. Blocks that only hold reusable prefixes count as free.");
    e.model_sample("actorserve_kv_cache_usage_perc",
                   m.kv_blocks_total > 0 ? static_cast<double>(m.kv_blocks_used) / m.kv_blocks_total : 0.0);

    e.family("actorserve_prompt_tokens_total", "counter", "Number of prompt tokens of admitted requests.");
    e.model_count("actorserve_prompt_tokens_total", m.prompt_tokens);
    e.family("actorserve_generation_tokens_total", "counter", "Number of generation tokens processed.");
    e.model_count("actorserve_generation_tokens_total", m.generated_tokens);
    e.family("actorserve_prefix_cache_hit_tokens_total", "counter",
             "Prompt tokens served from the prefix cache, not computed (of actorserve_prompt_tokens_total).");
    e.model_count("actorserve_prefix_cache_hit_tokens_total", m.prefix_hit_tokens);
    e.family("actorserve_preemptions_total", "counter", "Cumulative number of preemptions from the scheduler.");
    e.model_count("actorserve_preemptions_total", m.preemptions);
    e.family("actorserve_priority_preemptions_total", "counter",
             "Preemptions for a waiting request of a higher priority class (of actorserve_preemptions_total).");
    e.model_count("actorserve_priority_preemptions_total", m.preemptions_for_priority);
    e.family("actorserve_admitted_requests_total", "counter", "Requests admitted to a batch, by priority class.");
    for (int k = 0; k < kPriorityClasses; ++k)
        e.model_count("actorserve_admitted_requests_total", m.admitted_by_class[k],
                      "priority=\"" + std::string(name(static_cast<priority_class>(k))) + "\"");

    e.family("actorserve_requests_total", "counter",
             "Requests by how they ended: stop, length, context, cancelled, error; or refused at submit: "
             "rejected (can never run), overloaded (queue full).");
    const request_outcomes &o = m.outcomes;
    const std::pair<const char *, uint64_t> outcomes[] = {
        {"stop", o.stop},   {"length", o.length},     {"context", o.context},       {"cancelled", o.cancelled},
        {"error", o.error}, {"rejected", o.rejected}, {"overloaded", o.overloaded},
    };
    for (const auto &[name, n] : outcomes)
        e.model_count("actorserve_requests_total", n, std::string("outcome=\"") + name + "\"");

    e.histogram_family("actorserve_time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                       m.ttft_ms, ms);
    e.histogram_family("actorserve_inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
                       m.itl_ms, ms);
    e.histogram_family("actorserve_e2e_request_latency_seconds",
                       "Histogram of e2e request latency in seconds (submit to end, refusals excluded).", m.e2e_ms, ms);
    e.histogram_family("actorserve_request_queue_time_seconds",
                       "Histogram of time spent waiting for admission (a KV slot and blocks), in seconds.", m.queue_ms, ms);
    e.histogram_family("actorserve_step_duration_seconds", "Histogram of the duration of one batched step in seconds.",
                       m.step_ms, ms);
    e.histogram_family("actorserve_batch_size", "Histogram of the number of sequences in one step.", m.batch_size, 1);

    if (m.cache.enabled) {
        const cache_metrics &c = m.cache;
        e.family("actorserve_cache_lookups_total", "counter", "Requests offered to the answer caches (bypassed ones included).");
        e.model_count("actorserve_cache_lookups_total", c.lookups + c.bypassed);
        e.family("actorserve_cache_hits_total", "counter", "Requests answered from a cache, by cache.");
        e.model_count("actorserve_cache_hits_total", c.hits_exact, "cache=\"exact\"");
        e.model_count("actorserve_cache_hits_total", c.hits_semantic, "cache=\"semantic\"");
        e.family("actorserve_cache_misses_total", "counter", "Lookups that found no answer (the request was generated).");
        e.model_count("actorserve_cache_misses_total", c.misses);
        e.family("actorserve_cache_bypassed_total", "counter",
                 "Requests not looked up because the cache actor's mailbox was over its limit.");
        e.model_count("actorserve_cache_bypassed_total", c.bypassed);
        e.family("actorserve_cache_guard_rejections_total", "counter",
                 "Semantic candidates above the threshold refused by the near-miss guard.");
        e.model_count("actorserve_cache_guard_rejections_total", c.guard_rejections);
        e.family("actorserve_cache_save_errors_total", "counter",
                 "Saves of the answer caches that failed (a full disk, say); the previous files are kept.");
        e.model_count("actorserve_cache_save_errors_total", c.save_errors);
        e.family("actorserve_cache_semantic_off_total", "counter",
                 "First questions not looked up by meaning: their scope is in [cache] semantic_off.");
        e.model_count("actorserve_cache_semantic_off_total", c.semantic_off);
        e.family("actorserve_cache_stores_total", "counter", "Answers stored, or not stored (dropped) for a full mailbox.");
        e.model_count("actorserve_cache_stores_total", c.stores, "result=\"stored\"");
        e.model_count("actorserve_cache_stores_total", c.stores_dropped, "result=\"dropped\"");
        e.family("actorserve_cache_evictions_total", "counter", "Entries evicted, by cache and cause (lfu: for space; ttl: expired).");
        e.model_count("actorserve_cache_evictions_total", c.evictions_exact_lfu, "cache=\"exact\",cause=\"lfu\"");
        e.model_count("actorserve_cache_evictions_total", c.evictions_exact_ttl, "cache=\"exact\",cause=\"ttl\"");
        e.model_count("actorserve_cache_evictions_total", c.evictions_semantic_lfu, "cache=\"semantic\",cause=\"lfu\"");
        e.model_count("actorserve_cache_evictions_total", c.evictions_semantic_ttl, "cache=\"semantic\",cause=\"ttl\"");
        e.family("actorserve_cache_entries", "gauge", "Entries held, by cache.");
        e.model_count("actorserve_cache_entries", c.entries_exact, "cache=\"exact\"");
        e.model_count("actorserve_cache_entries", c.entries_semantic, "cache=\"semantic\"");
        e.family("actorserve_cache_bytes", "gauge", "Bytes held (as the caches count them), by cache.");
        e.model_count("actorserve_cache_bytes", c.bytes_exact, "cache=\"exact\"");
        e.model_count("actorserve_cache_bytes", c.bytes_semantic, "cache=\"semantic\"");
    }

    if (!m.devices.empty()) {
        e.family("actorserve_device_memory_bytes", "gauge",
                 "Memory an executor holds on its device, by device and use (weights, kv, scratch).");
        for (const device_metrics &d : m.devices) {
            const std::string dev = "device=\"" + d.name + "\"";
            e.model_count("actorserve_device_memory_bytes", d.weight_bytes, dev + ",use=\"weights\"");
            e.model_count("actorserve_device_memory_bytes", d.kv_bytes, dev + ",use=\"kv\"");
            e.model_count("actorserve_device_memory_bytes", d.scratch_bytes, dev + ",use=\"scratch\"");
        }
        const bool any_gpu = std::any_of(m.devices.begin(), m.devices.end(), [](const device_metrics &d) { return d.total_bytes > 0; });
        if (any_gpu) {
            e.family("actorserve_device_memory_total_bytes", "gauge", "A GPU's memory.");
            for (const device_metrics &d : m.devices)
                if (d.total_bytes > 0) e.model_count("actorserve_device_memory_total_bytes", d.total_bytes, "device=\"" + d.name + "\"");
            e.family("actorserve_device_memory_free_bytes", "gauge", "A GPU's free memory, as last probed.");
            for (const device_metrics &d : m.devices)
                if (d.total_bytes > 0) e.model_count("actorserve_device_memory_free_bytes", d.free_bytes, "device=\"" + d.name + "\"");
        }
    }

    if (m.rag.enabled) {
        const rag_metrics &r = m.rag;
        e.family("actorserve_rag_documents", "gauge", "Documents in the knowledge base.");
        e.model_count("actorserve_rag_documents", r.documents);
        e.family("actorserve_rag_chunks", "gauge", "Chunks (indexed passages) in the knowledge base.");
        e.model_count("actorserve_rag_chunks", r.chunks);
        e.family("actorserve_rag_searches_total", "counter", "Searches answered (HTTP and chat requests).");
        e.model_count("actorserve_rag_searches_total", r.searches);
        e.family("actorserve_rag_search_errors_total", "counter", "Searches refused as a caller's mistake.");
        e.model_count("actorserve_rag_search_errors_total", r.search_errors);
        e.family("actorserve_rag_overloaded_total", "counter", "Requests refused because a RAG mailbox was over its limit.");
        e.model_count("actorserve_rag_overloaded_total", r.overloaded);
        e.family("actorserve_rag_save_errors_total", "counter",
                 "Saves of the knowledge-base file that failed (a full disk, say); the previous file is kept.");
        e.model_count("actorserve_rag_save_errors_total", r.save_errors);
        e.family("actorserve_rag_document_updates_total", "counter",
                 "Documents offered, by outcome: added, replaced, unchanged, rejected; and deleted.");
        const std::pair<const char *, uint64_t> docs[] = {
            {"added", r.documents_added},       {"replaced", r.documents_replaced}, {"unchanged", r.documents_unchanged},
            {"rejected", r.documents_rejected}, {"deleted", r.documents_deleted},
        };
        for (const auto &[name, n] : docs)
            e.model_count("actorserve_rag_document_updates_total", n, std::string("outcome=\"") + name + "\"");
        e.family("actorserve_rag_chunks_embedded_total", "counter", "Chunks embedded at ingestion.");
        e.model_count("actorserve_rag_chunks_embedded_total", r.chunks_embedded);
        e.histogram_family("actorserve_rag_search_duration_seconds",
                           "Histogram of search latency in seconds, embedding the query included.", r.search_ms, ms);
    }

    e.family("actorserve_open_connections", "gauge", "Open HTTP and WebSocket connections.");
    e.plain("actorserve_open_connections", s.open_connections);
    e.family("actorserve_websocket_connections", "gauge", "Open WebSocket connections.");
    e.plain("actorserve_websocket_connections", s.websocket_connections);
    e.family("actorserve_connections_refused_total", "counter", "Connections refused over the connection limit.");
    e.plain_count("actorserve_connections_refused_total", s.connections_refused);
    e.family("actorserve_retained_requests", "gauge", "Request streams retained for resume.");
    e.plain("actorserve_retained_requests", s.retained_requests);
    e.family("actorserve_sessions", "gauge", "Named sessions (conversations that outlive a connection).");
    e.plain("actorserve_sessions", s.sessions);
    if (!s.keys.empty()) {
        e.family("actorserve_key_rate_limited_total", "counter", "Requests refused over an API key's limit, by key id and limit.");
        for (const server_stats::key_stats &k : s.keys)
            for (int l = 0; l < kKeyLimits; ++l)
                e.labelled_count("actorserve_key_rate_limited_total", k.refused[l],
                                 "key=\"" + label_value(k.id) + "\",limit=\"" + std::string(name(static_cast<key_limit>(l))) + "\"");
        e.family("actorserve_key_requests_running", "gauge", "Requests an API key has running now.");
        for (const server_stats::key_stats &k : s.keys)
            e.labelled_count("actorserve_key_requests_running", static_cast<uint64_t>(k.running), "key=\"" + label_value(k.id) + "\"");
    }
    if (s.policy) {
        e.family("actorserve_policy_requests_total", "counter",
                 "Requests given a temperature by the dynamic temperature, by the kind it saw (unclassified: no vector came).");
        for (int k = 0; k < kRequestKinds; ++k)
            e.labelled_count("actorserve_policy_requests_total", s.policy_kinds[k],
                             "kind=\"" + std::string(kRequestKindNames[k]) + "\"");
        e.labelled_count("actorserve_policy_requests_total", s.policy_unclassified, "kind=\"unclassified\"");
    }
    if (s.guard) {
        e.family("actorserve_guard_requests_total", "counter",
                 "Requests the prompt-injection guard checked, by outcome (flagged: served and marked; blocked: refused).");
        e.labelled_count("actorserve_guard_requests_total", s.guard_passed, "outcome=\"passed\"");
        e.labelled_count("actorserve_guard_requests_total", s.guard_flagged, "outcome=\"flagged\"");
        e.labelled_count("actorserve_guard_requests_total", s.guard_blocked, "outcome=\"blocked\"");
        e.family("actorserve_guard_unchecked_total", "counter",
                 "Requests the guard's classifier could not read (no embedding came): the rules alone judged them.");
        e.plain_count("actorserve_guard_unchecked_total", s.guard_unchecked);
    }
    e.family("actorserve_request_log_lines_total", "counter", "Lines written to the request log ([request_log]).");
    e.plain_count("actorserve_request_log_lines_total", s.request_log_lines);
    e.family("actorserve_request_log_errors_total", "counter", "Request log lines that could not be written.");
    e.plain_count("actorserve_request_log_errors_total", s.request_log_errors);
    e.family("actorserve_ready", "gauge", "1 when chat requests are served, 0 while the model loads.");
    e.plain("actorserve_ready", s.ready ? 1 : 0);
    return e.take();
}

} // namespace actorserve
