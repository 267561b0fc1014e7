// The network tests' clients and server fixture (test_client.h), compiled once.
#include "tests/support/test_client.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <spdlog/spdlog.h>

#include <array>

namespace testnet {

namespace beast = boost::beast;
using tcp = asio::ip::tcp;

std::optional<json::value> parse_json(std::string_view text) {
    boost::system::error_code ec;
    json::value v = json::parse(text, ec);
    if (ec) return std::nullopt;
    return v;
}

namespace {

// Runs one asynchronous operation on `ioc` for at most `timeout`. `start(handler)` starts it.
// On expiry the socket is closed, which aborts the operation, and timed_out is returned.
template <class Start>
boost::system::error_code run_with_deadline(asio::io_context &ioc, tcp::socket &sock, ms timeout, Start &&start) {
    bool done = false;
    boost::system::error_code result;
    start([&done, &result](boost::system::error_code ec, auto &&...) {
        done = true;
        result = ec;
    });
    ioc.restart();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done && std::chrono::steady_clock::now() < deadline) {
        if (ioc.run_one_until(deadline) == 0 && ioc.stopped()) break;
    }
    if (done) return result;
    boost::system::error_code ignored;
    sock.close(ignored); // the operation completes with operation_aborted
    ioc.restart();
    ioc.run_for(5s);
    return asio::error::timed_out;
}

} // namespace

// ---------------------------------------------------------------------------------------------
// WebSocket client

struct ws_client::impl {
    asio::io_context ioc;
    websocket::stream<tcp::socket> ws{ioc};
    beast::flat_buffer buf;
    websocket::response_type response;
    boost::system::error_code error;
    bool got_response = false;
    bool open = false;
    bool closed = false;
    int close_code = 0;
    std::string close_reason;
    bool last_was_text = false;
    bool bad_json = false;
    std::string last_raw;

    bool fail(boost::system::error_code ec) {
        error = ec;
        return false;
    }
};

ws_client::ws_client() : p_(std::make_unique<impl>()) {}
ws_client::~ws_client() { drop(); }

bool ws_client::connect(uint16_t port, const ws_options &opt) {
    impl &p = *p_;
    tcp::socket &sock = p.ws.next_layer();
    boost::system::error_code ec;
    sock.open(tcp::v4(), ec);
    if (ec) return p.fail(ec);
    if (opt.rcvbuf > 0) sock.set_option(asio::socket_base::receive_buffer_size(opt.rcvbuf), ec);
    const tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), port);
    ec = run_with_deadline(p.ioc, sock, opt.timeout, [&](auto h) { sock.async_connect(ep, std::move(h)); });
    if (ec) return p.fail(ec);
    auto headers = opt.headers;
    p.ws.set_option(websocket::stream_base::decorator([headers](websocket::request_type &req) {
        req.set(http::field::user_agent, "actorserve-test");
        for (const auto &[k, v] : headers) req.set(k, v);
    }));
    p.ws.read_message_max(64u << 20);
    p.ws.auto_fragment(false);         // one message, one frame,
    p.ws.write_buffer_bytes(1u << 20); // masked and written in one go (up to 1 MiB)
    const std::string host = "127.0.0.1:" + std::to_string(port);
    ec = run_with_deadline(p.ioc, sock, opt.timeout,
                           [&](auto h) { p.ws.async_handshake(p.response, host, opt.target, std::move(h)); });
    // declined: response holds the server's answer (401, 403, 429, ...)
    p.got_response = !ec || ec == websocket::error::upgrade_declined;
    if (ec) return p.fail(ec);
    p.open = true;
    return true;
}

int ws_client::status() const { return p_->got_response ? static_cast<int>(p_->response.result_int()) : 0; }
const boost::system::error_code &ws_client::error() const { return p_->error; }
bool ws_client::is_open() const { return p_->open; }
bool ws_client::closed() const { return p_->closed; }
int ws_client::close_code() const { return p_->close_code; }
const std::string &ws_client::close_reason() const { return p_->close_reason; }
bool ws_client::last_was_text() const { return p_->last_was_text; }
bool ws_client::bad_json() const { return p_->bad_json; }
const std::string &ws_client::last_raw() const { return p_->last_raw; }

