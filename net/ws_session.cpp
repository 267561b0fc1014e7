#include "net/ws_session.h"

#include <spdlog/spdlog.h>

#include "net/ws_protocol.h"

namespace actorserve {

namespace websocket = beast::websocket;

ws_session::ws_session(asio::ip::tcp::socket &&socket, std::shared_ptr<server_impl> srv,
                       std::shared_ptr<connection_slot> slot, std::string principal)
    : ws_(std::move(socket)), srv_(std::move(srv)), slot_(std::move(slot)), principal_(std::move(principal)),
      outq_(srv_->cfg.max_write_queue_bytes) {
    ++srv_->websockets;
}

ws_session::~ws_session() { --srv_->websockets; }

void ws_session::run(beast::http::request<beast::http::string_body> req) {
    srv_->add(shared_from_this());
    // Called on the relay's thread: hop onto this connection's strand, where pump reads the stream.
    waker_ = std::make_shared<stream_waker>(srv_->gate, [w = weak_from_this()](const std::string &request_id) {
        if (auto self = w.lock())
            asio::post(self->ws_.get_executor(), [self, request_id] { self->pump(request_id); });
    });
    // The upgrade's own timeouts are over; the WebSocket's apply from here (idle: 300 s).
    beast::get_lowest_layer(ws_).expires_never();
    ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
    ws_.set_option(websocket::stream_base::decorator(
        [](websocket::response_type &res) { res.set(beast::http::field::server, "actorserve"); }));
    ws_.read_message_max(srv_->cfg.max_message_bytes);
    ws_.async_accept(req, [self = shared_from_this()](beast::error_code ec) {
        if (ec) {
            spdlog::debug("websocket handshake failed: {}", ec.message());
            return self->release();
        }
        spdlog::debug("websocket open");
        self->do_read();
    });
}

void ws_session::do_read() {
    ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code ec, size_t n) { self->on_read(ec, n); });
}

void ws_session::on_read(beast::error_code ec, size_t) {
    if (ec) {
        // Beast has already answered what the protocol requires: 1009 for a message over the
        // limit, 1007 for invalid UTF-8 in a text frame, 1002 for a protocol violation.
        if (ec == websocket::error::message_too_big)
            spdlog::info("websocket closed: a message over {} bytes", srv_->cfg.max_message_bytes);
        else if (ec != websocket::error::closed)
            spdlog::debug("websocket read ended: {}", ec.message());
        return release();
    }
    if (!ws_.got_text()) {
        send(render_error(errc::invalid_request, "binary frames are not part of the protocol; send JSON text frames"));
    } else {
        auto data = buffer_.cdata();
        // A bug that throws while a message is handled answers that message with an error event,
        // not by ending the process (and every other client's answers with it).
        try {
            handle(std::string_view(static_cast<const char *>(data.data()), data.size()));
        } catch (const std::exception &e) {
            spdlog::error("websocket: internal error while handling a message: {}", e.what());
            send(render_error(errc::internal, std::string("internal error while handling the message: ") + e.what()));
        }
    }
    buffer_.consume(buffer_.size());
    if (!closing_) do_read();
}

void ws_session::handle(std::string_view text) {
    auto parsed = parse_ws_message(parser_, text, srv_->cfg);
    if (auto *p = std::get_if<request_problem>(&parsed)) return send(render_error(p->code, p->message));
    ws_message &m = std::get<ws_message>(parsed);
    chat_service &svc = srv_->service;
    if (auto *c = std::get_if<ws_chat>(&m)) {
        auto started = svc.start(caller{principal_, std::move(c->resume_token)}, std::move(c->session_id),
                                 std::move(c->req), false, c->stream);
        if (auto *e = std::get_if<service_error>(&started)) return send(render_error(e->code, e->message, e->retry_after_ms));
        start_following(std::get<std::shared_ptr<request_stream>>(started), 0);
    } else if (auto *x = std::get_if<ws_cancel>(&m)) {
        auto found = svc.find(x->request_id, caller{principal_, std::move(x->resume_token)});
        if (auto *e = std::get_if<service_error>(&found)) return send(render_error(e->code, e->message));
        svc.cancel(*std::get<std::shared_ptr<request_stream>>(found));
    } else if (auto *r = std::get_if<ws_resume>(&m)) {
        auto found = svc.find(r->request_id, caller{principal_, std::move(r->resume_token)});
        if (auto *e = std::get_if<service_error>(&found)) return send(render_error(e->code, e->message));
        auto s = std::get<std::shared_ptr<request_stream>>(std::move(found));
        // Events a client has seen exist: a last_event_id past them is a client's mistake (and
        // would leave the stream delivering to nobody).
        const size_t have = s->size();
        if (r->last_event_id >= static_cast<int64_t>(have))
            return send(render_error(errc::unprocessable, "last_event_id " + std::to_string(r->last_event_id) +
                                                              " is past the last event of request " + s->request_id() +
                                                              " (" + std::to_string(have - 1) + " so far)"));
        start_following(std::move(s), static_cast<size_t>(r->last_event_id + 1));
    }
}

