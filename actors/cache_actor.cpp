#include "actors/cache_actor.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <unordered_set>

#include "cache/exact_cache.h"
#include "store/persist.h"
#include "engine/embedder.h"
#include "include/actorserve/metrics.h"

namespace actorserve {

namespace {

// What the actor owns. Held by shared_ptr so that the exit handler, which runs after the
// actor's state is gone, can still save it.
struct caches {
    cache_settings cfg;
    std::unordered_set<std::string> semantic_off;   // cfg.semantic_off
    std::string model;
    exact_cache exact;
    std::unique_ptr<semantic_cache> sem;   // null: semantic lookups off
    std::unique_ptr<embedder> emb;
    metrics_actor metrics;
    cache_metrics counts;
    bool dirty = false;

    caches(const cache_settings &s, std::string model_name)
        : cfg(s), semantic_off(s.semantic_off.begin(), s.semantic_off.end()), model(std::move(model_name)), exact(s.exact) {}

    std::string path(const char *name) const { return (std::filesystem::path(cfg.dir) / name).string(); }

    bool save_failing = false; // the last save failed: logged once until one succeeds

    void save() {
        if (cfg.dir.empty() || !dirty) return;
        std::string err;
        // A failed save keeps the previous file whole (store/persist.h) and is retried next time.
        const bool ok = exact.save(path("exact.cache"), err) && (!sem || sem->save(path("semantic.cache"), err));
        if (!ok) {
            ++counts.save_errors;
            if (!save_failing)
                spdlog::error("cache: not saved ({}); the previous file is kept and serving goes on, retried every {} s",
                              err, cfg.save_interval_s);
            save_failing = true;
            publish();
            return;
        }
        if (save_failing) spdlog::info("cache: saved to {} again", cfg.dir);
        save_failing = false;
        dirty = false;
    }

