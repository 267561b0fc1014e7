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
// Inside, a chunk id maps to a dense slot (reused after removal) and a term string to a dense term
// number, each stored once; posting lists hold (slot, frequency) pairs in no particular order,
// 8 bytes a posting, and each slot remembers where it sits in each of its lists, so add and
// remove never search or shift a list. About 16 bytes per (chunk, distinct term) pair, plus the
// lists' growth slack: ~100-130 MB for 100,000 chunks of 200 word pieces (~65 distinct terms each).
// Not thread-safe: the RAG actor owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "include/actorserve/rag_settings.h" // bm25_settings

namespace actorserve {

// Lowercased runs of word characters: ASCII letters and digits, '_', and every byte >= 0x80
// (so a non-ASCII word stays whole; only ASCII letters are lowercased).
// Same rule as scripts/gen_bm25_reference.py.
std::vector<std::string> bm25_terms(std::string_view text);

class bm25_index {
public:
    explicit bm25_index(bm25_settings s = {});

    // Adds a chunk under id (which must not be present: false if it is).
    // cost: O(terms of the chunk) hash look-ups + O(d log d), d its distinct terms.
    bool add(uint64_t id, std::string_view text);
    // Removes a chunk; false if absent. cost: O(d log d), d the distinct terms of the chunk.
    bool remove(uint64_t id);
    void clear();

    struct hit {
        uint64_t id = 0;
        float score = 0.0f;
    };
    // The k best chunks for the query, best first (ties: lower id first), among those `allow`
    // accepts (all when empty). Chunks that share no term with the query are not returned.
    // cost: O(sum over query terms of their posting lists), one multiply-add per posting into a
    // per-thread array sized to the slots, + O(m log k) for the m chunks touched; `allow` is asked
    // only about chunks that would enter the current k best. O(terms of the index) more on the
    // first search after a change, when the query has a term whose idf takes the epsilon floor.
    std::vector<hit> search(std::string_view query, size_t k, const std::function<bool(uint64_t)> &allow = {}) const;
    // The score of one chunk for pre-split query terms (0 if absent); for tests.
    double score(uint64_t id, const std::vector<std::string> &query_terms) const;

    size_t size() const { return slot_of_.size(); }
    size_t terms() const { return term_of_.size(); }
    const bm25_settings &settings() const { return settings_; }

private:
    // Hash and equality that let term_of_ be searched with a string_view (no copy per look-up).
    struct term_hash {
        using is_transparent = void;
        size_t operator()(std::string_view t) const { return std::hash<std::string_view>{}(t); }
    };
    struct posting {
        uint32_t slot;
        uint32_t freq;  // occurrences of the term in the chunk
    };
    struct slot_term {
        uint32_t term;
        uint32_t pos;  // index of this slot's posting in lists_[term]
    };

    double idf(size_t n_t) const;
    void refresh_mean_idf() const;
    uint32_t intern(std::string_view term);
    // The (term, pos) entry of a slot for a term, or nullptr; binary search (entries sorted by term).
    slot_term *find_entry(uint32_t slot, uint32_t term);
    const slot_term *find_entry(uint32_t slot, uint32_t term) const;

    bm25_settings settings_;
    std::unordered_map<std::string, uint32_t, term_hash, std::equal_to<>> term_of_;  // term -> number
    std::vector<const std::string *> term_text_;  // number -> its key in term_of_ (nodes do not move)
    std::vector<std::vector<posting>> lists_;      // number -> postings, in no order; empty = free
    std::vector<uint32_t> free_terms_;
    std::unordered_map<uint64_t, uint32_t> slot_of_;  // chunk id -> slot
    std::vector<uint64_t> slot_id_;                   // slot -> chunk id
    std::vector<uint32_t> slot_len_;                  // slot -> number of terms
    std::vector<std::vector<slot_term>> slot_terms_;  // slot -> its distinct terms, by term number
    std::vector<uint32_t> free_slots_;
    std::vector<uint32_t> add_freq_;  // scratch for add(): term number -> count, zero between calls
    uint64_t total_len_ = 0;
    mutable bool mean_idf_stale_ = true;
    mutable double mean_idf_ = 0.0;
};

} // namespace actorserve
