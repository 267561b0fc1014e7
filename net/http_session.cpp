#include "net/http_session.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>

#include "include/actorserve/runtime.h"
#include "net/auth.h"
#include "net/prometheus.h"
#include "net/http_ask_actor.h"
#include "net/random_id.h"
#include "net/static_files.h"
#include "net/ws_session.h"

namespace actorserve {

namespace websocket = beast::websocket;

namespace {

std::string_view path_of(std::string_view target) { return target.substr(0, target.find('?')); }

} // namespace

http_session::http_session(asio::ip::tcp::socket &&socket, std::shared_ptr<server_impl> srv, bool refuse)
    : stream_(std::move(socket)), srv_(std::move(srv)), refuse_(refuse), ping_timer_(stream_.get_executor()),
      outq_(srv_->cfg.max_write_queue_bytes) {
    if (!refuse_) slot_ = std::make_shared<connection_slot>(*srv_);
}

http_session::~http_session() = default;

void http_session::run() {
    srv_->add(shared_from_this());
    // Called on the relay's thread: hop onto this connection's strand, where pump reads the stream.
    waker_ = std::make_shared<stream_waker>(srv_->gate, [w = weak_from_this()](const std::string &) {
        if (auto self = w.lock()) asio::post(self->stream_.get_executor(), [self] { self->pump(); });
    });
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->do_read(); });
}

// The first byte with the idle timeout (a kept-alive connection may wait long for its next
// request), then the header within server.header_timeout_s of it (a client trickling headers
// holds a connection that long, no longer), then the body. Documents for the knowledge base may
// be larger than any other request ([rag] max_body_bytes against server.max_message_bytes), and
// which limit holds is known only from the header. note: Beast checks Content-Length against the
// parser's limit as the header completes, so the parser starts with the larger limit and
// on_header applies the request's own.
void http_session::do_read() {
    parser_.emplace();
    const runtime *rt = srv_->service.rt();
    const bool rag_on = rt ? static_cast<bool>(rt->rag()) : srv_->cfg.runtime.rag.enabled;
    parser_->body_limit(std::max(srv_->cfg.max_message_bytes, rag_on ? srv_->cfg.rag_max_body_bytes : 0));
    parser_->header_limit(16 * 1024);
    body_limit_ = srv_->cfg.max_message_bytes;
    if (buffer_.size() > 0) return read_header(); // a pipelined request has begun already
    // A refused connection gets a few seconds to say what it wants, nothing more.
    stream_.expires_after(std::chrono::seconds(refuse_ ? 5 : srv_->cfg.idle_timeout_s));
    stream_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](beast::error_code ec, size_t n) {
        if (ec) return self->on_read(ec, 0);
        self->buffer_.commit(n);
        self->read_header();
    });
}

void http_session::read_header() {
    stream_.expires_after(std::chrono::seconds(refuse_ ? 5 : srv_->cfg.header_timeout_s));
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
}

namespace {

// The last transfer coding of a request (RFC 9112, 6.1): "" when none is given.
std::string last_transfer_coding(const http::request_header<> &h) {
    std::string_view last;
    for (auto it = h.find(http::field::transfer_encoding); it != h.end() && it->name() == http::field::transfer_encoding; ++it)
        last = it->value();
    last = last.substr(last.rfind(',') == std::string_view::npos ? 0 : last.rfind(',') + 1);
    const size_t a = last.find_first_not_of(" \t"), b = last.find_last_not_of(" \t");
    return a == std::string_view::npos ? std::string() : std::string(last.substr(a, b - a + 1));
}

} // namespace

