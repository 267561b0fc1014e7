// A decoder without a model, for scheduling tests on tiny configurations: it keeps, for every
// KV cell of its pool, the token written there, and the logits of a token peak at a token
// derived from the whole sequence it reads back through the slot's block table
// (next_token()). So an output is right only if every position the scheduler claimed was in
// the blocks (a cached prefix, a recomputed sequence, an earlier chunk) really holds that
// sequence's token, and a test can compute the expected output without running anything.
//
// decode() fails, changing nothing, where the engine's would (a bad token, slot or position,
// a position past the slot's table) and also where the engine would silently compute garbage:
// a read of a cell never written, or a write that changes a cell that another slot of the same
// batch reads (a shared prefix block overwritten under it). A slot the batch does not touch may
// point at blocks given to others since (the runner never clears a slot); a later read by it of
// a changed cell shows up as a wrong output.
//
//   auto dec = std::make_unique<test_support::scripted_decoder>(/*n_seq=*/4, /*n_blocks=*/16, /*block=*/4);
//   step_runner runner(std::move(dec), /*n_batch=*/16);
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/decoder.h"

namespace test_support {

class scripted_decoder final : public actorserve::batch_decoder {
public:
    static constexpr int kVocab = 97;
    static constexpr float kPeak = 10.0f;

    // The token the scripted model predicts after `seq` (FNV-1a of the ids, mod kVocab).
    static int32_t next_token(std::span<const int32_t> seq) {
        uint64_t h = 1469598103934665603ull;
        for (int32_t t : seq) {
            h ^= static_cast<uint32_t>(t);
            h *= 1099511628211ull;
        }
        return static_cast<int32_t>(h % kVocab);
    }

    scripted_decoder(int n_seq, int n_blocks, int block_size)
        : block_size_(block_size), cells_(static_cast<size_t>(n_blocks) * static_cast<size_t>(block_size), -1),
          tables_(static_cast<size_t>(n_seq)), n_past_(static_cast<size_t>(n_seq), 0) {}

    // The next decode() fails with `why` (a device error, say), changing nothing.
    void fail_next(std::string why) { fail_ = std::move(why); }
    int64_t tokens_computed() const { return computed_; }
    int n_decodes() const { return decodes_; }

    bool decode(std::span<const actorserve::batch_token> batch, std::string &err) override {
        if (!fail_.empty()) {
            err = std::move(fail_);
            fail_.clear();
            return false;
        }
        if (batch.empty()) return bad(err, "empty batch");
        // Check everything first: where each token goes, in order per slot.
        std::vector<int> next(n_past_);
        std::vector<std::pair<size_t, int32_t>> writes; // (cell, token)
        std::vector<bool> in_batch(tables_.size(), false);
        for (const actorserve::batch_token &b : batch)
            if (b.seq >= 0 && b.seq < static_cast<int>(tables_.size())) in_batch[static_cast<size_t>(b.seq)] = true;
        for (size_t i = 0; i < batch.size(); ++i) {
            const actorserve::batch_token &b = batch[i];
            if (b.token < 0 || b.token >= kVocab) return bad(err, "token " + std::to_string(b.token) + " outside the vocabulary");
            if (b.seq < 0 || b.seq >= static_cast<int>(tables_.size())) return bad(err, "slot " + std::to_string(b.seq) + " out of range");
            const size_t s = static_cast<size_t>(b.seq);
            if (b.pos != next[s])
                return bad(err, "slot " + std::to_string(b.seq) + " got position " + std::to_string(b.pos) + ", expected " +
                                    std::to_string(next[s]));
            const auto cell = cell_of(b.seq, b.pos);
            if (!cell) return bad(err, "slot " + std::to_string(b.seq) + " position " + std::to_string(b.pos) + " is past its blocks");
            for (const auto &[c, t] : writes)
                if (c == *cell && t != b.token) return bad(err, "two tokens of one batch write the same KV cell");
            if (cells_[*cell] >= 0 && cells_[*cell] != b.token)
                if (auto reader = live_reader(*cell, b.seq, in_batch))
                    return bad(err, "slot " + std::to_string(b.seq) + " overwrites a KV cell that slot " + std::to_string(*reader) +
                                        " still reads");
            writes.emplace_back(*cell, b.token);
            ++next[s];
        }
        const std::vector<int32_t> before = cells_;
        for (const auto &[c, t] : writes) cells_[c] = t;
        // Then read each asked-for sequence back through its table.
        std::vector<float> logits;
        for (const actorserve::batch_token &b : batch) {
            if (!b.logits) continue;
            std::vector<int32_t> seq;
            for (int p = 0; p <= b.pos; ++p) {
                const int32_t t = cells_[*cell_of(b.seq, p)];
                if (t < 0) {
                    cells_ = before;
                    return bad(err, "slot " + std::to_string(b.seq) + " reads position " + std::to_string(p) +
                                        ", a KV cell never written");
                }
                seq.push_back(t);
            }
            logits.insert(logits.end(), kVocab, 0.0f);
            logits[logits.size() - kVocab + static_cast<size_t>(next_token(seq))] = kPeak;
        }
        logits_ = std::move(logits);
        n_past_ = std::move(next);
        computed_ += static_cast<int64_t>(batch.size());
        ++decodes_;
        return true;
    }
    const float *logits(size_t i) const override { return &logits_.at(i * kVocab); }
    void set_blocks(int seq, std::span<const int32_t> table, int n_past) override {
        if (static_cast<size_t>(n_past) > table.size() * static_cast<size_t>(block_size_))
            throw std::logic_error("set_blocks: n_past past the table");
        for (int32_t b : table)
            if (b < 0 || static_cast<size_t>(b) * block_size_ >= cells_.size()) throw std::logic_error("set_blocks: bad block id");
        tables_.at(static_cast<size_t>(seq)).assign(table.begin(), table.end());
        n_past_[static_cast<size_t>(seq)] = n_past;
    }
    void clear(int seq) override {
        tables_.at(static_cast<size_t>(seq)).clear();
        n_past_[static_cast<size_t>(seq)] = 0;
    }
    int n_past(int seq) const override { return n_past_.at(static_cast<size_t>(seq)); }
    int n_vocab() const override { return kVocab; }

private:
    static bool bad(std::string &err, std::string why) {
        err = "scripted decoder: " + std::move(why);
        return false;
    }
    std::optional<size_t> cell_of(int seq, int pos) const {
        const auto &t = tables_[static_cast<size_t>(seq)];
        const size_t b = static_cast<size_t>(pos / block_size_);
        if (b >= t.size()) return std::nullopt;
        return static_cast<size_t>(t[b]) * static_cast<size_t>(block_size_) + static_cast<size_t>(pos % block_size_);
    }
    // Another slot of the batch whose positions [0, n_past) include `cell`.
    std::optional<int> live_reader(size_t cell, int except, const std::vector<bool> &in_batch) const {
        for (size_t s = 0; s < tables_.size(); ++s) {
            if (static_cast<int>(s) == except || !in_batch[s]) continue;
            for (int p = 0; p < n_past_[s]; ++p)
                if (cell_of(static_cast<int>(s), p) == cell) return static_cast<int>(s);
        }
        return std::nullopt;
    }

    int block_size_;
    std::vector<int32_t> cells_;               // (n_blocks * block_size,) token or -1
    std::vector<std::vector<int32_t>> tables_; // (n_seq, blocks)
    std::vector<int> n_past_;                  // (n_seq,)
    std::vector<float> logits_;                // (asked rows, kVocab)
    std::string fail_;
    int64_t computed_ = 0;
    int decodes_ = 0;
};

} // namespace test_support
