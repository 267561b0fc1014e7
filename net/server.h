// The network server: one Boost.Beast listener on one port for HTTP/1.1 and WebSocket, a few I/O
// threads, and the chat service that ties connections to the actor runtime. docs/protocol.md
// describes what it speaks.
//
//   server_config cfg;  cfg.port = 0;
//   auto srv = server::start(sys, cfg, err);     // listening; /health says 503 (loading)
//   auto rt = runtime::start(sys, cfg.runtime, err);
//   srv->attach(*rt);                             // /health 200; chat requests are served
//   ...
//   srv->shutdown(std::chrono::seconds(30));      // stop accepting, drain, close, join
#pragma once

#include <boost/asio/io_context.hpp>
#include <caf/all.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "net/config.h"

namespace actorserve {

class runtime;
struct server_impl;

class server {
public:
    // Binds and starts the I/O threads. nullptr and err on a bad address or a port in use.
    static std::unique_ptr<server> start(caf::actor_system &sys, const server_config &cfg, std::string &err);
    ~server(); // shutdown(0) if not done

    // The runtime is ready: serve chat requests with it. It must outlive the server.
    void attach(runtime &rt);
    uint16_t port() const;

    // Stops accepting; requests already accepted run to their end for up to `grace`, then are
    // cancelled; connections are closed (WebSocket: status 1001); the I/O threads are joined.
    void shutdown(std::chrono::milliseconds grace);

    server(const server &) = delete;
    server &operator=(const server &) = delete;

private:
    server() = default;
    std::unique_ptr<boost::asio::io_context> ioc_;
    std::shared_ptr<server_impl> impl_;
};

} // namespace actorserve
