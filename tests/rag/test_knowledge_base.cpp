#include "tests/support/paths.h"
#include <doctest/doctest.h>

#include "engine/embedder.h"
#include "rag/knowledge_base.h"

#include <cmath>
#include <limits>

using namespace actorserve;

namespace {

constexpr int kDim = 8;

// e_i, leaning towards e_{i+1} by `lean` (not normalised: commit does that).
std::vector<float> axis(int i, float lean = 0.0f) {
    std::vector<float> v(kDim, 0.0f);
    v[size_t(i % kDim)] = 1.0f;
    v[size_t((i + 1) % kDim)] += lean;
    return v;
}

rag_settings small() {
    rag_settings s;
    s.dim = kDim;
    s.candidates = 10;
    s.max_top_k = 10;
    return s;
}

doc_metadata meta(std::string source, std::vector<std::string> tags = {}, int64_t timestamp = 0, std::string title = "") {
    return doc_metadata{std::move(source), std::move(title), std::move(tags), timestamp};
}

// A document of the given chunk texts, one vector each, built as prepare_document would
// without the chunker or an embedder.
prepared_document make_doc(std::string id, const std::vector<std::string> &texts, const std::vector<std::vector<float>> &vecs,
                           doc_metadata m = {}) {
    REQUIRE(texts.size() == vecs.size());
    prepared_document p;
    p.doc.id = std::move(id);
    p.doc.meta = std::move(m);
    size_t offset = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
        p.chunks.push_back(prepared_chunk{text_chunk{texts[i], "", offset, count_words(texts[i])}, vecs[i]});
        p.doc.text += texts[i] + "\n\n";
        offset += texts[i].size() + 2;
    }
    p.content_hash = document_hash(p.doc, chunk_settings{});
    return p;
}

std::vector<std::string> doc_ids(const std::vector<passage> &ps) {
    std::vector<std::string> out;
    for (const auto &p : ps) out.push_back(p.doc_id);
    return out;
}

search_request query(std::string q, size_t k, retrieval_mode mode = retrieval_mode::hybrid) {
    search_request r;
    r.query = std::move(q);
    r.top_k = k;
    r.mode = mode;
    return r;
}

// Five one-chunk documents, chunk ids 1..5, vectors e_0..e_4, one distinctive word each.
void fill_animals(knowledge_base &kb) {
    const char *words[] = {"aardvark", "badger", "cheetah", "dingo", "emu"};
    for (int i = 0; i < 5; ++i) {
        const std::string id = std::string(1, char('a' + i));
        auto res = kb.commit(make_doc(id, {std::string("the ") + words[i] + " lives here"}, {axis(i)},
                                      meta(i < 3 ? "zoo" : "wild", {i % 2 == 0 ? "even" : "odd"}, 1000 * (i + 1))));
        REQUIRE(res.result == commit_result::status::added);
    }
}

} // namespace

