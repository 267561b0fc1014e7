// actorserve: the command-line tool. Subcommands generate, chat, tokenize and info over one
// GGUF model on the CPU engine. See docs/cli.md.
//
// Exit codes: 0 success, 1 an error reported as "actorserve: error: <message>" (bad model,
// bad parameter value, prompt too long, ...), 2 a usage error found by the argument parser.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/chat_template.h"
#include "engine/forward.h"
#include "engine/generate.h"
#include "engine/model.h"
#include "engine/quants.h"
#include "engine/sampler.h"
#include "engine/tokenizer.h"
#include "engine/utf8.h"

using namespace actorserve;

namespace {

int fail(const std::string &message) {
    std::fprintf(stderr, "actorserve: error: %s\n", message.c_str());
    return 1;
}

// ---- options shared by subcommands ----

struct model_options {
    std::string path;
};

struct run_options {
    int max_tokens = 256;
    int threads = 0; // 0: physical cores
    int ctx_size = 2048;
    std::vector<std::string> stop;
    std::string system;
    sampling_params sampling;
    uint64_t seed = 0;
    CLI::Option *seed_opt = nullptr;
};

void add_model_option(CLI::App *cmd, model_options &m) {
    cmd->add_option("-m,--model", m.path, "GGUF model file")->required();
}

void add_run_options(CLI::App *cmd, run_options &o) {
    cmd->add_option("-n,--max-tokens", o.max_tokens, "Most tokens to generate (per answer in chat)")
        ->capture_default_str();
    cmd->add_option("--temperature", o.sampling.temperature, "Sampling temperature; 0 = greedy")
        ->capture_default_str();
    cmd->add_option("--top-k", o.sampling.top_k, "Keep the k most likely tokens; 0 = off")->capture_default_str();
    cmd->add_option("--top-p", o.sampling.top_p, "Nucleus sampling: smallest set with cumulative p >= P; 1 = off")
        ->capture_default_str();
    cmd->add_option("--min-p", o.sampling.min_p, "Drop tokens with p < MIN_P * p(most likely); 0 = off")
        ->capture_default_str();
    cmd->add_option("--repeat-penalty", o.sampling.repeat_penalty,
                    "Divide positive (multiply negative) logits of recent tokens by this; 1 = off")
        ->capture_default_str();
    cmd->add_option("--repeat-last-n", o.sampling.repeat_last_n, "Recent tokens the repeat penalty looks at")
        ->capture_default_str();
    o.seed_opt = cmd->add_option("--seed", o.seed, "Random seed (default: random, printed to stderr)");
    cmd->add_option("--stop", o.stop, "Stop at this string (not printed); may be given several times")
        ->take_all();
    cmd->add_option("--system", o.system, "System message for the chat template");
    cmd->add_option("-t,--threads", o.threads, "Worker threads (default: physical cores)");
    cmd->add_option("-c,--ctx-size", o.ctx_size, "Context size in tokens")->capture_default_str();
}

// Range checks that the parser leaves to us; nullopt when all is well.
std::optional<std::string> check_run_options(const run_options &o) {
    if (const auto bad = validate(o.sampling)) return "--" + *bad;
    if (o.max_tokens < 1) return "--max-tokens must be >= 1, got " + std::to_string(o.max_tokens);
    if (o.threads < 0 || o.threads > 1024)
        return "--threads must be in [0, 1024] (0 = physical cores), got " + std::to_string(o.threads);
    if (o.ctx_size < 1) return "--ctx-size must be >= 1, got " + std::to_string(o.ctx_size);
    return std::nullopt;
}

// validate() names parameters as the struct does (top_p); the command line spells them --top-p.
std::string flag_spelling(std::string msg) {
    const size_t sp = msg.find(' ');
    for (size_t i = 0; i < sp && i < msg.size(); ++i)
        if (msg[i] == '_') msg[i] = '-';
    return msg;
}

struct loaded_model {
    std::unique_ptr<llama_model> model;
    std::unique_ptr<tokenizer> tok;
};

std::optional<loaded_model> load_model(const std::string &path, std::string &err) {
    loaded_model m;
    m.model = llama_model::load(path, err);
    if (!m.model) return std::nullopt;
    m.tok = tokenizer::from_gguf(m.model->file(), err);
    if (!m.tok) {
        err = path + ": " + err;
        return std::nullopt;
    }
    return m;
}

std::optional<chat_template> load_template(const llama_model &model, std::string &err) {
    const std::string src = model.file().get_string("tokenizer.chat_template").value_or("");
    auto t = chat_template::detect(src, err);
    if (!t) err = model.file().path() + ": " + err;
    return t;
}

std::vector<int32_t> tokenize_prompt(const tokenizer &tok, const std::string &text) {
    std::vector<int32_t> ids;
    if (tok.add_bos() && tok.bos() >= 0) ids.push_back(tok.bos());
    const std::vector<int32_t> body = tok.encode(text, /*parse_special=*/true);
    ids.insert(ids.end(), body.begin(), body.end());
    return ids;
}

// The context size must fit the model (RoPE positions beyond training are not supported).
std::optional<std::string> check_ctx(const run_options &o, const llama_model &model) {
    const int train = model.hparams().n_ctx_train;
    if (train > 0 && o.ctx_size > train)
        return "--ctx-size " + std::to_string(o.ctx_size) + " exceeds the model's training context of " +
               std::to_string(train) + " tokens";
    return std::nullopt;
}

uint64_t pick_seed(const run_options &o) {
    if (o.seed_opt->count() > 0) return o.seed;
    std::random_device rd;
    const uint64_t seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    if (o.sampling.temperature > 0.0f) std::fprintf(stderr, "seed: %llu\n", static_cast<unsigned long long>(seed));
    return seed;
}

// Writes a chunk and flushes it; false when stdout is gone (closed pipe), which cancels.
bool write_out(std::string_view text) {
    return std::fwrite(text.data(), 1, text.size(), stdout) == text.size() && std::fflush(stdout) == 0;
}

double tok_per_s(int n, double ms) { return ms > 0.0 ? n * 1000.0 / ms : 0.0; }

// ---- generate ----

struct generate_options {
    model_options model;
    run_options run;
    std::string prompt;
    bool chat = false;
};

int cmd_generate(const generate_options &o) {
    if (const auto bad = check_run_options(o.run)) return fail(flag_spelling(*bad));
    std::string err;
    auto m = load_model(o.model.path, err);
    if (!m) return fail(err);
    if (const auto bad = check_ctx(o.run, *m->model)) return fail(*bad);

    std::vector<int32_t> prompt;
    if (o.chat) {
        const auto tmpl = load_template(*m->model, err);
        if (!tmpl) return fail(err);
        std::vector<chat_message> msgs;
        if (!o.run.system.empty()) msgs.push_back({"system", o.run.system});
        msgs.push_back({"user", o.prompt});
        prompt = tokenize_prompt(*m->tok, tmpl->render(msgs, /*add_generation_prompt=*/true));
    } else {
        if (!o.run.system.empty()) return fail("--system needs --chat");
        prompt = tokenize_prompt(*m->tok, o.prompt);
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

// ---- chat ----

size_t common_prefix(const std::vector<int32_t> &a, const std::vector<int32_t> &b) {
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    return n;
}

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
    auto m = load_model(mo.path, err);
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
    const auto render = [&] { return tokenize_prompt(tok, tmpl->render(msgs, /*add_generation_prompt=*/true)); };

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

// ---- tokenize ----

// A token's bytes made readable on one line: valid UTF-8 as is, control characters and bytes
// of incomplete characters as escapes (\n, \t, \\, \xNN).
std::string printable(const std::string &bytes) {
    std::string out;
    size_t i = 0;
    while (i < bytes.size()) {
        const unsigned char c = static_cast<unsigned char>(bytes[i]);
        const size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (len > 1 && i + len <= bytes.size() && is_valid_utf8(std::string_view(bytes).substr(i, len))) {
            out.append(bytes, i, len);
            i += len;
            continue;
        }
        char buf[8];
        if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c == '\r') out += "\\r";
        else if (c == '\\') out += "\\\\";
        else if (c >= 0x20 && c < 0x7f) out += static_cast<char>(c);
        else {
            std::snprintf(buf, sizeof buf, "\\x%02X", c);
            out += buf;
        }
        ++i;
    }
    return out;
}

struct tokenize_options {
    model_options model;
    std::string text;
    bool no_special = false;
    bool pieces = false;
};

int cmd_tokenize(const tokenize_options &o) {
    std::string err;
    auto m = load_model(o.model.path, err);
    if (!m) return fail(err);
    const tokenizer &tok = *m->tok;
    std::vector<int32_t> ids;
    if (tok.add_bos() && tok.bos() >= 0) ids.push_back(tok.bos());
    const std::vector<int32_t> body = tok.encode(o.text, /*parse_special=*/!o.no_special);
    ids.insert(ids.end(), body.begin(), body.end());
    std::string out;
    for (size_t i = 0; i < ids.size(); ++i) {
        if (o.pieces) {
            out += std::to_string(ids[i]) + "\t" + printable(tok.token_bytes(ids[i], /*render_special=*/true)) + "\n";
        } else {
            out += (i ? " " : "") + std::to_string(ids[i]);
        }
    }
    if (!o.pieces) out += "\n";
    write_out(out);
    return 0;
}

// ---- info ----

int cmd_info(const model_options &o) {
    std::string err;
    auto m = load_model(o.path, err);
    if (!m) return fail(err);
    const llama_model &model = *m->model;
    const gguf_file &f = model.file();
    const llama_hparams &hp = model.hparams();
    const tokenizer &tok = *m->tok;

    std::map<std::string, int> type_counts;
    int64_t n_params = 0;
    for (const gguf_tensor &t : f.tensors()) {
        ++type_counts[tensor_type_name(t.type)];
        n_params += t.n_elements();
    }
    std::string types;
    for (const auto &[name, count] : type_counts) types += (types.empty() ? "" : ", ") + name + " " + std::to_string(count);

    std::string tmpl_desc;
    if (const auto t = load_template(model, err)) {
        tmpl_desc = t->name();
        if (t->default_system()) tmpl_desc += " (default system prompt: \"" + printable(*t->default_system()) + "\")";
    } else {
        tmpl_desc = "none recognised";
    }

    std::printf("file:            %s (%.1f MB, GGUF v%u)\n", f.path().c_str(), static_cast<double>(f.file_size()) / 1e6, f.version());
    std::printf("name:            %s\n", f.get_string("general.name").value_or("(none)").c_str());
    std::printf("architecture:    %s\n", hp.arch.c_str());
    std::printf("parameters:      %.1f M\n", static_cast<double>(n_params) / 1e6);
    std::printf("context (train): %d\n", hp.n_ctx_train);
    std::printf("embedding:       %d\n", hp.n_embd);
    std::printf("layers:          %d\n", hp.n_layer);
    std::printf("heads:           %d (kv heads %d, head dim %d, rope dims %d)\n", hp.n_head, hp.n_head_kv,
                hp.head_dim, hp.n_rot);
    std::printf("feed-forward:    %d\n", hp.n_ff);
    std::printf("rope theta:      %g (freq scale %g)\n", hp.rope_theta, hp.rope_freq_scale);
    std::printf("rms eps:         %g\n", hp.rms_eps);
    std::printf("output:          %s\n", model.tied_output() ? "tied to token embedding" : "separate matrix");
    std::printf("tensors:         %zu (%s)\n", f.tensors().size(), types.c_str());
    std::printf("weights:         %.1f MB read per token\n", static_cast<double>(model.weight_bytes()) / 1e6);
    std::printf("vocab:           %d (bos %d, eos %d, add bos %s, pre-tokenizer %s)\n", tok.n_vocab(), tok.bos(),
                tok.eos(), tok.add_bos() ? "yes" : "no", tok.pre_name().c_str());
    std::printf("chat template:   %s\n", tmpl_desc.c_str());
    std::printf("simd:            %s\n", simd_level());
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    // A closed stdout (e.g. `| head`) ends generation through a failed write instead of a signal.
    std::signal(SIGPIPE, SIG_IGN);

    CLI::App app{"actorserve: LLM inference on the CPU (GGUF, LLaMA family)", "actorserve"};
    app.require_subcommand(1);

    generate_options gen;
    CLI::App *gen_cmd = app.add_subcommand("generate", "Complete a prompt, streaming text to stdout");
    add_model_option(gen_cmd, gen.model);
    gen_cmd->add_option("-p,--prompt", gen.prompt, "Prompt text")->required();
    gen_cmd->add_flag("--chat", gen.chat, "Wrap the prompt as a user message in the model's chat template");
    add_run_options(gen_cmd, gen.run);

    model_options chat_model;
    run_options chat_run;
    chat_run.max_tokens = 512;
    CLI::App *chat_cmd = app.add_subcommand("chat", "Interactive chat on the terminal (/reset, /quit)");
    add_model_option(chat_cmd, chat_model);
    add_run_options(chat_cmd, chat_run);
    bool chat_verbose = false;
    chat_cmd->add_flag("-v,--verbose", chat_verbose, "After each answer print token counts and speed to stderr");

    tokenize_options tk;
    CLI::App *tok_cmd = app.add_subcommand("tokenize", "Print the token ids of a text");
    add_model_option(tok_cmd, tk.model);
    tok_cmd->add_option("--text", tk.text, "Text to tokenize")->required();
    tok_cmd->add_flag("--no-special", tk.no_special, "Tokenize control-token text (<|im_start|>) as plain text");
    tok_cmd->add_flag("--pieces", tk.pieces, "Print one token per line: id, tab, its text");

    model_options info;
    CLI::App *info_cmd = app.add_subcommand("info", "Describe a model file");
    add_model_option(info_cmd, info);

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp &e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp &e) {
        return app.exit(e);
    } catch (const CLI::ParseError &e) {
        std::fprintf(stderr, "actorserve: error: %s\nRun 'actorserve --help' or 'actorserve <command> --help'.\n",
                     e.what());
        return 2;
    }

    try {
        if (*gen_cmd) return cmd_generate(gen);
        if (*chat_cmd) return cmd_chat(chat_model, chat_run, chat_verbose);
        if (*tok_cmd) return cmd_tokenize(tk);
        if (*info_cmd) return cmd_info(info);
    } catch (const std::bad_alloc &) {
        return fail("out of memory");
    } catch (const std::exception &e) {
        return fail(e.what());
    }
    return 0;
}
