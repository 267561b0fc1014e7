#include "engine/wordpiece.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "engine/utf8.h"
#include "engine/wordpiece_unicode.h"

namespace actorserve {

namespace wu = wordpiece_unicode;

namespace {

// Strict UTF-8 decoding of the code point at s[pos] (Unicode Table 3-7). On success advances
// pos and returns true; on a malformed sequence returns false and leaves pos at its start.
bool next_code_point(std::string_view s, size_t &pos, uint32_t &cp) {
    const auto b = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
    const uint8_t c0 = b(pos);
    if (c0 < 0x80) {
        cp = c0;
        ++pos;
        return true;
    }
    int n = 0;
    uint8_t lo = 0x80, hi = 0xBF; // the allowed range of the second byte
    if (c0 >= 0xC2 && c0 <= 0xDF) { n = 1; cp = c0 & 0x1Fu; }
    else if (c0 >= 0xE0 && c0 <= 0xEF) {
        n = 2; cp = c0 & 0x0Fu;
        if (c0 == 0xE0) lo = 0xA0;      // no overlongs
        if (c0 == 0xED) hi = 0x9F;      // no surrogates
    } else if (c0 >= 0xF0 && c0 <= 0xF4) {
        n = 3; cp = c0 & 0x07u;
        if (c0 == 0xF0) lo = 0x90;      // no overlongs
        if (c0 == 0xF4) hi = 0x8F;      // nothing above U+10FFFF
    } else return false;
    if (s.size() - pos <= static_cast<size_t>(n)) return false;
    for (int i = 1; i <= n; ++i) {
        const uint8_t c = b(pos + static_cast<size_t>(i));
        if (c < (i == 1 ? lo : 0x80) || c > (i == 1 ? hi : 0xBF)) return false;
        cp = (cp << 6) | (c & 0x3Fu);
    }
    pos += static_cast<size_t>(n) + 1;
    return true;
}

const wu::cp_range *find_range(const wu::cp_range *table, size_t n, uint32_t cp) {
    const wu::cp_range *end = table + n;
    const wu::cp_range *it = std::upper_bound(table, end, cp, [](uint32_t c, const wu::cp_range &r) { return c < r.first; });
    if (it == table) return nullptr;
    --it;
    return cp <= it->last ? it : nullptr;
}

// Appends what the normalizer makes of cp.
void normalize_code_point(uint32_t cp, std::u32string &out) {
    const wu::cp_range *r = find_range(wu::kNormRanges, wu::kNumNormRanges, cp);
    switch (r ? r->kind : static_cast<uint8_t>(wu::norm_keep)) {
    case wu::norm_keep: out += static_cast<char32_t>(cp); return;
    case wu::norm_drop: return;
    case wu::norm_pad:
        out += U' ';
        out += static_cast<char32_t>(cp);
        out += U' ';
        return;
    case wu::norm_hangul: {
        const uint32_t s = cp - 0xAC00;
        out += static_cast<char32_t>(0x1100 + s / 588);
        out += static_cast<char32_t>(0x1161 + (s % 588) / 28);
        if (s % 28) out += static_cast<char32_t>(0x11A7 + s % 28);
        return;
    }
    case wu::norm_map: {
        const wu::cp_mapping *end = wu::kMappings + wu::kNumMappings;
        const wu::cp_mapping *m =
            std::lower_bound(wu::kMappings, end, cp, [](const wu::cp_mapping &e, uint32_t c) { return e.cp < c; });
        if (m != end && m->cp == cp) {
            for (uint32_t i = 0; i < m->len; ++i) out += static_cast<char32_t>(wu::kMappingPool[m->offset + i]);
            return;
        }
        out += static_cast<char32_t>(cp); // note: unreachable with consistent tables
        return;
    }
    default: out += static_cast<char32_t>(cp); return;
    }
}

int class_of(uint32_t cp) {
    const wu::cp_range *r = find_range(wu::kClassRanges, wu::kNumClassRanges, cp);
    return r ? r->kind : 0;
}

} // namespace

std::unique_ptr<wordpiece_tokenizer> wordpiece_tokenizer::from_vocab_text(std::string_view text,
                                                                          const std::string &name, std::string &err) {
    if (!is_valid_utf8(text)) {
        err = name + ": vocabulary is not valid UTF-8";
        return nullptr;
    }
    std::unique_ptr<wordpiece_tokenizer> t(new wordpiece_tokenizer());
    size_t pos = 0;
    while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        if (nl == std::string_view::npos) nl = text.size();
        std::string_view line = text.substr(pos, nl - pos);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        const auto id = static_cast<int32_t>(t->pieces_.size());
        t->pieces_.emplace_back(line);
        t->ids_[std::string(line)] = id; // a repeated token: the later line wins, as in BERT's load_vocab
        pos = nl + 1;
    }
    if (t->pieces_.size() > static_cast<size_t>(INT32_MAX)) {
        err = name + ": vocabulary too large";
        return nullptr;
    }
    struct special { const char *piece; int32_t *id; };
    for (const special &s : {special{"[CLS]", &t->cls_}, special{"[SEP]", &t->sep_}, special{"[UNK]", &t->unk_},
                             special{"[PAD]", &t->pad_}}) {
        *s.id = t->find(s.piece);
        if (*s.id < 0) {
            err = name + ": vocabulary has no " + s.piece + " token (" + std::to_string(t->pieces_.size()) +
                  " lines; not a BERT vocab.txt?)";
            return nullptr;
        }
    }
    return t;
}

