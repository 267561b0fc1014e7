// Splits a document into chunks of at most max_tokens tokens, with overlap_tokens of the end of
// one chunk repeated at the start of the next, cutting at the strongest boundary that fits:
// a heading (Markdown), then a blank line (paragraph), then a line break, then a sentence end,
// then a space; a single word longer than the limit is cut inside the word, at a UTF-8
// character boundary. Tokens are counted by the caller's counter (the embedder's WordPiece
// tokenizer in the server, so that no chunk is truncated by the embedder).
//
// Markdown: lines starting with 1-6 '#' and a space are headings; a chunk never spans two
// sections, and each chunk carries its heading path ("Title > Section > Subsection"). Text
// format has no headings: paragraphs only.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "include/actorserve/rag_settings.h" // chunk_settings
#include "include/actorserve/retrieval.h" // doc_format

namespace actorserve {

struct text_chunk {
    std::string text;            // the chunk's own text, without its heading path
    std::string heading;         // "A > B > C" for Markdown, "" for text and before any heading
    size_t offset = 0;           // byte offset of text in the document
    size_t tokens = 0;           // counter(text)
};

// Counts tokens of a piece of valid UTF-8 text.
using token_counter = std::function<size_t(std::string_view)>;

// Counts whitespace-separated words: a stand-in when no tokenizer is at hand (tests, tools).
size_t count_words(std::string_view text);

// text must be valid UTF-8 (the caller checks). Empty and whitespace-only sections give no
// chunk. Every byte of non-whitespace text is in at least one chunk (Markdown heading lines
// excepted: they are not chunk text but the heading path of the chunks below them).
// cost: O(n * (1 + overlap / max)) counter calls on pieces, n the document's length.
std::vector<text_chunk> chunk_document(std::string_view text, doc_format format, const chunk_settings &settings,
                                       const token_counter &count);

} // namespace actorserve
