#include "net/rag_api.h"

#include <boost/json.hpp>

#include <cstdio>

#include "rag/document.h"

namespace actorserve {

namespace {

request_problem bad(std::string_view key, std::string what, errc code = errc::invalid_request) {
    std::string msg(key);
    msg += ' ';
    msg += what;
    return {code, std::move(msg), std::string(key)};
}

std::string join(std::string_view a, std::string_view b) {
    std::string s(a);
    s += '.';
    s += b;
    return s;
}

// FNV-1a, 64 bits: a stable id for a document posted without one. Not a defence against
// collisions made on purpose; give ids when that matters.
std::string text_id(std::string_view text) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : text) {
        h ^= c;
        h *= 1099511628211ull;
    }
    char buf[24];
    std::snprintf(buf, sizeof buf, "doc-%016llx", static_cast<unsigned long long>(h));
    return buf;
}

std::optional<request_problem> get_strings(simdjson::dom::element v, std::string_view key, std::vector<std::string> &out) {
    if (v.is_string()) { // one value for convenience: "tags": "faq"
        std::string one;
        get_string(v, key, one);
        out.push_back(std::move(one));
        return std::nullopt;
    }
    simdjson::dom::array a;
    if (v.get_array().get(a)) return bad(key, "must be a string or an array of strings");
    for (simdjson::dom::element e : a) {
        std::string s;
        if (!e.is_string()) return bad(key, "must be an array of strings");
        get_string(e, key, s);
        out.push_back(std::move(s));
    }
    return std::nullopt;
}

std::optional<request_problem> get_time(simdjson::dom::element v, std::string_view key, std::optional<int64_t> &out) {
    if (v.is_null()) return std::nullopt;
    if (v.is_string()) {
        std::string s;
        get_string(v, key, s);
        int64_t t = 0;
        if (!parse_timestamp(s, t))
            return bad(key, "must be Unix seconds or an ISO 8601 date (2024-05-01, 2024-05-01T12:00:00Z), got '" +
                                s.substr(0, 64) + "'");
        out = t;
        return std::nullopt;
    }
    int64_t t = 0;
    if (get_int(v, key, t)) return bad(key, "must be Unix seconds or an ISO 8601 date string");
    out = t;
    return std::nullopt;
}

std::optional<request_problem> read_filters(simdjson::dom::element v, std::string_view key, search_filters &f) {
    if (v.is_null()) return std::nullopt;
    simdjson::dom::object o;
    if (v.get_object().get(o)) return bad(key, "must be an object (sources, tags, since, until)");
    for (auto field : o) {
        const std::string k = join(key, field.key);
        if (field.key == "sources" || field.key == "source") {
            if (auto p = get_strings(field.value, k, f.sources)) return p;
        } else if (field.key == "tags" || field.key == "tag") {
            if (auto p = get_strings(field.value, k, f.tags)) return p;
        } else if (field.key == "since") {
            if (auto p = get_time(field.value, k, f.since)) return p;
        } else if (field.key == "until") {
            if (auto p = get_time(field.value, k, f.until)) return p;
        } else {
            return bad(k.substr(0, 96), "is not a filter (sources, tags, since, until)");
        }
    }
    if (f.since && f.until && *f.since > *f.until)
        return bad(join(key, "since"), "is after " + join(key, "until"), errc::unprocessable);
    return std::nullopt;
}

std::optional<request_problem> read_top_k(simdjson::dom::element v, std::string_view key, size_t max, size_t &out) {
    int64_t i = 0;
    if (auto p = get_int(v, key, i)) return p;
    if (i < 1 || static_cast<uint64_t>(i) > max)
        return bad(key, "must be in [1, " + std::to_string(max) + "], got " + std::to_string(i), errc::unprocessable);
    out = static_cast<size_t>(i);
    return std::nullopt;
}

std::optional<request_problem> read_mode(simdjson::dom::element v, std::string_view key, retrieval_mode &out) {
    std::string s;
    if (auto p = get_string(v, key, s)) return p;
    auto m = parse_retrieval_mode(s);
    if (!m) return bad(key, "must be hybrid, bm25 or dense, got '" + s.substr(0, 32) + "'");
    out = *m;
    return std::nullopt;
}

