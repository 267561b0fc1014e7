#include <doctest/doctest.h>

#include "cache/exact_cache.h"
#include "tests/support/sampling.h"

using namespace actorserve;
using test_support::greedy_generation;

namespace {

cached_answer answer(std::string text) { return cached_answer{std::move(text), "stop", 3}; }

struct fake_clock {
    int64_t now = 1'000'000;
    cache_clock fn() {
        return [this] { return now; };
    }
};

exact_key key(const std::string &prompt, const generation_params &p = greedy_generation(),
              const std::string &model = "m") {
    return exact_key::make(model, prompt, p);
}

} // namespace

TEST_CASE("siphash: matches the reference vectors of SipHash-2-4") {
    // Key 00..0f; messages 00, 00 01, ... (the paper's test vectors, first entries).
    CHECK(siphash64("") == 0x726fdb47dd0e0e31ull);
    std::string m;
    for (int i = 0; i < 15; ++i) m.push_back(static_cast<char>(i));
    CHECK(siphash64(m) == 0xa129ca6149be45e5ull);
    hash128 h = siphash128("");
    CHECK(h.lo == 0xe6a825ba047f81a3ull);
    CHECK(h.hi == 0x930255c71472f66dull);
}

TEST_CASE("exact key: whitespace is normalised, every answer-changing parameter is in the key") {
    CHECK(key("Hello,\n\n  world ") .canonical == key("Hello, world").canonical);
    CHECK(key("Hello, world").canonical != key("Hello,world").canonical);
    CHECK(key("q", greedy_generation(), "a").canonical != key("q", greedy_generation(), "b").canonical);

    generation_params p = greedy_generation();
    generation_params q = greedy_generation();
    q.sampling.top_k = 7;          // no effect under greedy decoding
    q.sampling.seed = 99;
    CHECK(key("q", p).canonical == key("q", q).canonical);
    q.max_tokens = 17;
    CHECK(key("q", p).canonical != key("q", q).canonical);
    q = greedy_generation();
    q.stop = {"b", "a", "a"};
    generation_params r = greedy_generation();
    r.stop = {"a", "b"};
    CHECK(key("q", q).canonical == key("q", r).canonical);
    r.sampling.repeat_penalty = 1.1f;
    CHECK(key("q", q).canonical != key("q", r).canonical);

    generation_params s1, s2;          // sampled: temperature, top_p and seed all matter
    s1.sampling.temperature = s2.sampling.temperature = 0.7f;
    s2.sampling.seed = 1;
    CHECK(key("q", s1).canonical != key("q", s2).canonical);
    CHECK_FALSE(key("q", s1).deterministic);
    // A model name cannot run into the prompt: ("ab", "c") and ("a", "bc") differ.
    CHECK(exact_key::make("ab", "c", greedy_generation()).canonical !=
          exact_key::make("a", "bc", greedy_generation()).canonical);
}

TEST_CASE("exact cache: a stored answer is returned for the same request only") {
    fake_clock clk;
    exact_cache c({}, clk.fn());
    CHECK(c.insert(key("what is 2+2?"), answer("4")) == insert_status::stored);
    auto hit = c.lookup(key("what  is 2+2?"));
    REQUIRE(hit);
    CHECK(hit->text == "4");
    CHECK_FALSE(c.lookup(key("what is 2+3?")));
    CHECK(c.stats().lookups == 2);
    CHECK(c.stats().hits == 1);
    CHECK(c.stats().misses == 1);
    CHECK(c.insert(key("what is 2+2?"), answer("four")) == insert_status::replaced);
    CHECK(c.lookup(key("what is 2+2?"))->text == "four");
    CHECK(c.size() == 1);
}

TEST_CASE("exact cache: sampled requests are cached only when the caller opts in") {
    exact_cache c;
    generation_params s;
    s.sampling.temperature = 0.8f;
    CHECK(c.insert(key("tell a joke", s), answer("...")) == insert_status::not_cacheable);
    CHECK(c.size() == 0);
    CHECK(c.insert(key("tell a joke", s), answer("ha"), /*allow_sampled=*/true) == insert_status::stored);
    CHECK_FALSE(c.lookup(key("tell a joke", s)));
    CHECK(c.lookup(key("tell a joke", s), true)->text == "ha");
    CHECK(c.stats().skipped == 2);
}

