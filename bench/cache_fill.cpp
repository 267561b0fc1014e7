// cache_fill: writes exact.cache and semantic.cache with N entries into a folder, for
// bench/cache_bench.sh to start `actorserve serve` on (docs/cache.md, "Latency").
//
//   build-d/bin/cache_fill --entries 10000 --dir /tmp/fill [--model models/SmolLM2-135M-Instruct.Q4_1.gguf]
//                          [--max-tokens 32] [--probes 40] [--seed 1]
//
// Each cache gets the same N questions: K probes and N - K fillers.
//   probes   the first paraphrase pairs (a, b) of tests/cache/eval_set.jsonl that the server
//            would serve: cosine(a, b) >= the threshold and the near-miss guard accepts b for a.
//            a is stored with its real embedding; the bench sends a (exact hits) and b
//            (semantic hits).
//   fillers  synthetic distinct questions, each with a random unit vector.
//            note: a flat index scans every vector of the scope whatever their values, so the
//            cost of a lookup is that of N real entries; HNSW's cost depends on the vectors a
//            little (graph shape), random ones are a fair stand-in. Random unit vectors in 384
//            dimensions have cosine ~0 +- 0.05 with any question, so none of them can answer.
// Every answer is ~40-60 words of text, so a hit streams what a real cached answer would.
//
// The keys are the server's, byte for byte: the model name is the GGUF's stem + ":" + its size
// in bytes (actors/runtime.cpp), the prompt is the GGUF's chat template rendering of one user
// message with the generation prompt, its markers set off as the session keys it
// (marked_prompt, cache/request_key.h), and the parameters are what the WebSocket parser makes of
// {"temperature": 0, "max_tokens": M} (sampling_params defaults, temperature 0, no stop).
// Besides the caches it writes the bench's prompt files (actorserve-bench --prompts):
//   probes_exact.jsonl, probes_paraphrase.jsonl, fresh.jsonl (questions in neither cache).
#include "cache/exact_cache.h"
#include "cache/near_miss.h"
#include "cache/semantic_cache.h"
#include "engine/chat_template.h"
#include "engine/embedder.h"
#include "engine/gguf.h"

#include <CLI/CLI.hpp>
#include <simdjson.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

using namespace actorserve;

