// What a request may ask of retrieval: which retrievers rank, and which documents may answer.
// The knowledge base (rag/knowledge_base.h) applies them. Standard library only, like
// include/actorserve/sampling.h.
#pragma once

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

} // namespace actorserve
