// actorserve chat: interactive conversation on the terminal.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <span>
#include <string>
#include <vector>

#include "engine/forward.h"
#include "engine/generate.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace actorserve::cli {

namespace {

size_t common_prefix(const std::vector<int32_t> &a, const std::vector<int32_t> &b) {
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    return n;
}

} // namespace

// Interactive conversation. Each turn re-renders the whole message list and evaluates only
// the tokens after its longest common prefix with the KV cache (`cached` mirrors what the
// cache holds), so a turn costs its own tokens, not the conversation's.
//
// Context full: before a turn, while the rendered conversation plus room for an answer
// (min(--max-tokens, ctx/4) tokens) does not fit, the oldest user turn and its answer are
// dropped (a --system message stays) and the user is told on stderr. Dropping the start
// changes the prefix, so that turn re-evaluates the remaining conversation once.
// An answer cut off by a full context is kept as it is; the next turn makes room.
int cmd_chat(const model_options &mo, const run_options &o, bool verbose) {
    if (const auto bad = check_run_options(o)) return fail(flag_spelling(*bad));
    std::string err;
    auto m = load_model(mo, err, o.threads);
    if (!m) return fail(err);
    if (const auto bad = check_ctx(o, *m->model)) return fail(*bad);
    const auto tmpl = load_template(*m->model, err);
    if (!tmpl) return fail(err);
    const tokenizer &tok = *m->tok;

    const uint64_t seed = pick_seed(o);
    llama_context ctx(*m->model, context_params{.n_ctx = o.ctx_size, .n_threads = o.threads});
    const size_t n_ctx = static_cast<size_t>(ctx.n_ctx());
    const size_t reserve = std::min(static_cast<size_t>(o.max_tokens), n_ctx / 4);

    std::vector<chat_message> msgs;
    if (!o.system.empty()) msgs.push_back({"system", o.system});
    const size_t n_fixed = msgs.size();
    std::vector<int32_t> cached; // (ctx.n_past(),) the tokens in the KV cache
    const bool interactive = isatty(STDIN_FILENO);
    const auto render = [&] {
        const rendered_chat chat = tmpl->render_marked(msgs, /*add_generation_prompt=*/true);
        return encode_prompt(tok, chat.text, chat.controls); // what is typed stays text
    };

    std::string line;
    for (uint64_t turn = 0;; ) {
        if (interactive) std::fputs("> ", stderr);
        if (!std::getline(std::cin, line)) {
            if (interactive) std::fputs("\n", stderr);
            break;
        }
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        if (line == "/quit") break;
        if (line == "/reset") {
            msgs.resize(n_fixed);
            std::fputs("[conversation reset]\n", stderr);
            continue;
        }

        msgs.push_back({"user", line});
        std::vector<int32_t> ids = render();
        int dropped = 0;
        while (ids.size() + reserve > n_ctx && msgs.size() > n_fixed + 1) {
            const auto first = msgs.begin() + static_cast<ptrdiff_t>(n_fixed);
            const bool has_answer = first + 1 != msgs.end() - 1 && (first + 1)->role == "assistant";
            msgs.erase(first, first + (has_answer ? 2 : 1));
            ++dropped;
            ids = render();
        }
        if (dropped > 0)
            std::fprintf(stderr, "[context full: dropped the oldest %d turn%s]\n", dropped, dropped > 1 ? "s" : "");
        if (ids.size() >= n_ctx) {
            std::fprintf(stderr, "actorserve: error: message too long: the conversation needs %zu tokens, "
                                 "the context is %zu (see --ctx-size)\n", ids.size(), n_ctx);
            msgs.pop_back();
            continue;
        }

        size_t keep = common_prefix(cached, ids);
        if (keep == ids.size()) --keep; // re-evaluate the last token to get its logits
        ctx.truncate(static_cast<int>(keep));
        cached.resize(keep);
        const std::span<const int32_t> suffix(ids.data() + keep, ids.size() - keep);

        generate_params gp;
        gp.max_tokens = o.max_tokens;
        gp.stop = o.stop;
        gp.sampling = o.sampling;
        gp.sampling.seed = seed + turn++; // a fresh stream per turn, reproducible from the seed
        std::string answer;
        generate_stats st;
        const bool ok = generate(ctx, tok, suffix, gp,
                                 [&](std::string_view t) {
                                     answer += t;
                                     return write_out(t);
                                 },
                                 st, err);
        if (!ok) {
            // note: a failed generate leaves the cache as it was after `keep` or with the prompt
            // evaluated; resync the mirror by length either way.
            cached.insert(cached.end(), suffix.begin(), suffix.end());
            cached.resize(std::min(cached.size(), static_cast<size_t>(ctx.n_past())));
            ctx.truncate(static_cast<int>(cached.size()));
            std::fprintf(stderr, "actorserve: error: %s\n", err.c_str());
            msgs.pop_back();
            continue;
        }
        cached.insert(cached.end(), suffix.begin(), suffix.end());
        cached.insert(cached.end(), st.tokens.begin(), st.tokens.end());
        cached.resize(static_cast<size_t>(ctx.n_past()));
        write_out("\n");
        if (verbose)
            std::fprintf(stderr, "prompt: %d tokens (%zu reused), %.1f tok/s | generation: %d tokens, %.1f tok/s | "
                                 "finish: %s\n", st.n_prompt, keep, tok_per_s(st.n_prompt, st.prompt_ms),
                         st.n_generated, tok_per_s(st.n_generated, st.gen_ms), st.finish_reason.c_str());
        if (st.finish_reason == "context")
            std::fputs("[context full: the answer was cut off; the oldest turns are dropped next turn]\n", stderr);
        msgs.push_back({"assistant", answer});
    }
    return 0;
}

} // namespace actorserve::cli
