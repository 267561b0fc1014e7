#include "net/json_request.h"

#include <cmath>
#include <cstdint>

#include "net/rag_api.h"

namespace actorserve {

namespace {

const char *type_name(simdjson::dom::element_type t) {
    using T = simdjson::dom::element_type;
    switch (t) {
    case T::ARRAY: return "an array";
    case T::OBJECT: return "an object";
    case T::INT64:
    case T::UINT64: return "an integer";
    case T::DOUBLE: return "a number";
    case T::STRING: return "a string";
    case T::BOOL: return "a boolean";
    case T::NULL_VALUE: return "null";
    }
    return "something else";
}

request_problem wrong_type(std::string_view key, const char *want, simdjson::dom::element v) {
    return {errc::invalid_request, std::string(key) + " must be " + want + ", got " + type_name(v.type()),
            std::string(key)};
}

request_problem out_of_range(std::string_view key, std::string what) {
    return {errc::unprocessable, std::string(key) + " " + std::move(what), std::string(key)};
}

} // namespace

std::optional<request_problem> parse_object(simdjson::dom::parser &parser, std::string_view text,
                                            simdjson::dom::object &out) {
    simdjson::dom::element doc;
    if (auto err = parser.parse(text.data(), text.size()).get(doc))
        return request_problem{errc::invalid_request, std::string("malformed JSON: ") + simdjson::error_message(err), ""};
    if (doc.get_object().get(out))
        return request_problem{errc::invalid_request, std::string("the body must be a JSON object, got ") + type_name(doc.type()), ""};
    return std::nullopt;
}

std::optional<request_problem> get_string(simdjson::dom::element v, std::string_view key, std::string &out) {
    std::string_view s;
    if (v.get_string().get(s)) return wrong_type(key, "a string", v);
    out.assign(s);
    return std::nullopt;
}

std::optional<request_problem> get_bool(simdjson::dom::element v, std::string_view key, bool &out) {
    if (v.get_bool().get(out)) return wrong_type(key, "a boolean", v);
    return std::nullopt;
}

std::optional<request_problem> get_int(simdjson::dom::element v, std::string_view key, int64_t &out) {
    if (v.is_int64()) {
        out = v.get_int64().value_unsafe();
        return std::nullopt;
    }
    double d = 0;
    // 8.0 is an integer as far as a person is concerned; 8.5 is not.
    if (v.is_double() && !v.get_double().get(d) && std::floor(d) == d && std::fabs(d) < 9e15) {
        out = static_cast<int64_t>(d);
        return std::nullopt;
    }
    return wrong_type(key, "an integer", v);
}

std::optional<request_problem> get_number(simdjson::dom::element v, std::string_view key, double &out) {
    if (!v.is_number() || v.get_double().get(out)) return wrong_type(key, "a number", v);
    return std::nullopt;
}

std::optional<request_problem> read_generation_field(std::string_view key, simdjson::dom::element v,
                                                     chat_request &r, bool &handled) {
    handled = true;
    sampling_params &s = r.sampling;
    if (v.is_null()) return std::nullopt; // OpenAI clients send null for "default"
    double d = 0;
    int64_t i = 0;
    // Only the type is checked here, and that the value fits its field: the ranges are
    // check_request's (include/actorserve/request_check.h), the same for every way in.
    const auto as_int = [&](int &out) -> std::optional<request_problem> {
        if (auto p = get_int(v, key, i)) return p;
        if (i < INT32_MIN || i > INT32_MAX) return out_of_range(key, "is out of range, got " + std::to_string(i));
        out = static_cast<int>(i);
        return std::nullopt;
    };
    const auto as_float = [&](float &out) -> std::optional<request_problem> {
        if (auto p = get_number(v, key, d)) return p;
        out = static_cast<float>(d); // out of float's range: inf, which every range refuses
        return std::nullopt;
    };
    if (key == "temperature") {
        r.temperature_set = true;
        return as_float(s.temperature);
    }
    if (key == "top_p") {
        r.top_p_set = true;
        return as_float(s.top_p);
    }
    if (key == "min_p") return as_float(s.min_p);
    if (key == "repeat_penalty") return as_float(s.repeat_penalty);
    if (key == "top_k") return as_int(s.top_k);
    if (key == "max_tokens" || key == "max_completion_tokens") return as_int(r.max_tokens);
    if (key == "seed") {
        if (auto p = get_int(v, key, i)) return p;
        if (i < 0) return out_of_range(key, "must be >= 0, got " + std::to_string(i));
        s.seed = static_cast<uint64_t>(i);
    } else if (key == "cache") {
        bool on = false;
        if (auto p = get_bool(v, key, on)) return p;
        r.cache = on;
    } else if (key == "cache_debug") {
        if (auto p = get_bool(v, key, r.cache_debug)) return p;
    } else if (key == "rag") {
        return read_rag_options(v, key, r.rag);
    } else if (key == "stop") {
        r.stop.clear();
        std::string one;
        if (v.is_string()) {
            get_string(v, key, one);
            if (!one.empty()) r.stop.push_back(one);
            return std::nullopt;
        }
        simdjson::dom::array a;
        if (v.get_array().get(a)) return wrong_type(key, "a string or an array of strings", v);
        for (simdjson::dom::element e : a) {
            if (auto p = get_string(e, "stop[]", one)) return p;
            if (!one.empty()) r.stop.push_back(one);
        }
    } else {
        handled = false;
    }
    return std::nullopt;
}

std::optional<request_problem> read_messages(simdjson::dom::element v, std::string_view key,
                                             std::vector<chat_message> &out) {
    simdjson::dom::array a;
    if (v.get_array().get(a)) return wrong_type(key, "an array of {role, content} objects", v);
    size_t i = 0;
    for (simdjson::dom::element e : a) {
        const std::string where = std::string(key) + "[" + std::to_string(i++) + "]";
        simdjson::dom::object o;
        if (e.get_object().get(o)) return wrong_type(where, "an object with role and content", e);
        chat_message m;
        bool has_role = false, has_content = false;
        for (auto field : o) {
            if (field.key == "role") {
                if (auto p = get_string(field.value, where + ".role", m.role)) return p;
                has_role = true;
            } else if (field.key == "content") {
                if (field.value.is_string()) {
                    get_string(field.value, "", m.content);
                } else {
                    // OpenAI's content parts: [{type: "text", text: "..."}]; only text is understood.
                    simdjson::dom::array parts;
                    if (field.value.get_array().get(parts))
                        return wrong_type(where + ".content", "a string or an array of text parts", field.value);
                    for (simdjson::dom::element part : parts) {
                        std::string_view type, text;
                        if (part["type"].get_string().get(type) || type != "text" || part["text"].get_string().get(text))
                            return request_problem{errc::invalid_request,
                                                   where + ".content: only parts of type text are supported", where + ".content"};
                        m.content.append(text);
                    }
                }
                has_content = true;
            } else if (field.key != "name") {
                return request_problem{errc::invalid_request, where + "." + std::string(field.key) + " is not supported",
                                       where + "." + std::string(field.key)};
            }
        }
        if (!has_role) return request_problem{errc::invalid_request, where + ".role is missing", where + ".role"};
        if (!has_content) return request_problem{errc::invalid_request, where + ".content is missing", where + ".content"};
        if (m.role == "developer") m.role = "system"; // OpenAI's newer name for it; roles are check_request's
        out.push_back(std::move(m));
    }
    if (out.empty()) return request_problem{errc::invalid_request, std::string(key) + " is empty", std::string(key)};
    return std::nullopt;
}

} // namespace actorserve
