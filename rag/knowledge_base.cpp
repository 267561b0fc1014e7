#include "rag/knowledge_base.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <functional>

#include <faiss/impl/AuxIndexStructures.h>
#include <faiss/impl/FaissException.h>
#include <faiss/impl/IDSelector.h>

#include "rag/fusion.h"
#include "rag/kb_store.h"

namespace actorserve {
namespace {

// FAISS 1.7.3's IndexIDMap refuses search parameters, so a filtered dense search runs on the
// inner flat index, whose labels are positions; this selector maps a position to its chunk id
// and asks the filter. note: FAISS calls it for every stored vector (O(n) per filtered search).
struct position_selector : faiss::IDSelector {
    const std::vector<faiss_idx> *id_map = nullptr;
    const std::function<bool(uint64_t)> *allow = nullptr;
    bool is_member(faiss_idx pos) const override { return (*allow)(static_cast<uint64_t>((*id_map)[pos])); }
};

bool contains(const std::vector<std::string> &v, const std::string &s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

bool doc_passes(const doc_metadata &m, const search_filters &f) {
    if (!f.sources.empty() && !contains(f.sources, m.source)) return false;
    if (!f.tags.empty() && std::none_of(m.tags.begin(), m.tags.end(), [&](const std::string &t) { return contains(f.tags, t); }))
        return false;
    if ((f.since || f.until) && m.timestamp == 0) return false;
    if (f.since && m.timestamp < *f.since) return false;
    if (f.until && m.timestamp > *f.until) return false;
    return true;
}

bool blank(const std::string &s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; });
}

} // namespace

std::string unit_vector(std::vector<float> &v, int dim) {
    if (v.size() != static_cast<size_t>(dim))
        return "vector has " + std::to_string(v.size()) + " dimensions, the knowledge base uses " + std::to_string(dim);
    double norm2 = 0.0;
    for (float x : v) {
        if (!std::isfinite(x)) return "vector has a non-finite component";
        norm2 += double(x) * double(x);
    }
    if (norm2 <= 1e-24) return "vector has zero length";
    const double inv = 1.0 / std::sqrt(norm2);
    for (float &x : v) x = static_cast<float>(double(x) * inv);
    return {};
}

size_t chunk_bytes(const text_chunk &c, int dim) {
    return c.text.size() + c.heading.size() + size_t(dim) * sizeof(float) + kChunkOverhead;
}

size_t doc_meta_bytes(const std::string &id, const doc_metadata &m) {
    size_t b = id.size() + m.source.size() + m.title.size();
    for (const auto &t : m.tags) b += t.size();
    return b;
}

knowledge_base::impl::impl(const rag_settings &s) : dim(s.dim), bm25(s.bm25) {
    flat = new faiss::IndexFlatIP(dim);
    dense = std::make_unique<faiss::IndexIDMap2>(flat);
    dense->own_fields = true;
}

bool knowledge_base::impl::insert_chunks(std::vector<pending_chunk> &in, std::string &err) {
    std::vector<float> xs(in.size() * size_t(dim));   // (n, dim)
    std::vector<faiss_idx> labels(in.size());         // (n,)
    for (size_t i = 0; i < in.size(); ++i) {
        assert(in[i].vec.size() == size_t(dim));
        std::copy(in[i].vec.begin(), in[i].vec.end(), xs.begin() + static_cast<std::ptrdiff_t>(i * size_t(dim)));
        std::vector<float>().swap(in[i].vec);   // at load, all vectors at once: hold them twice, not three times
        labels[i] = static_cast<faiss_idx>(in[i].id);
    }
    try {
        dense->add_with_ids(static_cast<faiss_idx>(in.size()), xs.data(), labels.data());
    } catch (const faiss::FaissException &e) {
        err = std::string("faiss add failed: ") + e.what();
        return false;
    }
    for (pending_chunk &p : in) {
        const bool fresh = bm25.add(p.id, indexed_text(p.doc->meta, p.chunk));
        assert(fresh);
        (void)fresh;
        p.doc->bytes += chunk_bytes(p.chunk, dim);
        chunks.emplace(p.id, chunk_rec{p.doc, p.index, std::move(p.chunk)});
    }
    return true;
}

void knowledge_base::impl::erase_chunks(doc_rec &doc) {
    std::vector<faiss_idx> labels;
    labels.reserve(doc.chunk_ids.size());
    for (uint64_t id : doc.chunk_ids) {
        const bool had = bm25.remove(id);
        assert(had);
        (void)had;
        const size_t n = chunks.erase(id);
        assert(n == 1);
        (void)n;
        labels.push_back(static_cast<faiss_idx>(id));
    }
    const faiss::IDSelectorBatch sel(static_cast<size_t>(labels.size()), labels.data());
    const size_t removed = dense->remove_ids(sel);
    assert(removed == labels.size());
    (void)removed;
    doc.chunk_ids.clear();
}

const float *knowledge_base::impl::vector_of(uint64_t chunk_id) const {
    auto it = dense->rev_map.find(static_cast<faiss_idx>(chunk_id));
    assert(it != dense->rev_map.end());
    return flat->get_xb() + size_t(it->second) * size_t(dim);
}

