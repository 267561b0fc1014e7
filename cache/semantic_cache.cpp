#include "cache/semantic_cache.h"
#include "store/hash.h"
#include "cache/vector_scan.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>

#include <faiss/IndexHNSW.h>
#include <faiss/IndexIDMap.h>
#include <faiss/IndexScalarQuantizer.h>
#include <faiss/impl/FaissException.h>
#include <faiss/impl/IDSelector.h>

namespace actorserve {

using idx_t = faiss::Index::idx_t;   // FAISS 1.7 spells it inside Index

struct semantic_cache::scope_index {
    std::string key;
    std::unique_ptr<faiss::IndexIDMap2> index;   // labels are entry ids
    faiss::IndexHNSWFlat *hnsw = nullptr;        // the inner index when HNSW (owned by `index`)
    faiss::IndexScalarQuantizer *flat = nullptr; // the inner index when flat: halves, in the
                                                 // order of index->id_map (owned by `index`)
    std::unordered_set<uint64_t> live;           // ids of this scope's entries
    size_t tombstones = 0;                       // HNSW only: vectors of evicted ids still in the graph
};

std::string semantic_scope(std::string_view model, std::string_view system_prompt, const generation_params &p) {
    const std::string sys = normalise_whitespace(system_prompt);
    return std::to_string(model.size()) + ":" + std::string(model) + "\x1f" + std::to_string(sys.size()) + ":" + sys +
           "\x1f" + canonical_params(p);
}

std::string semantic_scope_id(std::string_view model, std::string_view system_prompt) {
    const std::string sys = normalise_whitespace(system_prompt);
    const uint64_t h = siphash64(std::to_string(model.size()) + ":" + std::string(model) + "\x1f" + sys);
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

namespace {

std::unique_ptr<faiss::IndexIDMap2> make_index(const semantic_settings &s, faiss::IndexHNSWFlat *&hnsw,
                                               faiss::IndexScalarQuantizer *&flat) {
    faiss::Index *inner = nullptr;
    hnsw = nullptr;
    flat = nullptr;
    if (s.index == semantic_index_kind::hnsw) {
        hnsw = new faiss::IndexHNSWFlat(s.dim, s.hnsw_m, faiss::METRIC_INNER_PRODUCT);
        hnsw->hnsw.efConstruction = s.hnsw_ef_construction;
        hnsw->hnsw.efSearch = s.hnsw_ef_search;
        inner = hnsw;
    } else {
        flat = new faiss::IndexScalarQuantizer(s.dim, faiss::ScalarQuantizer::QT_fp16, faiss::METRIC_INNER_PRODUCT);
        inner = flat;
    }
    auto map = std::make_unique<faiss::IndexIDMap2>(inner);
    map->own_fields = true;
    return map;
}

} // namespace

semantic_cache::semantic_cache(semantic_settings s, cache_clock clock) : settings_(s), clock_(std::move(clock)) {
    if (!clock_) clock_ = system_clock_ms;
    assert(settings_.dim > 0 && settings_.top_k > 0);
    if (settings_.guard && !settings_.lexicon) {
        settings_.lexicon = wordnet::system(&lexicon_note_);
        if (!settings_.lexicon) lexicon_note_ += "; the near-miss guard runs without its antonym check";
    }
}

semantic_cache::~semantic_cache() = default;

size_t semantic_cache::entry_bytes(const entry &e) const {
    // The vector is held twice: in the entry (for rescoring, rebuilds and the file) as floats,
    // and in the index, as halves (flat) or floats (HNSW).
    const size_t index_bytes = settings_.index == semantic_index_kind::hnsw ? sizeof(float) : sizeof(uint16_t);
    size_t b = e.question.size() + e.answer.text.size() + e.answer.finish_reason.size() +
               e.vec.size() * (sizeof(float) + index_bytes) + kEntryOverhead;
    if (settings_.index == semantic_index_kind::hnsw) b += size_t(settings_.hnsw_m) * 2 * sizeof(int32_t);   // level-0 links
    return b;
}

std::string semantic_cache::check_vector(std::span<const float> vec, std::vector<float> &unit) const {
    if (vec.size() != static_cast<size_t>(settings_.dim))
        return "vector has " + std::to_string(vec.size()) + " dimensions, the cache uses " + std::to_string(settings_.dim);
    double norm2 = 0.0;
    for (float x : vec) {
        if (!std::isfinite(x)) return "vector has a non-finite component";
        norm2 += double(x) * double(x);
    }
    if (norm2 <= 1e-24) return "vector has zero length";
    const float inv = static_cast<float>(1.0 / std::sqrt(norm2));
    unit.resize(vec.size());
    for (size_t i = 0; i < vec.size(); ++i) unit[i] = vec[i] * inv;
    return {};
}

semantic_cache::scope_index &semantic_cache::scope_for(const std::string &scope) {
    auto &slot = scopes_[scope];
    if (!slot) {
        slot = std::make_unique<scope_index>();
        slot->key = scope;
        slot->index = make_index(settings_, slot->hnsw, slot->flat);
        stats_.scopes = scopes_.size();
    }
    return *slot;
}

bool semantic_cache::add_to_index(scope_index &s, uint64_t id, const float *unit, std::string &err) {
    try {
        const idx_t label = static_cast<idx_t>(id);
        s.index->add_with_ids(1, unit, &label);
        return true;
    } catch (const faiss::FaissException &e) {
        err = std::string("faiss add failed: ") + e.what();
        return false;
    }
}

size_t semantic_cache::index_ntotal() const {
    size_t n = 0;
    for (const auto &[k, s] : scopes_) n += static_cast<size_t>(s->index->ntotal);
    return n;
}

void semantic_cache::drop(uint64_t id) {
    auto it = entries_.find(id);
    assert(it != entries_.end());
    entry &e = it->second;
    scope_index &s = *e.scope;
    s.live.erase(id);
    if (s.hnsw) {
        s.tombstones += 1;
    } else {
        const idx_t label = static_cast<idx_t>(id);
        const size_t removed = s.index->remove_ids(faiss::IDSelectorArray(1, &label));
        assert(removed == 1);
        (void)removed;
    }
    by_question_.erase(s.key + '\x1f' + e.question);
    stats_.bytes -= e.bytes;
    policy_.erase(id);
    entries_.erase(it);
    stats_.entries = entries_.size();
    if (s.live.empty()) {
        const std::string key = s.key;
        scopes_.erase(key);   // note: frees the index with its tombstones; `s` dangles from here
        stats_.scopes = scopes_.size();
    } else {
        maybe_rebuild(s);
    }
}

void semantic_cache::maybe_rebuild(scope_index &s) {
    if (!s.hnsw) return;
    const size_t limit = std::max(settings_.hnsw_rebuild_min, static_cast<size_t>(double(s.live.size()) * settings_.hnsw_rebuild_fraction));
    if (s.tombstones <= limit) return;
    faiss::IndexHNSWFlat *hnsw = nullptr;
    faiss::IndexScalarQuantizer *flat = nullptr;
    auto fresh = make_index(settings_, hnsw, flat);
    // Ids in increasing order, so a rebuild is deterministic.
    std::vector<uint64_t> ids(s.live.begin(), s.live.end());
    std::sort(ids.begin(), ids.end());
    std::vector<float> xs(ids.size() * size_t(settings_.dim));   // (n, dim)
    std::vector<idx_t> labels(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
        const entry &e = entries_.at(ids[i]);
        std::copy(e.vec.begin(), e.vec.end(), xs.begin() + static_cast<std::ptrdiff_t>(i * size_t(settings_.dim)));
        labels[i] = static_cast<idx_t>(ids[i]);
    }
    try {
        fresh->add_with_ids(static_cast<idx_t>(ids.size()), xs.data(), labels.data());
    } catch (const faiss::FaissException &) {
        return;   // keep the old index: still correct, only slower
    }
    s.index = std::move(fresh);
    s.hnsw = hnsw;
    s.tombstones = 0;
    stats_.rebuilds += 1;
}

size_t semantic_cache::purge_expired_at(int64_t now) {
    size_t n = 0;
    while (auto id = policy_.first_expired(now)) {
        drop(*id);
        n += 1;
    }
    stats_.evictions_ttl += n;
    return n;
}

size_t semantic_cache::purge_expired() { return purge_expired_at(clock_()); }

bool semantic_cache::evict_one_for_space(int64_t now) {
    if (auto id = policy_.first_expired(now)) {
        drop(*id);
        stats_.evictions_ttl += 1;
        return true;
    }
    if (auto id = policy_.victim()) {
        drop(*id);
        stats_.evictions_lfu += 1;
        return true;
    }
    return false;
}

// The flat index: every half of the scope scored (cache/vector_scan.h), then the candidates that
// can reach the threshold rescored in fp32 from the entries' own vectors, so that what is compared
// with the threshold and ranked is the exact cosine. Candidates: those whose half score is within
// kHalfScoreSlack of the threshold (at most max(64, 16 top_k) of them, the best by half score:
// a bound for a scope full of near duplicates), and the best one in any case, for best_similarity.
std::vector<std::pair<float, uint64_t>> semantic_cache::scan_flat(const scope_index &s, const std::vector<float> &unit) {
    const size_t n = static_cast<size_t>(s.index->ntotal);
    std::vector<std::pair<float, uint64_t>> ranked;
    if (n == 0) return ranked;
    scores_.resize(n);
    half_scores(unit.data(), reinterpret_cast<const uint16_t *>(s.flat->codes.data()), n, settings_.dim, scores_.data());
    const size_t max_rescored = std::max<size_t>(64, 16 * size_t(std::max(1, settings_.top_k)));
    const float floor = settings_.threshold - kHalfScoreSlack;
    std::vector<std::pair<float, size_t>> picked;     // (half score, position)
    size_t best = 0;
    for (size_t i = 0; i < n; ++i) {
        if (scores_[i] > scores_[best]) best = i;
        if (scores_[i] >= floor) picked.emplace_back(scores_[i], i);
    }
    if (picked.size() > max_rescored) {
        std::nth_element(picked.begin(), picked.begin() + static_cast<std::ptrdiff_t>(max_rescored), picked.end(),
                         [](const auto &a, const auto &b) { return a.first > b.first; });
        picked.resize(max_rescored);
    }
    if (picked.empty()) picked.emplace_back(scores_[best], best);
    for (const auto &[half, pos] : picked) {
        const uint64_t id = static_cast<uint64_t>(s.index->id_map[pos]);
        const std::vector<float> &v = entries_.at(id).vec;
        float dot = 0.0f;
        for (int j = 0; j < settings_.dim; ++j) dot += unit[size_t(j)] * v[size_t(j)];
        ranked.emplace_back(dot, id);
    }
    std::sort(ranked.begin(), ranked.end(), [](const auto &a, const auto &b) {
        return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    return ranked;
}

semantic_lookup semantic_cache::lookup(const std::string &scope, std::span<const float> vec, std::string_view question) {
    semantic_lookup out;
    std::vector<float> unit;
    if (std::string err = check_vector(vec, unit); !err.empty()) {
        out.error = err;
        return out;
    }
    stats_.lookups += 1;
    purge_expired_at(clock_());
    auto sit = scopes_.find(scope);
    if (sit == scopes_.end()) {
        stats_.misses += 1;
        return out;
    }
    scope_index &s = *sit->second;
    std::vector<std::pair<float, uint64_t>> ranked;   // (cosine, entry id), best first
    if (s.flat) {
        ranked = scan_flat(s, unit);
    } else {
        const size_t k = std::min<size_t>(size_t(settings_.top_k) + s.tombstones, static_cast<size_t>(s.index->ntotal));
        std::vector<float> sims(k);                 // (k,) inner products, best first
        std::vector<idx_t> labels(k);               // (k,) entry ids; -1 past the results
        try {
            s.hnsw->hnsw.efSearch = std::max(settings_.hnsw_ef_search, static_cast<int>(k));
            s.index->search(1, unit.data(), static_cast<idx_t>(k), sims.data(), labels.data());
        } catch (const faiss::FaissException &e) {
            out.error = std::string("faiss search failed: ") + e.what();
            stats_.misses += 1;
            return out;
        }
        for (size_t i = 0; i < k && labels[i] >= 0; ++i) ranked.emplace_back(sims[i], static_cast<uint64_t>(labels[i]));
    }
    int offered = 0;
    for (size_t i = 0; i < ranked.size() && offered < settings_.top_k; ++i) {
        const auto [sim, id] = ranked[i];
        auto eit = entries_.find(id);
        if (eit == entries_.end() || eit->second.scope != &s) continue;   // HNSW tombstone
        if (out.best_similarity < -1.5f) out.best_similarity = sim;
        if (sim < settings_.threshold) break;
        offered += 1;
        out.above_threshold += 1;
        if (settings_.guard) {
            near_miss_verdict v = check_near_miss(question, eit->second.question, settings_.lexicon.get());
            if (v.rejected()) {
                stats_.guard_rejections += 1;
                if (!out.rejected.rejected()) out.rejected = std::move(v);
                continue;
            }
        }
        policy_.touch(id);
        out.hit = semantic_hit{id, sim, eit->second.question, eit->second.answer};
        break;
    }
    if (out.hit) stats_.hits += 1;
    else stats_.misses += 1;
    return out;
}

semantic_cache::insert_result semantic_cache::place(const std::string &scope, uint64_t id, std::vector<float> unit,
                                                    std::string question, cached_answer answer, int64_t expires,
                                                    uint64_t freq) {
    insert_result res;
    entry e;
    e.id = id;
    e.question = std::move(question);
    e.answer = std::move(answer);
    e.vec = std::move(unit);
    e.bytes = entry_bytes(e);
    if (e.bytes > settings_.limits.max_bytes || settings_.limits.max_entries == 0) {
        res.status = insert_status::too_large;
        res.error = "entry of " + std::to_string(e.bytes) + " bytes exceeds the cache's " +
                    std::to_string(settings_.limits.max_bytes);
        return res;
    }
    const int64_t now = clock_();
    while ((entries_.size() + 1 > settings_.limits.max_entries || stats_.bytes + e.bytes > settings_.limits.max_bytes) &&
           evict_one_for_space(now)) {}
    scope_index &s = scope_for(scope);   // after eviction, which may drop an emptied scope
    if (!add_to_index(s, id, e.vec.data(), res.error)) {
        if (s.live.empty()) scopes_.erase(scope);
        stats_.scopes = scopes_.size();
        res.status = insert_status::invalid;
        return res;
    }
    e.scope = &s;
    s.live.insert(id);
    by_question_[scope + '\x1f' + e.question] = id;
    stats_.bytes += e.bytes;
    policy_.insert(id, expires, freq);
    entries_.emplace(id, std::move(e));
    stats_.entries = entries_.size();
    res.status = insert_status::stored;
    res.id = id;
    return res;
}

semantic_cache::insert_result semantic_cache::insert(const std::string &scope, std::span<const float> vec,
                                                     std::string question, cached_answer answer) {
    insert_result res;
    std::vector<float> unit;
    if (std::string err = check_vector(vec, unit); !err.empty()) {
        res.error = err;
        return res;
    }
    const int64_t now = clock_();
    purge_expired_at(now);
    uint64_t freq = 1;
    bool replaced = false;
    if (auto it = by_question_.find(scope + '\x1f' + question); it != by_question_.end()) {
        // Same question in the same scope: a new answer under a new id; the use count carries over.
        freq = policy_.find(it->second)->freq + 1;
        drop(it->second);
        replaced = true;
    }
    res = place(scope, next_id_++, std::move(unit), std::move(question), std::move(answer),
                expiry_after(now, settings_.limits.ttl_ms), freq);
    if (res.status == insert_status::stored) {
        stats_.inserts += 1;
        if (replaced) res.status = insert_status::replaced;
    }
    return res;
}

bool semantic_cache::erase(uint64_t id) {
    if (!entries_.count(id)) return false;
    drop(id);
    return true;
}

void semantic_cache::clear() {
    entries_.clear();
    scopes_.clear();
    by_question_.clear();
    policy_.clear();
    stats_.entries = stats_.bytes = stats_.scopes = 0;
}

// Payload: u32 dim, u64 next_id, u64 scope count, per scope: str key;
// u64 entry count, per entry in least-recent-use order:
//   u64 id, u64 scope number, str question, str text, str finish_reason, i64 completion_tokens,
//   u64 freq, i64 expires_ms, dim x f32 vector
bool semantic_cache::save(const std::string &path, std::string &err) const {
    byte_writer w;
    w.u32(static_cast<uint32_t>(settings_.dim));
    w.u64(next_id_);
    std::unordered_map<const scope_index *, uint64_t> scope_no;
    std::vector<const scope_index *> order;
    for (const auto &[k, s] : scopes_) order.push_back(s.get());
    std::sort(order.begin(), order.end(), [](auto *a, auto *b) { return a->key < b->key; });
    w.u64(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
        scope_no[order[i]] = i;
        w.str(order[i]->key);
    }
    std::vector<std::pair<uint64_t, uint64_t>> by_tick;
    for (const auto &[id, e] : entries_) by_tick.emplace_back(policy_.find(id)->tick, id);
    std::sort(by_tick.begin(), by_tick.end());
    w.u64(by_tick.size());
    for (auto [tick, id] : by_tick) {
        const entry &e = entries_.at(id);
        const lfu_ttl::meta *m = policy_.find(id);
        w.u64(id);
        w.u64(scope_no.at(e.scope));
        w.str(e.question);
        w.str(e.answer.text);
        w.str(e.answer.finish_reason);
        w.i64(e.answer.completion_tokens);
        w.u64(m->freq);
        w.i64(m->expires_ms);
        for (float x : e.vec) w.f32(x);
    }
    return write_cache_file(path, cache_file_kind::semantic, w.bytes(), err);
}

cache_load_report semantic_cache::load(const std::string &path) {
    clear();
    std::string payload;
    cache_load_report report = read_cache_file(path, cache_file_kind::semantic, payload);
    if (report.result != cache_load_report::outcome::loaded) return report;

    byte_reader r(payload);
    uint32_t dim = 0;
    uint64_t next_id = 0, n_scopes = 0, n = 0;
    r.u32(dim);
    r.u64(next_id);
    r.u64(n_scopes);
    if (r.ok() && dim != static_cast<uint32_t>(settings_.dim))
        r.fail("vectors have " + std::to_string(dim) + " dimensions, the cache uses " + std::to_string(settings_.dim));
    if (r.ok() && n_scopes > payload.size() / 8) r.fail("scope count " + std::to_string(n_scopes) + " cannot fit the payload");
    std::vector<std::string> scope_keys;
    for (uint64_t i = 0; r.ok() && i < n_scopes; ++i) {
        std::string k;
        if (r.str(k)) scope_keys.push_back(std::move(k));
    }
    r.u64(n);
    if (r.ok() && n > payload.size() / (8 * 6 + 4 * size_t(dim))) r.fail("entry count " + std::to_string(n) + " cannot fit the payload");
    const int64_t now = clock_();
    uint64_t max_id = 0;
    std::vector<float> raw(r.ok() ? dim : 0);   // (dim,); dim is the cache's own once checked
    for (uint64_t i = 0; r.ok() && i < n; ++i) {
        uint64_t id = 0, scope_no = 0, freq = 0;
        int64_t tokens = 0, expires = 0;
        std::string question;
        cached_answer answer;
        r.u64(id);
        r.u64(scope_no);
        r.str(question);
        r.str(answer.text);
        r.str(answer.finish_reason);
        r.i64(tokens);
        r.u64(freq);
        r.i64(expires);
        for (uint32_t d = 0; d < dim; ++d) r.f32(raw[d]);
        if (!r.ok()) break;
        if (scope_no >= scope_keys.size()) r.fail("entry " + std::to_string(i) + " names scope " + std::to_string(scope_no));
        else if (id == 0 || id >= next_id || entries_.count(id)) r.fail("entry " + std::to_string(i) + " has a bad or repeated id");
        else if (freq == 0) r.fail("entry " + std::to_string(i) + " has use count 0");
        if (!r.ok()) break;
        std::vector<float> unit;
        if (std::string err = check_vector(raw, unit); !err.empty()) {
            r.fail("entry " + std::to_string(i) + ": " + err);
            break;
        }
        max_id = std::max(max_id, id);
        if (now >= expires) {
            report.expired += 1;
            continue;
        }
        answer.completion_tokens = static_cast<int>(tokens);
        const std::string key = scope_keys[scope_no] + '\x1f' + question;
        if (by_question_.count(key)) {
            r.fail("entry " + std::to_string(i) + " repeats a question in its scope");
            break;
        }
        insert_result res = place(scope_keys[scope_no], id, std::move(unit), std::move(question), std::move(answer), expires, freq);
        if (res.status != insert_status::stored && res.status != insert_status::too_large) {
            r.fail("entry " + std::to_string(i) + ": " + res.error);
            break;
        }
    }
    if (r.ok() && !r.at_end()) r.fail("bytes after the last entry");
    if (!r.ok()) {
        clear();
        set_aside_corrupt(path, r.error(), report);
        return report;
    }
    next_id_ = std::max(next_id, max_id + 1);
    report.entries = entries_.size();
    report.message = path + ": loaded " + std::to_string(report.entries) + " entries (" +
                     std::to_string(report.expired) + " expired dropped)";
    return report;
}

} // namespace actorserve
