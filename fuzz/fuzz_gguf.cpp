// libFuzzer target: the GGUF reader (engine/gguf.h) on any bytes, then the tokenizer on whatever
// it accepts; each tensor's first and last byte are read (a bad offset shows as an ASan report).
// A clean refusal is the expected outcome of most inputs; a crash, a hang, a leak or a sanitizer
// report is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/gguf.h"
#include "engine/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    std::string err;
    auto file = actorserve::gguf_file::from_memory(data, size, "fuzz.gguf", err);
    if (!file) return 0;
    for (const auto &[key, value] : file->metadata()) (void)file->find(key);
    volatile uint8_t sink = 0;
    for (const auto &t : file->tensors()) {
        (void)t.shape_string();
        if (t.nbytes > 0) sink = static_cast<uint8_t>(sink ^ t.data[0] ^ t.data[t.nbytes - 1]);
    }
    (void)sink;
    auto tok = actorserve::tokenizer::from_gguf(*file, err);
    if (tok) {
        const std::string text = "Hello, world! <|im_start|> \xC3\xA9 123";
        (void)tok->decode(tok->encode(text, true), true);
    }
    return 0;
}
