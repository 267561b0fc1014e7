// Documents: JSONL records (fields, defaults, every kind of bad line), files of each format, the
// limits check_document enforces, and timestamps.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "rag/document.h"
#include "tests/support/temp_dir.h"

using namespace actorserve;
using test_support::temp_dir;

namespace {

std::string parse_error(const std::string &json) {
    document_input doc;
    std::string err;
    CHECK_FALSE(parse_document_json(json, "d.jsonl:3", doc, err));
    return err;
}

} // namespace

TEST_CASE("document json: every field read") {
    document_input doc;
    std::string err;
    REQUIRE(parse_document_json(R"({"id":"faq-1","text":"# Hi\nthere","source":"https://x.org/faq","title":"FAQ",)"
                                R"("tags":["help","en"],"timestamp":1714521600,"format":"markdown","extra":{"a":1}})",
                                "d.jsonl:1", doc, err));
    CHECK(err.empty());
    CHECK(doc.id == "faq-1");
    CHECK(doc.text == "# Hi\nthere");
    CHECK(doc.format == doc_format::markdown);
    CHECK(doc.meta.source == "https://x.org/faq");
    CHECK(doc.meta.title == "FAQ");
    CHECK(doc.meta.tags == std::vector<std::string>{"help", "en"});
    CHECK(doc.meta.timestamp == 1714521600);
}

TEST_CASE("document json: defaults: text format, id from source, else from where") {
    document_input a, b;
    std::string err;
    REQUIRE(parse_document_json(R"({"text":"hello","source":"notes/a.txt"})", "d.jsonl:2", a, err));
    CHECK(a.id == "notes/a.txt");
    CHECK(a.meta.source == "notes/a.txt");
    CHECK(a.format == doc_format::text);
    CHECK(a.meta.title.empty());
    CHECK(a.meta.tags.empty());
    CHECK(a.meta.timestamp == 0);
    REQUIRE(parse_document_json(R"({"text":"hello"})", "d.jsonl:5", b, err));
    CHECK(b.id == "d.jsonl:5");
    CHECK(b.meta.source == "d.jsonl:5");
}

TEST_CASE("document json: timestamps as integers and as dates") {
    const auto ts = [](const std::string &v) {
        document_input doc;
        std::string err;
        REQUIRE_MESSAGE(parse_document_json(R"({"text":"t","timestamp":)" + v + "}", "w", doc, err), err);
        return doc.meta.timestamp;
    };
    CHECK(ts("0") == 0);
    CHECK(ts("1714521600") == 1714521600);
    CHECK(ts(R"("2024-05-01")") == 1714521600);
    CHECK(ts(R"("2024-05-01T12:00:00Z")") == 1714521600 + 12 * 3600);
    CHECK(ts(R"("2024-05-01T12:00:00+02:00")") == 1714521600 + 10 * 3600);
}

TEST_CASE("document json: bad lines are refused with the place and the problem") {
    CHECK(parse_error(R"({"text": "a",)").starts_with("d.jsonl:3: malformed JSON: "));
    CHECK(parse_error(R"(["text"])") == "d.jsonl:3: expected a JSON object, got an array");
    CHECK(parse_error(R"({"title":"no text"})") == "d.jsonl:3: missing \"text\"");
    CHECK(parse_error(R"({"text":42})") == "d.jsonl:3: text must be a string, got an integer");
    CHECK(parse_error(R"({"text":"a","id":null})") == "d.jsonl:3: id must be a string, got null");
    CHECK(parse_error(R"({"text":"a","tags":"x"})") == "d.jsonl:3: tags must be an array of strings, got a string");
    CHECK(parse_error(R"({"text":"a","tags":["x",1]})") == "d.jsonl:3: tags[1] must be a string, got an integer");
    CHECK(parse_error(R"({"text":"a","timestamp":true})") ==
          "d.jsonl:3: timestamp must be an integer (Unix seconds) or a date string, got a boolean");
    CHECK(parse_error(R"({"text":"a","timestamp":"yesterday"})") ==
          "d.jsonl:3: timestamp \"yesterday\" is not a date (2024-05-01) or an RFC 3339 time (2024-05-01T12:00:00Z)");
    CHECK(parse_error(R"({"text":"a","format":"html"})") == "d.jsonl:3: format must be \"text\" or \"markdown\", got \"html\"");
    CHECK(parse_error(R"({"text":"a","id":""})") == "d.jsonl:3: id is empty");
    // Raw invalid UTF-8 (a lone continuation byte at offset 10 of the line).
    CHECK(parse_error("{\"text\":\"a\x80\"}") == "d.jsonl:3: line is not valid UTF-8 (byte 10)");
    std::string tags = R"({"text":"a","tags":[)";
    for (int i = 0; i < 33; ++i) tags += (i ? ",\"t" : "\"t") + std::to_string(i) + "\"";
    CHECK(parse_error(tags + "]}") == "d.jsonl:3: tags: more than 32");
}

