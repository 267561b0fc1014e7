// SentencePiece (tokenizer.ggml.model = "llama"): hand-built vocabularies pin llama.cpp's rules
// (merge order by score, the space prefix, byte fallback, Phi-3's stripped whitespace). The
// tiny SPM models of tests/engine/test_arch.cpp check the same tokenizer against llama.cpp's
// own ids (tests/fixtures/tiny_models.json).
#include "engine/tokenizer.h"
#include "gguf_writer.h"

#include <doctest/doctest.h>

#include <cstdio>

using namespace actorserve;
using namespace actorserve::testing;

namespace {

std::vector<int32_t> ids(std::initializer_list<int32_t> v) { return v; }

struct piece {
    std::string text;
    float score = 0;
    int32_t type = 1;
};

// ids: 0 <unk>, 1 <s>, 2 </s>, 3 .. 258 the byte tokens <0x00> .. <0xFF>, then `pieces`.
constexpr int32_t kFirst = 259;
int32_t byte_id(uint8_t b) { return 3 + b; }

struct spm {
    gguf_image image;
    std::unique_ptr<gguf_file> file;
    std::unique_ptr<tokenizer> tok;
    std::string err;
};

spm make_spm(const std::vector<piece> &pieces, std::optional<bool> space_prefix = std::nullopt,
             const std::string &name = "tiny", bool with_scores = true) {
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    std::vector<meta_value> types = {meta::i32(2), meta::i32(3), meta::i32(3)}, scores(3, meta::f32(0));
    for (int b = 0; b < 256; ++b) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "<0x%02X>", b);
        tokens.push_back(buf);
        types.push_back(meta::i32(6));
        scores.push_back(meta::f32(0));
    }
    for (const piece &p : pieces) {
        tokens.push_back(p.text);
        types.push_back(meta::i32(p.type));
        scores.push_back(meta::f32(p.score));
    }
    gguf_writer w;
    w.kv("general.name", meta::str(name));
    w.kv("tokenizer.ggml.model", meta::str("llama"));
    w.kv("tokenizer.ggml.tokens", meta::strings(tokens));
    w.kv("tokenizer.ggml.token_type", meta::array(gguf_type::int32, types));
    if (with_scores) w.kv("tokenizer.ggml.scores", meta::array(gguf_type::float32, scores));
    if (space_prefix) w.kv("tokenizer.ggml.add_space_prefix", meta::boolean(*space_prefix));
    spm t;
    t.image = w.build();
    t.file = gguf_file::from_memory(t.image.bytes.data(), t.image.bytes.size(), "spm.gguf", t.err);
    REQUIRE_MESSAGE(t.file, t.err);
    t.tok = tokenizer::from_gguf(*t.file, t.err);
    return t;
}

const std::string kU = "\xE2\x96\x81"; // U+2581, SentencePiece's space

} // namespace

TEST_CASE("spm: llama.cpp's defaults: BOS 1 added, EOS 2, a space prefix") {
    spm t = make_spm({{kU + "a", -1}});
    REQUIRE_MESSAGE(t.tok, t.err);
    CHECK(t.tok->model_kind() == tokenizer::kind::spm);
    CHECK(t.tok->add_bos());
    CHECK(t.tok->bos() == 1);
    CHECK(t.tok->eos() == 2);
    CHECK(t.tok->is_eog(2));
    CHECK(encode_prompt(*t.tok, "a") == ids({1, kFirst}));
}

TEST_CASE("spm: the pair making the best-scored token merges first, the leftmost on a tie") {
    // a b c; "ab" scores -2, "bc" -1: b+c first, then nothing merges a with bc
    spm t = make_spm({{"a", -5}, {"b", -5}, {"c", -5}, {"ab", -2}, {"bc", -1}}, false);
    REQUIRE_MESSAGE(t.tok, t.err);
    CHECK(t.tok->encode("abc", false) == ids({kFirst, kFirst + 4}));
    // equal scores: the left pair wins
    spm tie = make_spm({{"a", -5}, {"b", -5}, {"c", -5}, {"ab", -1}, {"bc", -1}}, false);
    REQUIRE_MESSAGE(tie.tok, tie.err);
    CHECK(tie.tok->encode("abc", false) == ids({kFirst + 3, kFirst + 2}));
}

