#include "bench/loadgen/openai_request.h"

#include <boost/json.hpp>

namespace loadgen {

namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;

namespace {
constexpr size_t kMaxErrorBody = 64 * 1024;

int64_t int_field(const json::object &o, const char *k) {
    const auto *x = o.if_contains(k);
    return x && x->is_number() ? x->to_number<int64_t>() : -1;
}

// "error:<type>" from an OpenAI error object {"error": {"type": ..., "code": ...}}.
std::string error_outcome(const json::object &err) {
    for (const char *k : {"type", "code"})
        if (const auto *t = err.if_contains(k); t && t->is_string() && !t->get_string().empty())
            return "error:" + std::string(t->get_string());
    return "error:server";
}
} // namespace

openai_request::openai_request(boost::asio::io_context &ioc, const target &tgt,
                               const tcp::resolver::results_type &endpoints, const workload_item &item,
                               const request_params &params, request_record rec, clock::time_point run_start,
                               std::chrono::milliseconds timeout, live_counters *live, done_fn done)
    : request_op(ioc, std::move(rec), run_start, timeout, live, std::move(done)), stream_(ioc), endpoints_(endpoints) {
    json::object body{{"messages", item.messages},
                      {"max_tokens", params.max_tokens},
                      {"temperature", params.temperature},
                      {"stream", true},
                      {"stream_options", {{"include_usage", true}}}};
    if (!tgt.model.empty()) body["model"] = tgt.model;
    req_ = {http::verb::post, tgt.path, 11};
    req_.set(http::field::host, tgt.host + ":" + tgt.port);
    req_.set(http::field::user_agent, "actorserve-bench");
    req_.set(http::field::content_type, "application/json");
    req_.set(http::field::accept, "text/event-stream");
    if (!tgt.api_key.empty()) req_.set(http::field::authorization, "Bearer " + tgt.api_key);
    req_.body() = json::serialize(body);
    req_.prepare_payload();
}

void openai_request::start() {
    arm_deadline();
    stream_.async_connect(endpoints_, [s = self()](boost::system::error_code ec, const tcp::endpoint &) { s->on_connect(ec); });
}

void openai_request::on_connect(boost::system::error_code ec) {
    if (finished()) return;
    if (ec) return finish("error:connect");
    on_connected();
    http::async_write(stream_, req_, [s = self()](boost::system::error_code e, size_t n) { s->on_write(e, n); });
}

void openai_request::on_write(boost::system::error_code ec, size_t) {
    if (finished()) return;
    if (ec) return finish("error:write");
    parser_.emplace();
    parser_->body_limit(boost::none); // a stream is as long as the answer; the deadline bounds it
    http::async_read_header(stream_, buf_, *parser_, [s = self()](boost::system::error_code e, size_t n) { s->on_header(e, n); });
}

void openai_request::on_header(boost::system::error_code ec, size_t) {
    if (finished()) return;
    if (ec) return finish("error:read");
    status_ = parser_->get().result_int();
    if (parser_->is_done()) return end_of_body();
    do_read_body();
}

void openai_request::do_read_body() {
    auto &body = parser_->get().body();
    body.data = chunk_.data();
    body.size = chunk_.size();
    // read_some: hands on whatever arrived (async_read would wait for a full buffer or the end)
    http::async_read_some(stream_, buf_, *parser_, [s = self()](boost::system::error_code e, size_t n) { s->on_body(e, n); });
}

void openai_request::on_body(boost::system::error_code ec, size_t) {
    if (finished()) return;
    if (ec == http::error::need_buffer) ec = {};
    const size_t got = chunk_.size() - parser_->get().body().size;
    const std::string_view bytes(chunk_.data(), got);
    if (status_ == 200) {
        sse_.feed(bytes, [this](std::string_view payload) {
            if (!finished()) on_data(payload);
        });
    } else if (error_body_.size() < kMaxErrorBody) {
        error_body_.append(bytes.substr(0, kMaxErrorBody - error_body_.size()));
    }
    if (finished()) return;
    if (ec) {
        if (ec == http::error::end_of_stream || ec == boost::asio::error::eof) return end_of_body();
        return finish("error:read");
    }
    if (parser_->is_done()) return end_of_body();
    do_read_body();
}

void openai_request::on_data(std::string_view payload) {
    if (payload == "[DONE]") {
        done_seen_ = true;
        // note: a choice that completed has a finish_reason; a stream ended without one was cut
        // short by the server (llama-cpp-python's server ends a running stream this way when
        // another request interrupts it).
        return finish(rec_.finish_reason.empty() ? "error:incomplete" : kOk);
    }
    boost::system::error_code ec;
    json::value v = json::parse(payload, ec);
    if (ec || !v.is_object()) return finish("error:protocol");
    const auto &chunk = v.get_object();
    if (const auto *err = chunk.if_contains("error"); err && err->is_object()) {
        const std::string out = error_outcome(err->get_object());
        return finish(out == "error:overloaded_error" || out == "error:overloaded" ? std::string(kOverloaded) : out);
    }
    if (const auto *ch = chunk.if_contains("choices"); ch && ch->is_array() && !ch->get_array().empty()) {
        const auto &c0 = ch->get_array()[0];
        if (c0.is_object()) {
            const auto &choice = c0.get_object();
            if (const auto *d = choice.if_contains("delta"); d && d->is_object()) {
                const auto *content = d->get_object().if_contains("content");
                if (content && content->is_string() && !content->get_string().empty()) on_token();
            }
            if (const auto *fr = choice.if_contains("finish_reason"); fr && fr->is_string())
                rec_.finish_reason = std::string(fr->get_string());
        }
    }
    if (const auto *u = chunk.if_contains("usage"); u && u->is_object()) {
        const auto &usage = u->get_object();
        rec_.prompt_tokens = int_field(usage, "prompt_tokens");
        rec_.output_tokens = int_field(usage, "completion_tokens");
        if (const auto *det = usage.if_contains("prompt_tokens_details"); det && det->is_object())
            rec_.cached_tokens = int_field(det->get_object(), "cached_tokens");
    }
    if (const auto *c = chunk.if_contains("cached");
        c && ((c->is_bool() && c->get_bool()) || (c->is_string() && !c->get_string().empty())))
        rec_.cached = true;
}

void openai_request::end_of_body() {
    if (finished()) return;
    if (status_ == 503 || status_ == 429) return finish(kOverloaded);
    if (status_ != 200) {
        boost::system::error_code ec;
        json::value v = json::parse(error_body_, ec);
        if (!ec && v.is_object())
            if (const auto *err = v.get_object().if_contains("error"); err && err->is_object())
                return finish(error_outcome(err->get_object()));
        return finish("error:http_" + std::to_string(status_));
    }
    // A 200 that ended without [DONE]: the stream was cut short.
    finish(done_seen_ ? kOk : "error:incomplete");
}

void openai_request::close_transport() {
    boost::system::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
}

} // namespace loadgen
