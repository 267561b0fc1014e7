// actorserve rag-search: one search of a knowledge base file, printed with every score, to see
// what a chat request would be given and why (docs/rag.md). Reads the file; changes nothing.
#include <cstdio>
#include <string>
#include <vector>

#include "engine/embedder.h"
#include "rag/knowledge_base.h"
#include "tools/commands.h"

namespace actorserve::cli {

namespace {

// The passage on one line, cut after `max` bytes at a character boundary.
std::string one_line(const std::string &text, size_t max) {
    std::string out;
    for (char c : text) {
        if (out.size() >= max && (static_cast<unsigned char>(c) & 0xC0) != 0x80) {
            out += "...";
            break;
        }
        out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
    }
    return out;
}

} // namespace

int cmd_rag_search(const rag_search_options &o) {
    search_request req;
    req.query = o.query;
    req.top_k = o.top_k;
    req.filters.tags = o.tags;
    req.filters.sources = o.sources;
    if (o.mode == "hybrid") req.mode = retrieval_mode::hybrid;
    else if (o.mode == "bm25") req.mode = retrieval_mode::bm25;
    else if (o.mode == "dense") req.mode = retrieval_mode::dense;
    else return fail("--mode must be hybrid, bm25 or dense, got '" + o.mode + "'");
    if (o.threads < 1) return fail("--threads must be at least 1, got " + std::to_string(o.threads));

    knowledge_base kb;
    const cache_load_report loaded = kb.load(o.kb);
    if (loaded.result == cache_load_report::outcome::missing)
        return fail(o.kb + ": no knowledge base there (actorserve ingest makes one)");
    if (loaded.result != cache_load_report::outcome::loaded) return fail(loaded.message);

    std::vector<float> qvec;
    if (req.mode != retrieval_mode::bm25) { // BM25 alone needs no model
        std::string err;
        auto emb = embedder::load(o.embed_model_dir, err, o.threads);
        if (!emb) return fail(err);
        qvec = emb->embed(req.query);
        if (qvec.empty()) return fail("--query: " + emb->last_error());
    }
    std::vector<passage> out;
    std::string err;
    if (!kb.search(req, qvec, out, err)) return fail(err);

    std::printf("%zu passages for \"%s\" (%s) among %zu chunks of %zu documents\n", out.size(), o.query.c_str(),
                o.mode.c_str(), kb.stats().chunks, kb.stats().documents);
    for (size_t i = 0; i < out.size(); ++i) {
        const passage &p = out[i];
        std::printf("\n%zu. score %.4f   bm25 %.3f (#%d)   dense %.3f (#%d)\n", i + 1, static_cast<double>(p.score),
                    static_cast<double>(p.bm25_score), p.bm25_rank, static_cast<double>(p.dense_score), p.dense_rank);
        std::printf("   %s  [chunk %u of %s]%s%s\n", p.source.c_str(), p.chunk_index, p.doc_id.c_str(),
                    p.heading.empty() ? "" : "  > ", p.heading.c_str());
        std::printf("   %s\n", one_line(p.text, 240).c_str());
    }
    return 0;
}

} // namespace actorserve::cli