std::optional<std::string> ws_client::read(ms timeout) {
    impl &p = *p_;
    if (!p.open) return std::nullopt;
    p.buf.clear();
    auto ec = run_with_deadline(p.ioc, p.ws.next_layer(), timeout, [&](auto h) { p.ws.async_read(p.buf, std::move(h)); });
    if (ec) {
        // A close frame came (its answer may still have failed, when the server closed the
        // TCP connection at once): the reason holds its status.
        if (ec == websocket::error::closed || p.ws.reason().code != websocket::close_code::none) {
            p.closed = true;
            p.close_code = static_cast<int>(p.ws.reason().code);
            p.close_reason = std::string(p.ws.reason().reason.c_str());
        }
        p.fail(ec);
        p.open = false;
        return std::nullopt;
    }
    p.last_was_text = p.ws.got_text();
    return beast::buffers_to_string(p.buf.data());
}

std::optional<json::object> ws_client::read_json(ms timeout) {
    p_->bad_json = false;
    auto s = read(timeout);
    if (!s) return std::nullopt;
    p_->last_raw = *s;
    auto v = parse_json(*s);
    if (!v || !v->is_object()) {
        p_->bad_json = true;
        return std::nullopt;
    }
    return std::move(v->get_object());
}

bool ws_client::close(websocket::close_code code, ms timeout) {
    impl &p = *p_;
    if (!p.open) return false;
    auto ec = run_with_deadline(p.ioc, p.ws.next_layer(), timeout, [&](auto h) { p.ws.async_close(code, std::move(h)); });
    p.open = false;
    boost::system::error_code ignored;
    p.ws.next_layer().close(ignored);
    return !ec;
}

void ws_client::drop(bool rst) {
    boost::system::error_code ignored;
    tcp::socket &sock = p_->ws.next_layer();
    if (sock.is_open() && rst) sock.set_option(asio::socket_base::linger(true, 0), ignored);
    sock.close(ignored);
    p_->open = false;
}

std::string ws_client::describe_error() const {
    const impl &p = *p_;
    if (!p.open && !p.closed && p.got_response && status() != 101)
        return "upgrade declined with " + std::to_string(status()) + ": " + p.response.body();
    if (p.closed)
        return "closed by the server with status " + std::to_string(p.close_code) + " '" + p.close_reason + "'" +
               (p.error && p.error != websocket::error::closed ? " (then: " + p.error.message() + ")" : "");
    return p.error ? p.error.message() : std::string("no error");
}

bool ws_client::write(std::string_view s, bool text, ms timeout) {
    impl &p = *p_;
    if (!p.open) return p.fail(asio::error::not_connected);
    p.ws.text(text);
    auto ec = run_with_deadline(p.ioc, p.ws.next_layer(), timeout,
                                [&](auto h) { p.ws.async_write(asio::buffer(s.data(), s.size()), std::move(h)); });
    if (ec) {
        p.open = false;
        return p.fail(ec);
    }
    return true;
}

bool ws_client::send_fragments(std::string_view s, size_t piece, ms timeout) {
    impl &p = *p_;
    if (!p.open) return p.fail(asio::error::not_connected);
    if (piece == 0) piece = 1;
    p.ws.text(true);
    for (size_t at = 0; at < s.size() || at == 0; at += piece) {
        const size_t n = std::min(piece, s.size() - at);
        const bool fin = at + n >= s.size();
        auto ec = run_with_deadline(p.ioc, p.ws.next_layer(), timeout, [&](auto h) {
            p.ws.async_write_some(fin, asio::buffer(s.data() + at, n), std::move(h));
        });
        if (ec) {
            p.open = false;
            return p.fail(ec);
        }
        if (fin) break;
    }
    return true;
}

// ---------------------------------------------------------------------------------------------
// HTTP client

// r with the status, headers (names lower-cased) and body of a parsed response.
static http_reply with_response(http_reply r, const http::response<http::string_body> &res) {
    r.status = static_cast<int>(res.result_int());
    for (const auto &f : res) r.headers[lower(f.name_string())] = std::string(f.value());
    r.body = res.body();
    return r;
}

