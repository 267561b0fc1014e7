// The scheduler's decisions without the actor around them: which requests run, which tokens
// each step computes, which KV blocks each sequence holds, whom to preempt. Single-threaded
// and deterministic, so tests drive it step by step; actors/scheduler.cpp wraps it in an
// actor and the executor runs the steps it plans.
//
// One path for every sequence (no separate prefill phase): a sequence's num_computed catches
// up with its tokens (prompt, then each sampled token), a chunk at a time under the step's
// token budget. A prompt is a long catch-up, decode a catch-up of one, prefix reuse a head
// start. When the sequence's last known token is computed, its logits are sampled.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "scheduling/kv_blocks.h"
#include "engine/sampler.h"
#include "engine/token_mask.h"
#include "include/actorserve/errc.h"
#include "include/actorserve/finish_reason.h"
#include "include/actorserve/priority.h"

namespace actorserve {

struct scheduler_settings {
    int max_seqs = 16;       // sequences in one step (and KV slots of the executor)
    int step_tokens = 512;   // tokens computed per step: one per decoding sequence, the rest
                             // goes to prompt chunks
    int max_waiting = 256;   // requests queued for admission; one more is `overloaded`
    int n_ctx = 2048;        // longest sequence, prompt plus generated tokens
    int kv_blocks = 0;       // KV pool: blocks of kv_block_size positions
    int kv_block_size = 32;

    std::optional<std::string> validate() const; // a message naming the bad setting
};

struct gen_request {
    int64_t id = 0;                 // unique while the request lives
    std::vector<int32_t> prompt;    // non-empty
    sampling_params sampling;
    int max_tokens = 256;           // >= 1
    int logprobs = -1;              // >= 0: report each sampled token's logprob and this many
                                    // top alternatives (step_result::logprobs); -1: none
    // Structured output: only tokens the grammar admits are sampled (engine/token_mask.h).
    std::shared_ptr<const json_grammar> grammar = nullptr;
    std::shared_ptr<const token_vocab> vocab = nullptr; // with grammar
    // Admission order: every waiting request of a higher class before any of a lower one (first
    // come first served within a class); a higher class that cannot get a slot or blocks
    // preempts a lower class's running sequence (include/actorserve/priority.h).
    priority_class priority = priority_class::standard;
};

// One sequence's share of a step: what the executor computes for it.
struct step_seq {
    int64_t id = 0;
    int32_t slot = 0;                 // executor KV slot, < max_seqs
    int32_t pos0 = 0;                 // position of tokens[0]; positions below are in the blocks
    std::vector<int32_t> tokens;      // to compute now (a prompt chunk, or the last sampled one)
    std::vector<int32_t> table;       // KV block table covering pos0 + tokens.size() positions
    bool sample = false;              // sample a next token from the last token's logits
    bool first = false;               // first step since (re)admission
    std::vector<int32_t> history;     // when first: the tokens before pos0, for the penalty
    sampling_params sampling;         // when first
    int logprobs = -1;                // when first: gen_request::logprobs
    std::shared_ptr<const json_grammar> grammar = nullptr; // when first: gen_request's
    std::shared_ptr<const token_vocab> vocab = nullptr;
    int max_tokens = 0;               // when first, with grammar: the answer closes within it
};

struct step_plan {
    std::vector<step_seq> seqs;
    std::vector<int64_t> released;    // sequences that ended since the last plan
    int n_tokens() const;
};

// Outcome of a step for one sequence.
struct seq_event {
    int64_t id = 0;
    std::optional<int32_t> token;     // the token sampled this step (not an end-of-generation one)
    std::optional<finish_reason> finish; // the request ended, and why
    bool failed = false;              // or it ended because its step failed (finish is empty)
    bool ended() const { return finish || failed; }
    // when it ended: what the request cost
    int n_prompt = 0, n_cached = 0, n_generated = 0;
};

// What happened to a sequence between steps, for metrics.
struct scheduler_counts {
    uint64_t admitted = 0, finished = 0, preempted = 0;
    uint64_t preempted_for_priority = 0; // of preempted: for a waiting request of a higher class
    uint64_t admitted_by_class[kPriorityClasses] = {}; // admitted, by priority_class
    // How requests ended, each counted once: finished = stop + length + context + cancelled +
    // error; refused at submit: rejected (can never run: invalid, or too large for the context
    // or the KV pool) and rejected_overloaded (the queue is full).
    uint64_t stop = 0, length = 0, context = 0, cancelled = 0, error = 0;
    uint64_t rejected = 0, rejected_overloaded = 0;
    uint64_t prompt_tokens = 0;       // prompt tokens of admitted requests
    uint64_t prefix_hit_tokens = 0;   // of those, served from cached blocks (not computed)
    uint64_t computed_tokens = 0;     // tokens run through the model, recompute included

