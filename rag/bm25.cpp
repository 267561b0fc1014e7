// BM25 (Okapi, as rank-bm25 0.2.2 scores it) over an inverted index kept up to date chunk by
// chunk. The formula and the epsilon floor are in rag/bm25.h; the reference scores are
// tests/fixtures/bm25_reference.json (scripts/gen_bm25_reference.py).
#include "rag/bm25.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace actorserve {

namespace {

bool is_term_byte(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c >= 0x80;
}

using posting = std::pair<uint64_t, uint32_t>;

bool id_less(const posting &p, uint64_t id) { return p.first < id; }

} // namespace

std::vector<std::string> bm25_terms(std::string_view text) {
    std::vector<std::string> out;
    size_t i = 0;
    while (i < text.size()) {
        if (!is_term_byte(static_cast<unsigned char>(text[i]))) {
            ++i;
            continue;
        }
        std::string term;
        for (; i < text.size() && is_term_byte(static_cast<unsigned char>(text[i])); ++i) {
            const char c = text[i];
            term += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
        }
        out.push_back(std::move(term));
    }
    return out;
}

bm25_index::bm25_index(bm25_settings s) : settings_(s) {}

bool bm25_index::add(uint64_t id, std::string_view text) {
    if (doc_len_.count(id)) return false;
    std::unordered_map<std::string, uint32_t> freq;
    uint32_t len = 0;
    for (std::string &t : bm25_terms(text)) {
        ++freq[std::move(t)];
        ++len;
    }
    std::vector<std::string> distinct;
    distinct.reserve(freq.size());
    for (auto &[term, f] : freq) {
        auto &list = postings_[term];
        // Ids usually arrive in increasing order, so this is an append.
        list.insert(std::lower_bound(list.begin(), list.end(), id, id_less), posting{id, f});
        distinct.push_back(term);
    }
    doc_len_.emplace(id, len);
    doc_terms_.emplace(id, std::move(distinct));
    total_len_ += len;
    mean_idf_stale_ = true;
    return true;
}

bool bm25_index::remove(uint64_t id) {
    auto len = doc_len_.find(id);
    if (len == doc_len_.end()) return false;
    auto terms = doc_terms_.find(id);
    assert(terms != doc_terms_.end());
    for (const std::string &term : terms->second) {
        auto list = postings_.find(term);
        assert(list != postings_.end());
        auto &v = list->second;
        auto it = std::lower_bound(v.begin(), v.end(), id, id_less);
        assert(it != v.end() && it->first == id);
        v.erase(it);
        if (v.empty()) postings_.erase(list);
    }
    total_len_ -= len->second;
    doc_len_.erase(len);
    doc_terms_.erase(terms);
    mean_idf_stale_ = true;
    return true;
}

void bm25_index::clear() {
    postings_.clear();
    doc_len_.clear();
    doc_terms_.clear();
    total_len_ = 0;
    mean_idf_stale_ = true;
    mean_idf_ = 0.0;
}

// The raw idf; negative for a term in more than half of the chunks.
static double raw_idf(size_t n_docs, size_t n_t) {
    return std::log(static_cast<double>(n_docs - n_t) + 0.5) - std::log(static_cast<double>(n_t) + 0.5);
}

// cost: O(terms of the index), once after each change (on the next search).
void bm25_index::refresh_mean_idf() const {
    if (!mean_idf_stale_) return;
    double sum = 0.0;
    for (const auto &[term, list] : postings_) sum += raw_idf(doc_len_.size(), list.size());
    // note: the mean includes the negative values, as rank-bm25 computes it.
    mean_idf_ = postings_.empty() ? 0.0 : sum / static_cast<double>(postings_.size());
    mean_idf_stale_ = false;
}

double bm25_index::idf(size_t n_t) const {
    const double v = raw_idf(doc_len_.size(), n_t);
    if (v >= 0.0) return v;
    refresh_mean_idf();
    return static_cast<double>(settings_.epsilon) * mean_idf_;
}

double bm25_index::score(uint64_t id, const std::vector<std::string> &query_terms) const {
    auto len = doc_len_.find(id);
    if (len == doc_len_.end()) return 0.0;
    const double k1 = settings_.k1, b = settings_.b;
    const double avgdl = static_cast<double>(total_len_) / static_cast<double>(doc_len_.size());
    const double norm = k1 * (1.0 - b + b * static_cast<double>(len->second) / avgdl);
    double s = 0.0;
    for (const std::string &t : query_terms) {
        auto list = postings_.find(t);
        if (list == postings_.end()) continue;
        const auto &v = list->second;
        auto it = std::lower_bound(v.begin(), v.end(), id, id_less);
        if (it == v.end() || it->first != id) continue;
        const double f = it->second;
        s += idf(v.size()) * f * (k1 + 1.0) / (f + norm);
    }
    return s;
}

std::vector<bm25_index::hit> bm25_index::search(std::string_view query, size_t k,
                                                const std::function<bool(uint64_t)> &allow) const {
    std::vector<hit> out;
    if (k == 0 || doc_len_.empty()) return out;
    // A repeated query term counts once per repeat, as in rank-bm25.
    std::unordered_map<std::string, uint32_t> query_count;
    for (std::string &t : bm25_terms(query))
        if (postings_.count(t)) ++query_count[std::move(t)];
    if (query_count.empty()) return out;

    const double k1 = settings_.k1, b = settings_.b;
    const double avgdl = static_cast<double>(total_len_) / static_cast<double>(doc_len_.size());
    std::unordered_map<uint64_t, double> scores;  // candidate chunk -> score
    for (const auto &[term, repeats] : query_count) {
        const auto &list = postings_.at(term);
        const double w = idf(list.size()) * repeats * (k1 + 1.0);
        for (const auto &[id, f] : list) {
            const double len = doc_len_.at(id);
            const double tf = f;
            scores[id] += w * tf / (tf + k1 * (1.0 - b + b * len / avgdl));
        }
    }
    out.reserve(scores.size());
    for (const auto &[id, s] : scores)
        if (!allow || allow(id)) out.push_back(hit{id, static_cast<float>(s)});
    const auto better = [](const hit &x, const hit &y) { return x.score != y.score ? x.score > y.score : x.id < y.id; };
    const size_t n = std::min(k, out.size());
    std::partial_sort(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n), out.end(), better);
    out.resize(n);
    return out;
}

} // namespace actorserve
