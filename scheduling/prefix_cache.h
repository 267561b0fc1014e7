// The prefix cache of the KV block pool (scheduling/kv_blocks.h): which full blocks hold the KV
// of which tokens, so that a later prompt starting with the same tokens reuses them.
//
// A block is registered under its content: its tokens and the content of every block before
// it, named by the content id of its parent (0 for a sequence's first block). Each registration
// gets a content id that is never reused, and a lookup compares (parent, tokens) in full; the
// 64-bit hash only picks the bucket. A colliding hash, or a parent evicted and its block reused,
// cannot make a lookup return KV computed after other tokens.
//
// It knows nothing of who uses a block or whether it is free: the pool decides when a
// registration goes (eviction, a block about to be rewritten).
// note: not thread-safe; the pool's owner calls it from one thread.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace actorserve {

class prefix_cache {
public:
    // n_blocks > 0, block_size > 0 (asserted).
    prefix_cache(int n_blocks, int block_size);

    // The registered block holding `tokens` (block_size of them) after the block whose content
    // id is `parent`; -1 when there is none. cost: O(block_size).
    int32_t find(uint64_t parent, std::span<const int32_t> tokens) const;

    // The registered blocks holding the prompt's leading full blocks, in order: at most
    // (prompt.size() - 1) / block_size of them, so that the last prompt token is always
    // computed (its logits are needed). cost: O(prompt), however much is cached.
    std::vector<int32_t> match(std::span<const int32_t> prompt) const;

    // Registers block b (not registered) as holding `tokens` after `parent`; returns its new
    // content id. The caller makes sure no identical block is registered (find first).
    uint64_t add(int32_t b, uint64_t parent, std::span<const int32_t> tokens);

    // Drops b's registration (b registered). Blocks registered after it in a chain keep theirs
    // but can no longer be reached, since a lookup walks from the first block.
    void remove(int32_t b);

    uint64_t content(int32_t b) const { return entries_[static_cast<size_t>(b)].content; } // 0: not registered
    int size() const { return static_cast<int>(buckets_.size()); }                        // registered blocks

private:
    struct entry {
        uint64_t content = 0; // 0: not registered
        uint64_t parent = 0;  // content id of the block before it (0: first block of a sequence)
        uint64_t hash = 0;    // bucket in buckets_
    };

    int block_size_;
    std::vector<entry> entries_;                          // (n_blocks,)
    std::vector<int32_t> tokens_;                         // (n_blocks, block_size) of registered blocks
    std::unordered_multimap<uint64_t, int32_t> buckets_;  // hash -> registered block
    uint64_t next_content_ = 1;
};

} // namespace actorserve
