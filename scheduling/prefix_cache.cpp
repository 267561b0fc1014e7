#include "scheduling/prefix_cache.h"

#include <algorithm>
#include <cassert>

namespace actorserve {
namespace {

// splitmix64's finalizer: every input bit affects every output bit.
uint64_t mix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Bucket of a block: its parent's content id and its tokens. Only picks the bucket; lookups
// compare parent and tokens in full. cost: O(block_size).
uint64_t block_hash(uint64_t parent, std::span<const int32_t> tokens) {
    uint64_t h = mix(parent + 0x9e3779b97f4a7c15ull);
    for (int32_t t : tokens) h = mix(h + static_cast<uint32_t>(t));
    return h;
}

} // namespace

prefix_cache::prefix_cache(int n_blocks, int block_size)
    : block_size_(block_size), entries_(static_cast<size_t>(n_blocks)),
      tokens_(static_cast<size_t>(n_blocks) * static_cast<size_t>(block_size)) {
    assert(n_blocks > 0 && block_size > 0);
    buckets_.reserve(static_cast<size_t>(n_blocks));
}

int32_t prefix_cache::find(uint64_t parent, std::span<const int32_t> tokens) const {
    const auto [first, last] = buckets_.equal_range(block_hash(parent, tokens));
    for (auto it = first; it != last; ++it) {
        const int32_t b = it->second;
        const auto stored = std::span(tokens_).subspan(static_cast<size_t>(b) * block_size_, block_size_);
        if (entries_[b].parent == parent && std::ranges::equal(stored, tokens)) return b;
    }
    return -1;
}

std::vector<int32_t> prefix_cache::match(std::span<const int32_t> prompt) const {
    std::vector<int32_t> out;
    if (prompt.empty()) return out;
    const size_t n_full = (prompt.size() - 1) / block_size_;
    uint64_t parent = 0;
    for (size_t i = 0; i < n_full; ++i) {
        const int32_t b = find(parent, prompt.subspan(i * block_size_, block_size_));
        if (b < 0) break;
        out.push_back(b);
        parent = entries_[b].content;
    }
    return out;
}

uint64_t prefix_cache::add(int32_t b, uint64_t parent, std::span<const int32_t> tokens) {
    assert(tokens.size() == static_cast<size_t>(block_size_));
    entry &e = entries_[b];
    assert(e.content == 0 && "add: the block is registered already");
    e.content = next_content_++;
    e.parent = parent;
    e.hash = block_hash(parent, tokens);
    std::ranges::copy(tokens, tokens_.begin() + static_cast<ptrdiff_t>(b) * block_size_);
    buckets_.emplace(e.hash, b);
    return e.content;
}

void prefix_cache::remove(int32_t b) {
    entry &e = entries_[b];
    const auto [first, last] = buckets_.equal_range(e.hash);
    const auto it = std::find_if(first, last, [&](const auto &x) { return x.second == b; });
    assert(it != last && "remove: the block is not registered");
    buckets_.erase(it);
    e = entry{};
}

} // namespace actorserve
