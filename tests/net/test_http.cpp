// The HTTP side of the server (docs/protocol.md) against the real server and model, in-process:
// /health, /v1/models, the OpenAI-compatible chat and completion endpoints (whole and streamed),
// their errors, API keys, the connection limit, the static web page (and path traversal), /metrics,
// a streamed request whose client disconnects (kept for resume, then cancelled when nobody comes
// back) and its resume from Last-Event-ID on another connection.
#include "tests/support/test_client.h"

#include <filesystem>
#include <future>
#include <sstream>

using namespace testnet;
using actorserve::server_config;

namespace {

std::string model_id() { return std::filesystem::path(test_paths::model()).stem().string(); }

std::string chat_body(const std::string &content, int max_tokens, json::object extra = {}) {
    json::object o{{"messages", json::array{json::object{{"role", "user"}, {"content", content}}}},
                   {"max_tokens", max_tokens},
                   {"temperature", 0}};
    for (auto &kv : extra) o[kv.key()] = kv.value();
    return json::serialize(o);
}

std::string describe(const http_reply &r) {
    std::ostringstream s;
    s << "status " << r.status;
    if (!r.error.empty()) s << " (" << r.error << ")";
    s << ", body: " << r.body.substr(0, 400);
    return s.str();
}

// The error type string that goes with one of our codes ("unprocessable" -> "unprocessable_error").
std::string type_of(const std::string &code) {
    for (int i = 0; i < 64; ++i) {
        const auto e = static_cast<actorserve::errc>(i);
        if (actorserve::name(e) == code) return std::string(actorserve::info(e).type);
    }
    return "?";
}

// An error answer: the status, OpenAI's shape with our code, the message naming `names`.
void check_error(const http_reply &r, int status, const std::string &code, const std::string &names) {
    INFO(describe(r));
    CHECK(r.status == status);
    CHECK(r.header("content-type").rfind("application/json", 0) == 0);
    auto body = r.json_body();
    REQUIRE_MESSAGE(body, "the error body is not a JSON object");
    const json::object *e = obj_of(*body, "error");
    REQUIRE_MESSAGE(e, "no error object");
    CHECK(str_of(*e, "code") == code);
    CHECK(str_of(*e, "type") == type_of(code));
    CHECK_MESSAGE((names_word(lower(str_of(*e, "message")), lower(names)) || str_of(*e, "param") == names),
                  "the message does not name '" << names << "'");
}

// choices[0].<part>.content of a response or chunk ("" when absent).
std::string choice_content(const json::object &o, std::string_view part) {
    const json::value *ch = o.if_contains("choices");
    if (!ch || !ch->is_array() || ch->get_array().empty() || !ch->get_array()[0].is_object()) return {};
    const json::object *p = obj_of(ch->get_array()[0].get_object(), part);
    return p ? str_of(*p, "content") : std::string();
}

// The `data:` payloads of a server-sent event stream, in order.
std::vector<std::string> sse_data(const std::string &body) {
    std::vector<std::string> out;
    std::istringstream in(body);
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.rfind("data: ", 0) == 0) out.push_back(line.substr(6));
        else if (line.rfind("data:", 0) == 0) out.push_back(line.substr(5));
    }
    return out;
}

// The sum of the values of the Prometheus series whose name and labels contain `needle`; nullopt
// when there is none.
std::optional<double> metric_sum(const std::string &text, std::string_view needle) {
    std::istringstream in(text);
    std::string line;
    std::optional<double> sum;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        const size_t sp = line.rfind(' ');
        if (sp == std::string::npos) continue;
        const std::string series = line.substr(0, sp);
        if (series.find(needle) == std::string::npos) continue;
        sum = sum.value_or(0.0) + std::strtod(line.c_str() + sp + 1, nullptr);
    }
    return sum;
}

} // namespace