struct http_conn::impl {
    asio::io_context ioc;
    tcp::socket sock{ioc};
    beast::flat_buffer buf;
    uint16_t port = 0;
    std::string error;

    http_reply read_reply(http_reply r, ms timeout) {
        http::response_parser<http::string_body> parser;
        parser.body_limit(256u << 20);
        parser.header_limit(1u << 20);
        auto ec = run_with_deadline(ioc, sock, timeout, [&](auto h) { http::async_read(sock, buf, parser, std::move(h)); });
        if (ec && !(ec == http::error::end_of_stream && parser.is_done())) {
            r.error += (r.error.empty() ? "" : "; ") + std::string("read: ") + ec.message();
            if (!parser.is_header_done()) return r;
        }
        return with_response(std::move(r), parser.get());
    }
};

http_reply parse_http_response(std::string_view raw) {
    http::response_parser<http::string_body> parser;
    parser.body_limit(256u << 20);
    parser.eager(true);
    http_reply r;
    boost::system::error_code ec;
    size_t used = 0;
    while (!ec && !parser.is_done() && used < raw.size()) {
        const size_t n = parser.put(asio::buffer(raw.data() + used, raw.size() - used), ec);
        if (ec == http::error::need_more) ec = {};
        if (n == 0) break;
        used += n;
    }
    if (ec) r.error = "parse: " + ec.message();
    else if (!parser.is_done()) r.error = "parse: the response is incomplete";
    else if (used != raw.size()) r.error = "parse: " + std::to_string(raw.size() - used) + " bytes after the response";
    if (!parser.is_header_done()) return r;
    return with_response(std::move(r), parser.get());
}

http_conn::http_conn() : p_(std::make_unique<impl>()) {}
http_conn::~http_conn() { drop(); }
const std::string &http_conn::error() const { return p_->error; }

bool http_conn::connect(uint16_t port, ms timeout) {
    impl &p = *p_;
    p.port = port;
    boost::system::error_code ec;
    p.sock.open(tcp::v4(), ec);
    if (ec) {
        p.error = ec.message();
        return false;
    }
    const tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), port);
    ec = run_with_deadline(p.ioc, p.sock, timeout, [&](auto h) { p.sock.async_connect(ep, std::move(h)); });
    if (ec) p.error = ec.message();
    return !ec;
}

http_reply http_conn::request(http::verb verb, std::string_view target, std::string body, const header_list &headers,
                              ms timeout) {
    impl &p = *p_;
    http::request<http::string_body> req{verb, target, 11};
    req.set(http::field::host, "127.0.0.1:" + std::to_string(p.port));
    req.set(http::field::user_agent, "actorserve-test");
    if (verb == http::verb::post) req.set(http::field::content_type, "application/json");
    for (const auto &[k, v] : headers) req.set(k, v);
    req.body() = std::move(body);
    req.prepare_payload();
    http_reply r;
    auto ec = run_with_deadline(p.ioc, p.sock, timeout, [&](auto h) { http::async_write(p.sock, req, std::move(h)); });
    if (ec) {
        // The server may have answered and closed before reading the whole body (413, 429):
        // the answer can still be read.
        r.error = "write: " + ec.message();
    }
    return p.read_reply(std::move(r), timeout);
}

bool http_conn::send_raw(std::string_view bytes, ms timeout) {
    impl &p = *p_;
    auto ec = run_with_deadline(p.ioc, p.sock, timeout,
                                [&](auto h) { asio::async_write(p.sock, asio::buffer(bytes.data(), bytes.size()), std::move(h)); });
    if (ec) p.error = ec.message();
    return !ec;
}

std::string http_conn::read_some(ms timeout) {
    impl &p = *p_;
    std::array<char, 16384> chunk{};
    size_t got = 0;
    bool done = false;
    boost::system::error_code result;
    p.sock.async_read_some(asio::buffer(chunk), [&](boost::system::error_code ec, size_t n) {
        done = true;
        result = ec;
        got = n;
    });
    p.ioc.restart();
    p.ioc.run_for(timeout);
    if (!done) {
        boost::system::error_code ignored;
        p.sock.close(ignored);
        p.ioc.restart();
        p.ioc.run_for(5s);
        p.error = "timed out";
        return {};
    }
    if (result) p.error = result.message();
    return std::string(chunk.data(), got);
}

