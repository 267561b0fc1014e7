// WordNet 3.0 read into memory: the lexical database the near-miss guard asks for base forms
// (morphy), synonyms, opposites and derived forms (cache/near_miss.h).
//
// The files are Princeton's database as Debian's `wordnet-base` installs it (/usr/share/wordnet):
// index.{noun,verb,adj,adv} give each lemma its synsets in sense order (most frequent first),
// data.* give each synset its words and pointers, *.exc the irregular inflections; the format is
// wndb(5WN). Only what the guard asks is kept: the words of each synset and five pointer kinds
// (antonym, derivation, similar-to, pertainym, attribute). Base forms follow morphy(7WN): the exception
// lists, then the detachment rules, keeping the results that are lemmas.
//
// Why not libwordnet (wordnet-dev): it keeps global state and file positions and reads the
// files on every lookup, so it is neither thread-safe nor fast; the guard runs in the cache
// actor and in evaluation threads. The test suite checks this reader against it
// (tests/cache/test_wordnet.cpp).
//
// cost: loading reads ~28 MB and keeps ~20 MB (150k lemmas, 118k synsets), ~0.3 s; a lookup is a
// few hash probes. Immutable after load, so it is shared between threads without locks.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace actorserve {

class wordnet {
public:
    // Reads the database in dir; throws std::runtime_error naming the file and line on a problem.
    static std::shared_ptr<const wordnet> load(const std::filesystem::path &dir);

    // The database at $ACTORSERVE_WORDNET or /usr/share/wordnet, loaded once per process;
    // nullptr when it is absent or unreadable (reason says why). Without it the guard matches
    // only identical words and inflections it can strip itself, which refuses more paraphrases
    // and serves no more near misses.
    static std::shared_ptr<const wordnet> system(std::string *reason = nullptr);

    // Base forms of a lowercase word over all parts of speech (the word itself when it is a
    // lemma, then what morphy gives), without repeats; empty when WordNet does not know it.
    std::vector<std::string> base_forms(std::string_view word) const;

    // Two lemmas are synonyms when a synset among the first `senses` senses of each holds both.
    bool synonyms(std::string_view a, std::string_view b, int senses) const;
    // a and b are opposites: a direct antonym pointer between them in any sense, or, for
    // adjectives, the indirect antonymy of WordNet's clusters ("warm" / "chilly").
    bool antonyms(std::string_view a, std::string_view b) const;
    // A derivation pointer joins a sense among the first `senses` of a with b ("inventor" /
    // "invent"), a pertainym ("quickly" / "quick") or an attribute ("tall" / "height").
    bool derived(std::string_view a, std::string_view b, int senses) const;

    size_t lemma_count() const { return lemmas_.size(); }
    size_t synset_count() const { return synsets_.size(); }

    // What the reference test compares: the words of a lemma's n-th sense (0-based) in one part
    // of speech ('n', 'v', 'a', 'r'); empty when there is none.
    std::vector<std::string> sense_words(std::string_view lemma, char pos, size_t n) const;

private:
    struct pointer {
        char symbol;        // '!' antonym, '+' derivation, '&' similar to, '\\' pertainym, '=' attribute
        uint8_t source;     // word number in this synset (1-based), 0 for the whole synset
        uint8_t target;     // word number in the target synset, 0 for the whole synset
        uint32_t synset;    // target synset index
    };
    struct synset {
        uint8_t pos;                  // 0 noun, 1 verb, 2 adjective (and satellite), 3 adverb
        bool satellite = false;
        std::vector<uint32_t> words;  // lemma ids
        std::vector<pointer> pointers;
    };
    struct lemma {
        std::vector<uint32_t> senses[4];   // synset indices per part of speech, in sense order
    };

    wordnet() = default;
    const lemma *find(std::string_view w) const;
    int32_t id_of(std::string_view w) const;
    bool word_points_to(uint32_t synset, uint32_t word_id, char symbol, uint32_t target_word_id) const;

    std::unordered_map<std::string, uint32_t> ids_;   // lemma -> index into lemmas_ / names_
    std::vector<std::string> names_;
    std::vector<lemma> lemmas_;
    std::vector<synset> synsets_;
    std::unordered_map<std::string, std::vector<std::string>> exceptions_[4];
};

} // namespace actorserve