TEST_CASE("http: /health is 503 until the runtime is attached, then 200") {
    watchdog guard;
    guard.arm(std::chrono::seconds(600), "the /health test");
    caf::actor_system_config caf_cfg;
    actorserve::runtime::tune(caf_cfg);
    caf::actor_system sys{caf_cfg};
    server_config cfg = server_fixture::config();
    set_log_level(cfg.log_level);
    std::string err;
    auto srv = actorserve::server::start(sys, cfg, err);
    REQUIRE_MESSAGE(srv, err);
    http_reply loading = http_get(srv->port(), "/health");
    CHECK_MESSAGE(loading.status == 503, describe(loading));
    auto body = loading.json_body();
    REQUIRE(body);
    CHECK(str_of(*body, "status") == "loading");
    CHECK(loading.header("retry-after") == "1");
    // a request while the model loads is refused as retryable, and says when
    http_reply early = http_post(srv->port(), "/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}]})");
    CHECK_MESSAGE(early.status == 503, describe(early));
    CHECK_MESSAGE(early.header("retry-after") == "1", describe(early));
    {
        auto rt = actorserve::runtime::start(sys, cfg.runtime, err);
        REQUIRE_MESSAGE(rt, err);
        srv->attach(*rt);
        http_reply ready = http_get(srv->port(), "/health");
        CHECK_MESSAGE(ready.status == 200, describe(ready));
        CHECK(ready.header("content-type").rfind("application/json", 0) == 0);
        auto b = ready.json_body();
        REQUIRE(b);
        CHECK(str_of(*b, "status") == "ok");
        srv->shutdown(ms(0));
        srv.reset();
    }
}

