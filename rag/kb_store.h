// The knowledge base's storage (rag/knowledge_base.h), shared by knowledge_base.cpp (commit,
// search) and kb_file.cpp (save, load). Not a public header.
//
// Documents live in a map by id (sorted, so listings and files are in id order); chunks in a
// hash map by chunk id, each pointing at its document (map nodes never move). A chunk's vector
// is held once, in the FAISS flat index; the file reads it back through the id map.
#pragma once

#include <faiss/IndexFlat.h>
#include <faiss/IndexIDMap.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "rag/knowledge_base.h"

namespace actorserve {

using faiss_idx = faiss::Index::idx_t;   // FAISS 1.7 spells it inside Index

// Bytes counted per chunk beyond its text and vector (map node, record, BM25 lengths): a guess.
inline constexpr size_t kChunkOverhead = 96;

struct knowledge_base::impl {
    struct doc_rec {
        std::string id;
        doc_metadata meta;
        uint64_t content_hash = 0;
        std::vector<uint64_t> chunk_ids;   // in document order
        size_t bytes = 0;
        bool pass = true;                  // passes the current search's filters (search() sets it)
    };
    struct chunk_rec {
        doc_rec *doc = nullptr;
        uint32_t index = 0;                // position in the document
        text_chunk chunk;
    };

    explicit impl(const rag_settings &s);

    // A chunk on its way in: its document (already in docs), position there, id and unit vector.
    struct pending_chunk {
        doc_rec *doc = nullptr;
        uint32_t index = 0;
        uint64_t id = 0;
        text_chunk chunk;
        std::vector<float> vec;            // (dim,) unit length
    };
    // Adds chunks (ids not yet present) to both indexes and the chunk map, and their bytes to
    // their documents; the documents' chunk_ids are the caller's. false with err if FAISS refuses
    // (nothing changed then). note: BM25 appends to its posting lists when ids arrive in
    // increasing order and inserts (O(list)) otherwise, so callers pass them sorted by id.
    bool insert_chunks(std::vector<pending_chunk> &in, std::string &err);
    // Removes all of doc's chunks from both indexes and the chunk map. cost: O(n) in FAISS (the
    // flat index compacts, the id map's reverse map is rebuilt) once per document.
    void erase_chunks(doc_rec &doc);
    // The vector of a stored chunk: (dim,) inside the flat index.
    const float *vector_of(uint64_t chunk_id) const;
    // documents, chunks, terms and bytes from the contents; the counters are left alone.
    void refresh_stats();

    int dim;
    std::map<std::string, doc_rec> docs;
    std::unordered_map<uint64_t, chunk_rec> chunks;
    bm25_index bm25;
    std::unique_ptr<faiss::IndexIDMap2> dense;   // labels are chunk ids
    faiss::IndexFlatIP *flat = nullptr;          // dense's inner index (owned by it)
    uint64_t next_id = 1;                        // chunk ids are never reused, even across saves
    size_t bytes = 0;
    kb_stats stats;
};

size_t chunk_bytes(const text_chunk &c, int dim);
size_t doc_meta_bytes(const std::string &id, const doc_metadata &m);

// Scales v to unit length. "" or the problem ("vector has 3 dimensions, the knowledge base uses
// 384", "vector has a non-finite component", "vector has zero length").
std::string unit_vector(std::vector<float> &v, int dim);

} // namespace actorserve
