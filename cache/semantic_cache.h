// The semantic cache: answers found by the meaning of the question. Each question is stored
// with its embedding (given by the caller, L2-normalised here again); a lookup takes the
// nearest stored questions by cosine similarity (inner product of unit vectors, FAISS), keeps
// those at or above the threshold, and returns the most similar one that the near-miss guard
// (cache/near_miss.h) accepts.
//
// Scope: a hit needs the same model, system prompt and generation parameters. Each scope has
// its own FAISS index, rather than one index whose top-k is filtered by scope: with a filter, a
// busy scope can fill the top-k and hide the only right answer of a quiet one, and k must grow
// with the number of scopes; with one index per scope, search is exact within the scope and an
// index holds only vectors that can answer. The price is one small index per scope (a flat
// index costs nothing but its vectors) and no sharing across scopes, which is what we want.
//
// Ids: every entry gets a 64-bit id from a counter that never repeats (kept in the cache file);
// the id is the FAISS label and the key of the entry table, and eviction removes both at once.
// Flat (default): IndexIDMap2 over IndexScalarQuantizer (QT_fp16): FAISS keeps the vectors as
// halves with their ids, and remove_ids is exact, so index ntotal == entries. A lookup scans the
// halves with our SIMD loop (cache/vector_scan.h; Debian's FAISS build scans with scalar code)
// and rescores the candidates near or above the threshold in fp32 from the entry's own vector:
// the threshold and the ranking see exact cosines.
// HNSW (setting, for large caches): HNSW cannot remove vectors, so an evicted id becomes a
// tombstone: its vector stays in the graph, search asks for k + tombstones and skips ids no
// longer in the table, and the scope's index is rebuilt from the stored vectors when tombstones
// exceed max(hnsw_rebuild_min, live * hnsw_rebuild_fraction).
// cost (HNSW): a rebuild re-inserts every live vector of the scope, O(n log n), amortised over
// the n * fraction evictions that trigger it.
//
// Not thread-safe: the cache actor owns it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cache/lfu_ttl.h"
#include "cache/near_miss.h"
#include "store/persist.h"
#include "cache/request_key.h"
#include "include/actorserve/cache_settings.h" // semantic_settings

namespace faiss {
struct Index;
}

namespace actorserve {

struct semantic_hit {
    uint64_t id = 0;
    float similarity = 0.0f;
    std::string question;                 // the cached question that matched
    cached_answer answer;
};

struct semantic_lookup {
    std::optional<semantic_hit> hit;
    float best_similarity = -2.0f;        // of the nearest candidate in scope; -2 when none
    size_t above_threshold = 0;           // candidates at or above the threshold
    near_miss_verdict rejected;           // why the most similar candidate above the threshold
                                          // was refused (reason none if it was not)
    std::string error;                    // a caller's mistake (wrong dimension, bad vector)
};

struct semantic_cache_stats {
    uint64_t lookups = 0, hits = 0, misses = 0;
    uint64_t guard_rejections = 0;        // candidates above the threshold refused by the guard
    uint64_t inserts = 0;
    uint64_t evictions_lfu = 0, evictions_ttl = 0;
    uint64_t rebuilds = 0;                // HNSW scope indexes rebuilt to drop tombstones
    size_t entries = 0, bytes = 0, scopes = 0;
};

// The scope text: model, system prompt and the canonical parameters, length-prefixed.
std::string semantic_scope(std::string_view model, std::string_view system_prompt, const generation_params &p);
// An operator's name for the requests of one model and system prompt (whatever their sampling
// parameters): 16 hex digits of SipHash over both, whitespace normalised as in the scope.
std::string semantic_scope_id(std::string_view model, std::string_view system_prompt);

class semantic_cache {
public:
    static constexpr size_t kEntryOverhead = 256;

    explicit semantic_cache(semantic_settings s = {}, cache_clock clock = system_clock_ms);
    ~semantic_cache();
    semantic_cache(const semantic_cache &) = delete;
    semantic_cache &operator=(const semantic_cache &) = delete;

    // vec: (dim,) the question's embedding. Expired entries are purged first.
    // cost: flat, O(entries in scope * dim); HNSW, O(log n * ef * dim); plus the guard (microseconds).
    semantic_lookup lookup(const std::string &scope, std::span<const float> vec, std::string_view question);

    struct insert_result {
        insert_status status = insert_status::invalid;
        uint64_t id = 0;
        std::string error;
    };
    // Stores the answer under (scope, question); the same question again in the same scope
    // replaces the answer (and vector). Evicts expired entries, then least frequently used ones.
    insert_result insert(const std::string &scope, std::span<const float> vec, std::string question, cached_answer answer);

    bool erase(uint64_t id);
    size_t purge_expired();
    void clear();

    const semantic_cache_stats &stats() const { return stats_; }
    const semantic_settings &settings() const { return settings_; }
    // Empty when the guard has WordNet (or is off); otherwise why it has not, for the log.
    const std::string &lexicon_note() const { return lexicon_note_; }
    size_t size() const { return entries_.size(); }
    bool contains(uint64_t id) const { return entries_.count(id) > 0; }
    // Vectors held by FAISS over all scopes: == size() for flat, size() + tombstones for HNSW.
    size_t index_ntotal() const;

    bool save(const std::string &path, std::string &err) const;
    cache_load_report load(const std::string &path);

private:
    struct scope_index;
    struct entry {
        uint64_t id = 0;
        scope_index *scope = nullptr;
        std::string question;
        cached_answer answer;
        std::vector<float> vec;           // (dim,) unit length
        size_t bytes = 0;
    };

    size_t entry_bytes(const entry &e) const;
    std::string check_vector(std::span<const float> vec, std::vector<float> &unit) const;
    scope_index &scope_for(const std::string &scope);
    bool add_to_index(scope_index &s, uint64_t id, const float *unit, std::string &err);
    void drop(uint64_t id);
    bool evict_one_for_space(int64_t now);
    void maybe_rebuild(scope_index &s);
    std::vector<std::pair<float, uint64_t>> scan_flat(const scope_index &s, const std::vector<float> &unit);
    size_t purge_expired_at(int64_t now);
    insert_result place(const std::string &scope, uint64_t id, std::vector<float> unit, std::string question,
                        cached_answer answer, int64_t expires, uint64_t freq);

    semantic_settings settings_;
    std::string lexicon_note_;
    cache_clock clock_;
    uint64_t next_id_ = 1;
    std::unordered_map<std::string, std::unique_ptr<scope_index>> scopes_;
    std::unordered_map<uint64_t, entry> entries_;
    std::unordered_map<std::string, uint64_t> by_question_;   // scope + '\x1f' + question -> id
    lfu_ttl policy_;
    semantic_cache_stats stats_;
    std::vector<float> scores_;            // scratch: the flat scan's half scores, (entries in scope,)
};

} // namespace actorserve