TEST_CASE("http: /v1/models lists the model; chat completions whole and streamed agree") {
    server_fixture fx;
    const uint16_t port = fx.port();

    http_reply models = http_get(port, "/v1/models");
    REQUIRE_MESSAGE(models.status == 200, describe(models));
    auto mb = models.json_body();
    REQUIRE(mb);
    CHECK(str_of(*mb, "object") == "list");
    const json::value *data = field(*mb, "data");
    REQUIRE((data && data->is_array() && !data->get_array().empty()));
    bool listed = false;
    for (const auto &m : data->get_array())
        if (m.is_object() && str_of(m.get_object(), "id") == model_id()) listed = true;
    CHECK_MESSAGE(listed, "model " << model_id() << " not in " << models.body);

    // whole
    const std::string question = "What is the capital of France?";
    http_reply whole = http_post(port, "/v1/chat/completions", chat_body(question, 16, {{"model", model_id()}}));
    REQUIRE_MESSAGE(whole.status == 200, describe(whole));
    CHECK(whole.header("content-type").rfind("application/json", 0) == 0);
    auto wb = whole.json_body();
    REQUIRE(wb);
    CHECK(str_of(*wb, "object") == "chat.completion");
    CHECK(!str_of(*wb, "id").empty());
    CHECK(str_of(*wb, "model") == model_id());
    const json::value *choices = field(*wb, "choices");
    REQUIRE((choices && choices->is_array() && choices->get_array().size() == 1));
    const json::object &choice = choices->get_array()[0].get_object();
    CHECK(int_of(choice, "index") == 0);
    const json::object *message = obj_of(choice, "message");
    REQUIRE(message);
    CHECK(str_of(*message, "role") == "assistant");
    const std::string content = str_of(*message, "content");
    CHECK(!content.empty());
    const std::string finish = str_of(choice, "finish_reason");
    CHECK_MESSAGE((finish == "stop" || finish == "length"), finish);
    const json::object *usage = obj_of(*wb, "usage");
    REQUIRE(usage);
    const int64_t prompt_tokens = int_of(*usage, "prompt_tokens");
    const int64_t completion_tokens = int_of(*usage, "completion_tokens");
    CHECK(prompt_tokens > 0);
    CHECK(completion_tokens >= 1);
    CHECK(completion_tokens <= 16);
    CHECK(int_of(*usage, "total_tokens") == prompt_tokens + completion_tokens);
    MESSAGE("answer: " << content);

    // max_completion_tokens is max_tokens' other name
    {
        json::object o{{"messages", json::array{json::object{{"role", "user"}, {"content", question}}}},
                       {"max_completion_tokens", 16},
                       {"temperature", 0}};
        http_reply again = http_post(port, "/v1/chat/completions", json::serialize(o));
        REQUIRE_MESSAGE(again.status == 200, describe(again));
        auto ab = again.json_body();
        REQUIRE(ab);
        const json::value *c = field(*ab, "choices");
        REQUIRE((c && c->is_array() && !c->get_array().empty()));
        const json::object *m = obj_of(c->get_array()[0].get_object(), "message");
        REQUIRE(m);
        CHECK(str_of(*m, "content") == content);
    }

    // streamed
    json::object extra{{"stream", true}, {"stream_options", json::object{{"include_usage", true}}}};
    http_reply streamed = http_post(port, "/v1/chat/completions", chat_body(question, 16, extra));
    REQUIRE_MESSAGE(streamed.status == 200, describe(streamed));
    CHECK(streamed.header("content-type").rfind("text/event-stream", 0) == 0);
    const std::vector<std::string> events = sse_data(streamed.body);
    INFO("stream: " << streamed.body.substr(0, 2000));
    REQUIRE(events.size() >= 4);
    CHECK(events.back() == "[DONE]");
    std::string joined, id, stream_finish;
    bool saw_usage = false, saw_role = false;
    for (size_t i = 0; i + 1 < events.size(); ++i) {
        INFO("chunk " << i << ": " << events[i]);
        auto v = parse_json(events[i]);
        REQUIRE((v && v->is_object()));
        const json::object &chunk = v->get_object();
        CHECK(str_of(chunk, "object") == "chat.completion.chunk");
        if (id.empty()) id = str_of(chunk, "id");
        CHECK(str_of(chunk, "id") == id);
        CHECK(!saw_usage); // the usage chunk is the last before [DONE]
        const json::value *cs = field(chunk, "choices");
        REQUIRE((cs && cs->is_array()));
        if (cs->get_array().empty()) {
            const json::object *u = obj_of(chunk, "usage");
            REQUIRE(u);
            CHECK(int_of(*u, "prompt_tokens") == prompt_tokens);
            CHECK(int_of(*u, "completion_tokens") == completion_tokens);
            CHECK(int_of(*u, "total_tokens") == prompt_tokens + completion_tokens);
            CHECK(!stream_finish.empty()); // after the finish chunk
            saw_usage = true;
            continue;
        }
        const json::object &c = cs->get_array()[0].get_object();
        const json::object *delta = obj_of(c, "delta");
        REQUIRE(delta);
        if (i == 0) {
            CHECK(str_of(*delta, "role") == "assistant");
            saw_role = true;
        }
        CHECK(stream_finish.empty()); // nothing after the finish chunk but usage
        joined += str_of(*delta, "content");
        const json::value *fr = field(c, "finish_reason");
        if (fr && fr->is_string()) stream_finish = std::string(fr->get_string());
    }
    CHECK(saw_role);
    CHECK(saw_usage);
    CHECK(joined == content);
    CHECK(stream_finish == finish);
    CHECK(streamed.body.size() >= 14);
    CHECK(streamed.body.substr(streamed.body.size() - 14) == "data: [DONE]\n\n");
}

