// http_session's POST /v1/embeddings route (net/embeddings_api.h): the embeddings actor answers
// through ask_actor, off the connection's I/O thread.
#include "net/http_session.h"

#include "include/actorserve/runtime.h"
#include "net/embeddings_api.h"
#include "net/http_ask_actor.h"
#include "net/openai.h"

namespace actorserve {

void http_session::route_embeddings(const request &req) {
    if (req.method() != http::verb::post) {
        keep_alive_ = false;
        return respond(http::status::method_not_allowed,
                       render_openai_error(errc::invalid_request, method_ + " is not allowed on " + path_ + " (use POST)"));
    }
    runtime *rt = srv_->service.rt();
    if (!rt) return respond_error(errc::overloaded, "the model is still loading", {}, 1000);
    embed_actor emb = rt->embeddings();
    const embedding_settings &s = srv_->cfg.runtime.embeddings;
    if (!emb)
        return respond_error(errc::not_found, s.enabled ? "embeddings are off: the embedding model did not load (see the "
                                                          "server's start-up log)"
                                                        : "embeddings are off ([embeddings] enabled = false)");
    embeddings_call call;
    if (auto p = parse_embeddings(parser_json_, req.body(), srv_->cfg.runtime.limits(), s, call))
        return respond_error(p->code, p->message, p->param);
    const int retry_ms = srv_->cfg.runtime.retry_after_ms;
    ask_actor<embed_reply>(
        emb, std::chrono::seconds(120),
        [base64 = call.base64, model = s.model_id, retry_ms](http_session &h, embed_reply &r) {
            if (!r.ok) return h.respond_error(r.code, r.error, r.param, retry_ms);
            h.respond(http::status::ok, render_embeddings(r, base64, model));
        },
        [retry_ms](http_session &h, const std::string &why) {
            h.respond_error(errc::overloaded, "the embeddings actor did not answer: " + why, {}, retry_ms);
        },
        std::move(call.req));
}

} // namespace actorserve
