// What the runtime's retrieval is told at start-up (runtime_config::rag): chunking
// (rag/chunker.h), BM25 (rag/bm25.h), fusion and limits of the knowledge base
// (rag/knowledge_base.h), and the RAG actor's own (actors/rag_actor.h). Standard library only,
// like include/actorserve/sampling.h: the rag layer includes it.
#pragma once

#include <cstddef>
#include <string>

namespace actorserve {

struct chunk_settings {
    size_t max_tokens = 200;     // all-MiniLM-L6-v2 reads 256 word pieces, with [CLS]/[SEP]
    size_t overlap_tokens = 40;  // < max_tokens; 0 for none
};

struct bm25_settings {
    float k1 = 1.5f;
    float b = 0.75f;
    float epsilon = 0.25f;  // floor for negative idf, as a fraction of the mean idf
};

enum class fusion_kind { rrf, weighted };
struct rag_settings {
    chunk_settings chunking;
    bm25_settings bm25;
    fusion_kind fusion = fusion_kind::rrf;
    float rrf_k = 60.0f;          // RRF: score = sum over retrievers of w / (rrf_k + rank), rank from 1
    float bm25_weight = 1.0f;     // RRF and weighted fusion weights
    float dense_weight = 1.0f;
    size_t candidates = 50;       // chunks each retriever ranks before fusion
    size_t max_top_k = 50;
    size_t max_documents = 100000;
    size_t max_chunks = 1000000;
    int dim = 384;
};

struct rag_runtime_settings {
    bool enabled = false;                  // the runtime API: off unless asked
    rag_settings kb;                       // chunking, BM25, fusion, limits
    std::string embed_model_dir = "models/all-MiniLM-L6-v2";
    std::string file;                      // where the knowledge base persists; "": memory only
    size_t budget_tokens = 1024;           // context budget of a chat request, model tokens
    size_t default_top_k = 4;
    size_t mailbox_limit = 256;
    size_t max_ingest_documents = 1000;    // per rag_ingest
};

} // namespace actorserve
