#include "engine/perplexity.h"

#include <algorithm>
#include <cmath>

namespace actorserve {

double log_softmax(std::span<const float> logits, int32_t token) {
    float max = logits[0];
    for (float l : logits) max = std::max(max, l);
    double sum_exp = 0.0;
    for (float l : logits) sum_exp += std::exp(l - max); // float exp, double sum
    return static_cast<double>(logits[static_cast<size_t>(token)] - max) - std::log(sum_exp);
}

bool perplexity(llama_context &ctx, std::span<const int32_t> tokens, const perplexity_params &params,
                perplexity_result &out, std::string &err, const std::function<void(int, double)> &on_chunk) {
    const int n_ctx = params.n_ctx;
    const int first = n_ctx / 2;                // first position whose logits are scored
    const int n_score = n_ctx - 1 - first;      // scored tokens per chunk
    if (n_score < 1) {
        err = "a chunk of " + std::to_string(n_ctx) + " tokens scores nothing; use a context of at least 3";
        return false;
    }
    if (n_ctx > ctx.n_ctx()) {
        err = "chunks of " + std::to_string(n_ctx) + " tokens do not fit a context of " + std::to_string(ctx.n_ctx());
        return false;
    }
    if (tokens.size() < 2 * static_cast<size_t>(n_ctx)) {
        err = "the text has " + std::to_string(tokens.size()) + " tokens; perplexity with a context of " +
              std::to_string(n_ctx) + " needs at least " + std::to_string(2 * n_ctx);
        return false;
    }
    const int n_max = static_cast<int>(tokens.size() / static_cast<size_t>(n_ctx));
    const int n_chunks = params.n_chunks < 0 ? n_max : std::min(params.n_chunks, n_max);
    if (n_chunks < 1) {
        err = "no chunks to score";
        return false;
    }
    const int n_batch = params.n_batch > 0 ? std::min(params.n_batch, n_ctx) : n_ctx;
    const size_t n_vocab = static_cast<size_t>(ctx.model().hparams().n_vocab);

    out = perplexity_result{};
    double nll = 0.0, nll2 = 0.0; // sums of NLL and NLL^2 over the scored tokens
    std::vector<batch_token> batch;
    batch.reserve(static_cast<size_t>(n_batch));
    for (int c = 0; c < n_chunks; ++c) {
        const size_t start = static_cast<size_t>(c) * static_cast<size_t>(n_ctx);
        ctx.truncate(0);
        for (int b0 = 0; b0 < n_ctx; b0 += n_batch) {
            const int b1 = std::min(n_ctx, b0 + n_batch);
            batch.clear();
            for (int pos = b0; pos < b1; ++pos) {
                const int32_t tok = pos == 0 && params.bos >= 0 ? params.bos : tokens[start + static_cast<size_t>(pos)];
                // the last position's logits would predict the next chunk's first token: unused
                batch.push_back({tok, 0, pos, pos >= first && pos < n_ctx - 1});
            }
            if (!ctx.decode(batch, err)) return false;
            // outputs come in batch order: position p = max(b0, first) + o predicts token p+1
            const int p0 = std::max(b0, first);
            for (int o = 0; o < ctx.n_outputs(); ++o) {
                const size_t next = start + static_cast<size_t>(p0 + o + 1);
                const double v = -log_softmax({ctx.logits(static_cast<size_t>(o)), n_vocab}, tokens[next]);
                nll += v;
                nll2 += v * v;
            }
        }
        out.n_chunks = c + 1;
        out.n_scored += n_score;
        out.running_ppl.push_back(std::exp(nll / static_cast<double>(out.n_scored)));
        if (on_chunk) on_chunk(c, out.running_ppl.back());
    }
    const double n = static_cast<double>(out.n_scored);
    out.nll = nll / n;
    out.ppl = std::exp(out.nll);
    const double var = nll2 / n - out.nll * out.nll;
    out.ppl_err = var > 0.0 && out.n_scored > 1 ? out.ppl * std::sqrt(var / (n - 1.0)) : 0.0;
    return true;
}

} // namespace actorserve
