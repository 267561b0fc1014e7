// Test helpers for the network tests: small synchronous Beast clients (WebSocket and HTTP/1.1)
// in which every operation has a deadline, and `server_fixture`, which runs the real server and
// runtime in-process on a loopback port. Header-only: tests/net/test_*.cpp each include it.
//
//   server_fixture fx(server_fixture::config());          // port 0, the real model
//   ws_client c;
//   REQUIRE(c.connect(fx.port()));
//   c.send_json({{"type", "chat"}, {"message", "Hi"}, {"max_tokens", 8}, {"temperature", 0}});
//   auto ev = c.read_json();                               // nullopt on timeout, close or error
//   auto r = http_get(fx.port(), "/health");               // r.status, r.headers, r.body
//
// A timed-out operation closes the socket (which aborts it) and reports `timed_out`, so a server
// that never answers fails the test instead of hanging it.
#pragma once

#include <doctest/doctest.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

#include "include/actorserve/runtime.h"
#include "net/config.h"
#include "net/server.h"

namespace testnet {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace asio = boost::asio;
namespace json = boost::json;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;

// Generous: the tests also run under ASan and TSan, where generation is several times slower.
// Only a server that has stopped answering ever waits this long.
inline constexpr ms kIoTimeout{60000};

// ---------------------------------------------------------------------------------------------
// small utilities

inline std::string lower(std::string_view s) {
    std::string out(s);
    for (char &c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

inline bool contains_ci(std::string_view hay, std::string_view needle) {
    return lower(hay).find(lower(needle)) != std::string::npos;
}

// True when `word` occurs in `text` not as part of a longer identifier (so that "n" is found
// in "n must be 1" but not in "content").
inline bool names_word(std::string_view text, std::string_view word) {
    auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    for (size_t pos = text.find(word); pos != std::string_view::npos; pos = text.find(word, pos + 1)) {
        const bool left = pos == 0 || !ident(text[pos - 1]);
        const bool right = pos + word.size() >= text.size() || !ident(text[pos + word.size()]);
        if (left && right) return true;
    }
    return false;
}

// The process's resident set (VmRSS), KiB; the server runs in this process.
inline long rss_kib() {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
    return -1;
}

// JSON accessors that answer a default instead of throwing, so a malformed event fails a CHECK
// rather than the whole test with an exception.
inline const json::value *field(const json::object &o, std::string_view key) { return o.if_contains(key); }

inline std::string str_of(const json::object &o, std::string_view key, std::string dflt = {}) {
    const json::value *v = o.if_contains(key);
    return v && v->is_string() ? std::string(v->get_string()) : dflt;
}

inline bool has(const json::object &o, std::string_view key) { return o.if_contains(key) != nullptr; }

inline std::optional<double> num_of(const json::value *v) {
    if (!v) return std::nullopt;
    if (v->is_int64()) return static_cast<double>(v->get_int64());
    if (v->is_uint64()) return static_cast<double>(v->get_uint64());
    if (v->is_double()) return v->get_double();
    return std::nullopt;
}

inline std::optional<double> num_of(const json::object &o, std::string_view key) { return num_of(o.if_contains(key)); }

// An integer field; INT64_MIN when absent or not an integer.
inline int64_t int_of(const json::object &o, std::string_view key) {
    const json::value *v = o.if_contains(key);
    if (v && v->is_int64()) return v->get_int64();
    if (v && v->is_uint64()) return static_cast<int64_t>(v->get_uint64());
    return INT64_MIN;
}

inline const json::object *obj_of(const json::object &o, std::string_view key) {
    const json::value *v = o.if_contains(key);
    return v && v->is_object() ? &v->get_object() : nullptr;
}

inline std::optional<json::value> parse_json(std::string_view text) {
    boost::system::error_code ec;
    json::value v = json::parse(text, ec);
    if (ec) return std::nullopt;
    return v;
}

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

// ---------------------------------------------------------------------------------------------
// WebSocket client

struct ws_options {
    std::string target = "/v1/ws";
    std::vector<std::pair<std::string, std::string>> headers; // e.g. {"Origin", "http://x"}
    int rcvbuf = 0;                                              // SO_RCVBUF before connecting; 0: default
    ms timeout = kIoTimeout;
};

class ws_client {
public:
    ws_client() : ws_(std::make_unique<websocket::stream<tcp::socket>>(ioc_)) {}
    ws_client(const ws_client &) = delete;
    ws_client &operator=(const ws_client &) = delete;
    ~ws_client() { drop(); }

    // Connects to 127.0.0.1:port and upgrades. True on 101. Otherwise response() holds what the
    // server answered instead (its status, or 0 when nothing came) and error() what failed.
    bool connect(uint16_t port, const ws_options &opt = {}) {
        tcp::socket &sock = ws_->next_layer();
        boost::system::error_code ec;
        sock.open(tcp::v4(), ec);
        if (ec) return fail(ec);
        if (opt.rcvbuf > 0) sock.set_option(asio::socket_base::receive_buffer_size(opt.rcvbuf), ec);
        const tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), port);
        ec = run_with_deadline(ioc_, sock, opt.timeout, [&](auto h) { sock.async_connect(ep, std::move(h)); });
        if (ec) return fail(ec);
        auto headers = opt.headers;
        ws_->set_option(websocket::stream_base::decorator([headers](websocket::request_type &req) {
            req.set(http::field::user_agent, "actorserve-test");
            for (const auto &[k, v] : headers) req.set(k, v);
        }));
        ws_->read_message_max(64u << 20);
        ws_->auto_fragment(false);             // one message, one frame,
        ws_->write_buffer_bytes(1u << 20);     // masked and written in one go (up to 1 MiB)
        const std::string host = "127.0.0.1:" + std::to_string(port);
        ec = run_with_deadline(ioc_, sock, opt.timeout,
                               [&](auto h) { ws_->async_handshake(response_, host, opt.target, std::move(h)); });
        // declined: response_ holds the server's answer (401, 403, 429, ...)
        got_response_ = !ec || ec == websocket::error::upgrade_declined;
        if (ec) return fail(ec);
        open_ = true;
        return true;
    }

    const websocket::response_type &response() const { return response_; }
    // The status of the answer to the upgrade (101 when accepted); 0 when none came.
    int status() const { return got_response_ ? static_cast<int>(response_.result_int()) : 0; }
    const boost::system::error_code &error() const { return error_; }
    bool is_open() const { return open_; }

    bool send_text(std::string_view s, ms timeout = kIoTimeout) { return write(s, true, timeout); }
    bool send_binary(std::string_view s, ms timeout = kIoTimeout) { return write(s, false, timeout); }
    bool send_json(const json::object &o, ms timeout = kIoTimeout) { return send_text(json::serialize(o), timeout); }

    // One message. nullopt on a timeout, a close (see closed(), close_code()) or an error.
    std::optional<std::string> read(ms timeout = kIoTimeout) {
        if (!open_) return std::nullopt;
        buf_.clear();
        auto ec = run_with_deadline(ioc_, ws_->next_layer(), timeout,
                                    [&](auto h) { ws_->async_read(buf_, std::move(h)); });
        if (ec) {
            // A close frame came (its answer may still have failed, when the server closed the
            // TCP connection at once): the reason holds its status.
            if (ec == websocket::error::closed || ws_->reason().code != websocket::close_code::none) {
                closed_ = true;
                close_code_ = static_cast<int>(ws_->reason().code);
                close_reason_ = std::string(ws_->reason().reason.c_str());
            }
            fail(ec);
            open_ = false;
            return std::nullopt;
        }
        last_was_text_ = ws_->got_text();
        return beast::buffers_to_string(buf_.data());
    }

    // One message, parsed as a JSON object. nullopt as read() does, or when it is not an object
    // (then bad_json() is true and last_raw() holds it).
    std::optional<json::object> read_json(ms timeout = kIoTimeout) {
        bad_json_ = false;
        auto s = read(timeout);
        if (!s) return std::nullopt;
        last_raw_ = *s;
        auto v = parse_json(*s);
        if (!v || !v->is_object()) {
            bad_json_ = true;
            return std::nullopt;
        }
        return std::move(v->get_object());
    }

    // The WebSocket closing handshake, then the TCP connection is closed.
    bool close(websocket::close_code code = websocket::close_code::normal, ms timeout = 10s) {
        if (!open_) return false;
        auto ec = run_with_deadline(ioc_, ws_->next_layer(), timeout,
                                    [&](auto h) { ws_->async_close(code, std::move(h)); });
        open_ = false;
        boost::system::error_code ignored;
        ws_->next_layer().close(ignored);
        return !ec;
    }

    // Abrupt drop: the TCP socket is closed without a close frame; with rst, SO_LINGER 0 makes it
    // a reset instead of a FIN.
    void drop(bool rst = false) {
        boost::system::error_code ignored;
        tcp::socket &sock = ws_->next_layer();
        if (sock.is_open() && rst) sock.set_option(asio::socket_base::linger(true, 0), ignored);
        sock.close(ignored);
        open_ = false;
    }

    // Half-closes nothing, reads nothing: the raw socket, for tests that need it.
    tcp::socket &socket() { return ws_->next_layer(); }

    bool closed() const { return closed_; }                 // the server's close frame came
    int close_code() const { return close_code_; }
    const std::string &close_reason() const { return close_reason_; }
    bool last_was_text() const { return last_was_text_; }
    bool bad_json() const { return bad_json_; }
    const std::string &last_raw() const { return last_raw_; }
    std::string describe_error() const {
        if (!open_ && !closed_ && got_response_ && status() != 101)
            return "upgrade declined with " + std::to_string(status()) + ": " + response_.body();
        if (closed_)
            return "closed by the server with status " + std::to_string(close_code_) + " '" + close_reason_ + "'" +
                   (error_ && error_ != websocket::error::closed ? " (then: " + error_.message() + ")" : "");
        return error_ ? error_.message() : std::string("no error");
    }

private:
    bool fail(boost::system::error_code ec) {
        error_ = ec;
        return false;
    }

    bool write(std::string_view s, bool text, ms timeout) {
        if (!open_) return fail(asio::error::not_connected);
        ws_->text(text);
        auto ec = run_with_deadline(ioc_, ws_->next_layer(), timeout,
                                    [&](auto h) { ws_->async_write(asio::buffer(s.data(), s.size()), std::move(h)); });
        if (ec) {
            open_ = false;
            return fail(ec);
        }
        return true;
    }

    asio::io_context ioc_;
    std::unique_ptr<websocket::stream<tcp::socket>> ws_;
    beast::flat_buffer buf_;
    websocket::response_type response_;
    boost::system::error_code error_;
    bool got_response_ = false;
    bool open_ = false;
    bool closed_ = false;
    int close_code_ = 0;
    std::string close_reason_;
    bool last_was_text_ = false;
    bool bad_json_ = false;
    std::string last_raw_;
};

// ---------------------------------------------------------------------------------------------
// HTTP client

using header_list = std::vector<std::pair<std::string, std::string>>;

struct http_reply {
    int status = 0;                              // 0: no response (see error)
    std::map<std::string, std::string> headers;  // names lower-cased
    std::string body;
    std::string error;

