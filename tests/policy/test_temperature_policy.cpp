// The dynamic-temperature classifier on its labelled set (configs/policy_kinds.jsonl, split once
// by scripts/gen_policy_kinds.py): centroids of the tune half's MiniLM embeddings, accuracy
// measured on both halves; the held-out figure is the one docs/policy.md quotes. The server's
// use of it is tested in tests/net/test_policy.cpp.
#include "policy/temperature_policy.h"
#include "engine/embedder.h"
#include "tests/support/paths.h"

#include <doctest/doctest.h>

#include <sstream>

using namespace actorserve;

TEST_CASE("temperature policy: nearest-centroid kinds on the labelled set, tune and held-out halves") {
    std::vector<kind_example> ex;
    std::string err;
    REQUIRE_MESSAGE(load_kind_examples(test_paths::source() + "/configs/policy_kinds.jsonl", ex, err), err);
    REQUIRE(ex.size() >= 200);
    auto emb = embedder::load(test_paths::embed_model_dir(), err, 2);
    REQUIRE_MESSAGE(emb, err);
    std::vector<std::string> texts;
    for (const kind_example &e : ex) texts.push_back(e.text);
    const auto vectors = emb->embed_batch(texts);
    auto policy = temperature_policy::build(policy_settings{}, ex, vectors, err);
    REQUIRE_MESSAGE(policy, err);

    int right[2] = {}, total[2] = {};
    int confusion[kRequestKinds][kRequestKinds] = {};
    for (size_t i = 0; i < ex.size(); ++i) {
        const auto c = policy->classify(vectors[i]);
        const int half = ex[i].tune ? 0 : 1;
        ++total[half];
        right[half] += c.kind == ex[i].kind;
        if (half == 1) ++confusion[ex[i].kind][c.kind];
    }
    const double tune = double(right[0]) / total[0], held = double(right[1]) / total[1];
    MESSAGE("tune " << right[0] << "/" << total[0] << " (" << tune * 100 << "%), held out " << right[1] << "/" << total[1]
                    << " (" << held * 100 << "%)");
    for (int k = 0; k < kRequestKinds; ++k) {
        std::ostringstream row;
        row << kRequestKindNames[k] << " ->";
        for (int j = 0; j < kRequestKinds; ++j) row << ' ' << confusion[k][j];
        MESSAGE(row.str());
    }
    CHECK(held >= 0.80);

    // what a kind gives: its [policy] values
    policy_settings s;
    s.temperature[2] = 1.3f;
    s.top_p[2] = 0.5f;
    auto p2 = temperature_policy::build(s, ex, vectors, err);
    const auto poem = p2->classify(emb->embed("Write a poem about the sea at night."));
    CHECK(kRequestKindNames[poem.kind] == "creative");
    CHECK(poem.temperature == doctest::Approx(1.3f));
    CHECK(poem.top_p == doctest::Approx(0.5f));
    CHECK(kRequestKindNames[p2->classify(emb->embed("Write a C function that counts the set bits of an integer.")).kind] == "code");
}

TEST_CASE("temperature policy: a bad examples file names its line; a kind without examples is refused") {
    std::vector<kind_example> ex;
    std::string err;
    CHECK_FALSE(load_kind_examples("/nonexistent/kinds.jsonl", ex, err));
    CHECK(err.find("/nonexistent/kinds.jsonl") != std::string::npos);
    ex = {{"a", 0, true}, {"b", 1, true}, {"c", 2, true}};
    const std::vector<std::vector<float>> v = {{1, 0}, {0, 1}, {1, 1}};
    CHECK_FALSE(temperature_policy::build(policy_settings{}, ex, v, err));
    CHECK(err.find("chat") != std::string::npos);
}
