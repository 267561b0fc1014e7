// The actor runtime under load from in-process clients: for each client count, every client
// opens a session and asks one question (128 tokens at most), all at once. Per run it prints
// one JSON line: aggregate generated tokens/s over the wall time from the first request to the
// last answer, and percentiles of time to first text and of the gaps between text deltas, as
// the clients saw them. bench/runtime_bench.sh takes medians over runs.
//
// A fresh runtime per run, so no run is served from the prefix cache of the one before.
#include <caf/all.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "include/actorserve/runtime.h"

using namespace actorserve;
using clk = std::chrono::steady_clock;

namespace {

// Varied open questions, long enough answers that most reach the token limit.
const char *const kTopics[] = {
    "the history of the printing press", "how volcanoes form",          "the water cycle",
    "the life of honey bees",            "how airplanes fly",           "the invention of the telephone",
    "the causes of the seasons",         "how vaccines work",           "the Roman Empire",
    "the structure of the atom",         "the migration of birds",      "how bread is made",
    "the planets of the solar system",   "the history of chess",        "how computers store data",
    "the rain forests of the Amazon",    "the first moon landing",      "how bridges carry weight",
    "the life cycle of a butterfly",     "the history of the bicycle",  "how the heart pumps blood",
    "the Great Wall of China",           "how rainbows appear",         "the history of paper money",
    "the deep ocean",                    "how plants make food",        "the ancient Egyptians",
    "how glaciers move",                 "the history of the railway",  "how sound travels",
    "the Arctic fox",                    "how tea is grown"};
constexpr int kNTopics = sizeof(kTopics) / sizeof(kTopics[0]);

double pct(std::vector<double> v, double q) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
    return v[i];
}

struct client_result {
    clk::time_point sent, first, last;
    bool got_first = false;
    int tokens = 0;
    std::string outcome;
};

// One run: `n` clients at once on a fresh runtime; false when the runtime does not start.
bool run_once(caf::actor_system &sys, const runtime_config &rc, int n, int max_tokens, int run) {
    std::string err;
    auto rt = runtime::start(sys, rc, err);
    if (!rt) {
        std::fprintf(stderr, "runtime_bench: error: %s\n", err.c_str());
        return false;
    }
    std::vector<client_result> res(static_cast<size_t>(n));
    std::vector<double> itl;
    {
        caf::scoped_actor self{sys};
        std::vector<actorserve::chat_session> sessions;
        for (int i = 0; i < n; ++i) sessions.push_back(rt->open_session());
        const clk::time_point t0 = clk::now();
        for (int i = 0; i < n; ++i) {
            chat_request req;
            req.id = i;
            req.messages = {{"user", std::string("Write a detailed essay about ") +
                                         kTopics[(i + run * 7) % kNTopics] + "."}};
            req.sampling.temperature = 0.0f;
            req.max_tokens = max_tokens;
            res[static_cast<size_t>(i)].sent = clk::now();
            self->send(sessions[static_cast<size_t>(i)], std::move(req));
        }
        for (int open = n; open > 0;) {
            self->receive(
                [&](const chat_delta &d) {
                    client_result &c = res[static_cast<size_t>(d.id)];
                    const clk::time_point now = clk::now();
                    if (c.got_first) itl.push_back(std::chrono::duration<double, std::milli>(now - c.last).count());
                    else c.first = now;
                    c.got_first = true;
                    c.last = now;
                },
                [&](const chat_done &d) {
                    client_result &c = res[static_cast<size_t>(d.id)];
                    c.tokens = d.usage.completion_tokens;
                    c.last = clk::now();
                    c.outcome = std::string(name(d.finish_reason));
                    --open;
                },
                [&](const chat_error &e) {
                    res[static_cast<size_t>(e.id)].outcome = "error: " + e.message;
                    --open;
                },
                caf::after(std::chrono::minutes(5)) >> [&] {
                    std::fprintf(stderr, "runtime_bench: no answer for 5 minutes\n");
                    open = 0;
                });
        }
        clk::time_point end = t0;
        std::vector<double> ttft;
        int tokens = 0, errors = 0;
        for (const client_result &c : res) {
            end = std::max(end, c.last);
            tokens += c.tokens;
            if (c.outcome.rfind("error", 0) == 0 || c.outcome.empty()) ++errors;
            if (c.got_first) ttft.push_back(std::chrono::duration<double, std::milli>(c.first - c.sent).count());
        }
        const double wall = std::chrono::duration<double>(end - t0).count();
        // the runtime's own view: steps taken and the executor's time in them
        double steps = 0, step_ms = 0;
        self->request(rt->metrics(), std::chrono::seconds(5), get_atom::value)
            .receive([&](const metrics_snapshot &m) { steps = static_cast<double>(m.steps); step_ms = m.step_ms.sum; },
                     [](caf::error &) {});
        std::printf("{\"clients\": %d, \"run\": %d, \"tokens\": %d, \"errors\": %d, \"wall_s\": %.3f, "
                    "\"steps\": %.0f, \"step_ms_mean\": %.2f, "
                    "\"tok_s\": %.2f, \"ttft_ms\": {\"p50\": %.1f, \"p90\": %.1f, \"p99\": %.1f}, "
                    "\"itl_ms\": {\"p50\": %.2f, \"p90\": %.2f, \"p99\": %.2f}}\n",
                    n, run, tokens, errors, wall, steps, steps > 0 ? step_ms / steps : 0.0, wall > 0 ? tokens / wall : 0.0, pct(ttft, 0.5), pct(ttft, 0.9),
                    pct(ttft, 0.99), pct(itl, 0.5), pct(itl, 0.9), pct(itl, 0.99));
        std::fflush(stdout);
        for (const auto &s : sessions) self->send_exit(s, caf::exit_reason::user_shutdown);
    }
    return true;
}

} // namespace

int main(int argc, char **argv) {
    CLI::App app{"actorserve runtime benchmark: throughput and latency against concurrency"};
    runtime_config rc;
    std::vector<int> clients{1, 2, 4, 8, 16, 32};
    int max_tokens = 128, runs = 1, caf_workers = 0;
    app.add_option("--model", rc.model_path, "GGUF model")->required();
    app.add_option("--threads", rc.n_threads, "engine threads (0: physical cores)");
    app.add_option("--clients", clients, "client counts, comma-separated")->delimiter(',');
    app.add_option("--max-tokens", max_tokens, "tokens per answer at most");
    app.add_option("--runs", runs, "runs per client count");
    app.add_option("--max-seqs", rc.max_seqs, "sequences per step");
    app.add_option("--caf-workers", caf_workers, "CAF scheduler threads (0: CAF's default, one per core)");
    CLI11_PARSE(app, argc, argv);

    caf::actor_system_config cfg;
    runtime::tune(cfg);
    if (caf_workers > 0) cfg.set("scheduler.max-threads", static_cast<size_t>(caf_workers));
    caf::actor_system sys{cfg};
    for (int r = 0; r < runs; ++r)
        for (int n : clients)
            if (!run_once(sys, rc, n, max_tokens, r)) return 1;
    return 0;
}
