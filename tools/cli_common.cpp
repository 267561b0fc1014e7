// Pieces the actorserve subcommands share; see cli_common.h.
#include "tools/cli_common.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <random>

#include "engine/utf8.h"

namespace actorserve::cli {

int fail(const std::string &message) {
    std::fprintf(stderr, "actorserve: error: %s\n", message.c_str());
    return 1;
}

void add_model_option(CLI::App *cmd, model_options &m) {
    cmd->add_option("-m,--model", m.path, "GGUF model file")->required();
}

void add_weights_option(CLI::App *cmd, model_options &m) {
    cmd->add_option("--weights", m.weights,
                    std::string("Hold weight matrices as stored (native) or converted at load: ") + weight_format_names())
        ->check([](const std::string &s) {
            return parse_weight_format(s) ? std::string() : s + " is not one of " + weight_format_names();
        })
        ->capture_default_str();
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

std::optional<std::string> check_run_options(const run_options &o) {
    if (const auto bad = validate(o.sampling)) return "--" + *bad;
    if (o.max_tokens < 1) return "--max-tokens must be >= 1, got " + std::to_string(o.max_tokens);
    if (o.threads < 0 || o.threads > 1024)
        return "--threads must be in [0, 1024] (0 = physical cores), got " + std::to_string(o.threads);
    if (o.ctx_size < 1) return "--ctx-size must be >= 1, got " + std::to_string(o.ctx_size);
    return std::nullopt;
}

std::string flag_spelling(std::string msg) {
    const size_t sp = msg.find(' ');
    for (size_t i = 0; i < sp && i < msg.size(); ++i)
        if (msg[i] == '_') msg[i] = '-';
    return msg;
}

std::optional<loaded_model> load_model(const model_options &mo, std::string &err, int threads) {
    const auto format = parse_weight_format(mo.weights);
    if (!format) {
        err = "--weights must be one of " + std::string(weight_format_names()) + ", got " + mo.weights;
        return std::nullopt;
    }
    loaded_model m;
    m.model = llama_model::load(mo.path, load_options{.weights = *format, .n_threads = threads}, err);
    if (!m.model) return std::nullopt;
    m.tok = tokenizer::from_gguf(m.model->file(), err);
    if (!m.tok) {
        err = mo.path + ": " + err;
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

bool write_out(std::string_view text) {
    return std::fwrite(text.data(), 1, text.size(), stdout) == text.size() && std::fflush(stdout) == 0;
}

double tok_per_s(int n, double ms) { return ms > 0.0 ? n * 1000.0 / ms : 0.0; }

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

} // namespace actorserve::cli
