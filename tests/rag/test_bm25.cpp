// BM25 against rank-bm25's BM25Okapi (tests/fixtures/bm25_reference.json, made by
// scripts/gen_bm25_reference.py), and the index's bookkeeping: remove, re-add, filters.
#include "tests/support/paths.h"
#include <doctest/doctest.h>
#include <simdjson.h>

#include <cmath>
#include <string>
#include <vector>

#include "rag/bm25.h"

using namespace actorserve;

namespace {

constexpr double kRelTol = 1e-4;  // the index sums in double and returns float scores

struct ref_query {
    std::string text;
    std::vector<std::string> terms;
    std::vector<double> scores;  // (corpus size,)
};
struct ref_settings {
    bm25_settings s;
    std::vector<ref_query> queries;
};
struct reference {
    std::vector<std::string> texts;
    std::vector<std::vector<std::string>> terms;
    std::vector<ref_settings> settings;
};

std::vector<std::string> strings(simdjson::dom::array a) {
    std::vector<std::string> out;
    for (auto v : a) out.emplace_back(std::string_view(v.get_string()));
    return out;
}

const reference &ref() {
    static const reference r = [] {
        reference out;
        static simdjson::dom::parser parser;
        simdjson::dom::element root = parser.load(test_paths::fixtures() + "/bm25_reference.json");
        for (auto doc : root["corpus"].get_array()) {
            out.texts.emplace_back(std::string_view(doc["text"].get_string()));
            out.terms.push_back(strings(doc["terms"].get_array()));
        }
        for (auto set : root["settings"].get_array()) {
            ref_settings rs;
            rs.s.k1 = static_cast<float>(double(set["k1"]));
            rs.s.b = static_cast<float>(double(set["b"]));
            rs.s.epsilon = static_cast<float>(double(set["epsilon"]));
            for (auto q : set["queries"].get_array()) {
                ref_query rq;
                rq.text = std::string(std::string_view(q["query"].get_string()));
                rq.terms = strings(q["terms"].get_array());
                for (auto s : q["scores"].get_array()) rq.scores.push_back(double(s));
                rs.queries.push_back(std::move(rq));
            }
            out.settings.push_back(std::move(rs));
        }
        return out;
    }();
    return r;
}

void add_corpus(bm25_index &idx) {
    for (size_t i = 0; i < ref().texts.size(); ++i) REQUIRE(idx.add(i, ref().texts[i]));
}

bool close(double got, double want) { return std::fabs(got - want) <= kRelTol * std::max(1.0, std::fabs(want)); }

} // namespace

TEST_CASE("bm25 terms: lowercased runs of word bytes, non-ASCII kept whole") {
    CHECK(bm25_terms("Hello, World! foo_bar 42x") == std::vector<std::string>{"hello", "world", "foo_bar", "42x"});
    CHECK(bm25_terms("Caf\xC3\xA9 CR\xC3\x8A" "PE") == std::vector<std::string>{"caf\xC3\xA9", "cr\xC3\x8Ape"});
    CHECK(bm25_terms("  ...  ").empty());
    CHECK(bm25_terms("").empty());
}

TEST_CASE("bm25 terms: equal the reference tokeniser's on the corpus and the queries") {
    const reference &r = ref();
    REQUIRE(r.texts.size() == 31);
    for (size_t i = 0; i < r.texts.size(); ++i) CHECK(bm25_terms(r.texts[i]) == r.terms[i]);
    for (const auto &set : r.settings)
        for (const auto &q : set.queries) CHECK(bm25_terms(q.text) == q.terms);
}

TEST_CASE("bm25 scores: equal rank-bm25's BM25Okapi for every document and query, both settings") {
    const reference &r = ref();
    REQUIRE(r.settings.size() == 2);
    size_t checked = 0, nonzero = 0;
    for (const auto &set : r.settings) {
        bm25_index idx(set.s);
        add_corpus(idx);
        CHECK(idx.size() == r.texts.size());
        for (const auto &q : set.queries) {
            REQUIRE(q.scores.size() == r.texts.size());
            for (size_t d = 0; d < r.texts.size(); ++d) {
                const double got = idx.score(d, q.terms);
                CHECK_MESSAGE(close(got, q.scores[d]), "query \"" << q.text << "\" doc " << d << ": " << got
                                                                  << " vs " << q.scores[d]);
                ++checked;
                nonzero += q.scores[d] != 0.0;
            }
        }
    }
    CHECK(checked == (14 + 4) * 31);
    CHECK(nonzero > 100);  // the comparison is not all zeros
}

