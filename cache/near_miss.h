// The near-miss guard: a text check applied to a semantic-cache candidate before it counts as a
// hit. Embeddings place "capital of France" and "capital of Germany" close together; the guard
// refuses such a pair because a word that decides the answer differs.
//
// The decision is made by what differs between the two questions, not by their cosine. Both are
// split into words. Hesitations ("um", "er") and greetings at either end ("Hi team, quick
// question:", "Many thanks") are dropped, and function words (articles, auxiliaries, pronouns, the commonest
// prepositions, light verbs such as get/make/take, request filler such as "please tell me") are
// set aside. Every other word of each text must be matched in the other by the same word, an
// inflection of it (WordNet's morphy, or -ly to its adjective), a synonym (a shared synset among
// the first kSynonymSenses senses of both), a derived form ("inventor" / "invent", "tall" /
// "height"), or, for a word WordNet does not know, a word it knows one edit away ("chnage" /
// "change"). WordNet's verb collocations are one word ("get rid of", "turn off", "opt out") and
// match only a synonym. A verb left over may match a light verb of the other text it is a
// synonym of ("receive" / "get"). "How much is X" stands for X's price, and "which city" for a
// bare "what" when only one text names the answer's type. No matched pair may be opposites.
// A candidate is refused, in this order, when:
//   unjudged       either text is longer than kMaxGuardWords words
//   negation       the counts of negation words differ (not, no, never, n't, without, none, dont ...)
//   number         the numbers differ (digits, and number words: "twenty five" = 25, "a dozen" = 12)
//   direction      comparison words point different ways on some scale: comparatives and
//                  superlatives (largest/smallest, cheapest/"most expensive"), more/less,
//                  before/after, first/last, maximum/minimum
//   entity         a name in one is absent from the other (capitalised mid-sentence, acronyms,
//                  mixed case, letters with digits), misspellings as above aside
//   question_kind  both ask with who/when/where/why/how (or "how many", "how long" ...), and not
//                  with the same ones
//   antonym        a word without a counterpart has its WordNet opposite in the other text
//   unmatched      a content word has no counterpart: a swapped word ("boil" / "poach"), a verb
//                  that negates or reverses ("avoid", "stop", "prevent"), a quantifier, a unit, a
//                  month, a word added or dropped ("in Europe"), a word outside ASCII that differs
//   reversed       two matched words change places around a word both have between them
//                  ("celsius to fahrenheit" / "fahrenheit to celsius"); and, or, vs, between, with
//                  and determiners do not count
//
// What the guard cannot judge is refused: a word WordNet does not know must appear as written (or
// with a plural or tense ending stripped, or misspelt against a word WordNet knows) on both
// sides, and without WordNet only such matches count. A refusal costs a generation, never a
// wrong answer.
//
// cost: a few hash probes per pair of content words; about 30 microseconds for chat-sized
// questions (cache_eval prints the mean). Deterministic: no randomness, no locale.
// limits: English only (other scripts are compared word for word as written); words one at a
// time besides WordNet's collocations (a multi-word name or idiom is matched word by word); word
// senses are not disambiguated, so a synonym in one of a word's commonest senses is taken for a
// synonym in the question's sense; a change that keeps every word and their order (a different
// stress, sarcasm) is not seen; a paraphrase that rewords the question ("Is the restaurant
// dog-friendly?" / "Are dogs allowed in the restaurant?") is refused.
#pragma once

#include <string>
#include <string_view>

#include "cache/wordnet.h"

namespace actorserve {

enum class near_miss_reason { none, unjudged, negation, number, direction, entity, question_kind, antonym, unmatched, reversed_relation };

const char *to_string(near_miss_reason r);

// Senses of each word among which a shared synset makes two words synonyms (WordNet lists a
// word's senses most frequent first). On the tuning halves 2 to 8 serve the same paraphrases but
// one (docs/cache.md); the fewer senses, the fewer senses taken for the question's sense.
inline constexpr int kSynonymSenses = 2;
// Longer texts are not compared: a refusal, not a guess.
inline constexpr size_t kMaxGuardWords = 64;

struct near_miss_verdict {
    near_miss_reason reason = near_miss_reason::none;
    std::string detail;   // e.g. "numbers differ: {3} vs {5}"; empty when accepted
    bool rejected() const { return reason != near_miss_reason::none; }
};

// lexicon: WordNet (wordnet::system() in the server); nullptr matches only identical words and
// the inflections a suffix rule strips.
// synonym_senses: kSynonymSenses unless an evaluation tries another.
near_miss_verdict check_near_miss(std::string_view query, std::string_view cached_question, const wordnet *lexicon,
                                  int synonym_senses = kSynonymSenses);

} // namespace actorserve
