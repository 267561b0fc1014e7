// BM25 (Okapi, as rank-bm25 0.2.2 scores it) over an inverted index kept up to date chunk by
// chunk. The formula and the epsilon floor are in rag/bm25.h; the reference scores are
// tests/fixtures/bm25_reference.json (scripts/gen_bm25_reference.py).
#include "rag/bm25.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

namespace actorserve {

namespace {

bool is_term_byte(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c >= 0x80;
}

// Calls f(term) for each term of text, in order; term is a view of buf, valid during the call.
template <class F>
void for_each_term(std::string_view text, std::string &buf, F &&f) {
    size_t i = 0;
    while (i < text.size()) {
        if (!is_term_byte(static_cast<unsigned char>(text[i]))) {
            ++i;
            continue;
        }
        buf.clear();
        for (; i < text.size() && is_term_byte(static_cast<unsigned char>(text[i])); ++i) {
            const char c = text[i];
            buf += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
        }
        f(std::string_view(buf));
    }
}

// Per-thread scratch of search(): a score and a length normalisation per slot, and the slots
// touched so far. Grown to the largest index searched on the thread (17 bytes a slot); the touched
// entries are reset when the search ends, so each search costs only what it touches.
struct search_scratch {
    std::vector<double> acc;
    std::vector<double> norm;
    std::vector<uint8_t> seen;
    std::vector<uint32_t> touched;