TEST_CASE("bm25 search: ranks as the reference scores do, ties by lower id, zero-overlap chunks left out") {
    const reference &r = ref();
    bm25_index idx(r.settings[0].s);
    add_corpus(idx);
    for (const auto &q : r.settings[0].queries) {
        // Expected: every document sharing a term with the query, by score then id.
        std::vector<std::pair<double, uint64_t>> want;
        const auto qt = bm25_terms(q.text);
        for (size_t d = 0; d < r.texts.size(); ++d) {
            bool shares = false;
            for (const auto &t : qt)
                for (const auto &dt : r.terms[d]) shares = shares || t == dt;
            if (shares) want.emplace_back(q.scores[d], d);
        }
        std::sort(want.begin(), want.end(), [](auto &a, auto &b) {
            const float fa = static_cast<float>(a.first), fb = static_cast<float>(b.first);
            return fa != fb ? fa > fb : a.second < b.second;
        });
        const auto hits = idx.search(q.text, 100);
        REQUIRE_MESSAGE(hits.size() == want.size(), q.text);
        for (size_t i = 0; i < hits.size(); ++i) {
            CHECK_MESSAGE(hits[i].id == want[i].second, q.text << " rank " << i);
            CHECK(close(hits[i].score, want[i].first));
        }
        const auto top3 = idx.search(q.text, 3);
        CHECK(top3.size() == std::min<size_t>(3, want.size()));
        for (size_t i = 0; i < top3.size(); ++i) CHECK(top3[i].id == hits[i].id);
    }
}

TEST_CASE("bm25 search: the best chunk for a query, exactly") {
    bm25_index idx(ref().settings[0].s);
    add_corpus(idx);
    const auto hits = idx.search("bread dough flour", 2);
    REQUIRE(hits.size() == 2);
    // bread, dough and flour are each in two chunks (equal idf); chunk 20 has flour and dough, chunk 5
    // bread and dough: the shorter chunk (16 terms against 17) wins.
    CHECK(hits[0].id == 20);  // "Fresh pasta needs only flour and eggs; knead the dough ..."
    CHECK(hits[1].id == 5);   // "To bake the bread, shape the dough into a round loaf ..."
    CHECK(hits[0].score > hits[1].score);
}

TEST_CASE("bm25 search: ties are broken by the lower id") {
    bm25_index idx;
    CHECK(idx.add(7, "apple pie"));
    CHECK(idx.add(3, "apple tart"));
    CHECK(idx.add(5, "pear cake"));
    const auto hits = idx.search("apple", 5);
    REQUIRE(hits.size() == 2);
    CHECK(hits[0].id == 3);
    CHECK(hits[1].id == 7);
    CHECK(hits[0].score == hits[1].score);
}

TEST_CASE("bm25 search: empty queries, unknown terms and k = 0 find nothing") {
    bm25_index idx;
    add_corpus(idx);
    CHECK(idx.search("", 5).empty());
    CHECK(idx.search("  ?! ", 5).empty());
    CHECK(idx.search("submarine zeppelin", 5).empty());
    CHECK(idx.search("bread", 0).empty());
    CHECK(idx.score(0, {"submarine"}) == 0.0);
    CHECK(idx.score(999, {"river"}) == 0.0);  // absent chunk
    bm25_index empty;
    CHECK(empty.search("bread", 5).empty());
}

TEST_CASE("bm25 search: the allow filter restricts candidates before the top k") {
    bm25_index idx(ref().settings[0].s);
    add_corpus(idx);
    const auto all = idx.search("the", 100);
    const auto odd = idx.search("the", 3, [](uint64_t id) { return id % 2 == 1; });
    REQUIRE(odd.size() == 3);
    std::vector<uint64_t> want;
    for (const auto &h : all)
        if (h.id % 2 == 1 && want.size() < 3) want.push_back(h.id);
    for (size_t i = 0; i < 3; ++i) {
        CHECK(odd[i].id % 2 == 1);
        CHECK(odd[i].id == want[i]);
    }
    CHECK(idx.search("the", 3, [](uint64_t) { return false; }).empty());
}

