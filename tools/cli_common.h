// Pieces the actorserve subcommands share: error reporting, the options every command takes,
// model loading, prompt tokenization and output.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat_template.h"
#include "engine/model.h"
#include "engine/sampler.h"
#include "engine/tokenizer.h"

namespace CLI {
class App;
class Option;
} // namespace CLI

namespace actorserve::cli {

// Prints "actorserve: error: <message>" to stderr; returns the exit code 1.
int fail(const std::string &message);

// ---- options shared by subcommands ----

struct model_options {
    std::string path;
    std::string weights = "native"; // --weights: a weight_format name, checked by the parser
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

void add_model_option(CLI::App *cmd, model_options &m);
// --weights native|f32|f16|q8_0|q4_0|q4_1 (for the commands that run or describe the model)
void add_weights_option(CLI::App *cmd, model_options &m);
void add_run_options(CLI::App *cmd, run_options &o);

// Range checks that the parser leaves to us; nullopt when all is well.
std::optional<std::string> check_run_options(const run_options &o);

// validate() names parameters as the struct does (top_p); the command line spells them --top-p.
std::string flag_spelling(std::string msg);

// ---- model, template, prompt ----

struct loaded_model {
    std::unique_ptr<llama_model> model;
    std::unique_ptr<tokenizer> tok;
};

// The model (its weights in m.weights, converted on `threads` threads, 0 = physical cores)
// and its tokenizer; nullopt with `err` set on failure.
std::optional<loaded_model> load_model(const model_options &m, std::string &err, int threads = 0);

// The model's chat template; nullopt with `err` set when it has none we recognise.
std::optional<chat_template> load_template(const llama_model &model, std::string &err);

// The context size must fit the model (RoPE positions beyond training are not supported).
std::optional<std::string> check_ctx(const run_options &o, const llama_model &model);

// --seed when given, else a random seed (printed to stderr when sampling is not greedy).
uint64_t pick_seed(const run_options &o);

// ---- output ----

// Writes a chunk and flushes it; false when stdout is gone (closed pipe), which cancels.
bool write_out(std::string_view text);

double tok_per_s(int n, double ms);

// A token's bytes made readable on one line: valid UTF-8 as is, control characters and bytes
// of incomplete characters as escapes (\n, \t, \\, \xNN).
std::string printable(const std::string &bytes);

} // namespace actorserve::cli