std::optional<request_problem> read_document(simdjson::dom::object o, const std::string &where, document_input &doc) {
    std::string err;
    if (!parse_document_json(simdjson::minify(o), where, doc, err)) return request_problem{errc::invalid_request, err, where};
    // parse_document_json names documents after their file and line; a body has neither.
    std::string_view given;
    const bool has_id = !o["id"].get_string().get(given) && !given.empty();
    const bool has_source = !o["source"].get_string().get(given) && !given.empty();
    if (!has_id) doc.id = has_source ? doc.meta.source : text_id(doc.text);
    if (!has_source) doc.meta.source = doc.id;
    return std::nullopt;
}

boost::json::array tags_json(const std::vector<std::string> &tags) {
    boost::json::array a;
    for (const std::string &t : tags) a.emplace_back(t);
    return a;
}

} // namespace

std::optional<std::string> percent_decode(std::string_view s) {
    auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '%') {
            out += s[i];
            continue;
        }
        if (i + 2 >= s.size()) return std::nullopt;
        const int hi = hex(s[i + 1]), lo = hex(s[i + 2]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
    }
    return out;
}

std::optional<retrieval_mode> parse_retrieval_mode(std::string_view s) {
    if (s == "hybrid") return retrieval_mode::hybrid;
    if (s == "bm25") return retrieval_mode::bm25;
    if (s == "dense") return retrieval_mode::dense;
    return std::nullopt;
}

const char *mode_name(retrieval_mode m) {
    switch (m) {
    case retrieval_mode::hybrid: return "hybrid";
    case retrieval_mode::bm25: return "bm25";
    case retrieval_mode::dense: return "dense";
    }
    return "hybrid";
}

std::optional<request_problem> parse_rag_documents(simdjson::dom::parser &parser, std::string_view body,
                                                   const rag_limits &lim, std::vector<document_input> &out) {
    simdjson::dom::object o;
    if (auto p = parse_object(parser, body, o)) return p;
    simdjson::dom::element docs;
    if (o["documents"].get(docs)) { // one document
        document_input d;
        if (auto p = read_document(o, "document", d)) return p;
        out.push_back(std::move(d));
        return std::nullopt;
    }
    if (o.size() != 1) {
        for (auto field : o)
            if (field.key != "documents")
                return bad(std::string(field.key.substr(0, 64)), "is not expected beside documents");
    }
    simdjson::dom::array a;
    if (docs.get_array().get(a)) return bad("documents", "must be an array of document objects");
    if (a.size() == 0) return bad("documents", "is empty");
    if (a.size() > lim.max_documents)
        return bad("documents", "holds " + std::to_string(a.size()) + " documents, at most " +
                                    std::to_string(lim.max_documents) + " per request",
                   errc::unprocessable);
    size_t i = 0;
    for (simdjson::dom::element e : a) {
        const std::string where = "documents[" + std::to_string(i++) + "]";
        simdjson::dom::object eo;
        if (e.get_object().get(eo))
            return bad(where, "must be an object with text (and id, source, title, tags, timestamp, format)");
        document_input d;
        if (auto p = read_document(eo, where, d)) return p;
        out.push_back(std::move(d));
    }
    return std::nullopt;
}

std::optional<request_problem> parse_rag_search(simdjson::dom::parser &parser, std::string_view body,
                                                const rag_limits &lim, search_request &out) {
    simdjson::dom::object o;
    if (auto p = parse_object(parser, body, o)) return p;
    out.top_k = lim.default_top_k;
    bool has_query = false;
    for (auto field : o) {
        std::string_view key = field.key;
        simdjson::dom::element v = field.value;
        if (key == "query") {
            if (auto p = get_string(v, key, out.query)) return p;
            has_query = true;
        } else if (key == "top_k") {
            if (v.is_null()) continue;
            if (auto p = read_top_k(v, key, lim.max_top_k, out.top_k)) return p;
        } else if (key == "mode") {
            if (v.is_null()) continue;
            if (auto p = read_mode(v, key, out.mode)) return p;
        } else if (key == "filters") {
            if (auto p = read_filters(v, key, out.filters)) return p;
        } else {
            return bad(std::string(key.substr(0, 64)), "is not a search field (query, top_k, mode, filters)");
        }
    }
    if (!has_query) return bad("query", "is missing");
    if (out.query.find_first_not_of(" \t\r\n") == std::string::npos) return bad("query", "is empty");
    return std::nullopt;
}

