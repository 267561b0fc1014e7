// Structured output without a model: the schema subset's refusals name the keyword; the matcher
// accepts documents that validate and refuses the rest, byte by byte; the token mask of the
// real vocabulary equals, at states reached by random walks, the tokens one finds by feeding
// every token's bytes in turn (its trie and its class of plain string tokens miss nothing and
// admit nothing more); and random walks through the mask always end in a whole document.
#include "tests/support/model.h"
#include <doctest/doctest.h>

#include <random>

#include "engine/json_grammar.h"
#include "engine/json_reader.h"
#include "engine/token_mask.h"

using namespace actorserve;

namespace {

bool accepts(const json_grammar &g, std::string_view doc) {
    json_matcher m(g);
    return m.feed(doc) && m.can_finish();
}

std::shared_ptr<const json_grammar> compiled(std::string_view schema) {
    schema_result r = compile_json_schema(schema);
    REQUIRE_MESSAGE(r.grammar, r.error);
    return r.grammar;
}

const token_vocab &vocab() {
    static const token_vocab v(*test_support::default_model().tok);
    return v;
}

// Every token whose bytes the matcher takes, the slow way.
std::vector<int32_t> brute_force(const json_matcher &m) {
    std::vector<int32_t> out;
    const auto &tok = *test_support::default_model().tok;
    for (int32_t id = 0; id < tok.n_vocab(); ++id) {
        if (vocab().is_eog(id)) {
            if (m.can_finish()) out.push_back(id);
            continue;
        }
        const std::string &b = vocab().bytes(id);
        if (b.empty()) continue;
        json_matcher c = m;
        if (c.feed(b)) out.push_back(id);
    }
    return out;
}

const char *const kPerson = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": 8},
    "age": {"type": "integer"},
    "tags": {"type": "array", "items": {"enum": ["a", "b", 3]}, "minItems": 1, "maxItems": 2},
    "pet": {"anyOf": [{"type": "null"}, {"type": "object", "properties": {"kind": {"const": "cat"}}, "required": ["kind"],
            "additionalProperties": false}]},
    "score": {"type": ["number", "boolean"]}
  },
  "required": ["name", "tags"],
  "additionalProperties": false
})";

} // namespace

