#include "include/actorserve/runtime.h"

#include "actors/cache_actor.h"
#include "actors/embed_actor.h"
#include "actors/executor.h"
#include "actors/metrics.h"
#include "actors/placement.h"
#include "actors/protocol.h"
#include "actors/rag_actor.h"
#include "actors/scheduler.h"
#include "actors/session.h"
#include "engine/chat_template.h"
#include "engine/forward.h"
#include "engine/token_mask.h"
#include "engine/tokenizer.h"

#include <algorithm>
#include <filesystem>

namespace actorserve {

struct runtime::actors {
    std::vector<executor_actor> executors; // one per device
    std::vector<scheduler_actor> schedulers;
    submit_target scheduler;               // where sessions submit: the scheduler, or placement
    metrics_actor metrics;
    cache_actor cache;                     // null when the caches are off
    rag_actor rag;                         // null when retrieval is off
    embed_actor embeddings;                // null when embeddings are off
};

scheduler_settings runtime_config::settings(const llama_hparams &hp) const {
    scheduler_settings s;
    s.max_seqs = max_seqs;
    s.step_tokens = step_tokens;
    s.max_waiting = max_waiting;
    s.n_ctx = n_ctx;
    s.kv_block_size = kv_block_size;
    const size_t per_block = llama_context::kv_bytes_per_block(hp, kv_block_size);
    s.kv_blocks = static_cast<int>((static_cast<size_t>(kv_capacity_mib) << 20) / per_block);
    return s;
}

void runtime::tune(caf::actor_system_config &cfg) {
    cfg.set("work-stealing.aggressive-poll-attempts", size_t{0});
    cfg.set("work-stealing.moderate-poll-attempts", size_t{0});
}

std::unique_ptr<runtime> runtime::start(caf::actor_system &sys, const runtime_config &cfg, std::string &err) {
    std::unique_ptr<runtime> rt(new runtime(sys));
    rt->cfg_ = cfg;
    std::shared_ptr<llama_model> model = llama_model::load(cfg.model_path, err);
    if (!model) return nullptr;
    auto tok = tokenizer::from_gguf(model->file(), err);
    if (!tok) return nullptr;
    const std::string src = model->file().get_string("tokenizer.chat_template").value_or("");
    auto tmpl = chat_template::detect(src, err);
    if (!tmpl) return nullptr;
    rt->tmpl_ = std::make_shared<const chat_template>(std::move(*tmpl));
    if (cfg.kv_block_size <= 0 || cfg.kv_block_size % 32 != 0) {
        err = "kv_block_size must be a positive multiple of 32, got " + std::to_string(cfg.kv_block_size);
        return nullptr;
    }
    if (cfg.kv_capacity_mib <= 0) {
        err = "kv_capacity_mib must be > 0, got " + std::to_string(cfg.kv_capacity_mib);
        return nullptr;
    }
    if (cfg.n_ctx < 2 || (model->hparams().n_ctx_train > 0 && cfg.n_ctx > model->hparams().n_ctx_train)) {
        err = "n_ctx must be in [2, " + std::to_string(model->hparams().n_ctx_train) + "], got " + std::to_string(cfg.n_ctx);
        return nullptr;
    }
    rt->settings_ = std::make_shared<const scheduler_settings>(cfg.settings(model->hparams()));
    if (auto bad = rt->settings_->validate()) {
        err = "settings: " + *bad;
        return nullptr;
    }
    rt->model_ = model;
    rt->tok_ = std::shared_ptr<const tokenizer>(std::move(tok));
    rt->vocab_ = std::make_shared<const token_vocab>(*rt->tok_);

    context_params cp;
    cp.n_ctx = cfg.n_ctx;
    cp.n_batch = rt->settings_->step_tokens;
    cp.n_seq = rt->settings_->max_seqs;
    cp.n_threads = cfg.n_threads;
    cp.kv_block_size = cfg.kv_block_size;
    cp.n_kv_blocks = rt->settings_->kv_blocks;
    // The server reuses KV across requests and recomputes preempted sequences: both stay exact
    // only when a token's KV does not depend on how its sequence was split into steps.
    cp.chunk_invariant = true;
    auto devices = resolve_devices(cfg.devices, rt->notes_, err);
    if (!devices) return nullptr;
    // Every decoder is built before any actor exists, so a device that cannot be opened (out of
    // memory, say) stops the start with its reason and leaves nothing running.
    std::vector<std::unique_ptr<batch_decoder>> decoders;
    for (const device_choice &d : *devices) {
        auto ctx = open_decoder(d, *model, cp, err);
        if (!ctx) return nullptr;
        decoders.push_back(std::move(ctx));
        rt->device_names_.push_back(d.name());
    }
    rt->actors_ = std::make_shared<actors>();
    actors &a = *rt->actors_;
    a.metrics = spawn_metrics(sys, std::chrono::milliseconds(5000));
    auto tk = rt->tok_;
    for (size_t i = 0; i < devices->size(); ++i) {
        a.executors.push_back(
            spawn_executor(sys, rt->model_, std::move(decoders[i]), cp.n_batch, (*devices)[i], a.metrics));
        scheduler_config sc;
        sc.sched = *rt->settings_;
        sc.batch_wait = cfg.batch_wait;
        sc.mailbox_limit = cfg.scheduler_mailbox_limit;
        sc.retry_after_ms = cfg.retry_after_ms;
        sc.device = static_cast<int>(i);
        a.schedulers.push_back(
            spawn_scheduler(sys, sc, a.executors.back(), a.metrics, [tk](int32_t t) { return tk->is_eog(t); }));
    }
    if (a.schedulers.size() == 1) {
        a.scheduler = a.schedulers.front();
    } else {
        placement_actor p = spawn_placement(sys, {a.schedulers.begin(), a.schedulers.end()},
                                            std::vector<int>(a.schedulers.size(), rt->settings_->kv_blocks),
                                            rt->settings_->kv_block_size);
        a.scheduler = p;
        for (const scheduler_actor &s : a.schedulers) caf::anon_send(s, placement_atom::value, p);
    }
    if (cfg.cache.enabled) {
        // Cached answers belong to one model: its name, and its file's size so that a different
        // file under the same name does not inherit them.
        std::error_code ec;
        const auto size = std::filesystem::file_size(cfg.model_path, ec);
        if (rt->cfg_.model_name.empty()) rt->cfg_.model_name = std::filesystem::path(cfg.model_path).stem().string();
        rt->cfg_.model_name += ":" + std::to_string(ec ? 0 : size);
        a.cache = spawn_cache(sys, cfg.cache, rt->cfg_.model_name, a.metrics, rt->notes_);
    }
    if (cfg.rag.enabled) {
        // Asked for retrieval and unable to embed: refuse to start rather than serve requests
        // that would all fail.
        a.rag = spawn_rag(sys, cfg.rag, a.metrics, rt->notes_);
        if (!a.rag) {
            err = rt->notes_.empty() ? "rag: cannot start" : rt->notes_.back();
            return nullptr;
        }
    }
    // An auxiliary endpoint: without its model the runtime serves chat and says why
    // /v1/embeddings is off.
    if (cfg.embeddings.enabled) a.embeddings = spawn_embeddings(sys, cfg.embeddings, rt->notes_);
    return rt;
}

runtime::~runtime() {
    if (actors_) {
        caf::anon_send_exit(actors_->scheduler, caf::exit_reason::user_shutdown);
        for (const auto &s : actors_->schedulers) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
        for (const auto &e : actors_->executors) caf::anon_send_exit(e, caf::exit_reason::user_shutdown);
        caf::anon_send_exit(actors_->metrics, caf::exit_reason::user_shutdown);
        if (actors_->cache) caf::anon_send_exit(actors_->cache, caf::exit_reason::user_shutdown);
        if (actors_->rag) caf::anon_send_exit(actors_->rag, caf::exit_reason::user_shutdown);
        if (actors_->embeddings) caf::anon_send_exit(actors_->embeddings, caf::exit_reason::user_shutdown);
    }
}

chat_session runtime::open_session() {
    session_config sc;
    sc.tok = tok_;
    sc.vocab = vocab_;
    sc.tmpl = tmpl_;
    sc.n_ctx = settings_->n_ctx;
    sc.limits = cfg_.limits();
    sc.cache = actors_->cache;
    sc.rag = actors_->rag;
    sc.rag_top_k = cfg_.rag.default_top_k;
    sc.rag_budget_tokens = cfg_.rag.budget_tokens;
    sc.retry_after_ms = cfg_.retry_after_ms;
    return spawn_session(sys_, sc, actors_->scheduler);
}

metrics_source runtime::metrics() const { return actors_->metrics; }

rag_actor runtime::rag() const { return actors_->rag; }

embed_actor runtime::embeddings() const { return actors_->embeddings; }

std::optional<std::chrono::milliseconds> runtime::longest_step(std::chrono::milliseconds timeout) const {
    caf::scoped_actor self{sys_};
    std::chrono::milliseconds longest{0};
    bool answered = true;
    for (const scheduler_actor &s : actors_->schedulers) {
        self->request(s, timeout, heartbeat_atom::value)
            .receive([&](int64_t ms) { longest = std::max(longest, std::chrono::milliseconds(ms)); },
                     [&](caf::error &) { answered = false; });
        if (!answered) return std::nullopt;
    }
    return longest;
}

} // namespace actorserve