std::unique_ptr<wordpiece_tokenizer> wordpiece_tokenizer::load(const std::string &vocab_path, std::string &err) {
    std::ifstream in(vocab_path, std::ios::binary);
    if (!in) {
        err = vocab_path + ": cannot open";
        return nullptr;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) {
        err = vocab_path + ": read error";
        return nullptr;
    }
    return from_vocab_text(ss.str(), vocab_path, err);
}

int32_t wordpiece_tokenizer::find(std::string_view piece) const {
    const auto it = ids_.find(piece);
    return it == ids_.end() ? -1 : it->second;
}

template <class F> void wordpiece_tokenizer::for_each_word(std::string_view text, F &&on_word) const {
    std::u32string norm;
    norm.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
        uint32_t cp = 0;
        if (!next_code_point(text, pos, cp)) { ++pos; continue; } // callers validate first
        normalize_code_point(cp, norm);
    }
    std::string word;
    std::vector<uint32_t> char_ends; // byte offset after each character of word
    const auto flush = [&] {
        if (!word.empty() && !on_word(word, char_ends)) return false;
        word.clear();
        char_ends.clear();
        return true;
    };
    for (const char32_t c : norm) {
        const int cls = class_of(static_cast<uint32_t>(c));
        if (cls == wu::class_space) {
            if (!flush()) return;
        } else if (cls == wu::class_punct) {
            if (!flush()) return;
            append_utf8(word, static_cast<uint32_t>(c));
            char_ends.push_back(static_cast<uint32_t>(word.size()));
            if (!flush()) return;
        } else {
            append_utf8(word, static_cast<uint32_t>(c));
            char_ends.push_back(static_cast<uint32_t>(word.size()));
        }
    }
    flush();
}

void wordpiece_tokenizer::word_pieces(const std::string &word, const std::vector<uint32_t> &char_ends,
                                      std::vector<int32_t> &out) const {
    const size_t n = char_ends.size();
    if (n > static_cast<size_t>(kMaxWordChars)) {
        out.push_back(unk_);
        return;
    }
    // Greedy longest match: from each start, the longest run of characters in the vocabulary.
    // Cost: O(n^2) lookups for an n-character word in the worst case (n <= 100).
    const size_t first = out.size();
    std::string key;
    size_t start = 0; // in characters
    while (start < n) {
        const size_t b0 = start ? char_ends[start - 1] : 0;
        int32_t id = -1;
        size_t end = n;
        for (; end > start; --end) {
            const std::string_view sub = std::string_view(word).substr(b0, char_ends[end - 1] - b0);
            if (start == 0) {
                id = find(sub);
            } else {
                key.assign("##");
                key.append(sub);
                id = find(key);
            }
            if (id >= 0) break;
        }
        if (id < 0) {
            out.resize(first);
            out.push_back(unk_);
            return;
        }
        out.push_back(id);
        start = end;
    }
}

bool wordpiece_tokenizer::encode(std::string_view text, int max_tokens, std::vector<int32_t> &ids,
                                 std::string &err) const {
    ids.clear();
    for (size_t pos = 0; pos < text.size();) {
        uint32_t cp = 0;
        if (!next_code_point(text, pos, cp)) {
            err = "text is not valid UTF-8 (byte " + std::to_string(pos) + ")";
            return false;
        }
    }
    const size_t max_pieces = static_cast<size_t>(std::max(max_tokens, 2) - 2);
    ids.push_back(cls_);
    for_each_word(text, [&](const std::string &word, const std::vector<uint32_t> &char_ends) {
        word_pieces(word, char_ends, ids);
        if (ids.size() - 1 >= max_pieces) {
            ids.resize(1 + max_pieces); // truncation keeps the first pieces, as the reference does
            return false;
        }
        return true;
    });
    ids.push_back(sep_);
    return true;
}

std::vector<std::string> wordpiece_tokenizer::split_words(std::string_view text) const {
    std::vector<std::string> words;
    for_each_word(text, [&](const std::string &word, const std::vector<uint32_t> &) {
        words.push_back(word);
        return true;
    });
    return words;
}

} // namespace actorserve
