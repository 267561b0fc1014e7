#include "engine/tokenizer.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <queue>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "engine/utf8.h"

namespace actorserve {
namespace {

// ---- GPT-2 byte-level alphabet ---------------------------------------------------------
// Every byte gets a printable stand-in code point: bytes '!'..'~', U+00A1..U+00AC and
// U+00AE..U+00FF stand for themselves, the other 68 bytes take U+0100, U+0101, ... in byte
// order (so ' ' = 0x20 is 'Ġ' = U+0120 and '\n' is 'Ċ' = U+010A).
struct byte_alphabet {
    std::array<std::string, 256> encode; // byte -> UTF-8 of its stand-in
    std::array<int16_t, 0x144> decode;   // stand-in code point -> byte, -1 if none
};

const byte_alphabet &alphabet() {
    static const byte_alphabet table = [] {
        byte_alphabet t;
        t.decode.fill(-1);
        uint32_t next = 0x100;
        for (uint32_t b = 0; b < 256; ++b) {
            const bool self = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
            const uint32_t cp = self ? b : next++;
            append_utf8(t.encode[b], cp);
            t.decode[cp] = static_cast<int16_t>(b);
        }
        return t;
    }();
    return table;
}

// ---- pre-tokenizer patterns ------------------------------------------------------------
// Written exactly as llama.cpp writes them (src/llama-vocab.cpp), so a reader can diff.
constexpr const char *kGpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
constexpr const char *kLlama3 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// Qwen 2 / 2.5 / 3: Llama 3's pattern with single digits
constexpr const char *kQwen2 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

struct pre_family {
    std::vector<const char *> names;   // tokenizer.ggml.pre values
    std::vector<const char *> regexes; // applied in sequence
    bool ignore_merges;
    bool add_bos_default;
};

// note: llama.cpp's "default" really is this four-step chain (not the bare GPT-2 pattern);
// a missing tokenizer.ggml.pre also means "default" there and here.
const std::vector<pre_family> &pre_families() {
    static const std::vector<pre_family> families = {
        {{"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva",
          "minerva-7b"},
         {"\\p{N}", kGpt2}, false, false},
        {{"gpt-2", "gpt2", "phi-2", "mpt", "olmo"}, {kGpt2}, false, false},
        {{"llama3", "llama-v3", "llama-bpe", "falcon3"}, {kLlama3}, true, true},
        {{"qwen2", "deepseek-r1-qwen"}, {kQwen2}, false, false},
        {{"default", ""},
         {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2, "\\p{N}+", "[0-9][0-9][0-9]"}, false, false},
    };
    return families;
}

// llama.cpp's \s is Unicode White_Space, which adds U+0085 (NEXT LINE) to what PCRE2's \s
// matches under PCRE2_UCP (category Z plus \t\n\v\f\r). Widen every \s and \S accordingly.
std::string with_llama_whitespace(std::string_view pattern) {
    std::string out;
    bool in_class = false;
    for (size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        if (c == '\\' && i + 1 < pattern.size()) {
            const char e = pattern[++i];
            if (e == 's') out += in_class ? "\\s\\x{85}" : "[\\s\\x{85}]";
            else if (e == 'S' && !in_class) out += "[^\\s\\x{85}]";
            else { out += c; out += e; }
            continue;
        }
        if (c == '[') in_class = true;
        if (c == ']') in_class = false;
        out += c;
    }
    return out;
}

} // namespace

// ---- compiled regex chain --------------------------------------------------------------

struct tokenizer::regex_chain {
    std::vector<pcre2_code *> codes;
    ~regex_chain() {
        for (pcre2_code *c : codes) pcre2_code_free(c);
    }

