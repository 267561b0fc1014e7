// What BERT's text normalizer and pre-tokenizer do with each code point, as tables generated
// from the Hugging Face tokenizers library (scripts/gen_wordpiece_tables.py writes
// wordpiece_unicode_data.cpp). wordpiece.cpp reads them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace actorserve::wordpiece_unicode {

// note: a range table covers code points [first, last]; ranges are sorted and disjoint.
struct cp_range {
    uint32_t first, last;
    uint8_t kind;
};
// One mapped code point: it becomes kMappingPool[offset, offset + len).
struct cp_mapping {
    uint32_t cp;
    uint32_t offset;
    uint32_t len;
};

// Normalizer kinds. Clean text (drop controls, U+0000, U+FFFD; whitespace -> ' '), pad CJK
// ideographs with spaces, NFD and drop nonspacing marks, lowercase: one code point becomes
enum norm_kind : uint8_t {
    norm_keep = 0, // itself
    norm_drop = 1, // nothing
    norm_pad = 2,  // ' ', itself, ' '
    norm_map = 3,  // the code points kMappings lists for it
    norm_hangul = 4, // a precomposed Hangul syllable: its 2 or 3 conjoining jamo (Unicode 3.12)
};
// Pre-tokenizer classes of a code point of normalized text (absent from kClassRanges: neither).
enum class_kind : uint8_t {
    class_space = 1, // ends a word and is dropped
    class_punct = 2, // a word of its own
};

extern const cp_range kNormRanges[];     // covers 0..0x10FFFF
extern const size_t kNumNormRanges;
extern const cp_mapping kMappings[];     // sorted by cp
extern const size_t kNumMappings;
extern const uint32_t kMappingPool[];
extern const cp_range kClassRanges[];
extern const size_t kNumClassRanges;

} // namespace actorserve::wordpiece_unicode
