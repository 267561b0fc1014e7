// libFuzzer target: the WebSocket chat protocol's client messages (net/ws_protocol.h) on any
// bytes, as a text frame's payload. Each gives a problem with a message, or a chat/cancel/resume
// whose strings are well-formed UTF-8; anything else aborts.
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <variant>

#include "engine/utf8.h"
#include "net/config.h"
#include "net/ws_protocol.h"

namespace {

[[noreturn]] void die(const char *what) {
    std::fprintf(stderr, "fuzz_ws_message: %s\n", what);
    std::abort();
}

void utf8(std::string_view s) {
    if (!actorserve::is_valid_utf8(s)) die("a parsed string is not UTF-8");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const actorserve::server_config cfg;
    static simdjson::dom::parser parser;
    auto r = actorserve::parse_ws_message(parser, std::string_view(reinterpret_cast<const char *>(data), size), cfg);
    if (const auto *p = std::get_if<actorserve::request_problem>(&r)) {
        if (p->message.empty()) die("a problem without a message");
        return 0;
    }
    const auto &m = std::get<actorserve::ws_message>(r);
    if (const auto *c = std::get_if<actorserve::ws_chat>(&m)) {
        for (const auto &msg : c->req.messages) utf8(msg.content);
        if (c->session_id) utf8(*c->session_id);
    } else if (const auto *x = std::get_if<actorserve::ws_cancel>(&m)) {
        utf8(x->request_id);
    } else if (const auto *s = std::get_if<actorserve::ws_resume>(&m)) {
        utf8(s->request_id);
    }
    return 0;
}
