// actorserve embed: print sentence embeddings (all-MiniLM-L6-v2, see docs/embeddings.md), of
// one text (--text) or of every line of a file (--file), one vector per line.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "engine/embedder.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace actorserve::cli {

namespace {

std::string format_vector(const std::vector<float> &v) {
    std::string out;
    char buf[32];
    for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += ' ';
        std::snprintf(buf, sizeof buf, "%.6f", static_cast<double>(v[i]));
        out += buf;
    }
    out += '\n';
    return out;
}

} // namespace

int cmd_embed(const embed_options &o) {
    if (o.threads < 1) return fail("--threads must be at least 1, got " + std::to_string(o.threads));
    if (o.batch_size < 1) return fail("--batch-size must be at least 1, got " + std::to_string(o.batch_size));
    if (o.text.has_value() == !o.file.empty()) return fail("give exactly one of --text and --file");
    std::vector<std::string> texts;
    if (o.text) {
        texts.push_back(*o.text);
    } else {
        std::ifstream in(o.file, std::ios::binary);
        if (!in) return fail(o.file + ": cannot open");
        for (std::string line; std::getline(in, line);) {
            if (!line.empty() && line.back() == '\r') line.pop_back();
            texts.push_back(std::move(line));
        }
    }
    std::string err;
    auto e = embedder::load(o.model_dir, err, o.threads);
    if (!e) return fail(err);

    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < texts.size(); i += static_cast<size_t>(o.batch_size)) {
        const size_t n = std::min(texts.size() - i, static_cast<size_t>(o.batch_size));
        std::vector<std::vector<float>> vs;
        if (n == 1) {
            vs.push_back(e->embed(texts[i]));
        } else {
            vs = e->embed_batch(std::vector<std::string>(texts.begin() + static_cast<ptrdiff_t>(i),
                                                         texts.begin() + static_cast<ptrdiff_t>(i + n)));
        }
        for (size_t j = 0; j < n; ++j) {
            if (vs[j].empty()) {
                const std::string why = n == 1 ? e->last_error() : "text is not valid UTF-8";
                return fail(o.text ? why : o.file + ":" + std::to_string(i + j + 1) + ": " + why);
            }
            if (!write_out(format_vector(vs[j]))) return 0; // stdout closed
        }
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (o.file.size())
        std::fprintf(stderr, "embedded %zu texts in %.3f s: %.1f texts/s (%d thread%s, batch %d)\n", texts.size(), s,
                     static_cast<double>(texts.size()) / std::max(s, 1e-9), o.threads, o.threads == 1 ? "" : "s",
                     o.batch_size);
    return 0;
}

} // namespace actorserve::cli
