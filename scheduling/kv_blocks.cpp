#include "scheduling/kv_blocks.h"

#include <algorithm>
#include <cassert>
#include <climits>

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

int64_t blocks_for(int64_t n_tokens, int block_size) { return (n_tokens + block_size - 1) / block_size; }

} // namespace

kv_block_manager::kv_block_manager(int n_blocks, int block_size)
    : block_size_(block_size), blocks_(static_cast<size_t>(n_blocks)),
      block_tokens_(static_cast<size_t>(n_blocks) * static_cast<size_t>(block_size)) {
    assert(n_blocks > 0 && block_size > 0);
    // note: positions are int everywhere (n_tokens, truncate), so the whole pool must fit in one.
    assert(int64_t{n_blocks} * block_size <= INT_MAX);
    for (int32_t b = 0; b < n_blocks; ++b) free_plain_.insert(free_plain_.end(), b);
    cache_.reserve(static_cast<size_t>(n_blocks));
}

int32_t kv_block_manager::find_cached(uint64_t parent, std::span<const int32_t> tokens) const {
    const auto [first, last] = cache_.equal_range(block_hash(parent, tokens));
    for (auto it = first; it != last; ++it) {
        const int32_t b = it->second;
        const auto stored = std::span(block_tokens_).subspan(static_cast<size_t>(b) * block_size_, block_size_);
        if (blocks_[b].parent == parent && std::ranges::equal(stored, tokens)) return b;
    }
    return -1;
}

// Registered blocks holding the prompt's leading full blocks, at most (size - 1) / block_size
// of them. cost: O(prompt) hashing and comparing, no matter how much is cached.
std::vector<int32_t> kv_block_manager::match_blocks(std::span<const int32_t> prompt) const {
    std::vector<int32_t> out;
    if (prompt.empty()) return out;
    const size_t n_full = (prompt.size() - 1) / block_size_;
    uint64_t parent = 0;
    for (size_t i = 0; i < n_full; ++i) {
        const int32_t b = find_cached(parent, prompt.subspan(i * block_size_, block_size_));
        if (b < 0) break;
        out.push_back(b);
        parent = blocks_[b].content;
    }
    return out;
}

int kv_block_manager::match_prefix(std::span<const int32_t> prompt) const {
    return static_cast<int>(match_blocks(prompt).size()) * block_size_;
}

bool kv_block_manager::can_ever_fit(int64_t n_tokens) const {
    return n_tokens <= int64_t{n_blocks()} * block_size_;
}

std::optional<kv_admission> kv_block_manager::admit(int64_t id, std::span<const int32_t> prompt,
                                                    int reserve_tokens, std::string &err) {
    if (prompt.empty()) {
        err = "prompt is empty";
        return std::nullopt;
    }
    if (reserve_tokens < 0) {
        err = "reserve_tokens must be >= 0, got " + std::to_string(reserve_tokens);
        return std::nullopt;
    }
    if (seqs_.contains(id)) {
        err = "sequence " + std::to_string(id) + " is already admitted";
        return std::nullopt;
    }
    const int64_t n_total = static_cast<int64_t>(prompt.size()) + reserve_tokens;
    if (!can_ever_fit(n_total)) {
        err = "request needs " + std::to_string(n_total) + " token positions, the KV cache holds " +
              std::to_string(int64_t{n_blocks()} * block_size_) + " (" + std::to_string(n_blocks()) +
              " blocks of " + std::to_string(block_size_) + ")";
        return std::nullopt;
    }
    const std::vector<int32_t> hit = match_blocks(prompt);
    // note: a hit block that is free counts in n_free() but is taken by the hit itself, so it
    // cannot also serve as a fresh block.
    const int64_t n_hit_free = std::ranges::count_if(hit, [&](int32_t b) { return blocks_[b].ref_cnt == 0; });
    const int64_t n_fresh = blocks_for(n_total, block_size_) - static_cast<int64_t>(hit.size());
    if (n_fresh > n_free() - n_hit_free) {
        err = "not enough free KV blocks: the request needs " + std::to_string(n_fresh) + ", " +
              std::to_string(n_free() - n_hit_free) + " are free";
        return std::nullopt;
    }

    sequence &s = seqs_[id];
    for (int32_t b : hit) { // taken before allocating, so that allocating cannot evict them
        if (blocks_[b].ref_cnt++ == 0) free_cached_.erase({blocks_[b].freed_at, b});
        s.table.push_back(b);
        s.content.push_back(blocks_[b].content);
    }
    for (int64_t i = 0; i < n_fresh; ++i) s.table.push_back(allocate());
    const int n_cached = static_cast<int>(hit.size()) * block_size_;
    s.tokens.assign(prompt.begin(), prompt.begin() + n_cached);
    prefix_hit_tokens_ += n_cached;
    return kv_admission{n_cached, s.table};
}

bool kv_block_manager::append_slot(int64_t id) {
    const auto it = seqs_.find(id);
    if (it == seqs_.end()) return false;
    sequence &s = it->second;
    if (s.tokens.size() < s.table.size() * block_size_) return true;
    if (n_free() == 0) return false;
    s.table.push_back(allocate());
    return true;
}

