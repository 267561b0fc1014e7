// Chunking: exact chunks on small inputs (counting words, or bytes to force cuts inside a word),
// invariants on a generated document, and the WordPiece counter the server uses.
#include "tests/support/paths.h"
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "engine/utf8.h"
#include "engine/wordpiece.h"
#include "rag/chunker.h"

using namespace actorserve;

namespace {

struct expect {
    std::string text, heading;
    size_t offset;
};

void check_chunks(const std::vector<text_chunk> &got, const std::vector<expect> &want) {
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
        INFO("chunk " << i);
        CHECK(got[i].text == want[i].text);
        CHECK(got[i].heading == want[i].heading);
        CHECK(got[i].offset == want[i].offset);
    }
}

const token_counter words = [](std::string_view s) { return count_words(s); };
const token_counter bytes = [](std::string_view s) { return s.size(); };

chunk_settings settings(size_t max, size_t overlap) {
    chunk_settings s;
    s.max_tokens = max;
    s.overlap_tokens = overlap;
    return s;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Every chunk is the document's text at its offset, fits, and its count is the counter's; every
// non-whitespace byte outside heading lines is in some chunk.
void check_invariants(const std::string &doc, doc_format fmt, const std::vector<text_chunk> &chunks, size_t max,
                      const token_counter &count) {
    std::vector<bool> covered(doc.size(), false);
    for (const text_chunk &c : chunks) {
        REQUIRE(c.offset + c.text.size() <= doc.size());
        CHECK(doc.compare(c.offset, c.text.size(), c.text) == 0);
        CHECK(c.tokens == count(c.text));
        CHECK(c.tokens <= max);
        CHECK(!c.text.empty());
        CHECK(!is_space(c.text.front()));
        CHECK(!is_space(c.text.back()));
        for (size_t i = 0; i < c.text.size(); ++i) covered[c.offset + i] = true;
    }
    size_t line_start = 0;
    for (size_t i = 0; i < doc.size(); ++i) {
        if (i == 0 || doc[i - 1] == '\n') line_start = i;
        const bool heading_line = fmt == doc_format::markdown && doc[line_start] == '#';
        if (!is_space(doc[i]) && !heading_line) {
            INFO("byte " << i);
            REQUIRE(covered[i]);
        }
    }
}

// Deterministic prose: words of varied length, sentence ends, line breaks, paragraphs, a heading
// now and then, a few multi-byte characters and one very long word.
std::string generated_document(bool markdown) {
    static const char *vocab[] = {"river", "a", "valley", "of", "the", "committee", "approved", "caf\xC3\xA9",
                                  "na\xC3\xAFve", "\xE2\x82\xAC" "42", "electricity", "bridge", "x", "documents",
                                  "unbelievably", "\xF0\x9F\x98\x80", "pasta", "and", "maps", "library"};
    std::string doc;
    uint32_t state = 12345;
    const auto next = [&] {
        state = state * 1103515245u + 12345u;
        return (state >> 16) & 0x7FFF;
    };
    for (int i = 0; i < 3000; ++i) {
        if (markdown && i % 400 == 0) {
            doc += i % 800 == 0 ? "# Part " : "## Section ";
            doc += std::to_string(i);
            doc += "\n\n";
        }
        doc += vocab[next() % 20];
        if (i == 1500) doc += std::string(700, 'w') + "\xC3\xA9" + std::string(300, 'z');  // a very long word
        const unsigned r = next() % 100;
        if (r < 8) doc += ". ";
        else if (r < 10) doc += "?\n";
        else if (r < 13) doc += ".\n\n";
        else if (r < 15) doc += " \t ";
        else doc += ' ';
    }
    return doc;
}

} // namespace

TEST_CASE("count_words: whitespace-separated words") {
    CHECK(count_words("") == 0);
    CHECK(count_words("   \n\t") == 0);
    CHECK(count_words("one") == 1);
    CHECK(count_words("  one two\n\nthree\tfour ") == 4);
    CHECK(count_words("caf\xC3\xA9, na\xC3\xAFve!") == 2);
}