TEST_CASE("http: /v1/completions completes a raw prompt, whole and streamed") {
    server_fixture fx;
    const uint16_t port = fx.port();
    json::object req{{"prompt", "The capital of France is"}, {"max_tokens", 8}, {"temperature", 0}};
    http_reply whole = http_post(port, "/v1/completions", json::serialize(req));
    REQUIRE_MESSAGE(whole.status == 200, describe(whole));
    auto wb = whole.json_body();
    REQUIRE(wb);
    CHECK(str_of(*wb, "object") == "text_completion");
    const json::value *choices = field(*wb, "choices");
    REQUIRE((choices && choices->is_array() && choices->get_array().size() == 1));
    const json::object &choice = choices->get_array()[0].get_object();
    const std::string text = str_of(choice, "text");
    CHECK(!text.empty());
    const std::string finish = str_of(choice, "finish_reason");
    CHECK_MESSAGE((finish == "stop" || finish == "length"), finish);
    const json::object *usage = obj_of(*wb, "usage");
    REQUIRE(usage);
    CHECK(int_of(*usage, "prompt_tokens") > 0);
    CHECK(int_of(*usage, "completion_tokens") >= 1);
    MESSAGE("completion: " << text);

    req["stream"] = true;
    http_reply streamed = http_post(port, "/v1/completions", json::serialize(req));
    REQUIRE_MESSAGE(streamed.status == 200, describe(streamed));
    CHECK(streamed.header("content-type").rfind("text/event-stream", 0) == 0);
    const std::vector<std::string> events = sse_data(streamed.body);
    INFO("stream: " << streamed.body.substr(0, 2000));
    REQUIRE(events.size() >= 2);
    CHECK(events.back() == "[DONE]");
    std::string joined, stream_finish;
    for (size_t i = 0; i + 1 < events.size(); ++i) {
        auto v = parse_json(events[i]);
        REQUIRE((v && v->is_object()));
        CHECK(str_of(v->get_object(), "object") == "text_completion");
        const json::value *cs = field(v->get_object(), "choices");
        REQUIRE((cs && cs->is_array()));
        if (cs->get_array().empty()) continue;
        const json::object &c = cs->get_array()[0].get_object();
        joined += str_of(c, "text");
        const json::value *fr = field(c, "finish_reason");
        if (fr && fr->is_string()) stream_finish = std::string(fr->get_string());
    }
    CHECK(joined == text);
    CHECK(stream_finish == finish);
}

TEST_CASE("http: errors have the documented status and an error body naming the problem") {
    server_config cfg = server_fixture::config();
    cfg.max_message_bytes = 4096;
    cfg.runtime.n_ctx = 256;
    server_fixture fx(cfg);
    const uint16_t port = fx.port();
    const char *chat = "/v1/chat/completions";

    check_error(http_post(port, chat, R"({"messages": [{"role": "user", "content": "hi"}], )"), 400, "invalid_request",
                "JSON");
    check_error(http_post(port, chat, R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": "ten"})"), 400,
                "invalid_request", "max_tokens");
    check_error(http_post(port, chat, R"({"max_tokens": 4})"), 400, "invalid_request", "messages");
    check_error(http_post(port, chat, R"({"messages": [{"role": "user", "content": "hi"}], "n": 0})"), 400,
                "invalid_request", "n");
    check_error(http_post(port, chat, R"({"messages": [{"role": "user", "content": "hi"}], "logprobs": "yes"})"), 400,
                "invalid_request", "logprobs");
    check_error(http_post(port, chat, R"({"messages": [{"role": "user", "content": "hi"}], "top_logprobs": 2})"), 400,
                "invalid_request", "top_logprobs");
    check_error(http_post(port, chat, R"({"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "code"}], "tool_choice": "required"})"), 400,
                "invalid_request", "tools");
    // tool parameters nested past Boost.JSON's depth (32): refused by name, the server serves on
    // (an uncaught exception ended the process; found by fuzz_openai_request)
    std::string deep = R"({"type": "string"})";
    for (int i = 0; i < 20; ++i) deep = R"({"type": "object", "properties": {"a": )" + deep + "}}";
    check_error(http_post(port, chat, R"({"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function",
                              "function": {"name": "f", "parameters": )" + deep + R"(}}], "tool_choice": "required"})"),
                400, "invalid_request", "tools[0].function.parameters");
    CHECK(http_get(port, "/health").status == 200);
    check_error(http_post(port, chat,
                          R"({"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "json_schema",
                              "json_schema": {"name": "x", "schema": {"type": "object", "properties": {"a": {"type": "string", "pattern": "^a"}}}}}})"),
                400, "invalid_request", "pattern");
    check_error(http_post(port, chat,
                          R"({"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "xml"}})"),
                400, "invalid_request", "response_format");
    check_error(http_post(port, chat, R"({"messages": [{"role": "user", "content": "hi"}], "temperature": -1})"), 422,
                "unprocessable", "temperature");
    check_error(http_post(port, chat, R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 100000})"), 422,
                "unprocessable", "max_tokens");
    check_error(http_post(port, chat, R"({"model": "no-such-model", "messages": [{"role": "user", "content": "hi"}]})"),
                404, "not_found", "no-such-model");
    check_error(http_post(port, "/v1/completions", R"({"prompt": 42, "max_tokens": 2})"), 400, "invalid_request",
                "prompt");
    {
        std::string long_message;
        for (int i = 0; i < 300; ++i) long_message += "hello ";
        check_error(http_post(port, chat, chat_body(long_message, 2)), 422, "exceed_context", "context");
    }
    {
        const std::string big = chat_body(std::string(8000, 'a'), 2);
        http_reply r = http_post(port, chat, big);
        INFO(describe(r));
        CHECK(r.status == 413);
        auto b = r.json_body();
        if (b && obj_of(*b, "error")) CHECK(str_of(*obj_of(*b, "error"), "code") == "too_large");
    }
    {
        http_reply r = http_get(port, "/v1/no-such-endpoint");
        INFO(describe(r));
        CHECK(r.status == 404);
    }
    // other unknown fields are ignored
    {
        http_reply r = http_post(port, chat, chat_body("Say hi.", 2, {{"user", "someone"}, {"frequency_penalty", 0}}));
        CHECK_MESSAGE(r.status == 200, describe(r));
    }
    // and after all that the server still answers
    http_reply ok = http_post(port, chat, chat_body("Say hi.", 2));
    CHECK_MESSAGE(ok.status == 200, describe(ok));
}