    void fit(size_t slots) {
        if (acc.size() >= slots) return;
        acc.resize(slots, 0.0);
        norm.resize(slots, 0.0);
        seen.resize(slots, 0);
    }
    void reset() {
        for (uint32_t s : touched) {
            acc[s] = 0.0;
            seen[s] = 0;
        }
        touched.clear();
    }
};

// Resets the scratch however search() leaves (`allow` may throw).
struct scratch_guard {
    search_scratch &s;
    ~scratch_guard() { s.reset(); }
};

} // namespace

std::vector<std::string> bm25_terms(std::string_view text) {
    std::vector<std::string> out;
    std::string buf;
    for_each_term(text, buf, [&](std::string_view t) { out.emplace_back(t); });
    return out;
}

bm25_index::bm25_index(bm25_settings s) : settings_(s) {}

uint32_t bm25_index::intern(std::string_view term) {
    if (auto it = term_of_.find(term); it != term_of_.end()) return it->second;
    uint32_t n;
    if (!free_terms_.empty()) {
        n = free_terms_.back();
        free_terms_.pop_back();
    } else {
        assert(lists_.size() < std::numeric_limits<uint32_t>::max());
        n = static_cast<uint32_t>(lists_.size());
        lists_.emplace_back();
        term_text_.push_back(nullptr);
        add_freq_.push_back(0);
    }
    auto it = term_of_.emplace(std::string(term), n).first;
    term_text_[n] = &it->first;
    return n;
}

bm25_index::slot_term *bm25_index::find_entry(uint32_t slot, uint32_t term) {
    auto &v = slot_terms_[slot];
    auto it = std::lower_bound(v.begin(), v.end(), term, [](const slot_term &e, uint32_t t) { return e.term < t; });
    return it != v.end() && it->term == term ? &*it : nullptr;
}

const bm25_index::slot_term *bm25_index::find_entry(uint32_t slot, uint32_t term) const {
    return const_cast<bm25_index *>(this)->find_entry(slot, term);
}

bool bm25_index::add(uint64_t id, std::string_view text) {
    if (slot_of_.count(id)) return false;
    // Count each term's occurrences in add_freq_ (zero for every term between calls).
    std::vector<slot_term> distinct;
    uint32_t len = 0;
    std::string buf;
    for_each_term(text, buf, [&](std::string_view t) {
        const uint32_t n = intern(t);
        if (add_freq_[n]++ == 0) distinct.push_back(slot_term{n, 0});
        ++len;
    });

    uint32_t slot;
    if (!free_slots_.empty()) {
        slot = free_slots_.back();
        free_slots_.pop_back();
    } else {
        assert(slot_id_.size() < std::numeric_limits<uint32_t>::max());
        slot = static_cast<uint32_t>(slot_id_.size());
        slot_id_.push_back(0);
        slot_len_.push_back(0);
        slot_terms_.emplace_back();
    }
    std::sort(distinct.begin(), distinct.end(), [](const slot_term &x, const slot_term &y) { return x.term < y.term; });
    for (slot_term &e : distinct) {
        auto &list = lists_[e.term];
        e.pos = static_cast<uint32_t>(list.size());
        list.push_back(posting{slot, add_freq_[e.term]});
        add_freq_[e.term] = 0;
    }
    distinct.shrink_to_fit();
    slot_terms_[slot] = std::move(distinct);
    slot_id_[slot] = id;
    slot_len_[slot] = len;
    slot_of_.emplace(id, slot);
    total_len_ += len;
    mean_idf_stale_ = true;
    return true;
}

bool bm25_index::remove(uint64_t id) {
    auto at = slot_of_.find(id);
    if (at == slot_of_.end()) return false;
    const uint32_t slot = at->second;
    for (const slot_term &e : slot_terms_[slot]) {
        auto &list = lists_[e.term];
        assert(e.pos < list.size() && list[e.pos].slot == slot);
        // Move the last posting into the hole and tell its slot where it went.
        const posting last = list.back();
        if (last.slot != slot) {
            list[e.pos] = last;
            slot_term *moved = find_entry(last.slot, e.term);
            assert(moved != nullptr);
            moved->pos = e.pos;
        }
        list.pop_back();
        if (list.empty()) {
            std::vector<posting>().swap(list);
            term_of_.erase(term_of_.find(std::string_view(*term_text_[e.term])));
            term_text_[e.term] = nullptr;
            free_terms_.push_back(e.term);
        }
    }
    std::vector<slot_term>().swap(slot_terms_[slot]);
    total_len_ -= slot_len_[slot];
    slot_len_[slot] = 0;
    free_slots_.push_back(slot);
    slot_of_.erase(at);
    mean_idf_stale_ = true;
    return true;
}

void bm25_index::clear() {
    term_of_.clear();
    term_text_.clear();
    lists_.clear();
    free_terms_.clear();
    slot_of_.clear();
    slot_id_.clear();
    slot_len_.clear();
    slot_terms_.clear();
    free_slots_.clear();
    add_freq_.clear();
    total_len_ = 0;
    mean_idf_stale_ = true;
    mean_idf_ = 0.0;
}

// The raw idf; negative for a term in more than half of the chunks.
static double raw_idf(size_t n_docs, size_t n_t) {
    return std::log(static_cast<double>(n_docs - n_t) + 0.5) - std::log(static_cast<double>(n_t) + 0.5);
}

// cost: O(terms of the index), once after each change (on the next search that needs it).
void bm25_index::refresh_mean_idf() const {
    if (!mean_idf_stale_) return;
    double sum = 0.0;
    for (const auto &list : lists_)
        if (!list.empty()) sum += raw_idf(size(), list.size());
    // note: the mean includes the negative values, as rank-bm25 computes it.
    mean_idf_ = term_of_.empty() ? 0.0 : sum / static_cast<double>(term_of_.size());
    mean_idf_stale_ = false;
}

double bm25_index::idf(size_t n_t) const {
    const double v = raw_idf(size(), n_t);
    if (v >= 0.0) return v;
    refresh_mean_idf();
    return static_cast<double>(settings_.epsilon) * mean_idf_;
}

double bm25_index::score(uint64_t id, const std::vector<std::string> &query_terms) const {
    auto at = slot_of_.find(id);
    if (at == slot_of_.end()) return 0.0;
    const uint32_t slot = at->second;
    const double k1 = settings_.k1, b = settings_.b;
    const double avgdl = static_cast<double>(total_len_) / static_cast<double>(size());
    const double norm = k1 * (1.0 - b + b * static_cast<double>(slot_len_[slot]) / avgdl);
    double s = 0.0;
    for (const std::string &t : query_terms) {
        auto term = term_of_.find(std::string_view(t));
        if (term == term_of_.end()) continue;
        const slot_term *e = find_entry(slot, term->second);
        if (e == nullptr) continue;
        const auto &list = lists_[term->second];
        const double f = list[e->pos].freq;
        s += idf(list.size()) * f * (k1 + 1.0) / (f + norm);
    }
    return s;
}

std::vector<bm25_index::hit> bm25_index::search(std::string_view query, size_t k,
                                                const std::function<bool(uint64_t)> &allow) const {
    std::vector<hit> out;
    if (k == 0 || size() == 0) return out;
    // The query's indexed terms in order of first appearance, each with its repeats (a repeated
    // term counts once per repeat, as in rank-bm25).
    std::vector<std::pair<uint32_t, uint32_t>> query_terms;
    std::string buf;
    for_each_term(query, buf, [&](std::string_view t) {
        auto term = term_of_.find(t);
        if (term == term_of_.end()) return;
        for (auto &[n, repeats] : query_terms)
            if (n == term->second) {
                ++repeats;
                return;
            }
        query_terms.emplace_back(term->second, 1);
    });
    if (query_terms.empty()) return out;

    thread_local search_scratch scratch;
    scratch.fit(slot_id_.size());
    scratch_guard guard{scratch};
    double *acc = scratch.acc.data(), *norm = scratch.norm.data();
    uint8_t *seen = scratch.seen.data();
    const double k1 = settings_.k1, b = settings_.b;
    const double avgdl = static_cast<double>(total_len_) / static_cast<double>(size());
    for (const auto &[n, repeats] : query_terms) {
        const auto &list = lists_[n];
        const double w = idf(list.size()) * repeats * (k1 + 1.0);
        for (const posting &p : list) {
            if (!seen[p.slot]) {
                seen[p.slot] = 1;
                scratch.touched.push_back(p.slot);
                norm[p.slot] = k1 * (1.0 - b + b * static_cast<double>(slot_len_[p.slot]) / avgdl);
            }
            const double tf = p.freq;
            acc[p.slot] += w * tf / (tf + norm[p.slot]);
        }
    }

    // The k best under `better`, kept as a heap whose top is the worst of them; `allow` is asked
    // only about a chunk that would enter it.
    const auto better = [](const hit &x, const hit &y) { return x.score != y.score ? x.score > y.score : x.id < y.id; };
    out.reserve(std::min(k, scratch.touched.size()));
    for (uint32_t s : scratch.touched) {
        const hit h{slot_id_[s], static_cast<float>(acc[s])};
        if (out.size() == k && !better(h, out.front())) continue;
        if (allow && !allow(h.id)) continue;
        if (out.size() == k) {
            std::pop_heap(out.begin(), out.end(), better);
            out.back() = h;
        } else {
            out.push_back(h);
        }
        std::push_heap(out.begin(), out.end(), better);
    }
    std::sort_heap(out.begin(), out.end(), better);
    return out;
}

} // namespace actorserve
