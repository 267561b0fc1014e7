#include "engine/generate.h"

#include <algorithm>
#include <chrono>

#include "engine/stop_filter.h"
#include "engine/utf8.h"

namespace actorserve {
namespace {

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t0) {
    return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

} // namespace

bool generate(llama_context &ctx, const tokenizer &tok, std::span<const int32_t> prompt,
              const generate_params &params, const std::function<bool(std::string_view)> &on_text,
              generate_stats &stats, std::string &err) {
    stats = generate_stats{};
    if (const auto bad = validate(params.sampling)) {
        err = *bad;
        return false;
    }
    if (params.max_tokens < 1) {
        err = "max_tokens must be >= 1, got " + std::to_string(params.max_tokens);
        return false;
    }
    if (prompt.empty()) {
        err = "the prompt is empty";
        return false;
    }
    const int room = ctx.n_ctx() - ctx.n_past();
    if (prompt.size() > static_cast<size_t>(room)) {
        err = "prompt has " + std::to_string(prompt.size()) + " tokens, the context has room for " +
              std::to_string(room);
        return false;
    }

    const auto t_prompt = clock_type::now();
    if (!ctx.eval(prompt, err)) return false;
    stats.n_prompt = static_cast<int>(prompt.size());
    stats.prompt_ms = ms_since(t_prompt);

    const auto t_gen = clock_type::now();
    sampler smp(params.sampling);
    stop_filter stops(params.stop);
    utf8_stream utf8;
    // note: the penalty window is at most repeat_last_n, so only that much of the prompt is kept.
    const std::span<const int32_t> recent =
        prompt.last(std::min(prompt.size(), static_cast<size_t>(params.sampling.repeat_last_n)));
    std::vector<int32_t> history(recent.begin(), recent.end());
    history.reserve(history.size() + static_cast<size_t>(params.max_tokens));
    stats.tokens.reserve(static_cast<size_t>(params.max_tokens));

    // Passes text on; false when the caller cancelled.
    const auto emit = [&](const std::string &text) { return text.empty() || !on_text || on_text(text); };

    bool stopped_by_string = false, cancelled = false;
    for (;;) {
        const int32_t id = smp.sample(ctx.logits(), history);
        if (tok.is_eog(id)) {
            stats.finish_reason = "stop";
            break;
        }
        stats.tokens.push_back(id);
        history.push_back(id);
        ++stats.n_generated;

        const stop_filter::result r = stops.push(utf8.push(tok.token_bytes(id, params.render_special)));
        if (!emit(r.emit)) {
            cancelled = true;
            break;
        }
        if (r.stopped) {
            stopped_by_string = true;
            stats.finish_reason = "stop";
            break;
        }
        if (stats.n_generated >= params.max_tokens) {
            stats.finish_reason = "length";
            break;
        }
        if (ctx.n_past() >= ctx.n_ctx()) {
            stats.finish_reason = "context";
            break;
        }
        if (!ctx.eval({&id, 1}, err)) return false;
    }

    if (cancelled) {
        stats.finish_reason = "cancelled";
    } else if (!stopped_by_string) {
        // An incomplete character at the very end becomes U+FFFD; it may still complete a stop.
        const stop_filter::result r = stops.push(utf8.flush());
        bool ok = emit(r.emit);
        if (r.stopped) stats.finish_reason = "stop";
        else if (ok) ok = emit(stops.flush());
        if (!ok) stats.finish_reason = "cancelled";
    }
    stats.gen_ms = ms_since(t_gen);
    return true;
}

} // namespace actorserve
