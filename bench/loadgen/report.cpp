#include "bench/loadgen/report.h"

#include <fstream>

namespace loadgen {

namespace json = boost::json;

report_point make_point(run_result r) {
    report_point p;
    p.summary = summarize_run(r.records, r.wall_s, r.dropped_by_client);
    p.result = std::move(r);
    return p;
}

namespace {

unsigned long long ull(uint64_t v) { return static_cast<unsigned long long>(v); }

std::string errors_text(const run_summary &s) {
    std::string out;
    for (const auto &[type, n] : s.errors_by_type)
        out += (out.empty() ? "" : ", ") + type + " " + std::to_string(n);
    return out.empty() ? "none" : out;
}

void latency_row(std::FILE *out, const char *name, const latency_summary &l) {
    if (l.n == 0) {
        std::fprintf(out, "  %-6s %9s %9s %9s %9s %8zu\n", name, "-", "-", "-", "-", l.n);
        return;
    }
    std::fprintf(out, "  %-6s %9.1f %9.1f %9.1f %9.1f %8zu\n", name, l.p50, l.p90, l.p99, l.max, l.n);
}

json::object latency_json(const latency_summary &l) {
    json::object o{{"n", l.n}};
    if (l.n == 0) {
        for (const char *k : {"p50", "p90", "p99", "max", "mean"}) o[k] = nullptr;
        return o;
    }
    o["p50"] = l.p50;
    o["p90"] = l.p90;
    o["p99"] = l.p99;
    o["max"] = l.max;
    o["mean"] = l.mean;
    return o;
}

std::string shape(const run_result &r) {
    if (r.mode == "open") {
        char buf[64];
        std::snprintf(buf, sizeof buf, "open loop, %.2f req/s (Poisson)", r.rate);
        return buf;
    }
    return "closed loop, concurrency " + std::to_string(r.concurrency);
}

} // namespace

void print_run_table(std::FILE *out, const report_point &p) {
    const auto &s = p.summary;
    std::fprintf(out, "%s%s%s\n", shape(p.result).c_str(), p.result.interrupted ? " (interrupted)" : "",
                 p.result.timed_out ? " (hard timeout)" : "");
    std::fprintf(out, "  requests %llu  ok %llu  overloaded %llu  errors %llu (%s)  dropped_by_client %llu\n",
                 ull(s.requests), ull(s.ok), ull(s.overloaded), ull(s.errors), errors_text(s).c_str(),
                 ull(s.dropped_by_client));
    std::fprintf(out, "  wall %.2f s  req/s %.2f  output tok/s %.1f  output tokens %llu  cache hits %llu (%.1f%%)  "
                      "prefix reuse %llu\n",
                 s.wall_s, s.req_per_s, s.output_tok_per_s, ull(s.output_tokens), ull(s.cached),
                 100.0 * s.cache_hit_share, ull(s.prefix_hits));
    std::fprintf(out, "  %-6s %9s %9s %9s %9s %8s\n", "ms", "P50", "P90", "P99", "max", "samples");
    latency_row(out, "TTFT", s.ttft_ms);
    latency_row(out, "ITL", s.itl_ms);
    latency_row(out, "E2E", s.e2e_ms);
}

void print_sweep_table(std::FILE *out, const std::vector<report_point> &points) {
    std::fprintf(out, "| conc | requests | ok | overloaded | errors | req/s | output tok/s | TTFT P50 | TTFT P90 | TTFT P99 | "
                      "ITL P50 | ITL P99 | E2E P50 | E2E P99 | E2E max |\n");
    std::fprintf(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (const auto &p : points) {
        const auto &s = p.summary;
        std::fprintf(out, "| %d | %llu | %llu | %llu | %llu | %.2f | %.1f | %.0f | %.0f | %.0f | %.1f | %.1f | %.0f | %.0f | %.0f |\n",
                     p.result.concurrency, ull(s.requests), ull(s.ok), ull(s.overloaded), ull(s.errors), s.req_per_s,
                     s.output_tok_per_s, s.ttft_ms.p50, s.ttft_ms.p90, s.ttft_ms.p99, s.itl_ms.p50, s.itl_ms.p99,
                     s.e2e_ms.p50, s.e2e_ms.p99, s.e2e_ms.max);
    }
    std::fprintf(out, "(latencies in ms; percentiles nearest-rank)\n");
}

json::object summary_json(const run_summary &s) {
    json::object errs;
    for (const auto &[type, n] : s.errors_by_type) errs[type] = n;
    return json::object{{"requests", s.requests},
                        {"ok", s.ok},
                        {"overloaded", s.overloaded},
                        {"errors", s.errors},
                        {"errors_by_type", std::move(errs)},
                        {"dropped_by_client", s.dropped_by_client},
                        {"cached", s.cached},
                        {"prefix_hits", s.prefix_hits},
                        {"cache_hit_share", s.cache_hit_share},
                        {"output_tokens", s.output_tokens},
                        {"wall_s", s.wall_s},
                        {"req_per_s", s.req_per_s},
                        {"output_tok_per_s", s.output_tok_per_s},
                        {"ttft_ms", latency_json(s.ttft_ms)},
                        {"itl_ms", latency_json(s.itl_ms)},
                        {"e2e_ms", latency_json(s.e2e_ms)},
                        {"output_tokens_per_request", latency_json(s.output_tokens_per_request)}};
}

json::object record_json(const request_record &r) {
    json::array itl;
    itl.reserve(r.itl_ms.size());
    for (double g : r.itl_ms) itl.push_back(g);
    json::object o{{"id", r.id},
                   {"outcome", r.outcome},
                   {"start_ms", r.start_ms},
                   {"connect_ms", r.connect_ms >= 0 ? json::value(r.connect_ms) : json::value(nullptr)},
                   {"ttft_ms", r.ttft_ms >= 0 ? json::value(r.ttft_ms) : json::value(nullptr)},
                   {"e2e_ms", r.e2e_ms},
                   {"itl_ms", std::move(itl)},
                   {"token_events", r.token_events},
                   {"output_tokens", r.output_tokens},
                   {"prompt_tokens", r.prompt_tokens >= 0 ? json::value(r.prompt_tokens) : json::value(nullptr)},
                   {"cached_tokens", r.cached_tokens >= 0 ? json::value(r.cached_tokens) : json::value(nullptr)},
                   {"cached", r.cached},
                   {"finish_reason", r.finish_reason},
                   {"prompt_index", r.prompt_index},
                   {"repeated", r.repeated},
                   {"paraphrased", r.paraphrased}};
    return o;
}

json::object report_json(const target &tgt, const json::object &config, const std::vector<report_point> &points) {
    json::array runs;
    for (const auto &p : points) {
        json::array recs;
        for (const auto &r : p.result.records) recs.push_back(record_json(r));
        runs.push_back(json::object{{"mode", p.result.mode},
                                    {"concurrency", p.result.concurrency},
                                    {"rate", p.result.rate},
                                    {"interrupted", p.result.interrupted},
                                    {"timed_out", p.result.timed_out},
                                    {"summary", summary_json(p.summary)},
                                    {"records", std::move(recs)}});
    }
    return json::object{{"tool", "actorserve-bench"},
                        {"target", {{"url", tgt.url()}, {"api", tgt.api == api_kind::openai ? "openai" : "actorserve"}}},
                        {"percentiles", "nearest-rank"},
                        {"config", config},
                        {"runs", std::move(runs)}};
}

bool write_text_file(const std::string &path, const std::string &text, std::string &err) {
    std::ofstream f(path, std::ios::binary);
    if (!f) {
        err = "cannot write " + path;
        return false;
    }
    f << text;
    if (!f) {
        err = "write failed: " + path;
        return false;
    }
    return true;
}

} // namespace loadgen
