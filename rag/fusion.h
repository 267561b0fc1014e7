// Fusing two rankings of chunks (BM25's and the dense retriever's) into one.
//
//   RRF (Cormack et al. 2009):  score(c) = sum over lists that ranked c of  w / (rrf_k + rank)
//                               rank from 1; a list that did not rank c adds nothing.
//   weighted:                   score(c) = sum over lists of  w * (s - min) / (max - min)
//                               min/max over that list's candidates; a list whose candidates all
//                               score the same gives each of them 1; a list that did not rank c
//                               adds 0.
//
// RRF reads only ranks, so BM25's unbounded scores and cosines in [-1, 1] need no common
// scale; weighted fusion keeps the score gaps but depends on who else is among the candidates.
// Both sort by fused score, ties broken by the lower chunk id, so results are deterministic.
#pragma once

#include <cstdint>
#include <vector>

namespace actorserve {

// One retriever's candidate, its list best first.
struct ranked_hit {
    uint64_t id = 0;
    float score = 0.0f;
};

struct fused_hit {
    uint64_t id = 0;
    float score = 0.0f;        // fused score, higher is better
    float bm25_score = 0.0f;   // 0 when BM25 did not rank it
    float dense_score = 0.0f;  // 0 when the dense retriever did not rank it
    int bm25_rank = 0;         // 1-based; 0 = not ranked
    int dense_rank = 0;
};

// Ranks are positions in the lists (both best first, ids distinct within a list).
// cost: O((a + b) log(a + b)).
std::vector<fused_hit> fuse_rrf(const std::vector<ranked_hit> &bm25, const std::vector<ranked_hit> &dense, float rrf_k,
                                float bm25_weight, float dense_weight);
std::vector<fused_hit> fuse_weighted(const std::vector<ranked_hit> &bm25, const std::vector<ranked_hit> &dense,
                                     float bm25_weight, float dense_weight);

// One retriever's list as fused hits, in its order: score = that retriever's score, its rank and
// score filled.
std::vector<fused_hit> single_ranking(const std::vector<ranked_hit> &hits, bool is_bm25);

} // namespace actorserve
