#include <doctest/doctest.h>

#include "cache/semantic_cache.h"

#include <cmath>

using namespace actorserve;

namespace {

constexpr int kDim = 16;

// A deterministic pseudo-random value in [-1, 1) for (seed, j): splitmix64.
float noise(uint64_t seed, uint64_t j) {
    uint64_t z = seed * 0x9e3779b97f4a7c15ull + j * 0xbf58476d1ce4e5b9ull + 0x94d049bb133111ebull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return float(z >> 40) / float(1ull << 23) - 1.0f;
}

// A direction per seed (random ones are nearly orthogonal); vec(i, eps) leans away from vec(i)
// by a fixed perturbation of size ~eps.
std::vector<float> vec(int seed, float eps = 0.0f) {
    std::vector<float> v(kDim);
    for (int j = 0; j < kDim; ++j) v[j] = noise(uint64_t(seed) + 1000, uint64_t(j)) + eps * noise(7, uint64_t(j));
    return v;
}

float cosine(const std::vector<float> &a, const std::vector<float> &b) {
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < a.size(); ++i) ab += a[i] * b[i], aa += a[i] * a[i], bb += b[i] * b[i];
    return float(ab / std::sqrt(aa * bb));
}

struct fake_clock {
    int64_t now = 5'000'000;
    cache_clock fn() {
        return [this] { return now; };
    }
};

semantic_settings small(semantic_index_kind kind = semantic_index_kind::flat) {
    semantic_settings s;
    s.dim = kDim;
    s.threshold = 0.9f;
    s.index = kind;
    s.limits.max_entries = 4;
    return s;
}

cached_answer answer(std::string text) { return cached_answer{std::move(text), "stop", 1}; }

const std::string kScope = semantic_scope("m", "You are helpful.", generation_params{});

} // namespace

TEST_CASE("semantic scope: model, system prompt and parameters all separate scopes") {
    generation_params p;
    generation_params q;
    q.max_tokens = 10;
    CHECK(semantic_scope("m", "sys", p) == semantic_scope("m", " sys\n", p));
    CHECK(semantic_scope("m", "sys", p) != semantic_scope("n", "sys", p));
    CHECK(semantic_scope("m", "sys", p) != semantic_scope("m", "sys2", p));
    CHECK(semantic_scope("m", "sys", p) != semantic_scope("m", "sys", q));
}

TEST_CASE("semantic cache: a near vector hits above the threshold, a far one misses") {
    fake_clock clk;
    semantic_cache c(small(), clk.fn());
    REQUIRE(c.insert(kScope, vec(1), "How do I boil an egg?", answer("A")).status == insert_status::stored);
    REQUIRE(c.insert(kScope, vec(2), "Where is Peru?", answer("B")).status == insert_status::stored);
    CHECK(cosine(vec(1), vec(1, 0.2f)) > 0.95f);
    auto r = c.lookup(kScope, vec(1, 0.2f), "How should I boil an egg?");
    REQUIRE(r.hit);
    CHECK(r.hit->answer.text == "A");
    CHECK(r.hit->similarity == doctest::Approx(cosine(vec(1), vec(1, 0.2f))).epsilon(1e-4));
    CHECK(cosine(vec(1), vec(3)) < 0.9f);
    CHECK(cosine(vec(2), vec(3)) < 0.9f);
    auto m = c.lookup(kScope, vec(3), "How do I boil an egg?");
    CHECK_FALSE(m.hit);
    CHECK(m.above_threshold == 0);
    CHECK(c.stats().hits == 1);
    CHECK(c.stats().misses == 1);
}

// The flat index scores halves; what meets the threshold is decided on the fp32 cosine. With the
// threshold a hair (1e-5, well inside the halves' rounding) either side of the true cosine, the
// hit must come and go exactly.
TEST_CASE("semantic cache: the threshold sees the exact cosine, not the stored halves") {
    const std::vector<float> stored = vec(1), query = vec(1, 0.3f);
    const float cos = cosine(stored, query);
    for (float delta : {-1e-5f, 1e-5f}) {
        CAPTURE(delta);
        semantic_settings s = small();
        s.threshold = cos + delta;
        semantic_cache c(s);
        REQUIRE(c.insert(kScope, stored, "How do I boil an egg?", answer("A")).status == insert_status::stored);
        auto r = c.lookup(kScope, query, "How do I boil an egg?");
        CHECK(bool(r.hit) == (delta < 0));
        CHECK(r.best_similarity == doctest::Approx(cos).epsilon(1e-6));
        if (r.hit) CHECK(r.hit->similarity == doctest::Approx(cos).epsilon(1e-6));
    }
}

