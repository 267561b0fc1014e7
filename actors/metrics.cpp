#include "actors/metrics.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
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
    // Each device's scheduler reports its own gauges and cumulative counts; the snapshot holds
    // their sums. (device, its last sample without the per-step lists)
    std::map<int, metrics_sample> last;
    // (time, generated tokens) of recent steps, for a sliding tokens/s
    std::deque<std::pair<std::chrono::steady_clock::time_point, int>> recent;
};

metrics_actor::behavior_type metrics_impl(metrics_actor::pointer self, std::chrono::milliseconds rate_window) {
    auto st = std::make_shared<metrics_state>();
    (void)self;
    return {
        [st, rate_window](const metrics_sample &m) {
            metrics_snapshot &s = st->snap;
            metrics_sample &mine = st->last[m.device];
            mine.queue_depth = m.queue_depth;
            mine.running = m.running;
            mine.kv_used = m.kv_used;
            mine.kv_total = m.kv_total;
            mine.kv_cached = m.kv_cached;
            mine.counts = m.counts;
            metrics_sample sum;
            for (const auto &[d, x] : st->last) {
                sum.queue_depth += x.queue_depth;
                sum.running += x.running;
                sum.kv_used += x.kv_used;
                sum.kv_total += x.kv_total;
                sum.kv_cached += x.kv_cached;
                sum.counts += x.counts;
            }
            s.queue_depth = sum.queue_depth;
            s.running = sum.running;
            s.kv_blocks_used = sum.kv_used;
            s.kv_blocks_total = sum.kv_total;
            s.kv_blocks_cached = sum.kv_cached;
            const scheduler_counts &c = sum.counts;
            s.requests_admitted = c.admitted;
            s.requests_finished = c.finished;
            s.requests_rejected_overloaded = c.rejected_overloaded;
            s.outcomes = {.stop = c.stop, .length = c.length, .context = c.context, .cancelled = c.cancelled,
                          .error = c.error, .rejected = c.rejected, .overloaded = c.rejected_overloaded};
            s.preemptions = c.preempted;
            s.preemptions_for_priority = c.preempted_for_priority;
            for (int k = 0; k < kPriorityClasses; ++k) s.admitted_by_class[k] = c.admitted_by_class[k];
            s.prompt_tokens = c.prompt_tokens;
            s.prefix_hit_tokens = c.prefix_hit_tokens;
            s.computed_tokens = c.computed_tokens;
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
        [st](const device_metrics &d) {
            auto &all = st->snap.devices;
            auto it = std::find_if(all.begin(), all.end(), [&](const device_metrics &x) { return x.name == d.name; });
            if (it != all.end()) *it = d;
            else all.push_back(d);
        },
        [st](get_atom) { return st->snap; },
    };
}

} // namespace

metrics_actor spawn_metrics(caf::actor_system &sys, std::chrono::milliseconds rate_window) {
    return sys.spawn(metrics_impl, rate_window);
}

} // namespace actorserve
