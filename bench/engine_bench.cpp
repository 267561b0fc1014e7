// Engine throughput on one machine: prompt processing, single-sequence generation, and
// aggregate generation with many sequences decoding together. Prints one JSON object per
// measurement on stdout, with the kernel level that ran ("isa": simd_level(), which
// ACTORSERVE_SIMD lowers); bench/engine_bench.sh runs it beside llama.cpp and takes medians.
//
//   engine_bench --model M [--threads N] [--what pp|tg|batch] [--n-prompt 512] [--n-gen 128]
//                [--seqs 1,4,8,16,32]
//   engine_bench --what kernels      (no model: the quantized matrix kernel at every level)
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "engine/forward.h"
#include "engine/quantize.h"
#include "engine/quants.h"

using namespace actorserve;
using clock_type = std::chrono::steady_clock;

namespace {

double seconds_since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// Deterministic token ids spread over the vocabulary (the values do not change the cost).
int32_t token_at(int i, int n_vocab) { return static_cast<int32_t>((i * 7919 + 13) % n_vocab); }

int32_t argmax(const float *l, int n) { return static_cast<int32_t>(std::max_element(l, l + n) - l); }

// The matrix kernels of each weight format at each level this CPU runs, on one thread: a
// (1536, 576) matrix (SmolLM2's gate projection) of deterministic weights against kTokens
// activation rows, called as matmul calls them: "cols" one weight row by up to kMaxCols tokens,
// "tile" kTileRows rows by kTileCols tokens. Prints the minimum over the passes (the least
// disturbed by other work) as ns per block and activation row.
void bench_kernels() {
    constexpr int kTokens = 16;
    const int n = 576, d = 1536, nb = n / QK, passes = 200;
    std::vector<float> wf(static_cast<size_t>(n) * d), xf(static_cast<size_t>(n) * kTokens);
    for (size_t i = 0; i < wf.size(); ++i) wf[i] = 0.1f + 2.0f * std::cos(static_cast<float>(i) * 0.37f);
    for (size_t i = 0; i < xf.size(); ++i) xf[i] = 0.1f + 2.0f * std::cos(static_cast<float>(i) * 0.11f + 1.0f);
    struct tile { tile_fn fn; int rows, cols, offset; };
    struct level { const char *name; dot_cols_fn q4_0, q4_1, q8_0; tile t4_0, t4_1, t8_0; };
    const auto t256 = [](tile_fn f) { return tile{f, kTileRows, kTileCols, 0}; };
    std::vector<level> levels;
    if (cpu_has_avx2())
        levels.push_back({"avx2", cols_q4_0_q8_0_avx2, cols_q4_1_q8_1_avx2, cols_q8_0_q8_0_avx2,
                          t256(tile_q4_0_q8_0_avx2), t256(tile_q4_1_q8_1_avx2), t256(tile_q8_0_q8_0_avx2)});
    if (cpu_has_avx512())
        levels.push_back({"avx512", cols_q4_0_q8_0_avx512, cols_q4_1_q8_1_avx512, cols_q8_0_q8_0_avx512,
                          t256(tile_q4_0_q8_0_avx512), t256(tile_q4_1_q8_1_avx512), t256(tile_q8_0_q8_0_avx512)});
    if (cpu_has_avx512vnni()) {
        levels.push_back({"avx512vnni", cols_q4_0_q8_0_avx512vnni, cols_q4_1_q8_1_avx512vnni,
                          cols_q8_0_q8_0_avx512vnni, {tile_q4_0_q8_0_zmm, kZmmTileRows, kZmmTileCols, 8},
                          {tile_q4_1_q8_1_zmm, kZmmTileRows, kZmmTileCols, 0},
                          {tile_q8_0_q8_0_zmm, kZmmTileRows, kZmmTileCols, 128}});
    }
    for (tensor_type t : {tensor_type::q4_0, tensor_type::q4_1, tensor_type::q8_0}) {
        const size_t w_row = row_bytes(t, n);
        std::vector<uint8_t> w(w_row * d);
        for (int r = 0; r < d; ++r) {
            const float *src = wf.data() + static_cast<size_t>(r) * n;
            uint8_t *dst = w.data() + static_cast<size_t>(r) * w_row;
            if (t == tensor_type::q4_0) quantize_weights_q4_0(src, reinterpret_cast<block_q4_0 *>(dst), n);
            if (t == tensor_type::q4_1) quantize_weights_q4_1(src, reinterpret_cast<block_q4_1 *>(dst), n);
            if (t == tensor_type::q8_0) quantize_weights_q8_0(src, reinterpret_cast<block_q8_0 *>(dst), n);
        }
        const tensor_type at = activation_type(t);
        const size_t xs = row_bytes(at, n), sts = kTokens + kTileOut;
        std::vector<uint8_t> xq(xs * kTokens);
        std::vector<float> xd(static_cast<size_t>(nb) * 2 * kTokens), xt(2 * nb * sts);
        std::vector<int32_t> xc(static_cast<size_t>(kTokens * nb * 8));
        for (int c = 0; c < kTokens; ++c) {
            quantize_row(at, xf.data() + c * n, xq.data() + c * xs, n);
            activation_scales(at, xq.data() + c * xs, n, xd.data() + c * nb * 2);
        }
        transpose_scales(xd.data(), kTokens, nb, xt.data(), sts);
        // passes outer, levels inner: every level sees the same moments of the machine
        std::vector<double> best_cols(levels.size(), 1e30), best_tile(levels.size(), 1e30);
        float sink = 0.0f, out[16 * kTileOut];
        for (int p = 0; p < passes; ++p) {
            for (size_t k = 0; k < levels.size(); ++k) {
                const level &l = levels[k];
                const dot_cols_fn f = t == tensor_type::q4_0 ? l.q4_0 : t == tensor_type::q4_1 ? l.q4_1 : l.q8_0;
                auto t0 = clock_type::now();
                for (int r = 0; r < d; ++r)
                    for (int c = 0; c < kTokens; c += kMaxCols) {
                        f(n, w.data() + static_cast<size_t>(r) * w_row, xq.data() + c * xs, xs, xd.data() + c * nb * 2,
                          kMaxCols, out);
                        sink += out[0];
                    }
                best_cols[k] = std::min(best_cols[k], seconds_since(t0));
                const tile &g = t == tensor_type::q4_0 ? l.t4_0 : t == tensor_type::q4_1 ? l.t4_1 : l.t8_0;
                t0 = clock_type::now();
                if (g.offset) offset_sums(xq.data(), kTokens, xs, nb, g.offset, xc.data()); // once per matmul
                for (int r = 0; r < d; r += g.rows)
                    for (int c = 0; c < kTokens; c += g.cols) {
                        g.fn(n, w.data() + static_cast<size_t>(r) * w_row, w_row, g.rows, xq.data() + c * xs, xs,
                             xt.data() + c, sts, xc.data() + c * nb * 8, g.cols, out);
                        sink += out[0];
                    }
                best_tile[k] = std::min(best_tile[k], seconds_since(t0));
            }
        }
        const double per = 1e9 / (static_cast<double>(d) * nb * kTokens);
        for (size_t k = 0; k < levels.size(); ++k)
            std::printf("{\"test\":\"kernel\",\"format\":\"%s\",\"isa\":\"%s\",\"cols_ns_per_block_row\":%.3f,"
                        "\"tile_ns_per_block_row\":%.3f,\"check\":%g}\n",
                        tensor_type_name(t), levels[k].name, best_cols[k] * per, best_tile[k] * per,
                        static_cast<double>(sink));
    }
}

} // namespace