    // Sums another scheduler's counts into these (one scheduler per device).
    scheduler_counts &operator+=(const scheduler_counts &o) {
        admitted += o.admitted, finished += o.finished, preempted += o.preempted;
        preempted_for_priority += o.preempted_for_priority;
        for (int c = 0; c < kPriorityClasses; ++c) admitted_by_class[c] += o.admitted_by_class[c];
        stop += o.stop, length += o.length, context += o.context, cancelled += o.cancelled, error += o.error;
        rejected += o.rejected, rejected_overloaded += o.rejected_overloaded;
        prompt_tokens += o.prompt_tokens, prefix_hit_tokens += o.prefix_hit_tokens;
        computed_tokens += o.computed_tokens;
        return *this;
    }
};

class scheduler_state {
public:
    // is_eog: whether a sampled token ends generation (the tokenizer's rule).
    scheduler_state(const scheduler_settings &s, std::function<bool(int32_t)> is_eog);

    struct reject {
        errc code;
        std::string message;
    };
    // Queues a request. Rejects (queue unchanged) an empty prompt, a request that can never fit
    // the context or the KV pool, an id in use, or a full queue (`overloaded`). max_tokens and
    // the sampling parameters were checked where the request came in (check_request).
    std::optional<reject> submit(gen_request r);

    // Ends a request wherever it is: a waiting one leaves the queue, a running one frees its
    // slot and blocks now (or, while its step is in flight, when the step completes). Returns
    // false for an unknown id. Its end is reported by the next complete() or by drain_ended(),
    // with finish "cancelled", or "stop" when stop_string (the session found a stop string).
    bool cancel(int64_t id, bool stop_string = false);

    // Plans the next step; empty when there is nothing to compute. At most one plan is in
    // flight: call complete() before planning again.
    step_plan plan();
    // Requests the last plan() admitted for the first time, in plan order: their wait in the
    // queue ends now. A sequence re-admitted after preemption is not among them.
    const std::vector<int64_t> &newly_admitted() const { return newly_admitted_; }
    // Applies the sampled tokens of the step in flight ((id, token) per sequence that sampled)
    // and returns what each client should hear, in plan order.
    std::vector<seq_event> complete(const std::vector<std::pair<int64_t, int32_t>> &sampled);
    // Requests that ended outside a step (cancelled while waiting or idle).
    std::vector<seq_event> drain_ended();
    // The step in flight failed: its sequences end with "error" (blocks freed).
    std::vector<seq_event> abort_in_flight();

    bool in_flight() const { return in_flight_; }
    bool has_work() const { return !waiting_.empty() || !running_.empty(); }
    int n_waiting() const { return static_cast<int>(waiting_.size()); }
    int n_running() const { return static_cast<int>(running_.size()); }
    const kv_block_manager &kv() const { return kv_; }
    const scheduler_counts &counts() const { return counts_; }
    const scheduler_settings &settings() const { return settings_; }

private:
    struct sequence {
        gen_request req;
        std::vector<int32_t> tokens;  // prompt, then every sampled token
        int num_computed = 0;         // leading tokens whose KV is in the blocks
        int n_generated = 0;
        int n_cached = 0;             // prompt tokens served from cached blocks at first admission
        int slot = -1;                // -1 while waiting
        uint64_t admit_order = 0;     // larger: younger (preempted first)
        bool first = true;            // next plan is its first since admission
        bool admitted = false;        // ever admitted (preemption does not undo it)
        std::optional<finish_reason> cancelled; // cancelled while in a step: how it ends when the step completes
        bool in_step = false;         // part of the plan in flight
    };

    std::optional<reject> check(const gen_request &r) const;
    bool try_admit(sequence &s, int budget);
    // A running sequence is computing the full blocks of s's prompt now (OpenAI's n choices,
    // identical requests at once): s waits and then finds them cached.
    bool shares_prefix_in_progress(const sequence &s) const;
    bool make_room(int64_t for_id);   // preempts the lowest class's youngest other running sequence
    // Before a plan: while the first waiting request (in admission order) lacks a slot or
    // blocks, preempts the youngest running sequence of the lowest class below its own.
    void preempt_for_priority();
    std::vector<int64_t> admission_order() const; // waiting_, stably sorted by class
    void preempt(int64_t id);
    void finish(int64_t id, std::optional<finish_reason> reason, std::vector<seq_event> &out); // nullopt: failed

    scheduler_settings settings_;
    std::function<bool(int32_t)> is_eog_;
    kv_block_manager kv_;
    std::unordered_map<int64_t, sequence> seqs_;
    std::deque<int64_t> waiting_;      // arrival order; preempted ones go to the front (admitted
                                       // by class first: admission_order())
    std::vector<int64_t> running_;     // admitted, holding a slot and blocks
    std::vector<int32_t> free_slots_;
    std::vector<int64_t> released_;    // ended since the last plan, for the executor
    std::vector<seq_event> ended_;     // ended outside a step
    std::vector<int64_t> plan_ids_;    // sequences of the step in flight, in plan order
    std::vector<int> plan_lens_;       // their token counts
    std::vector<int64_t> newly_admitted_; // by the last plan, for the first time
    bool in_flight_ = false;
    uint64_t admit_counter_ = 0;
    scheduler_counts counts_;
};

} // namespace actorserve