TEST_CASE("http: with api_keys_file, requests other than /health need the key") {
    temp_file keys("# keys\nsecret-key-1\n");
    server_config cfg = server_fixture::config();
    cfg.api_keys_file = keys.path();
    server_fixture fx(cfg);
    const uint16_t port = fx.port();
    const header_list good = {{"Authorization", "Bearer secret-key-1"}};
    const header_list wrong = {{"Authorization", "Bearer secret-key-2"}};

    CHECK(http_get(port, "/health").status == 200);
    check_error(http_get(port, "/v1/models"), 401, "unauthorized", "key");
    check_error(http_get(port, "/v1/models", wrong), 401, "unauthorized", "key");
    CHECK(http_get(port, "/v1/models", good).status == 200);
    CHECK(http_get(port, "/metrics").status == 401);
    CHECK(http_get(port, "/metrics", good).status == 200);
    check_error(http_post(port, "/v1/chat/completions", chat_body("Say hi.", 2)), 401, "unauthorized", "key");
    http_reply r = http_post(port, "/v1/chat/completions", chat_body("Say hi.", 2), good);
    CHECK_MESSAGE(r.status == 200, describe(r));
    // The scheme is case-insensitive, and one or more spaces follow it (RFC 9110).
    CHECK(http_get(port, "/v1/models", {{"Authorization", "bearer secret-key-1"}}).status == 200);
    CHECK(http_get(port, "/v1/models", {{"Authorization", "BEARER  secret-key-1"}}).status == 200);
    check_error(http_get(port, "/v1/models", {{"Authorization", "Basic secret-key-1"}}), 401, "unauthorized", "Bearer");
    check_error(http_get(port, "/v1/models", {{"Authorization", "Bearersecret-key-1"}}), 401, "unauthorized", "Bearer");
}

TEST_CASE("http: beyond max_connections a request gets 429 and the others keep working") {
    server_config cfg = server_fixture::config();
    cfg.max_connections = 2;
    server_fixture fx(cfg);
    const uint16_t port = fx.port();
    http_conn a, b;
    REQUIRE(a.connect(port));
    REQUIRE(b.connect(port));
    CHECK(a.request(http::verb::get, "/v1/models").status == 200);
    CHECK(b.request(http::verb::get, "/v1/models").status == 200);
    http_reply third = http_get(port, "/v1/models");
    INFO(describe(third));
    CHECK(third.status == 429);
    // a retryable refusal says when
    const std::string retry = third.header("retry-after");
    CHECK_MESSAGE(!retry.empty(), "no Retry-After on the connection limit's 429");
    if (!retry.empty()) CHECK(std::stoi(retry) >= 1);
    // the first two, kept alive, still work
    CHECK(a.request(http::verb::get, "/health").status == 200);
    http_reply chat = b.request(http::verb::post, "/v1/chat/completions", chat_body("Say hi.", 2));
    CHECK_MESSAGE(chat.status == 200, describe(chat));
}

