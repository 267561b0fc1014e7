// The knowledge base's file (rag/knowledge_base.h): one cache file of kind rag (store/persist.h
// gives the header, checksum and atomic write); this is its payload.
//
// Payload (little-endian, strings u64-length-prefixed):
//   u32 dim, u64 next chunk id, u64 document count, then per document in id order:
//     str id, str source, str title, u64 tag count, str tag..., i64 timestamp, u64 content hash,
//     u64 chunk count, then per chunk in document order:
//       u64 chunk id, str text, str heading, u64 offset, u64 tokens, dim x f32 vector
// The BM25 and FAISS indexes are not stored: load() rebuilds them from the chunks.
#include "rag/knowledge_base.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "rag/kb_store.h"

namespace actorserve {

// cost: one pass over the chunks; the vectors dominate (dim * 4 bytes each, ~150 MB for 100,000
// chunks of 384 dimensions), written byte by byte by byte_writer.
bool knowledge_base::save(const std::string &path, std::string &err) const {
    const impl &s = *impl_;
    byte_writer w;
    w.u32(static_cast<uint32_t>(s.dim));
    w.u64(s.next_id);
    w.u64(s.docs.size());
    for (const auto &[id, d] : s.docs) {
        w.str(d.id);
        w.str(d.meta.source);
        w.str(d.meta.title);
        w.u64(d.meta.tags.size());
        for (const auto &t : d.meta.tags) w.str(t);
        w.i64(d.meta.timestamp);
        w.u64(d.content_hash);
        w.u64(d.chunk_ids.size());
        for (uint64_t cid : d.chunk_ids) {
            const text_chunk &c = s.chunks.at(cid).chunk;
            w.u64(cid);
            w.str(c.text);
            w.str(c.heading);
            w.u64(c.offset);
            w.u64(c.tokens);
            const float *v = s.vector_of(cid);
            for (int j = 0; j < s.dim; ++j) w.f32(v[j]);
        }
    }
    return write_cache_file(path, cache_file_kind::rag, w.bytes(), err);
}

cache_load_report knowledge_base::load(const std::string &path) {
    clear();
    std::string payload;
    cache_load_report report = read_cache_file(path, cache_file_kind::rag, payload);
    if (report.result != cache_load_report::outcome::loaded) return report;

    // Built aside and swapped in whole, so a bad file leaves the base empty, never half loaded.
    auto fresh = std::make_unique<impl>(settings_);
    impl &s = *fresh;
    byte_reader r(payload);
    uint32_t dim = 0;
    uint64_t next_id = 0, n_docs = 0;
    r.u32(dim);
    r.u64(next_id);
    r.u64(n_docs);
    if (r.ok() && dim != static_cast<uint32_t>(settings_.dim))
        r.fail("vectors have " + std::to_string(dim) + " dimensions, the knowledge base uses " + std::to_string(settings_.dim));
    // Counts are checked against what the payload could hold before anything is read: a document
    // takes at least 7 length/count fields, a chunk 5 fields and its vector.
    const size_t min_chunk = 5 * 8 + size_t(dim) * 4;
    if (r.ok() && n_docs > payload.size() / (8 * 7))
        r.fail("document count " + std::to_string(n_docs) + " cannot fit the payload");
    std::unordered_set<uint64_t> seen;
    std::vector<impl::pending_chunk> pending;   // every chunk, indexed once all are read
    for (uint64_t i = 0; r.ok() && i < n_docs; ++i) {
        impl::doc_rec d;
        uint64_t n_tags = 0, n_chunks = 0;
        r.str(d.id, kMaxDocIdBytes);
        r.str(d.meta.source);
        r.str(d.meta.title);
        r.u64(n_tags);
        if (r.ok() && n_tags > kMaxTags) r.fail("document " + std::to_string(i) + " has " + std::to_string(n_tags) + " tags");
        for (uint64_t t = 0; r.ok() && t < n_tags; ++t) {
            std::string tag;
            if (r.str(tag, kMaxTagBytes)) d.meta.tags.push_back(std::move(tag));
        }
        r.i64(d.meta.timestamp);
        r.u64(d.content_hash);
        r.u64(n_chunks);
        if (!r.ok()) break;
        const std::string where = "document " + std::to_string(i) + " (" + d.id + ")";
        if (d.id.empty()) r.fail("document " + std::to_string(i) + " has an empty id");
        else if (s.docs.count(d.id)) r.fail(where + " repeats an id");
        else if (n_chunks == 0) r.fail(where + " has no chunks");
        else if (n_chunks > payload.size() / min_chunk) r.fail(where + ": chunk count " + std::to_string(n_chunks) + " cannot fit the payload");
        if (!r.ok()) break;
        d.bytes = doc_meta_bytes(d.id, d.meta);
        impl::doc_rec &stored = s.docs.emplace(d.id, std::move(d)).first->second;
        for (uint64_t c = 0; r.ok() && c < n_chunks; ++c) {
            impl::pending_chunk pc;
            uint64_t offset = 0, tokens = 0;
            r.u64(pc.id);
            r.str(pc.chunk.text);
            r.str(pc.chunk.heading);
            r.u64(offset);
            r.u64(tokens);
            pc.vec.resize(dim);
            for (uint32_t j = 0; j < dim; ++j) r.f32(pc.vec[j]);
            if (!r.ok()) break;
            if (pc.id == 0 || pc.id >= next_id || !seen.insert(pc.id).second) {
                r.fail(where + " chunk " + std::to_string(c) + " has a bad or repeated id " + std::to_string(pc.id));
                break;
            }
            if (std::string e = unit_vector(pc.vec, settings_.dim); !e.empty()) {
                r.fail(where + " chunk " + std::to_string(c) + ": " + e);
                break;
            }
            pc.doc = &stored;
            pc.index = static_cast<uint32_t>(c);
            pc.chunk.offset = static_cast<size_t>(offset);
            pc.chunk.tokens = static_cast<size_t>(tokens);
            stored.chunk_ids.push_back(pc.id);
            pending.push_back(std::move(pc));
        }
    }
    if (r.ok() && !r.at_end()) r.fail("bytes after the last document");
    if (r.ok()) {
        // In id order, so BM25 appends to its posting lists (the file is in document order).
        std::sort(pending.begin(), pending.end(), [](const auto &a, const auto &b) { return a.id < b.id; });
        std::string err;
        if (!s.insert_chunks(pending, err)) r.fail(err);
    }
    if (!r.ok()) {
        set_aside_corrupt(path, r.error(), report);
        return report;
    }
    for (const auto &[id, d] : s.docs) s.bytes += d.bytes;
    s.next_id = next_id;
    s.stats = impl_->stats;   // the counters carry over
    impl_ = std::move(fresh);
    impl_->refresh_stats();
    report.entries = impl_->docs.size();
    report.message = path + ": loaded " + std::to_string(impl_->docs.size()) + " documents, " +
                     std::to_string(impl_->chunks.size()) + " chunks";
    return report;
}

} // namespace actorserve
