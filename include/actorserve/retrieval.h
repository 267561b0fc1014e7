// The vocabulary of retrieval, shared by the knowledge base (rag/knowledge_base.h), the RAG
// actor's messages (include/actorserve/rag_messages.h) and their clients: documents as they
// arrive, what a search asks (which retrievers rank, which documents may answer) and what it
// finds. Standard library only, like include/actorserve/sampling.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace actorserve {

enum class retrieval_mode { hybrid, bm25, dense };

struct search_filters {
    std::vector<std::string> sources;  // any of these sources (exact match); empty = all
    std::vector<std::string> tags;     // at least one of these tags; empty = all
    std::optional<int64_t> since;      // timestamp >= since (documents without one never pass)
    std::optional<int64_t> until;      // timestamp <= until
    bool empty() const { return sources.empty() && tags.empty() && !since && !until; }
};

enum class doc_format { text, markdown };

struct doc_metadata {
    std::string source;              // where it came from (path, URL); shown in citations
    std::string title;
    std::vector<std::string> tags;
    int64_t timestamp = 0;           // Unix seconds; 0 = none (never matches a time filter)
};

// A document to ingest (rag/document.h reads them from files, JSONL records and HTTP bodies).
struct document_input {
    std::string id;
    std::string text;
    doc_format format = doc_format::text;
    doc_metadata meta;
};

struct search_request {
    std::string query;
    size_t top_k = 5;
    search_filters filters;
    retrieval_mode mode = retrieval_mode::hybrid;
};

struct passage {
    uint64_t chunk_id = 0;
    std::string doc_id;
    uint32_t chunk_index = 0;      // position of the chunk in its document, from 0
    std::string source, title, heading, text;
    std::vector<std::string> tags;
    int64_t timestamp = 0;
    size_t tokens = 0;             // the chunker's count
    float score = 0.0f;            // fused (or the single retriever's) score, higher is better
    float bm25_score = 0.0f;       // 0 when BM25 did not rank it
    float dense_score = 0.0f;      // cosine; 0 when dense did not rank it
    int bm25_rank = 0;             // 1-based rank among BM25's candidates, 0 = not ranked
    int dense_rank = 0;
};

// A stored document, as listed.
struct document_info {
    std::string id;
    doc_metadata meta;
    uint64_t content_hash = 0;
    size_t chunks = 0;
    size_t bytes = 0;
};

struct kb_stats {
    size_t documents = 0, chunks = 0, terms = 0, bytes = 0;
    uint64_t searches = 0, commits = 0, deletes = 0;
};

} // namespace actorserve
