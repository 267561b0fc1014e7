#include "net/openai.h"

#include <boost/json.hpp>

#include <algorithm>

#include "engine/json_grammar.h"
#include "net/cache_debug.h"
#include "net/policy_json.h"
#include "net/openai_logprobs.h"
#include "net/openai_tools.h"
#include "net/rag_api.h"

namespace actorserve {

namespace {

request_problem refused(std::string_view key, std::string why) {
    return {errc::invalid_request, std::string(key) + " " + std::move(why), std::string(key)};
}

// An extension: an answer the caches gave says so, with the question's similarity to the one
// it was cached for (clients that do not know the fields ignore them).
void add_cached(boost::json::object &o, const stream_event &done) {
    if (auto dbg = render_cache_debug(done)) o["cache_debug"] = std::move(*dbg);
    if (done.cached.empty()) return;
    o["cached"] = done.cached;
    o["similarity"] = done.similarity;
}

// An extension too: with rag, the passages the answer was given, as its [n] citations number
// them; and what the dynamic temperature chose.
void add_sources(boost::json::object &o, const stream_event &done) {
    if (!done.sources.empty()) o["sources"] = render_rag_sources(done.sources);
    if (auto p = render_policy(done)) o["policy"] = std::move(*p);
    if (auto g = render_guard(done)) o["guard"] = std::move(*g);
}

boost::json::object usage_json(const chat_usage &u) {
    return {{"prompt_tokens", u.prompt_tokens},
            {"completion_tokens", u.completion_tokens},
            {"total_tokens", u.prompt_tokens + u.completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}


// response_format: text, json_object (any JSON object) or json_schema (the schema's subset of
// engine/json_grammar.h), each answer constrained to it token by token.
std::optional<request_problem> read_response_format(simdjson::dom::element v, chat_request &req) {
    simdjson::dom::object o;
    if (v.get_object().get(o)) return refused("response_format", "must be an object");
    std::string_view type;
    if (o["type"].get_string().get(type))
        return refused("response_format", "needs type: text, json_object or json_schema");
    if (type == "text") return std::nullopt;
    if (type == "json_object") {
        static const std::shared_ptr<const json_grammar> any_object = any_json_object();
        req.grammar = any_object;
        return std::nullopt;
    }
    if (type != "json_schema")
        return refused("response_format", "type must be text, json_object or json_schema, got '" + std::string(type.substr(0, 32)) + "'");
    simdjson::dom::object js;
    simdjson::dom::element schema;
    if (o["json_schema"].get_object().get(js) || js["schema"].get(schema))
        return refused("response_format", "json_schema needs an object json_schema with a schema");
    schema_result c = compile_json_schema(simdjson::minify(schema));
    if (!c.grammar)
        return request_problem{errc::invalid_request, "response_format.json_schema.schema: " + c.error, c.keyword};
    req.grammar = std::move(c.grammar);
    return std::nullopt;
}

// A tool call's id: the response's and the choice's, so that a resumed stream repeats it.
std::string call_id(const std::string &response_id, int choice) {
    const size_t dash = response_id.find('-');
    return "call_" + response_id.substr(dash == std::string::npos ? 0 : dash + 1, 24) + "_" + std::to_string(choice);
}

} // namespace

std::variant<openai_request, request_problem> parse_openai(simdjson::dom::parser &parser, std::string_view body,
                                                           bool chat, const server_config &cfg,
                                                           const std::string &model_name) {
    openai_request r;
    r.chat = chat;
    r.req.max_tokens = cfg.max_tokens_default;
    r.req.raw = !chat;
    simdjson::dom::object o;
    if (auto p = parse_object(parser, body, o)) return *p;
    bool has_input = false;
    bool want_logprobs = false, has_top = false;
    tool_request tools;
    int64_t top_logprobs = 0;
    for (auto field : o) {
        std::string_view key = field.key;
        simdjson::dom::element v = field.value;
        bool handled = false;
        if (auto p = read_generation_field(key, v, r.req, handled)) return *p;
        if (handled) continue;
        if (key == "model") {
            if (auto p = get_string(v, key, r.model)) return *p;
        } else if (chat && key == "messages") {
            if (auto p = read_messages(v, key, r.req.messages)) return *p;
            has_input = true;
        } else if (!chat && key == "prompt") {
            std::string prompt;
            if (v.is_string()) {
                get_string(v, key, prompt);
            } else {
                simdjson::dom::array a;
                if (v.get_array().get(a) || a.size() != 1 || get_string(a.at(0).value_unsafe(), key, prompt))
                    return refused(key, "must be a string (or an array of exactly one string)");
            }
            r.req.messages.push_back({"user", std::move(prompt)});
            has_input = true;
        } else if (key == "stream") {
            if (v.is_null()) continue;
            if (auto p = get_bool(v, key, r.stream)) return *p;
        } else if (key == "stream_options") {
            if (v.is_null()) continue;
            simdjson::dom::object so;
            if (v.get_object().get(so)) return refused(key, "must be an object");
            for (auto f : so) {
                if (f.key != "include_usage") return refused("stream_options." + std::string(f.key), "is not supported");
                if (auto p = get_bool(f.value, "stream_options.include_usage", r.include_usage)) return *p;
            }
        } else if (key == "n") {
            int64_t n = 1;
            if (!v.is_null()) {
                if (auto p = get_int(v, key, n)) return *p;
                if (n < 1 || n > kMaxChoices)
                    return refused(key, "must be in [1, " + std::to_string(kMaxChoices) + "], got " + std::to_string(n));
                r.n = static_cast<int>(n);
            }
        } else if (key == "logprobs") {
            if (v.is_null()) continue;
            if (chat) {
                if (auto p = get_bool(v, key, want_logprobs)) return *p;
            } else {
                int64_t n = 0;
                if (v.is_bool()) { // what some clients send; true means no alternatives
                    want_logprobs = v.get_bool().value_unsafe();
                    continue;
                }
                if (auto p = get_int(v, key, n)) return *p;
                if (n < 0 || n > 20) return refused(key, "must be in [0, 20], got " + std::to_string(n));
                want_logprobs = true;
                top_logprobs = n;
            }
        } else if (chat && key == "top_logprobs") {
            if (v.is_null()) continue;
            if (auto p = get_int(v, key, top_logprobs)) return *p;
            if (top_logprobs < 0 || top_logprobs > 20)
                return refused(key, "must be in [0, 20], got " + std::to_string(top_logprobs));
            has_top = true;
        } else if (key == "response_format") {
            if (v.is_null()) continue;
            if (auto p = read_response_format(v, r.req)) return *p;
        } else if (chat && key == "tools") {
            if (auto p = read_tools(v, tools)) return *p;
        } else if (chat && key == "tool_choice") {
            if (auto p = read_tool_choice(v, tools)) return *p;
        } else if (key == "tools" || key == "tool_choice" || key == "functions" || key == "logit_bias" || key == "echo" ||
                   key == "suffix" || key == "best_of") {
            // Refused rather than ignored: the client would get something other than it asked for.
            bool off = v.is_null() || (v.is_bool() && !v.get_bool().value_unsafe());
            if (!off) return refused(key, "is not supported by this server");
        } else if (key == "frequency_penalty" || key == "presence_penalty") {
            double d = 0;
            if (!v.is_null()) {
                if (auto p = get_number(v, key, d)) return *p;
                if (d != 0) return refused(key, "is not supported (use repeat_penalty); only 0 is accepted");
            }
        }
        // Other fields (user, metadata, store, ...) change nothing here and are ignored, as
        // OpenAI clients send them freely.
    }
    if (!has_input) return refused(chat ? "messages" : "prompt", "is missing");
    if (has_top && !want_logprobs) return refused("top_logprobs", "needs logprobs: true");
    if (want_logprobs) r.req.logprobs = static_cast<int>(top_logprobs);
    auto tool_call = apply_tools(parser, tools, r.req); // note: reuses the parser; o is not read after this
    if (auto *p = std::get_if<request_problem>(&tool_call)) return *p;
    r.tool_call = std::get<bool>(tool_call);
    if (auto p = check_request(r.req, cfg.runtime.limits())) return *p;
    if (!r.model.empty() && r.model != model_name)
        return request_problem{errc::not_found, "model '" + r.model.substr(0, 128) + "' does not exist; this server serves '" + model_name + "'",
                               "model"};
    if (!r.stream && r.include_usage) r.include_usage = false;
    // Choices of one request are drawn apart (seed + i): one cached answer would be all of them.
    if (r.n > 1) r.req.cache = false;
    return r;
}

std::string render_openai_response(const openai_request &r, const std::string &id, int64_t created,
                                   const std::string &model, const stream_event &done,
                                   const std::vector<stream_event> &ends) {
    boost::json::array choices;
    for (const stream_event &end : ends) {
        boost::json::object choice{{"index", end.choice}, {"finish_reason", openai_name(end.finish_reason)}, {"logprobs", nullptr}};
        if (r.req.logprobs >= 0)
            choice["logprobs"] = r.chat ? render_chat_logprobs(end.logprobs) : render_completion_logprobs(end.logprobs, 0);
        if (r.chat) choice["message"] = {{"role", "assistant"}, {"content", end.text}};
        else choice["text"] = end.text;
        if (auto calls = r.tool_call ? tool_calls_json(end.text, call_id(id, end.choice)) : std::nullopt) {
            choice["message"] = {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", boost::json::parse(*calls)}};
            choice["finish_reason"] = "tool_calls";
        }
        choices.emplace_back(std::move(choice));
    }
    std::sort(choices.begin(), choices.end(), [](const boost::json::value &a, const boost::json::value &b) {
        return a.at("index").as_int64() < b.at("index").as_int64();
    });
    boost::json::object o{{"id", id},
                          {"object", r.chat ? "chat.completion" : "text_completion"},
                          {"created", created},
                          {"model", model},
                          {"choices", std::move(choices)},
                          {"usage", usage_json(done.usage)}};
    add_cached(o, done);
    add_sources(o, done);
    return boost::json::serialize(o);
}

std::string render_openai_chunk(const openai_request &r, const std::string &id, int64_t created,
                                const std::string &model, const stream_event &e, bool first) {
    boost::json::object choice{{"index", e.choice}, {"logprobs", nullptr}};
    boost::json::object delta;
    if (r.chat && first) delta["role"] = "assistant";
    const bool ends_choice = (e.kind == stream_event::token && e.choice_end) || e.kind == stream_event::done;
    std::optional<std::string> calls;
    if (r.tool_call && ends_choice) calls = tool_calls_json(e.text, call_id(id, e.choice));
    if (calls) { // the call comes whole, with its choice's end
        boost::json::array tc = boost::json::parse(*calls).as_array();
        tc[0].as_object()["index"] = 0;
        delta["content"] = nullptr;
        delta["tool_calls"] = std::move(tc);
        choice["finish_reason"] = "tool_calls";
    } else if (e.kind == stream_event::token && e.choice_end) { // n > 1: this choice's finish chunk
        if (!r.chat) choice["text"] = "";
        if (r.tool_call) delta["content"] = e.text; // not a whole call (cut): its text, held back till now
        choice["finish_reason"] = openai_name(e.finish_reason);
    } else if (e.kind == stream_event::token) {
        if (r.chat) delta["content"] = e.text;
        else choice["text"] = e.text;
        choice["finish_reason"] = nullptr;
        if (r.req.logprobs >= 0)
            choice["logprobs"] = r.chat ? render_chat_logprobs(e.logprobs) : render_completion_logprobs(e.logprobs, e.text_offset);
    } else if (e.kind == stream_event::done) {
        if (!r.chat) choice["text"] = "";
        if (r.tool_call) delta["content"] = e.text; // not a whole call (cut): its text, held back till now
        choice["finish_reason"] = openai_name(e.finish_reason);
    } else {
        if (r.chat) delta["content"] = "";
        else choice["text"] = "";
        choice["finish_reason"] = nullptr;
    }
    if (r.chat) choice["delta"] = std::move(delta);
    boost::json::object o{{"id", id},
                          {"object", r.chat ? "chat.completion.chunk" : "text_completion"},
                          {"created", created},
                          {"model", model},
                          {"choices", boost::json::array{std::move(choice)}}};
    if (r.include_usage) o["usage"] = nullptr;
    if (e.kind == stream_event::done) {
        add_cached(o, e);
        add_sources(o, e);
    }
    return boost::json::serialize(o);
}

std::string render_openai_usage_chunk(const openai_request &r, const std::string &id, int64_t created,
                                      const std::string &model, const chat_usage &u) {
    boost::json::object o{{"id", id},
                          {"object", r.chat ? "chat.completion.chunk" : "text_completion"},
                          {"created", created},
                          {"model", model},
                          {"choices", boost::json::array{}},
                          {"usage", usage_json(u)}};
    return boost::json::serialize(o);
}

std::string render_openai_error(errc code, std::string_view message, std::string_view param) {
    boost::json::object err{{"message", message}, {"type", info(code).type}, {"code", name(code)}};
    err["param"] = param.empty() ? boost::json::value(nullptr) : boost::json::value(param);
    return boost::json::serialize(boost::json::object{{"error", std::move(err)}});
}

std::string render_models(const std::string &model, int64_t created) {
    boost::json::object m{{"id", model}, {"object", "model"}, {"created", created}, {"owned_by", "actorserve"}};
    return boost::json::serialize(boost::json::object{{"object", "list"}, {"data", boost::json::array{std::move(m)}}});
}

} // namespace actorserve
