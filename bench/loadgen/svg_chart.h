// Plain SVG line charts, written as text: latency CDFs and sweep curves a browser opens as is.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "bench/loadgen/report.h"

namespace loadgen {

struct chart_series {
    std::string name;
    std::vector<std::pair<double, double>> points; // (x, y), in drawing order
};

struct chart {
    std::string title, x_label, y_label;
    std::vector<chart_series> series;
    bool markers = false; // a dot on every point (sweeps: few points)
};

std::string render_svg(const chart &c);

// Empirical CDF of each sample set: y = share of samples <= x, as a step line.
// note: above 2000 samples every k-th step is drawn; the curve keeps its shape, not its every step.
chart cdf_chart(const std::string &title, const std::string &x_label,
                const std::vector<std::pair<std::string, std::vector<double>>> &sets);

// ttft_cdf.svg and e2e_cdf.svg (one line per run); for a sweep also throughput.svg (output
// tokens/s and requests/s against concurrency) and ttft_p99.svg. Creates `dir`. Returns the
// files written; empty and `err` set on failure.
std::vector<std::string> write_charts(const std::string &dir, const std::vector<report_point> &points, bool sweep,
                                      std::string &err);

} // namespace loadgen
