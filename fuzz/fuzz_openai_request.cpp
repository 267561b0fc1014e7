// libFuzzer target: the OpenAI request parsers (net/openai.h, net/responses_api.h) on any bytes:
// the same body as /v1/chat/completions, /v1/completions and /v1/responses. Each either gives a
// problem with a message, or a request whose message texts are well-formed UTF-8 (what the
// tokenizer and the chat template are promised); anything else aborts.
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>

#include "engine/utf8.h"
#include "net/config.h"
#include "net/openai.h"
#include "net/responses_api.h"

namespace {

[[noreturn]] void die(const char *what) {
    std::fprintf(stderr, "fuzz_openai_request: %s\n", what);
    std::abort();
}

void check_request(const actorserve::chat_request &req) {
    for (const auto &m : req.messages)
        if (!actorserve::is_valid_utf8(m.content) || !actorserve::is_valid_utf8(m.role)) die("a message is not UTF-8");
    for (const auto &s : req.stop)
        if (!actorserve::is_valid_utf8(s)) die("a stop string is not UTF-8");
}

template <class T>
void check_problem(const std::variant<T, actorserve::request_problem> &r) {
    if (const auto *p = std::get_if<actorserve::request_problem>(&r))
        if (p->message.empty()) die("a problem without a message");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const actorserve::server_config cfg;
    static simdjson::dom::parser parser;
    const std::string_view body(reinterpret_cast<const char *>(data), size);
    for (bool chat : {true, false}) {
        auto r = actorserve::parse_openai(parser, body, chat, cfg, "fuzz-model");
        check_problem(r);
        if (const auto *req = std::get_if<actorserve::openai_request>(&r)) check_request(req->req);
    }
    auto rr = actorserve::parse_responses(parser, body, cfg, "fuzz-model");
    check_problem(rr);
    if (const auto *req = std::get_if<actorserve::responses_request>(&rr)) check_request(req->req);
    return 0;
}