int main(int argc, char **argv) {
    CLI::App app{"actorserve engine throughput"};
    std::string model_path, what = "all", seqs_list = "1,4,8,16,32";
    int threads = 0, n_prompt = 512, n_gen = 128;
    app.add_option("--model", model_path, "GGUF model (not needed for --what kernels)");
    app.add_option("--threads", threads, "threads (0: physical cores)");
    app.add_option("--what", what, "pp, tg, batch, all, or kernels")->check(CLI::IsMember({"pp", "tg", "batch", "all", "kernels"}));
    app.add_option("--n-prompt", n_prompt, "prompt length for pp");
    app.add_option("--n-gen", n_gen, "tokens generated per sequence for tg and batch");
    app.add_option("--seqs", seqs_list, "sequence counts for batch, comma-separated");
    CLI11_PARSE(app, argc, argv);
    if (what == "kernels") {
        bench_kernels();
        return 0;
    }
    if (model_path.empty()) {
        std::fprintf(stderr, "engine_bench: error: --model is required for --what %s\n", what.c_str());
        return 1;
    }

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
        std::printf("{\"test\":\"pp%d\",\"isa\":\"%s\",\"tok_s\":%.2f}\n", n_prompt, simd_level(), n_prompt / seconds_since(t0));
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
        std::printf("{\"test\":\"%s\",\"isa\":\"%s\",\"seqs\":%d,\"tok_s\":%.2f}\n", label.c_str(), simd_level(), n_seq,
                    n_seq * n_gen / secs);
    }
    return 0;
}
