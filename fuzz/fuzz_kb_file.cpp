// libFuzzer target: the knowledge base's file loader (rag/kb_file.cpp) on any payload, written
// as a valid cache file of kind rag (see fuzz_files.h), then a search over what loaded. A load
// ends `loaded` (the base holds the documents it reported) or `corrupt` with a message.
//
// ACTORSERVE_FUZZ_WRITE_SEEDS=<folder>: writes the payload of a small real base there (the seed
// corpus, fuzz/corpus/kb_file) and exits.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz/fuzz_files.h"
#include "rag/knowledge_base.h"

namespace {

using namespace actorserve;

void write_seeds(const std::string &dir) {
    knowledge_base kb;
    const size_t dim = size_t(kb.settings().dim);
    for (int d = 0; d < 2; ++d) {
        prepared_document doc;
        doc.doc.id = "doc-" + std::to_string(d);
        doc.doc.text = "The first part of document " + std::to_string(d) + ". The second part.";
        doc.doc.meta.source = "fuzz/" + doc.doc.id + ".txt";
        doc.doc.meta.title = "Document " + std::to_string(d);
        doc.doc.meta.tags = {"fuzz", d ? "odd" : "even"};
        doc.doc.meta.timestamp = 1700000000 + d;
        doc.content_hash = document_hash(doc.doc, kb.settings().chunking);
        for (int c = 0; c < 2; ++c) {
            prepared_chunk pc;
            pc.chunk.text = c ? "The second part." : "The first part of document " + std::to_string(d) + ".";
            pc.chunk.offset = c ? doc.doc.text.find("The second") : 0;
            pc.chunk.tokens = count_words(pc.chunk.text);
            pc.vec.assign(dim, 0.0f);
            pc.vec[size_t(2 * d + c)] = 1.0f;
            doc.chunks.push_back(std::move(pc));
        }
        const commit_result r = kb.commit(std::move(doc));
        if (r.result != commit_result::status::added) fuzz_files::die("seed commit: " + r.error);
    }
    fuzz_files::save_payload_seed(kb, dir + "/kb");
    std::exit(0);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    if (const char *dir = std::getenv("ACTORSERVE_FUZZ_WRITE_SEEDS")) write_seeds(dir);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static knowledge_base kb;
    const std::string_view payload(reinterpret_cast<const char *>(data), size);
    fuzz_files::check_load(kb, payload, cache_file_kind::rag, [&] { return kb.stats().documents; });
    if (kb.stats().documents > 0) {
        search_request req;
        req.query = "first part";
        req.mode = retrieval_mode::bm25;
        std::vector<passage> out;
        std::string err;
        (void)kb.search(req, {}, out, err);
    }
    return 0;
}
