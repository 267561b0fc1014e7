#include "actors/metrics.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <memory>

#include "actors/protocol.h"

namespace actorserve {

histogram::histogram(std::vector<double> upper_bounds)
    : bounds(std::move(upper_bounds)), counts(bounds.size() + 1, 0) {}

void histogram::observe(double v) {
    // cumulative buckets: every bound >= v counts it
    auto first = std::lower_bound(bounds.begin(), bounds.end(), v);
    for (auto i = static_cast<size_t>(first - bounds.begin()); i < bounds.size(); ++i) ++counts[i];
    ++counts.back();
    sum += v;
}

double histogram::quantile(double q) const {
    if (count() == 0) return 0.0;
    const double want = q * static_cast<double>(count());
    for (size_t i = 0; i < bounds.size(); ++i)
        if (static_cast<double>(counts[i]) >= want) return bounds[i];
    return std::numeric_limits<double>::infinity();
}

namespace {

struct metrics_state {
    metrics_snapshot snap;
    // (time, generated tokens) of recent steps, for a sliding tokens/s
    std::deque<std::pair<std::chrono::steady_clock::time_point, int>> recent;
};

} // namespace

caf::behavior metrics_actor(caf::event_based_actor *self, std::chrono::milliseconds rate_window) {
    auto st = std::make_shared<metrics_state>();
    (void)self;
    return {
        [st, rate_window](const metrics_sample &m) {
            metrics_snapshot &s = st->snap;
            s.queue_depth = m.queue_depth;
            s.running = m.running;
            s.kv_blocks_used = m.kv_used;
            s.kv_blocks_total = m.kv_total;
            s.kv_blocks_cached = m.kv_cached;
            s.requests_admitted = m.counts.admitted;
            s.requests_finished = m.counts.finished;
            s.requests_rejected_overloaded = m.counts.rejected_overloaded;
            s.outcomes = {.stop = m.counts.stop, .length = m.counts.length, .context = m.counts.context,
                          .cancelled = m.counts.cancelled, .error = m.counts.error,
                          .rejected = m.counts.rejected, .overloaded = m.counts.rejected_overloaded};
            s.preemptions = m.counts.preempted;
            s.prompt_tokens = m.counts.prompt_tokens;
            s.prefix_hit_tokens = m.counts.prefix_hit_tokens;
            s.computed_tokens = m.counts.computed_tokens;
            s.generated_tokens += static_cast<uint64_t>(m.generated);
            if (m.batch_seqs > 0) {
                ++s.steps;
                s.step_ms.observe(m.step_ms);
                s.batch_size.observe(m.batch_seqs);
            }
            for (double v : m.ttft_ms) s.ttft_ms.observe(v);
            for (double v : m.itl_ms) s.itl_ms.observe(v);
            for (double v : m.queue_ms) s.queue_ms.observe(v);
            for (double v : m.e2e_ms) s.e2e_ms.observe(v);
            const auto now = std::chrono::steady_clock::now();
            st->recent.emplace_back(now, m.generated);
            while (!st->recent.empty() && now - st->recent.front().first > rate_window) st->recent.pop_front();
            int n = 0;
            for (const auto &r : st->recent) n += r.second;
            const double span = st->recent.size() > 1
                ? std::chrono::duration<double>(now - st->recent.front().first).count() : 0.0;
            s.tokens_per_s = span > 0 ? n / span : 0.0;
        },
        [st](const cache_metrics &c) { st->snap.cache = c; },
        [st](const rag_metrics &r) { st->snap.rag = r; },
        [st](get_atom) { return st->snap; },
    };
}

} // namespace actorserve
