// An OpenAI completion on an HTTP connection: started through the chat service, then written
// whole or as server-sent events from the request's stream, through the bounded write queue.
#include "net/http_session.h"

#include <spdlog/spdlog.h>

#include <cstdio>

#include "include/actorserve/runtime.h"
#include "net/random_id.h"

namespace actorserve {

namespace {

std::string sse_chunk(std::string_view json) {
    // One server-sent event ("data: ...\n\n") as one HTTP chunk.
    const size_t n = json.size() + 8;
    char head[24];
    std::snprintf(head, sizeof head, "%zx\r\n", n);
    std::string out(head);
    out.append("data: ").append(json).append("\n\n\r\n");
    return out;
}

} // namespace

void http_session::start_completion(bool chat, const request &req) {
    auto parsed = parse_openai(parser_json_, req.body(), chat, srv_->cfg, srv_->model_name);
    if (auto *p = std::get_if<request_problem>(&parsed)) return respond_error(p->code, p->message, p->param);
    oreq_ = std::move(std::get<openai_request>(parsed));
    auto started = srv_->service.start(caller{}, std::nullopt, oreq_.req, true, oreq_.stream);
    if (auto *e = std::get_if<service_error>(&started)) return respond_error(e->code, e->message, {}, e->retry_after_ms);
    rs_ = std::get<std::shared_ptr<request_stream>>(std::move(started));
    resp_id_ = (chat ? "chatcmpl-" : "cmpl-") + rs_->request_id().substr(2);
    next_ = 0;
    sse_started_ = false;
    first_chunk_ = true;
    done_ = false;
    rs_->follow(std::weak_ptr<stream_follower>(waker_));
    watch_peer();
    pump();
}

void http_session::pump() {
    if (!rs_ || done_) return;
    std::vector<stream_event> events;
    next_ = rs_->read(next_, waker_.get(), events);
    for (const stream_event &e : events) {
        if (e.kind == stream_event::start) continue;
        if (!sse_started_ && (e.kind == stream_event::error || !oreq_.stream)) {
            if (e.kind == stream_event::token) continue; // stream: false answers with done's text
            // Nothing sent yet: the answer (or the error, with its own status) is one response.
            done_ = true;
            if (watching_) { // no write is pending: cancelling touches only the watch
                watching_ = false;
                beast::error_code ignored;
                stream_.socket().cancel(ignored);
            }
            rs_->unfollow(waker_.get());
            rs_.reset();
            if (e.kind == stream_event::error) return respond_error(e.code, e.message, {}, e.retry_after_ms);
            return respond(http::status::ok, render_openai_response(oreq_, resp_id_, srv_->created, srv_->model_name, e));
        }
        if (!sse_started_) {
            sse_started_ = true;
            const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count();
            spdlog::info("{} {} 200 stream, first event after {:.1f} ms", method_, path_, ms);
            write_raw(std::string("HTTP/1.1 200 OK\r\nServer: actorserve\r\nContent-Type: text/event-stream\r\n"
                                  "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n") +
                      (cors_origin_.empty() ? "" : "Access-Control-Allow-Origin: " + cors_origin_ + "\r\nVary: Origin\r\n") +
                      (keep_alive_ ? "" : "Connection: close\r\n") + "\r\n");
        }
        if (e.kind == stream_event::error) {
            write_raw(sse_chunk(render_openai_error(e.code, e.message)));
        } else {
            write_raw(sse_chunk(render_openai_chunk(oreq_, resp_id_, srv_->created, srv_->model_name, e, first_chunk_)));
            first_chunk_ = false;
        }
        if (e.ends()) {
            if (e.kind == stream_event::done && oreq_.include_usage)
                write_raw(sse_chunk(render_openai_usage_chunk(oreq_, resp_id_, srv_->created, srv_->model_name, e.usage)));
            write_raw(sse_chunk("[DONE]"));
            write_raw("0\r\n\r\n");
            done_ = true;
            rs_->unfollow(waker_.get());
            rs_.reset();
        }
    }
}

void http_session::write_raw(std::string bytes) {
    const size_t n = bytes.size();
    if (!outq_.push(std::move(bytes))) {
        spdlog::warn("{} {}: {} bytes wait to be sent (limit {}), closing: the client is not reading", method_, path_,
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
            spdlog::info("{} {}: the client went away, its request cancelled", method_, path_);
            srv_->service.cancel(*rs_);
            rs_->unfollow(waker_.get());
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

void http_session::finish_stream() {
    if (watching_) {
        watching_ = false;
        beast::error_code ignored;
        stream_.socket().cancel(ignored);
    }
    on_written(!keep_alive_, {});
}

} // namespace actorserve
