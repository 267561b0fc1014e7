#include "engine/json_reader.h"

#include <charconv>
#include <cmath>

#include "engine/utf8.h"

namespace actorserve {

json_value::json_value() = default;
json_value::json_value(const json_value &) = default;
json_value::json_value(json_value &&) noexcept = default;
json_value &json_value::operator=(const json_value &) = default;
json_value &json_value::operator=(json_value &&) noexcept = default;
json_value::~json_value() = default;


namespace {

constexpr int kMaxDepth = 64; // nesting of arrays and objects

struct parser {
    std::string_view s;
    size_t pos = 0;
    std::string err;

    bool fail(const std::string &what) {
        err = what + " at byte " + std::to_string(pos);
        return false;
    }
    void skip_ws() {
        while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t' || s[pos] == '\n' || s[pos] == '\r')) ++pos;
    }
    bool literal(std::string_view word) {
        if (s.substr(pos, word.size()) != word) return fail("invalid literal");
        pos += word.size();
        return true;
    }

    bool hex4(uint32_t &out) {
        if (s.size() - pos < 4) return fail("truncated \\u escape");
        out = 0;
        for (int i = 0; i < 4; ++i) {
            const char c = s[pos++];
            out <<= 4;
            if (c >= '0' && c <= '9') out |= static_cast<uint32_t>(c - '0');
            else if (c >= 'a' && c <= 'f') out |= static_cast<uint32_t>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') out |= static_cast<uint32_t>(c - 'A' + 10);
            else return fail("invalid hex digit in \\u escape");
        }
        return true;
    }

    bool string(std::string &out) {
        ++pos; // the opening quote
        const size_t start = pos;
        for (;;) {
            if (pos >= s.size()) return fail("unterminated string");
            const unsigned char c = static_cast<unsigned char>(s[pos]);
            if (c == '"') break;
            if (c < 0x20) return fail("control character in string");
            if (c != '\\') {
                out += static_cast<char>(c);
                ++pos;
                continue;
            }
            if (++pos >= s.size()) return fail("unterminated string");
            const char e = s[pos++];
            switch (e) {
            case '"': out += '"'; break;
            case '\\': out += '\\'; break;
            case '/': out += '/'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'n': out += '\n'; break;
            case 'r': out += '\r'; break;
            case 't': out += '\t'; break;
            case 'u': {
                uint32_t cp = 0;
                if (!hex4(cp)) return false;
                if (cp >= 0xD800 && cp <= 0xDBFF && s.substr(pos, 2) == "\\u") {
                    const size_t save = pos;
                    pos += 2;
                    uint32_t lo = 0;
                    if (!hex4(lo)) return false;
                    if (lo >= 0xDC00 && lo <= 0xDFFF) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    else pos = save; // a lone high surrogate; the next escape stands alone
                }
                append_utf8(out, cp); // a lone surrogate becomes U+FFFD
                break;
            }
            default: --pos; return fail("invalid escape");
            }
        }
        if (!is_valid_utf8(std::string_view(s).substr(start, pos - start))) return fail("string is not valid UTF-8");
        ++pos; // the closing quote
        return true;
    }

    bool number(double &out) {
        const size_t start = pos;
        auto digits = [&] {
            const size_t d = pos;
            while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') ++pos;
            return pos > d;
        };
        if (pos < s.size() && s[pos] == '-') ++pos;
        if (pos < s.size() && s[pos] == '0') ++pos;
        else if (!digits()) return fail("invalid number");
        if (pos < s.size() && s[pos] == '.') {
            ++pos;
            if (!digits()) return fail("invalid number");
        }
        if (pos < s.size() && (s[pos] == 'e' || s[pos] == 'E')) {
            ++pos;
            if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) ++pos;
            if (!digits()) return fail("invalid number");
        }
        const auto r = std::from_chars(s.data() + start, s.data() + pos, out);
        if (r.ec == std::errc::result_out_of_range) {
            pos = start;
            return fail("number out of range");
        }
        return r.ec == std::errc() || fail("invalid number");
    }

    bool value(json_value &v, int depth) {
        skip_ws();
        if (pos >= s.size()) return fail("unexpected end of input");
        switch (s[pos]) {
        case 'n': v.type = json_value::kind::null; return literal("null");
        case 't': v.type = json_value::kind::boolean; v.boolean = true; return literal("true");
        case 'f': v.type = json_value::kind::boolean; v.boolean = false; return literal("false");
        case '"': v.type = json_value::kind::string; return string(v.string);
        case '[': {
            if (depth >= kMaxDepth) return fail("nesting deeper than " + std::to_string(kMaxDepth));
            v.type = json_value::kind::array;
            ++pos;
            skip_ws();
            if (pos < s.size() && s[pos] == ']') { ++pos; return true; }
            for (;;) {
                v.items.emplace_back();
                if (!value(v.items.back(), depth + 1)) return false;
                skip_ws();
                if (pos >= s.size()) return fail("unterminated array");
                if (s[pos] == ']') { ++pos; return true; }
                if (s[pos] != ',') return fail("expected ',' or ']'");
                ++pos;
            }
        }
        case '{': {
            if (depth >= kMaxDepth) return fail("nesting deeper than " + std::to_string(kMaxDepth));
            v.type = json_value::kind::object;
            ++pos;
            skip_ws();
            if (pos < s.size() && s[pos] == '}') { ++pos; return true; }
            for (;;) {
                skip_ws();
                if (pos >= s.size() || s[pos] != '"') return fail("expected a member name");
                v.members.emplace_back();
                if (!string(v.members.back().first)) return false;
                skip_ws();
                if (pos >= s.size() || s[pos] != ':') return fail("expected ':'");
                ++pos;
                if (!value(v.members.back().second, depth + 1)) return false;
                skip_ws();
                if (pos >= s.size()) return fail("unterminated object");
                if (s[pos] == '}') { ++pos; return true; }
                if (s[pos] != ',') return fail("expected ',' or '}'");
                ++pos;
            }
        }
        default:
            if (s[pos] == '-' || (s[pos] >= '0' && s[pos] <= '9')) {
                v.type = json_value::kind::number;
                return number(v.number);
            }
            return fail("unexpected character");
        }
    }
};

} // namespace

const json_value *json_value::find(std::string_view key) const {
    for (const auto &[k, v] : members)
        if (k == key) return &v;
    return nullptr;
}

std::optional<int64_t> json_value::as_int() const {
    constexpr double kMaxExact = 9007199254740992.0; // 2^53
    if (type != kind::number || number != std::floor(number) || std::fabs(number) > kMaxExact) return std::nullopt;
    return static_cast<int64_t>(number);
}

const char *json_kind_name(json_value::kind k) {
    switch (k) {
    case json_value::kind::null: return "null";
    case json_value::kind::boolean: return "boolean";
    case json_value::kind::number: return "number";
    case json_value::kind::string: return "string";
    case json_value::kind::array: return "array";
    case json_value::kind::object: return "object";
    }
    return "?";
}

bool parse_json(std::string_view text, json_value &out, std::string &err) {
    parser p;
    p.s = text;
    out = json_value{};
    if (!p.value(out, 0)) {
        err = p.err;
        return false;
    }
    p.skip_ws();
    if (p.pos != text.size()) {
        p.fail("trailing characters after the value");
        err = p.err;
        return false;
    }
    return true;
}

} // namespace actorserve
