// What the runtime's retrieval is told at start-up (runtime_config::rag): the RAG actor
// (actors/rag_actor.h) reads them.
#pragma once

#include <cstddef>
#include <string>

#include "rag/knowledge_base.h" // rag_settings

namespace actorserve {

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
