// actorserve-bench: load testing for actorserve (WebSocket protocol) and any OpenAI-compatible
// server. See docs/benchmarks.md, "Load testing: actorserve-bench".
#include <CLI/CLI.hpp>

#include <cstdio>
#include <sstream>

#include "bench/loadgen/interrupt.h"
#include "bench/loadgen/report.h"
#include "bench/loadgen/runner.h"
#include "bench/loadgen/svg_chart.h"

namespace json = boost::json;
using namespace loadgen;

namespace {

std::vector<int> parse_int_list(const std::string &s, std::string &err) {
    std::vector<int> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ',')) {
        try {
            size_t used = 0;
            const int v = std::stoi(item, &used);
            if (used != item.size() || v < 1) throw std::invalid_argument(item);
            out.push_back(v);
        } catch (const std::exception &) {
            err = "--sweep-concurrency: '" + item + "' is not a positive integer";
            return {};
        }
    }
    if (out.empty()) err = "--sweep-concurrency: empty list";
    return out;
}

} // namespace

int main(int argc, char **argv) {
    CLI::App app{"actorserve-bench: load testing for actorserve and OpenAI-compatible servers"};
    std::string url = "ws://127.0.0.1:8080/v1/ws", api, api_key, model, prompts_file, out_path, svg_dir, sweep;
    run_options opt;
    load_config &load = opt.load;
    bool quiet = false;
    app.add_option("--url", url, "ws://host:port/v1/ws (actorserve) or http://host:port (with --api openai)")
        ->capture_default_str();
    app.add_option("--api", api, "actorserve or openai (default: from the URL's scheme)");
    app.add_option("--api-key", api_key, "sent as Authorization: Bearer <key>");
    app.add_option("--model", model, "OpenAI 'model' field (default: not sent)");
    app.add_option("--concurrency", load.concurrency, "closed loop: virtual users")->capture_default_str()->check(CLI::PositiveNumber);
    app.add_option("--think-ms", load.think_ms, "closed loop: pause between a user's requests")->capture_default_str()->check(CLI::NonNegativeNumber);
    app.add_option("--rate", load.rate, "open loop: Poisson arrivals per second (replaces --concurrency)")->check(CLI::PositiveNumber);
    app.add_option("--max-inflight", load.max_inflight, "open loop: requests in flight at most; arrivals beyond are dropped_by_client")
        ->capture_default_str()->check(CLI::PositiveNumber);
    app.add_option("--duration", load.duration_s, "stop issuing after this many seconds")->check(CLI::PositiveNumber);
    app.add_option("--requests", load.requests, "stop issuing after this many requests (open loop: arrivals)")->check(CLI::PositiveNumber);
    app.add_option("--sweep-concurrency", sweep, "closed-loop runs at each concurrency, e.g. 1,2,4,8");
    app.add_option("--timeout", load.timeout_s, "hard limit per run, seconds; what is in flight then is abandoned")
        ->capture_default_str()->check(CLI::PositiveNumber);
    app.add_option("--request-timeout", load.request_timeout_s, "limit per request, seconds")->capture_default_str()->check(CLI::PositiveNumber);
    app.add_option("--prompts", prompts_file, "JSONL: {\"prompt\": \"...\"} or {\"messages\": [...]} per line (default: built-in set)");
    app.add_option("--max-tokens", opt.params.max_tokens, "max_tokens of every request")->capture_default_str()->check(CLI::PositiveNumber);
    app.add_option("--temperature", opt.params.temperature, "temperature of every request")->capture_default_str()->check(CLI::NonNegativeNumber);
    app.add_option("--repeat-fraction", opt.repeat_fraction, "share of requests resending an earlier prompt (half of them paraphrased)")
        ->capture_default_str()->check(CLI::Range(0.0, 1.0));
    app.add_option("--seed", opt.seed, "seeds the request sequence and the arrivals")->capture_default_str();
    app.add_option("--out", out_path, "JSON report: per run counts, rates, percentiles and every request");
    app.add_option("--svg-dir", svg_dir, "write SVG charts there (latency CDFs; sweep curves)");
    app.add_flag("--quiet", quiet, "no progress line");
    CLI11_PARSE(app, argc, argv);

    std::string err;
    if (!parse_target(url, api, opt.tgt, err)) {
        std::fprintf(stderr, "actorserve-bench: %s\n", err.c_str());
        return 2;
    }
    opt.tgt.api_key = api_key;
    opt.tgt.model = model;
    if (load.requests == 0 && load.duration_s <= 0) load.duration_s = 30; // bounded by default
    if (!sweep.empty() && load.rate > 0) {
        std::fprintf(stderr, "actorserve-bench: --sweep-concurrency is closed loop; drop --rate\n");
        return 2;
    }
    std::vector<int> levels{load.concurrency};
    if (!sweep.empty()) {
        levels = parse_int_list(sweep, err);
        if (levels.empty()) {
            std::fprintf(stderr, "actorserve-bench: %s\n", err.c_str());
            return 2;
        }
    }
    opt.prompts = prompts_file.empty() ? builtin_prompts() : load_prompts_jsonl(prompts_file, err);
    if (opt.prompts.empty()) {
        std::fprintf(stderr, "actorserve-bench: %s\n", err.c_str());
        return 2;
    }
    opt.progress = !quiet;
    install_sigint_handler();

    std::fprintf(stderr, "actorserve-bench: %s (%s), %zu prompts, max_tokens %d, temperature %g, seed %llu\n",
                 opt.tgt.url().c_str(), opt.tgt.api == api_kind::openai ? "openai" : "actorserve", opt.prompts.size(),
                 opt.params.max_tokens, opt.params.temperature, static_cast<unsigned long long>(opt.seed));
    std::vector<report_point> points;
    bool stopped = false;
    for (int c : levels) {
        if (stopped || sigint_count() > 0) break; // a ctrl-C between two points ends the sweep too
        run_options point = opt;
        point.load.concurrency = c;
        if (levels.size() > 1) std::fprintf(stderr, "actorserve-bench: concurrency %d\n", c);
        run_result r = run_load(point);
        if (!r.error.empty()) {
            std::fprintf(stderr, "actorserve-bench: %s\n", r.error.c_str());
            return 1;
        }
        stopped = r.interrupted;
        points.push_back(make_point(std::move(r)));
        print_run_table(stdout, points.back());
        std::fflush(stdout);
    }
    if (points.size() > 1) {
        std::printf("\n");
        print_sweep_table(stdout, points);
    }

    int rc = 0;
    if (!out_path.empty()) {
        json::object config{{"max_tokens", opt.params.max_tokens},
                            {"temperature", opt.params.temperature},
                            {"seed", opt.seed},
                            {"repeat_fraction", opt.repeat_fraction},
                            {"prompts", prompts_file.empty() ? "built-in" : prompts_file},
                            {"n_prompts", opt.prompts.size()},
                            {"rate", load.rate},
                            {"max_inflight", load.max_inflight},
                            {"think_ms", load.think_ms},
                            {"duration_s", load.duration_s},
                            {"requests", load.requests},
                            {"timeout_s", load.timeout_s},
                            {"request_timeout_s", load.request_timeout_s}};
        if (!write_text_file(out_path, json::serialize(report_json(opt.tgt, config, points)) + "\n", err)) {
            std::fprintf(stderr, "actorserve-bench: %s\n", err.c_str());
            rc = 1;
        } else {
            std::fprintf(stderr, "actorserve-bench: wrote %s\n", out_path.c_str());
        }
    }
    if (!svg_dir.empty()) {
        auto files = write_charts(svg_dir, points, points.size() > 1, err);
        if (files.empty()) {
            std::fprintf(stderr, "actorserve-bench: %s\n", err.c_str());
            rc = 1;
        }
        for (const auto &f : files) std::fprintf(stderr, "actorserve-bench: wrote %s\n", f.c_str());
    }
    return rc;
}
