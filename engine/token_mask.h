// The tokens a constrained sequence may sample next: every token whose bytes the JSON matcher
// (engine/json_grammar.h) accepts from its state, found without trying each of the vocabulary's
// tokens in turn.
//
// Two precomputed structures make it cheap: a trie of all tokens' bytes, walked depth first
// with the matcher so that a refused byte prunes every token that starts with it (at a number
// or a key only a handful of branches survive); and, for the state that admits most tokens
// (inside a string), the class of "plain" tokens (whole UTF-8 characters, no quote, backslash
// or control byte), all admitted at once (those short enough for a maxLength), so that only
// the trie of the other tokens (under a thousand) is walked.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/json_grammar.h"

namespace actorserve {

class tokenizer;

class token_vocab {
public:
    explicit token_vocab(const tokenizer &tok);

    // out = the allowed ids, ascending: end-of-generation ids exactly when the matcher's bytes
    // are a whole document, nothing else when nothing may follow. budget >= 0: the tokens that
    // may still follow this one (max_tokens): near it, only tokens after which the document can
    // still be closed in that many tokens (every byte has a token of its own), or, when none
    // can, those that bring the end nearest; so an answer that max_tokens would cut is closed
    // instead, whenever the budget allows a whole document at all.
    void allowed(const json_matcher &m, std::vector<int32_t> &out, int budget) const;
    void allowed(const json_matcher &m, std::vector<int32_t> &out) const; // no budget

    const std::string &bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }
    bool is_eog(int32_t id) const;
    const std::vector<int32_t> &eog() const { return eog_; }
    size_t n_plain() const { return plain_.size(); }

private:
    struct trie_node {
        std::vector<std::pair<uint8_t, int32_t>> kids; // (byte, node)
        std::vector<int32_t> ends;                     // tokens whose bytes end here
    };
    static void insert(std::vector<trie_node> &t, const std::string &bytes, int32_t id);
    void walk(const std::vector<trie_node> &t, int32_t node, const json_matcher &m, std::vector<int32_t> &out) const;

    std::vector<std::string> bytes_;
    std::vector<int32_t> eog_;
    std::vector<trie_node> all_, special_;
    std::vector<std::pair<int32_t, int32_t>> plain_; // (id, characters), ascending ids
    std::vector<int32_t> plain_chars_;               // by id: characters of a plain token, else -1
    void fit_budget(const json_matcher &m, std::vector<int32_t> &out, int budget) const;
};

} // namespace actorserve