TEST_CASE("semantic cache: the guard refuses a near vector whose question differs in a key word") {
    semantic_cache c(small());
    c.insert(kScope, vec(1), "What is the capital of France?", answer("Paris"));
    auto r = c.lookup(kScope, vec(1, 0.1f), "What is the capital of Germany?");
    CHECK_FALSE(r.hit);
    CHECK(r.above_threshold == 1);
    CHECK(r.rejected.reason == near_miss_reason::entity);
    CHECK(c.stats().guard_rejections == 1);
    // With a second, guard-compatible candidate above the threshold, that one answers.
    c.insert(kScope, vec(1, 0.2f), "What's the capital of Germany?", answer("Berlin"));
    auto r2 = c.lookup(kScope, vec(1, 0.1f), "What is the capital of Germany?");
    REQUIRE(r2.hit);
    CHECK(r2.hit->answer.text == "Berlin");
}

TEST_CASE("semantic cache: scopes are isolated") {
    semantic_cache c(small());
    generation_params p;
    const std::string other = semantic_scope("m", "You are a pirate.", p);
    c.insert(kScope, vec(1), "Tell me about the sea", answer("plain"));
    CHECK_FALSE(c.lookup(other, vec(1), "Tell me about the sea").hit);
    c.insert(other, vec(1), "Tell me about the sea", answer("arr"));
    CHECK(c.lookup(other, vec(1), "Tell me about the sea").hit->answer.text == "arr");
    CHECK(c.lookup(kScope, vec(1), "Tell me about the sea").hit->answer.text == "plain");
    CHECK(c.stats().scopes == 2);
    CHECK(c.index_ntotal() == 2);
}

TEST_CASE("semantic cache: LFU eviction removes the same id from the table and the index") {
    fake_clock clk;
    semantic_cache c(small(), clk.fn());   // 4 entries
    std::vector<uint64_t> ids;
    for (int i = 0; i < 4; ++i) ids.push_back(c.insert(kScope, vec(10 * i), (std::string("q") += std::to_string(i)), answer("a")).id);
    c.lookup(kScope, vec(0), "q0");
    c.lookup(kScope, vec(20), "q2");
    c.lookup(kScope, vec(30), "q3");   // q1 has the fewest uses
    auto r = c.insert(kScope, vec(40), "q4", answer("a"));
    CHECK(r.status == insert_status::stored);
    CHECK_FALSE(c.contains(ids[1]));
    CHECK(c.contains(ids[0]));
    CHECK(c.size() == 4);
    CHECK(c.index_ntotal() == 4);
    CHECK_FALSE(c.lookup(kScope, vec(10), "q1").hit);
    CHECK(c.stats().evictions_lfu == 1);
}

TEST_CASE("semantic cache: ids stay consistent over many insert/evict cycles") {
    fake_clock clk;
    semantic_settings s = small();
    s.limits.max_entries = 16;
    s.limits.ttl_ms = 1000;
    semantic_cache c(s, clk.fn());
    const std::string scopes[3] = {kScope, semantic_scope("m", "A", {}), semantic_scope("m", "B", {})};
    uint64_t last_id = 0;
    for (int i = 0; i < 600; ++i) {
        clk.now += 7;
        auto r = c.insert(scopes[i % 3], vec(i), "question " + std::to_string(i), answer(std::string(size_t(i % 13), 'x')));
        REQUIRE(r.status == insert_status::stored);
        CHECK(r.id > last_id);   // ids never repeat
        last_id = r.id;
        if (i % 5 == 0) c.lookup(scopes[(i / 5) % 3], vec(i - 3), "question " + std::to_string(i - 3));
        if (i % 97 == 0) c.erase(r.id);
        REQUIRE(c.index_ntotal() == c.size());
    }
    CHECK(c.size() <= 16);
    CHECK(c.stats().evictions_lfu + c.stats().evictions_ttl + 7 == 600 - c.size());
    // Every stored entry is found by its own vector, and answers with its own question.
    for (int i = 590; i < 600; ++i) {
        auto r = c.lookup(scopes[i % 3], vec(i), "question " + std::to_string(i));
        if (r.hit) CHECK(r.hit->question == "question " + std::to_string(i));
    }
    clk.now += 2000;
    CHECK(c.purge_expired() > 0);
    CHECK(c.size() == 0);
    CHECK(c.index_ntotal() == 0);
    CHECK(c.stats().scopes == 0);
    CHECK(c.stats().bytes == 0);
}