void http_session::on_header(beast::error_code ec) {
    if (ec) return on_read(ec, 0);
    const auto &req = parser_->get();
    // A request whose last transfer coding is not chunked has a body of unknown length: it must
    // be refused and the connection closed (RFC 9112, 6.3), not read as bodiless, which would
    // take the body for the next request.
    if (req.count(http::field::transfer_encoding)) {
        const std::string coding = last_transfer_coding(req);
        if (!beast::iequals(coding, "chunked")) {
            keep_alive_ = false;
            method_ = std::string(req.method_string());
            path_ = std::string(path_of(req.target()));
            t0_ = std::chrono::steady_clock::now();
            return respond_error(errc::invalid_request, "Transfer-Encoding must end with chunked, got '" +
                                                            coding.substr(0, 64) + "' (RFC 9112, 6.3)");
        }
    }
    const runtime *rt = srv_->service.rt();
    if (req.method() == http::verb::post && path_of(req.target()) == "/v1/rag/documents" && rt && rt->rag())
        body_limit_ = srv_->cfg.rag_max_body_bytes;
    if (auto len = parser_->content_length(); len && *len > body_limit_) return on_read(http::error::body_limit, 0);
    parser_->body_limit(body_limit_); // what a chunked body may still bring
    stream_.expires_after(std::chrono::seconds(refuse_ ? 5 : srv_->cfg.idle_timeout_s));
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code e, size_t n) { self->on_read(e, n); });
}

void http_session::on_read(beast::error_code ec, size_t) {
    if (ec == http::error::end_of_stream || ec == asio::error::operation_aborted || ec == beast::error::timeout ||
        ec == asio::error::connection_reset || ec == asio::error::eof) {
        beast::error_code ignored;
        stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
        return srv_->remove(this);
    }
    if (ec) {
        keep_alive_ = false;
        method_ = "?";
        path_ = "?";
        log_path_ = "?";
        t0_ = std::chrono::steady_clock::now();
        if (ec == http::error::body_limit)
            return respond_error(errc::too_large, "the body is over the limit of " + std::to_string(body_limit_) +
                                                      (body_limit_ == srv_->cfg.max_message_bytes
                                                           ? " bytes (server.max_message_bytes)"
                                                           : " bytes (rag.max_body_bytes)"));
        if (ec == http::error::header_limit) return respond_error(errc::too_large, "the headers are over 16384 bytes");
        if (ec.category() == http::make_error_code(http::error::bad_target).category())
            return respond_error(errc::invalid_request, "malformed HTTP request: " + ec.message());
        spdlog::debug("http read failed: {}", ec.message());
        return srv_->remove(this);
    }
    // A bug that throws while a request is handled ends this request with 500, not the process
    // (an uncaught exception in an I/O thread would end every client's answers).
    try {
        route(parser_->release());
    } catch (const std::exception &e) {
        spdlog::error("{} {}: internal error while handling the request: {}", method_, log_path_, e.what());
        keep_alive_ = false;
        respond_error(errc::internal, std::string("internal error while handling the request: ") + e.what());
    }
}