TEST_CASE("http: the web page is served, and nothing outside web/ is") {
    server_fixture fx;
    const uint16_t port = fx.port();
    http_reply page = http_get(port, "/");
    CHECK_MESSAGE(page.status == 200, describe(page));
    CHECK(page.header("content-type").rfind("text/html", 0) == 0);
    CHECK(!page.body.empty());
    // no sniffing, no framing by other sites, no Referer
    CHECK(page.header("x-content-type-options") == "nosniff");
    CHECK(page.header("x-frame-options") == "DENY");
    CHECK(page.header("content-security-policy") == "frame-ancestors 'none'");
    CHECK(page.header("referrer-policy") == "no-referrer");
    // The dashboard by its name, exactly: its page, and a 404 for near misses of that name.
    http_reply dash = http_get(port, "/dashboard");
    CHECK_MESSAGE(dash.status == 200, describe(dash));
    CHECK(dash.header("content-type").rfind("text/html", 0) == 0);
    CHECK(dash.body.find("dashboard.js") != std::string::npos);
    for (const char *near : {"/dashboard/", "/dashboard.html/", "/Dashboard", "/dashboard/index.html"}) {
        http_reply r = http_get(port, near);
        INFO(near << ": " << describe(r));
        CHECK(r.status == 404);
    }

    const char *attempts[] = {
        "/../CMakeLists.txt",       "/%2e%2e/CMakeLists.txt",     "/web/../../CMakeLists.txt",
        "/..%2fCMakeLists.txt",     "/%2e%2e%2fCMakeLists.txt",   "/./../CMakeLists.txt",
        "/..%5cCMakeLists.txt",     "/%2E%2E/%2E%2E/etc/passwd",  "/../../../../../../etc/passwd",
        "//etc/passwd",             "/%2fetc%2fpasswd",           "/....//CMakeLists.txt",
        "/%252e%252e/CMakeLists.txt",
    };
    for (const char *target : attempts) {
        http_reply r = http_get(port, target);
        INFO(target << ": " << describe(r));
        CHECK((r.status == 400 || r.status == 404));
        CHECK(r.body.find("cmake_minimum_required") == std::string::npos);
        CHECK(r.body.find("root:") == std::string::npos);
    }
}

TEST_CASE("http: /metrics is Prometheus text with actorserve_ series") {
    server_fixture fx;
    http_reply warm = http_post(fx.port(), "/v1/chat/completions", chat_body("Say hi.", 2));
    REQUIRE_MESSAGE(warm.status == 200, describe(warm));
    http_reply m = http_get(fx.port(), "/metrics");
    REQUIRE_MESSAGE(m.status == 200, describe(m));
    CHECK(m.header("content-type").rfind("text/plain", 0) == 0);
    std::istringstream in(m.body);
    std::string line;
    int series = 0;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        INFO(line);
        CHECK(line.rfind("actorserve_", 0) == 0);
        ++series;
    }
    CHECK(series >= 5);
}