TEST_CASE("knowledge base: add, unchanged, replace and remove a document") {
    knowledge_base kb(small());
    auto doc = make_doc("guide", {"alpha beta", "gamma delta"}, {axis(0), axis(1)}, meta("guide.md"));
    const uint64_t hash = doc.content_hash;
    CHECK(kb.needs_update("guide", hash));

    auto res = kb.commit(doc);
    CHECK(res.result == commit_result::status::added);
    CHECK(res.chunks_added == 2);
    CHECK(res.chunks_removed == 0);
    CHECK(kb.stats().documents == 1);
    CHECK(kb.stats().chunks == 2);
    CHECK_FALSE(kb.needs_update("guide", hash));
    CHECK(kb.needs_update("guide", hash + 1));

    res = kb.commit(doc);
    CHECK(res.result == commit_result::status::unchanged);
    CHECK(res.chunks_added == 0);
    CHECK(kb.stats().chunks == 2);

    auto changed = make_doc("guide", {"alpha beta", "gamma epsilon", "zeta"}, {axis(0), axis(1), axis(2)}, meta("guide.md"));
    CHECK(changed.content_hash != hash);
    res = kb.commit(changed);
    CHECK(res.result == commit_result::status::replaced);
    CHECK(res.chunks_added == 3);
    CHECK(res.chunks_removed == 2);
    CHECK(kb.stats().documents == 1);
    CHECK(kb.stats().chunks == 3);
    REQUIRE(kb.document("guide"));
    CHECK(kb.document("guide")->chunks == 3);
    CHECK(kb.document("guide")->content_hash == changed.content_hash);

    // The old chunks are gone from both indexes; the new ones have fresh ids (3, 4, 5).
    std::vector<passage> out;
    std::string err;
    REQUIRE(kb.search(query("delta", 5, retrieval_mode::bm25), {}, out, err));
    CHECK(out.empty());
    REQUIRE(kb.search(query("zeta", 5, retrieval_mode::hybrid), axis(1), out, err));
    REQUIRE(out.size() == 3);
    CHECK(out[0].chunk_id == 5);   // "zeta" text
    CHECK(out[0].chunk_index == 2);
    CHECK(out[1].chunk_id == 4);   // the e_1 vector
    CHECK(out[1].text == "gamma epsilon");

    CHECK(kb.remove("guide"));
    CHECK_FALSE(kb.remove("guide"));
    CHECK(kb.stats().documents == 0);
    CHECK(kb.stats().chunks == 0);
    CHECK(kb.stats().terms == 0);
    CHECK(kb.stats().bytes == 0);
    CHECK(kb.stats().commits == 2);
    CHECK(kb.stats().deletes == 1);
    REQUIRE(kb.search(query("alpha", 5), axis(0), out, err));
    CHECK(out.empty());
}

TEST_CASE("knowledge base: commit rejects what it cannot index, naming the problem") {
    knowledge_base kb(small());
    auto empty = make_doc("blank", {}, {});
    auto res = kb.commit(empty);
    CHECK(res.result == commit_result::status::rejected);
    CHECK(res.error == "blank: no text to index");

    res = kb.commit(make_doc("short", {"a b"}, {{1.0f, 0.0f, 0.0f}}));
    CHECK(res.result == commit_result::status::rejected);
    CHECK(res.error == "short: chunk 0: vector has 3 dimensions, the knowledge base uses 8");

    auto nan = axis(0);
    nan[3] = std::numeric_limits<float>::quiet_NaN();
    res = kb.commit(make_doc("nan", {"a b", "c d"}, {axis(0), nan}));
    CHECK(res.error == "nan: chunk 1: vector has a non-finite component");

    res = kb.commit(make_doc("zero", {"a b"}, {std::vector<float>(kDim, 0.0f)}));
    CHECK(res.error == "zero: chunk 0: vector has zero length");

    CHECK(kb.stats().documents == 0);
    CHECK(kb.stats().commits == 0);
}

TEST_CASE("knowledge base: max_documents and max_chunks are enforced, replacement counts the freed chunks") {
    rag_settings s = small();
    s.max_documents = 2;
    s.max_chunks = 4;
    knowledge_base kb(s);
    REQUIRE(kb.commit(make_doc("a", {"one", "two"}, {axis(0), axis(1)})).result == commit_result::status::added);
    REQUIRE(kb.commit(make_doc("b", {"three"}, {axis(2)})).result == commit_result::status::added);

    auto res = kb.commit(make_doc("c", {"four"}, {axis(3)}));
    CHECK(res.result == commit_result::status::rejected);
    CHECK(res.error == "c: the knowledge base holds 2 documents, the limit (max_documents)");

    // b grows to 3 chunks: 2 + 3 = 5 > 4.
    res = kb.commit(make_doc("b", {"three", "four", "five"}, {axis(2), axis(3), axis(4)}));
    CHECK(res.result == commit_result::status::rejected);
    CHECK(res.error == "b: 3 chunks would take the knowledge base to 5, over max_chunks 4");
    CHECK(kb.document("b")->chunks == 1);   // untouched

    // a shrinks from 2 to 1 and b grows to 3: 4, at the limit.
    CHECK(kb.commit(make_doc("a", {"one"}, {axis(0)})).result == commit_result::status::replaced);
    CHECK(kb.commit(make_doc("b", {"three", "four", "five"}, {axis(2), axis(3), axis(4)})).result ==
          commit_result::status::replaced);
    CHECK(kb.stats().chunks == 4);
}

