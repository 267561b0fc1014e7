#include "net/ws_protocol.h"

#include <boost/json.hpp>

#include "net/cache_debug.h"
#include "net/policy_json.h"
#include "net/rag_api.h"

namespace actorserve {

namespace {

request_problem unknown_field(std::string_view type, std::string_view key) {
    return {errc::invalid_request, "unknown field '" + std::string(key.substr(0, 64)) + "' in a " + std::string(type) + " message",
            std::string(key.substr(0, 64))};
}

std::variant<ws_message, request_problem> parse_chat(simdjson::dom::object o, const server_config &cfg) {
    ws_chat c;
    c.req.max_tokens = cfg.max_tokens_default;
    bool has_message = false, has_messages = false;
    for (auto field : o) {
        std::string_view key = field.key;
        if (key == "type") continue;
        if (key == "session_id") {
            if (field.value.is_null()) continue;
            std::string sid;
            if (auto p = get_string(field.value, key, sid)) return *p;
            c.session_id = std::move(sid);
        } else if (key == "resume_token") {
            std::string t;
            if (auto p = get_string(field.value, key, t)) return *p;
            c.resume_token = std::move(t);
        } else if (key == "message") {
            chat_message m{"user", {}};
            if (auto p = get_string(field.value, key, m.content)) return *p;
            c.req.messages.push_back(std::move(m));
            has_message = true;
        } else if (key == "messages") {
            if (auto p = read_messages(field.value, key, c.req.messages)) return *p;
            has_messages = true;
        } else if (key == "stream") {
            if (auto p = get_bool(field.value, key, c.stream)) return *p;
        } else {
            bool handled = false;
            if (auto p = read_generation_field(key, field.value, c.req, handled)) return *p;
            if (!handled) return unknown_field("chat", key);
        }
    }
    if (has_message && has_messages)
        return request_problem{errc::invalid_request, "give either message or messages, not both", "messages"};
    if (!has_message && !has_messages)
        return request_problem{errc::invalid_request, "a chat message needs message (a string) or messages (an array)", "message"};
    if (auto p = check_request(c.req, cfg.runtime.limits())) return *p;
    return ws_message{std::move(c)};
}

std::variant<ws_message, request_problem> parse_request_ref(simdjson::dom::object o, bool resume) {
    std::string request_id;
    std::optional<std::string> token;
    int64_t last = -1;
    bool has_id = false, has_last = false;
    const char *type = resume ? "resume" : "cancel";
    for (auto field : o) {
        std::string_view key = field.key;
        if (key == "type") continue;
        if (key == "request_id") {
            if (auto p = get_string(field.value, key, request_id)) return *p;
            has_id = true;
        } else if (key == "resume_token") {
            std::string t;
            if (auto p = get_string(field.value, key, t)) return *p;
            token = std::move(t);
        } else if (resume && key == "last_event_id") {
            if (auto p = get_int(field.value, key, last)) return *p;
            if (last < -1) return request_problem{errc::unprocessable, "last_event_id must be >= -1, got " + std::to_string(last), "last_event_id"};
            has_last = true;
        } else {
            return unknown_field(type, key);
        }
    }
    if (!has_id) return request_problem{errc::invalid_request, std::string("a ") + type + " message needs request_id", "request_id"};
    if (resume) {
        if (!has_last) return request_problem{errc::invalid_request, "a resume message needs last_event_id (-1: from the start)", "last_event_id"};
        return ws_message{ws_resume{std::move(request_id), last, std::move(token)}};
    }
    return ws_message{ws_cancel{std::move(request_id), std::move(token)}};
}

} // namespace

std::variant<ws_message, request_problem> parse_ws_message(simdjson::dom::parser &parser, std::string_view text,
                                                           const server_config &cfg) {
    simdjson::dom::object o;
    if (auto p = parse_object(parser, text, o)) return *p;
    simdjson::dom::element t;
    if (o["type"].get(t)) return request_problem{errc::invalid_request, "the message has no type (chat, cancel or resume)", "type"};
    std::string type;
    if (auto p = get_string(t, "type", type)) return *p;
    if (type == "chat") return parse_chat(o, cfg);
    if (type == "cancel") return parse_request_ref(o, false);
    if (type == "resume") return parse_request_ref(o, true);
    return request_problem{errc::invalid_request, "unknown message type '" + type.substr(0, 32) + "' (chat, cancel or resume)", "type"};
}

std::string render_event(const request_stream &s, size_t event_id, const stream_event &e) {
    boost::json::object o;
    switch (e.kind) {
    case stream_event::start: o["type"] = "start"; break;
    case stream_event::token: o["type"] = "token"; break;
    case stream_event::done: o["type"] = "done"; break;
    case stream_event::error: o["type"] = "error"; break;
    }
    o["request_id"] = s.request_id();
    o["event_id"] = event_id;
    switch (e.kind) {
    case stream_event::start:
        o["session_id"] = s.session_id();
        if (!s.resume_token().empty()) o["resume_token"] = s.resume_token();
        break;
    case stream_event::token: o["text"] = e.text; break;
    case stream_event::done: {
        o["finish_reason"] = name(e.finish_reason);
        o["text"] = e.text;
        o["usage"] = {{"prompt_tokens", e.usage.prompt_tokens},
                      {"cached_tokens", e.usage.cached_tokens},
                      {"completion_tokens", e.usage.completion_tokens}};
        const double gen_ms = e.total_ms - e.ttft_ms;
        const double tps = e.usage.completion_tokens > 1 && gen_ms > 0 ? (e.usage.completion_tokens - 1) * 1000.0 / gen_ms : 0.0;
        o["timings"] = {{"ttft_ms", e.ttft_ms}, {"total_ms", e.total_ms}, {"tokens_per_s", tps}};
        if (!e.cached.empty()) {
            o["cached"] = e.cached;
            o["similarity"] = e.similarity;
        }
        if (!e.sources.empty()) o["sources"] = render_rag_sources(e.sources);
        if (auto dbg = render_cache_debug(e)) o["cache_debug"] = std::move(*dbg);
        if (auto p = render_policy(e)) o["policy"] = std::move(*p);
        if (auto g = render_guard(e)) o["guard"] = std::move(*g);
        break;
    }
    case stream_event::error:
        o["code"] = name(e.code);
        o["message"] = e.message;
        if (e.retry_after_ms > 0) o["retry_after_ms"] = e.retry_after_ms;
        break;
    }
    return boost::json::serialize(o);
}

std::string render_error(errc code, std::string_view message, int retry_after_ms) {
    boost::json::object o;
    o["type"] = "error";
    o["code"] = name(code);
    o["message"] = message;
    if (retry_after_ms > 0) o["retry_after_ms"] = retry_after_ms;
    return boost::json::serialize(o);
}

} // namespace actorserve
