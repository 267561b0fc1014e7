#include "engine/sampler.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <limits>

namespace actorserve {
namespace {

std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

// Higher value first; the lower id wins a tie so that the order is total and deterministic.
bool higher(const token_prob &a, const token_prob &b) { return a.p > b.p || (a.p == b.p && a.id < b.id); }

// A double uniform in [0, 1) from the top 53 bits of one 64-bit draw.
// note: std::uniform_real_distribution and std::generate_canonical are allowed to differ
// between standard libraries (and have, across libstdc++ versions), which would change the
// tokens a seed gives; this conversion is exact and the same everywhere.
double uniform01(std::mt19937_64 &rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

} // namespace

std::optional<std::string> validate(const sampling_params &p) {
    if (!(p.temperature >= 0.0f && p.temperature <= 100.0f))
        return "temperature must be in [0, 100], got " + num(p.temperature);
    if (p.top_k < 0 || p.top_k > 1000000) return "top_k must be in [0, 1000000] (0 = off), got " + std::to_string(p.top_k);
    if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) return "top_p must be in (0, 1], got " + num(p.top_p);
    // min_p = 1 keeps only the most likely tokens (p >= p_max), as llama.cpp allows.
    if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) return "min_p must be in [0, 1], got " + num(p.min_p);
    if (!(p.repeat_penalty > 0.0f && p.repeat_penalty <= 10.0f))
        return "repeat_penalty must be in (0, 10] (1 = off), got " + num(p.repeat_penalty);
    if (p.repeat_last_n < 0)
        return "repeat_last_n must be >= 0 (0 = off), got " + std::to_string(p.repeat_last_n);
    return std::nullopt;
}

void apply_repeat_penalty(std::span<float> logits, std::span<const int32_t> history, float penalty,
                          int last_n, std::vector<uint8_t> &seen) {
    assert(seen.size() >= logits.size());
    if (penalty == 1.0f || last_n <= 0) return;
    const size_t n = std::min(history.size(), static_cast<size_t>(last_n));
    const std::span<const int32_t> window = history.last(n);
    const auto in_vocab = [&](int32_t id) { return id >= 0 && static_cast<size_t>(id) < logits.size(); };
    for (int32_t id : window) {
        if (!in_vocab(id) || seen[id]) continue; // note: a token repeated in the window is penalised once
        seen[id] = 1;
        float &l = logits[id];
        l = l > 0.0f ? l / penalty : l * penalty;
    }
    for (int32_t id : window)
        if (in_vocab(id)) seen[id] = 0;
}

sampler::sampler(const sampling_params &params) : params_(params), rng_(params.seed) {}