TEST_CASE("bm25 index: add refuses a present id; remove refuses an absent one") {
    bm25_index idx;
    CHECK(idx.add(1, "alpha beta"));
    CHECK_FALSE(idx.add(1, "gamma"));
    CHECK(idx.size() == 1);
    CHECK(idx.terms() == 2);
    CHECK(idx.remove(1));
    CHECK_FALSE(idx.remove(1));
    CHECK(idx.size() == 0);
    CHECK(idx.terms() == 0);
}

TEST_CASE("bm25 index: removing chunks gives the scores of an index built without them") {
    const reference &r = ref();
    bm25_index shrunk(r.settings[0].s), fresh(r.settings[0].s);
    add_corpus(shrunk);
    // Remove every third document: n_t, N, avgdl and the mean idf all change.
    for (size_t d = 0; d < r.texts.size(); ++d) {
        if (d % 3 == 0) CHECK(shrunk.remove(d));
        else CHECK(fresh.add(d, r.texts[d]));
    }
    CHECK(shrunk.size() == fresh.size());
    CHECK(shrunk.terms() == fresh.terms());
    bm25_index full(r.settings[0].s);
    add_corpus(full);
    bool some_changed = false;
    for (const auto &q : r.settings[0].queries) {
        for (size_t d = 0; d < r.texts.size(); ++d) {
            CHECK(shrunk.score(d, q.terms) == doctest::Approx(fresh.score(d, q.terms)).epsilon(1e-12));
            if (d % 3 != 0 && std::fabs(shrunk.score(d, q.terms) - full.score(d, q.terms)) > 1e-6) some_changed = true;
        }
        const auto a = shrunk.search(q.text, 10), b = fresh.search(q.text, 10);
        REQUIRE(a.size() == b.size());
        for (size_t i = 0; i < a.size(); ++i) CHECK(a[i].id == b[i].id);
    }
    CHECK(some_changed);  // idf did follow the removals
}

TEST_CASE("bm25 index: remove then re-add restores the reference scores") {
    const reference &r = ref();
    bm25_index idx(r.settings[0].s);
    add_corpus(idx);
    for (uint64_t d : {0u, 4u, 9u, 30u}) CHECK(idx.remove(d));
    CHECK(idx.size() == r.texts.size() - 4);
    for (uint64_t d : {30u, 9u, 4u, 0u}) CHECK(idx.add(d, r.texts[d]));
    for (const auto &q : r.settings[0].queries)
        for (size_t d = 0; d < r.texts.size(); ++d) CHECK(close(idx.score(d, q.terms), q.scores[d]));
    idx.clear();
    CHECK(idx.size() == 0);
    CHECK(idx.terms() == 0);
    CHECK(idx.search("river", 5).empty());
    add_corpus(idx);
    for (size_t d = 0; d < r.texts.size(); ++d) CHECK(close(idx.score(d, r.settings[0].queries[0].terms), r.settings[0].queries[0].scores[d]));
}

TEST_CASE("bm25 idf: a term in more than half of the chunks scores at epsilon times the mean idf") {
    // 4 chunks; "common" in 3: idf = ln(1.5) - ln(3.5) < 0. Terms: common (n=3), a (1), b (1), c (1).
    bm25_index idx(bm25_settings{1.5f, 0.75f, 0.25f});
    CHECK(idx.add(1, "common a"));
    CHECK(idx.add(2, "common b"));
    CHECK(idx.add(3, "common c"));
    CHECK(idx.add(4, "d"));
    const double neg = std::log(1.5) - std::log(3.5), pos = std::log(3.5) - std::log(1.5);
    const double mean = (neg + 4 * pos) / 5;  // terms: common, a, b, c, d
    // Chunk 1 has length 2, avgdl = 7/4: tf part = 1 * 2.5 / (1 + 1.5 * (0.25 + 0.75 * 2 / 1.75)).
    const double tf = 2.5 / (1 + 1.5 * (0.25 + 0.75 * 2 / 1.75));
    CHECK(idx.score(1, {"common"}) == doctest::Approx(0.25 * mean * tf).epsilon(1e-12));
    CHECK(idx.score(1, {"a"}) == doctest::Approx(pos * tf).epsilon(1e-12));
    CHECK(idx.score(1, {"common", "common"}) == doctest::Approx(2 * 0.25 * mean * tf).epsilon(1e-12));
}