std::string indexed_text(const doc_metadata &meta, const text_chunk &c) {
    std::string s;
    s.reserve(meta.title.size() + c.heading.size() + c.text.size() + 2);
    if (!meta.title.empty()) {
        s += meta.title;
        s += '\n';
    }
    if (!c.heading.empty()) {
        s += c.heading;
        s += '\n';
    }
    s += c.text;
    return s;
}

knowledge_base::knowledge_base(rag_settings s) : settings_(std::move(s)), impl_(std::make_unique<impl>(settings_)) {
    assert(settings_.dim > 0);
}

knowledge_base::~knowledge_base() = default;

bool knowledge_base::needs_update(const std::string &doc_id, uint64_t content_hash) const {
    auto it = impl_->docs.find(doc_id);
    return it == impl_->docs.end() || it->second.content_hash != content_hash;
}

commit_result knowledge_base::commit(prepared_document doc) {
    commit_result res;
    impl &s = *impl_;
    const std::string &id = doc.doc.id;
    auto reject = [&](std::string why) {
        res.result = commit_result::status::rejected;
        res.error = id.empty() ? why : id + ": " + why;
        return res;
    };
    if (id.empty()) return reject("id is empty");
    auto old = s.docs.find(id);
    if (old != s.docs.end() && old->second.content_hash == doc.content_hash) {
        res.result = commit_result::status::unchanged;
        return res;
    }
    if (doc.chunks.empty()) return reject("no text to index");
    for (size_t i = 0; i < doc.chunks.size(); ++i)
        if (std::string e = unit_vector(doc.chunks[i].vec, settings_.dim); !e.empty())
            return reject("chunk " + std::to_string(i) + ": " + e);
    if (old == s.docs.end() && s.docs.size() >= settings_.max_documents)
        return reject("the knowledge base holds " + std::to_string(s.docs.size()) + " documents, the limit (max_documents)");
    const size_t removing = old == s.docs.end() ? 0 : old->second.chunk_ids.size();
    if (s.chunks.size() - removing + doc.chunks.size() > settings_.max_chunks)
        return reject(std::to_string(doc.chunks.size()) + " chunks would take the knowledge base to " +
                      std::to_string(s.chunks.size() - removing + doc.chunks.size()) + ", over max_chunks " +
                      std::to_string(settings_.max_chunks));

    impl::doc_rec fresh;
    fresh.id = id;
    fresh.meta = doc.doc.meta;
    fresh.content_hash = doc.content_hash;
    fresh.bytes = doc_meta_bytes(id, fresh.meta);
    if (old != s.docs.end()) {
        // Replacement: the old chunks go first, so the limits above hold throughout.
        s.bytes -= old->second.bytes;
        s.erase_chunks(old->second);
        s.docs.erase(old);
        res.chunks_removed = removing;
        res.result = commit_result::status::replaced;
    } else {
        res.result = commit_result::status::added;
    }
    impl::doc_rec &d = s.docs.emplace(id, std::move(fresh)).first->second;
    // Fresh ids, increasing; a FAISS failure below burns them (ids are never reused).
    std::vector<impl::pending_chunk> pending(doc.chunks.size());
    for (size_t i = 0; i < pending.size(); ++i) {
        pending[i] = {&d, static_cast<uint32_t>(i), s.next_id++, std::move(doc.chunks[i].chunk), std::move(doc.chunks[i].vec)};
        d.chunk_ids.push_back(pending[i].id);
    }
    std::string err;
    if (!s.insert_chunks(pending, err)) {
        s.docs.erase(id);   // note: a replaced document's old chunks are already gone
        impl_->refresh_stats();
        return reject(err);
    }
    s.bytes += d.bytes;
    res.chunks_added = pending.size();
    impl_->stats.commits += 1;
    impl_->refresh_stats();
    return res;
}

bool knowledge_base::remove(const std::string &doc_id) {
    impl &s = *impl_;
    auto it = s.docs.find(doc_id);
    if (it == s.docs.end()) return false;
    s.bytes -= it->second.bytes;
    s.erase_chunks(it->second);
    s.docs.erase(it);
    impl_->stats.deletes += 1;
    impl_->refresh_stats();
    return true;
}

void knowledge_base::clear() {
    const kb_stats counters = impl_->stats;   // searches, commits and deletes outlive the contents
    impl_ = std::make_unique<impl>(settings_);
    impl_->stats = counters;
    impl_->refresh_stats();
}

void knowledge_base::impl::refresh_stats() {
    stats.documents = docs.size();
    stats.chunks = chunks.size();
    stats.terms = bm25.terms();
    stats.bytes = bytes;
}

