// One request check (include/actorserve/request_check.h): the same request gets the same answer
// over the WebSocket protocol, the OpenAI HTTP API and the C++ API (a session actor), against the
// real server and model in-process. These are the cases where the layers used to disagree
// (max_tokens 0 was unprocessable in one and invalid_request in another; min_p = 1 passed the
// network and failed in the engine; rag switched off was not_found here and invalid_request there).
#include "tests/support/test_client.h"

#include <functional>

#include "include/actorserve/messages.h"

using namespace testnet;
using namespace actorserve;

namespace {

struct check_case {
    const char *name;
    json::object fields;                        // added to a one-message chat, WebSocket and HTTP alike
    std::function<void(chat_request &)> set;    // the same for the C++ API
    std::string code;                           // the refusal's code; "" when it is served
};

json::array user_hi() { return json::array{json::object{{"role", "user"}, {"content", "Hi"}}}; }

// "served" or the error's code.
std::string over_ws(uint16_t port, const json::object &fields) {
    ws_client c;
    if (!c.connect(port)) return "no connection";
    json::object o{{"type", "chat"}, {"messages", user_hi()}, {"max_tokens", 2}, {"temperature", 0}};
    for (const auto &kv : fields) o[kv.key()] = kv.value();
    if (!c.send_json(o)) return "not sent";
    for (int i = 0; i < 64; ++i) {
        auto ev = c.read_json();
        if (!ev) return "no answer";
        const std::string type = str_of(*ev, "type");
        if (type == "error") return str_of(*ev, "code");
        if (type == "done") return "served";
    }
    return "no end";
}

std::string over_http(uint16_t port, const json::object &fields, int &status) {
    json::object o{{"messages", user_hi()}, {"max_tokens", 2}, {"temperature", 0}};
    for (const auto &kv : fields) o[kv.key()] = kv.value();
    const http_reply r = http_post(port, "/v1/chat/completions", json::serialize(o));
    status = r.status;
    if (r.status == 200) return "served";
    auto body = r.json_body();
    const json::object *e = body ? obj_of(*body, "error") : nullptr;
    return e ? str_of(*e, "code") : "no error body: " + r.body.substr(0, 200);
}

std::string over_api(server_fixture &fx, const std::function<void(chat_request &)> &set) {
    caf::scoped_actor self{fx.sys()};
    actorserve::chat_session s = fx.rt().open_session();
    chat_request r{1, {{"user", "Hi"}}, {}, 2, {}};
    r.sampling.temperature = 0.0f;
    set(r);
    self->send(s, std::move(r));
    std::string out = "no end";
    bool ended = false;
    while (!ended) {
        self->receive([&](chat_delta &) {},
                      [&](chat_done &) { out = "served"; ended = true; },
                      [&](chat_error &e) { out = std::string(name(e.code)); ended = true; },
                      caf::after(std::chrono::seconds(120)) >> [&] { out = "no answer"; ended = true; });
    }
    self->send_exit(s, caf::exit_reason::user_shutdown);
    return out;
}

} // namespace

TEST_CASE("request check: the same request gets the same code over WebSocket, OpenAI HTTP and the C++ API") {
    server_fixture fx; // server_fixture::config(): retrieval off, max_tokens_limit as configured
    const int limit = fx.cfg().runtime.max_tokens_limit;
    const std::vector<check_case> cases = {
        {"max_tokens 0", {{"max_tokens", 0}}, [](chat_request &r) { r.max_tokens = 0; }, "unprocessable"},
        {"max_tokens over the limit", {{"max_tokens", limit + 1}}, [=](chat_request &r) { r.max_tokens = limit + 1; },
         "unprocessable"},
        {"temperature 150", {{"temperature", 150}}, [](chat_request &r) { r.sampling.temperature = 150; }, "unprocessable"},
        {"min_p 1.5", {{"min_p", 1.5}}, [](chat_request &r) { r.sampling.min_p = 1.5f; }, "unprocessable"},
        {"min_p 1 (only the most likely tokens)", {{"min_p", 1}, {"temperature", 1}},
         [](chat_request &r) { r.sampling.min_p = 1.0f; r.sampling.temperature = 1.0f; }, ""},
        {"top_k 2000000", {{"top_k", 2000000}}, [](chat_request &r) { r.sampling.top_k = 2000000; }, "unprocessable"},
        {"repeat_penalty 11", {{"repeat_penalty", 11}}, [](chat_request &r) { r.sampling.repeat_penalty = 11; },
         "unprocessable"},
        {"17 stop strings", {{"stop", json::array(17, "x")}}, [](chat_request &r) { r.stop.assign(17, "x"); },
         "unprocessable"},
        {"an unknown role", {{"messages", json::array{json::object{{"role", "robot"}, {"content", "Hi"}}}}},
         [](chat_request &r) { r.messages = {{"robot", "Hi"}}; }, "invalid_request"},
        {"rag on a server without retrieval", {{"rag", true}}, [](chat_request &r) { r.rag = rag_options{}; },
         "not_found"},
    };
    for (const check_case &c : cases) {
        INFO("case: " << std::string(c.name));
        const std::string want = c.code.empty() ? "served" : c.code;
        int status = 0;
        CHECK(over_ws(fx.port(), c.fields) == want);
        CHECK(over_http(fx.port(), c.fields, status) == want);
        CHECK(over_api(fx, c.set) == want);
        if (!c.code.empty()) {
            // the HTTP status comes from the code's one table (include/actorserve/errc.h)
            for (int e = 1; e < 64; ++e)
                if (name(static_cast<errc>(e)) == c.code) CHECK(status == info(static_cast<errc>(e)).http_status);
        }
    }
}

TEST_CASE("finish reasons: one enum, spelled at the edges") {
    for (finish_reason f : {finish_reason::stop, finish_reason::length, finish_reason::context, finish_reason::cancelled})
        CHECK(parse_finish_reason(name(f)) == f);
    CHECK(openai_name(finish_reason::context) == "length"); // OpenAI has no word for a full context
    CHECK(openai_name(finish_reason::stop) == "stop");
    CHECK_FALSE(parse_finish_reason("rejected").has_value());
}
