// actorserve generate: complete a prompt, streaming text to stdout.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "engine/forward.h"
#include "engine/generate.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace actorserve::cli {

int cmd_generate(const generate_options &o) {
    if (const auto bad = check_run_options(o.run)) return fail(flag_spelling(*bad));
    std::string err;
    auto m = load_model(o.model, err, o.run.threads);
    if (!m) return fail(err);
    if (const auto bad = check_ctx(o.run, *m->model)) return fail(*bad);

    std::vector<int32_t> prompt;
    if (o.chat) {
        const auto tmpl = load_template(*m->model, err);
        if (!tmpl) return fail(err);
        std::vector<chat_message> msgs;
        if (!o.run.system.empty()) msgs.push_back({"system", o.run.system});
        msgs.push_back({"user", o.prompt});
        const rendered_chat chat = tmpl->render_marked(msgs, /*add_generation_prompt=*/true);
        prompt = encode_prompt(*m->tok, chat.text, chat.controls);
    } else {
        if (!o.run.system.empty()) return fail("--system needs --chat");
        prompt = encode_prompt(*m->tok, o.prompt);
    }
    if (prompt.empty()) return fail("the prompt is empty");
    if (prompt.size() > static_cast<size_t>(o.run.ctx_size))
        return fail("prompt has " + std::to_string(prompt.size()) + " tokens, the context is " +
                    std::to_string(o.run.ctx_size) + " (see --ctx-size)");

    generate_params gp;
    gp.max_tokens = o.run.max_tokens;
    gp.stop = o.run.stop;
    gp.sampling = o.run.sampling;
    gp.sampling.seed = pick_seed(o.run);

    llama_context ctx(*m->model, context_params{.n_ctx = o.run.ctx_size, .n_threads = o.run.threads});
    bool last_newline = true;
    generate_stats st;
    const bool ok = generate(ctx, *m->tok, prompt, gp,
                             [&](std::string_view t) {
                                 last_newline = t.back() == '\n';
                                 return write_out(t);
                             },
                             st, err);
    if (!ok) return fail(err);
    // note: the text is printed as generated; a newline is added only on a terminal, so that
    // the statistics line below does not start mid-line.
    if (!last_newline && isatty(STDOUT_FILENO)) write_out("\n");
    std::fprintf(stderr, "prompt: %d tokens, %.1f tok/s | generation: %d tokens, %.1f tok/s | finish: %s\n",
                 st.n_prompt, tok_per_s(st.n_prompt, st.prompt_ms), st.n_generated,
                 tok_per_s(st.n_generated, st.gen_ms), st.finish_reason.c_str());
    return 0;
}

} // namespace actorserve::cli
