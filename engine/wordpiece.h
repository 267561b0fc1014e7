// BERT's WordPiece tokenizer (uncased), from a vocab.txt, giving the ids of Hugging Face's
// BertTokenizerFast for all-MiniLM-L6-v2:
//   normalize: drop control characters, U+0000 and U+FFFD; whitespace -> ' '; a space on
//              each side of a CJK ideograph; NFD, dropping nonspacing marks (é -> e);
//              lowercase
//   split:     on whitespace, and around every punctuation character (each its own word)
//   WordPiece: per word, greedy longest match from the left, pieces after the first spelled
//              "##..."; a word with no match at some point, or over 100 characters, is [UNK]
//   frame:     [CLS] pieces [SEP], pieces cut so that the whole fits max_tokens
// The per-code-point behaviour of the first two steps comes from generated tables
// (wordpiece_unicode.h). note: every method is const; one tokenizer serves many threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace actorserve {

class wordpiece_tokenizer {
public:
    // vocab.txt: one token per line, its id the line number from 0. Needs [CLS], [SEP], [UNK]
    // and [PAD]. On failure returns nullptr and sets err to "<path>: <problem>".
    static std::unique_ptr<wordpiece_tokenizer> load(const std::string &vocab_path, std::string &err);
    static std::unique_ptr<wordpiece_tokenizer> from_vocab_text(std::string_view text, const std::string &name,
                                                                std::string &err);

    static constexpr int kMaxWordChars = 100; // longer words are [UNK] whole

    // Text -> [CLS] pieces [SEP], at most max_tokens ids (>= 2). Text that is not well-formed
    // UTF-8 gives false and err "text is not valid UTF-8 (byte N)".
    bool encode(std::string_view text, int max_tokens, std::vector<int32_t> &ids, std::string &err) const;
    // The words after normalizing and splitting (no WordPiece), for tests. Text must be valid UTF-8.
    std::vector<std::string> split_words(std::string_view text) const;

    int32_t cls() const { return cls_; }
    int32_t sep() const { return sep_; }
    int32_t unk() const { return unk_; }
    int32_t pad() const { return pad_; }
    size_t vocab_size() const { return pieces_.size(); }
    const std::string &piece(int32_t id) const { return pieces_.at(static_cast<size_t>(id)); }
    int32_t find(std::string_view piece) const; // -1 when absent

private:
    wordpiece_tokenizer() = default;
    // Appends the pieces of one word (UTF-8, char_ends: byte offset after each character).
    void word_pieces(const std::string &word, const std::vector<uint32_t> &char_ends, std::vector<int32_t> &out) const;
    // Calls on_word(word, char_ends) for each word of the normalized, split text.
    template <class F> void for_each_word(std::string_view text, F &&on_word) const;

    struct sv_hash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    std::unordered_map<std::string, int32_t, sv_hash, std::equal_to<>> ids_;
    std::vector<std::string> pieces_; // (vocab_size,)
    int32_t cls_ = -1, sep_ = -1, unk_ = -1, pad_ = -1;
};

} // namespace actorserve