TEST_CASE("check_document: limits and UTF-8, each named") {
    document_input doc;
    doc.id = "a";
    doc.text = "fine";
    CHECK(check_document(doc) == "");
    doc.id = "";
    CHECK(check_document(doc) == "id is empty");
    doc.id = std::string(513, 'i');
    CHECK(check_document(doc) == "id: 513 bytes, over the 512 byte limit");
    doc.id = "a";
    doc.text = "0123456789abcdef\xC3(";  // a two-byte lead followed by '(' at byte 16
    CHECK(check_document(doc) == "text is not valid UTF-8 (byte 16)");
    doc.text = "ok \xED\xA0\x80";  // a UTF-16 surrogate spelled in UTF-8
    CHECK(check_document(doc) == "text is not valid UTF-8 (byte 3)");
    doc.text = std::string(9000000, 'x');
    CHECK(check_document(doc) == "text: 9000000 bytes, over the 8 MiB limit");
    doc.text = "fine";
    doc.meta.title = "\xFF";
    CHECK(check_document(doc) == "title is not valid UTF-8 (byte 0)");
    doc.meta.title = "";
    doc.meta.tags = {"ok", ""};
    CHECK(check_document(doc) == "tags[1] is empty");
    doc.meta.tags = {std::string(65, 't')};
    CHECK(check_document(doc) == "tags[0]: 65 bytes, over the 64 byte limit");
    doc.meta.tags.assign(33, "t");
    CHECK(check_document(doc) == "tags: more than 32");
    doc.meta.tags.assign(32, "t");
    CHECK(check_document(doc) == "");
}

TEST_CASE("parse_timestamp: dates and RFC 3339 times, strictly") {
    int64_t t = -1;
    CHECK(parse_timestamp("1970-01-01", t));
    CHECK(t == 0);
    CHECK(parse_timestamp("2024-02-29T23:59:59Z", t));
    CHECK(t == 1709251199);
    CHECK(parse_timestamp("2024-05-01T12:00:00.250Z", t));
    CHECK(t == 1714564800);
    CHECK(parse_timestamp("2024-05-01T00:30:00-01:00", t));
    CHECK(t == 1714521600 + 90 * 60);
    CHECK(parse_timestamp("1969-12-31T23:59:59Z", t));
    CHECK(t == -1);
    t = 7;
    CHECK_FALSE(parse_timestamp("", t));
    CHECK_FALSE(parse_timestamp("2023-02-29", t));          // not a leap year
    CHECK_FALSE(parse_timestamp("2024-13-01", t));
    CHECK_FALSE(parse_timestamp("2024-5-1", t));
    CHECK_FALSE(parse_timestamp("2024-05-01T12:00:00", t));  // a time without its zone
    CHECK_FALSE(parse_timestamp("2024-05-01T25:00:00Z", t));
    CHECK_FALSE(parse_timestamp("2024-05-01Z", t));
    CHECK_FALSE(parse_timestamp("2024-05-01T12:00:00Z trailing", t));
    CHECK(t == 7);  // untouched on failure
}

TEST_CASE("read_document_file: the extension decides the format") {
    temp_dir dir;
    const std::string md = dir.write("guide.md", "# Guide\nText.\n");
    const std::string up = dir.write("NOTES.MARKDOWN", "# Notes\n");
    const std::string txt = dir.write("plain.txt", "# not a heading here\n");
    auto r = read_document_file(md);
    CHECK(r.errors.empty());
    REQUIRE(r.documents.size() == 1);
    CHECK(r.documents[0].id == md);
    CHECK(r.documents[0].meta.source == md);
    CHECK(r.documents[0].format == doc_format::markdown);
    CHECK(r.documents[0].text == "# Guide\nText.\n");
    r = read_document_file(up);
    REQUIRE(r.documents.size() == 1);
    CHECK(r.documents[0].format == doc_format::markdown);
    r = read_document_file(txt);
    REQUIRE(r.documents.size() == 1);
    CHECK(r.documents[0].format == doc_format::text);

    const std::string bad = dir.write("bad.txt", "caf\xC3");
    r = read_document_file(bad);
    CHECK(r.documents.empty());
    REQUIRE(r.errors.size() == 1);
    CHECK(r.errors[0] == bad + ": text is not valid UTF-8 (byte 3)");

    r = read_document_file((dir.path / "missing.md").string());
    CHECK(r.documents.empty());
    REQUIRE(r.errors.size() == 1);
    CHECK(r.errors[0] == (dir.path / "missing.md").string() + ": cannot open");
}

TEST_CASE("read_document_file: JSONL, one document per line, bad lines reported and skipped") {
    temp_dir dir;
    const std::string path = dir.write("docs.jsonl",
                                       "{\"id\":\"a\",\"text\":\"first\"}\n"
                                       "\n"
                                       "{\"text\":\"second, no id\"}\r\n"
                                       "{\"text\":\n"
                                       "   \n"
                                       "{\"text\":\"third\",\"source\":\"s.md\",\"format\":\"markdown\"}\n"
                                       "{\"id\":\"b\"}");
    const auto r = read_document_file(path);
    REQUIRE(r.documents.size() == 3);
    CHECK(r.documents[0].id == "a");
    CHECK(r.documents[0].text == "first");
    CHECK(r.documents[0].meta.source == path + "#1");
    CHECK(r.documents[1].id == path + "#3");
    CHECK(r.documents[1].meta.source == path + "#3");
    CHECK(r.documents[1].text == "second, no id");
    CHECK(r.documents[2].id == "s.md");
    CHECK(r.documents[2].format == doc_format::markdown);
    REQUIRE(r.errors.size() == 2);
    CHECK(r.errors[0].starts_with(path + ":4: malformed JSON: "));
    CHECK(r.errors[1] == path + ":7: missing \"text\"");
}
