// cache_eval: how well the semantic cache separates paraphrases from near misses.
//
//   build-c/bin/cache_eval [--model models/all-MiniLM-L6-v2] [--set tests/cache/eval_set.jsonl]
//                          [--out docs/img/cache] [--margin 0.02]
//
// Embeds both sides of every pair of the evaluation set, then for thresholds 0.70..0.98 prints
// the paraphrase hit rate and the near-miss false-hit rate by cosine alone and by cosine plus
// the near-miss guard; writes threshold_curve.csv and threshold_curve.svg under --out and
// proposes the default threshold: the lowest threshold whose false-hit rate with the guard is 0
// at it and at every threshold up to `margin` below it (so one more near miss slightly above the
// worst seen does not get through), i.e. t* = t0 + margin where t0 is the lowest zero.
#include "bench/cache_eval.h"
#include "cache/semantic_cache.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#if __has_include("engine/embedder.h")
#include "engine/embedder.h"
#define ACTORSERVE_HAVE_EMBEDDER 1
#endif

using namespace actorserve;
using namespace actorserve::cache_eval;

namespace {

void write_csv(const std::string &path, const std::vector<rates> &rs) {
    std::ofstream f(path);
    f << "threshold,paraphrase_hit_rate_cosine,paraphrase_hit_rate_guard,near_miss_false_hit_rate_cosine,"
         "near_miss_false_hit_rate_guard\n";
    char buf[160];
    for (const rates &r : rs) {
        std::snprintf(buf, sizeof buf, "%.2f,%.4f,%.4f,%.4f,%.4f\n", r.threshold, r.para_hit_cos, r.para_hit_guard,
                      r.false_hit_cos, r.false_hit_guard);
        f << buf;
    }
}

// A line chart: x = threshold, y = rate, four series, the chosen threshold marked.
void write_svg(const std::string &path, const std::vector<rates> &rs, double chosen, const std::string &subtitle) {
    const double W = 800, H = 440, L = 60, R = 250, T = 50, B = 50;
    const double x0 = rs.front().threshold, x1 = rs.back().threshold;
    auto X = [&](double t) { return L + (t - x0) / (x1 - x0) * (W - L - R); };
    auto Y = [&](double v) { return T + (1.0 - v) * (H - T - B); };
    std::ofstream f(path);
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
                  W, H);
    f << buf << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    f << "<text x=\"" << L << "\" y=\"22\" font-size=\"15\">Semantic cache: hit rates over the similarity threshold</text>\n";
    f << "<text x=\"" << L << "\" y=\"38\" fill=\"#555\">" << subtitle << "</text>\n";
    for (int i = 0; i <= 10; ++i) {   // y grid
        const double v = i / 10.0;
        std::snprintf(buf, sizeof buf, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
                      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.0f%%</text>\n", L, Y(v), W - R, Y(v), L - 6, Y(v) + 4, v * 100);
        f << buf;
    }
    for (double t = x0; t <= x1 + 1e-9; t += 0.04) {   // x ticks
        std::snprintf(buf, sizeof buf, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
                      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.2f</text>\n", X(t), T, X(t), H - B, X(t), H - B + 16, t);
        f << buf;
    }
    f << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 12 << "\" text-anchor=\"middle\">cosine similarity threshold</text>\n";
    struct series {
        const char *name, *color, *dash;
        double rates::*field;
    } ss[] = {
        {"paraphrase hits, cosine", "#1f77b4", "6,4", &rates::para_hit_cos},
        {"paraphrase hits, + guard", "#1f77b4", "", &rates::para_hit_guard},
        {"near-miss false hits, cosine", "#d62728", "6,4", &rates::false_hit_cos},
        {"near-miss false hits, + guard", "#d62728", "", &rates::false_hit_guard},
    };
    int row = 0;
    for (const series &s : ss) {
        f << "<polyline fill=\"none\" stroke=\"" << s.color << "\" stroke-width=\"2\"" << (s.dash[0] ? " stroke-dasharray=\"" + std::string(s.dash) + "\"" : "")
          << " points=\"";
        for (const rates &r : rs) {
            std::snprintf(buf, sizeof buf, "%.1f,%.1f ", X(r.threshold), Y(r.*s.field));
            f << buf;
        }
        f << "\"/>\n";
        const double ly = T + 10 + 20 * row++;
        std::snprintf(buf, sizeof buf, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"%s/>"
                      "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", W - R + 12, ly, W - R + 36, ly, s.color,
                      s.dash[0] ? " stroke-dasharray=\"6,4\"" : "", W - R + 42, ly + 4, s.name);
        f << buf;
    }
    std::snprintf(buf, sizeof buf, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#2ca02c\" stroke-width=\"1.5\"/>"
                  "<text x=\"%.1f\" y=\"%.1f\" fill=\"#2ca02c\">default %.2f</text>\n", X(chosen), T, X(chosen), H - B,
                  X(chosen) + 4, T + 100.0, chosen);
    f << buf << "</svg>\n";
}

} // namespace

int main(int argc, char **argv) {
    CLI::App app{"semantic cache evaluation: paraphrase hit rate and near-miss false-hit rate over thresholds"};
    std::string model = std::string(ACTORSERVE_SOURCE_DIR) + "/models/all-MiniLM-L6-v2";
    std::string set_path = std::string(ACTORSERVE_SOURCE_DIR) + "/tests/cache/eval_set.jsonl";
    std::string out_dir = std::string(ACTORSERVE_SOURCE_DIR) + "/docs/img/cache";
    double margin = 0.02;
    int threads = 1;
    app.add_option("--model", model, "embedding model folder");
    app.add_option("--set", set_path, "evaluation set (JSON lines)");
    app.add_option("--out", out_dir, "folder for threshold_curve.csv and threshold_curve.svg");
    app.add_option("--margin", margin, "safety margin above the lowest zero-false-hit threshold");
    app.add_option("--threads", threads, "embedder threads");
    bool dump = false;
    app.add_flag("--dump", dump, "print every pair with its cosine and the guard's verdict");
    std::string split;
    app.add_option("--split", split, "only the pairs whose \"split\" field is this (tune, heldout)");
    int senses = kSynonymSenses;
    app.add_option("--senses", senses, "senses of each word searched for a shared synset (tuning)");
    int rounds = 200;
    app.add_option("--rounds", rounds, "rounds of the guard timing");
    CLI11_PARSE(app, argc, argv);

#ifndef ACTORSERVE_HAVE_EMBEDDER
    std::fprintf(stderr, "cache_eval: built without engine/embedder.h, nothing to evaluate\n");
    return 1;
#else
    std::vector<pair> set;
    std::string err;
    if (!load_set(set_path, set, err)) {
        std::fprintf(stderr, "cache_eval: %s\n", err.c_str());
        return 1;
    }
    if (!split.empty()) std::erase_if(set, [&](const pair &p) { return p.split != split; });
    std::string wn_note;
    const auto lexicon = wordnet::system(&wn_note);
    if (!lexicon) std::fprintf(stderr, "cache_eval: %s; the guard runs without its antonym check\n", wn_note.c_str());
    auto emb = embedder::load(model, err, threads);
    if (!emb) {
        std::fprintf(stderr, "cache_eval: %s\n", err.c_str());
        return 1;
    }
    std::vector<std::string> texts;
    for (const pair &p : set) texts.push_back(p.a), texts.push_back(p.b);
    const auto t_embed = std::chrono::steady_clock::now();
    const auto vecs = emb->embed_batch(texts);
    const double embed_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_embed).count();
    for (size_t i = 0; i < set.size(); ++i) {
        if (vecs[2 * i].empty() || vecs[2 * i + 1].empty()) {
            std::fprintf(stderr, "cache_eval: pair %zu could not be embedded: %s\n", i + 1, emb->last_error().c_str());
            return 1;
        }
        set[i].cosine = dot(vecs[2 * i], vecs[2 * i + 1]);
    }
    // The guard, timed over many rounds (it is microseconds per pair).
    const auto t_guard = std::chrono::steady_clock::now();
    for (int r = 0; r < rounds; ++r)
        for (pair &p : set) p.verdict = check_near_miss(p.b, p.a, lexicon.get(), senses);
    const double guard_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t_guard).count() /
                            (rounds * double(set.size()));

    if (dump)
        for (const pair &p : set)
            std::printf("%-10s %-30s cos %.3f  %-17s \"%s\" / \"%s\"  %s\n", p.label.c_str(), p.kind.c_str(), p.cosine,
                        to_string(p.verdict.reason), p.a.c_str(), p.b.c_str(), p.verdict.detail.c_str());
    std::vector<rates> rs;
    for (double t : thresholds()) rs.push_back(rates_at(set, t));
    std::printf("%zu pairs (%d paraphrases, %d near misses), %s, embedded in %.0f ms; guard %.2f us per pair\n\n",
                set.size(), rs[0].n_para, rs[0].n_near, model.c_str(), embed_ms, guard_us);
    std::printf("threshold  para_hit(cos)  para_hit(cos+guard)  false_hit(cos)  false_hit(cos+guard)\n");
    for (const rates &r : rs)
        std::printf("  %.2f        %5.1f%%           %5.1f%%            %5.1f%%           %5.1f%%\n", r.threshold,
                    100 * r.para_hit_cos, 100 * r.para_hit_guard, 100 * r.false_hit_cos, 100 * r.false_hit_guard);

    // The lowest zero-false-hit threshold (the false-hit rate only falls as t rises), plus the margin.
    double t0 = -1;
    for (const rates &r : rs)
        if (r.false_hit_guard == 0.0) {
            t0 = r.threshold;
            break;
        }
    if (t0 < 0) std::printf("\nno threshold up to 0.98 has zero false hits with the guard\n");
    const double chosen = t0 < 0 ? double(kDefaultSemanticThreshold) : std::round((t0 + margin) * 100.0) / 100.0;
    const rates at = rates_at(set, chosen);
    std::printf("\nlowest threshold with no false hit (cos+guard): %.2f; default = %.2f + margin %.2f = %.2f "
                "(compiled-in default: %.2f)\n", t0, t0, margin, chosen, double(kDefaultSemanticThreshold));
    std::printf("at %.2f: paraphrase hit rate %.1f%% (cosine alone %.1f%%), false-hit rate %.1f%% (cosine alone %.1f%%)\n",
                chosen, 100 * at.para_hit_guard, 100 * at.para_hit_cos, 100 * at.false_hit_guard, 100 * at.false_hit_cos);

    const rates dflt = rates_at(set, kDefaultSemanticThreshold);
    std::printf("at the compiled-in default %.2f: paraphrase hit rate %.1f%%, false-hit rate %.1f%% (%d of %d near misses served)\n",
                double(kDefaultSemanticThreshold), 100 * dflt.para_hit_guard, 100 * dflt.false_hit_guard,
                int(std::lround(dflt.false_hit_guard * dflt.n_near)), dflt.n_near);

    // By kind at the chosen threshold.
    std::map<std::string, std::array<int, 4>> kinds;   // kind -> {n, above, guard rejected, served}
    for (const pair &p : set) {
        auto &k = kinds[p.label + "/" + p.kind];
        const bool above = p.cosine >= static_cast<float>(chosen);
        k[0] += 1, k[1] += above, k[2] += above && p.verdict.rejected(), k[3] += above && !p.verdict.rejected();
    }
    std::printf("\nkind                                           pairs  cos>=t  guard-refused  served\n");
    for (const auto &[k, v] : kinds) std::printf("%-46s %5d  %6d  %13d  %6d\n", k.c_str(), v[0], v[1], v[2], v[3]);
    std::printf("\nparaphrases not served at %.2f:\n", chosen);
    for (const pair &p : set)
        if (p.paraphrase() && (p.cosine < static_cast<float>(chosen) || p.verdict.rejected()))
            std::printf("  cos %.3f  %-13s  \"%s\" / \"%s\"  %s\n", p.cosine, p.verdict.rejected() ? to_string(p.verdict.reason) : "below",
                        p.a.c_str(), p.b.c_str(), p.verdict.detail.c_str());
    std::printf("\nnear misses at or above %.2f by cosine (stopped by the guard unless marked SERVED):\n", chosen);
    for (const pair &p : set)
        if (!p.paraphrase() && p.cosine >= static_cast<float>(chosen))
            std::printf("  cos %.3f  %-17s %s \"%s\" / \"%s\"\n", p.cosine, to_string(p.verdict.reason),
                        p.verdict.rejected() ? "" : "SERVED", p.a.c_str(), p.b.c_str());
    std::printf("\nnear misses with the highest cosine:\n");
    std::vector<const pair *> nm;
    for (const pair &p : set)
        if (!p.paraphrase()) nm.push_back(&p);
    std::sort(nm.begin(), nm.end(), [](auto *x, auto *y) { return x->cosine > y->cosine; });
    for (size_t i = 0; i < nm.size() && i < 10; ++i)
        std::printf("  cos %.3f  %-17s %-30s \"%s\" / \"%s\"\n", nm[i]->cosine, to_string(nm[i]->verdict.reason), nm[i]->kind.c_str(),
                    nm[i]->a.c_str(), nm[i]->b.c_str());

    std::filesystem::create_directories(out_dir);
    write_csv(out_dir + "/threshold_curve.csv", rs);
    char subtitle[200];
    std::snprintf(subtitle, sizeof subtitle, "all-MiniLM-L6-v2, %d paraphrase pairs, %d near misses (tests/cache/eval_set.jsonl)",
                  rs[0].n_para, rs[0].n_near);
    write_svg(out_dir + "/threshold_curve.svg", rs, chosen, subtitle);
    std::printf("\nwrote %s/threshold_curve.csv and threshold_curve.svg\n", out_dir.c_str());
    return 0;
#endif
}
