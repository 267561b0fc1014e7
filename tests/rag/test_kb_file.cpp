#include <doctest/doctest.h>

#include "rag/knowledge_base.h"
#include "tests/support/temp_dir.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <unistd.h>

using namespace actorserve;
namespace fs = std::filesystem;
using test_support::temp_dir;

namespace {

constexpr int kDim = 6;

std::string read_all(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_all(const std::string &path, const std::string &bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
}

// Deterministic, not normalised (commit normalises).
std::vector<float> vec(int seed) {
    std::vector<float> v(kDim);
    for (int j = 0; j < kDim; ++j) v[size_t(j)] = 0.1f + 2.0f * std::cos(float(seed) * 2.3f + float(j) * 1.1f);
    return v;
}

rag_settings small() {
    rag_settings s;
    s.dim = kDim;
    s.candidates = 8;
    s.max_top_k = 8;
    return s;
}

prepared_document make_doc(const std::string &id, const std::vector<std::string> &texts, int seed, doc_metadata m) {
    prepared_document p;
    p.doc.id = id;
    p.doc.meta = std::move(m);
    size_t offset = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
        p.chunks.push_back(prepared_chunk{text_chunk{texts[i], i == 0 ? "" : "Intro > Part", offset, count_words(texts[i])},
                                          vec(seed + int(i))});
        p.doc.text += texts[i];
        p.doc.text += "\n\n";
        offset += texts[i].size() + 2;
    }
    p.content_hash = document_hash(p.doc, chunk_settings{});
    return p;
}

void fill(knowledge_base &kb) {
    REQUIRE(kb.commit(make_doc("alpha", {"solar panels convert light", "inverters feed the grid"}, 1,
                               {"alpha.md", "Solar", {"energy", "home"}, 1714521600}))
                .result == commit_result::status::added);
    REQUIRE(kb.commit(make_doc("beta", {"wind turbines turn in the wind"}, 5, {"beta.txt", "", {}, 0})).result ==
            commit_result::status::added);
    REQUIRE(kb.commit(make_doc("gamma", {"batteries store the grid's surplus", "lithium cells", "\xc3\xa9nergie \n\0 binary"},
                               9, {"gamma.md", "Storage", {"energy"}, 1700000000}))
                .result == commit_result::status::added);
    // A replacement, so chunk ids have a gap and the counter is ahead of the highest stored id.
    REQUIRE(kb.commit(make_doc("beta", {"wind turbines turn in the wind", "offshore farms"}, 5, {"beta.txt", "", {}, 0}))
                .result == commit_result::status::replaced);
}

// Every field of every passage, for comparing two bases.
std::string dump(const std::vector<passage> &ps) {
    std::string s;
    for (const auto &p : ps) {
        s += std::to_string(p.chunk_id) + "|" + p.doc_id + "|" + std::to_string(p.chunk_index) + "|" + p.source + "|" + p.title;
        s += "|" + p.heading + "|" + p.text + "|" + std::to_string(p.timestamp) + "|" + std::to_string(p.tokens);
        for (const auto &t : p.tags) s += "|" + t;
        s += "|" + std::to_string(p.score) + "|" + std::to_string(p.bm25_score) + "|" + std::to_string(p.dense_score);
        s += "|" + std::to_string(p.bm25_rank) + "|" + std::to_string(p.dense_rank) + "\n";
    }
    return s;
}

std::vector<std::string> all_searches(knowledge_base &kb) {
    std::vector<std::string> out;
    for (auto mode : {retrieval_mode::hybrid, retrieval_mode::bm25, retrieval_mode::dense}) {
        for (const char *q : {"grid", "wind energy", "lithium batteries"}) {
            for (int seed : {1, 6, 11}) {
                search_request r;
                r.query = q;
                r.top_k = 8;
                r.mode = mode;
                std::vector<passage> ps;
                std::string err;
                REQUIRE_MESSAGE(kb.search(r, vec(seed), ps, err), err);
                out.push_back(dump(ps));
                r.filters.tags = {"energy"};
                REQUIRE_MESSAGE(kb.search(r, vec(seed), ps, err), err);
                out.push_back(dump(ps));
            }
        }
    }
    return out;
}

} // namespace

