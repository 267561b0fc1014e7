// The two tokenizers of GGUF LLaMA-family files, built to give the same ids as llama.cpp for
// the same model file. See docs/tokenizer.md.
//   tokenizer.ggml.model = "gpt2": byte-level BPE (llm_tokenizer_bpe). encode(text) =
//     special-token split -> pre-tokenizer regex chain -> byte-level BPE per piece.
//   tokenizer.ggml.model = "llama": SentencePiece BPE (llm_tokenizer_spm; Llama 2, Mistral,
//     Phi-3, Gemma). encode(text) = special-token split -> per raw fragment: a space prefix
//     when it starts the text or follows a special token, spaces written as U+2581, then
//     merges of adjacent pieces by highest token score; what no token covers goes out as
//     byte tokens <0xXX>.
// note: every method is const and keeps no mutable state; one tokenizer may be used from
// many threads at once.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/gguf.h"

namespace actorserve {

// tokenizer.ggml.token_type values, numbered as in llama.cpp.
enum class token_type : uint8_t {
    undefined = 0, normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6,
};

// One piece of a prompt handed to tokenizer::encode: a token id (id >= 0), or text in which
// special tokens are parsed or not.
struct prompt_part {
    std::string_view text;
    bool parse_special = false;
    int32_t id = -1;
};

class tokenizer {
public:
    enum class kind : uint8_t { bpe, spm };

    // Reads tokens, token types, merges or scores, special ids and the pre-tokenizer name. On
    // failure returns nullptr and sets err, e.g. "unsupported tokenizer model 'bert'
    // (supported: 'gpt2', byte-level BPE; 'llama', SentencePiece)".
    static std::unique_ptr<tokenizer> from_gguf(const gguf_file &file, std::string &err);
    ~tokenizer();
    tokenizer(const tokenizer &) = delete;
    tokenizer &operator=(const tokenizer &) = delete;

    // Text -> ids. Never adds BOS: callers check add_bos() and prepend bos() themselves.
    // parse_special: control tokens written in the text ("<|im_start|>") become their ids;
    // otherwise they are tokenized as plain text. User-defined tokens always match.
    // Any bytes are accepted: malformed UTF-8 is read as llama.cpp reads it (each bad
    // byte becomes U+FFFD).
    // cost: O(n_special * len) for the special split plus O(len log len) for BPE.
    std::vector<int32_t> encode(std::string_view text, bool parse_special) const;
    // The parts tokenized as one text would be: adjacent text is joined before the BPE, so a
    // part boundary splits nothing that the text alone would not (and SentencePiece's space
    // prefix goes only at the start and after a token).
    std::vector<int32_t> encode(std::span<const prompt_part> parts) const;

    // The bytes a token stands for. Normal tokens map their text back to raw bytes (BPE:
    // byte-level symbols, possibly part of a UTF-8 character; SPM: U+2581 -> space); SPM
    // byte tokens give their byte; control and unknown tokens give their text only when
    // render_special; user-defined tokens always give their text; unused/undefined tokens
    // (and BPE byte tokens) and out-of-range ids give "".
    std::string token_bytes(int32_t id, bool render_special) const;
    // Concatenated token_bytes; may end inside a UTF-8 character (see utf8_stream).
    std::string decode(std::span<const int32_t> ids, bool render_special) const;

    // End of generation: eos, eot (when the file names one), and the tokens whose text is one
    // of <|endoftext|>, <|im_end|>, <|eot_id|>, <|end_of_text|>, <|eom_id|>, <end_of_turn>,
    // <|end|>, <EOT>, _<EOT>, <end_of_utterance> (made control tokens, as llama.cpp does).
    bool is_eog(int32_t id) const;

    int32_t n_vocab() const { return static_cast<int32_t>(texts_.size()); }
    // Exact vocabulary lookup (byte-level text for normal tokens: " hi" is "Ġhi").
    std::optional<int32_t> token_id(std::string_view text) const;
    // Stored text of a token; "" for an out-of-range id.
    const std::string &token_text(int32_t id) const;
    token_type type(int32_t id) const;

    kind model_kind() const { return kind_; }
    bool add_bos() const { return add_bos_; }
    int32_t bos() const { return bos_; } // -1 when the file names none
    int32_t eos() const { return eos_; } // -1 when the file names none
    const std::string &pre_name() const { return pre_name_; } // "" for SPM
    // Merges whose parts or result are not in the vocabulary. They keep their rank (as in
    // llama.cpp); a symbol they produce falls back to one token per byte.
    size_t n_merges_unknown() const { return n_merges_unknown_; }

    struct regex_chain; // compiled pre-tokenizer regexes (PCRE2), defined in tokenizer.cpp

private:
    tokenizer();
    bool load_bpe(const gguf_file &file, const std::string &where, std::string &err);
    bool load_spm(const gguf_file &file, const std::string &where, std::string &err);
    void split_special(std::string_view text, bool parse_special,
                       std::vector<std::pair<int32_t, std::string_view>> &out) const;
    void encode_fragment(std::string_view text, std::vector<int32_t> &out) const;
    void encode_spm(std::string_view text, bool space_prefix, std::vector<int32_t> &out) const;
    void bpe(std::string_view word, std::string &key, std::vector<int32_t> &out) const;
    int32_t merge_rank(std::string_view left, std::string_view right, std::string &key) const;

    std::vector<std::string> texts_;      // (n_vocab,)
    std::vector<token_type> types_;       // (n_vocab,)
    std::vector<uint8_t> eog_;            // (n_vocab,) 1 = end of generation
    std::unordered_map<std::string, int32_t> ids_;
    std::unordered_map<std::string, int32_t> ranks_; // BPE: "left right" -> merge index
    std::vector<float> scores_;           // SPM: (n_vocab,) merge priority, higher first
    std::array<int32_t, 256> byte_ids_{}; // SPM: the token of each byte, -1 if none
    std::vector<uint8_t> rstrip_;         // (n_vocab,) 1: whitespace after this special is dropped
    std::vector<int32_t> specials_;       // control/unknown/user-defined ids, longest text first
    std::unique_ptr<regex_chain> pre_;
    std::string pre_name_;
    bool ignore_merges_ = false;          // a whole piece that is a token skips BPE (llama3)
    kind kind_ = kind::bpe;
    bool add_bos_ = false;
    bool add_space_prefix_ = false;       // SPM
    int32_t bos_ = -1, eos_ = -1, eot_ = -1;
    size_t n_merges_unknown_ = 0;
};

// The ids of a raw prompt: BOS first when the model asks for it, then `text` with the special
// tokens written in it parsed as such (the CLI's `generate --prompt`, raw completions).
std::vector<int32_t> encode_prompt(const tokenizer &tok, std::string_view text);

// The ids of a rendered chat: BOS when the model asks for it, then each (offset, length) range
// of `controls` (sorted, not overlapping) as the special token its text names, and the text
// between them as plain text, where control-token strings stay literal. A marker that is no
// special token of this vocabulary (Mistral v1's "[INST]") is text, tokenized together with
// the text around it. For text holding no control-token string the ids are those of
// encode_prompt(tok, text).
std::vector<int32_t> encode_prompt(const tokenizer &tok, std::string_view text,
                                   std::span<const std::pair<size_t, size_t>> controls);

} // namespace actorserve
