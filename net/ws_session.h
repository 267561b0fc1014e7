// One WebSocket connection speaking the chat protocol (docs/protocol.md). It follows the
// streams of the requests it started or resumed and sends their events in order through a
// bounded write queue; when the client stops reading and the queue overflows, the connection is
// closed (1008) and its requests go on, resumable from another connection.
#pragma once

#include <boost/asio.hpp>
#include <boost/beast.hpp>

#include <simdjson.h>

#include <deque>
#include <map>
#include <memory>

#include "net/server_impl.h"
#include "net/write_queue.h"

namespace actorserve {

namespace beast = boost::beast;

class ws_session : public std::enable_shared_from_this<ws_session>, public connection {
public:
    // principal: who owns what this connection creates (net/chat_service.h, caller).
    ws_session(asio::ip::tcp::socket &&socket, std::shared_ptr<server_impl> srv, std::shared_ptr<connection_slot> slot,
               std::string principal);
    ~ws_session() override;

    void run(beast::http::request<beast::http::string_body> req);

    void close_for_shutdown() override;

private:
    struct follow {
        std::shared_ptr<request_stream> stream;
        size_t next = 0;   // index of the next event to send
    };

    void do_read();
    void on_read(beast::error_code ec, size_t n);
    void handle(std::string_view text);
    void start_following(std::shared_ptr<request_stream> s, size_t from);
    void pump(const std::string &request_id);
    void send(std::string msg);
    void do_write();
    void on_write(beast::error_code ec, size_t n);
    void close(beast::websocket::close_code code, std::string reason);
    void release(); // the connection is over: stop following, be forgotten

    beast::websocket::stream<beast::tcp_stream> ws_;
    beast::flat_buffer buffer_;
    std::shared_ptr<server_impl> srv_;
    std::shared_ptr<connection_slot> slot_;
    const std::string principal_;
    std::shared_ptr<stream_waker> waker_; // what the streams it follows hold, instead of this
    simdjson::dom::parser parser_;
    std::map<std::string, follow> follows_;
    write_queue outq_;             // frames to send (net/write_queue.h)
    bool closing_ = false;         // a close frame is sent or about to be; nothing else is
    bool close_in_flight_ = false; // the close frame is being written
    bool close_when_flushed_ = false;
    bool released_ = false;
    beast::websocket::close_reason pending_close_;
};

} // namespace actorserve
