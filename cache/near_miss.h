// The near-miss guard: a text check applied to a semantic-cache candidate before it counts as a
// hit. Embeddings place "capital of France" and "capital of Germany" close together; the guard
// refuses such a pair because a word that decides the answer differs.
//
// A candidate (query, cached question) is rejected when, in this order:
//   negation       the counts of negation words differ (not, no, never, n't, without, none, ...)
//   number         the numbers differ (digits, and number words: "twenty five" = 25, "a dozen" = 12)
//   direction      comparison words point different ways on some scale: comparatives and
//                  superlatives (largest/smallest, cheapest/"most expensive"), more/less,
//                  before/after, first/last, maximum/minimum
//   entity         a name in one is absent from the other: capitalised words not at a sentence
//                  start, acronyms, mixed-case or letter+digit tokens (iPhone, GPT4, x86); a
//                  capitalised word at a sentence start counts only if it is not a common
//                  sentence opener and the other text also has an unmatched name
//   question_kind  both ask with who/when/where/why, and not with the same ones
//   reversed       for a relation word present once in each (than, to, from, before, of, cause,
//                  ...), a word before it in one text is after it in the other and vice versa
//                  ("X heavier than Y" / "Y heavier than X", "from A to B" / "from B to A")
//   antonym        a word found on one side only has its WordNet opposite among the words found
//                  on the other side only ("hot" / "cold", "buy" / "sell"), whatever the
//                  similarity (only when the caller passes WordNet)
//   substitution   all content words agree except exactly one on each side, the two are not in
//                  the small synonym table ("sort a list" / "reverse a list", lowercase
//                  "france" / "germany"), and the similarity is below kSubstitutionTrust
//
// Why substitution has a similarity bar: on the evaluation set (docs/cache.md) the one-word
// swaps that change the question ("boil"/"poach", "symptoms"/"causes") have cosine 0.50-0.86
// with all-MiniLM-L6-v2, while paraphrases that swap one word for a near-synonym
// ("tire"/"tyre", "inventor"/"invented") mostly sit higher. A text check cannot tell synonyms
// from antonyms, so for a single swap it defers to a strong embedding agreement.
//
// cost: one pass over each text plus a few small sets; ~15-20 microseconds for chat-sized
// questions (cache_eval prints the mean). Deterministic: no randomness, no locale.
// limits: English only; words are compared after crude suffix stripping; a paraphrase that drops
// a name ("Earth" / "the world") or a comparison word ("sleep better" / "improve my sleep") is
// refused, which costs a generation, never a wrong answer. A near miss whose only differences are
// ordinary lowercase words, more than one on a side, passes the guard and must be stopped by
// the similarity threshold.
#pragma once

#include <string>
#include <string_view>

#include "cache/wordnet.h"

namespace actorserve {

enum class near_miss_reason { none, negation, number, direction, entity, question_kind, reversed_relation, antonym, substitution };

const char *to_string(near_miss_reason r);

// At or above this cosine similarity a single swapped content word is taken for a synonym.
inline constexpr float kSubstitutionTrust = 0.88f;

struct near_miss_verdict {
    near_miss_reason reason = near_miss_reason::none;
    std::string detail;   // e.g. "numbers differ: {3} vs {5}"; empty when accepted
    bool rejected() const { return reason != near_miss_reason::none; }
};

// similarity: the candidate's cosine similarity to the query (only the substitution check uses
// it); the default applies every check. lexicon: WordNet for the antonym check (the semantic
// cache passes wordnet::system()); nullptr skips that check.
near_miss_verdict check_near_miss(std::string_view query, std::string_view cached_question, float similarity = -1.0f,
                                  const wordnet *lexicon = nullptr);

} // namespace actorserve
