// One HTTP/1.1 connection: routes each request (health, metrics, models, the OpenAI API, the
// retrieval API, the web page), hands WebSocket upgrades on /v1/ws to a ws_session, and streams
// OpenAI answers as server-sent events. While a request is answered it watches the socket, so
// that a client that goes away cancels its request, unless it is a stream: that one keeps
// running for a resume (GET /v1/streams/{id}, Last-Event-ID) for server.sse_resume_grace_s.
//
// Its member functions live in files by concern: http_session.cpp (the connection, reading,
// routing, answers), http_openai_stream.cpp (an OpenAI completion, whole or as server-sent
// events, and their resume), http_rag_routes.cpp (/v1/rag/*), http_embed_routes.cpp
// (/v1/embeddings), http_responses_routes.cpp (/v1/responses), http_token_routes.cpp (/tokenize, /detokenize), http_ask_actor.h (asking an
// actor without blocking, for /metrics, embeddings and the retrieval routes).
#pragma once

#include <boost/asio.hpp>
#include <boost/beast.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>

#include "net/openai.h"
#include "net/responses_api.h"
#include "net/server_impl.h"
#include "net/write_queue.h"

namespace actorserve {

namespace beast = boost::beast;
namespace http = beast::http;

class http_session : public std::enable_shared_from_this<http_session>, public connection {
public:
    // refuse: the connection is over server.max_connections; its request is answered 429.
    http_session(asio::ip::tcp::socket &&socket, std::shared_ptr<server_impl> srv, bool refuse);
    ~http_session() override;

    void run();
    void close_for_shutdown() override;

private:
    using request = http::request<http::string_body>;

    void do_read();
    void read_header();
    void on_header(beast::error_code ec);
    void on_read(beast::error_code ec, size_t n);
    void route(request &&req);
    void preflight(const request &req);
    void respond(http::status status, std::string body, std::string_view content_type = "application/json",
                 std::optional<int> retry_after_s = std::nullopt);
    void respond_error(errc code, std::string_view message, std::string_view param = {}, int retry_after_ms = 0);
    void on_written(bool close, beast::error_code ec);

    void start_completion(bool chat, const request &req);
    void route_streams(const request &req); // GET or DELETE /v1/streams/{id} (http_openai_stream.cpp)
    void route_responses(const request &req); // /v1/responses[/{id}[/cancel]] (http_responses_routes.cpp)
    void start_response(const request &req);
    void pump_response(const std::vector<stream_event> &events, size_t first);
    void follow_stream(size_t from, int sub);

    // The retrieval API (net/rag_api.h) and /metrics. An actor's answer comes back through
    // ask_actor, never by blocking this connection's I/O thread. on_error (null: the retrieval
    // API's answers, a 503 or a 500 naming the knowledge base) hears why no reply came.
    void route_rag(const request &req);
    void route_tokenize(const request &req);   // /tokenize and /detokenize (net/http_token_routes.cpp)
    void route_embeddings(const request &req); // /v1/embeddings (net/http_embed_routes.cpp)
    void respond_metrics(const metrics_snapshot &snap);
    // Handle: a typed actor handle (rag_actor, metrics_source), so the compiler checks that the
    // target accepts msg and answers Reply.
    template <class Reply, class Handle, class... Ts>
    void ask_actor(Handle target, std::chrono::seconds timeout, std::function<void(http_session &, Reply &)> on_reply,
                   std::function<void(http_session &, const std::string &why)> on_error, Ts &&...msg);
    void pump();
    void write_raw(std::string bytes);
    void on_raw_written(beast::error_code ec);
    void finish_stream();
    void start_sse();
    void end_sse();
    void end_whole();
    void arm_ping();
    void client_gone();
    void watch_peer();

    beast::tcp_stream stream_;
    beast::flat_buffer buffer_;
    std::optional<http::request_parser<http::string_body>> parser_;
    std::shared_ptr<server_impl> srv_;
    std::shared_ptr<connection_slot> slot_;
    std::shared_ptr<stream_waker> waker_; // what the stream it follows holds, instead of this
    bool refuse_;
    bool keep_alive_ = true;
    bool shutting_down_ = false;
    bool busy_ = false; // a request is being answered
    size_t body_limit_ = 0; // of the request being read
    std::string method_, path_;
    std::string log_path_; // path_ as logged
    std::string cors_origin_; // an allowed cross origin of the request being answered
    std::string principal_;   // with API keys: "key:<n>" of the key the request presented
    std::chrono::steady_clock::time_point t0_;
    simdjson::dom::parser parser_json_;

    // The OpenAI answer in progress.
    std::shared_ptr<request_stream> rs_;
    openai_request oreq_;
    std::string resp_id_;
    size_t next_ = 0;
    response_view rview_;          // a Responses API answer: its object as the events so far leave it
    int skip_sub_ = 0;             // resume: SSE events of stream event next_ already delivered
    std::string resume_url_;       // sent as X-Resume-URL with the stream's headers
    bool sse_started_ = false, watching_ = false, done_ = false;
    std::vector<bool> role_sent_;          // per choice: its first chunk (with the role) is out
    std::vector<stream_event> choice_ends_; // stream: false with n > 1: each choice's end
    bool wrote_since_ping_ = false;
    asio::steady_timer ping_timer_; // while a stream waits for events: server.sse_ping_s
    write_queue outq_;             // the event stream's bytes to send (net/write_queue.h)
};

} // namespace actorserve