TEST_CASE("knowledge base: vectors are normalised, dense scores are cosines") {
    knowledge_base kb(small());
    // e_0 + e_1 (scale 5) against a query e_0: cosine 1/sqrt(2).
    REQUIRE(kb.commit(make_doc("d", {"x"}, {{5.0f, 5.0f, 0, 0, 0, 0, 0, 0}})).result == commit_result::status::added);
    std::vector<passage> out;
    std::string err;
    REQUIRE(kb.search(query("anything", 3, retrieval_mode::dense), {3.0f, 0, 0, 0, 0, 0, 0, 0}, out, err));
    REQUIRE(out.size() == 1);
    CHECK(out[0].dense_score == doctest::Approx(1.0 / std::sqrt(2.0)).epsilon(1e-6));
    CHECK(out[0].score == out[0].dense_score);
    CHECK(out[0].dense_rank == 1);
    CHECK(out[0].bm25_rank == 0);
}

TEST_CASE("knowledge base: the three modes rank as their retrievers do") {
    knowledge_base kb(small());
    fill_animals(kb);
    std::vector<passage> out;
    std::string err;

    SUBCASE("bm25: only chunks sharing a term, score = BM25's") {
        REQUIRE(kb.search(query("cheetah", 5, retrieval_mode::bm25), {}, out, err));
        REQUIRE(out.size() == 1);
        CHECK(out[0].doc_id == "c");
        CHECK(out[0].bm25_rank == 1);
        CHECK(out[0].dense_rank == 0);
        CHECK(out[0].score == out[0].bm25_score);
        // Against an index of the same texts: idf(cheetah) with N = 5, n = 1 is ln(4.5 / 1.5).
        bm25_index ref;
        const char *words[] = {"aardvark", "badger", "cheetah", "dingo", "emu"};
        for (uint64_t i = 0; i < 5; ++i) ref.add(i + 1, std::string("the ") + words[i] + " lives here");
        CHECK(out[0].bm25_score == doctest::Approx(ref.score(3, {"cheetah"})).epsilon(1e-6));
        CHECK(out[0].bm25_score > 0.0f);
    }
    SUBCASE("dense: cosine order, ties (orthogonal, 0) by lower chunk id") {
        REQUIRE(kb.search(query("q", 4, retrieval_mode::dense), axis(3), out, err));
        CHECK(doc_ids(out) == std::vector<std::string>{"d", "a", "b", "c"});
        CHECK(out[0].dense_score == doctest::Approx(1.0).epsilon(1e-6));
        CHECK(out[1].dense_score == 0.0f);
        CHECK(out[3].dense_rank == 4);
    }
    SUBCASE("hybrid rrf: a chunk first in both lists beats chunks first in one") {
        // BM25 ranks only b; the vector leans to e_1 (b) then e_2 (c).
        REQUIRE(kb.search(query("badger", 3), axis(1, 0.5f), out, err));
        REQUIRE(out.size() == 3);
        CHECK(doc_ids(out) == std::vector<std::string>{"b", "c", "a"});
        CHECK(out[0].score == doctest::Approx(2.0 / 61).epsilon(1e-6));
        CHECK(out[0].bm25_rank == 1);
        CHECK(out[0].dense_rank == 1);
        CHECK(out[1].score == doctest::Approx(1.0 / 62).epsilon(1e-6));
        CHECK(out[1].bm25_rank == 0);
        CHECK(out[1].dense_rank == 2);
        CHECK(out[1].dense_score == doctest::Approx(0.5 / std::sqrt(1.25)).epsilon(1e-6));
        CHECK(out[2].score == doctest::Approx(1.0 / 63).epsilon(1e-6));
    }
    SUBCASE("hybrid rrf: a chunk both lists rank beats one ranked first by one list only") {
        // BM25 ranks e 1st; dense ranks b 1st and, with all 5 as candidates, e 5th (cosine 0, by id).
        REQUIRE(kb.search(query("emu", 2), axis(1), out, err));
        CHECK(doc_ids(out) == std::vector<std::string>{"e", "b"});
        CHECK(out[0].score == doctest::Approx(1.0 / 61 + 1.0 / 65).epsilon(1e-6));
        CHECK(out[0].dense_rank == 5);
        CHECK(out[1].score == doctest::Approx(1.0 / 61).epsilon(1e-6));
    }
    SUBCASE("passages carry the document's metadata") {
        REQUIRE(kb.search(query("dingo", 1, retrieval_mode::bm25), {}, out, err));
        REQUIRE(out.size() == 1);
        CHECK(out[0].doc_id == "d");
        CHECK(out[0].chunk_id == 4);
        CHECK(out[0].chunk_index == 0);
        CHECK(out[0].source == "wild");
        CHECK(out[0].tags == std::vector<std::string>{"odd"});
        CHECK(out[0].timestamp == 4000);
        CHECK(out[0].text == "the dingo lives here");
        CHECK(out[0].tokens == 4);
    }
    CHECK(kb.stats().searches == 1);
}

