// The RAG actor and its ingest worker (see actors/rag_actor.h).
//
// Changes (ingests and deletes) take effect in the order they arrive: they wait in the actor's
// own queue while an ingest is with the worker, and only one ingest is with the worker at a
// time. Searches and status never wait behind them; they see the knowledge base as of the last
// commit. So a delete sent after an ingest of the same id is never undone by that ingest's
// commit, and an "unchanged" answer is always given against everything ingested before it.
#include "actors/rag_actor.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <limits>
#include <set>

#include "engine/embedder.h"
#include "engine/wordpiece.h"
#include "include/actorserve/messages.h"
#include "include/actorserve/metrics.h"
#include "rag/document.h"
#include "rag/knowledge_base.h"
#include "store/persist.h"

namespace actorserve {

namespace {

using prepare_atom = caf::atom_constant<caf::atom("prepare")>;
using clock_type = std::chrono::steady_clock;

// RAG actor -> worker: documents to chunk and embed, in the order of their request.
struct prepare_job {
    std::vector<document_input> documents;
    chunk_settings chunking;
};

// Worker -> RAG actor: one item per document of the job, in the same order.
struct prepared_item {
    bool ok = false;
    prepared_document doc;   // with ok
    std::string error;       // without: names the document and the problem
};
struct prepare_reply {
    std::vector<prepared_item> items;
};

} // namespace
} // namespace actorserve

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::prepare_job)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::prepare_reply)

namespace actorserve {

namespace {
// The RAG actor asks its worker to chunk and embed documents.
using ingest_worker_actor = caf::typed_actor<caf::replies_to<prepare_atom, prepare_job>::with<prepare_reply>>;
} // namespace

namespace {

// ---- the ingest worker -------------------------------------------------------------------

// What the worker owns: its own embedder (not thread-safe, so never shared with the RAG actor's)
// and the embedder's WordPiece vocabulary, so that chunks are measured in the tokens the
// embedder reads and none is truncated by it.
struct worker_tools {
    std::unique_ptr<embedder> emb;
    std::unique_ptr<wordpiece_tokenizer> wp;

    size_t count(std::string_view text) const {
        std::vector<int32_t> ids;
        std::string err;
        // The text was checked as UTF-8 before; should encode fail anyway, bytes over-count.
        if (!wp->encode(text, std::numeric_limits<int>::max(), ids, err)) return text.size();
        return ids.size() - 2; // without [CLS] and [SEP]
    }
};

// cost: one embedding per chunk, about 200 chunk-tokens each (some 0.2 s per chunk on two
// threads): seconds for a few documents, which is why this is not the RAG actor's thread.
ingest_worker_actor::behavior_type ingest_worker(ingest_worker_actor::pointer self, std::shared_ptr<worker_tools> t) {
    (void)self;
    return {
        [t](prepare_atom, prepare_job &job) {
            prepare_reply r;
            r.items.reserve(job.documents.size());
            const token_counter count = [&t](std::string_view text) { return t->count(text); };
            for (document_input &doc : job.documents) {
                prepared_item item;
                item.ok = prepare_document(std::move(doc), job.chunking, count, *t->emb, item.doc, item.error);
                r.items.push_back(std::move(item));
            }
            return r;
        },
    };
}

// ---- the RAG actor -----------------------------------------------------------------------

// A change waiting its turn: an ingest, or a delete (doc_id).
struct change {
    bool is_delete = false;
    std::vector<document_input> documents;
    std::string doc_id;
    caf::typed_response_promise<rag_ingest_reply> ingest_rp; // !is_delete
    caf::typed_response_promise<bool> delete_rp;             // is_delete
};

// What the actor owns. Held by shared_ptr so that the exit handler, which runs after the
// actor's state is gone, can still answer the changes left waiting.
struct rag_core {
    rag_runtime_settings cfg;
    knowledge_base kb;
    std::unique_ptr<embedder> emb;     // queries only; the worker has its own
    metrics_actor metrics;
    ingest_worker_actor worker;
    rag_metrics counts;
    std::deque<change> queue;          // changes not yet started, in arrival order
    bool ingesting = false;            // an ingest is with the worker
    caf::typed_response_promise<rag_ingest_reply> current; // its promise, answered if the actor stops first

