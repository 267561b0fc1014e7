// Tokenizer: tiny hand-built vocabularies pin the BPE rules; the real SmolLM2 vocabulary is
// checked against ids that llama.cpp produced (the golden fixture), and utf8_stream against
// byte-at-a-time feeding.
#include "tests/support/paths.h"
#include "engine/tokenizer.h"
#include "engine/utf8.h"
#include "gguf_writer.h"

#include <doctest/doctest.h>
#include <simdjson.h>

#include <filesystem>
#include <sstream>
#include <thread>

using namespace actorserve;
using namespace actorserve::testing;

namespace {

// The real model's tokenizer, loaded once. A missing model fails the test, never skips it.
const tokenizer &smollm() {
    static std::unique_ptr<gguf_file> file;
    static std::unique_ptr<tokenizer> tok;
    if (!tok) {
        std::string err;
        file = gguf_file::open(test_paths::model().c_str(), err);
        REQUIRE_MESSAGE(file, err, " (run scripts/setup.sh to fetch the model)");
        tok = tokenizer::from_gguf(*file, err);
        REQUIRE_MESSAGE(tok, err);
    }
    return *tok;
}

std::vector<int32_t> ids(std::initializer_list<int32_t> v) { return v; }

std::string show(const std::vector<int32_t> &v) {
    std::ostringstream s;
    s << '[';
    for (size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
    s << ']';
    return s.str();
}

// A tokenizer over a hand-written vocabulary. Token ids are positions in `tokens`.
struct tiny {
    gguf_image image;
    std::unique_ptr<gguf_file> file;
    std::unique_ptr<tokenizer> tok;
    std::string err;
};

tiny make_tiny(const std::vector<std::string> &tokens, const std::vector<int32_t> &types,
               const std::vector<std::string> &merges, std::string model = "gpt2",
               std::string pre = "smollm") {
    gguf_writer w;
    w.kv("tokenizer.ggml.model", meta::str(model));
    w.kv("tokenizer.ggml.pre", meta::str(pre));
    w.kv("tokenizer.ggml.tokens", meta::strings(tokens));
    std::vector<meta_value> tv;
    for (int32_t t : types) tv.push_back(meta::i32(t));
    w.kv("tokenizer.ggml.token_type", meta::array(gguf_type::int32, tv));
    w.kv("tokenizer.ggml.merges", meta::strings(merges));
    w.kv("tokenizer.ggml.eos_token_id", meta::u32(0));
    tiny t;
    t.image = w.build();
    t.file = gguf_file::from_memory(t.image.bytes.data(), t.image.bytes.size(), "tiny.gguf", t.err);
    REQUIRE_MESSAGE(t.file, t.err);
    t.tok = tokenizer::from_gguf(*t.file, t.err);
    return t;
}

// ids:                            0      1    2    3    4     5     6      7    8
// note: the control token's text is spelled with vocabulary characters so that, unparsed,
// it still encodes to something visible.
const std::vector<std::string> kTinyTokens = {"cab", "a", "b", "c", "ab", "bc", "abc", "Ġ", "<x>"};
const std::vector<int32_t> kTinyTypes = {3, 1, 1, 1, 1, 1, 1, 1, 4};

} // namespace

// ---- BPE rules on a tiny vocabulary ---------------------------------------------------

TEST_CASE("bpe: the pair with the lowest merge rank is merged first") {
    // "b c" has rank 0, so "abc" becomes a|bc and then abc; "a b" (rank 1) never applies.
    tiny t = make_tiny(kTinyTokens, kTinyTypes, {"b c", "a b", "a bc"});
    REQUIRE_MESSAGE(t.tok, t.err);
    CHECK(t.tok->encode("abc", false) == ids({6}));
    // with "a b" first, "abc" stops at ab|c because no merge joins "ab c"
    tiny u = make_tiny(kTinyTokens, kTinyTypes, {"a b", "b c", "a bc"});
    REQUIRE_MESSAGE(u.tok, u.err);
    CHECK(u.tok->encode("abc", false) == ids({4, 3}));
}

TEST_CASE("bpe: equal ranks merge the leftmost pair first") {
    // "bbb" with only "b b": the left pair merges, leaving bb|b.
    tiny t = make_tiny({"<|end|>", "b", "bb"}, {3, 1, 1}, {"b b"});
    REQUIRE_MESSAGE(t.tok, t.err);
    CHECK(t.tok->encode("bbb", false) == ids({2, 1}));
    CHECK(t.tok->encode("bbbb", false) == ids({2, 2}));
}

TEST_CASE("bpe: a merge result outside the vocabulary falls back to one token per byte") {
    tiny t = make_tiny({"<|end|>", "a", "b"}, {3, 1, 1}, {"a b"});
    REQUIRE_MESSAGE(t.tok, t.err);
    CHECK(t.tok->n_merges_unknown() == 1);
    CHECK(t.tok->encode("ab", false) == ids({1, 2}));
}

TEST_CASE("bpe: a space is the byte-level character Ġ and starts its own piece") {
    tiny t = make_tiny(kTinyTokens, kTinyTypes, {"a b"});
    REQUIRE_MESSAGE(t.tok, t.err);
    // pieces "ab", " c" -> ab | Ġ c  (no "Ġ c" merge)
    CHECK(t.tok->encode("ab c", false) == ids({4, 7, 3}));
    CHECK(t.tok->token_bytes(7, false) == " ");
}

TEST_CASE("special tokens: control tokens need parse_special, user-defined ones never do") {
    tiny t = make_tiny(kTinyTokens, kTinyTypes, {"a b"});
    REQUIRE_MESSAGE(t.tok, t.err);
    CHECK(t.tok->encode("a<x>b", false) == ids({1, 8, 2}));
    CHECK(t.tok->encode("abcab", true) == ids({4, 0}));
    CHECK(t.tok->encode("cab", false) == ids({3, 4})); // plain text: c | ab
    CHECK(t.tok->token_bytes(0, false).empty());
    CHECK(t.tok->token_bytes(0, true) == "cab");
    CHECK(t.tok->token_bytes(8, false) == "<x>");
    CHECK(t.tok->is_eog(0)); // eos
    CHECK_FALSE(t.tok->is_eog(8));
}

TEST_CASE("from_gguf: unsupported or incomplete tokenizers are errors that say why") {
    tiny bert = make_tiny(kTinyTokens, kTinyTypes, {}, "bert");
    CHECK_FALSE(bert.tok);
    CHECK(bert.err == "tiny.gguf: unsupported tokenizer model 'bert' (supported: 'gpt2', byte-level BPE; "
                      "'llama', SentencePiece)");

    tiny pre = make_tiny(kTinyTokens, kTinyTypes, {}, "gpt2", "mystery-pre");
    CHECK_FALSE(pre.tok);
    CHECK(pre.err.find("unknown pre-tokenizer 'mystery-pre'") != std::string::npos);

    tiny types = make_tiny(kTinyTokens, {1, 1}, {});
    CHECK_FALSE(types.tok);
    CHECK(types.err == "tiny.gguf: tokenizer.ggml.token_type has 2 entries but tokenizer.ggml.tokens has 9");

    gguf_writer w;
    w.kv("tokenizer.ggml.model", meta::str("gpt2"));
    const gguf_image img = w.build();
    std::string err;
    auto file = gguf_file::from_memory(img.bytes.data(), img.bytes.size(), "empty.gguf", err);
    REQUIRE(file);
    CHECK_FALSE(tokenizer::from_gguf(*file, err));
    CHECK(err == "empty.gguf: missing tokenizer.ggml.tokens (a string array): the file carries no vocabulary");
}

// ---- SmolLM2 (ids verified with llama.cpp) --------------------------------------------

TEST_CASE("smollm2: metadata") {
    const tokenizer &t = smollm();
    CHECK(t.n_vocab() == 49152);
    CHECK(t.pre_name() == "smollm");
    CHECK_FALSE(t.add_bos());
    CHECK(t.bos() == 1);
    CHECK(t.eos() == 2);
    CHECK(t.n_merges_unknown() == 0);
    CHECK(t.token_id("<|im_start|>") == 1);
    CHECK(t.token_id("Ġ") == 216);
    CHECK_FALSE(t.token_id("no such token"));
    CHECK(t.token_text(216) == "Ġ");
}

TEST_CASE("smollm2: Hello world") {
    CHECK(smollm().encode("Hello world", false) == ids({19556, 905}));
}

TEST_CASE("smollm2: digits are split one per token") {
    CHECK(smollm().encode("Hello 123", false) == ids({19556, 216, 33, 34, 35}));
}

TEST_CASE("smollm2: <|im_start|> is one token only when parse_special") {
    const tokenizer &t = smollm();
    const std::string s = "<|im_start|>user\nhi<|im_end|>";
    CHECK(t.encode(s, true) == ids({1, 4093, 198, 6004, 2}));
    CHECK(t.encode(s, false) ==
          ids({44, 108, 306, 79, 3738, 108, 46, 4093, 198, 6004, 44, 108, 306, 79, 486, 108, 46}));
}

TEST_CASE("smollm2: whitespace runs leave their last space to the next word") {
    CHECK(smollm().encode("a  b\n\n c   ", true) == ids({81, 216, 278, 1116, 265, 333}));
}

TEST_CASE("smollm2: invalid UTF-8 becomes U+FFFD per bad byte, as in llama.cpp") {
    // E2 82 (truncated), 'A', FF  ->  FFFD FFFD A FFFD
    CHECK(smollm().encode("\xE2\x82" "A\xFF", true) == ids({24211, 24211, 49, 24211}));
    CHECK(smollm().encode("\xED\xA0\x80", true).size() == 3); // a surrogate survives as 3 bytes
}

TEST_CASE("smollm2: decode(encode(s)) gives s back") {
    const tokenizer &t = smollm();
    for (const std::string s : {"Hello world", "  two spaces\tand a tab\n", "日本語 😀 café",
                                "<|im_start|>user\nhi<|im_end|>\n", "x² ½ ٣٤"}) {
        CAPTURE(s);
        CHECK(t.decode(t.encode(s, true), true) == s);
    }
}

TEST_CASE("smollm2: control tokens render only when asked") {
    const tokenizer &t = smollm();
    CHECK(t.token_bytes(2, true) == "<|im_end|>");
    CHECK(t.token_bytes(2, false).empty());
    CHECK(t.decode(ids({1, 4093, 198}), false) == "user\n");
    CHECK(t.token_bytes(-1, true).empty());
    CHECK(t.token_bytes(49152, true).empty());
}

TEST_CASE("smollm2: end of generation is <|endoftext|> and <|im_end|>") {
    const tokenizer &t = smollm();
    CHECK(t.is_eog(0));
    CHECK(t.is_eog(2));
    CHECK_FALSE(t.is_eog(1));
    CHECK_FALSE(t.is_eog(19556));
    CHECK_FALSE(t.is_eog(-1));
}

TEST_CASE("smollm2: encode from several threads at once gives the same ids") {
    const tokenizer &t = smollm();
    const std::string text = "The quick brown fox jumps over the lazy dog 12345 <|im_end|> 😀\n";
    const std::vector<int32_t> want = t.encode(text, true);
    std::vector<std::vector<int32_t>> got(4);
    std::vector<std::thread> threads;
    for (auto &g : got)
        threads.emplace_back([&t, &text, &g] {
            for (int i = 0; i < 50; ++i) g = t.encode(text, true);
        });
    for (auto &th : threads) th.join();
    for (const auto &g : got) CHECK(g == want);
}

// The golden test: every string of the fixture, produced by llama.cpp (llama-cpp-python,
// add_bos=False, special=True), encodes to exactly llama.cpp's ids and decodes back.
TEST_CASE("smollm2: golden fixture matches llama.cpp for every string") {
    const tokenizer &t = smollm();
    const std::string path = test_paths::fixtures() + "/tokenizer_smollm2.jsonl";
    REQUIRE_MESSAGE(std::filesystem::exists(path), path, " is missing (scripts/gen_reference.sh writes it)");
    simdjson::ondemand::parser parser;
    simdjson::padded_string json;
    REQUIRE(simdjson::padded_string::load(path).get(json) == simdjson::SUCCESS);
    simdjson::ondemand::document_stream stream;
    REQUIRE(parser.iterate_many(json).get(stream) == simdjson::SUCCESS);
    size_t n_lines = 0, n_roundtrip = 0;
    for (auto doc : stream) {
        simdjson::ondemand::object obj;
        REQUIRE(doc.get_object().get(obj) == simdjson::SUCCESS);
        std::string_view text_view;
        REQUIRE(obj["text"].get_string().get(text_view) == simdjson::SUCCESS);
        const std::string text(text_view);
        std::vector<int32_t> want;
        simdjson::ondemand::array arr;
        REQUIRE(obj["ids"].get_array().get(arr) == simdjson::SUCCESS);
        for (auto v : arr) want.push_back(static_cast<int32_t>(int64_t(v.get_int64())));
        bool roundtrip = true;
        if (bool rt; obj["roundtrip"].get_bool().get(rt) == simdjson::SUCCESS) roundtrip = rt;
        ++n_lines;

        const std::vector<int32_t> got = t.encode(text, true);
        if (got != want) {
            FAIL_CHECK("line ", n_lines, ": encode(\"", text, "\")\n  llama.cpp: ", show(want),
                       "\n  actorserve: ", show(got));
            break; // the first mismatch is the useful one
        }
        if (roundtrip) {
            ++n_roundtrip;
            CHECK_MESSAGE(t.decode(got, true) == text, "line ", n_lines, ": decode does not give back \"", text, "\"");
        }
    }
    MESSAGE(n_lines, " fixture strings matched llama.cpp, ", n_roundtrip, " round-tripped");
    CHECK(n_lines >= 100);
}

// The chat prompts of the greedy-decoding fixture were tokenized by llama.cpp too.
TEST_CASE("smollm2: generation fixture prompts encode to llama.cpp's prompt ids") {
    const tokenizer &t = smollm();
    const std::string path = test_paths::fixtures() + "/generation_smollm2.json";
    REQUIRE_MESSAGE(std::filesystem::exists(path), path, " is missing (scripts/gen_reference.sh writes it)");
    simdjson::ondemand::parser parser;
    simdjson::padded_string json;
    REQUIRE(simdjson::padded_string::load(path).get(json) == simdjson::SUCCESS);
    simdjson::ondemand::document doc = parser.iterate(json);
    simdjson::ondemand::array prompts;
    REQUIRE(doc["prompts"].get_array().get(prompts) == simdjson::SUCCESS);
    size_t n = 0;
    for (auto p : prompts) {
        std::string_view text;
        REQUIRE(p["prompt"].get_string().get(text) == simdjson::SUCCESS);
        const std::string prompt(text);
        std::vector<int32_t> want;
        for (auto v : p["prompt_ids"].get_array()) want.push_back(static_cast<int32_t>(int64_t(v.get_int64())));
        CHECK_MESSAGE(t.encode(prompt, true) == want, "prompt \"", prompt, "\"");
        ++n;
    }
    CHECK(n >= 1);
}

// ---- utf8_stream -----------------------------------------------------------------------

TEST_CASE("utf8_stream: a 4-byte emoji fed one byte at a time comes out whole, once") {
    const std::string emoji = "\xF0\x9F\x98\x80"; // U+1F600
    utf8_stream s;
    CHECK(s.push(emoji.substr(0, 1)) == "");
    CHECK(s.push(emoji.substr(1, 1)) == "");
    CHECK(s.push(emoji.substr(2, 1)) == "");
    CHECK(s.push(emoji.substr(3, 1)) == emoji);
    CHECK_FALSE(s.has_pending());
    CHECK(s.flush() == "");
}

TEST_CASE("utf8_stream: complete text passes through and only the torn tail waits") {
    utf8_stream s;
    CHECK(s.push("ab\xC3") == "ab");
    CHECK(s.push("\xA9" "cd") == "\xC3\xA9" "cd"); // é
}

TEST_CASE("utf8_stream: bytes that can never form a character become U+FFFD") {
    utf8_stream s;
    CHECK(s.push("a\xFF" "b") == "a\xEF\xBF\xBD" "b");
    CHECK(s.push("\xE2\x82" "x") == "\xEF\xBF\xBD" "x"); // one U+FFFD for the torn E2 82
    CHECK(s.push("\xE2") == "");
    CHECK(s.flush() == "\xEF\xBF\xBD"); // stream ended inside a character
    CHECK(s.flush() == "");
}

TEST_CASE("utf8_stream: SmolLM2 token bytes of an emoji stream out as one character") {
    const tokenizer &t = smollm();
    const std::vector<int32_t> toks = t.encode("😀!", false);
    utf8_stream s;
    std::string out;
    for (int32_t id : toks) {
        const std::string piece = s.push(t.token_bytes(id, false));
        CHECK(is_valid_utf8(piece));
        out += piece;
    }
    out += s.flush();
    CHECK(out == "😀!");
}

TEST_CASE("is_valid_utf8: overlongs, surrogates and values past U+10FFFF are invalid") {
    CHECK(is_valid_utf8(""));
    CHECK(is_valid_utf8("h\xC3\xA9llo \xF0\x9F\x98\x80"));
    CHECK_FALSE(is_valid_utf8("\xC0\x80"));          // overlong NUL
    CHECK_FALSE(is_valid_utf8("\xED\xA0\x80"));      // U+D800
    CHECK_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // U+110000
    CHECK_FALSE(is_valid_utf8("\xE2\x82"));          // truncated
    CHECK_FALSE(is_valid_utf8("\x80"));              // lone continuation
}
