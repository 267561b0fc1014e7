// actorserve-bench against a tiny HTTP/SSE server written here, which answers
// POST /v1/chat/completions on a known schedule: the first content chunk after 200 ms, then one
// every 50 ms, 10 in all, then usage and [DONE]. The measured TTFT and inter-token gaps must match
// that schedule within a tolerance (generous: these also run under sanitizers, on busy machines).
// max_tokens picks other answers: 1 -> 503, 2 -> 400 with an OpenAI error body.
#include <doctest/doctest.h>

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include <atomic>
#include <cmath>
#include <chrono>
#include <list>
#include <mutex>
#include <string>
#include <thread>

#include "bench/loadgen/interrupt.h"
#include "bench/loadgen/report.h"
#include "bench/loadgen/runner.h"

using namespace loadgen;
namespace asio = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

constexpr double kFirstMs = 200, kGapMs = 50, kTolMs = 40;
constexpr int kChunks = 10;

bool near(double measured, double expected, double tol) {
    INFO("measured " << measured << " ms, expected " << expected << " +- " << tol);
    CHECK(std::abs(measured - expected) <= tol);
    return std::abs(measured - expected) <= tol;
}

// One thread accepting; one thread per connection (a test opens a handful).
class schedule_server {
public:
    schedule_server() : acceptor_(ioc_, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
        port_ = acceptor_.local_endpoint().port();
        thread_ = std::thread([this] { accept_loop(); });
    }
    ~schedule_server() {
        stop_ = true;
        { // wakes the blocking accept, which then sees stop_
            asio::io_context wake_ioc;
            asio::ip::tcp::socket wake(wake_ioc);
            boost::system::error_code ec;
            wake.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_), ec);
            thread_.join();
        }
        std::lock_guard lk(m_);
        for (auto &t : conns_) t.join();
    }
    uint16_t port() const { return port_; }
    int requests() const { return requests_.load(); }

private:
    void accept_loop() {
        while (!stop_) {
            asio::ip::tcp::socket s(ioc_);
            boost::system::error_code ec;
            acceptor_.accept(s, ec);
            if (ec || stop_) return;
            std::lock_guard lk(m_);
            conns_.emplace_back([this, s = std::move(s)]() mutable { serve(std::move(s)); });
        }
    }

    void serve(asio::ip::tcp::socket s) {
        boost::system::error_code ec;
        std::string in;
        char buf[4096];
        size_t header_end = std::string::npos, need = 0;
        while (true) { // read the header, then Content-Length bytes of body
            const size_t n = s.read_some(asio::buffer(buf), ec);
            if (ec) return;
            in.append(buf, n);
            if (header_end == std::string::npos && (header_end = in.find("\r\n\r\n")) != std::string::npos) {
                const auto cl = in.find("Content-Length: ");
                need = cl == std::string::npos ? 0 : std::stoul(in.substr(cl + 16));
            }
            if (header_end != std::string::npos && in.size() >= header_end + 4 + need) break;
        }
        ++requests_;
        json::value body = json::parse(in.substr(header_end + 4));
        const auto max_tokens = body.at("max_tokens").to_number<int>();
        const bool usage = body.at("stream_options").at("include_usage").as_bool();
        auto send = [&](const std::string &text) { asio::write(s, asio::buffer(text), ec); };
        if (max_tokens == 1) {
            const std::string b = R"({"error":{"message":"busy","type":"overloaded_error","code":"overloaded"}})";
            send("HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: application/json\r\nContent-Length: " +
                 std::to_string(b.size()) + "\r\n\r\n" + b);
            return;
        }
        if (max_tokens == 2) {
            const std::string b = R"({"error":{"message":"bad","type":"invalid_request_error","code":"invalid_request"}})";
            send("HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(b.size()) +
                 "\r\n\r\n" + b);
            return;
        }
        send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n");
        auto chunk = [](const std::string &delta, const char *finish) {
            json::object c{{"object", "chat.completion.chunk"},
                           {"choices", json::array{json::object{{"index", 0},
                                                                {"delta", json::parse(delta)},
                                                                {"finish_reason", finish ? json::value(finish) : nullptr}}}}};
            return "data: " + json::serialize(c) + "\n\n";
        };
        std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(kFirstMs)));
        send(chunk(R"({"role":"assistant","content":""})", nullptr) + chunk(R"({"content":"t0"})", nullptr));
        for (int i = 1; i < kChunks && !ec; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(kGapMs)));
            send(chunk(R"({"content":"t)" + std::to_string(i) + "\"}", nullptr));
        }
        send(chunk("{}", "length"));
        if (usage) send(R"(data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":10,"total_tokens":15}})" "\n\n");
        send("data: [DONE]\n\n");
        s.shutdown(asio::ip::tcp::socket::shutdown_send, ec);
    }

    asio::io_context ioc_;
    asio::ip::tcp::acceptor acceptor_;
    uint16_t port_ = 0;
    std::atomic<bool> stop_{false};
    std::atomic<int> requests_{0};
    std::thread thread_;
    std::mutex m_;
    std::list<std::thread> conns_;
};

