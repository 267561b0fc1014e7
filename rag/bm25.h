// BM25 over an inverted index of our own, scoring as rank-bm25's BM25Okapi does (the reference
// the tests compare against, tests/fixtures/bm25_reference.json):
//   idf(t)     = ln(N - n_t + 0.5) - ln(n_t + 0.5)      N chunks, n_t chunks containing t
//                 where that is negative: epsilon * (mean idf over all terms of the index)
//   score(d,q) = sum over query terms t (repeats count): idf(t) * f(t,d) * (k1 + 1)
//                 / (f(t,d) + k1 * (1 - b + b * |d| / avgdl))
// Terms: bm25_terms() below; no stemming and no stop words (idf already discounts common words).
//
// Documents are added and removed one by one (ids are the caller's chunk ids); idf and avgdl
// follow every change. The mean idf is recomputed lazily, on the first search after a change.
// Not thread-safe: the RAG actor owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace actorserve {

struct bm25_settings {
    float k1 = 1.5f;
    float b = 0.75f;
    float epsilon = 0.25f;  // floor for negative idf, as a fraction of the mean idf
};

// Lowercased runs of word characters: ASCII letters and digits, '_', and every byte >= 0x80
// (so a non-ASCII word stays whole; only ASCII letters are lowercased).
// Same rule as scripts/gen_bm25_reference.py.
std::vector<std::string> bm25_terms(std::string_view text);

class bm25_index {
public:
    explicit bm25_index(bm25_settings s = {});

    // Adds a chunk under id (which must not be present: false if it is).
    bool add(uint64_t id, std::string_view text);
    // Removes a chunk; false if absent. cost: O(distinct terms of the chunk * log(posting list)),
    // plus moving the tail of each of those lists.
    bool remove(uint64_t id);
    void clear();

    struct hit {
        uint64_t id = 0;
        float score = 0.0f;
    };
    // The k best chunks for the query, best first (ties: lower id first), among those `allow`
    // accepts (all when empty). Chunks that share no term with the query are not returned.
    // cost: O(sum over query terms of their posting lists) + O(m log k).
    std::vector<hit> search(std::string_view query, size_t k, const std::function<bool(uint64_t)> &allow = {}) const;
    // The score of one chunk for pre-split query terms (0 if absent); for tests.
    double score(uint64_t id, const std::vector<std::string> &query_terms) const;

    size_t size() const { return doc_len_.size(); }
    size_t terms() const { return postings_.size(); }
    const bm25_settings &settings() const { return settings_; }

private:
    double idf(size_t n_t) const;
    void refresh_mean_idf() const;

    bm25_settings settings_;
    // term -> (chunk id, frequency in that chunk), sorted by chunk id (so remove() finds an entry
    // by binary search, and search() visits chunks in a fixed order).
    std::unordered_map<std::string, std::vector<std::pair<uint64_t, uint32_t>>> postings_;
    std::unordered_map<uint64_t, uint32_t> doc_len_;       // chunk id -> number of terms
    std::unordered_map<uint64_t, std::vector<std::string>> doc_terms_;  // distinct terms, for remove
    uint64_t total_len_ = 0;
    mutable bool mean_idf_stale_ = true;
    mutable double mean_idf_ = 0.0;
};

} // namespace actorserve