TEST_CASE("knowledge base: weighted fusion sums normalised scores") {
    rag_settings s = small();
    s.fusion = fusion_kind::weighted;
    knowledge_base kb(s);
    fill_animals(kb);
    std::vector<passage> out;
    std::string err;
    // BM25: b alone (normalised 1). Dense over 5 candidates: b = 1/sqrt(1.25) (1), c = 0.5/sqrt(1.25),
    // the rest 0 (normalised 0): b = 2, c = 0.5 / 1, then a, d, e at 0 by id.
    REQUIRE(kb.search(query("badger", 5), axis(1, 0.5f), out, err));
    CHECK(doc_ids(out) == std::vector<std::string>{"b", "c", "a", "d", "e"});
    CHECK(out[0].score == doctest::Approx(2.0).epsilon(1e-6));
    CHECK(out[1].score == doctest::Approx(0.5).epsilon(1e-5));
    CHECK(out[2].score == 0.0f);
}

TEST_CASE("knowledge base: filters by source, tags and time") {
    knowledge_base kb(small());
    fill_animals(kb);   // a..c zoo, d..e wild; a, c, e even; timestamps 1000..5000
    REQUIRE(kb.commit(make_doc("undated", {"the fox lives here"}, {axis(5)}, meta("zoo", {"even"}))).result ==
            commit_result::status::added);
    std::vector<passage> out;
    std::string err;
    auto run = [&](search_filters f, retrieval_mode mode = retrieval_mode::hybrid) {
        search_request r = query("lives here", 10, mode);
        r.filters = std::move(f);
        REQUIRE(kb.search(r, axis(0), out, err));
        auto ids = doc_ids(out);
        std::sort(ids.begin(), ids.end());
        return ids;
    };
    using v = std::vector<std::string>;
    CHECK(run({}) == v{"a", "b", "c", "d", "e", "undated"});
    CHECK(run({{"wild"}, {}, {}, {}}) == v{"d", "e"});
    CHECK(run({{"wild", "zoo"}, {}, {}, {}}) == v{"a", "b", "c", "d", "e", "undated"});
    CHECK(run({{"Wild"}, {}, {}, {}}).empty());   // exact match
    CHECK(run({{}, {"odd"}, {}, {}}) == v{"b", "d"});
    CHECK(run({{}, {"odd", "even"}, {}, {}}) == v{"a", "b", "c", "d", "e", "undated"});
    CHECK(run({{"zoo"}, {"even"}, {}, {}}) == v{"a", "c", "undated"});
    // A document without a timestamp fails any time filter.
    CHECK(run({{}, {}, 3000, {}}) == v{"c", "d", "e"});
    CHECK(run({{}, {}, {}, 2000}) == v{"a", "b"});
    CHECK(run({{}, {}, 2000, 4000}) == v{"b", "c", "d"});
    CHECK(run({{}, {}, int64_t{0}, {}}) == v{"a", "b", "c", "d", "e"});
    CHECK(run({{"wild"}, {}, {}, {}}, retrieval_mode::bm25) == v{"d", "e"});
    CHECK(run({{"wild"}, {}, {}, {}}, retrieval_mode::dense) == v{"d", "e"});
    CHECK(run({{}, {}, 6000, {}}, retrieval_mode::dense).empty());
}

