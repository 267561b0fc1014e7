// actorserve ingest: documents into a knowledge base file, without a server. The file is the one
// `actorserve serve` reads at start-up ([rag] file); a running server does not see what is added
// here until it restarts (POST /v1/rag/documents adds to a running one). docs/rag.md.
//
// Per document: content hash -> needs_update (unchanged ones cost nothing) -> prepare_document
// (check, chunk, embed: the slow part) -> commit. The file is saved once, at the end, atomically:
// an ingest interrupted (Ctrl-C, a crash) leaves the previous file whole, and loses its own work.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "engine/embedder.h"
#include "engine/wordpiece.h"
#include "rag/knowledge_base.h"
#include "tools/commands.h"

namespace actorserve::cli {

namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

bool ingestible(const fs::path &p) {
    const std::string ext = p.extension().string();
    return ext == ".md" || ext == ".markdown" || ext == ".txt" || ext == ".jsonl";
}

// Files named on the command line as given; folders searched recursively, in sorted order so that
// two runs over the same tree ingest in the same order.
bool collect(const std::vector<std::string> &paths, std::vector<std::string> &files, std::string &err) {
    for (const std::string &p : paths) {
        std::error_code ec;
        if (fs::is_directory(p, ec)) {
            std::vector<std::string> found;
            for (auto it = fs::recursive_directory_iterator(p, fs::directory_options::skip_permission_denied, ec);
                 !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
                if (it->is_regular_file() && ingestible(it->path())) found.push_back(it->path().string());
            if (ec) {
                err = p + ": " + ec.message();
                return false;
            }
            std::sort(found.begin(), found.end());
            files.insert(files.end(), found.begin(), found.end());
        } else if (fs::is_regular_file(p, ec)) {
            files.push_back(p);
        } else {
            err = p + ": no such file or folder";
            return false;
        }
    }
    return true;
}

std::string duration(double s) {
    char buf[32];
    if (s < 60) std::snprintf(buf, sizeof buf, "%.0f s", s);
    else if (s < 3600) std::snprintf(buf, sizeof buf, "%d min %02d s", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
    else std::snprintf(buf, sizeof buf, "%d h %02d min", static_cast<int>(s) / 3600, static_cast<int>(s) / 60 % 60);
    return buf;
}

// documents done/total, chunks, chunks/s and the time left, estimated from the bytes of text
// still to go (documents differ in size far more than bytes differ in cost). On a terminal the
// line is redrawn in place at most 10 times a second; otherwise (a log) a line every 5 s.
class progress {
public:
    progress(size_t total_docs, size_t total_bytes)
        : total_docs_(total_docs), total_bytes_(total_bytes), tty_(::isatty(STDERR_FILENO) == 1), t0_(clock_type::now()) {}

    void update(size_t docs, size_t bytes, size_t chunks, bool last = false) {
        const auto now = clock_type::now();
        const auto every = tty_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(5000);
        if (!last && now - shown_ < every) return;
        shown_ = now;
        const double s = std::chrono::duration<double>(now - t0_).count();
        std::string eta = "?";
        if (bytes >= total_bytes_) eta = "0 s";
        else if (bytes > 0 && s > 0) eta = duration(s * static_cast<double>(total_bytes_ - bytes) / static_cast<double>(bytes));
        std::fprintf(stderr, "%sdocuments %zu/%zu  chunks %zu  %.1f chunks/s  ETA %s%s", tty_ ? "\r\033[K" : "", docs,
                     total_docs_, chunks, s > 0 ? static_cast<double>(chunks) / s : 0.0, eta.c_str(),
                     tty_ && !last ? "" : "\n");
        std::fflush(stderr);
    }
    double seconds() const { return std::chrono::duration<double>(clock_type::now() - t0_).count(); }

private:
    size_t total_docs_, total_bytes_;
    bool tty_;
    clock_type::time_point t0_, shown_{};
};

} // namespace

int cmd_ingest(const ingest_options &o) {
    if (o.paths.empty()) return fail("give at least one file or folder to ingest");
    if (o.threads < 1) return fail("--threads must be at least 1, got " + std::to_string(o.threads));
    if (o.chunk_tokens < 16 || o.chunk_tokens > 254)
        return fail("--chunk-tokens must be in [16, 254] (the embedder reads 256 word pieces), got " +
                    std::to_string(o.chunk_tokens));
    if (o.overlap >= o.chunk_tokens)
        return fail("--overlap must be below --chunk-tokens = " + std::to_string(o.chunk_tokens) + ", got " +
                    std::to_string(o.overlap));

    std::vector<std::string> files;
    std::string err;
    if (!collect(o.paths, files, err)) return fail(err);

    // Read everything first: the progress bar needs the total, and a bad JSONL line is reported
    // before any time is spent embedding.
    std::vector<document_input> docs;
    std::vector<std::string> errors;
    for (const std::string &f : files) {
        file_read_result r = read_document_file(f);
        for (document_input &d : r.documents) docs.push_back(std::move(d));
        errors.insert(errors.end(), r.errors.begin(), r.errors.end());
    }
    size_t rejected = errors.size();

    rag_settings settings;
    settings.chunking.max_tokens = o.chunk_tokens;
    settings.chunking.overlap_tokens = o.overlap;
    knowledge_base kb(settings);
    const cache_load_report loaded = kb.load(o.kb);
    if (loaded.result == cache_load_report::outcome::io_error) return fail(loaded.message);
    if (loaded.result == cache_load_report::outcome::corrupt)
        std::fprintf(stderr, "actorserve: warning: %s; starting an empty knowledge base\n", loaded.message.c_str());
    const size_t docs_before = kb.stats().documents;

    auto emb = embedder::load(o.embed_model_dir, err, o.threads);
    if (!emb) return fail(err);
    if (emb->dim() != settings.dim)
        return fail(o.embed_model_dir + ": embeddings of " + std::to_string(emb->dim()) + " dimensions, the knowledge base holds " +
                    std::to_string(settings.dim));
    auto wp = wordpiece_tokenizer::load((fs::path(o.embed_model_dir) / "vocab.txt").string(), err);
    if (!wp) return fail(err);
    // Chunks are measured in the embedder's own word pieces, so none is truncated when embedded.
    const token_counter count = [&wp](std::string_view text) -> size_t {
        std::vector<int32_t> ids;
        std::string e;
        if (!wp->encode(text, std::numeric_limits<int>::max(), ids, e)) return text.size();
        return ids.size() - 2; // without [CLS] and [SEP]
    };

    size_t total_bytes = 0;
    for (const document_input &d : docs) total_bytes += d.text.size();
    std::fprintf(stderr, "ingest: %zu documents from %zu files into %s (%zu documents there)\n", docs.size(), files.size(),
                 o.kb.c_str(), docs_before);
    progress bar(docs.size(), total_bytes);
    size_t added = 0, replaced = 0, unchanged = 0, chunks = 0, done_bytes = 0;
    for (size_t i = 0; i < docs.size(); ++i) {
        document_input &d = docs[i];
        const size_t bytes = d.text.size();
        const std::string id = d.id;
        if (!kb.needs_update(id, document_hash(d, settings.chunking))) {
            ++unchanged;
        } else {
            prepared_document p;
            if (!prepare_document(std::move(d), settings.chunking, count, *emb, p, err)) {
                errors.push_back(err);
                ++rejected;
            } else {
                const size_t n = p.chunks.size();
                const commit_result c = kb.commit(std::move(p));
                switch (c.result) {
                case commit_result::status::added: ++added; chunks += n; break;
                case commit_result::status::replaced: ++replaced; chunks += n; break;
                case commit_result::status::unchanged: ++unchanged; break;
                case commit_result::status::rejected:
                    errors.push_back(id + ": " + c.error);
                    ++rejected;
                    break;
                }
            }
        }
        done_bytes += bytes;
        bar.update(i + 1, done_bytes, chunks, i + 1 == docs.size());
    }
    const double secs = bar.seconds();

    if (added + replaced > 0 || loaded.result == cache_load_report::outcome::corrupt) {
        std::error_code ec;
        const fs::path parent = fs::path(o.kb).parent_path();
        if (!parent.empty()) fs::create_directories(parent, ec);
        if (ec) return fail(parent.string() + ": " + ec.message());
        if (!kb.save(o.kb, err)) return fail(err);
    }

    const kb_stats &st = kb.stats();
    std::printf("%zu added, %zu replaced, %zu unchanged, %zu rejected; %zu chunks embedded in %.1f s (%.1f chunks/s)\n",
                added, replaced, unchanged, rejected, chunks, secs, secs > 0 ? static_cast<double>(chunks) / secs : 0.0);
    std::printf("%s: %zu documents, %zu chunks%s\n", o.kb.c_str(), st.documents, st.chunks,
                added + replaced > 0 ? "" : " (unchanged, not rewritten)");
    for (const std::string &e : errors) std::fprintf(stderr, "actorserve: rejected: %s\n", e.c_str());
    return rejected > 0 ? 1 : 0;
}

} // namespace actorserve::cli