void ws_session::start_following(std::shared_ptr<request_stream> s, size_t from) {
    const std::string id = s->request_id();
    s->follow(std::weak_ptr<stream_follower>(waker_));
    follows_[id] = follow{std::move(s), from};
    pump(id);
}

void ws_session::pump(const std::string &request_id) {
    auto it = follows_.find(request_id);
    if (it == follows_.end() || released_) return;
    follow &f = it->second;
    std::vector<stream_event> events;
    const size_t first = f.next;
    f.next = f.stream->read(first, waker_.get(), events);
    bool ended = false;
    for (size_t i = 0; i < events.size(); ++i) {
        const stream_event &e = events[i];
        ended |= e.ends();
        send(render_event(*f.stream, first + i, e));
    }
    if (ended) {
        // Delivered (as far as this side can know): retention now counts from here.
        f.stream->unfollow(waker_.get());
        follows_.erase(it);
    }
}

void ws_session::send(std::string msg) {
    if (closing_ || released_) return;
    const size_t n = msg.size();
    if (!outq_.push(std::move(msg))) {
        // The client is not reading. Only the frame being written is kept (Beast holds its
        // buffer); close once it is out. The requests go on and can be resumed elsewhere.
        spdlog::warn("websocket: {} bytes wait to be sent (limit {}), closing: the client is not reading",
                     outq_.bytes() + n, outq_.limit());
        return close(websocket::close_code::policy_error, "write queue overflow");
    }
    if (!outq_.writing()) do_write();
}

void ws_session::do_write() {
    ws_.text(true);
    ws_.async_write(asio::buffer(outq_.start()),
                    [self = shared_from_this()](beast::error_code ec, size_t n) { self->on_write(ec, n); });
}

void ws_session::on_write(beast::error_code ec, size_t) {
    outq_.done();
    if (ec) return release();
    if (closing_) return close(static_cast<websocket::close_code>(pending_close_.code), std::string(pending_close_.reason.c_str()));
    if (!outq_.empty()) return do_write();
    if (close_when_flushed_) close(websocket::close_code::going_away, "the server is shutting down");
}

void ws_session::close(websocket::close_code code, std::string reason) {
    if (closing_ && (outq_.writing() || close_in_flight_)) return; // on_write comes back here with pending_close_
    closing_ = true;
    pending_close_ = websocket::close_reason(code, reason);
    if (outq_.writing()) return;
    outq_.clear();
    close_in_flight_ = true; // a close frame is a write: nothing else may start
    ws_.async_close(pending_close_, [self = shared_from_this()](beast::error_code) { self->release(); });
}

void ws_session::close_for_shutdown() {
    asio::post(ws_.get_executor(), [self = shared_from_this()] {
        if (self->closing_ || self->released_) return;
        if (self->outq_.writing() || !self->outq_.empty()) self->close_when_flushed_ = true;
        else self->close(websocket::close_code::going_away, "the server is shutting down");
    });
}

void ws_session::release() {
    if (released_) return;
    released_ = true;
    for (auto &[id, f] : follows_) f.stream->unfollow(waker_.get());
    follows_.clear();
    srv_->remove(this);
}

} // namespace actorserve