    std::string header(std::string_view name) const {
        auto it = headers.find(lower(name));
        return it == headers.end() ? std::string() : it->second;
    }
    std::optional<json::object> json_body() const {
        auto v = parse_json(body);
        if (!v || !v->is_object()) return std::nullopt;
        return std::move(v->get_object());
    }
};

// One HTTP/1.1 connection (keep-alive: several requests may follow each other).
class http_conn {
public:
    http_conn() : sock_(ioc_) {}
    http_conn(const http_conn &) = delete;
    http_conn &operator=(const http_conn &) = delete;
    ~http_conn() { drop(); }

    bool connect(uint16_t port, ms timeout = kIoTimeout) {
        port_ = port;
        boost::system::error_code ec;
        sock_.open(tcp::v4(), ec);
        if (ec) {
            error_ = ec.message();
            return false;
        }
        const tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), port);
        ec = run_with_deadline(ioc_, sock_, timeout, [&](auto h) { sock_.async_connect(ep, std::move(h)); });
        if (ec) error_ = ec.message();
        return !ec;
    }

    http_reply request(http::verb verb, std::string_view target, std::string body = {}, const header_list &headers = {},
                       ms timeout = kIoTimeout) {
        http::request<http::string_body> req{verb, target, 11};
        req.set(http::field::host, "127.0.0.1:" + std::to_string(port_));
        req.set(http::field::user_agent, "actorserve-test");
        if (verb == http::verb::post) req.set(http::field::content_type, "application/json");
        for (const auto &[k, v] : headers) req.set(k, v);
        req.body() = std::move(body);
        req.prepare_payload();
        return exchange(req, timeout);
    }

    // Any request, as built by the caller.
    http_reply exchange(http::request<http::string_body> &req, ms timeout = kIoTimeout) {
        http_reply r;
        auto ec = run_with_deadline(ioc_, sock_, timeout, [&](auto h) { http::async_write(sock_, req, std::move(h)); });
        if (ec) {
            // The server may have answered and closed before reading the whole body (413, 429):
            // the answer can still be read.
            r.error = "write: " + ec.message();
        }
        return read_reply(std::move(r), timeout);
    }

    // Writes bytes as they are (a hand-made request).
    bool send_raw(std::string_view bytes, ms timeout = kIoTimeout) {
        auto ec = run_with_deadline(ioc_, sock_, timeout,
                                    [&](auto h) { asio::async_write(sock_, asio::buffer(bytes.data(), bytes.size()), std::move(h)); });
        if (ec) error_ = ec.message();
        return !ec;
    }

    // Whatever bytes arrive next (at least one); empty on EOF, an error or the timeout.
    std::string read_some(ms timeout = kIoTimeout) {
        std::array<char, 16384> chunk{};
        size_t got = 0;
        bool done = false;
        boost::system::error_code result;
        sock_.async_read_some(asio::buffer(chunk), [&](boost::system::error_code ec, size_t n) {
            done = true;
            result = ec;
            got = n;
        });
        ioc_.restart();
        ioc_.run_for(timeout);
        if (!done) {
            boost::system::error_code ignored;
            sock_.close(ignored);
            ioc_.restart();
            ioc_.run_for(5s);
            error_ = "timed out";
            return {};
        }
        if (result) error_ = result.message();
        return std::string(chunk.data(), got);
    }

    void drop(bool rst = false) {
        boost::system::error_code ignored;
        if (sock_.is_open() && rst) sock_.set_option(asio::socket_base::linger(true, 0), ignored);
        sock_.close(ignored);
    }

    tcp::socket &socket() { return sock_; }
    const std::string &error() const { return error_; }

