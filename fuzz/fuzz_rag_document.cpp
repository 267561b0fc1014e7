// libFuzzer target: RAG documents as they arrive (rag/document.h): the input as JSONL (each line
// one document record) and as one text/markdown document, then the chunker on what is accepted.
// A record is refused with a message naming the line and field, or gives a document that
// check_document() accepts; anything else aborts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "engine/utf8.h"
#include "rag/chunker.h"
#include "rag/document.h"

namespace {

[[noreturn]] void die(const std::string &what) {
    std::fprintf(stderr, "fuzz_rag_document: %s\n", what.c_str());
    std::abort();
}

void chunk(const actorserve::document_input &doc) {
    actorserve::chunk_settings cs;
    cs.max_tokens = 24;
    cs.overlap_tokens = 4;
    // whitespace words stand in for the model's tokenizer (the chunker only needs a counter)
    const actorserve::token_counter count = actorserve::count_words;
    for (const auto &c : actorserve::chunk_document(doc.text, doc.format, cs, count))
        if (c.offset > doc.text.size()) die("a chunk's offset is past the text");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string_view in(reinterpret_cast<const char *>(data), size);
    size_t line = 0;
    for (size_t start = 0; start <= in.size();) {
        size_t end = in.find('\n', start);
        if (end == std::string_view::npos) end = in.size();
        const std::string_view text = in.substr(start, end - start);
        ++line;
        if (!text.empty()) {
            actorserve::document_input doc;
            std::string err;
            if (actorserve::parse_document_json(text, "fuzz.jsonl:" + std::to_string(line), doc, err)) {
                if (std::string problem = actorserve::check_document(doc); !problem.empty())
                    die("accepted a document that check_document refuses: " + problem);
                chunk(doc);
            } else if (err.empty()) {
                die("refused a record without a message");
            }
        }
        start = end + 1;
    }
    // the whole input as one document
    actorserve::document_input whole;
    whole.id = "fuzz";
    whole.text.assign(in);
    whole.format = size % 2 ? actorserve::doc_format::markdown : actorserve::doc_format::text;
    if (actorserve::check_document(whole).empty()) chunk(whole);
    else if (actorserve::is_valid_utf8(whole.text) && whole.text.size() <= actorserve::kMaxDocumentBytes)
        die("check_document refused well-formed text: " + actorserve::check_document(whole));
    return 0;
}
