// The semantic cache's correctness target on the evaluation sets (tests/cache/eval_set.jsonl,
// tests/cache/eval_holdout.jsonl, and data/cache-eval/fow.jsonl, written outside the project):
// at the compiled-in default threshold, with the near-miss guard, no near miss is served, and at
// least kParaphraseFloorPercent of paraphrases are. Needs the embedding model and the outside set
// (both fetched by scripts/setup.sh). bench/cache_eval prints the whole curve.
#include "tests/support/paths.h"
#include <doctest/doctest.h>

#include "bench/cache_eval.h"
#include "cache/semantic_cache.h"

#include <filesystem>
#include <map>

#if __has_include("engine/embedder.h")
#include "engine/embedder.h"
#define ACTORSERVE_HAVE_EMBEDDER 1
#endif

using namespace actorserve;
using namespace actorserve::cache_eval;

TEST_CASE("evaluation set: has enough pairs of every kind") {
    std::vector<pair> set;
    std::string err;
    REQUIRE_MESSAGE(load_set(test_paths::source() + "/tests/cache/eval_set.jsonl", set, err), err);
    std::map<std::string, int> kinds;
    int para = 0, near = 0;
    for (const pair &p : set) {
        (p.paraphrase() ? para : near) += 1;
        if (!p.paraphrase()) kinds[p.kind] += 1;
        CHECK(p.a != p.b);
    }
    CHECK(para >= 70);
    CHECK(near >= 70);
    for (const char *k : {"different_entity", "different_number", "negation", "reversed_relation", "same_topic_different_question"})
        CHECK_MESSAGE(kinds[k] >= 10, k);
}

#ifdef ACTORSERVE_HAVE_EMBEDDER
namespace {

struct outcome {
    int para = 0, para_hits = 0, near = 0, false_hits = 0;
};

// Through the cache itself, not only the arithmetic: each pair's "a" is stored in a cache of its
// own, "b" is looked up, with the compiled-in settings (threshold, guard, top_k).
outcome run_set(embedder &emb, const std::string &path) {
    std::vector<pair> set;
    std::string err;
    REQUIRE_MESSAGE(load_set(path, set, err), err);
    outcome o;
    for (const pair &p : set) {
        semantic_settings s;
        s.dim = emb.dim();
        semantic_cache c(s);
        const std::string scope = semantic_scope("m", "", generation_params{});
        const auto va = emb.embed(p.a), vb = emb.embed(p.b);
        REQUIRE(va.size() == size_t(emb.dim()));
        REQUIRE(vb.size() == size_t(emb.dim()));
        REQUIRE(c.insert(scope, va, p.a, {"answer", "stop", 1}).status == insert_status::stored);
        const bool hit = c.lookup(scope, vb, p.b).hit.has_value();
        if (p.paraphrase()) {
            o.para += 1;
            o.para_hits += hit;
        } else {
            o.near += 1;
            o.false_hits += hit;
            CHECK_MESSAGE(!hit, "near miss served: \"" << p.a << "\" / \"" << p.b << "\"");
        }
    }
    MESSAGE(path << " at threshold " << kDefaultSemanticThreshold << ": paraphrase hits " << o.para_hits << "/"
                 << o.para << ", near-miss false hits " << o.false_hits << "/" << o.near);
    return o;
}

} // namespace

// The paraphrase floor is what the word-alignment guard is measured to keep (docs/cache.md), not
// the 60% the cache aims at: held to it so that a change that loses paraphrases is seen.
constexpr int kParaphraseFloorPercent = 33;

TEST_CASE("semantic cache at the default threshold: no false hit on any set, and the paraphrase floor") {
    std::string err;
    auto emb = embedder::load(test_paths::embed_model_dir(), err, 2);
    REQUIRE_MESSAGE(emb, err);
    for (const char *set : {"/tests/cache/eval_set.jsonl", "/tests/cache/eval_holdout.jsonl", "/data/cache-eval/fow.jsonl"}) {
        CAPTURE(set);
        const std::string path = test_paths::source() + set;
        REQUIRE_MESSAGE(std::filesystem::exists(path), path << " is missing: scripts/setup.sh fetches it (PyPI fow-cache)");
        const outcome o = run_set(*emb, path);
        CHECK(o.false_hits == 0);
        CHECK(o.para_hits * 100 >= kParaphraseFloorPercent * o.para);
    }
}
#else
TEST_CASE("semantic cache at the default threshold: needs engine/embedder.h") {
    FAIL("built without engine/embedder.h: the evaluation target cannot be checked");
}
#endif
