#include <doctest/doctest.h>

#include "cache/near_miss.h"

#include <string>

using namespace actorserve;

namespace {

// The guard as the server runs it: with WordNet (scripts/setup.sh installs wordnet-base).
const wordnet *lexicon() {
    static std::string why_not;
    static const auto wn = wordnet::system(&why_not);
    REQUIRE_MESSAGE(wn, why_not);
    return wn.get();
}

near_miss_verdict judge(const char *query, const char *cached) { return check_near_miss(query, cached, lexicon()); }
near_miss_reason why(const char *query, const char *cached) { return judge(query, cached).reason; }

} // namespace

TEST_CASE("guard: every content word matched by itself, an inflection or a WordNet synonym passes") {
    CHECK(why("What's the capital of France?", "What is the capital of France?") == near_miss_reason::none);
    CHECK(why("how do i sort lists in python", "How do I sort a list in Python?") == near_miss_reason::none);
    CHECK(why("Who was the inventor of the telephone?", "Who invented the telephone?") == near_miss_reason::none);   // derived
    CHECK(why("What is the meaning of ubiquitous?", "What does ubiquitous mean?") == near_miss_reason::none);
    CHECK(why("How frequently should I water a cactus?", "How often should I water a cactus?") == near_miss_reason::none);
    CHECK(why("What is the height of Mount Everest?", "How tall is Mount Everest?") == near_miss_reason::none);   // attribute
    CHECK(why("Can I safely eat raw cookie dough?", "Is it safe to eat raw cookie dough?") == near_miss_reason::none);
    CHECK(why("What's the price of a boiler service?", "How much is a boiler service?") == near_miss_reason::none);
    CHECK(why("How do I get rid of duplicates in a list?", "How do I get rid of duplicates in a list?") == near_miss_reason::none);
    // "which city" restates what a bare "what" asks; two different answer types do not.
    CHECK(why("Which city is the capital of Australia?", "What is the capital of Australia?") == near_miss_reason::none);
    CHECK(why("What currency do they use in Brazil?", "What language do they speak in Brazil?") == near_miss_reason::unmatched);
}

TEST_CASE("guard: greetings, hesitations and misspellings are not content") {
    CHECK(why("Hi team, quick question: how do I cancel my subscription? Many thanks", "How do I cancel my subscription?") ==
          near_miss_reason::none);
    CHECK(why("um so how do i uh cancel my subscription", "How do I cancel my subscription?") == near_miss_reason::none);
    CHECK(why("whats the capital of france", "What's the capital of France?") == near_miss_reason::none);
    CHECK(why("How do I chnage the email adress on my acount?", "How do I change the email address on my account?") ==
          near_miss_reason::none);
    // Two real words are never typos of each other, nor two words WordNet does not know.
    CHECK(why("How do I set up a direct debt?", "How do I set up a direct debit?") == near_miss_reason::unmatched);
    CHECK(why("Does Jet2 fly from Gatwik to Faro?", "Does Jet2 fly from Gatwick to Faro?") == near_miss_reason::entity);
    // A stretch with a number is never a greeting.
    CHECK(why("Thanks, 3 tickets please", "Thanks, 4 tickets please") == near_miss_reason::number);
}

TEST_CASE("guard: a word without a counterpart is refused: negating verbs, quantifiers, scope") {
    near_miss_verdict v = judge("Which foods should I avoid before surgery?", "Which foods should I eat before surgery?");
    CHECK(v.reason == near_miss_reason::unmatched);
    CHECK(v.detail == "'avoid' has no counterpart in the cached question");
    CHECK(why("Should I stop watering succulents in winter?", "Should I water succulents in winter?") == near_miss_reason::unmatched);
    CHECK(why("How do I prevent a cold?", "How do I treat a cold?") == near_miss_reason::unmatched);
    CHECK(why("Do some birds fly?", "Do all birds fly?") == near_miss_reason::unmatched);
    CHECK(why("Can I book a GP appointment for my elderly mother?", "Can I book a GP appointment for myself?") ==
          near_miss_reason::unmatched);
    CHECK(why("How do I poach an egg?", "How do I boil an egg?") == near_miss_reason::unmatched);
    // A collocation's particle is content: "opt out" is not "opt in".
    v = judge("How do I opt out of the pension?", "How do I opt in to the pension?");
    CHECK(v.reason == near_miss_reason::unmatched);
    CHECK(v.detail == "'opt out' has no counterpart in the cached question");
}