private:
    http_reply read_reply(http_reply r, ms timeout) {
        http::response_parser<http::string_body> parser;
        parser.body_limit(256u << 20);
        parser.header_limit(1u << 20);
        auto ec = run_with_deadline(ioc_, sock_, timeout, [&](auto h) { http::async_read(sock_, buf_, parser, std::move(h)); });
        if (ec && !(ec == http::error::end_of_stream && parser.is_done())) {
            r.error += (r.error.empty() ? "" : "; ") + std::string("read: ") + ec.message();
            if (!parser.is_header_done()) return r;
        }
        auto &res = parser.get();
        r.status = static_cast<int>(res.result_int());
        for (const auto &f : res) r.headers[lower(f.name_string())] = std::string(f.value());
        r.body = res.body();
        return r;
    }

    asio::io_context ioc_;
    tcp::socket sock_;
    beast::flat_buffer buf_;
    uint16_t port_ = 0;
    std::string error_;
};

inline http_reply http_request(uint16_t port, http::verb verb, std::string_view target, std::string body = {},
                               const header_list &headers = {}, ms timeout = kIoTimeout) {
    http_conn c;
    if (!c.connect(port, timeout)) {
        http_reply r;
        r.error = "connect: " + c.error();
        return r;
    }
    return c.request(verb, target, std::move(body), headers, timeout);
}

