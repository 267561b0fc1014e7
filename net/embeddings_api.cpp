#include "net/embeddings_api.h"

#include <boost/beast/core/detail/base64.hpp>
#include <boost/json.hpp>

#include <bit>
#include <cstring>

#include "net/json_request.h"

namespace actorserve {
namespace {

request_problem bad(std::string field, std::string what, errc code = errc::invalid_request) {
    return {code, field + " " + what, field};
}

// One input text: a string; token ids are refused by name.
std::optional<request_problem> read_text(simdjson::dom::element v, const std::string &where, std::string &out) {
    if (v.is_int64() || v.is_uint64() || v.is_array())
        return bad(where, "holds token ids, which this server does not accept: send the text");
    return get_string(v, where, out);
}

std::string base64_of(const std::vector<float> &v) {
    static_assert(std::endian::native == std::endian::little, "base64 embeddings are little-endian float32");
    const size_t n = v.size() * sizeof(float);
    std::string out(boost::beast::detail::base64::encoded_size(n), '\0');
    out.resize(boost::beast::detail::base64::encode(out.data(), v.data(), n));
    return out;
}

} // namespace

std::optional<request_problem> parse_embeddings(simdjson::dom::parser &parser, std::string_view body,
                                                const request_limits &limits, const embedding_settings &s,
                                                embeddings_call &out) {
    simdjson::dom::object obj;
    if (auto p = parse_object(parser, body, obj)) return p;
    bool have_input = false;
    for (auto [k, v] : obj) {
        const std::string_view key = k;
        if (key == "input") {
            have_input = true;
            simdjson::dom::array a;
            if (v.get_array().get(a) == simdjson::SUCCESS) {
                for (simdjson::dom::element e : a) {
                    if (out.req.inputs.size() == s.max_inputs)
                        return bad("input", "has more than " + std::to_string(s.max_inputs) + " texts (embeddings.max_inputs)");
                    std::string text;
                    if (auto p = read_text(e, "input[" + std::to_string(out.req.inputs.size()) + "]", text)) return p;
                    out.req.inputs.push_back(std::move(text));
                }
                if (out.req.inputs.empty()) return bad("input", "is an empty array: give at least one text");
            } else {
                std::string text;
                if (auto p = read_text(v, "input", text)) return p;
                out.req.inputs.push_back(std::move(text));
            }
        } else if (key == "model") {
            std::string model;
            if (auto p = get_string(v, key, model)) return p;
            if (model != s.model_id)
                return request_problem{errc::not_found,
                                       "model '" + model.substr(0, 128) + "' does not exist; this server embeds with '" +
                                           s.model_id + "'",
                                       "model"};
        } else if (key == "encoding_format") {
            std::string f;
            if (auto p = get_string(v, key, f)) return p;
            if (f != "float" && f != "base64") return bad("encoding_format", "must be \"float\" or \"base64\", got \"" + f.substr(0, 32) + "\"");
            out.base64 = f == "base64";
        } else if (key == "dimensions") {
            int64_t d = 0;
            if (auto p = get_int(v, key, d)) return p;
            if (d < 1 || d > 65536) return bad("dimensions", "must be the model's (384 for all-MiniLM-L6-v2), got " + std::to_string(d));
            out.req.dimensions = static_cast<int>(d);
        } else if (key == "user") {
            std::string ignored;
            if (auto p = get_string(v, key, ignored)) return p;
        } else {
            return bad(std::string(key.substr(0, 96)), "is not a field of /v1/embeddings (input, model, encoding_format, dimensions, user)");
        }
    }
    if (!have_input) return bad("input", "is missing");
    size_t bytes = 0;
    for (const std::string &t : out.req.inputs) bytes += t.size();
    if (bytes > limits.max_request_bytes)
        return bad("input", "holds " + std::to_string(bytes) + " bytes of text, over the limit of " +
                                std::to_string(limits.max_request_bytes),
                   errc::too_large);
    return std::nullopt;
}

std::string render_embeddings(const embed_reply &r, bool base64, const std::string &model_id) {
    boost::json::array data;
    data.reserve(r.vectors.size());
    for (size_t i = 0; i < r.vectors.size(); ++i) {
        boost::json::value e;
        if (base64) {
            e = boost::json::string(base64_of(r.vectors[i]));
        } else {
            boost::json::array a;
            a.reserve(r.vectors[i].size());
            for (float x : r.vectors[i]) a.emplace_back(static_cast<double>(x));
            e = std::move(a);
        }
        data.emplace_back(boost::json::object{{"object", "embedding"}, {"index", i}, {"embedding", std::move(e)}});
    }
    const auto tokens = static_cast<uint64_t>(r.tokens);
    return boost::json::serialize(boost::json::object{{"object", "list"},
                                                      {"data", std::move(data)},
                                                      {"model", model_id},
                                                      {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}});
}

} // namespace actorserve
