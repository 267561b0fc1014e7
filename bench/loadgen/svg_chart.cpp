#include "bench/loadgen/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

namespace loadgen {

namespace {

constexpr double kW = 720, kH = 440;                               // canvas, px
constexpr double kLeft = 70, kRight = 170, kTop = 40, kBottom = 55; // margins; legend on the right
const char *const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                               "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string esc(const std::string &s) {
    std::string out;
    for (char c : s) {
        if (c == '<') out += "&lt;";
        else if (c == '>') out += "&gt;";
        else if (c == '&') out += "&amp;";
        else if (c == '"') out += "&quot;";
        else out += c;
    }
    return out;
}

std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
}

std::string tick_label(double v) {
    char buf[32];
    if (std::fabs(v) >= 100 || v == std::floor(v)) std::snprintf(buf, sizeof buf, "%.0f", v);
    else std::snprintf(buf, sizeof buf, "%.2g", v);
    return buf;
}

// A 1, 2 or 5 times a power of ten step giving about `n` ticks over [0, hi].
double nice_step(double hi, int n) {
    if (hi <= 0) return 1;
    const double raw = hi / n;
    const double p = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (raw <= m * p) return m * p;
    return 10 * p;
}

} // namespace

std::string render_svg(const chart &c) {
    double xmax = 0, ymax = 0;
    for (const auto &s : c.series)
        for (const auto &[x, y] : s.points) {
            xmax = std::max(xmax, x);
            ymax = std::max(ymax, y);
        }
    const double xstep = nice_step(xmax > 0 ? xmax : 1, 6), ystep = nice_step(ymax > 0 ? ymax : 1, 5);
    xmax = std::ceil((xmax > 0 ? xmax : 1) / xstep) * xstep;
    ymax = std::ceil((ymax > 0 ? ymax : 1) / ystep) * ystep;
    const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
    auto px = [&](double x) { return kLeft + x / xmax * pw; };
    auto py = [&](double y) { return kTop + ph - y / ymax * ph; };

    std::string o;
    o += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(kW) + "\" height=\"" + num(kH) +
         "\" viewBox=\"0 0 " + num(kW) + " " + num(kH) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
    o += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    o += "<text x=\"" + num(kW / 2) + "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" + esc(c.title) + "</text>\n";
    for (double x = 0; x <= xmax + xstep / 2; x += xstep) {
        o += "<line x1=\"" + num(px(x)) + "\" y1=\"" + num(kTop) + "\" x2=\"" + num(px(x)) + "\" y2=\"" + num(kTop + ph) +
             "\" stroke=\"#e5e5e5\"/>\n";
        o += "<text x=\"" + num(px(x)) + "\" y=\"" + num(kTop + ph + 16) + "\" text-anchor=\"middle\">" + tick_label(x) +
             "</text>\n";
    }
    for (double y = 0; y <= ymax + ystep / 2; y += ystep) {
        o += "<line x1=\"" + num(kLeft) + "\" y1=\"" + num(py(y)) + "\" x2=\"" + num(kLeft + pw) + "\" y2=\"" + num(py(y)) +
             "\" stroke=\"#e5e5e5\"/>\n";
        o += "<text x=\"" + num(kLeft - 6) + "\" y=\"" + num(py(y) + 4) + "\" text-anchor=\"end\">" + tick_label(y) +
             "</text>\n";
    }
    o += "<rect x=\"" + num(kLeft) + "\" y=\"" + num(kTop) + "\" width=\"" + num(pw) + "\" height=\"" + num(ph) +
         "\" fill=\"none\" stroke=\"#444\"/>\n";
    o += "<text x=\"" + num(kLeft + pw / 2) + "\" y=\"" + num(kH - 12) + "\" text-anchor=\"middle\">" + esc(c.x_label) +
         "</text>\n";
    o += "<text transform=\"translate(18," + num(kTop + ph / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
         esc(c.y_label) + "</text>\n";
    for (size_t i = 0; i < c.series.size(); ++i) {
        const auto &s = c.series[i];
        const char *color = kColors[i % std::size(kColors)];
        std::string pts;
        for (const auto &[x, y] : s.points) pts += num(px(x)) + "," + num(py(y)) + " ";
        o += "<polyline fill=\"none\" stroke=\"" + std::string(color) + "\" stroke-width=\"2\" points=\"" + pts + "\"/>\n";
        if (c.markers)
            for (const auto &[x, y] : s.points)
                o += "<circle cx=\"" + num(px(x)) + "\" cy=\"" + num(py(y)) + "\" r=\"3.5\" fill=\"" + color + "\"/>\n";
        const double ly = kTop + 10 + 20 * static_cast<double>(i);
        o += "<line x1=\"" + num(kLeft + pw + 15) + "\" y1=\"" + num(ly) + "\" x2=\"" + num(kLeft + pw + 35) + "\" y2=\"" +
             num(ly) + "\" stroke=\"" + color + "\" stroke-width=\"3\"/>\n";
        o += "<text x=\"" + num(kLeft + pw + 40) + "\" y=\"" + num(ly + 4) + "\">" + esc(s.name) + "</text>\n";
    }
    o += "</svg>\n";
    return o;
}

chart cdf_chart(const std::string &title, const std::string &x_label,
                const std::vector<std::pair<std::string, std::vector<double>>> &sets) {
    chart c{title, x_label, "share of requests <= x", {}, false};
    for (const auto &[name, samples] : sets) {
        std::vector<double> v = samples;
        std::sort(v.begin(), v.end());
        chart_series s{name, {}};
        const size_t n = v.size(), stride = std::max<size_t>(1, n / 2000);
        for (size_t i = 0; i < n; i += stride) {
            const size_t j = std::min(n - 1, i + stride - 1); // the last sample of this stride
            s.points.emplace_back(v[i], static_cast<double>(i) / static_cast<double>(n));
            s.points.emplace_back(v[j], static_cast<double>(j + 1) / static_cast<double>(n));
        }
        c.series.push_back(std::move(s));
    }
    return c;
}

std::vector<std::string> write_charts(const std::string &dir, const std::vector<report_point> &points, bool sweep,
                                      std::string &err) {
    std::error_code fec;
    std::filesystem::create_directories(dir, fec);
    if (fec) {
        err = "cannot create " + dir + ": " + fec.message();
        return {};
    }
    std::vector<std::pair<std::string, std::vector<double>>> ttft, e2e;
    for (const auto &p : points) {
        const std::string name = p.result.mode == "open" ? "rate " + tick_label(p.result.rate) + "/s"
                                                         : "concurrency " + std::to_string(p.result.concurrency);
        std::vector<double> t, e;
        for (const auto &r : p.result.records) {
            if (!r.ok()) continue;
            if (r.ttft_ms >= 0) t.push_back(r.ttft_ms);
            e.push_back(r.e2e_ms);
        }
        ttft.emplace_back(name, std::move(t));
        e2e.emplace_back(name, std::move(e));
    }
    std::vector<std::pair<std::string, chart>> files{
        {"ttft_cdf.svg", cdf_chart("Time to first token (CDF)", "TTFT, ms", ttft)},
        {"e2e_cdf.svg", cdf_chart("End-to-end latency (CDF)", "end-to-end, ms", e2e)}};
    if (sweep) {
        chart tput{"Throughput against concurrency", "concurrency", "output tokens/s", {}, true};
        chart reqs{"Requests/s against concurrency", "concurrency", "requests/s", {}, true};
        chart p99{"P99 time to first token against concurrency", "concurrency", "P99 TTFT, ms", {}, true};
        chart_series ts{"output tok/s", {}}, rs{"req/s", {}}, ps{"P99 TTFT", {}};
        for (const auto &p : points) {
            const double c = p.result.concurrency;
            ts.points.emplace_back(c, p.summary.output_tok_per_s);
            rs.points.emplace_back(c, p.summary.req_per_s);
            ps.points.emplace_back(c, p.summary.ttft_ms.p99);
        }
        tput.series.push_back(std::move(ts));
        reqs.series.push_back(std::move(rs));
        p99.series.push_back(std::move(ps));
        files.emplace_back("throughput.svg", std::move(tput));
        files.emplace_back("requests_per_s.svg", std::move(reqs));
        files.emplace_back("ttft_p99.svg", std::move(p99));
    }
    std::vector<std::string> written;
    for (const auto &[name, c] : files) {
        const std::string path = (std::filesystem::path(dir) / name).string();
        if (!write_text_file(path, render_svg(c), err)) return {};
        written.push_back(path);
    }
    return written;
}

} // namespace loadgen
