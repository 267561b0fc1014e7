// The cost of structured output's token mask per decoding step (engine/token_mask.h), beside
// the naive mask that feeds every token of the vocabulary to the matcher, at states along
// random walks of a few schemas; medians and 99th percentiles in microseconds, per kind of
// state (inside a string, elsewhere). A measurement, never an assertion.
//
//   build/bin/mask_bench --model models/SmolLM2-135M-Instruct.Q4_1.gguf [--walks 20] [--steps 60]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "engine/gguf.h"
#include "engine/json_grammar.h"
#include "engine/token_mask.h"
#include "engine/tokenizer.h"

using namespace actorserve;

namespace {

double us_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

void report(const char *what, std::vector<double> v) {
    if (v.empty()) return;
    std::sort(v.begin(), v.end());
    std::printf("%-28s n=%5zu  median %9.1f us  p99 %9.1f us\n", what, v.size(), v[v.size() / 2],
                v[std::min(v.size() - 1, v.size() * 99 / 100)]);
}

} // namespace

int main(int argc, char **argv) {
    CLI::App app{"token mask cost per step"};
    std::string model;
    int walks = 20, steps = 60;
    app.add_option("--model", model, "GGUF file (its tokenizer)")->required();
    app.add_option("--walks", walks, "random walks per schema");
    app.add_option("--steps", steps, "steps per walk");
    CLI11_PARSE(app, argc, argv);

    std::string err;
    auto file = gguf_file::open(model, err);
    if (!file) return std::fprintf(stderr, "mask_bench: %s\n", err.c_str()), 1;
    auto tok = tokenizer::from_gguf(*file, err);
    if (!tok) return std::fprintf(stderr, "mask_bench: %s\n", err.c_str()), 1;
    const auto t0 = std::chrono::steady_clock::now();
    const token_vocab vocab(*tok);
    std::printf("vocabulary %d tokens, %zu plain string tokens, classes built in %.1f ms\n", tok->n_vocab(),
                vocab.n_plain(), us_since(t0) / 1000);

    const char *schemas[] = {
        R"({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
            "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 4},
            "pet": {"anyOf": [{"type": "null"}, {"type": "object", "properties": {"kind": {"type": "string", "maxLength": 12}}}]}},
            "required": ["name", "age", "tags"], "additionalProperties": false})",
        R"({"type": "object"})",
    };
    std::vector<double> in_string, elsewhere, budgeted, naive;
    std::vector<int32_t> allowed;
    std::mt19937 rng(1);
    for (const char *s : schemas) {
        const auto g = compile_json_schema(s).grammar;
        for (int w = 0; w < walks; ++w) {
            json_matcher m(*g);
            for (int i = 0; i < steps; ++i) {
                int remaining = 0;
                const bool str = m.in_plain_string(remaining);
                auto t = std::chrono::steady_clock::now();
                vocab.allowed(m, allowed);
                (str ? in_string : elsewhere).push_back(us_since(t));
                // What the step runner computes: the same mask fitted to the tokens left.
                std::vector<int32_t> fitted;
                t = std::chrono::steady_clock::now();
                vocab.allowed(m, fitted, steps - i - 1);
                budgeted.push_back(us_since(t));
                if (w == 0) { // the naive mask, on the first walk of each schema
                    t = std::chrono::steady_clock::now();
                    size_t n = 0;
                    for (int32_t id = 0; id < tok->n_vocab(); ++id) {
                        json_matcher c = m;
                        n += !vocab.bytes(id).empty() && c.feed(vocab.bytes(id));
                    }
                    naive.push_back(us_since(t));
                    if (n == 0 && !m.must_finish() && !m.can_finish()) std::printf("empty mask?\n");
                }
                if (allowed.empty() || m.must_finish()) break;
                // Short tokens half the time, so walks reach keys, numbers and closings too.
                int32_t id = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
                if (rng() % 2)
                    for (int32_t c : allowed)
                        if (vocab.bytes(c).size() == 1 && rng() % 4 == 0) { id = c; break; }
                if (vocab.is_eog(id)) break;
                m.feed(vocab.bytes(id));
            }
        }
    }
    report("mask, inside a string", in_string);
    report("mask, elsewhere", elsewhere);
    report("mask fitted to max_tokens", budgeted);
    report("naive (every token fed)", naive);
    return 0;
}
