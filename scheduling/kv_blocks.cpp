#include "scheduling/kv_blocks.h"

#include <algorithm>
#include <cassert>
#include <climits>

namespace actorserve {
namespace {

int64_t blocks_for(int64_t n_tokens, int block_size) { return (n_tokens + block_size - 1) / block_size; }

} // namespace

kv_block_manager::kv_block_manager(int n_blocks, int block_size)
    : block_size_(block_size), blocks_(static_cast<size_t>(n_blocks)), prefix_(n_blocks, block_size) {
    assert(n_blocks > 0 && block_size > 0);
    // note: positions are int everywhere (n_tokens, truncate), so the whole pool must fit in one.
    assert(int64_t{n_blocks} * block_size <= INT_MAX);
    for (int32_t b = 0; b < n_blocks; ++b) free_plain_.insert(free_plain_.end(), b);
}

int kv_block_manager::match_prefix(std::span<const int32_t> prompt) const {
    return static_cast<int>(prefix_.match(prompt).size()) * block_size_;
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
    const std::vector<int32_t> hit = prefix_.match(prompt);
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
        s.content.push_back(prefix_.content(b));
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
        if (const int32_t same = prefix_.find(parent, full); same >= 0) {
            // Ours stays private; the twin is the cached one and the chain goes on through it.
            // note: if the twin is evicted later, blocks this sequence registers after it are
            // unreachable (their parent's content id is gone) until they are evicted in turn.
            s.content.push_back(prefix_.content(same));
            continue;
        }
        const int32_t b = s.table[i];
        // note: only blocks past the last full one can be unregistered; hits are all full.
        assert(prefix_.content(b) == 0 && blocks_[b].ref_cnt == 1);
        s.content.push_back(prefix_.add(b, parent, full));
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
        if (prefix_.content(b) != 0) prefix_.remove(b);
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
        prefix_.remove(b);
        ++evictions_;
    }
    blocks_[b].ref_cnt = 1;
    return b;
}

void kv_block_manager::unref(int32_t b) {
    block &m = blocks_[b];
    assert(m.ref_cnt > 0);
    if (--m.ref_cnt > 0) return;
    if (prefix_.content(b) == 0) {
        free_plain_.insert(b);
    } else {
        m.freed_at = ++clock_;
        free_cached_.emplace(m.freed_at, b);
    }
}

} // namespace actorserve
