// User text as the injection guard reads it (docs/policy.md, "Prompt-injection guard"): the
// tricks that hide words from a reader or a filter undone, so that the classifier and the rules
// see what the model would.
//
//   zero-width and bidi controls, soft hyphens      removed   ("ig\u200Bnore" -> "ignore")
//   Unicode tag characters (U+E0020..U+E007E)       decoded to the ASCII they mirror ("ASCII smuggling")
//   compatibility forms (fullwidth, math letters)   NFKC with case folding (ICU): "𝐈𝐆𝐍𝐎𝐑𝐄" -> "ignore"
//   confusable letters of other scripts             their Latin skeleton (ICU uspoof): Cyrillic "о" -> "o"
//
// and, apart from the text: the ROT13 of it and the decoded base64 spans in it, which the guard
// reads as well (an instruction written so that a filter does not see it is still one).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace actorserve {

struct normalized_text {
    std::string text;            // UTF-8, case-folded
    bool hidden = false;         // zero-width or bidi controls were removed
    bool tags = false;           // tag characters were decoded
    bool confusables = false;    // letters of another script were read as their Latin lookalikes
    bool invalid_utf8 = false;   // the input was not well-formed (read with replacement characters)
};

normalized_text normalize_for_guard(std::string_view utf8);

// The ROT13 of the ASCII letters of s.
std::string rot13(std::string_view s);

// Decoded runs of 16 or more base64 characters whose decoding is mostly printable ASCII text
// (at most `max_spans` of them, each at most 4 KiB).
std::vector<std::string> base64_spans(std::string_view s, size_t max_spans = 4);

} // namespace actorserve
