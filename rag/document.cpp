// Documents from files, JSONL lines and request bodies, and the limits every document must meet
// before it is chunked (rag/document.h). Errors name the field, and the file and line.
#include "rag/document.h"

#include <simdjson.h>

#include <fstream>
#include <sstream>

namespace actorserve {

namespace {

// The offset of the first byte that does not start or continue a well-formed UTF-8 character
// (Unicode Table 3-7), or npos. Same rule, and same offsets, as the WordPiece tokenizer's check.
size_t first_invalid_utf8(std::string_view s) {
    const auto b = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
    size_t pos = 0;
    while (pos < s.size()) {
        const uint8_t c0 = b(pos);
        if (c0 < 0x80) {
            ++pos;
            continue;
        }
        size_t n = 0;
        uint8_t lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
        if (c0 >= 0xC2 && c0 <= 0xDF) n = 1;
        else if (c0 >= 0xE0 && c0 <= 0xEF) {
            n = 2;
            if (c0 == 0xE0) lo = 0xA0;  // no overlongs
            if (c0 == 0xED) hi = 0x9F;  // no surrogates
        } else if (c0 >= 0xF0 && c0 <= 0xF4) {
            n = 3;
            if (c0 == 0xF0) lo = 0x90;  // no overlongs
            if (c0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
        } else {
            return pos;
        }
        if (s.size() - pos <= n) return pos;
        for (size_t i = 1; i <= n; ++i) {
            const uint8_t c = b(pos + i);
            if (c < (i == 1 ? lo : 0x80) || c > (i == 1 ? hi : 0xBF)) return pos;
        }
        pos += n + 1;
    }
    return std::string_view::npos;
}

std::string check_utf8(std::string_view field, std::string_view value) {
    const size_t bad = first_invalid_utf8(value);
    if (bad == std::string_view::npos) return "";
    std::string e(field);
    e += " is not valid UTF-8 (byte ";
    e += std::to_string(bad);
    e += ")";
    return e;
}

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

std::string wrong_type(std::string_view key, const char *want, simdjson::dom::element v) {
    std::string e(key);
    e += " must be ";
    e += want;
    e += ", got ";
    e += type_name(v.type());
    return e;
}

bool ends_with_ci(std::string_view s, std::string_view suffix) {
    if (s.size() < suffix.size()) return false;
    s = s.substr(s.size() - suffix.size());
    for (size_t i = 0; i < s.size(); ++i) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        if (c != suffix[i]) return false;
    }
    return true;
}

// Reads exactly n decimal digits at s[pos]; advances pos.
bool digits(std::string_view s, size_t &pos, size_t n, int &out) {
    if (s.size() - pos < n) return false;
    out = 0;
    for (size_t i = 0; i < n; ++i) {
        const char c = s[pos + i];
        if (c < '0' || c > '9') return false;
        out = out * 10 + (c - '0');
    }
    pos += n;
    return true;
}

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (Howard Hinnant's
// days_from_civil).
int64_t days_from_civil(int64_t y, int m, int d) {
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const int64_t yoe = y - era * 400;
    const int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

bool leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

} // namespace

bool parse_timestamp(std::string_view s, int64_t &out) {
    size_t pos = 0;
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
    if (!digits(s, pos, 4, y) || pos >= s.size() || s[pos++] != '-' || !digits(s, pos, 2, mo) || pos >= s.size() ||
        s[pos++] != '-' || !digits(s, pos, 2, d))
        return false;
    static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mo < 1 || mo > 12 || d < 1 || d > kDays[mo - 1] + (mo == 2 && leap(y))) return false;
    int64_t offset = 0;  // seconds east of UTC
    if (pos < s.size()) {
        if (s[pos] != 'T' && s[pos] != 't' && s[pos] != ' ') return false;
        ++pos;
        if (!digits(s, pos, 2, h) || pos >= s.size() || s[pos++] != ':' || !digits(s, pos, 2, mi) ||
            pos >= s.size() || s[pos++] != ':' || !digits(s, pos, 2, sec))
            return false;
        if (h > 23 || mi > 59 || sec > 60) return false;  // 60: a leap second, read as :00 of the next minute
        if (pos < s.size() && s[pos] == '.') {             // fractional seconds: ignored
            ++pos;
            const size_t frac = pos;
            while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') ++pos;
            if (pos == frac) return false;
        }
        if (pos == s.size()) return false;  // a time needs its zone: "Z" or "+hh:mm"
        if (s[pos] == 'Z' || s[pos] == 'z') {
            ++pos;
        } else if (s[pos] == '+' || s[pos] == '-') {
            const int sign = s[pos++] == '-' ? -1 : 1;
            int oh = 0, om = 0;
            if (!digits(s, pos, 2, oh) || pos >= s.size() || s[pos++] != ':' || !digits(s, pos, 2, om)) return false;
            if (oh > 23 || om > 59) return false;
            offset = sign * (oh * 3600 + om * 60);
        } else {
            return false;
        }
        if (pos != s.size()) return false;
    }
    out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - offset;
    return true;
}

std::string check_document(const document_input &doc) {
    if (doc.id.empty()) return "id is empty";
    if (doc.id.size() > kMaxDocIdBytes)
        return "id: " + std::to_string(doc.id.size()) + " bytes, over the " + std::to_string(kMaxDocIdBytes) +
               " byte limit";
    if (std::string e = check_utf8("id", doc.id); !e.empty()) return e;
    if (doc.text.size() > kMaxDocumentBytes)
        return "text: " + std::to_string(doc.text.size()) + " bytes, over the " +
               std::to_string(kMaxDocumentBytes >> 20) + " MiB limit";
    if (std::string e = check_utf8("text", doc.text); !e.empty()) return e;
    if (std::string e = check_utf8("source", doc.meta.source); !e.empty()) return e;
    if (std::string e = check_utf8("title", doc.meta.title); !e.empty()) return e;
    if (doc.meta.tags.size() > kMaxTags) return "tags: more than " + std::to_string(kMaxTags);
    for (size_t i = 0; i < doc.meta.tags.size(); ++i) {
        const std::string &t = doc.meta.tags[i];
        const std::string field = "tags[" + std::to_string(i) + "]";
        if (t.empty()) return field + " is empty";
        if (t.size() > kMaxTagBytes)
            return field + ": " + std::to_string(t.size()) + " bytes, over the " + std::to_string(kMaxTagBytes) +
                   " byte limit";
        if (std::string e = check_utf8(field, t); !e.empty()) return e;
    }
    return "";
}

bool parse_document_json(std::string_view json, const std::string &where, document_input &out, std::string &err) {
    const auto fail = [&](const std::string &problem) {
        err = where;
        err += ": ";
        err += problem;
        return false;
    };
    // simdjson validates UTF-8 as it parses, but names no offset: check first for a useful message.
    if (std::string e = check_utf8("line", json); !e.empty()) return fail(e);
    // note: one parser per thread, reused; parse() copies the line into its padded buffer.
    thread_local simdjson::dom::parser parser;
    simdjson::dom::element root;
    if (auto code = parser.parse(json.data(), json.size()).get(root))
        return fail(std::string("malformed JSON: ") + simdjson::error_message(code));
    simdjson::dom::object obj;
    if (root.get_object().get(obj)) return fail(std::string("expected a JSON object, got ") + type_name(root.type()));

    document_input doc;
    bool have_text = false, have_id = false, have_source = false;
    for (auto field : obj) {
        const std::string_view key = field.key;
        const simdjson::dom::element v = field.value;
        std::string_view s;
        if (key == "text" || key == "id" || key == "source" || key == "title" || key == "format") {
            if (v.get_string().get(s)) return fail(wrong_type(key, "a string", v));
            if (key == "text") {
                doc.text.assign(s);
                have_text = true;
            } else if (key == "id") {
                doc.id.assign(s);
                have_id = true;
            } else if (key == "source") {
                doc.meta.source.assign(s);
                have_source = true;
            } else if (key == "title") {
                doc.meta.title.assign(s);
            } else if (s == "text") {
                doc.format = doc_format::text;
            } else if (s == "markdown") {
                doc.format = doc_format::markdown;
            } else {
                std::string e = "format must be \"text\" or \"markdown\", got \"";
                e += s;
                e += "\"";
                return fail(e);
            }
        } else if (key == "tags") {
            simdjson::dom::array arr;
            if (v.get_array().get(arr)) return fail(wrong_type(key, "an array of strings", v));
            for (simdjson::dom::element t : arr) {
                if (t.get_string().get(s)) return fail(wrong_type("tags[" + std::to_string(doc.meta.tags.size()) + "]", "a string", t));
                doc.meta.tags.emplace_back(s);
            }
        } else if (key == "timestamp") {
            if (v.is_int64()) {
                doc.meta.timestamp = v.get_int64().value_unsafe();
            } else if (v.get_string().get(s) == simdjson::SUCCESS) {
                if (!parse_timestamp(s, doc.meta.timestamp)) {
                    std::string e = "timestamp \"";
                    e += s;
                    e += "\" is not a date (2024-05-01) or an RFC 3339 time (2024-05-01T12:00:00Z)";
                    return fail(e);
                }
            } else {
                return fail(wrong_type(key, "an integer (Unix seconds) or a date string", v));
            }
        }
        // Other keys are ignored: records exported from elsewhere carry fields of their own.
    }
    if (!have_text) return fail("missing \"text\"");
    if (!have_source) doc.meta.source = where;
    if (!have_id) doc.id = have_source ? doc.meta.source : where;
    if (std::string e = check_document(doc); !e.empty()) return fail(e);
    out = std::move(doc);
    return true;
}

file_read_result read_document_file(const std::string &path) {
    file_read_result r;
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        r.errors.push_back(path + ": cannot open");
        return r;
    }
    if (ends_with_ci(path, ".jsonl")) {
        std::string line;
        for (size_t n = 1; std::getline(in, line); ++n) {
            if (!line.empty() && line.back() == '\r') line.pop_back();
            if (line.find_first_not_of(" \t") == std::string::npos) continue;
            const std::string where = path + ":" + std::to_string(n);
            // The default source is the line ("<file>#<line>"), as rag/document.h says.
            document_input doc;
            std::string err;
            if (parse_document_json(line, where, doc, err)) {
                const std::string anchor = path + "#" + std::to_string(n);
                if (doc.meta.source == where) doc.meta.source = anchor;
                if (doc.id == where) doc.id = anchor;
                r.documents.push_back(std::move(doc));
            } else {
                r.errors.push_back(std::move(err));
            }
        }
        return r;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    document_input doc;
    doc.id = path;
    doc.text = std::move(ss).str();
    doc.format = ends_with_ci(path, ".md") || ends_with_ci(path, ".markdown") ? doc_format::markdown : doc_format::text;
    doc.meta.source = path;
    if (std::string e = check_document(doc); !e.empty()) r.errors.push_back(path + ": " + e);
    else r.documents.push_back(std::move(doc));
    return r;
}

} // namespace actorserve