void http_conn::drop(bool rst) {
    boost::system::error_code ignored;
    if (p_->sock.is_open() && rst) p_->sock.set_option(asio::socket_base::linger(true, 0), ignored);
    p_->sock.close(ignored);
}

http_reply http_request(uint16_t port, http::verb verb, std::string_view target, std::string body,
                        const header_list &headers, ms timeout) {
    http_conn c;
    if (!c.connect(port, timeout)) {
        http_reply r;
        r.error = "connect: " + c.error();
        return r;
    }
    return c.request(verb, target, std::move(body), headers, timeout);
}

bool can_connect(uint16_t port, ms timeout) {
    http_conn c;
    return c.connect(port, timeout);
}

// ---------------------------------------------------------------------------------------------
// The server under test

void watchdog::arm(std::chrono::seconds limit, std::string what) {
    disarm();
    stop_ = false;
    thread_ = std::thread([this, limit, what = std::move(what)] {
        std::unique_lock lk(m_);
        if (!cv_.wait_for(lk, limit, [this] { return stop_; })) {
            std::fprintf(stderr, "watchdog: %s took over %lld s; aborting\n", what.c_str(),
                         static_cast<long long>(limit.count()));
            std::fflush(stderr);
            std::abort();
        }
    });
}

void watchdog::disarm() {
    if (!thread_.joinable()) return;
    {
        std::lock_guard lk(m_);
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

void set_log_level(const std::string &level) {
    const char *env = std::getenv("ACTORSERVE_TEST_LOG");
    spdlog::set_level(spdlog::level::from_str(env ? env : level));
}

actorserve::server_config server_fixture::config() {
    actorserve::server_config c;
    c.host = "127.0.0.1";
    c.port = 0;
    c.io_threads = 2;
    c.log_level = "warn";
    c.runtime.model_path = test_paths::model();
    c.runtime.n_threads = 2;
    c.runtime.n_ctx = 1024;
    c.runtime.max_seqs = 16;
    c.runtime.step_tokens = 256;
    c.runtime.kv_capacity_mib = 64;
    c.runtime.cache.enabled = false; // the cache tests turn it on
    c.runtime.rag.enabled = false;   // test_rag turns it on
    c.policy.dynamic_temperature = false; // test_policy turns them on (they need the embeddings actor)
    c.guard.action = actorserve::guard_action::off;
    return c;
}

server_fixture::server_fixture(actorserve::server_config cfg) : cfg_(std::move(cfg)) {
    guard_.arm(std::chrono::seconds(1200), "a test case");
    set_log_level(cfg_.log_level);
    actorserve::runtime::tune(caf_cfg_);
    sys_ = std::make_unique<caf::actor_system>(caf_cfg_);
    std::string err;
    srv_ = actorserve::server::start(*sys_, cfg_, err);
    REQUIRE_MESSAGE(srv_, "server::start: " << err);
    REQUIRE(srv_->port() != 0);
    rt_ = actorserve::runtime::start(*sys_, cfg_.runtime, err);
    REQUIRE_MESSAGE(rt_, "runtime::start: " << err);
    srv_->attach(*rt_);
}

server_fixture::~server_fixture() {
    guard_.arm(std::chrono::seconds(120), "the server's and the runtime's teardown");
    if (srv_ && !shut_down_) srv_->shutdown(ms(0));
    srv_.reset();
    rt_.reset();
    sys_.reset();
    guard_.disarm();
}

actorserve::metrics_snapshot server_fixture::metrics() {
    actorserve::metrics_snapshot snap;
    caf::scoped_actor self{*sys_};
    self->request(rt_->metrics(), std::chrono::seconds(10), actorserve::get_atom::value)
        .receive([&](actorserve::metrics_snapshot &s) { snap = s; },
                 [&](caf::error &e) { FAIL("metrics: " << sys_->render(e)); });
    return snap;
}

temp_file::temp_file(const std::string &content) {
    char name[] = "/tmp/actorserve-test-XXXXXX";
    const int fd = ::mkstemp(name);
    REQUIRE(fd >= 0);
    ::close(fd);
    path_ = name;
    std::ofstream(path_) << content;
}

} // namespace testnet
