#include "scheduling/scheduler_state.h"

#include <algorithm>
#include <cassert>
#include <string_view>

#include "include/actorserve/request_check.h"

namespace actorserve {

namespace {

// The counter of a finish reason.
uint64_t &outcome(scheduler_counts &c, std::optional<finish_reason> reason) {
    if (!reason) return c.error;
    switch (*reason) {
    case finish_reason::stop: return c.stop;
    case finish_reason::length: return c.length;
    case finish_reason::context: return c.context;
    case finish_reason::cancelled: return c.cancelled;
    }
    return c.error;
}

} // namespace

std::optional<std::string> scheduler_settings::validate() const {
    if (max_seqs < 1 || max_seqs > 256) return "max_seqs must be in [1, 256], got " + std::to_string(max_seqs);
    if (step_tokens < max_seqs)
        return "step_tokens (" + std::to_string(step_tokens) + ") must be at least max_seqs (" +
               std::to_string(max_seqs) + ")";
    if (max_waiting < 0) return "max_waiting must be >= 0";
    if (n_ctx < 2) return "n_ctx must be >= 2";
    if (kv_block_size < 1) return "kv_block_size must be >= 1";
    if (kv_blocks < 1) return "the KV pool must hold at least one block";
    return std::nullopt;
}

int step_plan::n_tokens() const {
    int n = 0;
    for (const step_seq &s : seqs) n += static_cast<int>(s.tokens.size());
    return n;
}

scheduler_state::scheduler_state(const scheduler_settings &s, std::function<bool(int32_t)> is_eog)
    : settings_(s), is_eog_(std::move(is_eog)), kv_(s.kv_blocks, s.kv_block_size) {
    assert(!s.validate());
    for (int i = s.max_seqs - 1; i >= 0; --i) free_slots_.push_back(i);
}

std::optional<scheduler_state::reject> scheduler_state::check(const gen_request &r) const {
    const int n_prompt = static_cast<int>(r.prompt.size());
    // The request's own fields were checked where it came in (check_request, check_prompt in
    // the session); what is left is what only the scheduler knows: its ids, the pool, the queue.
    assert(r.max_tokens >= 1 && !validate(r.sampling));
    if (seqs_.count(r.id)) return reject{errc::invalid_request, "request id " + std::to_string(r.id) + " is already in use"};
    if (auto bad = check_prompt(n_prompt, settings_.n_ctx)) return reject{bad->code, std::move(bad->message)};
    // note: a sequence that cannot fit the pool even alone would preempt itself forever, so it
    // is refused here rather than admitted and starved.
    const int64_t need = std::min<int64_t>(int64_t{n_prompt} + r.max_tokens, settings_.n_ctx);
    const int64_t capacity = int64_t{kv_.n_blocks()} * kv_.block_size();
    if (need > capacity)
        return reject{errc::exceed_context, "request needs up to " + std::to_string(need) + " tokens of KV memory (prompt " +
                                                std::to_string(n_prompt) + " + max_tokens " + std::to_string(r.max_tokens) +
                                                "), the KV cache holds " + std::to_string(capacity)};
    if (static_cast<int>(waiting_.size()) >= settings_.max_waiting)
        return reject{errc::overloaded, std::to_string(waiting_.size()) + " requests are already waiting (limit " +
                                            std::to_string(settings_.max_waiting) + ")"};
    return std::nullopt;
}

std::optional<scheduler_state::reject> scheduler_state::submit(gen_request r) {
    if (auto bad = check(r)) {
        ++(bad->code == errc::overloaded ? counts_.rejected_overloaded : counts_.rejected);
        return bad;
    }
    const int64_t id = r.id;
    sequence s;
    s.tokens = r.prompt;
    s.req = std::move(r);
    seqs_.emplace(id, std::move(s));
    waiting_.push_back(id);
    return std::nullopt;
}

bool scheduler_state::cancel(int64_t id, bool stop_string) {
    auto it = seqs_.find(id);
    if (it == seqs_.end()) return false;
    sequence &s = it->second;
    const finish_reason reason = stop_string ? finish_reason::stop : finish_reason::cancelled;
    if (s.in_step) s.cancelled = reason; // finished by complete(): the executor is still writing its blocks
    else finish(id, reason, ended_);
    return true;
}

std::vector<seq_event> scheduler_state::drain_ended() {
    std::vector<seq_event> out;
    out.swap(ended_);
    return out;
}

void scheduler_state::finish(int64_t id, std::optional<finish_reason> reason, std::vector<seq_event> &out) {
    sequence &s = seqs_.at(id);
    if (s.slot >= 0) {
        kv_.release(id);
        free_slots_.push_back(s.slot);
        running_.erase(std::find(running_.begin(), running_.end(), id));
        released_.push_back(id);
    } else {
        waiting_.erase(std::find(waiting_.begin(), waiting_.end(), id));
    }
    if (out.empty() || out.back().id != id) out.push_back({id, std::nullopt, std::nullopt});
    seq_event &e = out.back();
    e.finish = reason;
    e.failed = !reason;
    e.n_prompt = static_cast<int>(s.req.prompt.size());
    e.n_cached = s.n_cached;
    e.n_generated = s.n_generated;
    seqs_.erase(id);
    ++counts_.finished;
    ++outcome(counts_, reason);
}

void scheduler_state::preempt(int64_t id) {
    sequence &s = seqs_.at(id);
    kv_.release(id); // its full blocks stay cached: re-admission usually recomputes little
    free_slots_.push_back(s.slot);
    s.slot = -1;
    s.num_computed = 0;
    s.first = true;
    running_.erase(std::find(running_.begin(), running_.end(), id));
    waiting_.push_front(id);
    ++counts_.preempted;
}

bool scheduler_state::make_room(int64_t for_id) {
    // The victim: of the lowest class, the youngest not already in this step (it may be for_id
    // itself, which then waits).
    const sequence *victim = nullptr;
    for (int64_t id : running_) {
        const sequence &s = seqs_.at(id);
        if (id != for_id && s.in_step) continue;
        if (!victim || s.req.priority > victim->req.priority ||
            (s.req.priority == victim->req.priority && s.admit_order > victim->admit_order))
            victim = &s;
    }
    if (!victim) return false;
    const int64_t id = victim->req.id;
    preempt(id);
    return id != for_id;
}

std::vector<int64_t> scheduler_state::admission_order() const {
    std::vector<int64_t> order(waiting_.begin(), waiting_.end());
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return seqs_.at(a).req.priority < seqs_.at(b).req.priority; });
    return order;
}