TEST_CASE("http: a streaming client that disconnects: its request runs on for resume, then nobody comes back and it is cancelled") {
    server_config cfg = server_fixture::config();
    cfg.runtime.n_ctx = 2048;
    cfg.sse_resume_grace_s = 2;
    server_fixture fx(cfg);
    const uint16_t port = fx.port();
    http_reply m0 = http_get(port, "/metrics");
    REQUIRE(m0.status == 200);
    const auto cancelled_before = metric_sum(m0.body, "outcome=\"cancelled\"");
    const uint64_t generated_before = fx.metrics().generated_tokens;

    // greedy, this prompt runs to max_tokens; 1000 tokens take many seconds, more under sanitizers
    const std::string body = chat_body("Write a very long story about a dragon who learns to fly.", 1000, {{"stream", true}});
    http_conn c;
    REQUIRE(c.connect(port));
    std::ostringstream req;
    req << "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        << "Content-Length: " << body.size() << "\r\n\r\n"
        << body;
    REQUIRE(c.send_raw(req.str()));
    std::string got;
    size_t chunks = 0;
    while (chunks < 5) {
        std::string piece = c.read_some();
        REQUIRE_MESSAGE(!piece.empty(), "the stream ended early: " << c.error() << "; got " << got);
        got += piece;
        chunks = 0;
        for (size_t p = got.find("data:"); p != std::string::npos; p = got.find("data:", p + 1)) ++chunks;
    }
    REQUIRE(got.rfind("HTTP/1.1 200", 0) == 0);
    c.drop();
    const auto t0 = std::chrono::steady_clock::now();

    // It runs on for a resume (server.sse_resume_grace_s)...
    const uint64_t g0 = fx.metrics().generated_tokens;
    std::this_thread::sleep_for(1s);
    CHECK_MESSAGE(fx.metrics().generated_tokens > g0, "the stream stopped at once: there is nothing left to resume");
    // ...then the runtime stops generating for it: nothing runs, and the generated count stands still.
    CHECK_MESSAGE(fx.wait_metrics([](const auto &s) { return s.running == 0; }, 30s),
                  "the request still runs 30 s after its client left");
    const double stopped_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(stopped_s >= 1.5);
    const uint64_t g1 = fx.metrics().generated_tokens;
    std::this_thread::sleep_for(300ms);
    const uint64_t g2 = fx.metrics().generated_tokens;
    CHECK(g2 == g1);
    const uint64_t generated = g2 - generated_before;
    MESSAGE("the request stopped " << stopped_s << " s after the disconnect, having generated " << generated
                                   << " of 1000 tokens");
    CHECK(generated < 1000);

    // /metrics tells the same: a cancelled outcome counted (actorserve_requests_total{outcome="cancelled"}),
    // or, were there no such series, no running request
    bool seen = false;
    std::string last;
    for (int i = 0; i < 100 && !seen; ++i) {
        http_reply m = http_get(port, "/metrics");
        REQUIRE(m.status == 200);
        last = m.body;
        const auto cancelled = metric_sum(m.body, "outcome=\"cancelled\"");
        if (cancelled_before && cancelled) seen = *cancelled > *cancelled_before;
        else if (auto running = metric_sum(m.body, "actorserve_num_requests_running")) seen = *running == 0;
        if (!seen) std::this_thread::sleep_for(50ms);
    }
    CHECK_MESSAGE(seen, "/metrics shows no cancelled request and no idle runtime:\n" << last);
}

TEST_CASE("http: with API keys a stream resumes on another connection with the key, from Last-Event-ID, each event once") {
    temp_file keys("secret-key-1\nsecret-key-2\n");
    server_config cfg = server_fixture::config();
    cfg.api_keys_file = keys.path();
    server_fixture fx(cfg);
    const uint16_t port = fx.port();
    const header_list key1 = {{"Authorization", "Bearer secret-key-1"}};
    const std::string body = chat_body("Tell me a long story about a lighthouse keeper.", 30, {{"cache", false}});
    http_reply whole = http_post(port, "/v1/chat/completions", body, key1);
    REQUIRE_MESSAGE(whole.status == 200, describe(whole));
    const std::string answer = choice_content(whole.json_body().value_or(json::object{}), "message");
    REQUIRE(!answer.empty());

    const std::string sbody = chat_body("Tell me a long story about a lighthouse keeper.", 30, {{"cache", false}, {"stream", true}});
    http_conn c;
    REQUIRE(c.connect(port));
    REQUIRE(c.send_raw("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer secret-key-1\r\n"
                       "Content-Type: application/json\r\nContent-Length: " + std::to_string(sbody.size()) + "\r\n\r\n" + sbody));
    std::string got;
    while (sse_data(got).size() < 3) {
        std::string piece = c.read_some();
        REQUIRE_MESSAGE(!piece.empty(), "the stream ended early: " << c.error() << "; got " << got);
        got += piece;
    }
    c.drop();
    // The resume URL names the response, and carries no token: the key is the proof.
    const size_t h = got.find("X-Resume-URL: ");
    REQUIRE(h != std::string::npos);
    const std::string url = got.substr(h + 14, got.find("\r\n", h) - h - 14);
    CHECK(url.rfind("/v1/streams/chatcmpl-", 0) == 0);
    CHECK(url.find('?') == std::string::npos);
    // The last id the client saw, and the content it had.
    std::string last_id, content;
    {
        std::istringstream in(got.substr(got.find("\r\n\r\n")));
        std::string line;
        int n = 0;
        while (std::getline(in, line) && n < 3) {
            if (!line.empty() && line.back() == '\r') line.pop_back();
            if (line.rfind("id: ", 0) == 0) last_id = line.substr(4);
            if (line.rfind("data: ", 0) == 0) {
                ++n;
                content += choice_content(json::parse(line.substr(6)).as_object(), "delta");
            }
        }
    }
    REQUIRE(!last_id.empty());
    check_error(http_get(port, url, {{"Authorization", "Bearer secret-key-2"}, {"Last-Event-ID", last_id}}), 403, "forbidden",
                "belongs");
    http_reply rest = http_get(port, url, {{"Authorization", "Bearer secret-key-1"}, {"Last-Event-ID", last_id}}, 120s);
    REQUIRE_MESSAGE(rest.status == 200, describe(rest));
    const std::vector<std::string> events = sse_data(rest.body);
    REQUIRE(!events.empty());
    CHECK(events.back() == "[DONE]");
    for (size_t i = 0; i + 1 < events.size(); ++i) content += choice_content(json::parse(events[i]).as_object(), "delta");
    CHECK(content == answer);
    // Cancelling it now is answered, and says it had already ended.
    http_reply del = http_request(port, http::verb::delete_, url, {}, key1);
    CHECK(del.status == 200);
    CHECK(del.body.find("\"cancelled\":false") != std::string::npos);
}