    bool compile(const std::vector<const char *> &patterns, std::string &err) {
        for (const char *p : patterns) {
            const std::string pat = with_llama_whitespace(p);
            int errcode = 0;
            PCRE2_SIZE erroff = 0;
            pcre2_code *code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pat.c_str()), pat.size(),
                                             PCRE2_UTF | PCRE2_UCP, &errcode, &erroff, nullptr);
            if (!code) {
                PCRE2_UCHAR msg[256];
                pcre2_get_error_message(errcode, msg, sizeof msg);
                err = "cannot compile pre-tokenizer regex '" + pat + "' at offset " +
                      std::to_string(erroff) + ": " + reinterpret_cast<const char *>(msg);
                return false;
            }
            pcre2_jit_compile(code, PCRE2_JIT_COMPLETE); // optional speed-up; interpreter otherwise
            codes.push_back(code);
        }
        return true;
    }

    // Splits subject (valid UTF-8) into pieces given as (offset, length), llama.cpp style:
    // each regex runs over each current piece with the subject cut to that piece, so a
    // lookahead never sees past it; matches and the gaps between them both become pieces.
    // cost: one pcre2_match per produced piece per regex.
    std::vector<std::pair<size_t, size_t>> split(std::string_view subject) const {
        std::vector<std::pair<size_t, size_t>> pieces{{0, subject.size()}}, next;
        if (subject.empty()) return {};
        for (pcre2_code *code : codes) {
            pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, nullptr);
            next.clear();
            for (const auto &[begin, len] : pieces) {
                const auto *s = reinterpret_cast<PCRE2_SPTR>(subject.data() + begin);
                size_t at = 0, last = 0;
                while (at < len) {
                    int rc = pcre2_match(code, s, len, at, PCRE2_NO_UTF_CHECK, md, nullptr);
                    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
                        rc = pcre2_match(code, s, len, at, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md, nullptr);
                    // note: no match ends the scan; so does a PCRE2 resource error, which then
                    // leaves the rest of the piece as one gap instead of failing the request.
                    if (rc < 0) break;
                    const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
                    const size_t m0 = ov[0], m1 = ov[1];
                    if (m1 == m0) { // empty match (none of the shipped patterns has one): step one character
                        at = m1 + 1;
                        while (at < len && (s[at] & 0xC0) == 0x80) ++at;
                        continue;
                    }
                    if (m0 > last) next.emplace_back(begin + last, m0 - last);
                    next.emplace_back(begin + m0, m1 - m0);
                    last = at = m1;
                }
                if (last < len) next.emplace_back(begin + last, len - last);
            }
            pcre2_match_data_free(md);
            pieces.swap(next);
        }
        return pieces;
    }
};

// ---- loading ---------------------------------------------------------------------------

tokenizer::tokenizer() = default;
tokenizer::~tokenizer() = default;