void scheduler_state::preempt_for_priority() {
    const int B = kv_.block_size();
    for (int64_t wid : admission_order()) {
        const sequence &w = seqs_.at(wid);
        if (shares_prefix_in_progress(w)) continue; // it waits anyway; the next one is first
        for (;;) {
            // Counted so that admission surely succeeds when this says it fits: the cached
            // prefix blocks it would reuse may be among the free ones, so they are not counted
            // as free too (at worst a preemption more than needed, never a waiting request
            // that neither fits nor makes room).
            const int n = static_cast<int>(w.tokens.size());
            const int cached = kv_.match_prefix(w.tokens) / B;
            const int need = (n + B - 1) / B - cached;
            if (!free_slots_.empty() && need <= kv_.n_free() - cached) return;
            const sequence *victim = nullptr;
            for (int64_t id : running_) {
                const sequence &s = seqs_.at(id);
                if (s.req.priority <= w.req.priority) continue;
                if (!victim || s.req.priority > victim->req.priority ||
                    (s.req.priority == victim->req.priority && s.admit_order > victim->admit_order))
                    victim = &s;
            }
            if (!victim) return;
            preempt(victim->req.id);
            ++counts_.preempted_for_priority;
        }
    }
}

bool scheduler_state::shares_prefix_in_progress(const sequence &s) const {
    const int B = kv_.block_size();
    // The blocks admission could find cached: those of the prompt's full blocks before its last
    // token (the last is always computed, for its logits).
    const int shared = (static_cast<int>(s.tokens.size()) - 1) / B * B;
    if (shared == 0 || s.admitted) return false; // a preempted one resumes at once
    for (int64_t id : running_) {
        const sequence &r = seqs_.at(id);
        if (r.num_computed >= shared || static_cast<int>(r.tokens.size()) < shared) continue;
        if (std::equal(s.tokens.begin(), s.tokens.begin() + shared, r.tokens.begin())) return true;
    }
    return false;
}

bool scheduler_state::try_admit(sequence &s, int budget) {
    if (free_slots_.empty() || budget <= 0) return false;
    std::string err;
    auto adm = kv_.admit(s.req.id, s.tokens, 0, err);
    if (!adm) return false; // not enough free blocks now; it stays first in line
    s.slot = free_slots_.back();
    free_slots_.pop_back();
    s.num_computed = adm->n_cached;
    s.first = true;
    s.admit_order = ++admit_counter_;
    running_.push_back(s.req.id);
    // note: by `admitted`, not n_generated == 0: a sequence preempted before its first token
    // would otherwise count (and queue) twice.
    if (!s.admitted) {
        s.admitted = true;
        ++counts_.admitted;
        ++counts_.admitted_by_class[static_cast<int>(s.req.priority)];
        counts_.prompt_tokens += s.tokens.size();
        counts_.prefix_hit_tokens += static_cast<uint64_t>(adm->n_cached);
        s.n_cached = adm->n_cached;
        newly_admitted_.push_back(s.req.id);
    }
    return true;
}