inline http_reply http_get(uint16_t port, std::string_view target, const header_list &headers = {}, ms timeout = kIoTimeout) {
    return http_request(port, http::verb::get, target, {}, headers, timeout);
}

inline http_reply http_post(uint16_t port, std::string_view target, std::string body, const header_list &headers = {},
                            ms timeout = kIoTimeout) {
    return http_request(port, http::verb::post, target, std::move(body), headers, timeout);
}

// True when a TCP connection to 127.0.0.1:port is accepted.
inline bool can_connect(uint16_t port, ms timeout = 5s) {
    http_conn c;
    return c.connect(port, timeout);
}

// ---------------------------------------------------------------------------------------------
// The server under test

// Aborts the process with a message when `disarm` does not come in time: a hung server or a
// hung teardown then fails the run instead of stalling it.
class watchdog {
public:
    void arm(std::chrono::seconds limit, std::string what) {
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
    void disarm() {
        if (!thread_.joinable()) return;
        {
            std::lock_guard lk(m_);
            stop_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }
    ~watchdog() { disarm(); }

private:
    std::mutex m_;
    std::condition_variable cv_;
    bool stop_ = false;
    std::thread thread_;
};

// server::start leaves the log level to its host (the command-line tool sets it from
// server.log_level); the tests set it the same way. ACTORSERVE_TEST_LOG=info shows the server's log.
inline void set_log_level(const std::string &level) {
    const char *env = std::getenv("ACTORSERVE_TEST_LOG");
    spdlog::set_level(spdlog::level::from_str(env ? env : level));
}

// A caf::actor_system tuned for the runtime, the server (started on 127.0.0.1, a free port) and
// the runtime on the real model, attached. The destructor shuts the server down, then the
// runtime, then the actor system.
class server_fixture {
public:
    // Small, quick settings: 2 engine threads, 1024 positions of context, a 64 MiB KV pool.
    static actorserve::server_config config() {
        actorserve::server_config c;
        c.host = "127.0.0.1";
        c.port = 0;
        c.io_threads = 2;
        c.log_level = "warn";
        c.runtime.model_path = ACTORSERVE_MODEL_PATH;
        c.runtime.n_threads = 2;
        c.runtime.n_ctx = 1024;
        c.runtime.max_seqs = 16;
        c.runtime.step_tokens = 256;
        c.runtime.kv_capacity_mib = 64;
        c.runtime.cache.enabled = false; // the cache tests turn it on
        c.runtime.rag.enabled = false;   // test_rag turns it on
        return c;
    }

    explicit server_fixture(actorserve::server_config cfg = config()) : cfg_(std::move(cfg)) {
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

    ~server_fixture() {
        guard_.arm(std::chrono::seconds(120), "the server's and the runtime's teardown");
        if (srv_ && !shut_down_) srv_->shutdown(ms(0));
        srv_.reset();
        rt_.reset();
        sys_.reset();
        guard_.disarm();
    }

    server_fixture(const server_fixture &) = delete;
    server_fixture &operator=(const server_fixture &) = delete;

    uint16_t port() const { return srv_->port(); }
    const actorserve::server_config &cfg() const { return cfg_; }
    actorserve::server &srv() { return *srv_; }
    actorserve::runtime &rt() { return *rt_; }
    caf::actor_system &sys() { return *sys_; }

    void shutdown(ms grace) {
        shut_down_ = true;
        srv_->shutdown(grace);
    }

    // The runtime's own measurements, asked in-process.
    actorserve::metrics_snapshot metrics() {
        actorserve::metrics_snapshot snap;
        caf::scoped_actor self{*sys_};
        self->request(rt_->metrics(), std::chrono::seconds(10), actorserve::get_atom::value)
            .receive([&](actorserve::metrics_snapshot &s) { snap = s; },
                     [&](caf::error &e) { FAIL("metrics: " << sys_->render(e)); });
        return snap;
    }

    // Polls the runtime's metrics until pred holds; false after `timeout`.
    template <class Pred>
    bool wait_metrics(Pred pred, ms timeout) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (std::chrono::steady_clock::now() < deadline) {
            if (pred(metrics())) return true;
            std::this_thread::sleep_for(20ms);
        }
        return pred(metrics());
    }

private:
    watchdog guard_; // first: it outlives the members it watches being torn down
    actorserve::server_config cfg_;
    caf::actor_system_config caf_cfg_;
    std::unique_ptr<caf::actor_system> sys_;
    std::unique_ptr<actorserve::runtime> rt_; // before srv_: the server is destroyed first
    std::unique_ptr<actorserve::server> srv_;
    bool shut_down_ = false;
};

// A temporary file, removed when it goes out of scope.
class temp_file {
public:
    explicit temp_file(const std::string &content) {
        char name[] = "/tmp/actorserve-test-XXXXXX";
        const int fd = ::mkstemp(name);
        REQUIRE(fd >= 0);
        ::close(fd);
        path_ = name;
        std::ofstream(path_) << content;
    }
    ~temp_file() { std::remove(path_.c_str()); }
    temp_file(const temp_file &) = delete;
    temp_file &operator=(const temp_file &) = delete;
    const std::string &path() const { return path_; }

private:
    std::string path_;
};

} // namespace testnet