TEST_CASE("json schema: keywords outside the subset are refused by name and place") {
    struct bad {
        const char *schema, *keyword, *where;
    };
    for (const bad &b : {bad{R"({"type": "string", "pattern": "^a"})", "pattern", "pattern"},
                         bad{R"({"type": "object", "properties": {"a": {"$ref": "#/x"}}})", "$ref", "properties.a.$ref"},
                         bad{R"({"type": "integer", "minimum": 3})", "minimum", "minimum"},
                         bad{R"({"type": "object", "properties": {}, "additionalProperties": true})", "additionalProperties", "additionalProperties"},
                         bad{R"({"type": "tuple"})", "type", "tuple"},
                         bad{R"({"oneOf": [{"type": "string"}]})", "oneOf", "oneOf"},
                         bad{R"({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]})", "required", "required"},
                         bad{R"({"type": "array", "items": {"type": "string"}, "minItems": 3, "maxItems": 2})", "maxItems", "maxItems"}}) {
        schema_result r = compile_json_schema(b.schema);
        CHECK_MESSAGE(!r.grammar, b.schema);
        CHECK_MESSAGE(r.keyword == b.keyword, b.schema << " -> " << r.keyword << ": " << r.error);
        CHECK_MESSAGE(r.error.find(b.where) != std::string::npos, r.error);
    }
    CHECK(compile_json_schema("{not json").keyword == "schema");
}

TEST_CASE("json matcher: valid documents pass, each kind of mistake is refused") {
    const auto g = compiled(kPerson);
    CHECK(accepts(*g, R"({"name": "Ann", "tags": ["a"]})"));
    CHECK(accepts(*g, R"({"name":"Ann","age":-12,"tags":[3,"b"],"pet":null,"score":1.5e3})"));
    CHECK(accepts(*g, "{\n  \"name\": \"\\u00e9\\n\",\n  \"tags\": [\"b\"],\n  \"pet\": {\"kind\": \"cat\"},\n  \"score\": true\n}"));
    CHECK(accepts(*g, R"({"name": "日本語", "tags": ["a"]})")); // 3 characters, 9 bytes
    CHECK(!accepts(*g, R"({"tags": ["a"]})"));                        // required name missing
    CHECK(!accepts(*g, R"({"name": "Ann"})"));                        // required tags missing
    CHECK(!accepts(*g, R"({"tags": ["a"], "name": "Ann"})"));         // out of the schema's order
    CHECK(!accepts(*g, R"({"name": "", "tags": ["a"]})"));            // minLength
    CHECK(!accepts(*g, R"({"name": "ninechars", "tags": ["a"]})"));   // maxLength
    CHECK(!accepts(*g, R"({"name": "A", "tags": []})"));              // minItems
    CHECK(!accepts(*g, R"({"name": "A", "tags": ["a", "b", 3]})"));   // maxItems
    CHECK(!accepts(*g, R"({"name": "A", "tags": ["c"]})"));           // enum
    CHECK(!accepts(*g, R"({"name": "A", "age": 1.5, "tags": ["a"]})")); // integer
    CHECK(!accepts(*g, R"({"name": "A", "age": 01, "tags": ["a"]})"));  // leading zero
    CHECK(!accepts(*g, R"({"name": "A", "tags": ["a"], "pet": {"kind": "dog"}})")); // const
    CHECK(!accepts(*g, R"({"name": "A", "tags": ["a"], "extra": 1})"));  // additionalProperties
    CHECK(!accepts(*g, R"({"name": "A", "tags": ["a"],})"));            // trailing comma
    CHECK(!accepts(*g, "{\"name\": \"a\x01\", \"tags\": [\"a\"]}"));     // control character
    CHECK(!accepts(*g, "{\"name\": \"\xC3\x28\", \"tags\": [\"a\"]}"));  // invalid UTF-8
    CHECK(!accepts(*g, R"({"name": "\ud800", "tags": ["a"]})"));         // a surrogate half
    CHECK(!accepts(*g, R"({"name": "A", "tags": ["a"]} x)"));            // anything after the end
    json_matcher m(*g);
    CHECK(m.feed(R"({"name": "A")"));
    CHECK(!m.feed("}")); // refused, and the matcher is unchanged:
    CHECK(m.feed(R"(, "tags": ["a"]})"));
    CHECK(m.must_finish());
}

TEST_CASE("json matcher: json_object mode takes any object, and only an object") {
    const auto g = any_json_object();
    CHECK(accepts(*g, R"({})"));
    CHECK(accepts(*g, R"({"a": [1, {"b": null}, "x", -0.5e-3, true], "c": {}})"));
    CHECK(!accepts(*g, R"([1])"));
    CHECK(!accepts(*g, R"("x")"));
    CHECK(!accepts(*g, R"({"a" 1})"));
    CHECK(!accepts(*g, R"({a: 1})"));
    // Whitespace runs are bounded, so a model cannot pad forever.
    CHECK(!accepts(*g, "{" + std::string(json_matcher::kMaxWhitespace + 1, ' ') + "}"));
    CHECK(accepts(*g, "{" + std::string(json_matcher::kMaxWhitespace, ' ') + "}"));
}

TEST_CASE("json matcher: enum texts that are prefixes of one another, and numbers at the top") {
    const auto g = compiled(R"({"enum": [1, 10, 100, "x"]})");
    for (const char *ok : {"1", "10", "100", "\"x\""}) CHECK_MESSAGE(accepts(*g, ok), ok);
    for (const char *no : {"0", "1000", "11", "\"y\""}) CHECK_MESSAGE(!accepts(*g, no), no);
    const auto n = compiled(R"({"type": "number"})");
    json_matcher m(*n);
    CHECK(m.feed("-12"));
    CHECK(m.can_finish());
    CHECK(!m.must_finish()); // more digits may follow
    CHECK(!m.feed("-"));
}

TEST_CASE("token mask: equals trying every token, at states along random walks of several schemas") {
    std::mt19937 rng(5);
    std::vector<int32_t> fast;
    for (const char *schema : {kPerson, R"({"type": "object"})", R"({"type": "array", "items": {"type": "string", "maxLength": 3}})"}) {
        const auto g = compiled(schema);
        for (int walk = 0; walk < 3; ++walk) {
            json_matcher m(*g);
            for (int step = 0; step < 12; ++step) {
                vocab().allowed(m, fast);
                const std::vector<int32_t> slow = brute_force(m);
                REQUIRE_MESSAGE(fast == slow, schema << " step " << step << ": " << fast.size() << " vs " << slow.size());
                if (fast.empty() || m.must_finish()) break;
                const int32_t t = fast[std::uniform_int_distribution<size_t>(0, fast.size() - 1)(rng)];
                if (vocab().is_eog(t)) break;
                REQUIRE(m.feed(vocab().bytes(t)));
            }
        }
    }
    CHECK(vocab().n_plain() > 40000); // most of the vocabulary is plain string text
}

TEST_CASE("token mask: random walks that favour closing bytes end in documents that parse") {
    std::mt19937 rng(9);
    const auto g = compiled(kPerson);
    std::vector<int32_t> allowed;
    int whole = 0;
    for (int walk = 0; walk < 40; ++walk) {
        json_matcher m(*g);
        std::string doc;
        for (int step = 0; step < 400; ++step) {
            vocab().allowed(m, allowed);
            REQUIRE(!allowed.empty());
            // Prefer short tokens and the end: walks finish instead of filling strings forever.
            int32_t t = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
            for (int32_t c : allowed)
                if (vocab().is_eog(c) || (vocab().bytes(c).size() == 1 && std::string_view("\"]},0").find(vocab().bytes(c)[0]) != std::string_view::npos && rng() % 3 == 0)) {
                    t = c;
                    break;
                }
            if (vocab().is_eog(t)) break;
            REQUIRE(m.feed(vocab().bytes(t)));
            doc += vocab().bytes(t);
        }
        if (!m.can_finish()) continue;
        ++whole;
        json_value v;
        std::string err;
        CHECK_MESSAGE(parse_json(doc, v, err), doc << ": " << err);
        CHECK(v.find("name") != nullptr);
        CHECK(v.find("tags") != nullptr);
    }
    CHECK(whole >= 30);
}

TEST_CASE("json matcher: min_close is 0 exactly at a whole document and never more than what a real document still needs") {
    const auto g = compiled(kPerson);
    for (const std::string &doc : {std::string(R"({"name": "Ann", "age": 31, "tags": ["a", 3], "pet": {"kind": "cat"}, "score": false})"),
                                  std::string(R"({"name":"B","tags":["b"]})")}) {
        json_matcher m(*g);
        for (size_t i = 0; i < doc.size(); ++i) {
            const int need = m.min_close();
            CHECK_MESSAGE(need <= static_cast<int>(doc.size() - i), "after " << doc.substr(0, i));
            CHECK(need > 0);
            REQUIRE(m.feed(static_cast<uint8_t>(doc[i])));
        }
        CHECK(m.min_close() == 0);
        CHECK(m.can_finish());
    }
    json_matcher fresh(*g);
    CHECK(fresh.min_close() == static_cast<int>(std::string(R"({"name":"x","tags":[3]})").size()));
}

TEST_CASE("token mask with a budget: random walks always end whole within max_tokens") {
    std::mt19937 rng(31);
    std::vector<int32_t> allowed;
    for (const char *schema : {kPerson, R"({"type": "object"})",
                               R"({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string", "minLength": 3}, "minItems": 2}},
                                   "required": ["a"], "additionalProperties": false})"}) {
        const auto g = compiled(schema);
        for (int walk = 0; walk < 20; ++walk) {
            const int max_tokens = 30 + walk;
            json_matcher m(*g);
            bool ended = false;
            for (int used = 0; used < max_tokens; ++used) {
                vocab().allowed(m, allowed, max_tokens - used - 1);
                REQUIRE(!allowed.empty());
                // Any allowed token, long ones included: the walk does nothing to end early itself.
                int32_t t = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
                if (vocab().is_eog(t)) {
                    ended = true;
                    break;
                }
                REQUIRE(m.feed(vocab().bytes(t)));
            }
            CHECK_MESSAGE((ended || m.can_finish()), schema << " walk " << walk << ": not whole after " << max_tokens << " tokens");
        }
    }
}
