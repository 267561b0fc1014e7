// What the server's connections share: settings, the chat service, the API keys, counters, and
// the registry of open connections that shutdown closes. Internal to net/.
#pragma once

#include <boost/asio.hpp>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "net/chat_service.h"
#include "net/config.h"
#include "net/key_limits.h"
#include "net/stream_waker.h"

namespace actorserve {

namespace asio = boost::asio;

// An open connection, as shutdown sees it.
class connection {
public:
    virtual ~connection() = default;
    // Finish what is being sent, then close (WebSocket: status 1001). Any thread.
    virtual void close_for_shutdown() = 0;
};

struct server_impl {
    server_impl(caf::actor_system &system, const server_config &c, asio::io_context &io)
        : cfg(c), sys(system), service(system, c), ioc(io) {}

    const server_config cfg;
    caf::actor_system &sys;
    chat_service service;
    std::string model_name;
    int64_t created = 0;                 // unix seconds, for OpenAI's "created" fields
    std::vector<std::string> api_keys;   // empty: no authentication
    std::vector<key_settings> key_cfg;   // api_keys' settings, one each
    std::string web_root;                // canonical path of the web page's directory

    // Owned by the server object, not here: pending handlers hold this struct, and destroying
    // the io_context is what lets them go.
    asio::io_context &ioc;
    std::unique_ptr<asio::ip::tcp::acceptor> acceptor;
    std::unique_ptr<asio::steady_timer> sweeper;
    std::vector<std::thread> threads;
    std::atomic<bool> stopping{false};
    // Closed before the io_context is destroyed: see net/stream_waker.h.
    std::shared_ptr<io_gate> gate = std::make_shared<io_gate>();

    std::atomic<int> connections{0}, websockets{0};
    std::atomic<uint64_t> refused{0};

    std::mutex conn_mu;
    std::map<const connection *, std::weak_ptr<connection>> open;

    void add(const std::shared_ptr<connection> &c) {
        std::lock_guard<std::mutex> lk(conn_mu);
        open[c.get()] = c;
    }
    void remove(const connection *c) {
        std::lock_guard<std::mutex> lk(conn_mu);
        open.erase(c);
    }
};

// Holds one place among server.max_connections for as long as a connection (HTTP, then maybe
// WebSocket) lives.
class connection_slot {
public:
    explicit connection_slot(server_impl &s) : s_(s) { ++s_.connections; }
    ~connection_slot() { --s_.connections; }
    connection_slot(const connection_slot &) = delete;
    connection_slot &operator=(const connection_slot &) = delete;

private:
    server_impl &s_;
};

} // namespace actorserve