TEST_CASE("semantic cache: TTL and byte limit") {
    fake_clock clk;
    semantic_settings s = small();
    s.limits.ttl_ms = 100;
    semantic_cache c(s, clk.fn());
    c.insert(kScope, vec(1), "q", answer("a"));
    clk.now += 99;
    CHECK(c.lookup(kScope, vec(1), "q").hit);
    clk.now += 1;
    CHECK_FALSE(c.lookup(kScope, vec(1), "q").hit);
    CHECK(c.stats().evictions_ttl == 1);
    CHECK(c.index_ntotal() == 0);

    semantic_settings b = small();
    const size_t per = semantic_cache::kEntryOverhead + kDim * (sizeof(float) + sizeof(uint16_t)) + 1 + 4;   // question "q", "stop"
    b.limits.max_bytes = 2 * (per + 10);
    semantic_cache d(b, clk.fn());
    d.insert(kScope, vec(1), "a", answer(std::string(10, 'x')));
    CHECK(d.stats().bytes == per + 10);
    d.insert(kScope, vec(2), "b", answer(std::string(10, 'x')));
    d.insert(kScope, vec(3), "c", answer(std::string(10, 'x')));
    CHECK(d.size() == 2);
    CHECK(d.stats().bytes == 2 * (per + 10));
    CHECK(d.insert(kScope, vec(4), "d", answer(std::string(b.limits.max_bytes, 'x'))).status == insert_status::too_large);
}

TEST_CASE("semantic cache: the same question in a scope replaces its answer") {
    semantic_cache c(small());
    auto a = c.insert(kScope, vec(1), "q", answer("old"));
    auto b = c.insert(kScope, vec(1, 0.05f), "q", answer("new"));
    CHECK(b.status == insert_status::replaced);
    CHECK(b.id != a.id);
    CHECK(c.size() == 1);
    CHECK(c.index_ntotal() == 1);
    CHECK(c.lookup(kScope, vec(1), "q").hit->answer.text == "new");
}

TEST_CASE("semantic cache: bad vectors are refused with a message") {
    semantic_cache c(small());
    std::vector<float> wrong(3, 1.0f), zero(kDim, 0.0f), nan(kDim, 1.0f);
    nan[2] = std::nanf("");
    CHECK(c.insert(kScope, wrong, "q", answer("a")).error == "vector has 3 dimensions, the cache uses 16");
    CHECK(c.insert(kScope, zero, "q", answer("a")).error == "vector has zero length");
    CHECK(c.lookup(kScope, nan, "q").error == "vector has a non-finite component");
    CHECK(c.size() == 0);
}

TEST_CASE("semantic cache: HNSW setting evicts by tombstones and rebuilds") {
    fake_clock clk;
    semantic_settings s = small(semantic_index_kind::hnsw);
    s.limits.max_entries = 32;
    s.hnsw_rebuild_min = 8;
    semantic_cache c(s, clk.fn());
    for (int i = 0; i < 200; ++i) {
        auto r = c.insert(kScope, vec(i), "question " + std::to_string(i), answer(std::to_string(i)));
        REQUIRE(r.status == insert_status::stored);
        REQUIRE(c.index_ntotal() >= c.size());
        REQUIRE(c.index_ntotal() <= c.size() + 9);   // tombstones never exceed the rebuild limit
    }
    CHECK(c.stats().rebuilds > 0);
    CHECK(c.size() == 32);
    // An evicted question is never served, a live one is found.
    CHECK_FALSE(c.lookup(kScope, vec(0), "question 0").hit);
    auto r = c.lookup(kScope, vec(199), "question 199");
    REQUIRE(r.hit);
    CHECK(r.hit->answer.text == "199");
}