TEST_CASE("chunker: Markdown headings start sections and give each chunk its heading path") {
    const std::string doc =
        "Intro line here.\n"
        "\n"
        "# Title\n"
        "Alpha beta.\n"
        "\n"
        "## Section\n"
        "Gamma delta epsilon.\n"
        "```\n"
        "# a comment in code, not a heading\n"
        "```\n"
        "### Sub\n"
        "Zeta.\n"
        "## Empty ##\n"
        "\n"
        "## Other\n"
        "Eta theta.\n"
        "# Second\n"
        "Iota.\n";
    const auto chunks = chunk_document(doc, doc_format::markdown, settings(50, 10), words);
    check_chunks(chunks, {
                             {"Intro line here.", "", 0},
                             {"Alpha beta.", "Title", 26},
                             {"Gamma delta epsilon.\n```\n# a comment in code, not a heading\n```", "Title > Section", 50},
                             {"Zeta.", "Title > Section > Sub", 122},
                             {"Eta theta.", "Title > Other", 150},
                             {"Iota.", "Second", 170},
                         });
    check_invariants(doc, doc_format::markdown, chunks, 50, words);
}

TEST_CASE("chunker: text format has no headings; whitespace-only text gives no chunk") {
    const std::string doc = "# Not a heading\nin text format.";
    const auto chunks = chunk_document(doc, doc_format::text, settings(50, 0), words);
    check_chunks(chunks, {{"# Not a heading\nin text format.", "", 0}});
    CHECK(chunks[0].tokens == 7);
    CHECK(chunk_document("", doc_format::text, settings(50, 0), words).empty());
    CHECK(chunk_document(" \n\n\t ", doc_format::markdown, settings(50, 0), words).empty());
    CHECK(chunk_document("# Only a heading\n\n## And another\n", doc_format::markdown, settings(50, 0), words).empty());
}

TEST_CASE("chunker: cuts at a paragraph, then at a line break, rather than at a space") {
    // Words: "one two three." | blank line | "four five six seven." | line break | "eight ... twelve."
    const std::string doc = "one two three.\n\nfour five six seven.\neight nine ten eleven twelve.";
    const auto chunks = chunk_document(doc, doc_format::text, settings(6, 0), words);
    check_chunks(chunks, {
                             {"one two three.", "", 0},
                             {"four five six seven.", "", 16},
                             {"eight nine ten eleven twelve.", "", 37},
                         });
    CHECK(chunks[0].tokens == 3);
    CHECK(chunks[1].tokens == 4);
    CHECK(chunks[2].tokens == 5);
}

TEST_CASE("chunker: a sentence end beats a space; a boundary that would leave a sliver does not") {
    // Max 6 words. From "alpha": the farthest fit ends at "zeta"; "beta." (a sentence end) is in
    // the first third of that span, so the chunk runs to "zeta". From "eta": "theta." is a sentence
    // end well past a third of "eta theta. iota kappa lambda mu", so the chunk stops there.
    const std::string doc = "alpha beta. gamma delta epsilon zeta eta theta. iota kappa lambda mu nu";
    const auto chunks = chunk_document(doc, doc_format::text, settings(6, 0), words);
    check_chunks(chunks, {
                             {"alpha beta. gamma delta epsilon zeta", "", 0},
                             {"eta theta.", "", 37},
                             {"iota kappa lambda mu nu", "", 48},
                         });
}

TEST_CASE("chunker: overlap repeats the end of the previous chunk, from a word start") {
    const std::string doc = "a b c d e f g h i j";
    const auto chunks = chunk_document(doc, doc_format::text, settings(5, 2), words);
    check_chunks(chunks, {
                             {"a b c d e", "", 0},
                             {"d e f g h", "", 6},
                             {"g h i j", "", 12},
                         });
    const auto none = chunk_document(doc, doc_format::text, settings(5, 0), words);
    check_chunks(none, {{"a b c d e", "", 0}, {"f g h i j", "", 10}});
}