void http_session::route(request &&req) {
    t0_ = std::chrono::steady_clock::now();
    method_ = std::string(req.method_string());
    path_ = std::string(path_of(req.target())); // the query is never logged: it may hold a key
    // A stream's id, with its resume token or key, resumes it: logs name no stream.
    log_path_ = path_.rfind("/v1/streams/", 0) == 0      ? "/v1/streams/{id}"
                : path_.rfind("/v1/responses/", 0) == 0 ? "/v1/responses/{id}"
                                                        : path_.substr(0, 128);
    keep_alive_ = req.keep_alive();
    busy_ = true;
    if (refuse_) {
        ++srv_->refused;
        keep_alive_ = false;
        return respond_error(errc::rate_limited,
                             "too many connections (server.max_connections = " + std::to_string(srv_->cfg.max_connections) + ")",
                             {}, srv_->cfg.runtime.retry_after_ms);
    }
    if (srv_->stopping) {
        keep_alive_ = false;
        return respond_error(errc::overloaded, "the server is shutting down");
    }
    const bool get = req.method() == http::verb::get, post = req.method() == http::verb::post;
    const std::string_view authz = req[http::field::authorization];

    // Browsers (docs/protocol.md, "Security model"): the Host must name this server, and a
    // request from a page (it carries Origin) must come from this server's own pages or an
    // allowed origin; such a cross origin gets CORS headers, others nothing to read.
    cors_origin_.clear();
    if (auto p = check_host(srv_->cfg.allowed_hosts, srv_->cfg.host, req[http::field::host])) {
        keep_alive_ = false;
        return respond_error(p->code, p->message);
    }
    bool cross = false;
    if (auto p = check_origin(srv_->cfg.allowed_origins, req[http::field::origin], req[http::field::host], &cross))
        return respond_error(p->code, p->message);
    if (cross) cors_origin_ = std::string(req[http::field::origin]);
    if (req.method() == http::verb::options) return preflight(req);

    if (websocket::is_upgrade(req)) {
        if (path_ != "/v1/ws") return respond_error(errc::not_found, "no WebSocket endpoint at " + path_ + " (use /v1/ws)");
        auto token = query_param(req.target(), "access_token");
        size_t key = 0;
        if (auto p = check_key(srv_->api_keys, authz, token ? std::optional<std::string_view>(*token) : std::nullopt, &key))
            return respond_error(p->code, p->message);
        // What the connection creates belongs to its key, or without keys to the connection.
        std::string principal = srv_->api_keys.empty() ? "conn:" + random_id("t-") : "key:" + std::to_string(key);
        spdlog::info("GET {} 101 websocket", log_path_);
        srv_->remove(this);
        stream_.expires_never();
        auto ws = std::make_shared<ws_session>(stream_.release_socket(), srv_, slot_, std::move(principal));
        ws->run(std::move(req));
        return;
    }

    if (path_ == "/health") {
        if (!get) return respond_error(errc::invalid_request, "use GET /health");
        if (srv_->service.ready()) return respond(http::status::ok, R"({"status":"ok"})");
        // a probe or a load balancer may come back: say when (as every retryable refusal does)
        return respond(http::status::service_unavailable, R"({"status":"loading"})", "application/json", 1);
    }

    const bool tokens = path_ == "/tokenize" || path_ == "/detokenize";
    const bool api = path_ == "/metrics" || tokens || path_.rfind("/v1/", 0) == 0;
    size_t key = 0;
    if (api)
        if (auto p = check_key(srv_->api_keys, authz, std::nullopt, &key)) return respond_error(p->code, p->message);
    principal_ = api && !srv_->api_keys.empty() ? "key:" + std::to_string(key) : std::string();
    // A JSON body, always: a page of another site can send text/plain or a form without asking
    // first, but application/json only after a CORS preflight, which is refused to it.
    const bool takes_json = path_ == "/v1/chat/completions" || path_ == "/v1/completions" ||
                            path_ == "/v1/rag/documents" || path_ == "/v1/rag/search" || path_ == "/v1/embeddings" || path_ == "/v1/responses" || tokens;
    if (post && takes_json && !is_json_media_type(req[http::field::content_type]))
        return respond_error(errc::unsupported_media,
                             req[http::field::content_type].empty()
                                 ? "POST " + path_ + " needs Content-Type: application/json"
                                 : "POST " + path_ + " needs Content-Type: application/json, got '" +
                                       std::string(req[http::field::content_type].substr(0, 64)) + "'");

    if (path_ == "/metrics" && get) {
        runtime *rt = srv_->service.rt();
        if (!rt) return respond_metrics(metrics_snapshot{}); // loading: the server's own figures
        // The runtime's figures come from its metrics actor. A scrape it does not answer in 2 s
        // fails (503): answering zeros would read as a counter reset to Prometheus, and every
        // rate over it (the alerts of configs/prometheus/alerts.yml) would be wrong for a window.
        return ask_actor<metrics_snapshot>(
            rt->metrics(), std::chrono::seconds(2),
            [](http_session &s, metrics_snapshot &m) { s.respond_metrics(m); },
            [](http_session &s, const std::string &why) {
                spdlog::warn("/metrics: the metrics actor did not answer ({})", why);
                s.respond_error(errc::overloaded, "/metrics: the runtime's metrics did not answer within 2 s (" + why + ")");
            },
            get_atom::value);
    }
    if (path_ == "/v1/models" && get) return respond(http::status::ok, render_models(srv_->model_name, srv_->created));
    if (path_ == "/v1/chat/completions" && post) return start_completion(true, req);
    if (path_ == "/v1/completions" && post) return start_completion(false, req);
    if (path_.rfind("/v1/rag/", 0) == 0) return route_rag(req);
    if (tokens) return route_tokenize(req);
    if (path_ == "/v1/embeddings") return route_embeddings(req);
    if (path_.rfind("/v1/streams/", 0) == 0) return route_streams(req);
    if (path_ == "/v1/responses" || path_.rfind("/v1/responses/", 0) == 0) return route_responses(req);
    if (path_ == "/metrics" || path_ == "/v1/models" || path_ == "/v1/chat/completions" || path_ == "/v1/completions") {
        keep_alive_ = false;
        return respond(http::status::method_not_allowed,
                       render_openai_error(errc::invalid_request, method_ + " is not allowed on " + path_));
    }
    if (get && !api) {
        static_file f;
        switch (load_static(srv_->web_root, path_, f)) {
        case static_result::ok: return respond(http::status::ok, std::move(f.body), f.content_type);
        case static_result::bad_path: return respond_error(errc::invalid_request, "not a valid file path: " + path_.substr(0, 128));
        case static_result::not_found: break;
        }
    }
    respond_error(errc::not_found, "nothing at " + method_ + " " + path_.substr(0, 128));
}