std::span<const token_prob> sampler::distribution(std::span<const float> logits,
                                                  std::span<const int32_t> history,
                                                  const std::vector<int32_t> *allowed) {
    const size_t n_vocab = logits.size();
    assert(n_vocab > 0);
    if (logits_.size() != n_vocab) {
        logits_.resize(n_vocab);
        seen_.assign(n_vocab, 0);
        cand_.resize(n_vocab);
    }
    std::copy(logits.begin(), logits.end(), logits_.begin());
    apply_repeat_penalty(logits_, history, params_.repeat_penalty, params_.repeat_last_n, seen_);
    if (allowed) {
        assert(!allowed->empty());
        // Every other id is -infinity: what logprobs() reports, and never a candidate below.
        size_t j = 0;
        for (size_t i = 0; i < n_vocab; ++i) {
            if (j < allowed->size() && static_cast<size_t>((*allowed)[j]) == i) ++j;
            else logits_[i] = -std::numeric_limits<float>::infinity();
        }
    }

    if (params_.temperature <= 0.0f) {
        size_t best = allowed ? static_cast<size_t>(allowed->front()) : 0;
        for (size_t i = 1; i < n_vocab; ++i)
            if (logits_[i] > logits_[best]) best = i; // strict: the lowest id wins ties
        cand_[0] = {static_cast<int32_t>(best), 1.0f};
        return {cand_.data(), 1};
    }

    // cand_[0..n) holds (id, logit) until the softmax turns the logits into probabilities.
    size_t n = 0;
    if (allowed)
        for (int32_t id : *allowed) cand_[n++] = {id, logits_[static_cast<size_t>(id)]};
    else
        for (; n < n_vocab; ++n) cand_[n] = {static_cast<int32_t>(n), logits_[n]};

    // top-k: O(n_vocab) selection; the k survivors are left unordered.
    if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < n) {
        const size_t k = static_cast<size_t>(params_.top_k);
        std::nth_element(cand_.begin(), cand_.begin() + static_cast<ptrdiff_t>(k - 1),
                         cand_.begin() + static_cast<ptrdiff_t>(n), higher);
        n = k;
    }

    // softmax(logit / T) over the survivors, in double to keep the normaliser exact enough.
    float max_l = cand_[0].p;
    for (size_t i = 1; i < n; ++i) max_l = std::max(max_l, cand_[i].p);
    const double inv_t = 1.0 / params_.temperature;
    double sum = 0.0;
    for (size_t i = 0; i < n; ++i) {
        const double e = std::exp((static_cast<double>(cand_[i].p) - max_l) * inv_t);
        cand_[i].p = static_cast<float>(e);
        sum += e;
    }
    for (size_t i = 0; i < n; ++i) cand_[i].p = static_cast<float>(cand_[i].p / sum);
    const float p_max = static_cast<float>(1.0 / sum); // the max logit's exp is exactly 1

    // top-p then min-p. Both keep a prefix of the tokens sorted by p, so their result is the
    // shorter prefix. min-p's prefix is found without sorting (a threshold on p), so it runs
    // first as a partition and only its survivors are sorted for top-p; the cumulative sum
    // still uses probabilities over the whole top-k set, as top-p-then-min-p prescribes.
    if (params_.min_p > 0.0f) {
        const float threshold = params_.min_p * p_max;
        const auto end = std::partition(cand_.begin(), cand_.begin() + static_cast<ptrdiff_t>(n),
                                        [&](const token_prob &c) { return c.p >= threshold; });
        n = static_cast<size_t>(end - cand_.begin()); // >= 1: the max has p == p_max
    }
    if (params_.top_p < 1.0f) {
        std::sort(cand_.begin(), cand_.begin() + static_cast<ptrdiff_t>(n), higher);
        double cum = 0.0;
        for (size_t i = 0; i < n; ++i) {
            cum += cand_[i].p;
            if (cum >= params_.top_p) {
                n = i + 1;
                break;
            }
        }
    }

    double kept = 0.0;
    for (size_t i = 0; i < n; ++i) kept += cand_[i].p;
    for (size_t i = 0; i < n; ++i) cand_[i].p = static_cast<float>(cand_[i].p / kept);
    return {cand_.data(), n};
}

token_logprobs sampler::logprobs(int32_t chosen, int top) {
    assert(!logits_.empty() && chosen >= 0 && static_cast<size_t>(chosen) < logits_.size());
    const size_t n_vocab = logits_.size();
    // logits_ still holds the penalised logits of the last call.
    float max_l = logits_[0];
    for (size_t i = 1; i < n_vocab; ++i) max_l = std::max(max_l, logits_[i]);
    double sum = 0.0;
    for (size_t i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits_[i]) - max_l);
    const double log_z = static_cast<double>(max_l) + std::log(sum);
    const auto lp = [&](size_t i) { return static_cast<float>(static_cast<double>(logits_[i]) - log_z); };

    token_logprobs r;
    r.id = chosen;
    r.logprob = lp(static_cast<size_t>(chosen));
    size_t finite = 0; // constrained decoding leaves the rest at -infinity: not alternatives
    for (size_t i = 0; i < n_vocab; ++i) finite += std::isfinite(logits_[i]) ? 1 : 0;
    const size_t k = std::min(static_cast<size_t>(std::max(top, 0)), finite);
    if (k == 0) return r;
    // cand_ is free scratch here: distribution()'s result is not read after this call.
    for (size_t i = 0; i < n_vocab; ++i) cand_[i] = {static_cast<int32_t>(i), logits_[i]};
    std::partial_sort(cand_.begin(), cand_.begin() + static_cast<ptrdiff_t>(k), cand_.end(), higher);
    r.top.reserve(k);
    for (size_t i = 0; i < k; ++i) r.top.emplace_back(cand_[i].id, lp(static_cast<size_t>(cand_[i].id)));
    return r;
}

int32_t sampler::sample(std::span<const float> logits, std::span<const int32_t> history,
                        const std::vector<int32_t> *allowed) {
    const std::span<const token_prob> d = distribution(logits, history, allowed);
    if (d.size() == 1) return d[0].id;
    // Inverse CDF over the renormalised probabilities. The target is scaled by their float
    // sum so that rounding can never push it past the last token.
    double total = 0.0;
    for (const token_prob &c : d) total += c.p;
    const double u = uniform01(rng_) * total;
    double cum = 0.0;
    for (const token_prob &c : d) {
        cum += c.p;
        if (u < cum) return c.id;
    }
    return d.back().id;
}

} // namespace actorserve