step_plan scheduler_state::plan() {
    assert(!in_flight_);
    step_plan p;
    p.released.swap(released_);
    plan_ids_.clear();
    plan_lens_.clear();
    newly_admitted_.clear();
    int budget = settings_.step_tokens;
    const int B = kv_.block_size();
    preempt_for_priority();

    auto add = [&](sequence &s, int n) {
        step_seq q;
        q.id = s.req.id;
        q.slot = s.slot;
        q.pos0 = s.num_computed;
        q.tokens.assign(s.tokens.begin() + s.num_computed, s.tokens.begin() + s.num_computed + n);
        const std::span<const int32_t> table = kv_.table(s.req.id);
        q.table.assign(table.begin(), table.end());
        q.sample = s.num_computed + n == static_cast<int>(s.tokens.size());
        q.first = s.first;
        if (s.first) {
            q.history.assign(s.tokens.begin(), s.tokens.begin() + s.num_computed);
            q.sampling = s.req.sampling;
            q.logprobs = s.req.logprobs;
            q.grammar = s.req.grammar;
            q.vocab = s.req.vocab;
            q.max_tokens = s.req.max_tokens;
        }
        s.first = false;
        s.in_step = true;
        budget -= n;
        plan_ids_.push_back(s.req.id);
        plan_lens_.push_back(n);
        p.seqs.push_back(std::move(q));
    };

    // Running sequences, oldest first: decoding ones (one token each) before prompt chunks,
    // so a long prompt never stalls the streams already flowing.
    const std::vector<int64_t> order = running_;
    for (int pass = 0; pass < 2; ++pass)
    for (int64_t id : order) {
        if (budget <= 0) break;
        auto it = seqs_.find(id);
        if (it == seqs_.end() || it->second.slot < 0 || it->second.in_step) continue; // preempted, or planned
        sequence &s = it->second;
        const bool decoding = static_cast<int>(s.tokens.size()) - s.num_computed == 1;
        if (decoding != (pass == 0)) continue;
        const int n = std::min(static_cast<int>(s.tokens.size()) - s.num_computed, budget);
        bool fits = true;
        while (static_cast<int>(kv_.table(id).size()) * B < s.num_computed + n) {
            if (kv_.append_slot(id)) continue;
            if (!make_room(id)) { fits = false; break; }
        }
        if (fits) add(s, n);
    }
    // Then admissions, by class and first come first served within it, while slots, blocks
    // and budget last. A request whose prompt's full blocks a running one is computing right
    // now waits for them (it then finds them cached) rather than computing them a second time.
    for (int64_t id : admission_order()) {
        if (budget <= 0) break;
        sequence &s = seqs_.at(id);
        if (shares_prefix_in_progress(s)) continue;
        if (!try_admit(s, budget)) break;
        waiting_.erase(std::find(waiting_.begin(), waiting_.end(), id));
        add(s, std::min(static_cast<int>(s.tokens.size()) - s.num_computed, budget));
    }
    in_flight_ = !p.seqs.empty();
    return p;
}

std::vector<seq_event> scheduler_state::abort_in_flight() {
    assert(in_flight_);
    in_flight_ = false;
    std::vector<seq_event> out;
    for (int64_t id : plan_ids_) {
        seqs_.at(id).in_step = false;
        finish(id, std::nullopt, out);
    }
    plan_ids_.clear();
    plan_lens_.clear();
    return out;
}

std::vector<seq_event> scheduler_state::complete(const std::vector<std::pair<int64_t, int32_t>> &sampled) {
    assert(in_flight_);
    in_flight_ = false;
    std::vector<seq_event> out;
    for (size_t i = 0; i < plan_ids_.size(); ++i) {
        const int64_t id = plan_ids_[i];
        sequence &s = seqs_.at(id);
        s.in_step = false;
        if (s.cancelled) {
            finish(id, *s.cancelled, out);
            continue;
        }
        const int n = plan_lens_[i];
        kv_.commit(id, std::span<const int32_t>(s.tokens).subspan(static_cast<size_t>(s.num_computed), static_cast<size_t>(n)));
        s.num_computed += n;
        counts_.computed_tokens += static_cast<uint64_t>(n);
        if (s.num_computed < static_cast<int>(s.tokens.size())) continue; // prompt not done yet
        auto hit = std::find_if(sampled.begin(), sampled.end(), [&](const auto &e) { return e.first == id; });
        assert(hit != sampled.end());
        if (hit == sampled.end()) { finish(id, std::nullopt, out); continue; }
        const int32_t tok = hit->second;
        if (is_eog_(tok)) {
            finish(id, finish_reason::stop, out);
            continue;
        }
        s.tokens.push_back(tok);
        ++s.n_generated;
        out.push_back({id, tok, std::nullopt});
        if (s.n_generated >= s.req.max_tokens) finish(id, finish_reason::length, out);
        else if (static_cast<int>(s.tokens.size()) >= settings_.n_ctx) finish(id, finish_reason::context, out);
    }
    plan_ids_.clear();
    plan_lens_.clear();
    return out;
}

} // namespace actorserve
