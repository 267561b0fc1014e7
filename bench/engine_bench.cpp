// Engine throughput on one machine: prompt processing, single-sequence generation, and
// aggregate generation with many sequences decoding together. Prints one JSON object per
// measurement on stdout; bench/engine_bench.sh runs it beside llama.cpp and takes medians.
//
//   engine_bench --model M [--threads N] [--what pp|tg|batch] [--n-prompt 512] [--n-gen 128]
//                [--seqs 1,4,8,16,32]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>

#include "engine/forward.h"

using namespace actorserve;
using clock_type = std::chrono::steady_clock;

namespace {

double seconds_since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// Deterministic token ids spread over the vocabulary (the values do not change the cost).
int32_t token_at(int i, int n_vocab) { return static_cast<int32_t>((i * 7919 + 13) % n_vocab); }

int32_t argmax(const float *l, int n) { return static_cast<int32_t>(std::max_element(l, l + n) - l); }

} // namespace

int main(int argc, char **argv) {
    CLI::App app{"actorserve engine throughput"};
    std::string model_path, what = "all", seqs_list = "1,4,8,16,32";
    int threads = 0, n_prompt = 512, n_gen = 128;
    app.add_option("--model", model_path, "GGUF model")->required();
    app.add_option("--threads", threads, "threads (0: physical cores)");
    app.add_option("--what", what, "pp, tg, batch or all")->check(CLI::IsMember({"pp", "tg", "batch", "all"}));
    app.add_option("--n-prompt", n_prompt, "prompt length for pp");
    app.add_option("--n-gen", n_gen, "tokens generated per sequence for tg and batch");
    app.add_option("--seqs", seqs_list, "sequence counts for batch, comma-separated");
    CLI11_PARSE(app, argc, argv);

    std::string err;
    auto model = llama_model::load(model_path, err);
    if (!model) {
        std::fprintf(stderr, "engine_bench: error: %s\n", err.c_str());
        return 1;
    }
    const int V = model->hparams().n_vocab;

    if (what == "pp" || what == "all") {
        context_params cp;
        cp.n_ctx = n_prompt + 16;
        cp.n_threads = threads;
        llama_context ctx(*model, cp);
        std::vector<int32_t> prompt(static_cast<size_t>(n_prompt));
        for (int i = 0; i < n_prompt; ++i) prompt[static_cast<size_t>(i)] = token_at(i, V);
        const auto t0 = clock_type::now();
        if (!ctx.eval(prompt, err)) return std::fprintf(stderr, "engine_bench: error: %s\n", err.c_str()), 1;
        std::printf("{\"test\":\"pp%d\",\"tok_s\":%.2f}\n", n_prompt, n_prompt / seconds_since(t0));
    }

    std::vector<std::pair<std::string, int>> runs; // (label, sequences)
    if (what == "tg" || what == "all") runs.emplace_back("tg", 1);
    if (what == "batch" || what == "all") {
        std::stringstream ss(seqs_list);
        for (std::string item; std::getline(ss, item, ',');) runs.emplace_back("batch", std::stoi(item));
    }
    for (const auto &[label, n_seq] : runs) {
        // Each sequence gets a short prompt of its own, then all decode greedily together.
        context_params cp;
        cp.n_ctx = 32 + n_gen;
        cp.n_seq = n_seq;
        cp.n_batch = std::max(512, 16 * n_seq);
        cp.n_threads = threads;
        llama_context ctx(*model, cp);
        std::vector<batch_token> batch;
        for (int s = 0; s < n_seq; ++s)
            for (int i = 0; i < 8; ++i) batch.push_back({token_at(s * 8 + i, V), s, i, i == 7});
        if (!ctx.decode(batch, err)) return std::fprintf(stderr, "engine_bench: error: %s\n", err.c_str()), 1;
        const auto t0 = clock_type::now();
        for (int step = 0; step < n_gen; ++step) {
            batch.clear();
            for (int s = 0; s < n_seq; ++s)
                batch.push_back({argmax(ctx.logits(static_cast<size_t>(s)), V), s, ctx.n_past(s), true});
            if (!ctx.decode(batch, err)) return std::fprintf(stderr, "engine_bench: error: %s\n", err.c_str()), 1;
        }
        const double secs = seconds_since(t0);
        std::printf("{\"test\":\"%s\",\"seqs\":%d,\"tok_s\":%.2f}\n", label.c_str(), n_seq, n_seq * n_gen / secs);
    }
    return 0;
}