std::unique_ptr<tokenizer> tokenizer::from_gguf(const gguf_file &file, std::string &err) {
    const std::string where = file.path() + ": ";
    const auto model = file.get_string("tokenizer.ggml.model");
    if (!model) {
        err = where + "missing tokenizer.ggml.model: the file carries no tokenizer";
        return nullptr;
    }
    if (*model != "gpt2" && *model != "llama") {
        err = where + "unsupported tokenizer model '" + *model +
              "' (supported: 'gpt2', byte-level BPE; 'llama', SentencePiece)";
        return nullptr;
    }
    const auto *tokens = file.get_array("tokenizer.ggml.tokens", gguf_type::string);
    if (!tokens || tokens->empty()) {
        err = where + "missing tokenizer.ggml.tokens (a string array): the file carries no vocabulary";
        return nullptr;
    }
    const size_t n_vocab = tokens->size();
    if (n_vocab > static_cast<size_t>(INT32_MAX)) {
        err = where + "tokenizer.ggml.tokens has " + std::to_string(n_vocab) + " entries, more than int32 ids allow";
        return nullptr;
    }
    const auto *types = file.get_array("tokenizer.ggml.token_type", gguf_type::int32);
    if (types && types->size() != n_vocab) {
        err = where + "tokenizer.ggml.token_type has " + std::to_string(types->size()) +
              " entries but tokenizer.ggml.tokens has " + std::to_string(n_vocab);
        return nullptr;
    }

    std::unique_ptr<tokenizer> t(new tokenizer());
    t->texts_.resize(n_vocab);
    t->types_.assign(n_vocab, token_type::normal);
    t->ids_.reserve(n_vocab);
    for (size_t i = 0; i < n_vocab; ++i) {
        std::string text = (*tokens)[i].s;
        // note: as in llama.cpp, an empty token gets a placeholder so it can never match
        if (text.empty()) text = "[EMPTY_" + std::to_string(i) + "]";
        if (types) {
            const int64_t v = (*types)[i].i;
            t->types_[i] = v >= 0 && v <= 6 ? static_cast<token_type>(v) : token_type::undefined;
        }
        t->ids_[text] = static_cast<int32_t>(i); // a later duplicate wins, as in llama.cpp
        t->texts_[i] = std::move(text);
    }
    if (*model == "gpt2" ? !t->load_bpe(file, where, err) : !t->load_spm(file, where, err)) return nullptr;

    auto special_id = [&](const char *key, int32_t &out) {
        const auto v = file.get_uint(key);
        if (!v) return true;
        if (*v >= n_vocab) {
            err = where + key + " = " + std::to_string(*v) + " is outside the vocabulary (" +
                  std::to_string(n_vocab) + " tokens)";
            return false;
        }
        out = static_cast<int32_t>(*v);
        return true;
    };
    if (!special_id("tokenizer.ggml.bos_token_id", t->bos_) ||
        !special_id("tokenizer.ggml.eos_token_id", t->eos_) ||
        !special_id("tokenizer.ggml.eot_token_id", t->eot_))
        return nullptr;

    // note: llama.cpp takes these texts as end of generation whatever their type, and makes
    // them control tokens (so they split from text and render only as specials)
    static const std::array<std::string_view, 10> kEogTexts = {
        "<|endoftext|>", "<|im_end|>", "<|eot_id|>", "<|end_of_text|>", "<|eom_id|>", "<end_of_turn>",
        "<|end|>", "<EOT>", "_<EOT>", "<end_of_utterance>"};
    t->eog_.assign(n_vocab, 0);
    for (int32_t id : {t->eos_, t->eot_})
        if (id >= 0) t->eog_[id] = 1;
    for (std::string_view text : kEogTexts)
        if (const auto it = t->ids_.find(std::string(text)); it != t->ids_.end()) {
            t->eog_[it->second] = 1;
            t->types_[it->second] = token_type::control;
        }
    for (size_t i = 0; i < n_vocab; ++i) {
        const token_type ty = t->types_[i];
        if (ty == token_type::control || ty == token_type::unknown || ty == token_type::user_defined)
            t->specials_.push_back(static_cast<int32_t>(i));
    }
    std::stable_sort(t->specials_.begin(), t->specials_.end(), [&](int32_t a, int32_t b) {
        return t->texts_[a].size() > t->texts_[b].size();
    });

    // Phi-3's files rely on llama.cpp dropping the whitespace after its special tokens (its
    // template writes "<|user|>\n"), which llama.cpp decides by the model's name.
    t->rstrip_.assign(n_vocab, 0);
    std::string name = file.get_string("general.name").value_or("");
    for (char &c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
        for (int32_t id : t->specials_) t->rstrip_[id] = 1;
        if (const auto it = t->ids_.find("</s>"); it != t->ids_.end()) t->rstrip_[it->second] = 1;
        for (const char *keep : {"<unk>", "<s>", "<|endoftext|>"})
            if (const auto it = t->ids_.find(keep); it != t->ids_.end()) t->rstrip_[it->second] = 0;
    }
    return t;
}

bool tokenizer::load_bpe(const gguf_file &file, const std::string &where, std::string &err) {
    const auto *merges = file.get_array("tokenizer.ggml.merges", gguf_type::string);
    if (!merges) {
        err = where + "missing tokenizer.ggml.merges (a string array), which a BPE tokenizer needs";
        return false;
    }
    pre_name_ = file.get_string("tokenizer.ggml.pre").value_or("default");
    const pre_family *family = nullptr;
    for (const pre_family &f : pre_families())
        for (const char *name : f.names)
            if (pre_name_ == name) family = &f;
    if (!family) {
        err = where + "unknown pre-tokenizer '" + pre_name_ +
              "' (tokenizer.ggml.pre); supported: smollm, starcoder, refact, command-r, codeshell, "
              "exaone, minerva, gpt-2, phi-2, mpt, olmo, llama3, llama-bpe, falcon3, qwen2, default";
        return false;
    }
    pre_ = std::make_unique<regex_chain>();
    if (!pre_->compile(family->regexes, err)) {
        err = where + err;
        return false;
    }
    ignore_merges_ = family->ignore_merges;
    add_bos_ = file.get_bool("tokenizer.ggml.add_bos_token").value_or(family->add_bos_default);

    // Merge "a b" has rank = its index; the split is at the first space after position 0.
    ranks_.reserve(merges->size());
    for (size_t i = 0; i < merges->size(); ++i) {
        const std::string &m = (*merges)[i].s;
        const size_t sp = m.find(' ', 1);
        if (sp == std::string::npos) {
            ++n_merges_unknown_;
            continue;
        }
        ranks_.try_emplace(m, static_cast<int32_t>(i)); // first occurrence wins
        const std::string left = m.substr(0, sp), right = m.substr(sp + 1);
        if (!ids_.count(left) || !ids_.count(right) || !ids_.count(left + right)) ++n_merges_unknown_;
    }
    return true;
}