bool knowledge_base::search(const search_request &req, const std::vector<float> &query_vec, std::vector<passage> &out,
                            std::string &err) {
    out.clear();
    impl &s = *impl_;
    if (blank(req.query)) {
        err = "query is empty";
        return false;
    }
    if (req.top_k == 0) {
        err = "top_k is 0, must be at least 1";
        return false;
    }
    if (req.top_k > settings_.max_top_k) {
        err = "top_k " + std::to_string(req.top_k) + " is over the limit of " + std::to_string(settings_.max_top_k) +
              " (max_top_k)";
        return false;
    }
    const bool use_bm25 = req.mode != retrieval_mode::dense;
    const bool use_dense = req.mode != retrieval_mode::bm25;
    std::vector<float> q = query_vec;
    if (use_dense) {
        if (std::string e = unit_vector(q, settings_.dim); !e.empty()) {
            err = "query " + e;
            return false;
        }
    }

    const bool filtered = !req.filters.empty();
    std::function<bool(uint64_t)> allow;
    if (filtered) {
        for (auto &[id, d] : s.docs) d.pass = doc_passes(d.meta, req.filters);   // O(documents)
        allow = [&s](uint64_t chunk_id) {
            auto it = s.chunks.find(chunk_id);
            return it != s.chunks.end() && it->second.doc->pass;
        };
    }
    // Each retriever ranks at least top_k, so a mode that uses one alone can fill the answer.
    const size_t cand = std::max(settings_.candidates, req.top_k);

    std::vector<ranked_hit> bm25_hits, dense_hits;
    if (use_bm25) {
        for (const auto &h : s.bm25.search(req.query, cand, allow)) bm25_hits.push_back({h.id, h.score});
    }
    if (use_dense && s.dense->ntotal > 0) {
        const size_t k = std::min(cand, static_cast<size_t>(s.dense->ntotal));
        std::vector<float> sims(k);           // (k,) inner products = cosines, best first
        std::vector<faiss_idx> labels(k);     // (k,) chunk ids, or positions when filtered; -1 past the end
        try {
            if (filtered) {
                position_selector sel;
                sel.id_map = &s.dense->id_map;
                sel.allow = &allow;
                faiss::SearchParameters params;
                params.sel = &sel;
                s.flat->search(1, q.data(), static_cast<faiss_idx>(k), sims.data(), labels.data(), &params);
                for (auto &l : labels)
                    if (l >= 0) l = s.dense->id_map[static_cast<size_t>(l)];
            } else {
                s.dense->search(1, q.data(), static_cast<faiss_idx>(k), sims.data(), labels.data());
            }
        } catch (const faiss::FaissException &e) {
            err = std::string("faiss search failed: ") + e.what();
            return false;
        }
        for (size_t i = 0; i < k && labels[i] >= 0; ++i) dense_hits.push_back({static_cast<uint64_t>(labels[i]), sims[i]});
        // FAISS leaves equal scores in heap order; order ties by the lower id as BM25 does.
        // note: which of several chunks tied at the k-th place make the cut is FAISS's choice.
        std::stable_sort(dense_hits.begin(), dense_hits.end(), [](const ranked_hit &a, const ranked_hit &b) {
            if (a.score != b.score) return a.score > b.score;
            return a.id < b.id;
        });
    }

    std::vector<fused_hit> hits;
    if (req.mode == retrieval_mode::bm25) hits = single_ranking(bm25_hits, true);
    else if (req.mode == retrieval_mode::dense) hits = single_ranking(dense_hits, false);
    else if (settings_.fusion == fusion_kind::rrf)
        hits = fuse_rrf(bm25_hits, dense_hits, settings_.rrf_k, settings_.bm25_weight, settings_.dense_weight);
    else hits = fuse_weighted(bm25_hits, dense_hits, settings_.bm25_weight, settings_.dense_weight);

    const size_t n = std::min(hits.size(), req.top_k);
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        const fused_hit &h = hits[i];
        const impl::chunk_rec &c = s.chunks.at(h.id);
        const impl::doc_rec &d = *c.doc;
        passage p;
        p.chunk_id = h.id;
        p.doc_id = d.id;
        p.chunk_index = c.index;
        p.source = d.meta.source;
        p.title = d.meta.title;
        p.heading = c.chunk.heading;
        p.text = c.chunk.text;
        p.tags = d.meta.tags;
        p.timestamp = d.meta.timestamp;
        p.tokens = c.chunk.tokens;
        p.score = h.score;
        p.bm25_score = h.bm25_score;
        p.dense_score = h.dense_score;
        p.bm25_rank = h.bm25_rank;
        p.dense_rank = h.dense_rank;
        out.push_back(std::move(p));
    }
    impl_->stats.searches += 1;
    return true;
}

std::optional<knowledge_base::doc_info> knowledge_base::document(const std::string &doc_id) const {
    auto it = impl_->docs.find(doc_id);
    if (it == impl_->docs.end()) return std::nullopt;
    const impl::doc_rec &d = it->second;
    return doc_info{d.id, d.meta, d.content_hash, d.chunk_ids.size(), d.bytes};
}

std::vector<knowledge_base::doc_info> knowledge_base::documents() const {
    std::vector<doc_info> out;
    out.reserve(impl_->docs.size());
    for (const auto &[id, d] : impl_->docs) out.push_back(doc_info{d.id, d.meta, d.content_hash, d.chunk_ids.size(), d.bytes});
    return out;
}

const kb_stats &knowledge_base::stats() const { return impl_->stats; }

} // namespace actorserve
