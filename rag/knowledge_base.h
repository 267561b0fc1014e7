// The knowledge base: documents cut into chunks, each chunk indexed twice, by BM25 (rag/bm25.h)
// and by its MiniLM embedding in FAISS (an IndexIDMap2 over IndexFlatIP: exact cosine search on
// unit vectors, exact removal), and the two rankings fused (reciprocal rank fusion by default).
//
// Ingestion is two steps so that the slow one runs anywhere:
//   prepare_document() — check, chunk, embed: pure, needs only an embedder (one per thread);
//   knowledge_base::commit() — swaps the document's chunks in: fast, no embedding.
// A document whose content hash (text, format, metadata and chunk settings) equals the stored
// one is `unchanged` and costs nothing: ask needs_update() before preparing.
//
// Filters (source, tags, time range) restrict both retrievers before fusion: each retriever
// ranks only chunks that pass, so a filter never empties the top-k of a busy corpus.
//
// Files: one file (write_cache_file, kind rag) holding documents, chunks and vectors; written
// atomically, so an interrupted save or ingest leaves the previous file whole. The BM25 and FAISS
// indexes are rebuilt from it at load (3-4 s for 100,000 chunks on a 2-core machine).
//
// Not thread-safe: the RAG actor owns it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "include/actorserve/rag_settings.h" // rag_settings
#include "include/actorserve/retrieval.h" // search_request, passage, document_info, kb_stats
#include "store/persist.h"
#include "rag/bm25.h"
#include "rag/chunker.h"
#include "rag/document.h"

namespace faiss {
struct Index;
}

namespace actorserve {

class embedder;

struct prepared_chunk {
    text_chunk chunk;
    std::vector<float> vec;        // (dim,) unit length
};
struct prepared_document {
    document_input doc;
    uint64_t content_hash = 0;
    std::vector<prepared_chunk> chunks;
};

// The content hash commit() compares: SipHash over text, format, metadata and chunk settings.
uint64_t document_hash(const document_input &doc, const chunk_settings &chunking);

// The text each retriever sees for a chunk: title, heading path and the chunk's text.
std::string indexed_text(const doc_metadata &meta, const text_chunk &c);

// Checks, chunks (counting tokens with count) and embeds. false with err naming the document and
// the problem. cost: one embedding per chunk (the expensive part of ingestion).
bool prepare_document(document_input doc, const chunk_settings &chunking, const token_counter &count, embedder &emb,
                      prepared_document &out, std::string &err);

struct commit_result {
    enum class status { added, replaced, unchanged, rejected };
    status result = status::rejected;
    size_t chunks_added = 0, chunks_removed = 0;
    std::string error;             // for rejected: limits, wrong dimension
};

class knowledge_base {
public:
    explicit knowledge_base(rag_settings s = {});
    ~knowledge_base();
    knowledge_base(const knowledge_base &) = delete;
    knowledge_base &operator=(const knowledge_base &) = delete;

    // True unless a document with this id and this content hash is stored.
    bool needs_update(const std::string &doc_id, uint64_t content_hash) const;
    commit_result commit(prepared_document doc);
    bool remove(const std::string &doc_id);   // false if absent
    void clear();

    // query_vec: the query's embedding (needed for hybrid and dense; may be empty for bm25).
    // false with err for a caller's mistake (empty query, top_k 0 or over max_top_k, wrong
    // dimension). cost: BM25 postings of the query terms + flat scan of all vectors (O(n * dim)).
    bool search(const search_request &req, const std::vector<float> &query_vec, std::vector<passage> &out,
                std::string &err);

    using doc_info = document_info;
    std::optional<doc_info> document(const std::string &doc_id) const;
    std::vector<doc_info> documents() const;   // sorted by id

    const kb_stats &stats() const;
    const rag_settings &settings() const { return settings_; }

    bool save(const std::string &path, std::string &err) const;
    // Replaces the contents with the file's; a missing file leaves the base empty; a corrupt one is
    // set aside (see store/persist.h) and the base starts empty.
    cache_load_report load(const std::string &path);

private:
    struct impl;
    rag_settings settings_;
    std::unique_ptr<impl> impl_;
};

} // namespace actorserve