TEST_CASE("chunker: a word over the limit is cut at a UTF-8 character boundary") {
    // Counting bytes, max 4: "cdéfgh" (7 bytes) is cut after the two-byte "é", not inside it.
    const std::string doc = "ab cd\xC3\xA9" "fgh ij";
    const auto chunks = chunk_document(doc, doc_format::text, settings(4, 0), bytes);
    check_chunks(chunks, {
                             {"ab", "", 0},
                             {"cd\xC3\xA9", "", 3},
                             {"fgh", "", 7},
                             {"ij", "", 11},
                         });
    // "a" then "é" (2 bytes) then "€" (3 bytes): a cut at 4 bytes would split the euro sign.
    const std::string euro = "a\xC3\xA9\xE2\x82\xAC" "b";
    check_chunks(chunk_document(euro, doc_format::text, settings(4, 0), bytes),
                 {{"a\xC3\xA9", "", 0}, {"\xE2\x82\xAC" "b", "", 3}});
    // A four-byte character alone is over a limit of 2: it is still kept whole, as one chunk.
    const auto emoji = chunk_document("\xF0\x9F\x98\x80", doc_format::text, settings(2, 0), bytes);
    REQUIRE(emoji.size() == 1);
    CHECK(emoji[0].text == "\xF0\x9F\x98\x80");
}

TEST_CASE("chunker: invariants on a generated document, with and without overlap") {
    for (bool markdown : {false, true}) {
        const std::string doc = generated_document(markdown);
        const doc_format fmt = markdown ? doc_format::markdown : doc_format::text;
        for (auto [max, overlap] : {std::pair<size_t, size_t>{40, 0}, {40, 8}, {10, 9}, {3, 2}}) {
            INFO("markdown " << markdown << " max " << max << " overlap " << overlap);
            const auto chunks = chunk_document(doc, fmt, settings(max, overlap), words);
            CHECK(chunks.size() > 3000 / max);
            check_invariants(doc, fmt, chunks, max, words);
            // Chunks move forward: each ends after the previous one ends.
            for (size_t i = 1; i < chunks.size(); ++i)
                CHECK(chunks[i].offset + chunks[i].text.size() > chunks[i - 1].offset + chunks[i - 1].text.size());
        }
        // Cut by bytes: the long word is cut into pieces, each valid UTF-8 on its own.
        const auto by_bytes = chunk_document(doc, fmt, settings(64, 16), bytes);
        check_invariants(doc, fmt, by_bytes, 64, bytes);
        size_t cut_words = 0;
        for (const text_chunk &c : by_bytes) {
            CHECK(is_valid_utf8(c.text));
            cut_words += c.text.find(' ') == std::string::npos && c.text.size() == 64;
        }
        CHECK(cut_words >= 10);  // the 1002-byte word went through the in-word cut
    }
}

TEST_CASE("chunker: with the WordPiece counter every chunk fits the embedder's window") {
    std::string err;
    auto tok = wordpiece_tokenizer::load(test_paths::embed_model_dir() + "/vocab.txt", err);
    REQUIRE_MESSAGE(tok, err);
    const token_counter pieces = [&](std::string_view s) {
        std::vector<int32_t> ids;
        std::string e;
        REQUIRE(tok->encode(s, 1 << 20, ids, e));
        return ids.size() - 2;  // without [CLS] and [SEP]
    };
    const std::string doc = generated_document(true).substr(0, 6000);
    const size_t max = 48;
    const auto chunks = chunk_document(doc, doc_format::markdown, settings(max, 12), pieces);
    CHECK(chunks.size() > 10);
    check_invariants(doc, doc_format::markdown, chunks, max, pieces);
    for (const text_chunk &c : chunks) {
        std::vector<int32_t> ids;
        REQUIRE(tok->encode(c.text, 1 << 20, ids, err));
        CHECK(ids.size() <= max + 2);
    }
}

TEST_CASE("chunker: a very long word is cut without being counted whole for each piece") {
    // 200,000 bytes with no space, then a sentence. Counting bytes with max 100 gives 2,000 pieces;
    // counting the rest of the word for each would read 200 MB. Galloping reads a few times each
    // piece's text.
    const std::string doc = std::string(200000, 'x') + " and the end.";
    size_t counted = 0, calls = 0;
    const token_counter metered = [&](std::string_view s) {
        counted += s.size();
        ++calls;
        return s.size();
    };
    const auto chunks = chunk_document(doc, doc_format::text, settings(100, 20), metered);
    REQUIRE(chunks.size() == 2001);
    CHECK(chunks[0].text == std::string(100, 'x'));
    CHECK(chunks[1999].offset == 199900);
    CHECK(chunks[2000].text == "and the end.");  // no overlap out of a cut word
    CHECK(counted < 20 * doc.size());
    CHECK(calls < 2001 * 20);  // a gallop and a bisection per piece
}
