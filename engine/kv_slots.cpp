#include "engine/kv_slots.h"

#include <algorithm>
#include <cassert>
#include <numeric>

namespace actorserve {

int round_kv_block_size(int b) { return std::max(32, (b + 31) / 32 * 32); }

kv_slots::kv_slots(const context_params &params, int n_vocab) : params_(params), n_vocab_(n_vocab) {
    params_.n_ctx = std::max(1, params_.n_ctx);
    params_.n_batch = std::max(1, params_.n_batch);
    params_.n_seq = std::max(1, params_.n_seq);
    params_.kv_block_size = block_size_ = round_kv_block_size(params_.kv_block_size);
    params_.n_kv_blocks = std::max(0, params_.n_kv_blocks);
    const size_t S = static_cast<size_t>(params_.n_seq);
    n_past_.assign(S, 0);
    seq_last_.assign(S, -1);
    seq_count_.assign(S, 0);
    pool_mode_ = params_.n_kv_blocks > 0;
    table_len_ = (params_.n_ctx + block_size_ - 1) / block_size_; // blocks a slot owns in slot mode
    n_blocks_ = pool_mode_ ? params_.n_kv_blocks : params_.n_seq * table_len_;
    tables_.resize(S);
    if (!pool_mode_)
        for (size_t s = 0; s < S; ++s) {
            tables_[s].resize(static_cast<size_t>(table_len_));
            std::iota(tables_[s].begin(), tables_[s].end(), static_cast<int32_t>(s) * table_len_);
        }
}

int kv_slots::capacity(int seq) const {
    const size_t held = tables_[static_cast<size_t>(seq)].size() * static_cast<size_t>(block_size_);
    return static_cast<int>(std::min(held, static_cast<size_t>(params_.n_ctx)));
}

void kv_slots::truncate(int n, int seq) {
    assert(seq >= 0 && seq < params_.n_seq && n >= 0 && n <= n_past_[static_cast<size_t>(seq)]);
    n_past_[static_cast<size_t>(seq)] = n;
}

void kv_slots::set_blocks(int seq, std::span<const int32_t> table, int n_past) {
    assert(pool_mode_ && "set_blocks: slot mode owns its blocks");
    assert(seq >= 0 && seq < params_.n_seq);
    assert(n_past >= 0 && n_past <= params_.n_ctx &&
           static_cast<size_t>(n_past) <= table.size() * static_cast<size_t>(block_size_));
    for ([[maybe_unused]] int32_t b : table) assert(b >= 0 && b < n_blocks_);
    tables_[static_cast<size_t>(seq)].assign(table.begin(), table.end());
    n_past_[static_cast<size_t>(seq)] = n_past;
}

void kv_slots::clear(int seq) {
    assert(pool_mode_ && "clear: slot mode owns its blocks");
    assert(seq >= 0 && seq < params_.n_seq);
    tables_[static_cast<size_t>(seq)].clear();
    n_past_[static_cast<size_t>(seq)] = 0;
}

bool kv_slots::check_token(int32_t token, size_t index, std::string &err) const {
    if (token >= 0 && token < n_vocab_) return true;
    err = "token id " + std::to_string(token) + " at index " + std::to_string(index) +
          " is outside the vocabulary [0, " + std::to_string(n_vocab_) + ")";
    return false;
}

bool kv_slots::check_batch(std::span<const batch_token> batch, std::string &err) {
    if (batch.empty()) {
        err = "nothing to evaluate: the batch is empty";
        return false;
    }
    if (batch.size() > static_cast<size_t>(params_.n_batch)) {
        err = "batch of " + std::to_string(batch.size()) + " tokens exceeds n_batch " + std::to_string(params_.n_batch);
        return false;
    }
    std::fill(seq_last_.begin(), seq_last_.end(), -1);
    std::fill(seq_count_.begin(), seq_count_.end(), 0);
    for (size_t i = 0; i < batch.size(); ++i) {
        const batch_token &b = batch[i];
        if (!check_token(b.token, i, err)) return false;
        if (b.seq < 0 || b.seq >= params_.n_seq) {
            err = "sequence " + std::to_string(b.seq) + " at index " + std::to_string(i) + " is outside [0, " +
                  std::to_string(params_.n_seq) + ")";
            return false;
        }
        const size_t s = static_cast<size_t>(b.seq);
        const int expected = seq_last_[s] >= 0 ? seq_last_[s] + 1 : n_past_[s];
        if (b.pos != expected) {
            err = "token at index " + std::to_string(i) + " has position " + std::to_string(b.pos) + " but sequence " +
                  std::to_string(b.seq) + " continues at " + std::to_string(expected);
            return false;
        }
        if (b.pos >= params_.n_ctx) {
            err = "context overflow: sequence " + std::to_string(b.seq) + " would reach position " +
                  std::to_string(b.pos) + ", context size " + std::to_string(params_.n_ctx);
            return false;
        }
        if (b.pos >= capacity(b.seq)) {
            err = "KV blocks exhausted: sequence " + std::to_string(b.seq) + " would reach position " +
                  std::to_string(b.pos) + " but its " + std::to_string(tables_[s].size()) + " blocks of " +
                  std::to_string(block_size_) + " hold " + std::to_string(capacity(b.seq)) + " positions";
            return false;
        }
        seq_last_[s] = b.pos;
        ++seq_count_[s];
    }
    return true;
}

void kv_slots::commit_batch() {
    for (size_t s = 0; s < seq_last_.size(); ++s)
        if (seq_last_[s] >= 0) n_past_[s] = seq_last_[s] + 1;
}

bool kv_slots::check_eval(std::span<const int32_t> tokens, std::string &err) const {
    if (tokens.empty()) {
        err = "nothing to evaluate: the token list is empty";
        return false;
    }
    if (tokens.size() > static_cast<size_t>(params_.n_ctx - n_past_[0])) {
        err = "context overflow: " + std::to_string(n_past_[0]) + " tokens so far + " + std::to_string(tokens.size()) +
              " new > context size " + std::to_string(params_.n_ctx);
        return false;
    }
    if (static_cast<int64_t>(tokens.size()) > capacity(0) - n_past_[0]) {
        err = "KV blocks exhausted: sequence 0 has " + std::to_string(n_past_[0]) + " tokens + " +
              std::to_string(tokens.size()) + " new but its " + std::to_string(tables_[0].size()) + " blocks of " +
              std::to_string(block_size_) + " hold " + std::to_string(capacity(0)) + " positions";
        return false;
    }
    for (size_t i = 0; i < tokens.size(); ++i)
        if (!check_token(tokens[i], i, err)) return false;
    return true;
}

void kv_slots::eval_chunk(std::span<const int32_t> tokens, size_t i, std::vector<batch_token> &out) const {
    const size_t n = std::min(static_cast<size_t>(params_.n_batch), tokens.size() - i);
    out.clear();
    for (size_t t = 0; t < n; ++t)
        out.push_back({tokens[i + t], 0, n_past_[0] + static_cast<int32_t>(t), i + t + 1 == tokens.size()});
}

} // namespace actorserve
