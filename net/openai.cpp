#include "net/openai.h"

#include <boost/json.hpp>

#include "net/cache_debug.h"
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

// An extension too: with rag, the passages the answer was given, as its [n] citations number them.
void add_sources(boost::json::object &o, const stream_event &done) {
    if (!done.sources.empty()) o["sources"] = render_rag_sources(done.sources);
}

boost::json::object usage_json(const chat_usage &u) {
    return {{"prompt_tokens", u.prompt_tokens},
            {"completion_tokens", u.completion_tokens},
            {"total_tokens", u.prompt_tokens + u.completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
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
                if (n != 1) return refused(key, "must be 1 (one choice per request), got " + std::to_string(n));
            }
        } else if (key == "logprobs" || key == "top_logprobs" || key == "tools" || key == "tool_choice" ||
                   key == "functions" || key == "response_format" || key == "logit_bias" || key == "echo" ||
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
    if (auto p = check_request(r.req, cfg.runtime.limits())) return *p;
    if (!r.model.empty() && r.model != model_name)
        return request_problem{errc::not_found, "model '" + r.model.substr(0, 128) + "' does not exist; this server serves '" + model_name + "'",
                               "model"};
    if (!r.stream && r.include_usage) r.include_usage = false;
    return r;
}

std::string render_openai_response(const openai_request &r, const std::string &id, int64_t created,
                                   const std::string &model, const stream_event &done) {
    boost::json::object choice{{"index", 0}, {"finish_reason", openai_name(done.finish_reason)}, {"logprobs", nullptr}};
    if (r.chat) choice["message"] = {{"role", "assistant"}, {"content", done.text}};
    else choice["text"] = done.text;
    boost::json::object o{{"id", id},
                          {"object", r.chat ? "chat.completion" : "text_completion"},
                          {"created", created},
                          {"model", model},
                          {"choices", boost::json::array{std::move(choice)}},
                          {"usage", usage_json(done.usage)}};
    add_cached(o, done);
    add_sources(o, done);
    return boost::json::serialize(o);
}

std::string render_openai_chunk(const openai_request &r, const std::string &id, int64_t created,
                                const std::string &model, const stream_event &e, bool first) {
    boost::json::object choice{{"index", 0}, {"logprobs", nullptr}};
    boost::json::object delta;
    if (r.chat && first) delta["role"] = "assistant";
    if (e.kind == stream_event::token) {
        if (r.chat) delta["content"] = e.text;
        else choice["text"] = e.text;
        choice["finish_reason"] = nullptr;
    } else if (e.kind == stream_event::done) {
        if (!r.chat) choice["text"] = "";
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