TEST_CASE("spm: spaces are U+2581, and the prefix goes at the start and after each special token") {
    spm t = make_spm({{kU, -3}, {"a", -4}, {kU + "a", -1}, {"b", -4}, {kU + "b", -1}});
    REQUIRE_MESSAGE(t.tok, t.err);
    const int32_t ua = kFirst + 2, ub = kFirst + 4, u = kFirst;
    CHECK(t.tok->encode("a b", false) == ids({ua, ub}));
    CHECK(t.tok->encode("a  b", false) == ids({ua, u, ub}));
    CHECK(t.tok->encode("a</s>b", true) == ids({ua, 2, ub}));
    CHECK(t.tok->encode("a</s>b", false) != ids({ua, 2, ub})); // not parsed: "</s>" is text
    // parts: the text of adjacent parts is one fragment, so one prefix
    const prompt_part parts[] = {{"a"}, {" b"}};
    CHECK(t.tok->encode(parts) == ids({ua, ub}));
    CHECK(t.tok->token_bytes(ua, false) == " a");
    CHECK(t.tok->decode(ids({ua, ub}), false) == " a b");

    spm off = make_spm({{kU, -3}, {"a", -4}, {kU + "a", -1}}, false);
    REQUIRE_MESSAGE(off.tok, off.err);
    CHECK(off.tok->encode("a a", false) == ids({kFirst + 1, kFirst + 2})); // no prefix: a ▁a
}

TEST_CASE("spm: what no token covers goes out as byte tokens, which decode to their bytes") {
    spm t = make_spm({{kU, -1}});
    REQUIRE_MESSAGE(t.tok, t.err);
    // "é" is C3 A9; a stray continuation byte is a character of its own
    CHECK(t.tok->encode("\xC3\xA9", false) == ids({kFirst, byte_id(0xC3), byte_id(0xA9)}));
    CHECK(t.tok->encode("\xA9", false) == ids({kFirst, byte_id(0xA9)}));
    CHECK(t.tok->token_bytes(byte_id(0xC3), false) == "\xC3");
    CHECK(t.tok->decode(ids({byte_id(0xC3), byte_id(0xA9)}), false) == "\xC3\xA9");
    CHECK(t.tok->token_bytes(2, false).empty());
    CHECK(t.tok->token_bytes(2, true) == "</s>");
}

TEST_CASE("spm: Phi-3's special tokens drop the whitespace after them, as llama.cpp decides by name") {
    const std::vector<piece> pieces = {{kU, -3}, {"a", -4}, {kU + "a", -1}, {"<|user|>", 0, 3}, {"<|end|>", 0, 3}};
    const int32_t user = kFirst + 3, end = kFirst + 4, ua = kFirst + 2;
    spm phi = make_spm(pieces, std::nullopt, "Phi-3 mini 4k instruct");
    REQUIRE_MESSAGE(phi.tok, phi.err);
    CHECK(phi.tok->encode("<|user|>\n a<|end|>\n", true) == ids({user, ua, end}));
    CHECK(phi.tok->is_eog(end)); // <|end|> ends generation by its text
    spm other = make_spm(pieces);
    REQUIRE_MESSAGE(other.tok, other.err);
    CHECK(other.tok->encode("<|user|>\n a", true) == ids({user, kFirst, byte_id('\n'), ua}));
}

TEST_CASE("spm: a chat marker that is no token of the vocabulary is text joined with its neighbours") {
    spm t = make_spm({{kU, -3}, {"a", -4}, {kU + "a", -1}, {"[", -4}, {"]", -4}, {"X", -4}, {"[X]", -0.5f}, {"[X", -2}});
    REQUIRE_MESSAGE(t.tok, t.err);
    const std::string text = "[X] a</s>";
    const std::pair<size_t, size_t> controls[] = {{0, 3}, {5, 4}};
    // "[X]" is a normal token here, not a special one: it is text, so one space prefix before it
    CHECK(encode_prompt(*t.tok, text, controls) == encode_prompt(*t.tok, text));
    CHECK(encode_prompt(*t.tok, text) == ids({1, kFirst, kFirst + 6, kFirst + 2, 2}));
}

TEST_CASE("spm: a scores array of the wrong length is an error that says so") {
    gguf_writer w;
    w.kv("tokenizer.ggml.model", meta::str("llama"));
    w.kv("tokenizer.ggml.tokens", meta::strings({"<unk>", "<s>", "</s>"}));
    w.kv("tokenizer.ggml.scores", meta::array(gguf_type::float32, {meta::f32(0)}));
    const gguf_image img = w.build();
    std::string err;
    auto file = gguf_file::from_memory(img.bytes.data(), img.bytes.size(), "bad.gguf", err);
    REQUIRE(file);
    CHECK_FALSE(tokenizer::from_gguf(*file, err));
    CHECK(err == "bad.gguf: tokenizer.ggml.scores must be a float32 array of 3 entries, one per token");
}