TEST_CASE("http: a stream that waits (here behind another request) gets SSE ping comments before its first event") {
    server_config cfg = server_fixture::config();
    cfg.sse_ping_s = 1;
    cfg.runtime.max_seqs = 1; // one sequence at a time: the stream waits for the first request
    server_fixture fx(cfg);
    const uint16_t port = fx.port();
    auto post = [&](http_conn &c, const std::string &body) {
        return c.send_raw("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    };
    // greedy, this prompt runs to max_tokens (see above): many seconds
    http_conn a;
    REQUIRE(a.connect(port));
    REQUIRE(post(a, chat_body("Write a very long story about a dragon who learns to fly.", 1000, {{"cache", false}})));
    REQUIRE(fx.wait_metrics([](const auto &s) { return s.running == 1; }, 30s));
    http_conn b;
    REQUIRE(b.connect(port));
    REQUIRE(post(b, chat_body("Say hi.", 4, {{"cache", false}, {"stream", true}})));
    std::string got;
    const auto t0 = std::chrono::steady_clock::now();
    while (got.find(": ping") == std::string::npos) {
        std::string piece = b.read_some();
        REQUIRE_MESSAGE(!piece.empty(), "the stream ended: " << b.error() << "; got " << got);
        got += piece;
        REQUIRE_MESSAGE(got.find("data:") == std::string::npos, "an event came before any ping: " << got);
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(s >= 0.9);
    CHECK(got.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
    CHECK(got.find("Content-Type: text/event-stream") != std::string::npos);
    a.drop(); // cancels the first request (not a stream): the second then runs
    std::string rest;
    auto ended = [&] { // [DONE], then the chunked body's last chunk
        const size_t done = rest.find("[DONE]");
        return done != std::string::npos && rest.find("\r\n0\r\n\r\n", done) != std::string::npos;
    };
    while (!ended()) {
        std::string piece = b.read_some();
        REQUIRE_MESSAGE(!piece.empty(), "the stream ended without [DONE]: " << b.error() << "; got " << got + rest);
        rest += piece;
    }
    // The ping is a well-formed chunk: the whole response reads as HTTP, and ends with [DONE].
    const http_reply whole = parse_http_response(got + rest);
    CHECK_MESSAGE(whole.error.empty(), whole.error << "; got " << got + rest);
    CHECK(whole.status == 200);
    CHECK(whole.body.rfind(": ping\n\n", 0) == 0);
    const std::vector<std::string> events = sse_data(whole.body);
    REQUIRE(!events.empty());
    CHECK(events.back() == "[DONE]");
}