std::optional<request_problem> read_rag_options(simdjson::dom::element v, std::string_view key,
                                                std::optional<rag_options> &out) {
    out.reset();
    if (v.is_null()) return std::nullopt;
    if (v.is_bool()) {
        if (v.get_bool().value_unsafe()) out = rag_options{};
        return std::nullopt;
    }
    simdjson::dom::object o;
    if (v.get_object().get(o)) return bad(key, "must be true, false or an object (top_k, mode, filters, budget_tokens)");
    const rag_limits lim;
    rag_options r;
    for (auto field : o) {
        const std::string k = join(key, field.key);
        if (field.value.is_null()) continue;
        if (field.key == "top_k") {
            if (auto p = read_top_k(field.value, k, lim.max_top_k, r.top_k)) return p;
        } else if (field.key == "mode") {
            if (auto p = read_mode(field.value, k, r.mode)) return p;
        } else if (field.key == "filters") {
            if (auto p = read_filters(field.value, k, r.filters)) return p;
        } else if (field.key == "budget_tokens") {
            int64_t b = 0;
            if (auto p = get_int(field.value, k, b)) return p;
            if (b < 16 || static_cast<uint64_t>(b) > lim.max_budget_tokens)
                return bad(k, "must be in [16, " + std::to_string(lim.max_budget_tokens) + "], got " + std::to_string(b),
                           errc::unprocessable);
            r.budget_tokens = static_cast<size_t>(b);
        } else {
            return bad(k.substr(0, 96), "is not supported (top_k, mode, filters, budget_tokens)");
        }
    }
    out = std::move(r);
    return std::nullopt;
}

std::string render_rag_ingest(const rag_ingest_reply &r) {
    boost::json::array results;
    for (const rag_ingest_result &x : r.results) {
        boost::json::object o{{"id", x.doc_id}, {"status", x.status}, {"chunks", x.chunks}};
        if (!x.error.empty()) o["error"] = x.error;
        results.emplace_back(std::move(o));
    }
    return boost::json::serialize(boost::json::object{{"results", std::move(results)}});
}

std::string render_rag_documents(const rag_status &s) {
    boost::json::array docs;
    for (const document_info &d : s.documents)
        docs.emplace_back(boost::json::object{{"id", d.id},
                                              {"source", d.meta.source},
                                              {"title", d.meta.title},
                                              {"tags", tags_json(d.meta.tags)},
                                              {"timestamp", d.meta.timestamp},
                                              {"chunks", d.chunks}});
    return boost::json::serialize(boost::json::object{{"documents", std::move(docs)}, {"chunks", s.stats.chunks}});
}

std::string render_rag_search(const rag_search_reply &r) {
    boost::json::array out;
    for (const passage &p : r.passages)
        out.emplace_back(boost::json::object{{"id", p.chunk_id},
                                             {"doc_id", p.doc_id},
                                             {"source", p.source},
                                             {"title", p.title},
                                             {"heading", p.heading},
                                             {"text", p.text},
                                             {"score", p.score},
                                             {"bm25_score", p.bm25_score},
                                             {"dense_score", p.dense_score},
                                             {"bm25_rank", p.bm25_rank},
                                             {"dense_rank", p.dense_rank},
                                             {"tags", tags_json(p.tags)},
                                             {"timestamp", p.timestamp}});
    return boost::json::serialize(boost::json::object{{"passages", std::move(out)}, {"elapsed_ms", r.elapsed_ms}});
}

std::string render_rag_deleted(const std::string &doc_id) {
    return boost::json::serialize(boost::json::object{{"id", doc_id}, {"deleted", true}});
}

boost::json::array render_rag_sources(const std::vector<rag_source> &sources) {
    boost::json::array out;
    for (const rag_source &s : sources) {
        boost::json::object o{{"number", s.number}, {"id", s.chunk_id},   {"doc_id", s.doc_id},  {"source", s.source},
                              {"title", s.title},   {"heading", s.heading}, {"score", s.score}};
        if (s.flagged) o["flagged"] = true;
        out.emplace_back(std::move(o));
    }
    return out;
}

} // namespace actorserve