TEST_CASE("kb file: save and load give the same documents, chunks and search results") {
    temp_dir dir("roundtrip");
    const std::string path = dir.file("kb.bin");
    knowledge_base a(small());
    fill(a);
    std::string err;
    REQUIRE_MESSAGE(a.save(path, err), err);

    knowledge_base b(small());
    REQUIRE(b.commit(make_doc("stale", {"to be replaced by the file"}, 3, {})).result == commit_result::status::added);
    cache_load_report rep = b.load(path);
    CHECK(rep.result == cache_load_report::outcome::loaded);
    CHECK(rep.entries == 3);
    CHECK(rep.message == path + ": loaded 3 documents, 7 chunks");
    CHECK_FALSE(b.document("stale"));

    CHECK(b.stats().documents == 3);
    CHECK(b.stats().chunks == 7);
    CHECK(b.stats().terms == a.stats().terms);
    CHECK(b.stats().bytes == a.stats().bytes);
    auto da = a.documents(), db = b.documents();
    REQUIRE(da.size() == db.size());
    for (size_t i = 0; i < da.size(); ++i) {
        CHECK(db[i].id == da[i].id);
        CHECK(db[i].meta.source == da[i].meta.source);
        CHECK(db[i].meta.title == da[i].meta.title);
        CHECK(db[i].meta.tags == da[i].meta.tags);
        CHECK(db[i].meta.timestamp == da[i].meta.timestamp);
        CHECK(db[i].content_hash == da[i].content_hash);
        CHECK(db[i].chunks == da[i].chunks);
        CHECK(db[i].bytes == da[i].bytes);
    }
    CHECK(all_searches(b) == all_searches(a));

    // The id counter came along: alpha 1-2, beta 3, gamma 4-6, beta again 7-8, so the next
    // chunk is 9 in both.
    CHECK(a.commit(make_doc("delta", {"heat pumps"}, 20, {})).result == commit_result::status::added);
    CHECK(b.commit(make_doc("delta", {"heat pumps"}, 20, {})).result == commit_result::status::added);
    CHECK(all_searches(b) == all_searches(a));
    search_request r;
    r.query = "heat pumps";
    r.mode = retrieval_mode::bm25;
    std::vector<passage> ps;
    REQUIRE(b.search(r, {}, ps, err));
    REQUIRE(ps.size() == 1);
    CHECK(ps[0].chunk_id == 9);
    // An unchanged document is still recognised after the round trip.
    CHECK_FALSE(b.needs_update("alpha", a.document("alpha")->content_hash));
}

TEST_CASE("kb file: an empty base round-trips, a missing file loads as empty") {
    temp_dir dir("empty");
    knowledge_base a(small());
    std::string err;
    REQUIRE(a.save(dir.file("kb.bin"), err));
    knowledge_base b(small());
    fill(b);
    CHECK(b.load(dir.file("kb.bin")).result == cache_load_report::outcome::loaded);
    CHECK(b.stats().documents == 0);
    fill(b);
    auto rep = b.load(dir.file("absent.bin"));
    CHECK(rep.result == cache_load_report::outcome::missing);
    CHECK(b.stats().documents == 0);
    CHECK(b.stats().chunks == 0);
}

TEST_CASE("kb file: a damaged file is set aside and the base starts empty") {
    temp_dir dir("corrupt");
    const std::string path = dir.file("kb.bin");
    knowledge_base a(small());
    fill(a);
    std::string err;
    REQUIRE(a.save(path, err));
    const std::string good = read_all(path);
    REQUIRE(good.size() > 200);

    auto expect_set_aside = [&](const std::string &bytes, const std::string &problem) {
        write_all(path, bytes);
        knowledge_base b(small());
        fill(b);
        cache_load_report rep = b.load(path);
        CHECK(rep.result == cache_load_report::outcome::corrupt);
        CHECK(rep.message.find(problem) != std::string::npos);
        CHECK(rep.message.rfind(path + ": ", 0) == 0);
        CHECK(rep.set_aside.rfind(path + ".corrupt-", 0) == 0);
        CHECK_FALSE(fs::exists(path));
        CHECK(fs::exists(rep.set_aside));
        CHECK(b.stats().documents == 0);
        CHECK(b.stats().chunks == 0);
        CHECK(b.stats().terms == 0);
        CHECK(b.documents().empty());
        search_request r;
        r.query = "grid";
        std::vector<passage> ps;
        REQUIRE(b.search(r, vec(1), ps, err));
        CHECK(ps.empty());
        fs::remove(rep.set_aside);
    };

    SUBCASE("a flipped byte") {
        std::string bad = good;
        bad[bad.size() / 2] = char(bad[bad.size() / 2] ^ 0x10);
        expect_set_aside(bad, "checksum mismatch");
    }
    SUBCASE("truncated") { expect_set_aside(good.substr(0, good.size() - 7), "truncated"); }
    SUBCASE("another kind of cache file") {
        REQUIRE(write_cache_file(path, cache_file_kind::semantic, good.substr(32), err));
        expect_set_aside(read_all(path), "holds cache kind 2, expected 3");
    }
    SUBCASE("vectors of another dimension") {
        rag_settings s = small();
        s.dim = 4;
        knowledge_base other(s);
        REQUIRE(other.commit(make_doc("x", {"four"}, 1, {})).result == commit_result::status::rejected);   // 6-dim vectors
        prepared_document p = make_doc("x", {"four"}, 1, {});
        p.chunks[0].vec.resize(4);
        REQUIRE(other.commit(p).result == commit_result::status::added);
        REQUIRE(other.save(path, err));
        expect_set_aside(read_all(path), "vectors have 4 dimensions, the knowledge base uses 6");
    }
}