    void publish() {
        const auto &e = exact.stats();
        counts.entries_exact = e.entries;
        counts.bytes_exact = e.bytes;
        counts.evictions_exact_lfu = e.evictions_lfu;
        counts.evictions_exact_ttl = e.evictions_ttl;
        if (sem) {
            const auto &s = sem->stats();
            counts.entries_semantic = s.entries;
            counts.bytes_semantic = s.bytes;
            counts.evictions_semantic_lfu = s.evictions_lfu;
            counts.evictions_semantic_ttl = s.evictions_ttl;
            counts.guard_rejections = s.guard_rejections;
        }
        if (metrics) caf::anon_send(metrics, counts);
    }
};

struct cache_st {
    cache_st() = default; // see actors/scheduler.cpp: CAF 0.17.6 + C++20 state initialisation
    std::shared_ptr<caches> c;
};

using self_ptr = cache_actor::stateful_pointer<cache_st>;

cache_reply lookup(caches &c, cache_query &q) {
    cache_reply r;
    r.gen_id = q.gen_id;
    ++c.counts.lookups;
    const exact_key key = exact_key::make(c.model, q.prompt, q.params);
    if (auto hit = c.exact.lookup(key, q.allow_sampled)) {
        ++c.counts.hits_exact;
        r.kind = cache_reply::exact;
        r.answer = std::move(*hit);
        r.similarity = 1.0f;
        return r;
    }
    const std::string scope_id = q.semantic_ok ? semantic_scope_id(c.model, q.system_prompt) : std::string();
    if (q.debug) {
        if (!c.cfg.debug_hits) r.debug_refused = "this server does not show cache entries ([cache] debug_hits = false)";
        else if (!q.semantic_ok) r.debug_refused = "not a first question: the semantic cache is not asked";
        else r.scope_id = scope_id;
    }
    const bool semantic_off = q.semantic_ok && c.semantic_off.count(scope_id) > 0;
    if (semantic_off) ++c.counts.semantic_off;
    if (c.sem && c.emb && q.semantic_ok && (q.allow_sampled || is_deterministic(q.params.sampling))) {
        // The embedding is made also where semantic hits are off: the answer is stored all the
        // same, so that switching them on again finds it.
        r.vec = c.emb->embed(q.question);
        if (!r.vec.empty() && !semantic_off) {
            auto found = c.sem->lookup(semantic_scope(c.model, q.system_prompt, q.params), r.vec, q.question);
            if (found.hit) {
                ++c.counts.hits_semantic;
                r.kind = cache_reply::semantic;
                r.answer = std::move(found.hit->answer);
                r.similarity = found.hit->similarity;
                if (q.debug && c.cfg.debug_hits) r.cached_question = std::move(found.hit->question);
                r.vec.clear();
                return r;
            }
        }
    }
    ++c.counts.misses;
    return r;
}

void store(caches &c, cache_store &s) {
    const cache_query &q = s.query;
    const exact_key key = exact_key::make(c.model, q.prompt, q.params);
    bool stored = false;
    auto st = c.exact.insert(key, s.answer, q.allow_sampled);
    stored |= st == insert_status::stored || st == insert_status::replaced;
    if (c.sem && q.semantic_ok && !s.vec.empty()) {
        auto r = c.sem->insert(semantic_scope(c.model, q.system_prompt, q.params), s.vec, q.question, std::move(s.answer));
        stored |= r.status == insert_status::stored || r.status == insert_status::replaced;
    }
    if (stored) {
        ++c.counts.stores;
        c.dirty = true;
    }
}

cache_actor::behavior_type cache_impl(self_ptr self, std::shared_ptr<caches> owned) {
    self->state.c = owned;
    // Saved once more on the way out (the runtime stopping), from the thread the actor ran on.
    self->attach_functor([owned] { owned->save(); });
    owned->publish();
    if (!owned->cfg.dir.empty() && owned->cfg.save_interval_s > 0)
        self->delayed_send(self, std::chrono::seconds(owned->cfg.save_interval_s), save_atom::value);
    return {
        [self](lookup_atom, cache_query &q) {
            caches &c = *self->state.c;
            auto to = caf::actor_cast<cache_sink>(self->current_sender());
            if (!to) return;
            // The counts go out before the answer: whoever the answer reaches, and whatever it
            // asks the metrics actor next, finds them counted.
            if (self->mailbox().size() > c.cfg.mailbox_limit) {
                ++c.counts.bypassed;
                c.publish();
                cache_reply r;
                r.kind = cache_reply::bypass;
                r.gen_id = q.gen_id;
                self->send(to, std::move(r));
                return;
            }
            cache_reply r = lookup(c, q);
            c.publish();
            self->send(to, std::move(r));
        },
        [self](store_atom, cache_store &s) {
            caches &c = *self->state.c;
            if (self->mailbox().size() > c.cfg.mailbox_limit) {
                ++c.counts.stores_dropped;
            } else {
                store(c, s);
            }
            c.publish();
        },
        [self](save_atom) {
            caches &c = *self->state.c;
            c.save();
            self->delayed_send(self, std::chrono::seconds(c.cfg.save_interval_s), save_atom::value);
        },
    };
}

std::string describe(const char *what, const std::string &file, const cache_load_report &r) {
    std::string out = what;
    out += " cache: ";
    switch (r.result) {
    case cache_load_report::outcome::loaded:
        out += std::to_string(r.entries);
        out += " entries loaded from ";
        out += file;
        if (r.expired) {
            out += " (";
            out += std::to_string(r.expired);
            out += " expired, dropped)";
        }
        break;
    case cache_load_report::outcome::missing:
        out += file;
        out += " not found, starting empty";
        break;
    default:
        out += r.message;
        if (!r.set_aside.empty()) {
            out += "; set aside as ";
            out += r.set_aside;
        }
        out += "; starting empty";
    }
    out += stale_temps_note(r);
    return out;
}

} // namespace

cache_actor spawn_cache(caf::actor_system &sys, const cache_settings &s, const std::string &model_name,
                        metrics_actor metrics, std::vector<std::string> &notes) {
    auto c = std::make_shared<caches>(s, model_name);
    c->metrics = std::move(metrics);
    c->counts.enabled = true;
    if (s.semantic) {
        std::string err;
        c->emb = embedder::load(s.embed_model_dir, err, s.embed_threads);
        if (!c->emb) {
            notes.push_back("semantic cache off: cannot load the embedding model: " + err);
        } else if (c->emb->dim() != s.sem.dim) {
            notes.push_back("semantic cache off: the embedding model gives " + std::to_string(c->emb->dim()) +
                            "-dimensional vectors, the cache is set for " + std::to_string(s.sem.dim));
            c->emb.reset();
        } else {
            // One question embedded now, so that the first client does not pay for the first
            // touch of the weights and the workers' first BLAS buffers (8 to 100 ms, measured).
            (void)c->emb->embed("warm up");
            c->sem = std::make_unique<semantic_cache>(s.sem);
            c->counts.semantic_enabled = true;
            if (!c->sem->lexicon_note().empty()) notes.push_back("semantic cache: " + c->sem->lexicon_note());
        }
    }
    if (!s.dir.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(s.dir, ec);
        if (ec) notes.push_back("caches kept in memory only: cannot create " + s.dir + ": " + ec.message());
        else {
            notes.push_back(describe("exact", c->path("exact.cache"), c->exact.load(c->path("exact.cache"))));
            if (c->sem)
                notes.push_back(describe("semantic", c->path("semantic.cache"), c->sem->load(c->path("semantic.cache"))));
        }
        if (ec) c->cfg.dir.clear();
    }
    return sys.spawn<caf::detached>(cache_impl, std::move(c));
}

} // namespace actorserve
