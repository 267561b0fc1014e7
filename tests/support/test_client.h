// Test helpers for the network tests: small synchronous Beast clients (WebSocket and HTTP/1.1)
// in which every operation has a deadline, and `server_fixture`, which runs the real server and
// runtime in-process on a loopback port. Declared here, compiled once in test_client.cpp (the
// Beast clients are the heaviest templates of the test suite; tests/net/test_*.cpp and
// tests/bench/test_real_server.cpp link the one copy).
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

#include <boost/asio/error.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <boost/json.hpp>
#include <boost/system/error_code.hpp>

#include <algorithm>
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
#include "tests/support/paths.h"

namespace testnet {

namespace http = boost::beast::http;
namespace websocket = boost::beast::websocket;
namespace asio = boost::asio;
namespace json = boost::json;
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

std::optional<json::value> parse_json(std::string_view text);

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
    ws_client();
    ws_client(const ws_client &) = delete;
    ws_client &operator=(const ws_client &) = delete;
    ~ws_client();

    // Connects to 127.0.0.1:port and upgrades. True on 101. Otherwise status() holds what the
    // server answered instead (0 when nothing came) and error() what failed.
    bool connect(uint16_t port, const ws_options &opt = {});

    // The status of the answer to the upgrade (101 when accepted); 0 when none came.
    int status() const;
    const boost::system::error_code &error() const;
    bool is_open() const;

    bool send_text(std::string_view s, ms timeout = kIoTimeout) { return write(s, true, timeout); }
    bool send_binary(std::string_view s, ms timeout = kIoTimeout) { return write(s, false, timeout); }
    bool send_json(const json::object &o, ms timeout = kIoTimeout) { return send_text(json::serialize(o), timeout); }
    // One text message as many frames of `piece` bytes each (a continuation frame after the
    // first, FIN on the last), every frame written on its own.
    bool send_fragments(std::string_view s, size_t piece, ms timeout = kIoTimeout);

    // One message. nullopt on a timeout, a close (see closed(), close_code()) or an error.
    std::optional<std::string> read(ms timeout = kIoTimeout);

    // One message, parsed as a JSON object. nullopt as read() does, or when it is not an object
    // (then bad_json() is true and last_raw() holds it).
    std::optional<json::object> read_json(ms timeout = kIoTimeout);

    // The WebSocket closing handshake, then the TCP connection is closed.
    bool close(websocket::close_code code = websocket::close_code::normal, ms timeout = std::chrono::seconds(10));

    // Abrupt drop: the TCP socket is closed without a close frame; with rst, SO_LINGER 0 makes it
    // a reset instead of a FIN.
    void drop(bool rst = false);

    bool closed() const;                 // the server's close frame came
    int close_code() const;
    const std::string &close_reason() const;
    bool last_was_text() const;
    bool bad_json() const;
    const std::string &last_raw() const;
    std::string describe_error() const;

private:
    bool write(std::string_view s, bool text, ms timeout);

    struct impl;
    std::unique_ptr<impl> p_;
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
    http_conn();
    http_conn(const http_conn &) = delete;
    http_conn &operator=(const http_conn &) = delete;
    ~http_conn();

    bool connect(uint16_t port, ms timeout = kIoTimeout);

    // Sets Host and User-Agent, and Content-Type: application/json on a POST; `headers` may
    // override them.
    http_reply request(http::verb verb, std::string_view target, std::string body = {}, const header_list &headers = {},
                       ms timeout = kIoTimeout);

    // Writes bytes as they are (a hand-made request).
    bool send_raw(std::string_view bytes, ms timeout = kIoTimeout);

    // Whatever bytes arrive next (at least one); empty on EOF, an error or the timeout.
    std::string read_some(ms timeout = kIoTimeout);

    void drop(bool rst = false);

    const std::string &error() const;

private:
    struct impl;
    std::unique_ptr<impl> p_;
};

http_reply http_request(uint16_t port, http::verb verb, std::string_view target, std::string body = {},
                        const header_list &headers = {}, ms timeout = kIoTimeout);

inline http_reply http_get(uint16_t port, std::string_view target, const header_list &headers = {}, ms timeout = kIoTimeout) {
    return http_request(port, http::verb::get, target, {}, headers, timeout);
}

inline http_reply http_post(uint16_t port, std::string_view target, std::string body, const header_list &headers = {},
                            ms timeout = kIoTimeout) {
    return http_request(port, http::verb::post, target, std::move(body), headers, timeout);
}

// The bytes of one whole HTTP/1.1 response (as read_some gathered them), read by Beast's parser:
// a framing error (a chunk size that is wrong, say) is in `error`.
http_reply parse_http_response(std::string_view raw);

// True when a TCP connection to 127.0.0.1:port is accepted.
bool can_connect(uint16_t port, ms timeout = std::chrono::seconds(5));

// ---------------------------------------------------------------------------------------------
// The server under test

// Aborts the process with a message when `disarm` does not come in time: a hung server or a
// hung teardown then fails the run instead of stalling it.
class watchdog {
public:
    void arm(std::chrono::seconds limit, std::string what);
    void disarm();
    ~watchdog() { disarm(); }

private:
    std::mutex m_;
    std::condition_variable cv_;
    bool stop_ = false;
    std::thread thread_;
};

// server::start leaves the log level to its host (the command-line tool sets it from
// server.log_level); the tests set it the same way. ACTORSERVE_TEST_LOG=info shows the server's log.
void set_log_level(const std::string &level);

// A caf::actor_system tuned for the runtime, the server (started on 127.0.0.1, a free port) and
// the runtime on the real model, attached. The destructor shuts the server down, then the
// runtime, then the actor system.
class server_fixture {
public:
    // Small, quick settings: 2 engine threads, 1024 positions of context, a 64 MiB KV pool.
    static actorserve::server_config config();

    explicit server_fixture(actorserve::server_config cfg = config());
    ~server_fixture();

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
    actorserve::metrics_snapshot metrics();

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
    explicit temp_file(const std::string &content);
    ~temp_file() { std::remove(path_.c_str()); }
    temp_file(const temp_file &) = delete;
    temp_file &operator=(const temp_file &) = delete;
    const std::string &path() const { return path_; }

private:
    std::string path_;
};

} // namespace testnet