// A CORS preflight (or a plain OPTIONS). Reached only by no Origin, the server's own, or an
// allowed one (route refused the rest with 403).
void http_session::preflight(const request &req) {
    auto res = std::make_shared<http::response<http::string_body>>(http::status::no_content, 11);
    res->set(http::field::server, "actorserve");
    res->set(http::field::allow, "GET, POST, DELETE, OPTIONS");
    if (!cors_origin_.empty()) {
        res->set(http::field::access_control_allow_origin, cors_origin_);
        res->set(http::field::vary, "Origin");
        res->set(http::field::access_control_allow_methods, "GET, POST, DELETE");
        res->set(http::field::access_control_allow_headers, "Authorization, Content-Type, Last-Event-ID");
        res->set(http::field::access_control_max_age, "600");
        if (beast::iequals(req["Access-Control-Request-Private-Network"], "true"))
            res->set("Access-Control-Allow-Private-Network", "true");
    }
    res->keep_alive(keep_alive_ && !shutting_down_);
    res->prepare_payload();
    spdlog::info("OPTIONS {} 204", log_path_);
    stream_.expires_after(std::chrono::seconds(60));
    http::async_write(stream_, *res, [self = shared_from_this(), res](beast::error_code ec, size_t) {
        self->on_written(!res->keep_alive(), ec);
    });
}

void http_session::respond(http::status status, std::string body, std::string_view content_type,
                           std::optional<int> retry_after_s) {
    auto res = std::make_shared<http::response<http::string_body>>(status, 11);
    res->set(http::field::server, "actorserve");
    if (!cors_origin_.empty()) {
        res->set(http::field::access_control_allow_origin, cors_origin_);
        res->set(http::field::vary, "Origin");
    }
    res->set(http::field::content_type, content_type);
    // Every answer: no content sniffing, no framing by another site's page (the pages' own CSP
    // <meta> cannot say frame-ancestors), no Referer to other sites.
    res->set("X-Content-Type-Options", "nosniff");
    res->set("X-Frame-Options", "DENY");
    res->set("Content-Security-Policy", "frame-ancestors 'none'");
    res->set("Referrer-Policy", "no-referrer");
    if (retry_after_s) res->set(http::field::retry_after, std::to_string(*retry_after_s));
    res->keep_alive(keep_alive_ && !shutting_down_);
    res->body() = std::move(body);
    res->prepare_payload();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count();
    spdlog::info("{} {} {} {:.1f} ms", method_, log_path_, res->result_int(), ms);
    stream_.expires_after(std::chrono::seconds(60));
    http::async_write(stream_, *res, [self = shared_from_this(), res](beast::error_code ec, size_t) {
        self->on_written(!res->keep_alive(), ec);
    });
}

