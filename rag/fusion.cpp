#include "rag/fusion.h"

#include <algorithm>
#include <unordered_map>

namespace actorserve {
namespace {

// Both lists merged by id, with each retriever's rank and score; score still 0.
std::vector<fused_hit> merge(const std::vector<ranked_hit> &bm25, const std::vector<ranked_hit> &dense) {
    std::vector<fused_hit> out;
    out.reserve(bm25.size() + dense.size());
    std::unordered_map<uint64_t, size_t> at;   // id -> index in out
    for (size_t i = 0; i < bm25.size(); ++i) {
        at.emplace(bm25[i].id, out.size());
        fused_hit h;
        h.id = bm25[i].id;
        h.bm25_score = bm25[i].score;
        h.bm25_rank = static_cast<int>(i + 1);
        out.push_back(h);
    }
    for (size_t i = 0; i < dense.size(); ++i) {
        auto [it, fresh] = at.emplace(dense[i].id, out.size());
        if (fresh) {
            fused_hit h;
            h.id = dense[i].id;
            out.push_back(h);
        }
        fused_hit &h = out[it->second];
        h.dense_score = dense[i].score;
        h.dense_rank = static_cast<int>(i + 1);
    }
    return out;
}

void sort_hits(std::vector<fused_hit> &hits) {
    std::sort(hits.begin(), hits.end(), [](const fused_hit &a, const fused_hit &b) {
        if (a.score != b.score) return a.score > b.score;
        return a.id < b.id;
    });
}

// (min, max) of a list's scores; (0, 0) for an empty list.
std::pair<float, float> score_range(const std::vector<ranked_hit> &hits) {
    if (hits.empty()) return {0.0f, 0.0f};
    auto [lo, hi] = std::minmax_element(hits.begin(), hits.end(),
                                        [](const ranked_hit &a, const ranked_hit &b) { return a.score < b.score; });
    return {lo->score, hi->score};
}

float normalised(float s, std::pair<float, float> range) {
    const float span = range.second - range.first;
    return span > 0.0f ? (s - range.first) / span : 1.0f;
}

} // namespace

std::vector<fused_hit> fuse_rrf(const std::vector<ranked_hit> &bm25, const std::vector<ranked_hit> &dense, float rrf_k,
                                float bm25_weight, float dense_weight) {
    std::vector<fused_hit> hits = merge(bm25, dense);
    for (fused_hit &h : hits) {
        double s = 0.0;
        if (h.bm25_rank > 0) s += double(bm25_weight) / (double(rrf_k) + h.bm25_rank);
        if (h.dense_rank > 0) s += double(dense_weight) / (double(rrf_k) + h.dense_rank);
        h.score = static_cast<float>(s);
    }
    sort_hits(hits);
    return hits;
}

std::vector<fused_hit> fuse_weighted(const std::vector<ranked_hit> &bm25, const std::vector<ranked_hit> &dense,
                                     float bm25_weight, float dense_weight) {
    std::vector<fused_hit> hits = merge(bm25, dense);
    const auto rb = score_range(bm25), rd = score_range(dense);
    for (fused_hit &h : hits) {
        double s = 0.0;
        if (h.bm25_rank > 0) s += double(bm25_weight) * normalised(h.bm25_score, rb);
        if (h.dense_rank > 0) s += double(dense_weight) * normalised(h.dense_score, rd);
        h.score = static_cast<float>(s);
    }
    sort_hits(hits);
    return hits;
}

std::vector<fused_hit> single_ranking(const std::vector<ranked_hit> &hits, bool is_bm25) {
    std::vector<fused_hit> out;
    out.reserve(hits.size());
    for (size_t i = 0; i < hits.size(); ++i) {
        fused_hit h;
        h.id = hits[i].id;
        h.score = hits[i].score;
        (is_bm25 ? h.bm25_score : h.dense_score) = hits[i].score;
        (is_bm25 ? h.bm25_rank : h.dense_rank) = static_cast<int>(i + 1);
        out.push_back(h);
    }
    return out;
}

} // namespace actorserve
