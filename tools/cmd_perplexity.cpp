// actorserve perplexity: perplexity of the model over a text file, chunk by chunk as llama.cpp's
// perplexity tool computes it (see engine/perplexity.h), so the figures compare directly.
//
// stdout gets the running estimate after each chunk on one line, "[1]12.3456,[2]..." as
// llama.cpp prints it, then "Final estimate: PPL = X +/- Y"; stderr gets what was measured
// and how fast.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/forward.h"
#include "engine/perplexity.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace actorserve::cli {

int cmd_perplexity(const perplexity_options &o) {
    if (o.ctx < 4) return fail("--ctx must be >= 4, got " + std::to_string(o.ctx));
    if (o.chunks == 0 || o.chunks < -1) return fail("--chunks must be >= 1, got " + std::to_string(o.chunks));
    if (o.threads < 0 || o.threads > 1024)
        return fail("--threads must be in [0, 1024] (0 = physical cores), got " + std::to_string(o.threads));

    std::ifstream in(o.file, std::ios::binary);
    if (!in) return fail("cannot read " + o.file);
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) return fail("cannot read " + o.file);

    std::string err;
    auto m = load_model(o.model, err, o.threads);
    if (!m) return fail(err);
    const int train = m->model->hparams().n_ctx_train;
    if (train > 0 && o.ctx > train)
        return fail("--ctx " + std::to_string(o.ctx) + " exceeds the model's training context of " +
                    std::to_string(train) + " tokens");

    // As llama.cpp: BOS in front only when the model adds one, control-token text taken literally.
    const tokenizer &tok = *m->tok;
    const bool bos = tok.add_bos() && tok.bos() >= 0;
    std::vector<int32_t> tokens;
    if (bos) tokens.push_back(tok.bos());
    const std::vector<int32_t> body = tok.encode(text.str(), /*parse_special=*/false);
    tokens.insert(tokens.end(), body.begin(), body.end());

    llama_context ctx(*m->model, context_params{.n_ctx = o.ctx, .n_batch = o.ctx, .n_threads = o.threads});
    const perplexity_params pp{.n_ctx = o.ctx, .n_chunks = o.chunks, .n_batch = o.ctx, .bos = bos ? tok.bos() : -1};
    const size_t n_max = tokens.size() / static_cast<size_t>(o.ctx);
    std::fprintf(stderr, "perplexity: %s, %zu tokens, %zu chunks of %d, weights %s, %d threads\n", o.file.c_str(),
                 tokens.size(), o.chunks < 0 ? n_max : std::min(n_max, static_cast<size_t>(o.chunks)), o.ctx,
                 weight_format_name(m->model->weights()), ctx.n_threads());

    perplexity_result r;
    const auto t0 = std::chrono::steady_clock::now();
    const bool ok = perplexity(ctx, tokens, pp, r, err, [](int k, double ppl) {
        std::printf("[%d]%.4f,", k + 1, ppl);
        std::fflush(stdout);
    });
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!ok) {
        if (r.n_chunks > 0) std::printf("\n");
        return fail(err);
    }
    std::printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", r.ppl, r.ppl_err);
    std::fflush(stdout); // before the stderr line, so that the two stay in order when merged
    const int n_eval = r.n_chunks * o.ctx;
    std::fprintf(stderr, "perplexity: %d chunks, %d tokens evaluated, %lld scored, %.1f s, %.1f tok/s\n", r.n_chunks,
                 n_eval, static_cast<long long>(r.n_scored), ms / 1000.0, tok_per_s(n_eval, ms));
    return 0;
}

} // namespace actorserve::cli
