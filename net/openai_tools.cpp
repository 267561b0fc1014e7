#include "net/openai_tools.h"

#include <boost/json.hpp>

#include "engine/json_grammar.h"

namespace actorserve {

namespace {

constexpr size_t kMaxTools = 64;

request_problem refused(std::string param, std::string why) {
    return {errc::invalid_request, param + " " + std::move(why), param};
}

} // namespace

std::optional<request_problem> read_tools(simdjson::dom::element v, tool_request &t) {
    if (v.is_null()) return std::nullopt;
    simdjson::dom::array a;
    if (v.get_array().get(a)) return refused("tools", "must be an array of {\"type\": \"function\", \"function\": {...}}");
    if (a.size() > kMaxTools) return refused("tools", "holds " + std::to_string(a.size()) + " tools (at most 64)");
    t.present = a.size() > 0;
    t.tools_json = simdjson::minify(v);
    return std::nullopt;
}

std::optional<request_problem> read_tool_choice(simdjson::dom::element v, tool_request &t) {
    if (v.is_null()) return std::nullopt;
    std::string_view s;
    if (!v.get_string().get(s)) {
        if (s != "none" && s != "auto" && s != "required")
            return refused("tool_choice", "must be none, auto, required or {\"type\": \"function\", \"function\": {\"name\": ...}}");
        t.choice = std::string(s);
        return std::nullopt;
    }
    std::string_view name;
    if (v["function"]["name"].get_string().get(name) || name.empty())
        return refused("tool_choice", "must be none, auto, required or {\"type\": \"function\", \"function\": {\"name\": ...}}");
    t.choice = "function:" + std::string(name);
    return std::nullopt;
}

std::variant<bool, request_problem> apply_tools(simdjson::dom::parser &parser, const tool_request &t, chat_request &req) {
    if (!t.present) {
        if (t.choice == "required" || t.choice.rfind("function:", 0) == 0)
            return refused("tool_choice", "needs tools");
        return false;
    }
    if (t.choice == "none") return false;
    if (t.choice.empty() || t.choice == "auto")
        return refused("tool_choice", "\"auto\" (the default with tools) needs a chat template that renders tools, and this "
                                      "model's does not: use \"required\" or name a function");
    if (req.grammar) return refused("tools", "cannot be combined with response_format");
    // Parsed again from the kept text: the first document is gone by now (the parser is reused).
    simdjson::dom::array tools;
    if (parser.parse(t.tools_json).get_array().get(tools)) return refused("tools", "is not valid JSON");
    std::string options;
    bool named_found = false;
    size_t i = 0;
    for (simdjson::dom::element tool : tools) {
        const std::string where = "tools[" + std::to_string(i++) + "]";
        std::string_view type, name;
        if (tool["type"].get_string().get(type) || type != "function") return refused(where + ".type", "must be \"function\"");
        if (tool["function"]["name"].get_string().get(name) || name.empty() || name.size() > 64)
            return refused(where + ".function.name", "must be a name of 1 to 64 characters");
        if (t.choice.rfind("function:", 0) == 0 && t.choice.substr(9) != name) continue;
        named_found = true;
        simdjson::dom::element params;
        std::string schema = tool["function"]["parameters"].get(params) ? std::string(R"({"type": "object"})")
                                                                         : simdjson::minify(params);
        schema_result c = compile_json_schema(schema);
        if (!c.grammar) return request_problem{errc::invalid_request, where + ".function.parameters: " + c.error, c.keyword};
        // Boost.JSON refuses documents nested deeper than its max_depth (32), which simdjson and
        // the schema compiler take: refuse such a schema by name (uncaught, the exception would
        // end the process; found by fuzz_openai_request).
        boost::system::error_code ec;
        boost::json::value arguments = boost::json::parse(schema, ec);
        if (ec) return refused(where + ".function.parameters", "cannot be read back (" + ec.message() + "): nest it less deeply");
        boost::json::object call{{"type", "object"},
                                 {"properties", {{"name", {{"const", name}}}, {"arguments", std::move(arguments)}}},
                                 {"required", {"name", "arguments"}},
                                 {"additionalProperties", false}};
        if (!options.empty()) options += ',';
        options += boost::json::serialize(call);
    }
    if (!named_found) return refused("tool_choice", "names a function that tools does not define");
    schema_result all = compile_json_schema("{\"anyOf\": [" + options + "]}");
    if (!all.grammar) return request_problem{errc::invalid_request, "tools: " + all.error, all.keyword};
    req.grammar = std::move(all.grammar);
    const std::string intro = "You call functions. These are the functions you may call: " + t.tools_json +
                              "\nAnswer with one call as JSON: {\"name\": <the function's name>, \"arguments\": "
                              "<its arguments>}.";
    if (!req.messages.empty() && req.messages.front().role == "system") req.messages.front().content += "\n\n" + intro;
    else req.messages.insert(req.messages.begin(), chat_message{"system", intro});
    return true;
}

std::optional<std::string> tool_calls_json(const std::string &answer, const std::string &call_id) {
    boost::system::error_code ec;
    boost::json::value v = boost::json::parse(answer, ec);
    if (ec || !v.is_object()) return std::nullopt;
    const auto &o = v.as_object();
    const auto *name = o.if_contains("name");
    const auto *args = o.if_contains("arguments");
    if (!name || !name->is_string() || !args) return std::nullopt;
    boost::json::array calls{boost::json::object{
        {"id", call_id},
        {"type", "function"},
        {"function", {{"name", name->as_string()}, {"arguments", boost::json::serialize(*args)}}}}};
    return boost::json::serialize(calls);
}

} // namespace actorserve