bool tokenizer::load_spm(const gguf_file &file, const std::string &where, std::string &err) {
    kind_ = kind::spm;
    pre_name_.clear();
    const size_t n_vocab = texts_.size();
    scores_.assign(n_vocab, 0.0f);
    if (file.find("tokenizer.ggml.scores")) {
        const auto *scores = file.get_array("tokenizer.ggml.scores", gguf_type::float32);
        if (!scores || scores->size() != n_vocab) {
            err = where + "tokenizer.ggml.scores must be a float32 array of " + std::to_string(n_vocab) +
                  " entries, one per token";
            return false;
        }
        for (size_t i = 0; i < n_vocab; ++i) scores_[i] = static_cast<float>((*scores)[i].f);
    }
    // llama.cpp's defaults for a SentencePiece vocabulary; the file's keys override them
    // (read by from_gguf for the ids)
    auto in_vocab = [&](int32_t id) { return static_cast<size_t>(id) < n_vocab ? id : -1; };
    bos_ = in_vocab(1);
    eos_ = in_vocab(2);
    add_bos_ = file.get_bool("tokenizer.ggml.add_bos_token").value_or(true);
    add_space_prefix_ = file.get_bool("tokenizer.ggml.add_space_prefix").value_or(true);
    const auto unk = ids_.find("<unk>");
    for (int b = 0; b < 256; ++b) {
        static const char *hex = "0123456789ABCDEF";
        const std::string name = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
        auto it = ids_.find(name);
        if (it == ids_.end()) it = ids_.find(std::string(1, static_cast<char>(b)));
        // note: llama.cpp aborts on a byte with no token; an unknown token is kinder
        byte_ids_[static_cast<size_t>(b)] = it != ids_.end() ? it->second : unk != ids_.end() ? unk->second : -1;
    }
    return true;
}

// ---- encode ----------------------------------------------------------------------------

std::vector<int32_t> tokenizer::encode(std::string_view text, bool parse_special) const {
    const prompt_part part{text, parse_special};
    return encode(std::span<const prompt_part>(&part, 1));
}

namespace {
bool is_c_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); } // isspace() in the C locale
} // namespace

// Specials split the text into fragments (split_special); consecutive raw text, also across
// parts, is gathered into one fragment and tokenized when a token or the end follows.
std::vector<int32_t> tokenizer::encode(std::span<const prompt_part> parts) const {
    std::vector<int32_t> out;
    std::vector<std::pair<int32_t, std::string_view>> fragments;
    std::string raw;
    bool prev_special = true; // SPM: the space prefix goes before the first fragment too
    bool strip = false;       // the last token drops the whitespace after it (rstrip_)
    auto flush = [&] {
        if (raw.empty()) return;
        if (kind_ == kind::spm) encode_spm(raw, add_space_prefix_ && prev_special, out);
        else encode_fragment(raw, out);
        raw.clear();
        prev_special = false;
    };
    auto token = [&](int32_t id) {
        flush();
        out.push_back(id);
        prev_special = true;
        strip = id >= 0 && id < n_vocab() && rstrip_[static_cast<size_t>(id)];
    };
    auto text = [&](std::string_view t) {
        if (strip) {
            while (!t.empty() && is_c_space(t.front())) t.remove_prefix(1);
            if (t.empty()) return;
            strip = false;
        }
        raw += t;
    };
    for (const prompt_part &p : parts) {
        if (p.id >= 0) {
            token(p.id);
            continue;
        }
        split_special(p.text, p.parse_special, fragments);
        for (const auto &[id, frag] : fragments) {
            if (id >= 0) token(id);
            else text(frag);
        }
    }
    flush();
    return out;
}

