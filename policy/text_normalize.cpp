#include "policy/text_normalize.h"

#include <unicode/normalizer2.h>
#include <unicode/unistr.h>
#include <unicode/uspoof.h>
#include <unicode/utf8.h>

#include <memory>

namespace actorserve {

namespace {

bool invisible(UChar32 c) {
    return c == 0x00AD || (c >= 0x200B && c <= 0x200F) || (c >= 0x202A && c <= 0x202E) || (c >= 0x2060 && c <= 0x2064) ||
           (c >= 0x2066 && c <= 0x2069) || c == 0xFEFF || c == 0x180E;
}

// One checker for the process: ICU documents the skeleton call as thread-safe on a checker
// that is not reconfigured.
const USpoofChecker *spoof_checker() {
    static const USpoofChecker *sc = [] {
        UErrorCode st = U_ZERO_ERROR;
        USpoofChecker *c = uspoof_open(&st);
        return U_FAILURE(st) ? nullptr : c;
    }();
    return sc;
}

} // namespace

normalized_text normalize_for_guard(std::string_view utf8) {
    normalized_text out;
    // 1. decode, dropping invisibles and decoding tag characters
    icu::UnicodeString s;
    const auto *p = reinterpret_cast<const uint8_t *>(utf8.data());
    const int32_t n = static_cast<int32_t>(utf8.size());
    for (int32_t i = 0; i < n;) {
        UChar32 c;
        U8_NEXT(p, i, n, c);
        if (c < 0) {
            out.invalid_utf8 = true;
            c = 0xFFFD;
        }
        if (invisible(c)) {
            out.hidden = true;
            continue;
        }
        if (c >= 0xE0020 && c <= 0xE007E) {
            out.tags = true;
            c -= 0xE0000;
        } else if (c >= 0xE0000 && c <= 0xE007F) {
            out.tags = true;
            continue;
        }
        s.append(c);
    }
    // 2. NFKC with case folding
    UErrorCode st = U_ZERO_ERROR;
    const icu::Normalizer2 *nfkc = icu::Normalizer2::getNFKCCasefoldInstance(st);
    icu::UnicodeString folded = U_SUCCESS(st) ? nfkc->normalize(s, st) : s;
    if (U_FAILURE(st)) folded = s;
    // 3. confusable letters: in a word that mixes ASCII letters with others, or whose letters
    // all have an ASCII skeleton, each letter outside ASCII is read as its skeleton. A word of
    // another script ("καλημέρα") stays as it is.
    const USpoofChecker *sc = spoof_checker();
    auto skeleton = [&](UChar32 c, std::u16string &out16) {
        UChar one[2];
        int32_t len = 0;
        U16_APPEND_UNSAFE(one, len, c);
        UChar skel[16];
        UErrorCode e2 = U_ZERO_ERROR;
        const int32_t m = sc ? uspoof_getSkeleton(sc, 0, one, len, skel, 16, &e2) : 0;
        if (U_FAILURE(e2) || m <= 0 || m > 16) return false;
        for (int32_t j = 0; j < m; ++j)
            if (skel[j] >= 0x80 || skel[j] < 0x20) return false;
        for (int32_t j = 0; j < m; ++j) out16.push_back(static_cast<char16_t>(u_tolower(skel[j])));
        return true;
    };
    icu::UnicodeString result;
    for (int32_t i = 0; i < folded.length();) {
        UChar32 c = folded.char32At(i);
        if (!u_isalpha(c)) {
            result.append(c);
            i += U16_LENGTH(c);
            continue;
        }
        // one word: a run of letters
        int32_t end = i;
        bool has_ascii = false, all_map = true, any_other = false;
        std::u16string mapped;
        while (end < folded.length() && u_isalpha(c = folded.char32At(end))) {
            if (c < 0x80) {
                has_ascii = true;
                mapped.push_back(static_cast<char16_t>(c));
            } else {
                any_other = true;
                if (!skeleton(c, mapped)) all_map = false;
            }
            end += U16_LENGTH(c);
        }
        if (any_other && all_map && (has_ascii || end - i > 1)) {
            out.confusables = true;
            result.append(icu::UnicodeString(reinterpret_cast<const UChar *>(mapped.data()), static_cast<int32_t>(mapped.size())));
        } else if (any_other && has_ascii) {
            // mixed, not all mapped: map what maps
            out.confusables = true;
            for (int32_t k = i; k < end;) {
                const UChar32 d = folded.char32At(k);
                std::u16string one;
                if (d >= 0x80 && skeleton(d, one))
                    result.append(icu::UnicodeString(reinterpret_cast<const UChar *>(one.data()), static_cast<int32_t>(one.size())));
                else
                    result.append(d);
                k += U16_LENGTH(d);
            }
        } else {
            result.append(folded, i, end - i);
        }
        i = end;
    }
    result.toUTF8String(out.text);
    return out;
}

std::string rot13(std::string_view s) {
    std::string out(s);
    for (char &c : out) {
        if (c >= 'a' && c <= 'z') c = static_cast<char>('a' + (c - 'a' + 13) % 26);
        else if (c >= 'A' && c <= 'Z') c = static_cast<char>('A' + (c - 'A' + 13) % 26);
    }
    return out;
}

std::vector<std::string> base64_spans(std::string_view s, size_t max_spans) {
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '+' || c == '-') return 62;
        if (c == '/' || c == '_') return 63;
        return -1;
    };
    std::vector<std::string> out;
    for (size_t i = 0; i < s.size() && out.size() < max_spans;) {
        if (value(s[i]) < 0) {
            ++i;
            continue;
        }
        size_t j = i;
        while (j < s.size() && value(s[j]) >= 0) ++j;
        const size_t len = j - i;
        if (len >= 16) {
            std::string dec;
            uint32_t acc = 0;
            int bits = 0;
            for (size_t k = i; k < j && dec.size() < 4096; ++k) {
                acc = (acc << 6) | static_cast<uint32_t>(value(s[k]));
                bits += 6;
                if (bits >= 8) {
                    bits -= 8;
                    dec.push_back(static_cast<char>((acc >> bits) & 0xFF));
                }
            }
            size_t printable = 0;
            for (unsigned char c : dec) printable += (c >= 0x20 && c < 0x7F) || c == '\n' || c == '\t';
            if (!dec.empty() && printable * 10 >= dec.size() * 9) out.push_back(std::move(dec));
        }
        i = j;
        while (i < s.size() && s[i] == '=') ++i;
    }
    return out;
}

} // namespace actorserve
