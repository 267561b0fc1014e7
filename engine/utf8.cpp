#include "engine/utf8.h"

namespace actorserve {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD"; // U+FFFD

enum class seq { complete, truncated, invalid };
struct scan_result {
    seq kind;
    size_t len; // complete: bytes of the character; invalid: bytes of the maximal subpart
};

// Reads the character at the start of s (s non-empty). Byte ranges from Unicode Table 3-7;
// only the second byte has a range narrower than 80..BF.
scan_result scan_one(std::string_view s) {
    const auto b0 = static_cast<uint8_t>(s[0]);
    if (b0 < 0x80) return {seq::complete, 1};
    size_t n_cont = 0;
    uint8_t lo = 0x80, hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) n_cont = 1;
    else if (b0 == 0xE0) { n_cont = 2; lo = 0xA0; }      // no overlongs
    else if (b0 == 0xED) { n_cont = 2; hi = 0x9F; }      // no surrogates
    else if (b0 >= 0xE1 && b0 <= 0xEF) n_cont = 2;
    else if (b0 == 0xF0) { n_cont = 3; lo = 0x90; }      // no overlongs
    else if (b0 == 0xF4) { n_cont = 3; hi = 0x8F; }      // nothing above U+10FFFF
    else if (b0 >= 0xF1 && b0 <= 0xF3) n_cont = 3;
    else return {seq::invalid, 1};                       // 80..C1, F5..FF
    for (size_t i = 1; i <= n_cont; ++i) {
        if (i >= s.size()) return {seq::truncated, i};
        const auto b = static_cast<uint8_t>(s[i]);
        if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) return {seq::invalid, i};
    }
    return {seq::complete, n_cont + 1};
}

} // namespace

bool is_valid_utf8(std::string_view s) {
    while (!s.empty()) {
        const scan_result r = scan_one(s);
        if (r.kind != seq::complete) return false;
        s.remove_prefix(r.len);
    }
    return true;
}

void append_utf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000 && (cp < 0xD800 || cp > 0xDFFF)) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp >= 0x10000 && cp <= 0x10FFFF) {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += kReplacement;
    }
}

std::string utf8_stream::push(std::string_view bytes) {
    std::string in;
    std::string_view s = bytes;
    if (!pending_.empty()) {
        in = pending_ + std::string(bytes);
        s = in;
        pending_.clear();
    }
    std::string out;
    out.reserve(s.size());
    while (!s.empty()) {
        const scan_result r = scan_one(s);
        if (r.kind == seq::truncated) {
            pending_.assign(s); // note: a truncated prefix is at most 3 bytes
            break;
        }
        if (r.kind == seq::complete) out.append(s.substr(0, r.len));
        else out += kReplacement;
        s.remove_prefix(r.len);
    }
    return out;
}

std::string utf8_stream::flush() {
    if (pending_.empty()) return {};
    pending_.clear();
    return std::string(kReplacement);
}

std::vector<uint32_t> lenient_code_points(std::string_view s) {
    std::vector<uint32_t> cps;
    cps.reserve(s.size());
    auto cont = [&](size_t i) { return i < s.size() && (static_cast<uint8_t>(s[i]) & 0xC0) == 0x80; };
    size_t i = 0;
    while (i < s.size()) {
        const auto b0 = static_cast<uint8_t>(s[i]);
        auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(s[i + k]) & 0x3F); };
        if (b0 < 0x80) {
            cps.push_back(b0);
            i += 1;
        } else if ((b0 & 0xE0) == 0xC0 && cont(i + 1)) {
            cps.push_back((uint32_t{b0} & 0x1F) << 6 | byte(1));
            i += 2;
        } else if ((b0 & 0xF0) == 0xE0 && cont(i + 1) && cont(i + 2)) {
            cps.push_back((uint32_t{b0} & 0x0F) << 12 | byte(1) << 6 | byte(2));
            i += 3;
        } else if ((b0 & 0xF8) == 0xF0 && cont(i + 1) && cont(i + 2) && cont(i + 3)) {
            cps.push_back((uint32_t{b0} & 0x07) << 18 | byte(1) << 12 | byte(2) << 6 | byte(3));
            i += 4;
        } else {
            cps.push_back(0xFFFD);
            i += 1;
        }
    }
    return cps;
}

} // namespace actorserve
