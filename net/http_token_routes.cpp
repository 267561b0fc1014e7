// http_session's /tokenize and /detokenize routes (net/tokenize_api.h): answered on the
// connection's own thread, with the model's tokenizer, which every thread may read.
#include "net/http_session.h"

#include "engine/tokenizer.h"
#include "include/actorserve/runtime.h"
#include "net/openai.h"
#include "net/tokenize_api.h"

namespace actorserve {

void http_session::route_tokenize(const request &req) {
    if (req.method() != http::verb::post) {
        keep_alive_ = false;
        return respond(http::status::method_not_allowed,
                       render_openai_error(errc::invalid_request, method_ + " is not allowed on " + path_ + " (use POST)"));
    }
    const runtime *rt = srv_->service.rt();
    if (!rt) return respond_error(errc::overloaded, "the model is still loading", {}, 1000);
    const request_limits limits = srv_->cfg.runtime.limits();
    if (path_ == "/tokenize") {
        tokenize_request r;
        if (auto p = parse_tokenize(parser_json_, req.body(), limits, r)) return respond_error(p->code, p->message, p->param);
        return respond(http::status::ok, render_tokenize(rt->tok(), r));
    }
    detokenize_request r;
    if (auto p = parse_detokenize(parser_json_, req.body(), limits, rt->tok().n_vocab(), r))
        return respond_error(p->code, p->message, p->param);
    respond(http::status::ok, render_detokenize(rt->tok(), r));
}

} // namespace actorserve