TEST_CASE("kb file: a payload that passes the checksum is still checked field by field") {
    temp_dir dir("payload");
    const std::string path = dir.file("kb.bin");
    // One document "d" with one chunk; each case breaks one field.
    auto payload = [](uint64_t next_id, const std::string &id, uint64_t n_chunks, uint64_t chunk_id, float x, bool twice) {
        byte_writer w;
        w.u32(kDim);
        w.u64(next_id);
        w.u64(twice ? 2 : 1);
        for (int d = 0; d < (twice ? 2 : 1); ++d) {
            w.str(id);
            w.str("src");
            w.str("title");
            w.u64(1);
            w.str("tag");
            w.i64(1700000000);
            w.u64(42);
            w.u64(n_chunks);
            for (uint64_t c = 0; c < n_chunks; ++c) {
                w.u64(chunk_id + c + uint64_t(d) * n_chunks);
                w.str("chunk text");
                w.str("");
                w.u64(0);
                w.u64(2);
                for (int j = 0; j < kDim; ++j) w.f32(j == 0 ? x : 0.5f);
            }
        }
        return w.bytes();
    };
    auto load = [&](const std::string &p) {
        std::string err;
        REQUIRE(write_cache_file(path, cache_file_kind::rag, p, err));
        knowledge_base kb(small());
        cache_load_report rep = kb.load(path);
        if (!rep.set_aside.empty()) fs::remove(rep.set_aside);
        CHECK((rep.result == cache_load_report::outcome::loaded) == (kb.stats().documents > 0));
        return rep;
    };
    CHECK(load(payload(2, "d", 1, 1, 1.0f, false)).result == cache_load_report::outcome::loaded);
    CHECK(load(payload(2, "d", 1, 1, 1.0f, false)).entries == 1);
    auto bad = [&](const std::string &p, const std::string &problem) {
        cache_load_report rep = load(p);
        CHECK(rep.result == cache_load_report::outcome::corrupt);
        CHECK_MESSAGE(rep.message.find(problem) != std::string::npos, rep.message);
    };
    bad(payload(1, "d", 1, 1, 1.0f, false), "document 0 (d) chunk 0 has a bad or repeated id 1");   // id not below the counter
    bad(payload(2, "d", 1, 0, 1.0f, false), "document 0 (d) chunk 0 has a bad or repeated id 0");
    bad(payload(9, "d", 1, 1, std::numeric_limits<float>::infinity(), false), "document 0 (d) chunk 0: vector has a non-finite component");
    bad(payload(9, "d", 0, 1, 1.0f, false), "document 0 (d) has no chunks");
    bad(payload(9, "", 1, 1, 1.0f, false), "document 0 has an empty id");
    bad(payload(9, "d", 1, 1, 1.0f, true), "document 1 (d) repeats an id");
    std::string extra = payload(2, "d", 1, 1, 1.0f, false);
    extra += "x";
    bad(extra, "bytes after the last document");
    std::string cut = payload(2, "d", 1, 1, 1.0f, false);
    bad(cut.substr(0, cut.size() - 3), "truncated");
    // A huge count cannot make load allocate: it is checked against the payload's size.
    byte_writer w;
    w.u32(kDim);
    w.u64(2);
    w.u64(uint64_t{1} << 60);
    bad(w.bytes(), "document count 1152921504606846976 cannot fit the payload");
    byte_writer c;
    c.u32(kDim);
    c.u64(2);
    c.u64(1);
    c.str("d");
    c.str("");
    c.str("");
    c.u64(0);
    c.i64(0);
    c.u64(42);
    c.u64(uint64_t{1} << 40);
    bad(c.bytes(), "document 0 (d): chunk count 1099511627776 cannot fit the payload");
}

TEST_CASE("kb file: a failed save leaves the previous file whole") {
    temp_dir dir("atomic");
    const std::string path = dir.file("kb.bin");
    knowledge_base a(small());
    fill(a);
    std::string err;
    REQUIRE(a.save(path, err));
    const std::string before = read_all(path);

    // The temporary file cannot be created (a folder holds its name; this stops root too).
    fs::create_directory(path + ".tmp-" + std::to_string(::getpid()));
    REQUIRE(a.commit(make_doc("delta", {"heat pumps"}, 20, {})).result == commit_result::status::added);
    CHECK_FALSE(a.save(path, err));
    CHECK(err.find("cannot create") != std::string::npos);
    CHECK(read_all(path) == before);
    fs::remove(path + ".tmp-" + std::to_string(::getpid()));

    // A folder that does not exist.
    CHECK_FALSE(a.save(dir.file("missing/kb.bin"), err));
    CHECK(err.find("missing/kb.bin.tmp-") != std::string::npos);

    knowledge_base b(small());
    CHECK(b.load(path).result == cache_load_report::outcome::loaded);
    CHECK(b.stats().documents == 3);
    CHECK_FALSE(b.document("delta"));
    CHECK(dir.names() == std::vector<std::string>{"kb.bin"});
}
