// Documents as they arrive (files, JSONL records, HTTP bodies) and the readers that make them.
//
// Formats: ".md"/".markdown" -> markdown; ".jsonl" -> one document per line; anything else ->
// text. A JSONL line is an object with "text" (required, string) and optional "id", "source",
// "title" (strings), "tags" (array of strings), "timestamp" (integer Unix seconds, or an
// RFC 3339 / ISO 8601 UTC string such as "2024-05-01" or "2024-05-01T12:00:00Z") and
// "format" ("text" | "markdown", default "text").
//
// Ids: a document's id is its "id" when given, else its source (the file's path as given on the
// command line, or "<file>#<line>" for a JSONL line without id or source). The id is the unit
// of replacement and deletion.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "include/actorserve/retrieval.h" // doc_metadata, document_input
#include "rag/chunker.h"

namespace actorserve {

// Bounds on what one document may be; checked by check_document().
inline constexpr size_t kMaxDocumentBytes = size_t{8} << 20;  // 8 MiB of text
inline constexpr size_t kMaxDocIdBytes = 512;
inline constexpr size_t kMaxTags = 32;
inline constexpr size_t kMaxTagBytes = 64;

// "" if the document is acceptable, else the problem, naming the field ("text is not valid
// UTF-8 (byte 17)", "id is empty", "tags: more than 32", "text: 9000000 bytes, over the 8 MiB limit").
std::string check_document(const document_input &doc);

// Parses one JSONL line (a JSON object as above). where: "<file>:<line>" for messages and for
// the default id/source. On error returns false with err "<where>: <problem>".
bool parse_document_json(std::string_view json, const std::string &where, document_input &out, std::string &err);

// Reads a file as one document (text/markdown) or many (JSONL). Errors name the file and, for
// JSONL, the line; a bad JSONL line is reported in errors and skipped, the rest are read.
struct file_read_result {
    std::vector<document_input> documents;
    std::vector<std::string> errors;
};
file_read_result read_document_file(const std::string &path);

// Parses "2024-05-01", "2024-05-01T12:00:00Z" or "2024-05-01T12:00:00+02:00" into Unix seconds.
bool parse_timestamp(std::string_view s, int64_t &out);

} // namespace actorserve
