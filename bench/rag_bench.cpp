// rag_bench: ingest throughput and search latency of the knowledge base (docs/benchmarks.md).
//
//   build-c/bin/rag_bench [--corpus data/rag-bench/python-docs] [--ingest-chunks 400]
//                         [--ingest-threads 1,2] [--chunks 100000] [--sample 512] [--repeat 3]
//
// Corpus: every page of Python's documentation under library/, tutorial/, howto/ and reference/
// as Markdown (scripts/rag_corpus.py --all), each page a document tagged with its section.
//
// (a) Ingest: pages in order through prepare_document (chunk with the WordPiece count, embed with
//     all-MiniLM-L6-v2) and commit, until --ingest-chunks chunks; chunks/s and tokens/s at each
//     --ingest-threads (embedder threads). The embedding is nearly all of it.
// (b) Search with --chunks chunks (100,000): the texts are the corpus's real chunks; when the corpus
//     has fewer, it is repeated under distinct document ids ("library/json#2") and the output says
//     so. Embedding 100,000 chunks would take hours here, so the vectors are real embeddings of
//     --sample distinct chunks, assigned round-robin with Gaussian noise (sigma --noise per
//     component) and re-normalised. A flat index scans every vector whatever its values, so dense
//     search time does not depend on them; the BM25 and fusion costs come from the real texts.
//     Queries: the evaluation questions (tests/rag/eval_questions.jsonl), embedded for real (their
//     embedding time is reported apart). P50/P99/mean per mode, with and without a tag filter,
//     the commit-only throughput of the build, and the knowledge base file's save time, size and
//     load time. Each of --repeat runs gives its figures; the medians are printed.
#include "engine/embedder.h"
#include "engine/wordpiece.h"
#include "rag/chunker.h"
#include "rag/document.h"
#include "rag/knowledge_base.h"

#include <CLI/CLI.hpp>
#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#ifndef ACTORSERVE_SOURCE_DIR
#define ACTORSERVE_SOURCE_DIR "."
#endif

using namespace actorserve;
namespace fs = std::filesystem;

namespace {

using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    if (v.empty()) return 0;
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Nearest-rank percentile (p in (0, 100]) of a sample.
double percentile(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    if (v.empty()) return 0;
    size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
    rank = std::clamp<size_t>(rank, 1, v.size());
    return v[rank - 1];
}

double mean(const std::vector<double> &v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? 0 : s / static_cast<double>(v.size());
}

std::string first_heading(const std::string &text) {
    size_t pos = 0;
    while (pos < text.size()) {
        size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        std::string_view line(text.data() + pos, end - pos);
        size_t h = 0;
        while (h < line.size() && line[h] == '#') ++h;
        if (h >= 1 && h <= 6 && h < line.size() && line[h] == ' ') return std::string(line.substr(h + 1));
        pos = end + 1;
    }
    return "";
}

// Every .md page under root, sorted: id/source = path without ".md", title = first heading,
// tag = the section (first folder: library, tutorial, howto, reference).
bool load_corpus(const std::string &root, std::vector<document_input> &docs, std::string &err) {
    std::vector<fs::path> files;
    for (const auto &e : fs::recursive_directory_iterator(root))
        if (e.is_regular_file() && e.path().extension() == ".md") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const fs::path &p : files) {
        file_read_result r = read_document_file(p.string());
        if (!r.errors.empty()) {
            err = r.errors.front();
            return false;
        }
        for (document_input &d : r.documents) {
            std::string rel = fs::relative(p, root).generic_string();
            rel.resize(rel.size() - 3);
            d.id = rel;
            d.meta.source = rel;
            d.meta.title = first_heading(d.text);
            d.meta.tags = {rel.substr(0, rel.find('/'))};
            docs.push_back(std::move(d));
        }
    }
    return true;
}

bool load_questions(const std::string &path, std::vector<std::string> &out, std::string &err) {
    simdjson::dom::parser parser;
    simdjson::dom::document_stream stream;
    if (parser.load_many(path).get(stream) != simdjson::SUCCESS) {
        err = path + ": cannot read";
        return false;
    }
    size_t line = 0;
    for (auto rec : stream) {
        ++line;
        std::string_view q;
        if (rec["question"].get_string().get(q)) {
            err = path + ":" + std::to_string(line) + ": no string \"question\"";
            return false;
        }
        out.emplace_back(q);
    }
    return true;
}

