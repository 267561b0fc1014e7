// The KV block pool of a paged KV cache, with automatic prefix reuse (vLLM's design).
//
// KV memory is cut into n_blocks blocks of block_size token positions; this class decides
// which blocks each sequence uses and never touches the KV itself. A full block whose KV has
// been computed is registered in the prefix cache (scheduling/prefix_cache.h) under its content:
// its tokens and the content of every block before it. A later prompt starting with the same
// tokens reuses those blocks (reference counted) instead of computing them again. Partial blocks
// are never shared. The pool owns who uses each block and which are free; the prefix cache,
// what a registered block holds.
//
//   admit(id, prompt)      -> table covering the prompt; n_cached leading tokens already done
//   commit(id, tokens)     after computing KV for the next tokens; full blocks get registered
//   append_slot(id)        before each decode step: room for one more position, or false
//   release(id)            blocks back to the pool; registered ones stay cached until evicted
//
// Eviction: a new block is the lowest-id free block that is not registered; failing that, the
// registered free block released longest ago (its registration is dropped). A sequence's
// blocks are released last to first, so a prefix loses its tail before its head.
//
// note: exact, not probabilistic (scheduling/prefix_cache.h says why).
// note: not thread-safe. One owner (the actor driving the engine) calls it from one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "scheduling/prefix_cache.h"

namespace actorserve {

struct kv_admission {
    int n_cached = 0;            // leading prompt tokens whose KV is reused (multiple of block_size)
    std::vector<int32_t> table;  // the sequence's block ids, in position order
};

class kv_block_manager {
public:
    // n_blocks > 0, block_size > 0, n_blocks * block_size < 2^31 (asserted).
    kv_block_manager(int n_blocks, int block_size);

    // Leading prompt tokens available from cached blocks: a multiple of block_size, at most
    // ((prompt.size() - 1) / block_size) * block_size so that the last prompt token is always
    // computed (its logits are needed). 0 for an empty prompt. Changes nothing.
    int match_prefix(std::span<const int32_t> prompt) const;

    // Whether n_tokens positions fit in the whole pool, i.e. could ever be admitted.
    bool can_ever_fit(int64_t n_tokens) const;

    // Starts sequence `id`: reuses the cached prefix (match_prefix) and allocates fresh blocks
    // for the rest of prompt.size() + reserve_tokens positions. Its n_tokens() is then n_cached;
    // the caller computes the remaining prompt tokens and commit()s them. On failure returns
    // nullopt with err set and changes nothing: an empty prompt, a negative reserve, an id
    // already admitted, a request larger than the pool (tokens and capacity named; it can never
    // run) or not enough free blocks now (needed and free named; preempt or wait).
    std::optional<kv_admission> admit(int64_t id, std::span<const int32_t> prompt, int reserve_tokens,
                                      std::string &err);

    // Makes the table cover position n_tokens(id), allocating a block at a boundary. Calling it
    // again before commit() allocates nothing more. False, changing nothing, for an unknown id
    // or when no block is free (the caller preempts a sequence and retries).
    bool append_slot(int64_t id);

    // The KV of these next tokens has been computed: appends them to the sequence and registers
    // each block they fill, unless an identical block is registered already (this one then
    // stays private). False, changing nothing, for an unknown id; tokens beyond the table's
    // capacity are a caller bug: asserted, and false with nothing changed when asserts are off.
    bool commit(int64_t id, std::span<const int32_t> tokens);

    // Forgets positions >= n_tokens (0 <= n_tokens <= n_tokens(id)); blocks past the new end go
    // back to the pool. The block that becomes partial must not be shared: when it is in use by
    // another sequence too, returns false and changes nothing (truncate to the block boundary,
    // n_tokens - n_tokens % block_size, and recompute the rest instead). When it is registered
    // but only this sequence uses it, its registration is dropped: its KV is about to change.
    // False also for an unknown id or n_tokens out of range.
    bool truncate(int64_t id, int n_tokens);

    // Drops the sequence; its blocks with no other user become free. An unknown id is a no-op.
    void release(int64_t id);

    int n_blocks() const { return static_cast<int>(blocks_.size()); }
    int block_size() const { return block_size_; }
    int n_free() const { return static_cast<int>(free_plain_.size() + free_cached_.size()); } // cached ones too
    int n_cached_blocks() const { return prefix_.size(); }                                    // registered
    int ref_cnt(int32_t b) const; // sequences using the block; -1 for an id out of range
    bool has(int64_t id) const { return seqs_.contains(id); }
    std::span<const int32_t> table(int64_t id) const; // empty for an unknown id
    int n_tokens(int64_t id) const;                   // -1 for an unknown id
    int64_t prefix_hit_tokens() const { return prefix_hit_tokens_; } // total n_cached of all admissions
    int64_t evictions() const { return evictions_; }                 // registrations dropped to reuse a block

private:
    struct block {
        int32_t ref_cnt = 0;
        uint64_t freed_at = 0; // LRU stamp while free and registered
    };
    struct sequence {
        std::vector<int32_t> table;
        std::vector<int32_t> tokens;   // (n_tokens,) whose KV is computed
        std::vector<uint64_t> content; // (n_tokens / block_size,) content id of each full block
    };

    int32_t allocate();
    void unref(int32_t b);

    int block_size_;
    std::vector<block> blocks_;                          // (n_blocks,)
    prefix_cache prefix_;                                // what the registered blocks hold
    std::set<int32_t> free_plain_;                       // free, not registered: lowest id first
    std::set<std::pair<uint64_t, int32_t>> free_cached_; // free, registered: (freed_at, block), oldest first
    std::unordered_map<int64_t, sequence> seqs_;
    uint64_t clock_ = 0;
    int64_t prefix_hit_tokens_ = 0;
    int64_t evictions_ = 0;
};

} // namespace actorserve
