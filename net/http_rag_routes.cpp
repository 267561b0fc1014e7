// The retrieval API's routes (/v1/rag/*, net/rag_api.h) of an HTTP connection.
#include "net/http_session.h"

#include "include/actorserve/runtime.h"
#include "net/http_ask_actor.h"
#include "net/rag_api.h"

namespace actorserve {

namespace {

rag_limits limits_of(const server_config &cfg) {
    rag_limits l;
    l.default_top_k = cfg.runtime.rag.default_top_k;
    l.max_top_k = cfg.runtime.rag.kb.max_top_k;
    l.max_documents = cfg.runtime.rag.max_ingest_documents;
    return l;
}

} // namespace

void http_session::route_rag(const request &req) {
    runtime *rt = srv_->service.rt();
    if (!rt) return respond_error(errc::overloaded, "the model is still loading", {}, 1000);
    rag_actor rag = rt->rag();
    if (!rag) {
        request_problem p = rag_unavailable();
        return respond_error(p.code, p.message);
    }
    const http::verb verb = req.method();
    const int retry_ms = srv_->cfg.runtime.retry_after_ms;
    auto not_allowed = [&](const char *allowed) {
        keep_alive_ = false;
        respond(http::status::method_not_allowed,
                render_openai_error(errc::invalid_request, method_ + " is not allowed on " + path_.substr(0, 128) +
                                                               " (use " + allowed + ")"));
    };

    if (path_ == "/v1/rag/documents") {
        if (verb == http::verb::get)
            return ask_actor<rag_status>(
                rag, std::chrono::seconds(30),
                [](http_session &s, rag_status &st) { s.respond(http::status::ok, render_rag_documents(st)); },
                nullptr, get_atom::value);
        if (verb != http::verb::post) return not_allowed("GET or POST");
        rag_ingest msg;
        if (auto p = parse_rag_documents(parser_json_, req.body(), limits_of(srv_->cfg), msg.documents))
            return respond_error(p->code, p->message, p->param);
        // Embedding is the slow part (a few chunks per second per thread on a small CPU): the
        // deadline is generous, and the reply comes when every document is committed and saved.
        return ask_actor<rag_ingest_reply>(
            rag, std::chrono::seconds(3600),
            [retry_ms](http_session &s, rag_ingest_reply &r) {
                if (!r.ok) return s.respond_error(r.code, r.error, {}, retry_ms);
                // Committed but not on disk (a full disk): not acknowledged. Searches see the
                // change; sending the same documents again saves them once the disk has room.
                if (!r.error.empty()) return s.respond_error(errc::internal, r.error);
                s.respond(http::status::ok, render_rag_ingest(r));
            },
            nullptr, std::move(msg));
    }
    if (path_.rfind("/v1/rag/documents/", 0) == 0) {
        if (verb != http::verb::delete_) return not_allowed("DELETE");
        auto id = percent_decode(std::string_view(path_).substr(std::string_view("/v1/rag/documents/").size()));
        if (!id) return respond_error(errc::invalid_request, "the document id in the path has a malformed %-escape");
        if (id->empty()) return respond_error(errc::invalid_request, "the document id in the path is empty");
        return ask_actor<bool>(
            rag, std::chrono::seconds(30),
            [doc = *id](http_session &s, bool &deleted) {
                if (!deleted) return s.respond_error(errc::not_found, "no document with id '" + doc.substr(0, 128) + "'");
                s.respond(http::status::ok, render_rag_deleted(doc));
            },
            nullptr, delete_atom::value, *id);
    }
    if (path_ == "/v1/rag/search") {
        if (verb != http::verb::post) return not_allowed("POST");
        rag_search msg;
        if (auto p = parse_rag_search(parser_json_, req.body(), limits_of(srv_->cfg), msg.req))
            return respond_error(p->code, p->message, p->param);
        return ask_actor<rag_search_reply>(
            rag, std::chrono::seconds(60),
            [retry_ms](http_session &s, rag_search_reply &r) {
                if (!r.ok) return s.respond_error(r.code, r.error, {}, retry_ms);
                s.respond(http::status::ok, render_rag_search(r));
            },
            nullptr, std::move(msg));
    }
    respond_error(errc::not_found, "nothing at " + method_ + " " + path_.substr(0, 128) +
                                       " (retrieval: /v1/rag/documents, /v1/rag/documents/{id}, /v1/rag/search)");
}

} // namespace actorserve