run_options options_for(uint16_t port) {
    run_options opt;
    std::string err;
    REQUIRE(parse_target("http://127.0.0.1:" + std::to_string(port), "openai", opt.tgt, err));
    opt.prompts = builtin_prompts();
    opt.params.max_tokens = 16;
    opt.load.timeout_s = 60;
    opt.load.request_timeout_s = 30;
    opt.progress = false;
    return opt;
}

} // namespace

TEST_CASE("schedule: TTFT ~200 ms and gaps ~50 ms are measured as served") {
    schedule_server srv;
    auto opt = options_for(srv.port());
    opt.load.concurrency = 2;
    opt.load.requests = 4;
    auto p = make_point(run_load(opt));
    REQUIRE(p.result.error.empty());
    const auto &s = p.summary;
    CHECK(srv.requests() == 4);
    CHECK(s.requests == 4);
    CHECK(s.ok == 4);
    CHECK(s.output_tokens == 40); // usage.completion_tokens
    for (const auto &r : p.result.records) {
        CHECK(r.token_events == kChunks);
        CHECK(r.itl_ms.size() == kChunks - 1);
        CHECK(r.prompt_tokens == 5);
        CHECK(r.finish_reason == "length");
        near(r.ttft_ms, kFirstMs, kTolMs);
        CHECK(r.e2e_ms >= r.ttft_ms);
    }
    near(s.ttft_ms.p50, kFirstMs, kTolMs);
    CHECK(s.itl_ms.n == 4 * (kChunks - 1));
    near(s.itl_ms.p50, kGapMs, kTolMs);
    near(s.itl_ms.mean, kGapMs, kTolMs);
    const double e2e_expected = kFirstMs + (kChunks - 1) * kGapMs;
    near(s.e2e_ms.p50, e2e_expected, 2 * kTolMs);
    CHECK(s.ttft_ms.p50 <= s.ttft_ms.p90);
    CHECK(s.ttft_ms.p90 <= s.ttft_ms.p99);
    CHECK(s.ttft_ms.p99 <= s.ttft_ms.max);
    // the JSON report of the run parses and agrees
    auto v = json::parse(json::serialize(report_json(opt.tgt, {}, {p})));
    CHECK(v.at("runs").at(0).at("summary").at("ok").to_number<int>() == 4);
    CHECK(v.at("runs").at(0).at("records").as_array().size() == 4);
}

TEST_CASE("schedule: 503 counts as overloaded, 400 as an error of its type") {
    schedule_server srv;
    auto opt = options_for(srv.port());
    opt.load.requests = 2;
    opt.params.max_tokens = 1;
    auto over = make_point(run_load(opt));
    CHECK(over.summary.requests == 2);
    CHECK(over.summary.overloaded == 2);
    opt.params.max_tokens = 2;
    auto bad = make_point(run_load(opt));
    CHECK(bad.summary.errors == 2);
    CHECK(bad.summary.errors_by_type.at("invalid_request_error") == 2);
}

TEST_CASE("schedule: open loop beyond max_inflight drops arrivals and counts them") {
    schedule_server srv;
    auto opt = options_for(srv.port());
    opt.load.rate = 20; // mean gap 50 ms; each answer takes ~650 ms
    opt.load.max_inflight = 2;
    opt.load.requests = 6; // arrivals
    auto p = make_point(run_load(opt));
    CHECK(p.result.mode == "open");
    CHECK(p.summary.requests + p.summary.dropped_by_client == 6);
    CHECK(p.summary.dropped_by_client >= 1);
    CHECK(p.summary.ok == p.summary.requests);
}

TEST_CASE("schedule: an interrupt stops issuing and keeps what was measured") {
    schedule_server srv;
    auto opt = options_for(srv.port());
    opt.load.duration_s = 20;
    opt.load.drain_s = 5;
    std::thread ctrl_c([] {
        std::this_thread::sleep_for(900ms);
        raise_interrupt();
    });
    const auto t0 = std::chrono::steady_clock::now();
    auto p = make_point(run_load(opt));
    ctrl_c.join();
    reset_interrupts();
    CHECK(p.result.interrupted);
    CHECK(std::chrono::steady_clock::now() - t0 < 8s);
    CHECK(p.summary.requests >= 1);
    CHECK(p.summary.ok == p.summary.requests); // the one in flight was let finish
}