TEST_CASE("exact cache: LFU evicts the least used entry, the least recent among equals") {
    fake_clock clk;
    cache_limits lim;
    lim.max_entries = 3;
    exact_cache c(lim, clk.fn());
    c.insert(key("a"), answer("A"));
    c.insert(key("b"), answer("B"));
    c.insert(key("c"), answer("C"));
    c.lookup(key("a"));
    c.lookup(key("a"));
    c.lookup(key("c"));          // uses: a 3, b 1, c 2
    c.insert(key("d"), answer("D"));   // b goes
    CHECK_FALSE(c.lookup(key("b")));
    CHECK(c.size() == 3);
    // d (1 use) and c (2 uses + this lookup): d goes next
    c.insert(key("e"), answer("E"));
    CHECK(c.lookup(key("a")));
    CHECK(c.lookup(key("c")));
    CHECK_FALSE(c.lookup(key("d")));
    CHECK(c.lookup(key("e")));
    CHECK(c.stats().evictions_lfu == 2);
    CHECK(c.stats().evictions_ttl == 0);

    // Ties: equal uses, the least recently used goes first.
    exact_cache t(lim, clk.fn());
    t.insert(key("x"), answer("X"));
    t.insert(key("y"), answer("Y"));
    t.insert(key("z"), answer("Z"));
    t.insert(key("w"), answer("W"));   // x is oldest of three with 1 use
    CHECK_FALSE(t.lookup(key("x")));
    CHECK(t.lookup(key("y")));
}

TEST_CASE("exact cache: entries expire after the TTL and are never returned") {
    fake_clock clk;
    cache_limits lim;
    lim.ttl_ms = 1000;
    exact_cache c(lim, clk.fn());
    c.insert(key("a"), answer("A"));
    clk.now += 500;
    c.insert(key("b"), answer("B"));
    clk.now += 499;
    CHECK(c.lookup(key("a")));          // 999 ms old
    clk.now += 1;
    CHECK_FALSE(c.lookup(key("a")));    // 1000 ms: expired, dropped lazily
    CHECK(c.stats().evictions_ttl == 1);
    CHECK(c.size() == 1);
    clk.now += 500;
    CHECK(c.purge_expired() == 1);
    CHECK(c.size() == 0);
    CHECK(c.stats().evictions_ttl == 2);
    CHECK(c.stats().bytes == 0);
}

TEST_CASE("exact cache: the byte limit evicts until the new entry fits") {
    fake_clock clk;
    cache_limits lim;
    const size_t per = exact_cache::kEntryOverhead;
    lim.max_bytes = 3 * (per + 100);
    exact_cache c(lim, clk.fn());
    const std::string k1 = "k1", k2 = "k2";
    c.insert(key(k1), answer(std::string(50, 'x')));
    c.insert(key(k2), answer(std::string(50, 'y')));
    const size_t before = c.stats().bytes;
    CHECK(before == 2 * per + 2 * key(k1).canonical.size() + 100 + 2 * 4);   // "stop" twice
    c.lookup(key(k1));
    c.insert(key("k3"), answer(std::string(per + 100, 'z')));   // needs room: k2 (fewer uses) goes
    CHECK(c.lookup(key(k1)));
    CHECK_FALSE(c.lookup(key(k2)));
    CHECK(c.stats().bytes <= lim.max_bytes);
    CHECK(c.insert(key("huge"), answer(std::string(lim.max_bytes, 'h'))) == insert_status::too_large);
    CHECK(c.lookup(key(k1)));   // a refused insert evicts nothing
}

TEST_CASE("exact cache: a hash collision cannot return another request's answer") {
    // Two entries forced into one hash bucket keep their own answers: lookup compares full keys.
    exact_cache c;
    exact_key a = key("first"), b = key("second");
    b.hash = a.hash;   // simulate a 128-bit collision
    c.insert(a, answer("1"));
    c.insert(b, answer("2"));
    CHECK(c.size() == 2);
    CHECK(c.lookup(a)->text == "1");
    CHECK(c.lookup(b)->text == "2");
    c.erase(a);
    CHECK(c.lookup(b)->text == "2");
    CHECK_FALSE(c.lookup(a));
}