bool kv_block_manager::commit(int64_t id, std::span<const int32_t> tokens) {
    const auto it = seqs_.find(id);
    if (it == seqs_.end()) return false;
    sequence &s = it->second;
    const bool fits = s.tokens.size() + tokens.size() <= s.table.size() * block_size_;
    assert(fits && "commit past the table's capacity: append_slot first");
    if (!fits) return false;
    s.tokens.insert(s.tokens.end(), tokens.begin(), tokens.end());
    for (size_t i = s.content.size(); i < s.tokens.size() / block_size_; ++i) {
        const uint64_t parent = i == 0 ? 0 : s.content[i - 1];
        const auto full = std::span(s.tokens).subspan(i * block_size_, block_size_);
        if (const int32_t same = find_cached(parent, full); same >= 0) {
            // Ours stays private; the twin is the cached one and the chain goes on through it.
            // note: if the twin is evicted later, blocks this sequence registers after it are
            // unreachable (their parent's content id is gone) until they are evicted in turn.
            s.content.push_back(blocks_[same].content);
            continue;
        }
        const int32_t b = s.table[i];
        block &m = blocks_[b];
        // note: only blocks past the last full one can be unregistered; hits are all full.
        assert(m.content == 0 && m.ref_cnt == 1);
        m.content = next_content_++;
        m.parent = parent;
        m.hash = block_hash(parent, full);
        std::ranges::copy(full, block_tokens_.begin() + static_cast<ptrdiff_t>(b) * block_size_);
        cache_.emplace(m.hash, b);
        s.content.push_back(m.content);
    }
    return true;
}

bool kv_block_manager::truncate(int64_t id, int n_tokens) {
    const auto it = seqs_.find(id);
    if (it == seqs_.end() || n_tokens < 0 || static_cast<size_t>(n_tokens) > it->second.tokens.size()) return false;
    sequence &s = it->second;
    const size_t keep = static_cast<size_t>(blocks_for(n_tokens, block_size_));
    if (n_tokens % block_size_ != 0) {
        const int32_t b = s.table[keep - 1]; // becomes partial: positions past n_tokens get rewritten
        if (blocks_[b].ref_cnt > 1) return false;
        if (blocks_[b].content != 0) unregister(b);
    }
    for (size_t i = s.table.size(); i-- > keep;) unref(s.table[i]);
    s.table.resize(keep);
    s.tokens.resize(static_cast<size_t>(n_tokens));
    s.content.resize(std::min(s.content.size(), static_cast<size_t>(n_tokens / block_size_)));
    return true;
}

void kv_block_manager::release(int64_t id) {
    const auto it = seqs_.find(id);
    if (it == seqs_.end()) return;
    const std::vector<int32_t> &table = it->second.table;
    for (size_t i = table.size(); i-- > 0;) unref(table[i]); // last first: the tail is evicted first
    seqs_.erase(it);
}

std::span<const int32_t> kv_block_manager::table(int64_t id) const {
    const auto it = seqs_.find(id);
    return it == seqs_.end() ? std::span<const int32_t>() : std::span<const int32_t>(it->second.table);
}

int kv_block_manager::n_tokens(int64_t id) const {
    const auto it = seqs_.find(id);
    return it == seqs_.end() ? -1 : static_cast<int>(it->second.tokens.size());
}

int kv_block_manager::ref_cnt(int32_t b) const {
    return b < 0 || b >= n_blocks() ? -1 : blocks_[b].ref_cnt;
}

// A free block for a sequence: never-registered (or partial) ones first, then the registered
// one freed longest ago, whose registration goes. cost: O(log n_blocks).
int32_t kv_block_manager::allocate() {
    int32_t b;
    if (!free_plain_.empty()) {
        b = *free_plain_.begin();
        free_plain_.erase(free_plain_.begin());
    } else {
        assert(!free_cached_.empty() && "allocate() without a free block");
        b = free_cached_.begin()->second;
        free_cached_.erase(free_cached_.begin());
        unregister(b);
        ++evictions_;
    }
    blocks_[b].ref_cnt = 1;
    return b;
}

void kv_block_manager::unref(int32_t b) {
    block &m = blocks_[b];
    assert(m.ref_cnt > 0);
    if (--m.ref_cnt > 0) return;
    if (m.content == 0) {
        free_plain_.insert(b);
    } else {
        m.freed_at = ++clock_;
        free_cached_.emplace(m.freed_at, b);
    }
}

// note: blocks registered after this one in a chain keep their registrations but can no
// longer be reached (a lookup walks from the first block); they go when they are evicted.
void kv_block_manager::unregister(int32_t b) {
    block &m = blocks_[b];
    const auto [first, last] = cache_.equal_range(m.hash);
    const auto it = std::find_if(first, last, [&](const auto &e) { return e.second == b; });
    assert(it != last);
    cache_.erase(it);
    m.content = 0;
    m.parent = 0;
    m.hash = 0;
}

} // namespace actorserve
