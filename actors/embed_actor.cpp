#include "actors/embed_actor.h"

#include <memory>

#include "engine/embedder.h"

namespace actorserve {
namespace {

struct embed_core {
    embedding_settings cfg;
    std::unique_ptr<embedder> emb;
};

embed_reply refuse(errc code, std::string why, std::string param = {}) {
    embed_reply r;
    r.code = code;
    r.error = std::move(why);
    r.param = std::move(param);
    return r;
}

std::string input_at(size_t i) { return "input[" + std::to_string(i) + "]"; }

embed_reply embed_all(embed_core &c, const embed_request &req) {
    if (req.inputs.empty()) return refuse(errc::invalid_request, "input is empty: give at least one text", "input");
    if (req.inputs.size() > c.cfg.max_inputs)
        return refuse(errc::invalid_request,
                      "input has " + std::to_string(req.inputs.size()) + " texts, over the limit of " +
                          std::to_string(c.cfg.max_inputs),
                      "input");
    if (req.dimensions != 0 && req.dimensions != c.emb->dim())
        return refuse(errc::invalid_request,
                      "dimensions must be " + std::to_string(c.emb->dim()) + " (" + c.cfg.model_id +
                          " cannot shorten its vectors), got " + std::to_string(req.dimensions),
                      "dimensions");
    embed_reply r;
    for (size_t i = 0; i < req.inputs.size(); ++i) {
        const size_t n = c.emb->count_tokens(req.inputs[i]);
        if (n == 0) return refuse(errc::invalid_request, input_at(i) + " is not valid UTF-8", input_at(i));
        r.tokens += n;
    }
    r.vectors = c.emb->embed_batch(req.inputs); // cost: milliseconds per short text
    for (size_t i = 0; i < r.vectors.size(); ++i)
        if (r.vectors[i].empty()) return refuse(errc::invalid_request, input_at(i) + ": " + c.emb->last_error(), input_at(i));
    r.ok = true;
    return r;
}

embed_actor::behavior_type embed_impl(embed_actor::pointer self, std::shared_ptr<embed_core> c) {
    return {
        [self, c](const embed_request &req) -> embed_reply {
            // The mailbox holds the requests behind this one: over the limit, refuse at once
            // rather than let the queue grow.
            if (self->mailbox().size() > c->cfg.mailbox_limit)
                return refuse(errc::overloaded, "the embedder is busy: more than " + std::to_string(c->cfg.mailbox_limit) +
                                                    " requests are waiting; try again later");
            return embed_all(*c, req);
        },
    };
}

} // namespace

embed_actor spawn_embeddings(caf::actor_system &sys, const embedding_settings &s, std::vector<std::string> &notes) {
    auto c = std::make_shared<embed_core>();
    c->cfg = s;
    std::string err;
    c->emb = embedder::load(s.model_dir, err, s.threads);
    if (!c->emb) {
        notes.push_back("embeddings off: cannot load the embedding model: " + err);
        return {};
    }
    notes.push_back("embeddings: " + s.model_id + " (" + std::to_string(c->emb->dim()) + " dimensions) from " + s.model_dir);
    return sys.spawn<caf::detached>(embed_impl, std::move(c));
}

} // namespace actorserve