TEST_CASE("guard: opposites, negations, numbers, directions, names and question words") {
    near_miss_verdict v = judge("Is it better to sleep in a cold room?", "Is it better to sleep in a hot room?");
    CHECK(v.reason == near_miss_reason::antonym);
    CHECK(v.detail == "opposites: 'cold' vs 'hot'");
    CHECK(why("When should I sell shares?", "When should I buy shares?") == near_miss_reason::antonym);
    CHECK(why("How do I check out of the hotel?", "How do I check in to the hotel?") == near_miss_reason::antonym);
    CHECK(why("Why doesnt my code compile?", "Why does my code compile?") == near_miss_reason::negation);
    CHECK(why("Can I take ibuprofen without food?", "Can I take ibuprofen with food?") == near_miss_reason::negation);
    CHECK(why("Convert 50 km to miles", "Convert 5 km to miles") == near_miss_reason::number);
    CHECK(why("a list of twenty five items", "a list of 25 items") == near_miss_reason::none);
    CHECK(why("What is the smallest planet?", "What is the largest planet?") == near_miss_reason::direction);
    CHECK(why("Should I stretch after running?", "Should I stretch before running?") == near_miss_reason::direction);
    CHECK(why("What's the energy price cap from January?", "What's the energy price cap from October?") == near_miss_reason::entity);
    CHECK(why("what is the capital of germany", "what is the capital of france") != near_miss_reason::none);
    CHECK(why("When was Hamlet written?", "Who wrote Hamlet?") == near_miss_reason::question_kind);
}

TEST_CASE("guard: the same words around a relation in reverse order are refused") {
    CHECK(why("Is a whale heavier than an elephant?", "Is an elephant heavier than a whale?") == near_miss_reason::reversed_relation);
    CHECK(why("Convert 5 miles to km", "Convert 5 km to miles") == near_miss_reason::reversed_relation);
    CHECK(why("Does insomnia cause stress?", "Does stress cause insomnia?") == near_miss_reason::reversed_relation);
    // Symmetric links and a phrase moved as a whole change nothing.
    CHECK(why("Difference between UDP and TCP?", "Difference between TCP and UDP?") == near_miss_reason::none);
    CHECK(why("To my car insurance policy, can I add my partner?", "Can I add my partner to my car insurance policy?") ==
          near_miss_reason::none);
}

TEST_CASE("guard: what it cannot judge is refused") {
    std::string longer;
    for (int i = 0; i < 70; ++i) longer += "word" + std::to_string(i) + " ";
    const near_miss_verdict v = check_near_miss(longer, longer, lexicon());
    CHECK(v.reason == near_miss_reason::unjudged);
    CHECK(v.detail == "too long to compare word by word: 70 words (at most 64)");
    // Without WordNet only identical words and stripped inflections match.
    CHECK(check_near_miss("how do i sort lists in python", "How do I sort a list in Python?", nullptr).reason == near_miss_reason::none);
    CHECK(check_near_miss("Who was the inventor of the telephone?", "Who invented the telephone?", nullptr).reason ==
          near_miss_reason::unmatched);
    CHECK(check_near_miss("When should I sell shares?", "When should I buy shares?", nullptr).reason == near_miss_reason::unmatched);
}

TEST_CASE("guard: deterministic and symmetric in its decision") {
    const char *pairs[][2] = {{"What is the capital of France?", "What is the capital of Germany?"},
                              {"Why is the sky blue?", "What makes the sky look blue?"},
                              {"Which foods should I avoid before surgery?", "Which foods should I eat before surgery?"},
                              {"Is a whale heavier than an elephant?", "Is an elephant heavier than a whale?"}};
    for (auto &p : pairs) {
        near_miss_verdict x = judge(p[0], p[1]), y = judge(p[0], p[1]), z = judge(p[1], p[0]);
        CHECK(x.reason == y.reason);
        CHECK(x.detail == y.detail);
        CHECK(x.rejected() == z.rejected());
    }
    CHECK(why("", "") == near_miss_reason::none);
    CHECK(why("'''...???", "?!") == near_miss_reason::none);
    CHECK(judge("\xff\xfe", "'''").rejected());
    // Words outside ASCII are content, compared as written.
    CHECK(why("北京的人口是多少？", "上海的人口是多少？") == near_miss_reason::unmatched);
    CHECK(why("Wie groß ist Köln?", "Wie groß ist Bonn?") != near_miss_reason::none);
}
