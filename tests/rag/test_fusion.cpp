#include <doctest/doctest.h>

#include "rag/fusion.h"

using namespace actorserve;

namespace {

// BM25 ranks 10, 20, 30; the dense retriever ranks 20, 40, 10.
const std::vector<ranked_hit> kBm25 = {{10, 5.0f}, {20, 3.0f}, {30, 1.0f}};
const std::vector<ranked_hit> kDense = {{20, 0.9f}, {40, 0.8f}, {10, 0.5f}};

std::vector<uint64_t> ids(const std::vector<fused_hit> &hits) {
    std::vector<uint64_t> out;
    for (const auto &h : hits) out.push_back(h.id);
    return out;
}

} // namespace

TEST_CASE("rrf: sums w / (k + rank) over the lists that ranked a chunk") {
    auto hits = fuse_rrf(kBm25, kDense, 60.0f, 1.0f, 1.0f);
    REQUIRE(hits.size() == 4);
    CHECK(ids(hits) == std::vector<uint64_t>{20, 10, 40, 30});
    CHECK(hits[0].score == doctest::Approx(1.0 / 62 + 1.0 / 61).epsilon(1e-6));   // 20: BM25 2nd, dense 1st
    CHECK(hits[1].score == doctest::Approx(1.0 / 61 + 1.0 / 63).epsilon(1e-6));   // 10: BM25 1st, dense 3rd
    CHECK(hits[2].score == doctest::Approx(1.0 / 62).epsilon(1e-6));              // 40: dense 2nd only
    CHECK(hits[3].score == doctest::Approx(1.0 / 63).epsilon(1e-6));              // 30: BM25 3rd only
    CHECK(hits[0].bm25_rank == 2);
    CHECK(hits[0].dense_rank == 1);
    CHECK(hits[0].bm25_score == 3.0f);
    CHECK(hits[0].dense_score == 0.9f);
    CHECK(hits[2].bm25_rank == 0);
    CHECK(hits[2].bm25_score == 0.0f);
    CHECK(hits[3].dense_rank == 0);
}

TEST_CASE("rrf: weights scale each list's share, and a smaller k sharpens the top") {
    // Dense weighted 3x: 40 (dense 2nd) rises to 3/62, still under 10 (1/61 + 3/63).
    auto hits = fuse_rrf(kBm25, kDense, 60.0f, 1.0f, 3.0f);
    CHECK(ids(hits) == std::vector<uint64_t>{20, 10, 40, 30});
    CHECK(hits[0].score == doctest::Approx(1.0 / 62 + 3.0 / 61).epsilon(1e-6));
    CHECK(hits[1].score == doctest::Approx(1.0 / 61 + 3.0 / 63).epsilon(1e-6));
    CHECK(hits[2].score == doctest::Approx(3.0 / 62).epsilon(1e-6));
    // BM25 weighted 0: the dense order, and 30 (BM25 only) scores 0.
    hits = fuse_rrf(kBm25, kDense, 60.0f, 0.0f, 1.0f);
    CHECK(ids(hits) == std::vector<uint64_t>{20, 40, 10, 30});
    CHECK(hits[3].score == 0.0f);
    // k = 0: 10 scores 1/1 + 1/3, 20 scores 1/2 + 1/1: 20 still first, 40 (1/2) above 30 (1/3).
    hits = fuse_rrf(kBm25, kDense, 0.0f, 1.0f, 1.0f);
    CHECK(ids(hits) == std::vector<uint64_t>{20, 10, 40, 30});
    CHECK(hits[0].score == doctest::Approx(1.5).epsilon(1e-6));
    CHECK(hits[1].score == doctest::Approx(1.0 + 1.0 / 3).epsilon(1e-6));
}

TEST_CASE("rrf: equal scores go to the lower chunk id") {
    auto hits = fuse_rrf({{7, 2.0f}}, {{3, 0.5f}}, 60.0f, 1.0f, 1.0f);
    REQUIRE(hits.size() == 2);
    CHECK(ids(hits) == std::vector<uint64_t>{3, 7});
    CHECK(hits[0].score == hits[1].score);
}

TEST_CASE("rrf: one empty list leaves the other's order") {
    auto hits = fuse_rrf(kBm25, {}, 60.0f, 1.0f, 1.0f);
    CHECK(ids(hits) == std::vector<uint64_t>{10, 20, 30});
    CHECK(fuse_rrf({}, {}, 60.0f, 1.0f, 1.0f).empty());
}

TEST_CASE("weighted: min-max normalised scores, weighted and summed") {
    // BM25 over [1, 5]: 10 -> 1, 20 -> 0.5, 30 -> 0. Dense over [0.5, 0.9]: 20 -> 1, 40 -> 0.75, 10 -> 0.
    auto hits = fuse_weighted(kBm25, kDense, 1.0f, 1.0f);
    REQUIRE(hits.size() == 4);
    CHECK(ids(hits) == std::vector<uint64_t>{20, 10, 40, 30});
    CHECK(hits[0].score == doctest::Approx(1.5).epsilon(1e-6));
    CHECK(hits[1].score == doctest::Approx(1.0).epsilon(1e-6));
    CHECK(hits[2].score == doctest::Approx(0.75).epsilon(1e-5));
    CHECK(hits[3].score == 0.0f);
    CHECK(hits[2].dense_rank == 2);
    CHECK(hits[2].dense_score == 0.8f);
}

TEST_CASE("weighted: BM25 weighted 2x ties 10 with 20, and the lower id wins") {
    // 10: 2 * 1 + 0 = 2; 20: 2 * 0.5 + 1 = 2.
    auto hits = fuse_weighted(kBm25, kDense, 2.0f, 1.0f);
    CHECK(ids(hits) == std::vector<uint64_t>{10, 20, 40, 30});
    CHECK(hits[0].score == doctest::Approx(2.0).epsilon(1e-6));
    CHECK(hits[1].score == doctest::Approx(2.0).epsilon(1e-6));
}

TEST_CASE("weighted: a list whose candidates score alike gives each of them 1") {
    auto hits = fuse_weighted({{4, 2.5f}}, {{9, 0.3f}, {4, 0.3f}}, 1.0f, 1.0f);
    REQUIRE(hits.size() == 2);
    CHECK(ids(hits) == std::vector<uint64_t>{4, 9});
    CHECK(hits[0].score == 2.0f);
    CHECK(hits[1].score == 1.0f);
}

TEST_CASE("single ranking: keeps the retriever's order, score and rank") {
    auto hits = single_ranking(kDense, false);
    CHECK(ids(hits) == std::vector<uint64_t>{20, 40, 10});
    CHECK(hits[1].score == 0.8f);
    CHECK(hits[1].dense_score == 0.8f);
    CHECK(hits[1].dense_rank == 2);
    CHECK(hits[1].bm25_rank == 0);
    hits = single_ranking(kBm25, true);
    CHECK(hits[2].bm25_rank == 3);
    CHECK(hits[2].bm25_score == 1.0f);
    CHECK(hits[2].dense_rank == 0);
}
