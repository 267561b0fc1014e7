// Ingestion's slow half (rag/knowledge_base.h): check, chunk and embed one document, and the
// content hash that lets an unchanged document skip all of it.
#include "rag/knowledge_base.h"

#include "store/hash.h"
#include "engine/embedder.h"

namespace actorserve {
namespace {

// Chunks embedded per embed_batch call: bounds the texts held at once; the embedder's cost is
// per chunk either way.
constexpr size_t kEmbedBatch = 16;

std::string name_of(const document_input &doc) {
    if (!doc.id.empty()) return doc.id;
    if (!doc.meta.source.empty()) return doc.meta.source;
    return "document without id";
}

} // namespace

uint64_t document_hash(const document_input &doc, const chunk_settings &chunking) {
    // Length-prefixed fields, so no two different documents serialise to the same bytes.
    byte_writer w;
    w.u32(1);   // version of this serialisation: change it and every document is re-ingested
    w.str(doc.id);
    w.str(doc.text);
    w.u8(static_cast<uint8_t>(doc.format));
    w.str(doc.meta.source);
    w.str(doc.meta.title);
    w.u64(doc.meta.tags.size());
    for (const auto &t : doc.meta.tags) w.str(t);
    w.i64(doc.meta.timestamp);
    w.u64(chunking.max_tokens);
    w.u64(chunking.overlap_tokens);
    return siphash64(w.bytes());
}

bool prepare_document(document_input doc, const chunk_settings &chunking, const token_counter &count, embedder &emb,
                      prepared_document &out, std::string &err) {
    out = prepared_document{};
    if (std::string problem = check_document(doc); !problem.empty()) {
        err = name_of(doc) + ": " + problem;
        return false;
    }
    std::vector<text_chunk> chunks = chunk_document(doc.text, doc.format, chunking, count);
    if (chunks.empty()) {
        err = name_of(doc) + ": no text to index";
        return false;
    }
    out.content_hash = document_hash(doc, chunking);
    out.chunks.reserve(chunks.size());
    std::vector<std::string> texts;
    for (size_t start = 0; start < chunks.size(); start += kEmbedBatch) {
        const size_t end = std::min(chunks.size(), start + kEmbedBatch);
        texts.clear();
        for (size_t i = start; i < end; ++i) texts.push_back(indexed_text(doc.meta, chunks[i]));
        std::vector<std::vector<float>> vecs = emb.embed_batch(texts);
        for (size_t i = start; i < end; ++i) {
            std::vector<float> &v = vecs[i - start];
            if (v.size() != static_cast<size_t>(emb.dim())) {
                err = name_of(doc) + ": chunk " + std::to_string(i) + ": embedding failed: " + emb.last_error();
                out = prepared_document{};
                return false;
            }
            out.chunks.push_back(prepared_chunk{std::move(chunks[i]), std::move(v)});
        }
    }
    out.doc = std::move(doc);
    return true;
}

} // namespace actorserve