// Cuts text into special tokens (id >= 0) and raw fragments (id -1), as llama.cpp's
// tokenizer_st_partition does: special tokens are taken longest text first, and each one
// splits every raw fragment at all its occurrences, left to right.
// cost: O(n_special * len); fine for tens of specials, noticeable for thousands.
void tokenizer::split_special(std::string_view text, bool parse_special,
                              std::vector<std::pair<int32_t, std::string_view>> &out) const {
    out.clear();
    if (text.empty()) return;
    out.emplace_back(-1, text);
    std::vector<std::pair<int32_t, std::string_view>> next;
    for (int32_t id : specials_) {
        if (!parse_special && types_[id] != token_type::user_defined) continue;
        const std::string &sp = texts_[id];
        next.clear();
        for (const auto &frag : out) {
            if (frag.first >= 0) {
                next.push_back(frag);
                continue;
            }
            std::string_view rest = frag.second;
            for (size_t at; (at = rest.find(sp)) != std::string_view::npos;) {
                if (at > 0) next.emplace_back(-1, rest.substr(0, at));
                next.emplace_back(id, std::string_view{});
                rest.remove_prefix(at + sp.size());
            }
            if (!rest.empty()) next.emplace_back(-1, rest);
        }
        out.swap(next);
    }
}

// One raw fragment: read it as code points the way llama.cpp does, split it with the
// pre-tokenizer, then BPE each piece.
void tokenizer::encode_fragment(std::string_view text, std::vector<int32_t> &out) const {
    std::string owned_bytes, owned_subject;
    std::string_view bytes = text, subject = text;
    if (!is_valid_utf8(text)) {
        // bytes: llama.cpp's re-encoding of its lenient code points (bad bytes -> U+FFFD,
        // overlongs shortened, surrogates kept as 3 bytes). subject: the same with each
        // surrogate replaced by U+E000 so PCRE2 gets valid UTF-8; both are "neither space,
        // letter nor number" and both take 3 bytes, so piece offsets agree.
        for (uint32_t cp : lenient_code_points(text)) {
            if (cp >= 0xD800 && cp <= 0xDFFF) {
                owned_bytes += static_cast<char>(0xE0 | (cp >> 12));
                owned_bytes += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
                owned_bytes += static_cast<char>(0x80 | (cp & 0x3F));
                append_utf8(owned_subject, 0xE000);
            } else {
                append_utf8(owned_bytes, cp); // above U+10FFFF becomes U+FFFD
                append_utf8(owned_subject, cp);
            }
        }
        bytes = owned_bytes;
        subject = owned_subject;
    }
    std::string key; // scratch for map lookups, reused across pieces
    for (const auto &[begin, len] : pre_->split(subject)) bpe(bytes.substr(begin, len), key, out);
}

int32_t tokenizer::merge_rank(std::string_view left, std::string_view right, std::string &key) const {
    key.assign(left);
    key += ' ';
    key += right;
    const auto it = ranks_.find(key);
    return it == ranks_.end() ? -1 : it->second;
}