namespace {

struct probe {
    std::string question, paraphrase;
    std::vector<float> vec;   // (384,) embedding of question
    float similarity = 0;     // cosine(question, paraphrase)
};

std::string json_string(std::string_view s) {
    std::string o = "\"";
    for (char c : s) {
        switch (c) {
        case '"': o += "\\\""; break;
        case '\\': o += "\\\\"; break;
        case '\n': o += "\\n"; break;
        case '\t': o += "\\t"; break;
        default:
            if (static_cast<unsigned char>(c) < 0x20) {
                char b[8];
                std::snprintf(b, sizeof b, "\\u%04x", c);
                o += b;
            } else {
                o += c;
            }
        }
    }
    return o + "\"";
}

bool write_prompts(const std::string &path, const std::vector<std::string> &qs) {
    std::ofstream f(path);
    for (const std::string &q : qs) f << "{\"prompt\": " << json_string(q) << "}\n";
    return static_cast<bool>(f);
}

// ~40-60 words assembled from a bank of plain sentences, varied by the question's index.
std::string make_answer(std::string_view question, uint64_t i) {
    static const char *bank[] = {
        "The short answer is that it depends on a few conditions, but the usual case is well understood.",
        "Most sources agree on the main points, and the details differ only at the margins.",
        "A good way to think about it is to start from the basic definition and work outward.",
        "In everyday terms, the effect is small at first and grows as the conditions add up.",
        "Historically this was settled by careful measurement rather than by argument.",
        "If you need a precise figure, check a current reference, since estimates are revised from time to time.",
        "The main exception is when the surrounding conditions change quickly.",
        "For most practical purposes, the simple rule of thumb given here is close enough.",
    };
    constexpr size_t n = sizeof bank / sizeof bank[0];
    std::string a = "About \"" + std::string(question.substr(0, 80)) + "\": ";
    for (size_t k = 0; k < 4; ++k) {
        if (k) a += ' ';
        a += bank[(i + k * 3) % n];
    }
    return a;
}

// Distinct synthetic questions: index i spelled into words from three lists plus its number.
std::string filler_question(uint64_t i) {
    static const char *opener[] = {"How does", "Why does", "What explains how", "Can you describe how", "In what way does"};
    static const char *subject[] = {"a ceramic kiln", "the river delta", "a rail network", "the tax code",   "a beehive",
                                    "a sailing ship", "the town council", "a compiler",  "a coral reef",   "a bakery",
                                    "the postal service", "a glacier",  "a chess engine", "a vineyard",   "a power grid"};
    static const char *verb[] = {"handle", "change during", "depend on", "respond to", "recover from", "plan for"};
    static const char *object[] = {"a dry summer", "sudden demand", "a long winter", "new regulations", "rising costs",
                                   "a power cut",  "heavy rain",    "a staff shortage", "a holiday season", "old equipment"};
    constexpr uint64_t no = 5, ns = 15, nv = 6, nob = 10;
    const uint64_t q = i;
    return std::string(opener[q % no]) + " " + subject[(q / no) % ns] + " " + verb[(q / (no * ns)) % nv] + " " +
           object[(q / (no * ns * nv)) % nob] + ", case " + std::to_string(i) + "?";
}

// Questions that are in neither cache, and whose neighbours are refused by the guard (each
// carries its own number), so every request made from them is a generation.
std::string fresh_question(uint64_t i) {
    static const char *form[] = {"Write one sentence about the number %llu.",
                                 "Give a fun fact that mentions the year %llu.",
                                 "Describe a house at number %llu on a quiet street.",
                                 "Invent a name for a ship with hull number %llu.",
                                 "What could a room with %llu chairs be used for?"};
    char b[160];
    std::snprintf(b, sizeof b, form[i % 5], static_cast<unsigned long long>(1000 + i * 7));
    return b;
}

std::vector<float> random_unit(std::mt19937_64 &rng, int dim) {
    std::normal_distribution<float> g(0.0f, 1.0f);
    std::vector<float> v(static_cast<size_t>(dim));
    double n2 = 0;
    for (float &x : v) {
        x = g(rng);
        n2 += double(x) * x;
    }
    const float inv = static_cast<float>(1.0 / std::sqrt(n2));
    for (float &x : v) x *= inv;
    return v;
}

float dot(const std::vector<float> &a, const std::vector<float> &b) {
    float s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

} // namespace

int main(int argc, char **argv) {
    CLI::App app{"cache_fill: exact.cache and semantic.cache with N entries, for bench/cache_bench.sh"};
    size_t entries = 10000;
    int max_tokens = 32, n_probes = 40, n_fresh = 5000;
    uint64_t seed = 1;
    float threshold = kDefaultSemanticThreshold;
    std::string model_path = "models/SmolLM2-135M-Instruct.Q4_1.gguf", model_name, embed_dir = "models/all-MiniLM-L6-v2";
    std::string set_path = "tests/cache/eval_set.jsonl", dir;
    app.add_option("--entries", entries, "entries in each cache (probes included)")->capture_default_str()->check(CLI::PositiveNumber);
    app.add_option("--model", model_path, "the served GGUF: its chat template and size make the keys")->capture_default_str();
    app.add_option("--model-name", model_name, "[model] name of the server's config (default: the file's stem)");
    app.add_option("--embed-model", embed_dir, "embedder folder")->capture_default_str();
    app.add_option("--set", set_path, "paraphrase pairs to draw the probes from")->capture_default_str();
    app.add_option("--probes", n_probes, "real questions stored (their repeats and paraphrases are the hits)")->capture_default_str();
    app.add_option("--fresh", n_fresh, "questions written to fresh.jsonl (misses)")->capture_default_str();
    app.add_option("--max-tokens", max_tokens, "max_tokens of the bench's requests (part of the key)")->capture_default_str();
    app.add_option("--threshold", threshold, "the server's semantic_threshold")->capture_default_str();
    app.add_option("--seed", seed, "seeds the filler vectors")->capture_default_str();
    app.add_option("--dir", dir, "output folder")->required();
    CLI11_PARSE(app, argc, argv);

    std::string err;
    auto file = gguf_file::open(model_path, err);
    if (!file) {
        std::fprintf(stderr, "cache_fill: %s\n", err.c_str());
        return 1;
    }
    auto tmpl = chat_template::detect(file->get_string("tokenizer.chat_template").value_or(""), err);
    if (!tmpl) {
        std::fprintf(stderr, "cache_fill: chat template: %s\n", err.c_str());
        return 1;
    }
    if (model_name.empty()) model_name = std::filesystem::path(model_path).stem().string();
    model_name += ":" + std::to_string(std::filesystem::file_size(model_path));

    // What net/ws_protocol.cpp builds from {"temperature": 0, "max_tokens": M}.
    generation_params params;
    params.sampling = sampling_params{};
    params.sampling.temperature = 0.0f;
    params.max_tokens = max_tokens;
    const std::string scope = semantic_scope(model_name, /*system_prompt=*/"", params);
    auto render = [&](const std::string &q) {
        const chat_message m{"user", q};
        return marked_prompt(tmpl->render_marked(std::span<const chat_message>(&m, 1), true));
    };

    auto emb = embedder::load(embed_dir, err, 1);
    if (!emb) {
        std::fprintf(stderr, "cache_fill: %s\n", err.c_str());
        return 1;
    }

    // Probes: paraphrase pairs the server would serve from the semantic cache.
    std::vector<probe> probes;
    {
        simdjson::dom::parser parser;
        std::ifstream f(set_path);
        std::string line;
        int refused = 0;
        while (std::getline(f, line) && static_cast<int>(probes.size()) < n_probes) {
            simdjson::dom::element e;
            if (line.empty() || parser.parse(line).get(e)) continue;
            std::string_view label, a, b;
            if (e["label"].get(label) || label != "paraphrase" || e["a"].get(a) || e["b"].get(b)) continue;
            probe p{std::string(a), std::string(b), emb->embed(a), 0};
            p.similarity = dot(p.vec, emb->embed(b));
            if (p.similarity < threshold || check_near_miss(p.paraphrase, p.question, wordnet::system().get()).rejected()) {
                ++refused;
                continue;
            }
            probes.push_back(std::move(p));
        }
        std::printf("probes: %zu paraphrase pairs the server serves (%d earlier ones refused by threshold or guard)\n",
                    probes.size(), refused);
    }
    if (probes.empty() || probes.size() > entries) {
        std::fprintf(stderr, "cache_fill: %zu probes for %zu entries\n", probes.size(), entries);
        return 1;
    }

    cache_limits limits;
    limits.max_entries = entries;
    limits.max_bytes = size_t{4} << 30;
    exact_cache exact(limits);
    semantic_settings ss;
    ss.dim = emb->dim();
    ss.limits = limits;
    semantic_cache sem(ss);

    const auto t0 = std::chrono::steady_clock::now();
    auto store = [&](const std::string &q, std::span<const float> vec, uint64_t i) {
        cached_answer a{make_answer(q, i), "stop", max_tokens};
        if (exact.insert(exact_key::make(model_name, render(q), params), a) != insert_status::stored) return false;
        auto r = sem.insert(scope, vec, q, std::move(a));
        if (r.status != insert_status::stored) {
            std::fprintf(stderr, "cache_fill: semantic insert: %s\n", r.error.c_str());
            return false;
        }
        return true;
    };
    for (size_t i = 0; i < probes.size(); ++i)
        if (!store(probes[i].question, probes[i].vec, i)) return 1;
    std::mt19937_64 rng(seed);
    for (size_t i = probes.size(); i < entries; ++i)
        if (!store(filler_question(i), random_unit(rng, ss.dim), i)) return 1;
    const double fill_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    std::filesystem::create_directories(dir);
    if (!exact.save(dir + "/exact.cache", err) || !sem.save(dir + "/semantic.cache", err)) {
        std::fprintf(stderr, "cache_fill: %s\n", err.c_str());
        return 1;
    }
    std::vector<std::string> qa, qb, qf;
    for (const probe &p : probes) {
        qa.push_back(p.question);
        qb.push_back(p.paraphrase);
    }
    for (int i = 0; i < n_fresh; ++i) qf.push_back(fresh_question(static_cast<uint64_t>(i)));
    if (!write_prompts(dir + "/probes_exact.jsonl", qa) || !write_prompts(dir + "/probes_paraphrase.jsonl", qb) ||
        !write_prompts(dir + "/fresh.jsonl", qf)) {
        std::fprintf(stderr, "cache_fill: cannot write the prompt files under %s\n", dir.c_str());
        return 1;
    }

    // Read back what the server will read, and ask it the bench's questions.
    exact_cache exact2(limits);
    semantic_cache sem2(ss);
    auto r1 = exact2.load(dir + "/exact.cache");
    auto r2 = sem2.load(dir + "/semantic.cache");
    // Timed in-process, for the breakdown of a hit's latency: embedding the question, and the
    // semantic lookup (search over the N vectors of the scope + the guard).
    using clk = std::chrono::steady_clock;
    auto ms = [](clk::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
    size_t exact_hits = 0, sem_hits = 0;
    double embed_ms = 0, lookup_ms = 0;
    for (const probe &p : probes) {
        exact_hits += exact2.lookup(exact_key::make(model_name, render(p.question), params)).has_value();
        const auto t1 = clk::now();
        std::vector<float> v = emb->embed(p.paraphrase);
        const auto t2 = clk::now();
        sem_hits += sem2.lookup(scope, v, p.paraphrase).hit.has_value();
        const auto t3 = clk::now();
        embed_ms += ms(t2 - t1);
        lookup_ms += ms(t3 - t2);
    }
    std::printf("model %s, max_tokens %d: %zu exact + %zu semantic entries in %s (filled in %.1f s)\n", model_name.c_str(),
                max_tokens, r1.entries, r2.entries, dir.c_str(), fill_s);
    std::printf("read back: %zu/%zu probes hit exactly, %zu/%zu paraphrases hit semantically\n", exact_hits,
                probes.size(), sem_hits, probes.size());
    const double k = static_cast<double>(probes.size());
    std::printf("in process, mean per paraphrase: embedding %.2f ms, semantic lookup over %zu entries %.2f ms\n",
                embed_ms / k, r2.entries, lookup_ms / k);
    return exact_hits == probes.size() && sem_hits == probes.size() ? 0 : 1;
}
