// libFuzzer target: the two tokenizers on any bytes, with the real vocabularies.
//   - the model's byte-level BPE (engine/tokenizer.h, from the default GGUF file): encode never
//     fails; for well-formed UTF-8, decode(encode(s)) == s both with and without special tokens
//     (a mismatch aborts, so libFuzzer keeps the input), except for the bytes that have no token
//     of their own: the default model's vocabulary lacks 0x04 0x06 0x13 0x14 0x16 0x1d (and
//     0xc0 0xc1 0xf1 0xf2 0xf5-0xff), and a piece that falls back to bytes loses those, as in
//     llama.cpp (llm_tokenizer_bpe_session: a byte whose symbol is not in the vocabulary is
//     skipped). So the expected text is s without them;
//   - the embedder's WordPiece (engine/wordpiece.h): refuses malformed UTF-8 by name, otherwise
//     gives at most max_tokens ids, each in the vocabulary.
// Files: ACTORSERVE_FUZZ_MODEL [models/SmolLM2-135M-Instruct.Q4_1.gguf] and
// ACTORSERVE_FUZZ_VOCAB [models/all-MiniLM-L6-v2/vocab.txt], relative to the working folder.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf.h"
#include "engine/tokenizer.h"
#include "engine/utf8.h"
#include "engine/wordpiece.h"

namespace {

std::unique_ptr<actorserve::gguf_file> g_file;
std::unique_ptr<actorserve::tokenizer> g_bpe;
std::unique_ptr<actorserve::wordpiece_tokenizer> g_wordpiece;
bool g_has_byte[256] = {}; // the byte has a token of its own

const char *env_or(const char *name, const char *fallback) {
    const char *v = std::getenv(name);
    return v && *v ? v : fallback;
}

[[noreturn]] void die(const std::string &what) {
    std::fprintf(stderr, "fuzz_tokenizer: %s\n", what.c_str());
    std::abort();
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    std::string err;
    g_file = actorserve::gguf_file::open(env_or("ACTORSERVE_FUZZ_MODEL", "models/SmolLM2-135M-Instruct.Q4_1.gguf"), err);
    if (!g_file) die(err);
    g_bpe = actorserve::tokenizer::from_gguf(*g_file, err);
    if (!g_bpe) die(err);
    for (int32_t id = 0; id < g_bpe->n_vocab(); ++id) {
        const std::string b = g_bpe->token_bytes(id, false);
        if (b.size() == 1) g_has_byte[static_cast<uint8_t>(b[0])] = true;
    }
    g_wordpiece = actorserve::wordpiece_tokenizer::load(env_or("ACTORSERVE_FUZZ_VOCAB", "models/all-MiniLM-L6-v2/vocab.txt"), err);
    if (!g_wordpiece) die(err);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    const bool valid = actorserve::is_valid_utf8(text);
    std::string expected;
    for (char c : text)
        if (g_has_byte[static_cast<uint8_t>(c)]) expected += c;
    for (bool special : {false, true}) {
        const std::vector<int32_t> ids = g_bpe->encode(text, special);
        for (int32_t id : ids)
            if (id < 0 || id >= g_bpe->n_vocab()) die("id out of range: " + std::to_string(id));
        const std::string back = g_bpe->decode(ids, special);
        if (valid && back != expected) die(std::string("decode(encode(s)) != s with parse_special=") + (special ? "true" : "false"));
    }
    std::vector<int32_t> ids;
    std::string err;
    const int max_tokens = 2 + static_cast<int>(size % 300);
    const bool ok = g_wordpiece->encode(text, max_tokens, ids, err);
    if (ok != valid) die("WordPiece: accepted malformed UTF-8, or refused well-formed: " + err);
    if (ok) {
        if (ids.size() < 2 || ids.size() > size_t(max_tokens)) die("WordPiece: " + std::to_string(ids.size()) + " ids");
        for (int32_t id : ids)
            if (id < 0 || size_t(id) >= g_wordpiece->vocab_size()) die("WordPiece: id out of range");
    }
    return 0;
}
