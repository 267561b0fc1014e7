// UTF-8 helpers: strict validation, a streaming decoder for token output, and the lenient
// code point reader the tokenizer needs to match llama.cpp on malformed input.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace actorserve {

// True when s is well-formed UTF-8 (Unicode Table 3-7: no overlongs, no surrogates,
// nothing above U+10FFFF).
bool is_valid_utf8(std::string_view s);

// Appends the UTF-8 encoding of cp. Code points that UTF-8 cannot carry (surrogates,
// above U+10FFFF) are written as U+FFFD.
void append_utf8(std::string &out, uint32_t cp);

// Turns a stream of byte chunks (one token's bytes at a time) into text that never ends in
// the middle of a character, so each piece can be printed or sent as valid UTF-8 on its own.
//   utf8_stream s; s.push("\xF0\x9F") == ""; s.push("\x98\x80") == "😀";
// note: everything returned is well-formed UTF-8. A byte sequence that can no longer become
// a character is replaced by one U+FFFD per maximal invalid subpart (the Unicode
// recommendation, also what Python's errors="replace" does).
class utf8_stream {
public:
    // Returns the longest complete prefix of (pending + bytes); an incomplete tail that may
    // still become a character stays pending (at most 3 bytes).
    std::string push(std::string_view bytes);
    // Returns what is pending, as U+FFFD when something was pending, and clears it.
    std::string flush();
    bool has_pending() const { return !pending_.empty(); }

private:
    std::string pending_;
};

// Code points as llama.cpp's unicode_cpts_from_utf8 reads them: lead and continuation bits
// are checked but overlongs, surrogates and values up to 0x1FFFFF are accepted; a byte that
// starts no valid sequence yields U+FFFD and the reader moves on by one byte.
// note: this is deliberately not a validator; it exists so that the tokenizer splits
// malformed text exactly where llama.cpp does.
std::vector<uint32_t> lenient_code_points(std::string_view s);

} // namespace actorserve
