// One chat request over actorserve's WebSocket protocol (docs/protocol.md): a fresh connection,
// one `chat` message with no session_id (so a fresh session), then events until `done` or
// `error`. Token events are counted; usage comes from `done`. A request abandoned before its end
// (timeout, ctrl-C) is cancelled, since the server keeps generating for a dropped connection.
#pragma once

#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include "bench/loadgen/request_op.h"

namespace loadgen {

class ws_request : public request_op {
public:
    ws_request(boost::asio::io_context &ioc, const target &tgt, const tcp::resolver::results_type &endpoints,
               const workload_item &item, const request_params &params, request_record rec,
               clock::time_point run_start, std::chrono::milliseconds timeout, live_counters *live, done_fn done);
    void start() override;

private:
    void on_connect(boost::system::error_code ec);
    void on_handshake(boost::system::error_code ec);
    void on_write(boost::system::error_code ec, size_t);
    void do_read();
    void on_read(boost::system::error_code ec, size_t);
    void on_event(const std::string &text);
    void fail(boost::system::error_code ec, const char *what);
    void close_transport() override;
    std::shared_ptr<ws_request> self() { return std::static_pointer_cast<ws_request>(shared_from_this()); }

    boost::beast::websocket::stream<boost::beast::tcp_stream> ws_;
    boost::beast::websocket::response_type upgrade_response_;
    boost::beast::flat_buffer buf_;
    tcp::resolver::results_type endpoints_;
    std::string host_, path_, api_key_;
    std::string message_; // the chat message, serialized
    std::string request_id_; // from `start`
    std::string cancel_;     // the cancel message, kept alive while it is written
    std::shared_ptr<boost::asio::steady_timer> cancel_timer_;
};

} // namespace loadgen