// Byte-level BPE of one piece: map each byte to its stand-in character, then repeatedly merge
// the adjacent pair with the lowest merge rank (leftmost on ties) until no pair has a rank.
// Same result as llama.cpp's priority queue of bigrams, which this mirrors.
// cost: O(n log n) for a piece of n bytes.
void tokenizer::bpe(std::string_view piece, std::string &key, std::vector<int32_t> &out) const {
    const byte_alphabet &abc = alphabet();
    std::string word; // byte-level text of the piece, 1-2 bytes per input byte
    word.reserve(piece.size() * 2);
    for (char c : piece) word += abc.encode[static_cast<uint8_t>(c)];

    if (ignore_merges_) {
        key.assign(word);
        if (const auto it = ids_.find(key); it != ids_.end()) {
            out.push_back(it->second);
            return;
        }
    }

    struct symbol {
        uint32_t start, len; // bytes of word; len 0 once merged into its left neighbour
        int32_t prev, next;  // linked list of live symbols, -1 at the ends
    };
    std::vector<symbol> sym; // (n_bytes,) initially one per input byte
    sym.reserve(piece.size());
    for (uint32_t at = 0; at < word.size();) {
        const uint32_t len = (static_cast<uint8_t>(word[at]) < 0x80) ? 1 : 2;
        const auto i = static_cast<int32_t>(sym.size());
        sym.push_back({at, len, i - 1, at + len < word.size() ? i + 1 : -1});
        at += len;
    }
    auto text = [&](int32_t i) { return std::string_view(word).substr(sym[i].start, sym[i].len); };

    struct bigram {
        int32_t rank, left, right;
        uint32_t left_len, right_len; // sizes when queued; a change means the entry is stale
        bool operator>(const bigram &o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
    };
    std::priority_queue<bigram, std::vector<bigram>, std::greater<>> queue;
    auto push = [&](int32_t l, int32_t r) {
        if (l < 0 || r < 0) return;
        const int32_t rank = merge_rank(text(l), text(r), key);
        if (rank >= 0) queue.push({rank, l, r, sym[l].len, sym[r].len});
    };
    for (int32_t i = 1; i < static_cast<int32_t>(sym.size()); ++i) push(i - 1, i);

    while (!queue.empty()) {
        const bigram b = queue.top();
        queue.pop();
        symbol &l = sym[b.left], &r = sym[b.right];
        // note: symbols only grow or die, so unchanged sizes mean both are alive and still adjacent
        if (l.len != b.left_len || r.len != b.right_len || l.len == 0 || r.len == 0) continue;
        l.len += r.len;
        r.len = 0;
        l.next = r.next;
        if (r.next >= 0) sym[r.next].prev = b.left;
        push(l.prev, b.left);
        push(b.left, l.next);
    }

    for (int32_t i = sym.empty() ? -1 : 0; i >= 0; i = sym[i].next) {
        key.assign(text(i));
        if (const auto it = ids_.find(key); it != ids_.end()) {
            out.push_back(it->second);
            continue;
        }
        // A merge produced a symbol outside the vocabulary: emit its bytes one by one.
        for (uint32_t at = sym[i].start; at < sym[i].start + sym[i].len;) {
            const uint32_t len = (static_cast<uint8_t>(word[at]) < 0x80) ? 1 : 2;
            key.assign(word, at, len);
            if (const auto it = ids_.find(key); it != ids_.end()) out.push_back(it->second);
            at += len;
        }
    }
}

// SentencePiece BPE of one raw fragment, as llama.cpp's llm_tokenizer_spm_session: spaces
// become U+2581 ("▁"), the text is cut into characters by their lead byte (no validation:
// a stray byte is a character of its own), and the adjacent pair whose concatenation is the
// best-scored token is merged (leftmost on ties) until no pair is a token. A piece that is
// no token (only ever a single character) goes out as its bytes' tokens.
// note: llama.cpp also keeps a map to undo merges whose result is no token, but every merge
// it makes is a token, so that path never runs; it is left out.
// cost: O(n log n) for n characters.
void tokenizer::encode_spm(std::string_view text, bool space_prefix, std::vector<int32_t> &out) const {
    static constexpr std::string_view kSpace = "\xE2\x96\x81";
    std::string s;
    s.reserve(text.size() + 8);
    if (space_prefix) s += kSpace;
    for (char c : text) {
        if (c == ' ') s += kSpace;
        else s += c;
    }
    struct symbol {
        uint32_t start, len; // bytes of s; len 0 once merged into its left neighbour
        int32_t prev, next;
    };
    std::vector<symbol> sym;
    for (uint32_t at = 0; at < s.size();) {
        static constexpr uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
        const uint32_t len = std::min<uint32_t>(kLen[static_cast<uint8_t>(s[at]) >> 4], static_cast<uint32_t>(s.size()) - at);
        const auto i = static_cast<int32_t>(sym.size());
        sym.push_back({at, len, i - 1, at + len < s.size() ? i + 1 : -1});
        at += len;
    }
    struct bigram {
        float score;
        int32_t left, right;
        uint32_t size; // bytes of the pair when queued; a change means the entry is stale
        bool operator<(const bigram &o) const { return score < o.score || (score == o.score && left > o.left); }
    };
    std::priority_queue<bigram> queue;
    std::string key;
    auto push = [&](int32_t l, int32_t r) {
        if (l < 0 || r < 0) return;
        key.assign(s, sym[l].start, sym[l].len + sym[r].len);
        const auto it = ids_.find(key);
        if (it == ids_.end()) return;
        queue.push({scores_[static_cast<size_t>(it->second)], l, r, sym[l].len + sym[r].len});
    };
    for (int32_t i = 1; i < static_cast<int32_t>(sym.size()); ++i) push(i - 1, i);
    while (!queue.empty()) {
        const bigram b = queue.top();
        queue.pop();
        symbol &l = sym[b.left], &r = sym[b.right];
        if (l.len == 0 || r.len == 0 || l.len + r.len != b.size) continue;
        l.len += r.len;
        r.len = 0;
        l.next = r.next;
        if (r.next >= 0) sym[r.next].prev = b.left;
        push(l.prev, b.left);
        push(b.left, l.next);
    }
    for (int32_t i = sym.empty() ? -1 : 0; i >= 0; i = sym[i].next) {
        key.assign(s, sym[i].start, sym[i].len);
        if (const auto it = ids_.find(key); it != ids_.end()) {
            out.push_back(it->second);
            continue;
        }
        for (uint32_t j = 0; j < sym[i].len; ++j) {
            const int32_t id = byte_ids_[static_cast<uint8_t>(s[sym[i].start + j])];
            if (id >= 0) out.push_back(id);
        }
    }
}

// ---- decode and lookups ----------------------------------------------------------------

std::string tokenizer::token_bytes(int32_t id, bool render_special) const {
    if (id < 0 || id >= n_vocab()) return {};
    const std::string &text = texts_[id];
    switch (types_[id]) {
    case token_type::control:
    case token_type::unknown:
        return render_special ? text : std::string();
    case token_type::user_defined:
        return text;
    case token_type::normal: {
        if (kind_ == kind::spm) {
            std::string out;
            for (size_t at = 0; at < text.size();) {
                if (text.compare(at, 3, "\xE2\x96\x81") == 0) {
                    out += ' ';
                    at += 3;
                } else {
                    out += text[at++];
                }
            }
            return out;
        }
        const byte_alphabet &abc = alphabet();
        std::string out;
        out.reserve(text.size());
        for (uint32_t cp : lenient_code_points(text)) {
            if (cp < abc.decode.size() && abc.decode[cp] >= 0) out += static_cast<char>(abc.decode[cp]);
            else append_utf8(out, cp); // not a stand-in character: keep it as text
        }
        return out;
    }
    case token_type::byte: // SPM's <0xXX>
        if (kind_ == kind::spm && text.size() == 6 && text.compare(0, 3, "<0x") == 0) {
            auto nibble = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
            const int hi = nibble(text[3]), lo = nibble(text[4]);
            if (hi >= 0 && lo >= 0) return std::string(1, static_cast<char>(hi * 16 + lo));
        }
        return {};
    default:
        return {};
    }
}

std::string tokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
    std::string out;
    for (int32_t id : ids) out += token_bytes(id, render_special);
    return out;
}

