// KV block manager: on pools of a few blocks of 4 tokens, exact block ids for allocation,
// prefix hits and eviction order; then a seeded random workload checked step by step against
// a simulated KV memory, so that a prefix hit can only return KV computed for the same tokens.
#include "scheduling/kv_blocks.h"

#include <doctest/doctest.h>

#include <map>
#include <numeric>
#include <random>
#include <vector>

using namespace actorserve;

namespace {

using ids = std::vector<int32_t>;

// Tokens first, first + 1, ..., first + n - 1.
ids iota(int32_t first, int n) {
    ids v(static_cast<size_t>(n));
    std::iota(v.begin(), v.end(), first);
    return v;
}

ids cat(ids a, const ids &b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

ids table_of(const kv_block_manager &m, int64_t id) {
    const auto t = m.table(id);
    return {t.begin(), t.end()};
}

// Admits and computes the whole prompt; returns n_cached.
int run_prompt(kv_block_manager &m, int64_t id, const ids &prompt) {
    std::string err;
    const auto a = m.admit(id, prompt, 0, err);
    REQUIRE_MESSAGE(a, err);
    REQUIRE(m.commit(id, std::span(prompt).subspan(static_cast<size_t>(a->n_cached))));
    return a->n_cached;
}

} // namespace

TEST_CASE("kv blocks: fresh admissions get ascending ids; append_slot allocates only at a boundary") {
    kv_block_manager m(/*n_blocks=*/8, /*block_size=*/4);
    std::string err;
    const auto a = m.admit(1, iota(1, 6), 0, err);
    REQUIRE(a);
    CHECK(a->n_cached == 0);
    CHECK(a->table == ids{0, 1});
    CHECK(m.n_tokens(1) == 0); // nothing computed yet
    REQUIRE(m.commit(1, iota(1, 6)));
    CHECK(m.n_tokens(1) == 6);
    CHECK(m.n_cached_blocks() == 1); // tokens 1..4 fill block 0; block 1 is partial

    CHECK(m.append_slot(1)); // position 6 is in block 1
    REQUIRE(m.commit(1, ids{7}));
    CHECK(m.append_slot(1));
    REQUIRE(m.commit(1, ids{8}));
    CHECK(table_of(m, 1) == ids{0, 1});
    CHECK(m.append_slot(1)); // position 8 starts block 2
    CHECK(m.append_slot(1)); // again before a commit: nothing more
    CHECK(table_of(m, 1) == ids{0, 1, 2});
    CHECK(m.n_cached_blocks() == 2);

    CHECK(m.admit(2, iota(100, 3), 0, err)->table == ids{3});
    CHECK(m.admit(3, iota(200, 2), /*reserve_tokens=*/7, err)->table == ids{4, 5, 6});
    CHECK(m.n_free() == 1);
}

TEST_CASE("kv blocks: out of blocks, admit and append_slot fail and change nothing") {
    kv_block_manager m(/*n_blocks=*/4, /*block_size=*/4);
    std::string err;
    REQUIRE(m.admit(1, iota(1, 9), 0, err));
    CHECK(m.n_free() == 1);

    CHECK_FALSE(m.admit(2, iota(50, 5), 0, err));
    CHECK(err == "not enough free KV blocks: the request needs 2, 1 are free");
    CHECK_FALSE(m.admit(2, iota(50, 4), /*reserve_tokens=*/1, err));
    CHECK(err == "not enough free KV blocks: the request needs 2, 1 are free");
    CHECK_FALSE(m.has(2));
    CHECK(m.n_free() == 1);

    REQUIRE(m.admit(2, iota(50, 4), 0, err));
    REQUIRE(m.commit(2, iota(50, 4)));
    CHECK(table_of(m, 2) == ids{3});
    CHECK_FALSE(m.append_slot(2));
    CHECK(table_of(m, 2) == ids{3});
    CHECK(m.n_tokens(2) == 4);
    CHECK(m.n_free() == 0);

    m.release(1); // the caller preempts sequence 1, then retries
    CHECK(m.append_slot(2));
    CHECK(table_of(m, 2) == ids{3, 0}); // sequence 1 computed nothing: its blocks are unregistered
}

TEST_CASE("kv blocks: a request larger than the whole pool gets its own error") {
    kv_block_manager m(/*n_blocks=*/8, /*block_size=*/4);
    std::string err;
    CHECK(m.can_ever_fit(32));
    CHECK_FALSE(m.can_ever_fit(33));
    CHECK_FALSE(m.admit(1, iota(1, 30), /*reserve_tokens=*/3, err));
    CHECK(err == "request needs 33 token positions, the KV cache holds 32 (8 blocks of 4)");
    CHECK(m.n_free() == 8);
    // The whole pool is fine when free, and "not enough free" once some is taken.
    REQUIRE(m.admit(1, iota(1, 32), 0, err));
    m.release(1);
    REQUIRE(m.admit(2, iota(1, 1), 0, err));
    CHECK_FALSE(m.admit(3, iota(1, 32), 0, err));
    CHECK(err == "not enough free KV blocks: the request needs 8, 7 are free");
}

TEST_CASE("kv blocks: a second sequence reuses the committed prefix blocks of the first") {
    kv_block_manager m(/*n_blocks=*/8, /*block_size=*/4);
    std::string err;
    const ids p1 = cat(iota(1, 8), {9});
    REQUIRE(m.admit(1, p1, 0, err)->table == ids{0, 1, 2});
    CHECK(m.match_prefix(cat(iota(1, 8), {10})) == 0); // nothing is computed yet
    REQUIRE(m.commit(1, p1));
    CHECK(m.n_cached_blocks() == 2);

    const auto a = m.admit(2, cat(iota(1, 8), {10, 11}), 0, err);
    REQUIRE(a);
    CHECK(a->n_cached == 8);
    CHECK(a->table == ids{0, 1, 3});
    CHECK(m.n_tokens(2) == 8);
    CHECK(m.ref_cnt(0) == 2);
    CHECK(m.ref_cnt(1) == 2);
    CHECK(m.ref_cnt(2) == 1);
    CHECK(m.ref_cnt(3) == 1);
    CHECK(m.prefix_hit_tokens() == 8);
}

TEST_CASE("kv blocks: a prompt of exactly the cached blocks still computes its last block") {
    kv_block_manager m(/*n_blocks=*/8, /*block_size=*/4);
    std::string err;
    run_prompt(m, 1, cat(iota(1, 8), {9}));
    CHECK(m.match_prefix(iota(1, 8)) == 4); // 8 tokens: the last one must be computed
    CHECK(m.match_prefix(iota(1, 9)) == 8);
    CHECK(m.match_prefix(iota(1, 4)) == 0);
    CHECK(m.match_prefix(ids{}) == 0);
    const auto a = m.admit(2, iota(1, 8), 0, err);
    REQUIRE(a);
    CHECK(a->n_cached == 4);
    CHECK(a->table == ids{0, 3});
}

TEST_CASE("kv blocks: a prefix matches from the first block only") {
    kv_block_manager m(/*n_blocks=*/8, /*block_size=*/4);
    run_prompt(m, 1, cat(iota(1, 8), {9}));
    CHECK(m.match_prefix(cat(iota(100, 4), cat(iota(5, 4), {9}))) == 0); // same 2nd block, other 1st
    CHECK(m.match_prefix(cat(ids{1, 2, 3, 99}, cat(iota(5, 4), {9}))) == 0);
    CHECK(m.match_prefix(cat(iota(1, 4), ids{5, 6, 7, 99, 9})) == 4);
    CHECK(m.match_prefix(cat(iota(5, 4), cat(iota(1, 4), {9}))) == 0); // the blocks swapped
}

TEST_CASE("kv blocks: a block whose twin is cached stays private; the chain continues through the twin") {
    kv_block_manager m(/*n_blocks=*/8, /*block_size=*/4);
    std::string err;
    // Both admitted before either commits: no hit, separate blocks.
    REQUIRE(m.admit(1, cat(iota(1, 8), {9}), 0, err)->table == ids{0, 1, 2});
    REQUIRE(m.admit(2, cat(iota(1, 12), {13}), 0, err)->table == ids{3, 4, 5, 6});
    REQUIRE(m.commit(1, cat(iota(1, 8), {9})));
    REQUIRE(m.commit(2, cat(iota(1, 12), {13})));
    CHECK(m.n_cached_blocks() == 3); // 0 and 1 from sequence 1; 5 (tokens 9..12) from sequence 2
    m.release(1);
    m.release(2);
    const auto a = m.admit(3, cat(iota(1, 12), {77}), 0, err);
    REQUIRE(a);
    CHECK(a->n_cached == 12);
    CHECK(a->table.size() == 4);
    CHECK(ids(a->table.begin(), a->table.begin() + 3) == ids{0, 1, 5});
}

TEST_CASE("kv blocks: eviction takes unregistered free blocks first, then registered ones LRU") {
    kv_block_manager m(/*n_blocks=*/8, /*block_size=*/4);
    std::string err;
    const ids p1 = cat(iota(1, 8), {9}), p2 = cat(iota(11, 8), {19});
    run_prompt(m, 1, p1); // blocks 0 1 2; 0 and 1 registered
    m.release(1);         // freed in the order 2 (unregistered), 1, 0
    CHECK(m.n_free() == 8);
    CHECK(m.n_cached_blocks() == 2);
    run_prompt(m, 2, p2); // unregistered free blocks come first: 2 3 4
    CHECK(table_of(m, 2) == ids{2, 3, 4});
    m.release(2); // LRU, oldest first: 1 0 3 2
    CHECK(run_prompt(m, 3, cat(iota(1, 8), {50})) == 8); // hits 0 1, takes 4
    CHECK(table_of(m, 3) == ids{0, 1, 4});
    m.release(3); // LRU: 3 2 1 0
    CHECK(m.evictions() == 0);

    // 5 blocks: the 4 unregistered ones (4 5 6 7), then p2's tail (3) before its head (2).
    CHECK(m.admit(4, iota(100, 20), 0, err)->table == ids{4, 5, 6, 7, 3});
    CHECK(m.evictions() == 1);
    CHECK(m.n_cached_blocks() == 3);
    CHECK(m.match_prefix(p2) == 4);
    CHECK(m.admit(5, iota(200, 4), 0, err)->table == ids{2});
    CHECK(m.match_prefix(p2) == 0);
    CHECK(m.match_prefix(p1) == 8); // p1 was hit after p2 was released: evicted later
    CHECK(m.admit(6, iota(300, 4), 0, err)->table == ids{1});
    CHECK(m.match_prefix(p1) == 4);
    CHECK(m.evictions() == 3);
    CHECK(m.n_cached_blocks() == 1);
}

TEST_CASE("kv blocks: truncate keeps private blocks, refuses to cut into a shared one") {
    kv_block_manager m(/*n_blocks=*/8, /*block_size=*/4);
    std::string err;
    run_prompt(m, 1, iota(1, 6)); // blocks 0 (registered) 1 (partial)
    CHECK(m.truncate(1, 5));      // inside the private partial block
    CHECK(table_of(m, 1) == ids{0, 1});
    CHECK(m.n_tokens(1) == 5);
    CHECK(m.truncate(1, 3)); // into block 0: registered but only ours, so it is unregistered
    CHECK(table_of(m, 1) == ids{0});
    CHECK(m.n_cached_blocks() == 0);
    CHECK(m.ref_cnt(1) == 0);
    CHECK(m.commit(1, ids{40}));
    CHECK(m.match_prefix(iota(1, 5)) == 0); // the old tokens 1..4 are no longer cached
    CHECK(m.truncate(1, 0));
    CHECK(table_of(m, 1).empty());
    CHECK(m.append_slot(1));
    CHECK(table_of(m, 1) == ids{1}); // block 0, free but registered again, comes after the others
    m.release(1);

    kv_block_manager s(/*n_blocks=*/8, /*block_size=*/4);
    run_prompt(s, 1, cat(iota(1, 8), {9}));                  // 0 1 2
    CHECK(run_prompt(s, 2, cat(iota(1, 8), {10, 11})) == 8); // 0 1 3
    CHECK_FALSE(s.truncate(2, 6)); // block 1 is shared with sequence 1
    CHECK(table_of(s, 2) == ids{0, 1, 3});
    CHECK(s.n_tokens(2) == 10);
    CHECK(s.truncate(2, 8)); // a block boundary: nothing shared is rewritten
    CHECK(table_of(s, 2) == ids{0, 1});
    CHECK(s.ref_cnt(3) == 0);
    CHECK(s.truncate(2, 4));
    CHECK(table_of(s, 2) == ids{0});
    CHECK(s.ref_cnt(1) == 1);
    CHECK(s.n_cached_blocks() == 2);
    CHECK_FALSE(s.truncate(2, 5)); // past n_tokens
    CHECK_FALSE(s.truncate(2, -1));
    CHECK_FALSE(s.truncate(9, 0));
}

TEST_CASE("kv blocks: bad input is refused with a message; unknown ids change nothing") {
    kv_block_manager m(/*n_blocks=*/8, /*block_size=*/4);
    std::string err;
    CHECK_FALSE(m.admit(1, ids{}, 0, err));
    CHECK(err == "prompt is empty");
    CHECK_FALSE(m.admit(1, iota(1, 3), -1, err));
    CHECK(err == "reserve_tokens must be >= 0, got -1");
    REQUIRE(m.admit(1, iota(1, 3), 0, err));
    CHECK_FALSE(m.admit(1, iota(1, 3), 0, err));
    CHECK(err == "sequence 1 is already admitted");

    CHECK_FALSE(m.has(7));
    CHECK_FALSE(m.append_slot(7));
    CHECK_FALSE(m.commit(7, ids{1}));
    m.release(7);
    CHECK(m.table(7).empty());
    CHECK(m.n_tokens(7) == -1);
    CHECK(m.ref_cnt(8) == -1);
    CHECK(m.ref_cnt(-1) == -1);
    CHECK(m.n_free() == 7);
}

TEST_CASE("kv blocks: a random workload keeps every invariant and only hits KV of the same prefix") {
    constexpr int kBlocks = 16, kBs = 4, kSteps = 4000, kMaxLen = 40;
    kv_block_manager m(kBlocks, kBs);
    // Simulated KV: each position holds a fingerprint of the tokens up to it, written on commit.
    std::vector<uint64_t> kv(static_cast<size_t>(kBlocks * kBs), 0);
    const auto fingerprint = [](const ids &t, size_t p) { // of t[0..p]
        uint64_t h = 1469598103934665603ull;
        for (size_t i = 0; i <= p; ++i) h = (h ^ static_cast<uint32_t>(t[i])) * 1099511628211ull;
        return h;
    };
    // note: draws as rng() % n, not std::uniform_int_distribution, whose output differs between
    // standard libraries; std::mt19937 itself is fully specified.
    std::mt19937 rng(20240611);
    const auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
    // Three base texts over a 3-token vocabulary, so prefixes collide often and coincidental
    // equal blocks after different prefixes are common.
    std::vector<ids> base(3);
    for (ids &b : base)
        for (int i = 0; i < 16; ++i) b.push_back(static_cast<int32_t>(pick(3)));

    std::map<int64_t, ids> live; // id -> its tokens: prompt, then generated
    int64_t next_id = 0;
    const auto check_invariants = [&] {
        int64_t refs = 0, tables = 0, zero = 0;
        for (int32_t b = 0; b < kBlocks; ++b) {
            refs += m.ref_cnt(b);
            zero += m.ref_cnt(b) == 0;
        }
        for (const auto &[id, toks] : live) {
            tables += static_cast<int64_t>(m.table(id).size());
            REQUIRE(m.n_tokens(id) <= static_cast<int>(m.table(id).size()) * kBs);
        }
        REQUIRE(refs == tables);
        REQUIRE(zero == m.n_free());
        REQUIRE(m.n_cached_blocks() <= kBlocks);
    };
    const auto compute = [&](int64_t id, size_t n) { // commits the next n known tokens
        const ids &toks = live.at(id);
        const auto first = static_cast<size_t>(m.n_tokens(id));
        for (size_t p = first; p < first + n; ++p) {
            const int32_t b = m.table(id)[p / kBs];
            REQUIRE(m.ref_cnt(b) == 1); // never write KV another sequence reads
            kv[static_cast<size_t>(b) * kBs + p % kBs] = fingerprint(toks, p);
        }
        REQUIRE(m.commit(id, std::span(toks).subspan(first, n)));
    };
    const auto random_live = [&] { return std::next(live.begin(), static_cast<ptrdiff_t>(pick(live.size())))->first; };

    for (int step = 0; step < kSteps; ++step) {
        CAPTURE(step);
        const size_t op = pick(10);
        if (op < 3 || live.empty()) { // admit
            const ids &b = base[pick(base.size())];
            ids prompt(b.begin(), b.begin() + 1 + static_cast<ptrdiff_t>(pick(b.size())));
            for (size_t n = pick(6); n > 0; --n) prompt.push_back(static_cast<int32_t>(pick(3)));
            const int reserve = static_cast<int>(pick(4));
            const int free_before = m.n_free();
            std::string err;
            const auto a = m.admit(next_id, prompt, reserve, err);
            if (!a) {
                REQUIRE(m.n_free() == free_before);
                REQUIRE_FALSE(m.has(next_id));
            } else {
                for (int p = 0; p < a->n_cached; ++p) // a hit holds the KV of exactly this prefix
                    REQUIRE(kv[static_cast<size_t>(a->table[p / kBs]) * kBs + p % kBs] == fingerprint(prompt, p));
                live[next_id] = prompt;
            }
            ++next_id;
        } else if (op < 7) { // advance: the rest of the prompt, or one generated token
            const int64_t id = random_live();
            ids &toks = live.at(id);
            const auto done = static_cast<size_t>(m.n_tokens(id));
            if (done < toks.size()) {
                compute(id, 1 + pick(toks.size() - done));
            } else if (toks.size() >= kMaxLen) {
                m.release(id);
                live.erase(id);
            } else if (!m.append_slot(id)) {
                const int64_t victim = random_live(); // preempt someone, maybe itself
                m.release(victim);
                live.erase(victim);
            } else {
                toks.push_back(static_cast<int32_t>(pick(3)));
                compute(id, 1);
            }
        } else if (op < 8) { // truncate
            const int64_t id = random_live();
            const ids before = table_of(m, id);
            const int n_before = m.n_tokens(id);
            const int n = static_cast<int>(pick(static_cast<size_t>(n_before) + 1));
            if (m.truncate(id, n)) {
                live.at(id).resize(static_cast<size_t>(n));
            } else {
                REQUIRE(table_of(m, id) == before);
                REQUIRE(m.n_tokens(id) == n_before);
            }
        } else { // release
            const int64_t id = random_live();
            m.release(id);
            live.erase(id);
        }
        check_invariants();
    }
    for (const auto &[id, toks] : live) m.release(id);
    live.clear();
    check_invariants();
    CHECK(m.n_free() == kBlocks);
    // The workload did exercise what it is meant to.
    CHECK(m.prefix_hit_tokens() > 0);
    CHECK(m.evictions() > 0);
}
