// Slow and hostile clients against the real server: a slowloris (many connections trickling
// their headers a byte at a time), WebSocket messages cut into 1-byte frames, a fragmented
// message that grows past the message limit. Each time the others are served meanwhile and the
// limits hold. (A WebSocket client that never reads: test_ws.cpp.)
#include "tests/support/test_client.h"

#include <future>

using namespace testnet;
using actorserve::server_config;

namespace {

json::object chat_msg(const std::string &message, int max_tokens) {
    return {{"type", "chat"}, {"message", message}, {"max_tokens", max_tokens}, {"temperature", 0}};
}

// The chat's events up to done (or an error, a close, a timeout): the types in order and the
// final text.
struct answer {
    std::vector<std::string> types;
    std::string text;
    bool done = false;
};

answer read_answer(ws_client &c) {
    answer a;
    while (auto ev = c.read_json()) {
        const std::string type = str_of(*ev, "type");
        a.types.push_back(type);
        if (type == "error") break;
        if (type == "done") {
            a.done = true;
            a.text = str_of(*ev, "text");
            break;
        }
    }
    return a;
}

// The value of a gauge without labels in /metrics; -1 when it is not there.
long gauge(uint16_t port, const std::string &name) {
    const http_reply r = http_get(port, "/metrics");
    if (r.status != 200) return -1;
    const std::string key = "\n" + name + " ";
    const size_t at = r.body.find(key);
    if (at == std::string::npos) return -1;
    return std::strtol(r.body.c_str() + at + key.size(), nullptr, 10);
}

} // namespace

TEST_CASE("hostile: a slowloris of 40 connections is cut off at header_timeout_s; others are served throughout") {
    server_config cfg = server_fixture::config();
    cfg.header_timeout_s = 2;
    cfg.max_connections = 64;
    server_fixture fx(cfg);
    const uint16_t port = fx.port();
    const long before = gauge(port, "actorserve_open_connections");
    REQUIRE(before >= 0);

    constexpr int kSlow = 40;
    std::vector<std::unique_ptr<http_conn>> slow;
    for (int i = 0; i < kSlow; ++i) {
        slow.push_back(std::make_unique<http_conn>());
        REQUIRE(slow.back()->connect(port));
        REQUIRE(slow.back()->send_raw("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "));
    }
    // While they trickle one byte each every 250 ms, an ordinary client gets its answers.
    const auto t0 = std::chrono::steady_clock::now();
    std::atomic<bool> trickling{true};
    std::atomic<int> write_failures{0};
    std::thread trickler([&] {
        std::vector<bool> gone(kSlow, false);
        while (trickling) {
            for (int i = 0; i < kSlow; ++i)
                if (!gone[i] && !slow[i]->send_raw("a", 2s)) {
                    gone[i] = true;
                    ++write_failures;
                }
            std::this_thread::sleep_for(250ms);
        }
    });
    int served = 0;
    for (int i = 0; i < 3; ++i) {
        const http_reply h = http_get(port, "/health");
        CHECK_MESSAGE(h.status == 200, h.status << " " << h.body << " " << h.error);
        served += h.status == 200;
    }
    const http_reply chat = http_post(port, "/v1/chat/completions",
                                      R"({"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 4})");
    CHECK_MESSAGE(chat.status == 200, chat.body);
    MESSAGE("served " << served << " health checks and a chat beside " << kSlow << " slow connections");

    // Every slow connection is closed by the server, none later than a few seconds past the limit.
    int closed = 0;
    for (auto &c : slow) closed += c->read_some(20s).empty() ? 1 : 0;
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    trickling = false;
    trickler.join();
    MESSAGE(closed << " of " << kSlow << " closed after " << waited << " s");
    CHECK(closed == kSlow);
    CHECK(waited < 20.0);

    // and the server's connection count is back where it was.
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    long now = -1;
    while (std::chrono::steady_clock::now() < deadline) {
        now = gauge(port, "actorserve_open_connections");
        if (now == before) break;
        std::this_thread::sleep_for(100ms);
    }
    CHECK_MESSAGE(now == before, "open connections: " << before << " before, " << now << " after");
}

TEST_CASE("hostile: a chat sent as 1-byte WebSocket frames is one message, answered as if sent whole") {
    server_fixture fx;
    const uint16_t port = fx.port();
    const std::string msg = json::serialize(chat_msg("Name three colours.", 8));

    ws_client whole;
    REQUIRE_MESSAGE(whole.connect(port), whole.describe_error());
    REQUIRE(whole.send_text(msg));
    const answer a = read_answer(whole);
    REQUIRE_MESSAGE(a.done, whole.describe_error());

    ws_client bytes;
    REQUIRE_MESSAGE(bytes.connect(port), bytes.describe_error());
    REQUIRE_MESSAGE(bytes.send_fragments(msg, 1), bytes.describe_error());
    const answer b = read_answer(bytes);
    REQUIRE_MESSAGE(b.done, bytes.describe_error());
    CHECK(b.text == a.text); // greedy: the same answer
    CHECK(b.types.front() == "start");
    // the session goes on with a whole message after the fragmented one
    REQUIRE(bytes.send_text(json::serialize(chat_msg("Say hi.", 2))));
    CHECK(read_answer(bytes).done);
}

TEST_CASE("hostile: a message fragmented past max_message_bytes closes with 1009; others are served meanwhile") {
    server_config cfg = server_fixture::config();
    cfg.max_message_bytes = 4096;
    server_fixture fx(cfg);
    const uint16_t port = fx.port();

    ws_client other;
    REQUIRE_MESSAGE(other.connect(port), other.describe_error());
    REQUIRE(other.send_text(json::serialize(chat_msg("Name three colours.", 16))));

    ws_client big;
    REQUIRE_MESSAGE(big.connect(port), big.describe_error());
    // 8 KiB in 16-byte frames: no frame is large, the message is. The server stops reading at
    // the limit, so a late write may fail: what counts is how it closed.
    const std::string text = R"({"type": "chat", "message": ")" + std::string(8192, 'x') + "\"}";
    big.send_fragments(text, 16);
    while (big.read(20s)) {
    }
    CHECK_MESSAGE(big.closed(), big.describe_error());
    CHECK(big.close_code() == 1009);

    const answer o = read_answer(other);
    CHECK_MESSAGE(o.done, other.describe_error());
}
