#include "net/responses_api.h"

#include <boost/json.hpp>

#include "net/json_request.h"

namespace actorserve {
namespace {

namespace json = boost::json;

request_problem refused(std::string key, std::string why) { return {errc::invalid_request, key + " " + why, key}; }

// One input item: a message {role, content} (type "message" or none), its content a string or
// parts of input_text / output_text.
std::optional<request_problem> read_item(simdjson::dom::element e, const std::string &where, chat_message &m) {
    simdjson::dom::object o;
    if (e.get_object().get(o)) return refused(where, "must be a message object {role, content}");
    bool has_role = false, has_content = false;
    for (auto f : o) {
        const std::string_view k = f.key;
        if (k == "type") {
            std::string_view t;
            if (f.value.get_string().get(t) || t != "message")
                return refused(where + ".type", "must be \"message\" (only text messages are supported)");
        } else if (k == "role") {
            if (auto p = get_string(f.value, where + ".role", m.role)) return p;
            if (m.role == "developer") m.role = "system";
            if (m.role != "user" && m.role != "assistant" && m.role != "system")
                return refused(where + ".role", "must be user, assistant, system or developer, got '" + m.role.substr(0, 32) + "'");
            has_role = true;
        } else if (k == "content") {
            if (f.value.is_string()) {
                get_string(f.value, "", m.content);
            } else {
                simdjson::dom::array parts;
                if (f.value.get_array().get(parts)) return refused(where + ".content", "must be a string or an array of text parts");
                for (simdjson::dom::element part : parts) {
                    std::string_view type, text;
                    if (part["type"].get_string().get(type) || (type != "input_text" && type != "output_text") ||
                        part["text"].get_string().get(text))
                        return refused(where + ".content", "may hold only input_text and output_text parts");
                    m.content.append(text);
                }
            }
            has_content = true;
        } else if (k != "id" && k != "status") {
            return refused(where + "." + std::string(k.substr(0, 64)), "is not supported");
        }
    }
    if (!has_role) return refused(where + ".role", "is missing");
    if (!has_content) return refused(where + ".content", "is missing");
    return std::nullopt;
}

std::string item_id(const response_view &v) { return "msg_" + v.id.substr(5); }

json::object item_json(const response_view &v, const char *status) {
    json::array content;
    content.push_back(json::object{{"type", "output_text"}, {"text", v.text}, {"annotations", json::array{}}, {"logprobs", json::array{}}});
    return {{"type", "message"}, {"id", item_id(v)}, {"status", status}, {"role", "assistant"}, {"content", std::move(content)}};
}

json::object response_json(const response_view &v) {
    json::array output;
    const bool finished = v.status == "completed" || v.status == "incomplete" || v.status == "cancelled";
    if (finished || !v.text.empty()) output.push_back(item_json(v, v.status == "completed" ? "completed" : finished ? "incomplete" : "in_progress"));
    json::object o{{"id", v.id},
                   {"object", "response"},
                   {"created_at", v.created_at},
                   {"status", v.status},
                   {"background", v.background},
                   {"error", nullptr},
                   {"incomplete_details", nullptr},
                   {"instructions", nullptr},
                   {"max_output_tokens", v.max_output_tokens},
                   {"model", v.model},
                   {"output", std::move(output)},
                   {"parallel_tool_calls", false},
                   {"temperature", v.temperature},
                   {"top_p", v.top_p},
                   {"tool_choice", "none"},
                   {"tools", json::array{}},
                   {"text", {{"format", {{"type", "text"}}}}},
                   {"truncation", "disabled"},
                   {"usage", nullptr},
                   {"metadata", json::object{}},
                   {"store", true}};
    if (v.status == "failed") o["error"] = json::object{{"code", std::string(name(v.error_code))}, {"message", v.error}};
    if (v.status == "incomplete") o["incomplete_details"] = json::object{{"reason", v.incomplete_reason}};
    if (v.usage)
        o["usage"] = json::object{{"input_tokens", v.usage->prompt_tokens},
                                  {"input_tokens_details", {{"cached_tokens", v.usage->cached_tokens}}},
                                  {"output_tokens", v.usage->completion_tokens},
                                  {"output_tokens_details", {{"reasoning_tokens", 0}}},
                                  {"total_tokens", v.usage->prompt_tokens + v.usage->completion_tokens}};
    return o;
}

std::string event(const char *type, size_t seq, json::object o) {
    o["type"] = type;
    o["sequence_number"] = seq;
    return json::serialize(o);
}

} // namespace

std::variant<responses_request, request_problem> parse_responses(simdjson::dom::parser &parser, std::string_view body,
                                                                  const server_config &cfg, const std::string &model_name) {
    responses_request r;
    r.req.max_tokens = cfg.max_tokens_default;
    simdjson::dom::object o;
    if (auto p = parse_object(parser, body, o)) return *p;
    bool has_input = false, store = true;
    std::vector<chat_message> input;
    for (auto field : o) {
        const std::string_view key = field.key;
        simdjson::dom::element v = field.value;
        if (key == "max_output_tokens") {
            if (v.is_null()) continue;
            bool handled = false;
            if (auto p = read_generation_field("max_tokens", v, r.req, handled)) {
                p->message.replace(0, 10, "max_output_tokens");
                p->param = "max_output_tokens";
                return *p;
            }
            continue;
        }
        if (key == "temperature" || key == "top_p" || key == "seed" || key == "top_k" || key == "min_p" ||
            key == "repeat_penalty" || key == "cache" || key == "stop") {
            bool handled = false;
            if (auto p = read_generation_field(key, v, r.req, handled)) return *p;
            continue;
        }
        if (key == "model") {
            if (auto p = get_string(v, key, r.model)) return *p;
        } else if (key == "input") {
            has_input = true;
            if (v.is_string()) {
                chat_message m{"user", {}};
                get_string(v, key, m.content);
                input.push_back(std::move(m));
            } else {
                simdjson::dom::array a;
                if (v.get_array().get(a)) return refused("input", "must be a string or an array of messages");
                size_t i = 0;
                for (simdjson::dom::element e : a) {
                    chat_message m;
                    if (auto p = read_item(e, "input[" + std::to_string(i++) + "]", m)) return *p;
                    input.push_back(std::move(m));
                }
                if (input.empty()) return refused("input", "is an empty array");
            }
        } else if (key == "instructions") {
            if (v.is_null()) continue;
            if (auto p = get_string(v, key, r.instructions)) return *p;
        } else if (key == "stream") {
            if (v.is_null()) continue;
            if (auto p = get_bool(v, key, r.stream)) return *p;
        } else if (key == "background") {
            if (v.is_null()) continue;
            if (auto p = get_bool(v, key, r.background)) return *p;
        } else if (key == "store") {
            if (v.is_null()) continue;
            if (auto p = get_bool(v, key, store)) return *p;
        } else if (key == "text") {
            simdjson::dom::object t;
            std::string_view type;
            if (v.is_null()) continue;
            if (v.get_object().get(t)) return refused("text", "must be an object");
            for (auto f : t) {
                if (f.key != "format" || f.value["type"].get_string().get(type) || type != "text")
                    return refused("text." + std::string(f.key.substr(0, 32)), "is not supported (only format {\"type\": \"text\"})");
            }
        } else if (key == "tools" || key == "tool_choice" || key == "previous_response_id" || key == "conversation" ||
                   key == "reasoning" || key == "prompt") {
            bool off = v.is_null() || (v.is_array() && simdjson::dom::array(v).size() == 0) ||
                       (key == "tool_choice" && v.is_string() && std::string_view(v) == "none");
            if (!off) return refused(std::string(key), "is not supported by this server");
        }
        // Other fields (metadata, user, include, truncation, parallel_tool_calls, service_tier,
        // ...) change nothing here and are ignored.
    }
    if (!has_input) return refused("input", "is missing");
    if (r.background && !store) return refused("store", "must be true for a background response (it is retrieved later)");
    if (!r.instructions.empty()) r.req.messages.push_back({"system", r.instructions});
    for (chat_message &m : input) r.req.messages.push_back(std::move(m));
    if (auto p = check_request(r.req, cfg.runtime.limits())) return *p;
    if (!r.model.empty() && r.model != model_name)
        return request_problem{errc::not_found,
                               "model '" + r.model.substr(0, 128) + "' does not exist; this server serves '" + model_name + "'",
                               "model"};
    return r;
}

void advance(response_view &v, const stream_event &e) {
    if (v.status == "queued") v.status = "in_progress";
    if (e.kind == stream_event::token) v.text += e.text;
    if (e.kind == stream_event::done) {
        v.text = e.text;
        v.usage = e.usage;
        switch (e.finish_reason) {
        case finish_reason::stop: v.status = "completed"; break;
        case finish_reason::length:
        case finish_reason::context:
            v.status = "incomplete";
            v.incomplete_reason = "max_output_tokens";
            break;
        case finish_reason::cancelled: v.status = "cancelled"; break;
        }
    }
    if (e.kind == stream_event::error) {
        v.status = "failed";
        v.error_code = e.code;
        v.error = e.message;
    }
}

response_view view_of(const std::vector<stream_event> &events, response_view v) {
    v.text.clear();
    v.status = "in_progress";
    for (const stream_event &e : events) advance(v, e);
    return v;
}

std::string render_response(const response_view &v) { return json::serialize(response_json(v)); }

size_t first_sequence(size_t index) { return index == 0 ? 0 : 3 + index; }

size_t sequences_of(const stream_event &e) {
    switch (e.kind) {
    case stream_event::start: return 4;
    case stream_event::token: return 1;
    case stream_event::done: return 4;
    case stream_event::error: return 1;
    }
    return 1;
}

std::vector<std::pair<std::string, std::string>> response_events(const stream_event &e, size_t index,
                                                                  const response_view &v) {
    std::vector<std::pair<std::string, std::string>> out;
    size_t seq = first_sequence(index);
    auto add = [&](const char *type, json::object o) { out.emplace_back(type, event(type, seq++, std::move(o))); };
    const json::object at{{"item_id", item_id(v)}, {"output_index", 0}, {"content_index", 0}};
    auto with = [&](json::object extra) {
        json::object o = at;
        for (auto &kv : extra) o[kv.key()] = kv.value();
        return o;
    };
    switch (e.kind) {
    case stream_event::start:
        add("response.created", {{"response", response_json(v)}});
        add("response.in_progress", {{"response", response_json(v)}});
        add("response.output_item.added", {{"output_index", 0}, {"item", [&] {
                                                json::object item = item_json(v, "in_progress");
                                                item["content"] = json::array{};
                                                return item;
                                            }()}});
        add("response.content_part.added",
            with({{"part", {{"type", "output_text"}, {"text", ""}, {"annotations", json::array{}}}}}));
        break;
    case stream_event::token: add("response.output_text.delta", with({{"delta", e.text}, {"logprobs", json::array{}}})); break;
    case stream_event::done: {
        add("response.output_text.done", with({{"text", v.text}, {"logprobs", json::array{}}}));
        add("response.content_part.done",
            with({{"part", {{"type", "output_text"}, {"text", v.text}, {"annotations", json::array{}}}}}));
        add("response.output_item.done", {{"output_index", 0}, {"item", item_json(v, v.status == "completed" ? "completed" : "incomplete")}});
        add(v.status == "completed" ? "response.completed" : "response.incomplete", {{"response", response_json(v)}});
        break;
    }
    case stream_event::error: add("response.failed", {{"response", response_json(v)}}); break;
    }
    return out;
}

} // namespace actorserve