TEST_CASE("knowledge base: a filter ranks inside the matching chunks, so it never empties the top-k") {
    rag_settings s = small();
    s.candidates = 5;
    knowledge_base kb(s);
    // 20 "news" chunks right on the query (vector and words), 3 "manual" chunks far from it.
    for (int i = 0; i < 20; ++i)
        kb.commit(make_doc("news" + std::to_string(i), {"printer news item"}, {axis(0, 0.01f * float(i))}, meta("news")));
    for (int i = 0; i < 3; ++i)
        kb.commit(make_doc("manual" + std::to_string(i), {"printer manual page printer"}, {axis(4, 0.1f * float(i))},
                           meta("manual")));
    // Unrelated documents, so that "printer" and "news" are not in most chunks (their idf positive).
    for (int i = 0; i < 30; ++i)
        kb.commit(make_doc("other" + std::to_string(i), {"garden hose " + std::to_string(i)}, {axis(2)}, meta("other")));
    REQUIRE(kb.stats().chunks == 53);
    std::vector<passage> out;
    std::string err;
    for (auto mode : {retrieval_mode::dense, retrieval_mode::bm25, retrieval_mode::hybrid}) {
        CAPTURE(int(mode));
        search_request r = query("printer news", 3, mode);
        // Unfiltered, the top 3 are all news.
        REQUIRE(kb.search(r, axis(0), out, err));
        REQUIRE(out.size() == 3);
        for (const auto &p : out) CHECK(p.source == "news");
        r.filters.sources = {"manual"};
        REQUIRE(kb.search(r, axis(0), out, err));
        CHECK(doc_ids(out) == std::vector<std::string>{"manual0", "manual1", "manual2"});
    }
}

TEST_CASE("knowledge base: search errors name the caller's mistake") {
    knowledge_base kb(small());
    fill_animals(kb);
    std::vector<passage> out;
    std::string err;
    CHECK_FALSE(kb.search(query("", 3), axis(0), out, err));
    CHECK(err == "query is empty");
    CHECK_FALSE(kb.search(query(" \n\t", 3), axis(0), out, err));
    CHECK(err == "query is empty");
    CHECK_FALSE(kb.search(query("emu", 0), axis(0), out, err));
    CHECK(err == "top_k is 0, must be at least 1");
    CHECK_FALSE(kb.search(query("emu", 11), axis(0), out, err));
    CHECK(err == "top_k 11 is over the limit of 10 (max_top_k)");
    CHECK_FALSE(kb.search(query("emu", 3), {}, out, err));
    CHECK(err == "query vector has 0 dimensions, the knowledge base uses 8");
    CHECK_FALSE(kb.search(query("emu", 3, retrieval_mode::dense), {1.0f, 2.0f}, out, err));
    CHECK(err == "query vector has 2 dimensions, the knowledge base uses 8");
    CHECK(kb.stats().searches == 0);
    // BM25 alone needs no vector.
    CHECK(kb.search(query("emu", 3, retrieval_mode::bm25), {}, out, err));
    CHECK(out.size() == 1);
    CHECK(kb.stats().searches == 1);
}

TEST_CASE("knowledge base: documents are listed by id with their sizes") {
    knowledge_base kb(small());
    fill_animals(kb);
    kb.commit(make_doc("0-first", {"one two", "three"}, {axis(0), axis(1)}, meta("s", {"t"}, 7, "Title")));
    auto docs = kb.documents();
    REQUIRE(docs.size() == 6);
    CHECK(docs[0].id == "0-first");
    CHECK(docs[1].id == "a");
    CHECK(docs[5].id == "e");
    CHECK(docs[0].chunks == 2);
    CHECK(docs[0].meta.title == "Title");
    CHECK(docs[0].meta.timestamp == 7);
    CHECK(docs[0].bytes > 2 * kDim * sizeof(float));
    size_t sum = 0;
    for (const auto &d : docs) sum += d.bytes;
    CHECK(kb.stats().bytes == sum);
    CHECK_FALSE(kb.document("nope"));
    kb.clear();
    CHECK(kb.documents().empty());
    CHECK(kb.stats().chunks == 0);
    CHECK(kb.stats().commits == 6);   // counters outlive clear()
}