bool tokenizer::is_eog(int32_t id) const { return id >= 0 && id < n_vocab() && eog_[id]; }

std::optional<int32_t> tokenizer::token_id(std::string_view text) const {
    const auto it = ids_.find(std::string(text));
    if (it == ids_.end()) return std::nullopt;
    return it->second;
}

const std::string &tokenizer::token_text(int32_t id) const {
    static const std::string empty;
    return id >= 0 && id < n_vocab() ? texts_[id] : empty;
}

token_type tokenizer::type(int32_t id) const {
    return id >= 0 && id < n_vocab() ? types_[id] : token_type::undefined;
}

std::vector<int32_t> encode_prompt(const tokenizer &tok, std::string_view text) {
    std::vector<prompt_part> parts;
    if (tok.add_bos() && tok.bos() >= 0) parts.push_back({{}, false, tok.bos()});
    parts.push_back({text, true});
    return tok.encode(parts);
}

std::vector<int32_t> encode_prompt(const tokenizer &tok, std::string_view text,
                                   std::span<const std::pair<size_t, size_t>> controls) {
    std::vector<prompt_part> parts;
    parts.reserve(controls.size() * 2 + 2);
    if (tok.add_bos() && tok.bos() >= 0) parts.push_back({{}, false, tok.bos()});
    size_t at = 0;
    for (const auto &[off, len] : controls) {
        if (off > at) parts.push_back({text.substr(at, off - at), false});
        const std::string_view marker = text.substr(off, len);
        const auto id = tok.token_id(marker);
        const token_type ty = id ? tok.type(*id) : token_type::undefined;
        if (ty == token_type::control || ty == token_type::user_defined || ty == token_type::unknown)
            parts.push_back({{}, false, *id});
        else // a vocabulary without this marker as a special token: spelled as the file does, joined with the text around it
            parts.push_back({marker, true});
        at = off + len;
    }
    if (at < text.size()) parts.push_back({text.substr(at), false});
    return tok.encode(parts);
}

} // namespace actorserve
