// One chat request to an OpenAI-compatible server: POST <path> with stream: true and
// stream_options.include_usage, on a fresh connection, reading server-sent events until
// `data: [DONE]`. Every non-empty choices[0].delta.content is a token event; usage comes from the
// usage chunk.
#pragma once

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <array>
#include <optional>

#include "bench/loadgen/request_op.h"

namespace loadgen {

// Parses server-sent events as bytes arrive: complete `data:` lines are handed on, the rest kept.
class sse_lines {
public:
    // Appends bytes; calls on_data(payload) for every complete "data:" line (the leading space
    // dropped). Other fields (event:, id:, comments) are skipped.
    template <class F>
    void feed(std::string_view bytes, F &&on_data) {
        pending_.append(bytes.data(), bytes.size());
        size_t begin = 0;
        for (size_t nl = pending_.find('\n'); nl != std::string::npos; nl = pending_.find('\n', begin)) {
            std::string_view line(pending_.data() + begin, nl - begin);
            begin = nl + 1;
            if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
            if (line.rfind("data:", 0) != 0) continue;
            line.remove_prefix(5);
            if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
            on_data(line);
        }
        pending_.erase(0, begin);
    }

private:
    std::string pending_;
};

class openai_request : public request_op {
public:
    openai_request(boost::asio::io_context &ioc, const target &tgt, const tcp::resolver::results_type &endpoints,
                   const workload_item &item, const request_params &params, request_record rec,
                   clock::time_point run_start, std::chrono::milliseconds timeout, live_counters *live, done_fn done);
    void start() override;

private:
    void on_connect(boost::system::error_code ec);
    void on_write(boost::system::error_code ec, size_t);
    void on_header(boost::system::error_code ec, size_t);
    void do_read_body();
    void on_body(boost::system::error_code ec, size_t);
    void on_data(std::string_view payload);
    void end_of_body();
    void close_transport() override;
    std::shared_ptr<openai_request> self() { return std::static_pointer_cast<openai_request>(shared_from_this()); }

    boost::beast::tcp_stream stream_;
    boost::beast::flat_buffer buf_;
    boost::beast::http::request<boost::beast::http::string_body> req_;
    std::optional<boost::beast::http::response_parser<boost::beast::http::buffer_body>> parser_;
    std::array<char, 8192> chunk_{};
    tcp::resolver::results_type endpoints_;
    unsigned status_ = 0;
    std::string error_body_; // the body of a non-200 answer, bounded
    sse_lines sse_;
    bool done_seen_ = false;
};

} // namespace loadgen