TEST_CASE("indexed text and document hash") {
    CHECK(indexed_text(meta("s", {}, 0, "Guide"), text_chunk{"body", "Guide > Setup", 0, 1}) == "Guide\nGuide > Setup\nbody");
    CHECK(indexed_text(meta("s"), text_chunk{"body", "", 0, 1}) == "body");
    document_input d;
    d.id = "x";
    d.text = "hello";
    const uint64_t h = document_hash(d, chunk_settings{});
    CHECK(h == document_hash(d, chunk_settings{}));
    auto differs = [&](auto change) {
        document_input e = d;
        chunk_settings c;
        change(e, c);
        return document_hash(e, c) != h;
    };
    CHECK(differs([](document_input &e, chunk_settings &) { e.text = "hello!"; }));
    CHECK(differs([](document_input &e, chunk_settings &) { e.format = doc_format::markdown; }));
    CHECK(differs([](document_input &e, chunk_settings &) { e.meta.title = "t"; }));
    CHECK(differs([](document_input &e, chunk_settings &) { e.meta.source += "src"; }));
    CHECK(differs([](document_input &e, chunk_settings &) { e.meta.tags = {"t"}; }));
    CHECK(differs([](document_input &e, chunk_settings &) { e.meta.timestamp = 1; }));
    CHECK(differs([](document_input &, chunk_settings &c) { c.max_tokens = 100; }));
    CHECK(differs([](document_input &, chunk_settings &c) { c.overlap_tokens = 0; }));
    // Length prefixes: moving a byte from title to source changes the hash.
    document_input a = d, b = d;
    a.meta.title = "ab";
    b.meta.title = "b";
    b.meta.source = "a";
    CHECK(document_hash(a, {}) != document_hash(b, {}));
}

TEST_CASE("knowledge base: MiniLM embeddings find the obvious document") {
    std::string err;
    auto emb = embedder::load(test_paths::embed_model_dir(), err, 2);
    REQUIRE_MESSAGE(emb, err);
    rag_settings s;
    s.dim = emb->dim();
    knowledge_base kb(s);
    const std::vector<std::pair<std::string, std::string>> docs = {
        {"bread", "Knead the dough, let it rise for an hour, then bake the loaf at 220 degrees."},
        {"rust", "Rust's borrow checker enforces that references never outlive the data they point to."},
        {"tides", "Ocean tides are caused by the gravitational pull of the moon and the sun."},
        {"tennis", "In tennis, a player wins a game by scoring four points and leading by two."},
        {"volcano", "Magma rising through the crust erupts from a volcano as lava and ash."},
        {"cats", "Cats groom themselves with their rough tongues and sleep most of the day."},
    };
    for (const auto &[id, text] : docs) {
        document_input d;
        d.id = id;
        d.text = text;
        d.meta.source = id + ".txt";
        prepared_document p;
        REQUIRE_MESSAGE(prepare_document(d, s.chunking, count_words, *emb, p, err), err);
        CHECK(p.chunks.size() == 1);
        CHECK(p.content_hash == document_hash(d, s.chunking));
        REQUIRE(p.chunks[0].vec.size() == size_t(s.dim));
        CHECK(kb.commit(std::move(p)).result == commit_result::status::added);
    }
    const std::vector<std::pair<std::string, std::string>> questions = {
        {"why does the sea rise and fall?", "tides"},
        {"how do I make bread at home", "bread"},
        {"what comes out of an erupting mountain", "volcano"},
    };
    for (const auto &[q, want] : questions) {
        CAPTURE(q);
        std::vector<passage> out;
        REQUIRE(kb.search(query(q, 1, retrieval_mode::dense), emb->embed(q), out, err));
        REQUIRE(out.size() == 1);
        CHECK(out[0].doc_id == want);
        CHECK(out[0].dense_score > 0.3f);
    }

    document_input blank;
    blank.id = "blank";
    blank.text = "  \n\n \t ";
    prepared_document p;
    CHECK_FALSE(prepare_document(blank, s.chunking, count_words, *emb, p, err));
    CHECK(err == "blank: no text to index");
    document_input bad;
    bad.id = "bad";
    bad.text = "ok \xff";
    CHECK_FALSE(prepare_document(bad, s.chunking, count_words, *emb, p, err));
    CHECK(err.rfind("bad: text is not valid UTF-8", 0) == 0);
}
