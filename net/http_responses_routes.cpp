// http_session's Responses API routes (net/responses_api.h): POST /v1/responses (whole,
// streamed, or in the background), GET /v1/responses/{id} (the object now, or its events from
// ?starting_after=N with ?stream=true) and POST /v1/responses/{id}/cancel. A response is a
// retained request stream, as a resumable chat stream is: it runs on when its client leaves.
#include "net/http_session.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <ctime>

#include "include/actorserve/runtime.h"
#include "net/auth.h"
#include "net/random_id.h"
#include "net/responses_api.h"

namespace actorserve {

namespace {

response_view base_view(const request_stream::openai_info &i, const std::string &model) {
    response_view v;
    v.id = i.response_id;
    v.created_at = i.created_at;
    v.model = model;
    v.status = "queued";
    v.max_output_tokens = i.max_output_tokens;
    v.temperature = i.temperature;
    v.top_p = i.top_p;
    v.background = i.background;
    return v;
}

// One named server-sent event as one HTTP chunk.
std::string sse_named(const std::string &type, const std::string &json, size_t seq) {
    std::string body = "id: ";
    body += std::to_string(seq);
    body += "\nevent: ";
    body += type;
    body += "\ndata: ";
    body += json;
    body += "\n\n";
    char head[24];
    std::snprintf(head, sizeof head, "%zx\r\n", body.size());
    return head + body + "\r\n";
}

} // namespace

void http_session::route_responses(const request &req) {
    const bool get = req.method() == http::verb::get, post = req.method() == http::verb::post;
    auto not_allowed = [&](const char *use) {
        keep_alive_ = false;
        respond(http::status::method_not_allowed,
                render_openai_error(errc::invalid_request, method_ + " is not allowed on " + log_path_ + " (use " + use + ")"));
    };
    if (path_ == "/v1/responses") return post ? start_response(req) : not_allowed("POST");

    std::string_view id = std::string_view(path_).substr(std::string_view("/v1/responses/").size());
    const bool cancel = id.size() > 7 && id.substr(id.size() - 7) == "/cancel";
    if (cancel) id.remove_suffix(7);
    if (id.rfind("resp_", 0) != 0 || id.find('/') != std::string_view::npos)
        return respond_error(errc::not_found, "no response '" + std::string(id.substr(0, 64)) + "' (ids are resp_...)");
    if (cancel && !post) return not_allowed("POST");
    if (!cancel && !get) return not_allowed("GET");
    // Without API keys the id is the proof of ownership (it is random, and only its creator saw it).
    const std::string hex(id.substr(5));
    auto found = srv_->service.find("r-" + hex, caller{principal_, principal_.empty() ? std::optional(hex) : std::nullopt});
    if (auto *e = std::get_if<service_error>(&found)) {
        if (e->code == errc::not_found)
            return respond_error(errc::not_found, "no response '" + std::string(id.substr(0, 64)) + "': unknown, or no longer kept (" +
                                                      std::to_string(srv_->cfg.retention_s) + " s after it ended)");
        return respond_error(e->code, e->message, {}, e->retry_after_ms);
    }
    auto s = std::get<std::shared_ptr<request_stream>>(std::move(found));
    const auto info = s->openai();
    if (!info || !info->responses || info->response_id != id)
        return respond_error(errc::not_found, "no response '" + std::string(id.substr(0, 64)) + "'");
    const response_view base = base_view(*info, srv_->model_name);
    if (cancel) {
        const bool running = !s->ended();
        srv_->service.cancel(*s);
        response_view v = view_of(s->snapshot(), base);
        if (running) v.status = "cancelled";
        return respond(http::status::ok, render_response(v));
    }
    if (query_param(req.target(), "stream").value_or("false") != "true") {
        response_view v = view_of(s->snapshot(), base);
        // Cancelled, its end on the way: what the cancel answered, not in_progress again.
        if (s->cancelling() && (v.status == "in_progress" || v.status == "queued")) v.status = "cancelled";
        return respond(http::status::ok, render_response(v));
    }

    // Its events after sequence number starting_after (all of them without it).
    size_t from = 0;
    int delivered = 0;
    if (auto after = query_param(req.target(), "starting_after")) {
        size_t n = 0;
        if (after->empty() || after->size() > 9 || after->find_first_not_of("0123456789") != std::string::npos)
            return respond_error(errc::invalid_request, "starting_after must be a sequence number, got '" + after->substr(0, 32) + "'",
                                 "starting_after");
        n = std::stoul(*after);
        const std::vector<stream_event> events = s->snapshot();
        from = n < 4 ? 0 : std::min(n - 3, events.size() - 1);
        const size_t last = first_sequence(from) + sequences_of(events[from]) - 1;
        if (n > last || (from + 1 < events.size() && n >= first_sequence(from + 1)))
            return respond_error(errc::invalid_request, "starting_after " + *after + " is past the response's last event (" +
                                                            std::to_string(last) + " so far)", "starting_after");
        delivered = static_cast<int>(n - first_sequence(from) + 1);
    }
    oreq_ = openai_request{};
    oreq_.responses = true;
    oreq_.stream = true;
    resp_id_ = info->response_id;
    resume_url_.clear();
    rview_ = base;
    {
        const std::vector<stream_event> events = s->snapshot();
        for (size_t i = 0; i < from && i < events.size(); ++i) advance(rview_, events[i]);
    }
    rs_ = std::move(s);
    follow_stream(from, delivered);
}

void http_session::start_response(const request &req) {
    auto parsed = parse_responses(parser_json_, req.body(), srv_->cfg, srv_->model_name);
    if (auto *p = std::get_if<request_problem>(&parsed)) return respond_error(p->code, p->message, p->param);
    responses_request rr = std::move(std::get<responses_request>(parsed));
    // A response is retained (retrieved, streamed again, cancelled): it belongs to the API key,
    // or without keys to whoever knows its id, which is its secret too.
    const std::string hex = random_id("");
    caller who{principal_.empty() ? "conn:" + hex : principal_, std::nullopt, "responses"};
    request_stream::openai_info info;
    info.chat = true;
    info.responses = true;
    info.max_output_tokens = rr.req.max_tokens;
    info.temperature = rr.req.sampling.temperature;
    info.top_p = rr.req.sampling.top_p;
    info.background = rr.background;
    // One that is not in the background ends, as a stream does, when its client leaves for good.
    if (!rr.background) info.grace_s = srv_->cfg.sse_resume_grace_s;
    auto started = srv_->service.start(who, std::nullopt, rr.req, true, /*tokens=*/true, /*retain=*/true, "r-" + hex);
    if (auto *e = std::get_if<service_error>(&started)) return respond_error(e->code, e->message, {}, e->retry_after_ms);
    rs_ = std::get<std::shared_ptr<request_stream>>(std::move(started));
    info.response_id = "resp_" + hex;
    info.created_at = static_cast<int64_t>(std::time(nullptr));
    rs_->set_openai(info);
    rview_ = base_view(info, srv_->model_name);
    resp_id_ = info.response_id;
    resume_url_.clear();
    oreq_ = openai_request{};
    oreq_.responses = true;
    oreq_.stream = rr.stream;
    if (rr.background && !rr.stream) {
        // Answered at once; it runs on, and GET /v1/responses/{id} tells how far it got.
        rs_.reset();
        return respond(http::status::ok, render_response(rview_));
    }
    follow_stream(0, 0);
}

// The Responses API's part of pump(): each stream event as its response events, or, not
// streamed, the whole response object once it ends.
void http_session::pump_response(const std::vector<stream_event> &events, size_t first) {
    for (size_t k = 0; k < events.size(); ++k) {
        const stream_event &e = events[k];
        const size_t index = first + k;
        advance(rview_, e);
        if (!oreq_.stream || (!sse_started_ && e.kind == stream_event::error)) {
            if (!e.ends()) continue;
            end_whole();
            if (e.kind == stream_event::error) return respond_error(e.code, e.message, {}, e.retry_after_ms);
            return respond(http::status::ok, render_response(rview_));
        }
        start_sse();
        const auto out = response_events(e, index, rview_);
        const size_t skip = index == first ? static_cast<size_t>(skip_sub_) : 0;
        for (size_t sub = skip; sub < out.size(); ++sub)
            write_raw(sse_named(out[sub].first, out[sub].second, first_sequence(index) + sub));
        wrote_since_ping_ = true;
        if (e.ends()) end_sse();
    }
    if (!events.empty()) skip_sub_ = 0;
}

} // namespace actorserve