    explicit rag_core(const rag_runtime_settings &s) : cfg(s), kb(s.kb) {}

    void publish() {
        const kb_stats &s = kb.stats();
        counts.documents = s.documents;
        counts.chunks = s.chunks;
        if (metrics) caf::anon_send(metrics, counts);
    }

    bool unsaved = false; // the last save failed: the next ingest saves, even one that changes nothing

    // "" when saved (or memory only), else the problem. A failed save keeps the previous file
    // whole (store/persist.h); the next ingest or delete saves everything again.
    std::string save() {
        if (cfg.file.empty()) return "";
        std::string err;
        if (kb.save(cfg.file, err)) {
            if (unsaved) spdlog::info("knowledge base: saved to {} again", cfg.file);
            unsaved = false;
            return "";
        }
        unsaved = true;
        std::string out = "the knowledge base is changed in memory but was not saved: ";
        out += err;
        ++counts.save_errors;
        spdlog::error("knowledge base: {}; the previous file is kept, the next ingest or delete saves everything again", out);
        return out;
    }
};

struct rag_st {
    rag_st() = default; // see actors/scheduler.cpp: CAF 0.17.6 + C++20 state initialisation
    std::shared_ptr<rag_core> c;
};

using self_ptr = rag_actor::stateful_pointer<rag_st>;

// Requests waiting: the mailbox (this one included) and the changes queued behind an ingest.
bool over_limit(self_ptr self, const rag_core &c) {
    return self->mailbox().size() + c.queue.size() > c.cfg.mailbox_limit;
}

std::string busy_message(const rag_core &c) {
    std::string m = "the knowledge base is busy: more than ";
    m += std::to_string(c.cfg.mailbox_limit);
    m += " requests are waiting; try again later";
    return m;
}

bool blank(const std::string &s) {
    return s.find_first_not_of(" \t\r\n\f\v") == std::string::npos;
}

rag_search_reply search(rag_core &c, const search_request &req) {
    const auto t0 = clock_type::now();
    rag_search_reply r;
    auto refuse = [&](std::string msg) {
        ++c.counts.search_errors;
        r.ok = false;
        r.code = errc::invalid_request;
        r.error = std::move(msg);
        return r;
    };
    if (blank(req.query)) return refuse("query is empty");
    std::vector<float> vec;
    if (req.mode != retrieval_mode::bm25) {
        vec = c.emb->embed(req.query); // cost: milliseconds for a question
        if (vec.empty()) return refuse("query: " + c.emb->last_error());
    }
    std::string err;
    if (!c.kb.search(req, vec, r.passages, err)) return refuse(std::move(err));
    r.ok = true;
    r.elapsed_ms = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
    ++c.counts.searches;
    c.counts.search_ms.observe(r.elapsed_ms);
    return r;
}

rag_ingest_reply refused(errc code, std::string msg) {
    rag_ingest_reply r;
    r.ok = false;
    r.code = code;
    r.error = std::move(msg);
    return r;
}

void pump(self_ptr self);

// The worker's documents are back: commit them in order, save once, answer.
void commit_prepared(rag_core &c, rag_ingest_reply &reply, const std::vector<size_t> &where, prepare_reply &p) {
    bool changed = false;
    for (size_t k = 0; k < p.items.size() && k < where.size(); ++k) {
        rag_ingest_result &res = reply.results[where[k]];
        prepared_item &item = p.items[k];
        if (!item.ok) {
            res.status = "rejected";
            res.error = std::move(item.error);
            ++c.counts.documents_rejected;
            continue;
        }
        c.counts.chunks_embedded += item.doc.chunks.size();
        const commit_result cr = c.kb.commit(std::move(item.doc));
        switch (cr.result) {
        case commit_result::status::added:
            res.status = "added";
            ++c.counts.documents_added;
            changed = true;
            break;
        case commit_result::status::replaced:
            res.status = "replaced";
            ++c.counts.documents_replaced;
            changed = true;
            break;
        case commit_result::status::unchanged:
            res.status = "unchanged";
            ++c.counts.documents_unchanged;
            break;
        case commit_result::status::rejected:
            res.status = "rejected";
            res.error = cr.error;
            ++c.counts.documents_rejected;
            continue;
        }
        if (auto d = c.kb.document(res.doc_id)) res.chunks = d->chunks;
    }
    if (changed || c.unsaved) reply.error = c.save();
}

// Starts an ingest: what can be answered without the worker is answered here (rejected,
// unchanged); the rest goes to the worker, and the actor takes the next change when it is back.
void start_ingest(self_ptr self, change ch) {
    rag_core &c = *self->state.c;
    auto reply = std::make_shared<rag_ingest_reply>();
    reply->ok = true;
    reply->results.resize(ch.documents.size());
    auto where = std::make_shared<std::vector<size_t>>(); // result index of each document sent
    prepare_job job;
    job.chunking = c.kb.settings().chunking;
    std::set<std::string> sent; // an id seen earlier in this request: compared after its commit
    for (size_t i = 0; i < ch.documents.size(); ++i) {
        document_input &doc = ch.documents[i];
        rag_ingest_result &res = reply->results[i];
        res.doc_id = doc.id;
        if (std::string bad = check_document(doc); !bad.empty()) {
            res.status = "rejected";
            res.error = std::move(bad);
            ++c.counts.documents_rejected;
            continue;
        }
        if (!sent.count(doc.id) && !c.kb.needs_update(doc.id, document_hash(doc, job.chunking))) {
            res.status = "unchanged";
            if (auto d = c.kb.document(doc.id)) res.chunks = d->chunks;
            ++c.counts.documents_unchanged;
            continue;
        }
        sent.insert(doc.id);
        where->push_back(i);
        job.documents.push_back(std::move(doc));
    }
    if (job.documents.empty()) {
        if (c.unsaved) reply->error = c.save(); // unchanged in memory, but not yet on disk
        c.publish();
        ch.ingest_rp.deliver(std::move(*reply));
        return;
    }
    c.ingesting = true;
    c.current = std::move(ch.ingest_rp);
    self->request(c.worker, caf::infinite, prepare_atom::value, std::move(job))
        .then(
            [self, reply, where](prepare_reply &p) {
                rag_core &core = *self->state.c;
                commit_prepared(core, *reply, *where, p);
                core.publish();
                core.ingesting = false;
                core.current.deliver(std::move(*reply));
                core.current = {};
                pump(self);
            },
            [self](caf::error &e) {
                rag_core &core = *self->state.c;
                core.ingesting = false;
                core.current.deliver(refused(errc::internal, "the ingest worker failed: " + caf::to_string(e)));
                core.current = {};
                pump(self);
            });
}

// Runs queued changes until one has to wait for the worker.
void pump(self_ptr self) {
    rag_core &c = *self->state.c;
    while (!c.ingesting && !c.queue.empty()) {
        change ch = std::move(c.queue.front());
        c.queue.pop_front();
        if (!ch.is_delete) {
            start_ingest(self, std::move(ch));
            continue;
        }
        const bool removed = c.kb.remove(ch.doc_id);
        if (removed) {
            ++c.counts.documents_deleted;
            c.save(); // a failed save is retried by the next change; the delete itself stands
        }
        c.publish();
        ch.delete_rp.deliver(removed);
    }
}

rag_actor::behavior_type rag_impl(self_ptr self, std::shared_ptr<rag_core> owned) {
    self->state.c = owned;
    // The worker goes with the actor; changes left waiting are answered, never left hanging.
    self->attach_functor([owned] {
        caf::anon_send_exit(owned->worker, caf::exit_reason::user_shutdown);
        if (owned->current.pending()) owned->current.deliver(refused(errc::internal, "the knowledge base stopped"));
        for (change &ch : owned->queue) {
            if (ch.is_delete) ch.delete_rp.deliver(rag_error(errc::internal));
            else ch.ingest_rp.deliver(refused(errc::internal, "the knowledge base stopped"));
        }
        owned->queue.clear();
    });
    owned->publish();
    return {
        [self](rag_search &s) {
            rag_core &c = *self->state.c;
            // The counts go out before the answer: whoever the answer reaches, and whatever it
            // asks the metrics actor next, finds them counted.
            if (over_limit(self, c)) {
                ++c.counts.overloaded;
                c.publish();
                rag_search_reply r;
                r.code = errc::overloaded;
                r.error = busy_message(c);
                return r;
            }
            rag_search_reply r = search(c, s.req);
            c.publish();
            return r;
        },
        [self](rag_ingest &in) {
            rag_core &c = *self->state.c;
            auto rp = self->make_response_promise<rag_ingest_reply>();
            if (over_limit(self, c)) {
                ++c.counts.overloaded;
                c.publish();
                rp.deliver(refused(errc::overloaded, busy_message(c)));
                return rp;
            }
            if (in.documents.empty()) {
                rp.deliver(refused(errc::invalid_request, "documents is empty"));
                return rp;
            }
            if (in.documents.size() > c.cfg.max_ingest_documents) {
                std::string m = std::to_string(in.documents.size());
                m += " documents in one request, the limit is ";
                m += std::to_string(c.cfg.max_ingest_documents);
                rp.deliver(refused(errc::too_large, std::move(m)));
                return rp;
            }
            c.queue.push_back(change{false, std::move(in.documents), {}, rp, {}});
            pump(self);
            return rp;
        },
        [self](delete_atom, std::string &doc_id) {
            rag_core &c = *self->state.c;
            auto rp = self->make_response_promise<bool>();
            if (over_limit(self, c)) {
                ++c.counts.overloaded;
                c.publish();
                rp.deliver(rag_error(errc::overloaded));
                return rp;
            }
            c.queue.push_back(change{true, {}, std::move(doc_id), {}, rp});
            pump(self);
            return rp;
        },
        // Cheap enough to answer whatever the load: O(documents).
        [self](get_atom) {
            rag_core &c = *self->state.c;
            return rag_status{c.kb.stats(), c.kb.documents()};
        },
    };
}

std::string describe(const std::string &file, const cache_load_report &r, const kb_stats &s) {
    std::string out = "knowledge base: ";
    switch (r.result) {
    case cache_load_report::outcome::loaded:
        out += std::to_string(s.documents);
        out += " documents / ";
        out += std::to_string(s.chunks);
        out += " chunks loaded from ";
        out += file;
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

rag_actor spawn_rag(caf::actor_system &sys, const rag_runtime_settings &s, metrics_actor metrics,
                     std::vector<std::string> &notes) {
    auto c = std::make_shared<rag_core>(s);
    c->metrics = std::move(metrics);
    c->counts.enabled = true;
    std::string err;
    // Two embedders, as each is single-threaded: queries on the RAG actor's thread, documents
    // on the worker's (two threads: ingestion is the bulk of the embedding work).
    c->emb = embedder::load(s.embed_model_dir, err, 1);
    auto tools = std::make_shared<worker_tools>();
    if (c->emb) tools->emb = embedder::load(s.embed_model_dir, err, 2);
    if (tools->emb) tools->wp = wordpiece_tokenizer::load((std::filesystem::path(s.embed_model_dir) / "vocab.txt").string(), err);
    if (!c->emb || !tools->emb || !tools->wp) {
        notes.push_back("rag off: cannot load the embedding model: " + err);
        return {};
    }
    if (c->emb->dim() != s.kb.dim) {
        notes.push_back("rag off: the embedding model gives " + std::to_string(c->emb->dim()) +
                        "-dimensional vectors, the knowledge base is set for " + std::to_string(s.kb.dim));
        return {};
    }
    if (s.file.empty()) {
        notes.push_back("knowledge base kept in memory only (no file)");
    } else {
        std::error_code ec;
        const auto dir = std::filesystem::path(s.file).parent_path();
        if (!dir.empty()) std::filesystem::create_directories(dir, ec);
        if (ec) {
            notes.push_back("knowledge base kept in memory only: cannot create " + dir.string() + ": " + ec.message());
            c->cfg.file.clear();
        } else {
            const cache_load_report r = c->kb.load(s.file);
            notes.push_back(describe(s.file, r, c->kb.stats()));
        }
    }
    c->worker = sys.spawn<caf::detached>(ingest_worker, std::move(tools));
    return sys.spawn<caf::detached>(rag_impl, std::move(c));
}

} // namespace actorserve
