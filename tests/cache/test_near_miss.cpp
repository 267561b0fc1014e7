#include <doctest/doctest.h>

#include "cache/near_miss.h"

#include <chrono>

using namespace actorserve;

namespace {

near_miss_reason why(const char *a, const char *b, float similarity = -1.0f) {
    return check_near_miss(a, b, similarity).reason;
}

} // namespace

TEST_CASE("guard: paraphrases pass") {
    // One added or swapped word passes only with a similarity of at least kSubstitutionTrust.
    CHECK(why("What is the capital of France?", "What's the capital city of France?") == near_miss_reason::substitution);
    CHECK(why("What is the capital of France?", "What's the capital city of France?", 0.9f) == near_miss_reason::none);
    CHECK(why("How do I reverse a list in Python?", "In Python, what's the way to reverse a list?") == near_miss_reason::none);
    CHECK(why("how do i delete a git branch", "How can I remove a branch in git?") == near_miss_reason::none);
    CHECK(why("Why is the sky blue?", "What makes the sky look blue?") == near_miss_reason::none);
    CHECK(why("Convert 5 km to miles", "How many miles is 5 km?", 0.9f) == near_miss_reason::none);
    CHECK(why("How many legs does a spider have?", "Number of legs on a spider?", 0.9f) == near_miss_reason::none);
    CHECK(why("What’s a good way to learn Rust?", "How should I learn Rust?") == near_miss_reason::none);
}

TEST_CASE("guard: different numbers are refused, number words included") {
    CHECK(why("What is 15% of 200?", "What is 15% of 300?") == near_miss_reason::number);
    CHECK(why("Convert 5 km to miles", "Convert 50 km to miles") == near_miss_reason::number);
    CHECK(why("Who won the World Cup in 2018?", "Who won the World Cup in 2014?") == near_miss_reason::number);
    CHECK(why("What is three times four?", "What is 3 times 4?") == near_miss_reason::none);
    CHECK(why("How long to boil two eggs", "How long to boil three eggs") == near_miss_reason::number);
    CHECK(why("a list of twenty five items", "a list of 25 items") == near_miss_reason::none);
    CHECK(why("Which one is faster?", "Which is faster?") == near_miss_reason::none);
    near_miss_verdict v = check_near_miss("Is 1,000 bigger than 999?", "Is 1000 bigger than 998?");
    CHECK(v.reason == near_miss_reason::number);
    CHECK(v.detail == "numbers differ: {999, 1000} vs {998, 1000}");
}

TEST_CASE("guard: negation differences are refused") {
    CHECK(why("Can I take ibuprofen with food?", "Can I take ibuprofen without food?") == near_miss_reason::negation);
    CHECK(why("Why does my code compile?", "Why doesn't my code compile?") == near_miss_reason::negation);
    CHECK(why("Is it safe to drink tap water?", "Is it not safe to drink tap water?") == near_miss_reason::negation);
    CHECK(why("Should I never use goto?", "Should I use goto?") == near_miss_reason::negation);
}

TEST_CASE("guard: names that differ are refused, by capitalisation and token shape") {
    CHECK(why("What is the capital of France?", "What is the capital of Germany?") == near_miss_reason::entity);
    CHECK(why("How do I install Docker on Ubuntu?", "How do I install Docker on Fedora?") == near_miss_reason::entity);
    CHECK(why("Is the iPhone waterproof?", "Is the Pixel waterproof?") == near_miss_reason::entity);
    CHECK(why("What does NASA stand for?", "What does NATO stand for?") == near_miss_reason::entity);
    CHECK(why("How fast is an H100?", "How fast is an H200?") != near_miss_reason::none);
    // A made-up name is caught without any list of names.
    CHECK(why("Who founded Zorblax Industries?", "Who founded Quintrell Industries?") == near_miss_reason::entity);
    // A capitalised word at a sentence start is a name only against another unmatched name.
    CHECK(why("Summarise the plot of Hamlet", "Give me a summary of the plot of Hamlet") == near_miss_reason::none);
    CHECK(why("Paris is in which country?", "Lyon is in which country?") == near_miss_reason::entity);
    // Lowercase typing: the one-word substitution check stands in.
    CHECK(why("what is the capital of france", "what is the capital of germany") == near_miss_reason::substitution);
}

TEST_CASE("guard: comparison and superlative direction") {
    CHECK(why("What is the largest planet?", "What is the smallest planet?") == near_miss_reason::direction);
    CHECK(why("What is the cheapest flight to Rome?", "What is the most expensive flight to Rome?") == near_miss_reason::direction);
    CHECK(why("Do I need more sleep as I age?", "Do I need less sleep as I age?") == near_miss_reason::direction);
    CHECK(why("Should I stretch before running?", "Should I stretch after running?") == near_miss_reason::direction);
    CHECK(why("What is the least expensive car?", "What is the cheapest car?") == near_miss_reason::none);
    CHECK(why("What is the biggest ocean?", "Which ocean is the largest?") == near_miss_reason::none);
}