void http_session::respond_error(errc code, std::string_view message, std::string_view param, int retry_after_ms) {
    std::optional<int> retry;
    // Every refusal a client may retry says when (Retry-After, whole seconds, at least 1).
    if (code == errc::overloaded || (code == errc::rate_limited && retry_after_ms > 0))
        retry = std::max(1, (retry_after_ms + 999) / 1000);
    if (code == errc::too_large) keep_alive_ = false;
    respond(static_cast<http::status>(info(code).http_status), render_openai_error(code, message, param),
            "application/json", retry);
}

void http_session::on_written(bool close, beast::error_code ec) {
    busy_ = false;
    if (ec || close || shutting_down_) {
        beast::error_code ignored;
        stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
        return srv_->remove(this);
    }
    do_read();
}

void http_session::respond_metrics(const metrics_snapshot &snap) {
    server_stats st;
    st.open_connections = srv_->connections.load();
    st.websocket_connections = srv_->websockets.load();
    st.connections_refused = srv_->refused.load();
    st.retained_requests = srv_->service.retained();
    st.sessions = srv_->service.sessions();
    st.ready = srv_->service.ready();
    if (const key_limiter *lim = srv_->service.limiter())
        for (size_t k = 0; k < lim->size(); ++k) {
            server_stats::key_stats ks;
            ks.id = lim->settings(k).id;
            for (int l = 0; l < kKeyLimits; ++l) ks.refused[l] = lim->refused(k, static_cast<key_limit>(l));
            ks.running = lim->running(k);
            st.keys.push_back(std::move(ks));
        }
    if (const temperature_policy *p = srv_->service.policy()) {
        st.policy = true;
        for (int k = 0; k < kRequestKinds; ++k) st.policy_kinds[k] = p->chosen(k);
        st.policy_unclassified = p->unclassified();
    }
    if (const injection_guard *g = srv_->service.guard()) {
        st.guard = true;
        st.guard_passed = g->passed();
        st.guard_flagged = g->flagged();
        st.guard_blocked = g->blocked();
        st.guard_unchecked = g->unchecked();
    }
    if (const request_log *log = srv_->service.log()) {
        st.request_log_lines = log->lines();
        st.request_log_errors = log->errors();
    }
    respond(http::status::ok, render_prometheus(snap, st, srv_->model_name), "text/plain; version=0.0.4; charset=utf-8");
}

// While an answer is prepared nothing is read from the socket, so a client that hangs up would
// go unnoticed until the end. Waiting for readability catches the hang-up (a zero-byte peek).
void http_session::watch_peer() {
    watching_ = true;
    stream_.socket().async_wait(asio::ip::tcp::socket::wait_read, [self = shared_from_this()](beast::error_code ec) {
        if (ec || !self->watching_) return;
        char c;
        const ssize_t n = ::recv(self->stream_.socket().native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n > 0) { // the next pipelined request: it waits, and hang-ups go unnoticed until then
            self->watching_ = false;
            return;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return self->watch_peer();
        self->watching_ = false;
        if (self->rs_) {
            self->client_gone();
            self->rs_.reset();
        }
        self->done_ = true;
        self->stream_.close();
        self->srv_->remove(self.get());
    });
}

void http_session::close_for_shutdown() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
        self->shutting_down_ = true;
        self->keep_alive_ = false;
        if (!self->busy_) {
            beast::error_code ignored;
            self->stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
            self->stream_.socket().close(ignored);
        }
    });
}

} // namespace actorserve
