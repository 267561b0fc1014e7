#include "bench/loadgen/stats.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>

namespace loadgen {

double percentile_nearest_rank(const std::vector<double> &sorted, double p) {
    assert(!sorted.empty() && p > 0 && p <= 100);
    const double n = static_cast<double>(sorted.size());
    auto rank = static_cast<size_t>(std::ceil(p / 100.0 * n)); // 1-based
    rank = std::clamp<size_t>(rank, 1, sorted.size());
    return sorted[rank - 1];
}

latency_summary summarize(std::vector<double> samples) {
    latency_summary s;
    s.n = samples.size();
    if (samples.empty()) return s;
    std::sort(samples.begin(), samples.end());
    s.p50 = percentile_nearest_rank(samples, 50);
    s.p90 = percentile_nearest_rank(samples, 90);
    s.p99 = percentile_nearest_rank(samples, 99);
    s.max = samples.back();
    s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
    return s;
}

run_summary summarize_run(const std::vector<request_record> &records, double wall_s, uint64_t dropped_by_client) {
    run_summary r;
    r.dropped_by_client = dropped_by_client;
    r.wall_s = wall_s;
    std::vector<double> ttft, itl, e2e, toks;
    for (const auto &rec : records) {
        ++r.requests;
        if (rec.outcome == kOverloaded) {
            ++r.overloaded;
            continue;
        }
        if (!rec.ok()) {
            ++r.errors;
            const std::string type = rec.outcome.rfind("error:", 0) == 0 ? rec.outcome.substr(6) : rec.outcome;
            ++r.errors_by_type[type];
            continue;
        }
        ++r.ok;
        if (rec.cached) ++r.cached;
        if (rec.cached_tokens > 0) ++r.prefix_hits;
        r.output_tokens += static_cast<uint64_t>(std::max<int64_t>(rec.output_tokens, 0));
        if (rec.ttft_ms >= 0) ttft.push_back(rec.ttft_ms);
        itl.insert(itl.end(), rec.itl_ms.begin(), rec.itl_ms.end());
        e2e.push_back(rec.e2e_ms);
        toks.push_back(static_cast<double>(rec.output_tokens));
    }
    if (wall_s > 0) {
        r.req_per_s = static_cast<double>(r.ok) / wall_s;
        r.output_tok_per_s = static_cast<double>(r.output_tokens) / wall_s;
    }
    if (r.ok > 0) r.cache_hit_share = static_cast<double>(r.cached) / static_cast<double>(r.ok);
    r.ttft_ms = summarize(std::move(ttft));
    r.itl_ms = summarize(std::move(itl));
    r.e2e_ms = summarize(std::move(e2e));
    r.output_tokens_per_request = summarize(std::move(toks));
    return r;
}

} // namespace loadgen
