// The semantic cache's evaluation on tests/cache/eval_set.jsonl, shared by bench/cache_eval.cpp
// (the report, the curve) and tests/cache/test_eval.cpp (the targets at the compiled-in default).
//
// A pair (a, b) stands for "a is cached, b is asked". At threshold t a pair is a hit when
// cos(a, b) >= t, and, with the guard, check_near_miss(b, a, cos(a, b), WordNet) accepts it. Paraphrase hit rate =
// paraphrase hits / paraphrases; false-hit rate = near-miss hits / near misses.
#pragma once

#include <simdjson.h>

#include <cmath>
#include <string>
#include <vector>

#include "cache/near_miss.h"

namespace actorserve::cache_eval {

struct pair {
    std::string a, b, label, kind;
    std::string split;           // "tune" or "heldout" where the set is split; empty otherwise
    float cosine = 0.0f;
    near_miss_verdict verdict;   // check_near_miss(b, a, cosine, WordNet)
    bool paraphrase() const { return label == "paraphrase"; }
};

// Reads the set; false with err naming the file and line on a malformed line.
inline bool load_set(const std::string &path, std::vector<pair> &out, std::string &err) {
    simdjson::dom::parser parser;
    simdjson::dom::document_stream stream;
    if (parser.load_many(path).get(stream) != simdjson::SUCCESS) {
        err = path + ": cannot read";
        return false;
    }
    size_t line = 0;
    for (auto doc : stream) {
        ++line;
        simdjson::dom::object o;
        if (doc.get_object().get(o) != simdjson::SUCCESS) {
            err = path + ": record " + std::to_string(line) + " is not an object";
            return false;
        }
        pair p;
        std::string_view a, b, label, kind;
        if (o["a"].get_string().get(a) || o["b"].get_string().get(b) || o["label"].get_string().get(label) ||
            o["kind"].get_string().get(kind)) {
            err = path + ": record " + std::to_string(line) + " lacks a, b, label or kind";
            return false;
        }
        if (label != "paraphrase" && label != "near_miss") {
            err = path + ": record " + std::to_string(line) + " has label '" + std::string(label) + "'";
            return false;
        }
        p.a = a, p.b = b, p.label = label, p.kind = kind;
        std::string_view split;
        if (o["split"].get_string().get(split) == simdjson::SUCCESS) p.split = split;
        out.push_back(std::move(p));
    }
    return true;
}

inline float dot(const std::vector<float> &x, const std::vector<float> &y) {
    float s = 0.0f;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) s += x[i] * y[i];
    return s;
}

struct rates {
    double threshold = 0;
    double para_hit_cos = 0, para_hit_guard = 0;   // fraction of paraphrases served
    double false_hit_cos = 0, false_hit_guard = 0; // fraction of near misses served
    int n_para = 0, n_near = 0;
};

inline rates rates_at(const std::vector<pair> &set, double t) {
    rates r;
    r.threshold = t;
    int ph = 0, phg = 0, fh = 0, fhg = 0;
    for (const pair &p : set) {
        const bool above = p.cosine >= static_cast<float>(t);
        const bool guarded = above && !p.verdict.rejected();
        if (p.paraphrase()) {
            r.n_para += 1;
            ph += above, phg += guarded;
        } else {
            r.n_near += 1;
            fh += above, fhg += guarded;
        }
    }
    r.para_hit_cos = r.n_para ? double(ph) / r.n_para : 0;
    r.para_hit_guard = r.n_para ? double(phg) / r.n_para : 0;
    r.false_hit_cos = r.n_near ? double(fh) / r.n_near : 0;
    r.false_hit_guard = r.n_near ? double(fhg) / r.n_near : 0;
    return r;
}

// Thresholds 0.70, 0.71, ..., 0.98 (computed from integers, so exactly the printed values).
inline std::vector<double> thresholds() {
    std::vector<double> t;
    for (int i = 70; i <= 98; ++i) t.push_back(i / 100.0);
    return t;
}

} // namespace actorserve::cache_eval