struct latency {
    double p50 = 0, p99 = 0, mean = 0;  // milliseconds
};
latency summarise(const std::vector<double> &ms) { return {percentile(ms, 50), percentile(ms, 99), mean(ms)}; }

// Medians over runs of each figure.
latency median_of(const std::vector<latency> &runs) {
    std::vector<double> a, b, c;
    for (const latency &l : runs) {
        a.push_back(l.p50);
        b.push_back(l.p99);
        c.push_back(l.mean);
    }
    return {median(a), median(b), median(c)};
}

} // namespace

int main(int argc, char **argv) {
    CLI::App app{"RAG benchmark: ingest throughput and search latency with 100,000 chunks"};
    const std::string src = ACTORSERVE_SOURCE_DIR;
    std::string corpus = src + "/data/rag-bench/python-docs";
    std::string questions_path = src + "/tests/rag/eval_questions.jsonl";
    std::string model = src + "/models/all-MiniLM-L6-v2";
    std::string kb_file = (fs::temp_directory_path() / "rag_bench.kb").string();
    size_t ingest_chunks = 400, target_chunks = 100000, sample = 512, passes = 3, top_k = 5;
    std::vector<int> ingest_threads{1, 2};
    int threads = 2, repeat = 3;
    float noise = 0.01f;
    std::string filter_tag = "howto";
    rag_settings rs;
    app.add_option("--corpus", corpus, "folder of .md pages (scripts/rag_corpus.py --all)");
    app.add_option("--questions", questions_path, "JSONL with a \"question\" per line: the queries");
    app.add_option("--model", model, "all-MiniLM-L6-v2 folder");
    app.add_option("--ingest-chunks", ingest_chunks, "chunks to ingest per thread count (0: skip the ingest part)");
    app.add_option("--ingest-threads", ingest_threads, "embedder thread counts for the ingest part")->delimiter(',');
    app.add_option("--threads", threads, "embedder threads for the sample and the queries")->check(CLI::Range(1, 256));
    app.add_option("--chunks", target_chunks, "chunks in the search benchmark's knowledge base")->check(CLI::Range(1, 1000000));
    app.add_option("--sample", sample, "distinct chunks embedded for real (their vectors are reused round-robin)")
        ->check(CLI::Range(1, 100000));
    app.add_option("--noise", noise, "Gaussian noise sigma per component added to the reused vectors");
    app.add_option("--repeat", repeat, "runs of the latency and file measurements (medians printed)")->check(CLI::Range(1, 100));
    app.add_option("--passes", passes, "passes over the queries per run and mode");
    app.add_option("--top-k", top_k, "passages per search");
    app.add_option("--filter-tag", filter_tag, "tag of the filtered searches (a section: library, tutorial, howto, reference)");
    app.add_option("--chunk-tokens", rs.chunking.max_tokens, "chunk size in WordPiece tokens")->check(CLI::Range(8, 254));
    app.add_option("--overlap", rs.chunking.overlap_tokens, "tokens repeated between chunks");
    app.add_option("--kb-file", kb_file, "where to save the 100,000-chunk knowledge base (removed afterwards)");
    CLI11_PARSE(app, argc, argv);

    std::string err;
    if (!fs::is_directory(corpus)) {
        std::fprintf(stderr, "rag_bench: %s: no benchmark corpus; make it with `python3 scripts/rag_corpus.py --all`\n",
                     corpus.c_str());
        return 1;
    }
    std::vector<document_input> docs;
    if (!load_corpus(corpus, docs, err) || docs.empty()) {
        std::fprintf(stderr, "rag_bench: %s\n", err.empty() ? (corpus + ": no .md pages").c_str() : err.c_str());
        return 1;
    }
    std::vector<std::string> queries;
    if (!load_questions(questions_path, queries, err) || queries.empty()) {
        std::fprintf(stderr, "rag_bench: %s\n", err.empty() ? (questions_path + ": no questions").c_str() : err.c_str());
        return 1;
    }
    auto wp = wordpiece_tokenizer::load(model + "/vocab.txt", err);
    if (!wp) {
        std::fprintf(stderr, "rag_bench: %s\n", err.c_str());
        return 1;
    }
    const token_counter count = [&wp](std::string_view text) -> size_t {
        std::vector<int32_t> ids;
        std::string e;
        if (!wp->encode(text, INT_MAX, ids, e)) return text.size();
        return ids.size() - 2;
    };
    size_t corpus_bytes = 0;
    for (const document_input &d : docs) corpus_bytes += d.text.size();
    std::printf("corpus: %zu pages, %.1f MB of Markdown (%s)\n", docs.size(), static_cast<double>(corpus_bytes) / 1e6,
                corpus.c_str());
    std::printf("chunks of %zu tokens, overlap %zu\n", rs.chunking.max_tokens, rs.chunking.overlap_tokens);

    // ---------------------------------------------------------------- (a) ingest --
    if (ingest_chunks > 0) {
        std::printf("\n## ingest: prepare_document (chunk + embed) + commit, pages in order until %zu chunks\n\n",
                    ingest_chunks);
        std::printf("| threads | pages | chunks | tokens | prepare s | commit ms | chunks/s | tokens/s |\n");
        std::printf("|--------:|------:|-------:|-------:|----------:|----------:|---------:|---------:|\n");
        for (int t : ingest_threads) {
            auto emb = embedder::load(model, err, t);
            if (!emb) {
                std::fprintf(stderr, "rag_bench: %s\n", err.c_str());
                return 1;
            }
            rag_settings s = rs;
            s.dim = emb->dim();
            knowledge_base kb(s);
            size_t pages = 0, chunks = 0, tokens = 0;
            double prep_s = 0, commit_s = 0;
            for (const document_input &d : docs) {
                if (chunks >= ingest_chunks) break;
                prepared_document p;
                auto t0 = clock_type::now();
                if (!prepare_document(d, s.chunking, count, *emb, p, err)) {
                    std::fprintf(stderr, "rag_bench: %s\n", err.c_str());
                    return 1;
                }
                prep_s += seconds_since(t0);
                ++pages;
                chunks += p.chunks.size();
                for (const prepared_chunk &c : p.chunks) tokens += c.chunk.tokens;
                t0 = clock_type::now();
                commit_result cr = kb.commit(std::move(p));
                commit_s += seconds_since(t0);
                if (cr.result == commit_result::status::rejected) {
                    std::fprintf(stderr, "rag_bench: %s: %s\n", d.id.c_str(), cr.error.c_str());
                    return 1;
                }
            }
            const double total = prep_s + commit_s;
            std::printf("| %7d | %5zu | %6zu | %6zu | %9.1f | %9.1f | %8.1f | %8.0f |\n", t, pages, chunks, tokens, prep_s,
                        1000 * commit_s, static_cast<double>(chunks) / total, static_cast<double>(tokens) / total);
            std::fflush(stdout);
        }
    }

    // ---------------------------------------------------------- (b) 100k search --
    auto emb = embedder::load(model, err, threads);
    if (!emb) {
        std::fprintf(stderr, "rag_bench: %s\n", err.c_str());
        return 1;
    }
    rs.dim = emb->dim();
    const size_t dim = static_cast<size_t>(rs.dim);
    rs.max_chunks = std::max(rs.max_chunks, target_chunks + 1000);
    rs.max_documents = std::max(rs.max_documents, target_chunks);

    // Chunk every page once (no embedding).
    auto t0 = clock_type::now();
    std::vector<std::vector<text_chunk>> doc_chunks(docs.size());
    size_t distinct = 0, distinct_tokens = 0;
    for (size_t i = 0; i < docs.size(); ++i) {
        doc_chunks[i] = chunk_document(docs[i].text, docs[i].format, rs.chunking, count);
        distinct += doc_chunks[i].size();
        for (const text_chunk &c : doc_chunks[i]) distinct_tokens += c.tokens;
    }
    const double chunk_s = seconds_since(t0);
    const size_t copies = (target_chunks + distinct - 1) / distinct;
    std::printf("\n## search with %zu chunks\n\n", target_chunks);
    std::printf("corpus chunks: %zu distinct (%zu WordPiece tokens), chunked in %.1f s (%.0f chunks/s)\n", distinct,
                distinct_tokens, chunk_s, static_cast<double>(distinct) / chunk_s);
    if (copies > 1)
        std::printf("the corpus has fewer than %zu chunks: it is repeated %zu times under distinct document ids\n",
                    target_chunks, copies);

    // Real embeddings of `sample` distinct chunks, evenly spaced over the corpus.
    sample = std::min(sample, distinct);
    std::vector<std::vector<float>> sample_vecs;
    {
        std::vector<std::string> texts;
        size_t g = 0, next = 0, taken = 0;
        for (size_t i = 0; i < docs.size() && taken < sample; ++i)
            for (const text_chunk &c : doc_chunks[i]) {
                if (g++ != next) continue;
                texts.push_back(indexed_text(docs[i].meta, c));
                ++taken;
                next = taken * distinct / sample;
                if (taken == sample) break;
            }
        t0 = clock_type::now();
        sample_vecs = emb->embed_batch(texts);
        const double s = seconds_since(t0);
        for (const auto &v : sample_vecs)
            if (v.size() != dim) {
                std::fprintf(stderr, "rag_bench: embedding a sample chunk failed: %s\n", emb->last_error().c_str());
                return 1;
            }
        std::printf("vectors: real embeddings of %zu distinct chunks (%.1f s, %.1f chunks/s), reused round-robin with "
                    "Gaussian noise sigma %.3f per component and re-normalised; a flat index's search cost does not "
                    "depend on the values\n",
                    sample_vecs.size(), s, static_cast<double>(sample_vecs.size()) / s, static_cast<double>(noise));
    }

    // Prepared documents: whole pages, copy after copy, until target_chunks.
    std::vector<prepared_document> prepared;
    std::mt19937 rng(12345);
    std::normal_distribution<float> gauss(0.0f, noise);
    size_t built = 0, tagged = 0;
    for (size_t copy = 0; copy < copies && built < target_chunks; ++copy)
        for (size_t i = 0; i < docs.size() && built < target_chunks; ++i) {
            prepared_document p;
            p.doc = docs[i];
            if (copy > 0) {
                p.doc.id += "#" + std::to_string(copy + 1);
                p.doc.meta.source = p.doc.id;
            }
            p.content_hash = document_hash(p.doc, rs.chunking);
            const size_t n = std::min(doc_chunks[i].size(), target_chunks - built);
            for (size_t j = 0; j < n; ++j) {
                prepared_chunk pc;
                pc.chunk = doc_chunks[i][j];
                pc.vec = sample_vecs[(built + j) % sample_vecs.size()];
                double norm = 0;
                for (float &x : pc.vec) {
                    x += gauss(rng);
                    norm += static_cast<double>(x) * x;
                }
                const float inv = static_cast<float>(1.0 / std::sqrt(norm));
                for (float &x : pc.vec) x *= inv;
                p.chunks.push_back(std::move(pc));
            }
            built += n;
            if (std::find(p.doc.meta.tags.begin(), p.doc.meta.tags.end(), filter_tag) != p.doc.meta.tags.end())
                tagged += n;
            if (!p.chunks.empty()) prepared.push_back(std::move(p));
        }

    auto kb = std::make_unique<knowledge_base>(rs);
    t0 = clock_type::now();
    const size_t n_docs = prepared.size();
    for (prepared_document &p : prepared) {
        const std::string id = p.doc.id;
        commit_result cr = kb->commit(std::move(p));
        if (cr.result != commit_result::status::added) {
            std::fprintf(stderr, "rag_bench: commit %s: %s\n", id.c_str(), cr.error.c_str());
            return 1;
        }
    }
    const double commit_s = seconds_since(t0);
    prepared.clear();
    std::printf("commit only (BM25 + FAISS insert): %zu documents, %zu chunks in %.2f s = %.0f chunks/s\n", n_docs,
                kb->stats().chunks, commit_s, static_cast<double>(kb->stats().chunks) / commit_s);

    // Queries, embedded for real.
    std::vector<std::vector<float>> qvec;
    std::vector<double> embed_ms;
    for (const std::string &q : queries) {
        t0 = clock_type::now();
        qvec.push_back(emb->embed(q));
        embed_ms.push_back(1000 * seconds_since(t0));
    }
    const latency emb_lat = summarise(embed_ms);
    std::printf("queries: %zu evaluation questions x %zu passes per run, top_k %zu, %d run(s); filtered searches: "
                "tag \"%s\" (%zu of %zu chunks, %.1f%%)\n",
                queries.size(), passes, top_k, repeat, filter_tag.c_str(), tagged, built,
                100.0 * static_cast<double>(tagged) / static_cast<double>(built));
    std::printf("query embedding (%d thread(s)): P50 %.2f ms, P99 %.2f ms, mean %.2f ms\n\n", threads, emb_lat.p50,
                emb_lat.p99, emb_lat.mean);

    struct row {
        std::string mode;
        bool filtered;
        std::vector<latency> runs;
        size_t returned = 0;
    };
    std::vector<row> rows;
    const std::pair<const char *, retrieval_mode> modes[] = {
        {"bm25", retrieval_mode::bm25}, {"dense", retrieval_mode::dense}, {"hybrid", retrieval_mode::hybrid}};
    for (bool filtered : {false, true})
        for (const auto &m : modes) rows.push_back({m.first, filtered, {}, 0});
    std::vector<double> save_s, load_s;
    uintmax_t file_bytes = 0;
    for (int run = 0; run < repeat; ++run) {
        size_t r = 0;
        for (bool filtered : {false, true})
            for (const auto &m : modes) {
                std::vector<double> ms;
                ms.reserve(queries.size() * passes);
                size_t returned = 0;
                for (size_t pass = 0; pass < passes; ++pass)
                    for (size_t i = 0; i < queries.size(); ++i) {
                        search_request req;
                        req.query = queries[i];
                        req.top_k = top_k;
                        req.mode = m.second;
                        if (filtered) req.filters.tags = {filter_tag};
                        std::vector<passage> got;
                        t0 = clock_type::now();
                        const bool ok = kb->search(req, qvec[i], got, err);
                        ms.push_back(1000 * seconds_since(t0));
                        if (!ok) {
                            std::fprintf(stderr, "rag_bench: search: %s\n", err.c_str());
                            return 1;
                        }
                        returned += got.size();
                    }
                rows[r].runs.push_back(summarise(ms));
                rows[r].returned = returned;
                ++r;
            }
        // The file: save, then load into a fresh base (the old one freed first).
        t0 = clock_type::now();
        if (!kb->save(kb_file, err)) {
            std::fprintf(stderr, "rag_bench: %s\n", err.c_str());
            return 1;
        }
        save_s.push_back(seconds_since(t0));
        file_bytes = fs::file_size(kb_file);
        const size_t had = kb->stats().chunks;
        kb.reset();
        kb = std::make_unique<knowledge_base>(rs);
        t0 = clock_type::now();
        cache_load_report rep = kb->load(kb_file);
        load_s.push_back(seconds_since(t0));
        if (rep.result != cache_load_report::outcome::loaded || kb->stats().chunks != had) {
            std::fprintf(stderr, "rag_bench: %s: loaded %zu chunks of %zu (%s)\n", kb_file.c_str(), kb->stats().chunks,
                         had, rep.message.c_str());
            return 1;
        }
        std::fprintf(stderr, "run %d of %d done\n", run + 1, repeat);
    }
    fs::remove(kb_file);

    std::printf("| mode   | filter           | P50 ms | P99 ms | mean ms | passages/query |\n");
    std::printf("|--------|------------------|-------:|-------:|--------:|---------------:|\n");
    for (const row &r : rows) {
        const latency l = median_of(r.runs);
        const std::string filter = r.filtered ? "tag " + filter_tag : "none";
        std::printf("| %-6s | %-16s | %6.2f | %6.2f | %7.2f | %14.2f |\n", r.mode.c_str(), filter.c_str(), l.p50, l.p99,
                    l.mean, static_cast<double>(r.returned) / static_cast<double>(queries.size() * passes));
    }
    std::printf("\nknowledge base file with %zu chunks: %.1f MB, save %.2f s, load %.2f s (medians of %d)\n",
                kb->stats().chunks, static_cast<double>(file_bytes) / 1e6, median(save_s), median(load_s), repeat);
    return 0;
}
