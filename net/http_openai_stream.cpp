// An OpenAI completion on an HTTP connection: started through the chat service, then written
// whole or as server-sent events from the request's stream, through the bounded write queue;
// and the resume of such a stream on another connection (GET /v1/streams/{id}).
//
// SSE ids: the k-th server-sent event made of the request's stream event i carries id "i"
// (k = 0) or "i.k" (a finish chunk is followed by the usage chunk and [DONE]), so that a
// Last-Event-ID names exactly what the client has, and a resume sends each later event once.
#include "net/http_session.h"

#include <spdlog/spdlog.h>

#include <cstdio>

#include "include/actorserve/runtime.h"
#include "net/auth.h"
#include "net/random_id.h"

namespace actorserve {

namespace {

// One chunk of a chunked body: its size in hex, the bytes, CRLF.
std::string http_chunk(std::string_view bytes) {
    char head[24];
    std::snprintf(head, sizeof head, "%zx\r\n", bytes.size());
    std::string out(head);
    out.append(bytes).append("\r\n");
    return out;
}

// One server-sent event ("id: ...\ndata: ...\n\n") as one HTTP chunk.
std::string sse_chunk(std::string_view json, size_t event, size_t sub) {
    // note: appends, not "." + to_string(sub), which trips a false -Wrestrict in GCC 12.
    std::string ev = "id: " + std::to_string(event);
    if (sub) {
        ev += '.';
        ev += std::to_string(sub);
    }
    ev.append("\ndata: ").append(json).append("\n\n");
    return http_chunk(ev);
}

// Last-Event-ID "N" or "N.K": the stream event N, and how many of its SSE events came.
bool parse_event_id(std::string_view s, size_t &event, int &delivered) {
    auto digits = [](std::string_view d, size_t &out) {
        if (d.empty() || d.size() > 9) return false;
        out = 0;
        for (char c : d) {
            if (c < '0' || c > '9') return false;
            out = out * 10 + static_cast<size_t>(c - '0');
        }
        return true;
    };
    const size_t dot = s.find('.');
    size_t sub = 0;
    if (!digits(s.substr(0, dot), event)) return false;
    if (dot != std::string_view::npos && !digits(s.substr(dot + 1), sub)) return false;
    delivered = static_cast<int>(sub) + 1;
    return sub < 3;
}

} // namespace

void http_session::start_completion(bool chat, const request &req) {
    auto parsed = parse_openai(parser_json_, req.body(), chat, srv_->cfg, srv_->model_name);
    if (auto *p = std::get_if<request_problem>(&parsed)) return respond_error(p->code, p->message, p->param);
    oreq_ = std::move(std::get<openai_request>(parsed));
    // A stream is retained for resume: it belongs to the API key, or without keys to a secret of
    // its own that only its resume URL carries.
    caller who{principal_, std::nullopt, chat ? "chat.completions" : "completions"};
    std::optional<std::string> token;
    if (oreq_.stream && who.principal.empty()) {
        token = random_id("t-");
        who.principal = "conn:" + *token;
    }
    auto started = srv_->service.start(who, std::nullopt, oreq_.req, true, oreq_.stream, /*retain=*/oreq_.stream,
                                       std::nullopt, oreq_.n);
    if (auto *e = std::get_if<service_error>(&started)) return respond_error(e->code, e->message, {}, e->retry_after_ms);
    rs_ = std::get<std::shared_ptr<request_stream>>(std::move(started));
    resp_id_ = (chat ? "chatcmpl-" : "cmpl-") + rs_->request_id().substr(2);
    resume_url_.clear();
    if (oreq_.stream) {
        request_stream::openai_info info;
        info.chat = chat;
        info.include_usage = oreq_.include_usage;
        info.n = oreq_.n;
        info.tool_call = oreq_.tool_call;
        info.logprobs = oreq_.req.logprobs;
        info.response_id = resp_id_;
        info.grace_s = srv_->cfg.sse_resume_grace_s;
        rs_->set_openai(std::move(info));
        resume_url_ = "/v1/streams/" + resp_id_ + (token ? "?resume_token=" + *token : "");
    }
    follow_stream(0, 0);
}

void http_session::follow_stream(size_t from, int delivered) {
    next_ = from;
    skip_sub_ = delivered;
    sse_started_ = false;
    role_sent_.assign(static_cast<size_t>(oreq_.n), from != 0);
    choice_ends_.clear();
    done_ = false;
    rs_->follow(std::weak_ptr<stream_follower>(waker_));
    watch_peer();
    if (oreq_.stream) arm_ping();
    pump();
}

// A stream that has sent nothing for server.sse_ping_s (a long prefill, a long queue) gets an
// SSE comment, so that proxies do not close it as idle; its headers go out with the first one,
// after which an error is an SSE event rather than a status.
void http_session::arm_ping() {
    if (srv_->cfg.sse_ping_s <= 0) return;
    wrote_since_ping_ = false;
    ping_timer_.expires_after(std::chrono::seconds(srv_->cfg.sse_ping_s));
    ping_timer_.async_wait([w = weak_from_this()](beast::error_code ec) {
        auto self = w.lock();
        if (ec || !self || !self->rs_ || self->done_) return;
        if (!self->wrote_since_ping_) {
            self->start_sse();
            self->write_raw(http_chunk(": ping\n\n")); // one SSE comment
        }
        if (self->rs_ && !self->done_) self->arm_ping();
    });
}

void http_session::start_sse() {
    if (sse_started_) return;
    sse_started_ = true;
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count();
    spdlog::info("{} {} 200 stream, first event after {:.1f} ms", method_, log_path_, ms);
    write_raw(std::string("HTTP/1.1 200 OK\r\nServer: actorserve\r\nContent-Type: text/event-stream\r\n"
                          "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n") +
              (resume_url_.empty() ? "" : "X-Resume-URL: " + resume_url_ + "\r\n") +
              (cors_origin_.empty() ? ""
                                    : "Access-Control-Allow-Origin: " + cors_origin_ +
                                          "\r\nAccess-Control-Expose-Headers: X-Resume-URL\r\nVary: Origin\r\n") +
              (keep_alive_ ? "" : "Connection: close\r\n") + "\r\n");
}

void http_session::route_streams(const request &req) {
    const std::string_view id = std::string_view(path_).substr(std::string_view("/v1/streams/").size());
    std::string request_id;
    if (id.rfind("chatcmpl-", 0) == 0) request_id = "r-" + std::string(id.substr(9));
    else if (id.rfind("cmpl-", 0) == 0) request_id = "r-" + std::string(id.substr(5));
    else return respond_error(errc::not_found, "no stream '" + std::string(id.substr(0, 64)) + "' (the id of a streamed response: chatcmpl-... or cmpl-...)");
    const bool get = req.method() == http::verb::get, del = req.method() == http::verb::delete_;
    if (!get && !del) {
        keep_alive_ = false;
        return respond(http::status::method_not_allowed,
                       render_openai_error(errc::invalid_request, method_ + " is not allowed on /v1/streams/{id} (use GET to resume, DELETE to cancel)"));
    }
    const std::optional<std::string> token = query_param(req.target(), "resume_token");
    auto found = srv_->service.find(request_id, caller{principal_, token});
    if (auto *e = std::get_if<service_error>(&found)) return respond_error(e->code, e->message, {}, e->retry_after_ms);
    auto s = std::get<std::shared_ptr<request_stream>>(std::move(found));
    const auto info = s->openai();
    if (!info || info->response_id != id)
        return respond_error(errc::not_found, "no stream '" + std::string(id.substr(0, 64)) + "' (a WebSocket request resumes over /v1/ws)");
    if (del) {
        const bool running = !s->ended();
        srv_->service.cancel(*s);
        return respond(http::status::ok, "{\"id\":\"" + info->response_id + "\",\"object\":\"stream\",\"cancelled\":" +
                                             (running ? "true" : "false") + "}");
    }
    size_t from = 0;
    int delivered = 0;
    const std::string_view last = req["Last-Event-ID"];
    if (!last.empty()) {
        if (!parse_event_id(last, from, delivered))
            return respond_error(errc::invalid_request, "Last-Event-ID must be an id this stream sent (N or N.K), got '" +
                                                            std::string(last.substr(0, 32)) + "'");
        if (from == 0 || from >= s->size())
            return respond_error(errc::invalid_request, "Last-Event-ID " + std::string(last.substr(0, 32)) +
                                                            " was never sent by this stream (it has sent up to " +
                                                            std::to_string(s->size() - 1) + ")");
    }
    oreq_ = openai_request{};
    oreq_.chat = info->chat;
    oreq_.include_usage = info->include_usage;
    oreq_.n = info->n;
    oreq_.tool_call = info->tool_call;
    oreq_.req.logprobs = info->logprobs;
    oreq_.stream = true;
    resp_id_ = info->response_id;
    resume_url_ = path_ + (token ? "?resume_token=" + *token : "");
    spdlog::info("GET /v1/streams/{{id}}: resumed after event {}", last.empty() ? "none" : std::string(last.substr(0, 32)));
    rs_ = std::move(s);
    follow_stream(from, delivered);
}

void http_session::pump() {
    if (!rs_ || done_) return;
    std::vector<stream_event> events;
    const size_t first = next_;
    next_ = rs_->read(next_, waker_.get(), events);
    if (oreq_.responses) return pump_response(events, first);
    for (size_t k = 0; k < events.size(); ++k) {
        const stream_event &e = events[k];
        const size_t index = first + k;
        if (e.kind == stream_event::start) continue;
        if (!sse_started_ && (e.kind == stream_event::error || !oreq_.stream)) {
            if (e.kind == stream_event::token) { // stream: false answers with done's text
                if (e.choice_end) choice_ends_.push_back(e);
                continue;
            }
            // Nothing sent yet: the answer (or the error, with its own status) is one response.
            end_whole();
            if (e.kind == stream_event::error) return respond_error(e.code, e.message, {}, e.retry_after_ms);
            if (oreq_.n == 1) choice_ends_.assign(1, e);
            return respond(http::status::ok,
                           render_openai_response(oreq_, resp_id_, srv_->created, srv_->model_name, e, choice_ends_));
        }
        start_sse();
        std::vector<std::string> out; // the SSE events of this stream event, in order
        if (e.kind == stream_event::error) {
            out.push_back(render_openai_error(e.code, e.message));
        } else if (oreq_.tool_call && e.kind == stream_event::token && !e.choice_end) {
            // a tool call's text goes out whole with its choice's end
        } else if (e.kind != stream_event::done || oreq_.n == 1) { // n > 1: each choice ended already
            const auto c = static_cast<size_t>(e.choice);
            const bool role = c < role_sent_.size() && !role_sent_[c];
            out.push_back(render_openai_chunk(oreq_, resp_id_, srv_->created, srv_->model_name, e, role));
            if (c < role_sent_.size()) role_sent_[c] = true;
        }
        if (e.ends()) {
            if (e.kind == stream_event::done && oreq_.include_usage)
                out.push_back(render_openai_usage_chunk(oreq_, resp_id_, srv_->created, srv_->model_name, e.usage));
            out.push_back("[DONE]");
        }
        // A resume starts inside the event it names: what the client has is not sent again.
        const size_t skip = index == first ? static_cast<size_t>(skip_sub_) : 0;
        for (size_t sub = skip; sub < out.size(); ++sub) write_raw(sse_chunk(out[sub], index, sub));
        wrote_since_ping_ = true;
        if (e.ends()) end_sse();
    }
    if (!events.empty()) skip_sub_ = 0;
}

// The stream's last SSE event is written: end the chunked body and stop following it.
void http_session::end_sse() {
    write_raw("0\r\n\r\n");
    done_ = true;
    ping_timer_.cancel();
    rs_->unfollow(waker_.get());
    rs_.reset();
}

// The request's answer goes out as one response: stop following its stream.
void http_session::end_whole() {
    done_ = true;
    ping_timer_.cancel();
    if (watching_) { // no write is pending: cancelling touches only the watch
        watching_ = false;
        beast::error_code ignored;
        stream_.socket().cancel(ignored);
    }
    rs_->unfollow(waker_.get());
    rs_.reset();
}

void http_session::write_raw(std::string bytes) {
    const size_t n = bytes.size();
    if (!outq_.push(std::move(bytes))) {
        spdlog::warn("{} {}: {} bytes wait to be sent (limit {}), closing: the client is not reading", method_, log_path_,
                     outq_.bytes() + n, outq_.limit());
        if (rs_) srv_->service.cancel(*rs_);
        done_ = true;
        keep_alive_ = false;
        stream_.close(); // pending operations complete with errors and release the session
        return;
    }
    if (outq_.writing()) return;
    stream_.expires_after(std::chrono::seconds(60));
    asio::async_write(stream_, asio::buffer(outq_.start()),
                      [self = shared_from_this()](beast::error_code ec, size_t) { self->on_raw_written(ec); });
}

void http_session::on_raw_written(beast::error_code ec) {
    outq_.done();
    if (ec) {
        if (rs_) {
            client_gone();
            rs_.reset();
        }
        outq_.clear();
        return srv_->remove(this);
    }
    if (!outq_.empty()) {
        stream_.expires_after(std::chrono::seconds(60));
        asio::async_write(stream_, asio::buffer(outq_.start()),
                          [self = shared_from_this()](beast::error_code e, size_t) { self->on_raw_written(e); });
        return;
    }
    if (done_) finish_stream();
}

// The client of the request in progress went away: a stream stays for resume (its retention
// ends it if nobody comes back), anything else is cancelled.
void http_session::client_gone() {
    if (rs_->owner().empty()) {
        spdlog::info("{} {}: the client went away, its request cancelled", method_, log_path_);
        srv_->service.cancel(*rs_);
    } else {
        spdlog::info("{} {}: the client went away, its stream kept for resume", method_, log_path_);
    }
    rs_->unfollow(waker_.get());
}

void http_session::finish_stream() {
    if (watching_) {
        watching_ = false;
        beast::error_code ignored;
        stream_.socket().cancel(ignored);
    }
    on_written(!keep_alive_, {});
}

} // namespace actorserve