TEST_CASE("guard: the same words around a relation in reverse order are refused") {
    CHECK(why("Is an elephant heavier than a whale?", "Is a whale heavier than an elephant?") == near_miss_reason::reversed_relation);
    CHECK(why("How do I convert celsius to fahrenheit?", "How do I convert fahrenheit to celsius?") == near_miss_reason::reversed_relation);
    CHECK(why("Cheap flights from London to Paris", "Cheap flights from Paris to London") == near_miss_reason::reversed_relation);
    CHECK(why("Does stress cause insomnia?", "Does insomnia cause stress?") == near_miss_reason::reversed_relation);
    // Symmetric links are not relations: the order does not matter.
    CHECK(why("Difference between TCP and UDP?", "Difference between UDP and TCP?") == near_miss_reason::none);
    CHECK(why("Is python or java faster?", "Is java or python faster?") == near_miss_reason::none);
}

TEST_CASE("guard: one key word swapped is refused unless the two are listed synonyms") {
    CHECK(why("How do I sort a list in Python?", "How do I reverse a list in Python?") == near_miss_reason::substitution);
    CHECK(why("What are the symptoms of flu?", "What are the causes of flu?") == near_miss_reason::substitution);
    CHECK(why("How do I delete a file in Linux?", "How do I remove a file in Linux?") == near_miss_reason::none);
    CHECK(why("How do I write a for loop in Rust?", "How do I write a while loop in Rust?") == near_miss_reason::substitution);
    CHECK(why("How do I make a pivot table in Excel?", "How do I delete a pivot table in Excel?") == near_miss_reason::substitution);
    // A strong embedding agreement overrides a single swap (and only a swap).
    CHECK(check_near_miss("How do I change a flat tire?", "How do I change a flat tyre?", 0.95f).reason == near_miss_reason::none);
    CHECK(check_near_miss("How do I change a flat tire?", "How do I change a flat tyre?", 0.80f).reason == near_miss_reason::substitution);
    CHECK(check_near_miss("What is the capital of France?", "What is the capital of Germany?", 0.99f).reason == near_miss_reason::entity);
    near_miss_verdict v = check_near_miss("how to boil rice", "how to fry rice");
    CHECK(v.reason == near_miss_reason::substitution);
    CHECK(v.detail == "one key word differs: 'boil' vs 'fry'");
}

TEST_CASE("guard: who, when, where and why ask different questions") {
    CHECK(why("Who invented the telephone?", "When was the telephone invented?") == near_miss_reason::question_kind);
    CHECK(why("Why did the Berlin Wall fall?", "When did the Berlin Wall fall?") == near_miss_reason::question_kind);
    CHECK(why("When did World War II end?", "In what year did World War II end?", 0.9f) == near_miss_reason::none);
}

TEST_CASE("guard: deterministic and symmetric in its decision") {
    const char *pairs[][2] = {{"What is the capital of France?", "What is the capital of Germany?"},
                              {"Why is the sky blue?", "What makes the sky look blue?"},
                              {"Is a whale heavier than an elephant?", "Is an elephant heavier than a whale?"}};
    for (auto &p : pairs) {
        near_miss_verdict x = check_near_miss(p[0], p[1]), y = check_near_miss(p[0], p[1]), z = check_near_miss(p[1], p[0]);
        CHECK(x.reason == y.reason);
        CHECK(x.detail == y.detail);
        CHECK(x.rejected() == z.rejected());
    }
    CHECK(check_near_miss("", "").reason == near_miss_reason::none);
    CHECK(check_near_miss("'''...???", "\xff\xfe").reason == near_miss_reason::none);
}

TEST_CASE("guard: a word swapped for its WordNet opposite is refused at any similarity") {
    std::string why_not;
    const auto wn = wordnet::system(&why_not);
    REQUIRE_MESSAGE(wn, why_not);
    auto with_wordnet = [&](const char *a, const char *b, float sim) { return check_near_miss(a, b, sim, wn.get()); };
    near_miss_verdict v = with_wordnet("Is it better to sleep in a hot room?", "Is it better to sleep in a cold room?", 0.97f);
    CHECK(v.reason == near_miss_reason::antonym);
    CHECK(v.detail == "opposites: 'hot' vs 'cold'");
    CHECK(with_wordnet("When should I buy shares?", "When should I sell shares?", 0.95f).reason == near_miss_reason::antonym);
    CHECK(with_wordnet("Why do my arms feel heavy after lifting?", "Why do my arms feel light after lifting?", 0.95f).reason ==
          near_miss_reason::antonym);
    // Without WordNet the same pair passes at that similarity (the substitution check trusts it).
    CHECK(check_near_miss("When should I buy shares?", "When should I sell shares?", 0.95f).reason == near_miss_reason::none);
    // Paraphrases keep passing.
    CHECK(with_wordnet("How do I delete a file in Linux?", "How do I remove a file in Linux?", 0.9f).reason == near_miss_reason::none);
    CHECK(with_wordnet("Why is the sky blue?", "What makes the sky look blue?", 0.9f).reason == near_miss_reason::none);
}
