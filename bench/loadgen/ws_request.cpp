#include "bench/loadgen/ws_request.h"

#include <boost/beast/http.hpp>
#include <boost/json.hpp>

namespace loadgen {

namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace http = beast::http;
namespace json = boost::json;

ws_request::ws_request(boost::asio::io_context &ioc, const target &tgt, const tcp::resolver::results_type &endpoints,
                       const workload_item &item, const request_params &params, request_record rec,
                       clock::time_point run_start, std::chrono::milliseconds timeout, live_counters *live,
                       done_fn done)
    : request_op(ioc, std::move(rec), run_start, timeout, live, std::move(done)), ws_(ioc), endpoints_(endpoints),
      host_(tgt.host + ":" + tgt.port), path_(tgt.path), api_key_(tgt.api_key) {
    json::object msg{{"type", "chat"}, {"max_tokens", params.max_tokens}, {"temperature", params.temperature},
                     {"stream", true}};
    // One user message goes as `message`; a conversation as `messages`.
    const auto &last = item.messages.back().as_object();
    if (item.messages.size() == 1 && last.contains("content") && last.at("content").is_string())
        msg["message"] = last.at("content");
    else
        msg["messages"] = item.messages;
    message_ = json::serialize(msg);
}

void ws_request::start() {
    arm_deadline();
    beast::get_lowest_layer(ws_).async_connect(
        endpoints_, [s = self()](boost::system::error_code ec, const tcp::endpoint &) { s->on_connect(ec); });
}

void ws_request::on_connect(boost::system::error_code ec) {
    if (finished()) return;
    if (ec) return fail(ec, "connect");
    auto timeouts = websocket::stream_base::timeout::suggested(beast::role_type::client);
    timeouts.handshake_timeout = std::chrono::seconds(10); // covers the upgrade and the close handshake
    ws_.set_option(timeouts);
    ws_.set_option(websocket::stream_base::decorator([key = api_key_](websocket::request_type &req) {
        req.set(http::field::user_agent, "actorserve-bench");
        if (!key.empty()) req.set(http::field::authorization, "Bearer " + key);
    }));
    ws_.async_handshake(upgrade_response_, host_, path_, [s = self()](boost::system::error_code e) { s->on_handshake(e); });
}

void ws_request::on_handshake(boost::system::error_code ec) {
    if (finished()) return;
    if (ec) {
        const unsigned status = upgrade_response_.result_int();
        if (status == 429 || status == 503) return finish(kOverloaded);
        if (status != 0 && status != 101) return finish("error:http_" + std::to_string(status));
        return fail(ec, "connect");
    }
    on_connected();
    ws_.text(true);
    ws_.async_write(boost::asio::buffer(message_),
                    [s = self()](boost::system::error_code e, size_t n) { s->on_write(e, n); });
}

void ws_request::on_write(boost::system::error_code ec, size_t) {
    if (finished()) return;
    if (ec) return fail(ec, "write");
    do_read();
}

void ws_request::do_read() {
    ws_.async_read(buf_, [s = self()](boost::system::error_code e, size_t n) { s->on_read(e, n); });
}

void ws_request::on_read(boost::system::error_code ec, size_t) {
    if (finished()) return;
    if (ec) return fail(ec, "read");
    std::string text = beast::buffers_to_string(buf_.data());
    buf_.consume(buf_.size());
    on_event(text);
    if (!finished()) do_read();
}

void ws_request::on_event(const std::string &text) {
    boost::system::error_code ec;
    json::value v = json::parse(text, ec);
    if (ec || !v.is_object()) return finish("error:protocol");
    const auto &ev = v.get_object();
    const auto *type = ev.if_contains("type");
    if (!type || !type->is_string()) return finish("error:protocol");
    const std::string_view t = type->get_string();
    if (t == "start") {
        if (const auto *id = ev.if_contains("request_id"); id && id->is_string()) request_id_ = std::string(id->get_string());
    } else if (t == "token") {
        on_token();
    } else if (t == "done") {
        if (const auto *fr = ev.if_contains("finish_reason"); fr && fr->is_string())
            rec_.finish_reason = std::string(fr->get_string());
        if (const auto *u = ev.if_contains("usage"); u && u->is_object()) {
            const auto &usage = u->get_object();
            auto num = [&](const char *k) -> int64_t {
                const auto *x = usage.if_contains(k);
                return x && x->is_number() ? x->to_number<int64_t>() : -1;
            };
            rec_.prompt_tokens = num("prompt_tokens");
            rec_.cached_tokens = num("cached_tokens");
            rec_.output_tokens = num("completion_tokens");
        }
        // The server says which cache answered ("cached": "exact" / "semantic"); a bool is read too.
        if (const auto *c = ev.if_contains("cached"))
            rec_.cached = c->is_bool() ? c->get_bool() : c->is_string() && !c->get_string().empty();
        finish(kOk);
    } else if (t == "error") {
        const auto *code = ev.if_contains("code");
        const std::string c = code && code->is_string() ? std::string(code->get_string()) : "unknown";
        finish(c == "overloaded" || c == "rate_limited" ? std::string(kOverloaded) : "error:" + c);
    }
    // events of unknown types are read past
}

// The outcome names the step that failed; the error code itself is not kept.
void ws_request::fail(boost::system::error_code, const char *what) {
    if (finished()) return;
    finish(std::string("error:") + what);
}

void ws_request::close_transport() {
    auto close_now = [this] {
        boost::system::error_code ignored;
        beast::get_lowest_layer(ws_).socket().shutdown(tcp::socket::shutdown_both, ignored);
        beast::get_lowest_layer(ws_).socket().close(ignored);
    };
    // note: after `done` or `error` the server has nothing more to send, so a plain close (no
    // close handshake) loses nothing. A request abandoned midway is cancelled first, or the
    // server would generate it to the end for nobody; the cancel gets 1 s, then the socket closes.
    const bool abandoned = rec_.outcome.rfind("error:timeout", 0) == 0 || rec_.outcome == "error:aborted";
    if (!abandoned || request_id_.empty() || !ws_.is_open()) return close_now();
    cancel_ = json::serialize(json::object{{"type", "cancel"}, {"request_id", request_id_}});
    cancel_timer_ = std::make_shared<boost::asio::steady_timer>(ws_.get_executor(), std::chrono::seconds(1));
    cancel_timer_->async_wait([s = self()](boost::system::error_code) {
        boost::system::error_code ignored;
        beast::get_lowest_layer(s->ws_).socket().close(ignored);
    });
    ws_.async_write(boost::asio::buffer(cancel_), [s = self()](boost::system::error_code, size_t) { s->cancel_timer_->cancel(); });
}

} // namespace loadgen
