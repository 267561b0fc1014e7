// Generation: the stop filter on hand-made streams, then generate() on the real model checked
// against a greedy loop written out by hand (eval + argmax), with stop strings, max_tokens,
// a full context and cancellation. Kept to a few dozen decode steps in all.
#include "tests/support/paths.h"
#include "engine/generate.h"
#include "engine/stop_filter.h"
#include "engine/utf8.h"

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

using namespace actorserve;

// ---- stop_filter ----

TEST_CASE("stop filter: without stops every push passes through") {
    stop_filter f({});
    auto r = f.push("Hello");
    CHECK(r.emit == "Hello");
    CHECK_FALSE(r.stopped);
    CHECK(f.push("").emit.empty());
    CHECK(f.flush().empty());

    stop_filter only_empty({""});
    CHECK(only_empty.push("abc").emit == "abc");
}

TEST_CASE("stop filter: a stop split across pushes is held back, then dropped") {
    stop_filter f({"</s>"});
    auto r = f.push("Hello <");
    CHECK(r.emit == "Hello ");
    CHECK_FALSE(r.stopped);
    r = f.push("/");
    CHECK(r.emit.empty());
    r = f.push("s");
    CHECK(r.emit.empty());
    CHECK_FALSE(r.stopped);
    r = f.push(">tail");
    CHECK(r.emit.empty());
    CHECK(r.stopped);
    CHECK(f.stopped());
    r = f.push("more");
    CHECK(r.emit.empty());
    CHECK(r.stopped);
}

TEST_CASE("stop filter: held text that stops matching is released") {
    stop_filter f({"</s>"});
    CHECK(f.push("a </").emit == "a ");
    const auto r = f.push("b>");
    CHECK(r.emit == "</b>");
    CHECK_FALSE(r.stopped);
}

TEST_CASE("stop filter: a match inside one push emits only the text before it") {
    stop_filter f({"\nUser:"});
    const auto r = f.push("Sure.\nUser: and then");
    CHECK(r.emit == "Sure.");
    CHECK(r.stopped);
}

TEST_CASE("stop filter: overlapping candidates") {
    SUBCASE("a shorter stop completes inside a longer candidate") {
        stop_filter f({"abcd", "bce"});
        CHECK(f.push("xabc").emit == "x"); // "abc" may become "abcd"
        const auto r = f.push("e");       // "abce": "bce" starts at 1
        CHECK(r.emit == "a");
        CHECK(r.stopped);
    }
    SUBCASE("the stop that starts first wins") {
        stop_filter f({"b", "ab"});
        const auto r = f.push("xab");
        CHECK(r.emit == "x");
        CHECK(r.stopped);
    }
    SUBCASE("the longest held suffix is kept: aa|a then b") {
        stop_filter f({"aab"});
        CHECK(f.push("aa").emit.empty());
        CHECK(f.push("a").emit == "a"); // "aaa": only the last "aa" can still become "aab"
        const auto r = f.push("b");
        CHECK(r.emit.empty());
        CHECK(r.stopped);
    }
    SUBCASE("two candidates of different lengths hold the longer suffix") {
        stop_filter f({"xyz", "yzw"});
        CHECK(f.push("ax").emit == "a");
        CHECK(f.push("y").emit.empty());  // "xy" for xyz (and "y" for yzw)
        CHECK(f.push("z").stopped);
    }
}

TEST_CASE("stop filter: flush returns what was held back") {
    stop_filter f({"STOP"});
    CHECK(f.push("end ST").emit == "end ");
    CHECK(f.flush() == "ST");
    CHECK(f.flush().empty());
}

TEST_CASE("stop filter: UTF-8 text and stops keep emitted pieces whole") {
    stop_filter f({"é!"});
    const auto r = f.push("café");
    CHECK(r.emit == "caf");
    CHECK(is_valid_utf8(r.emit));
    CHECK(f.push("?").emit == "é?");
}

// ---- generate on the real model ----

namespace {

struct smollm {
    std::unique_ptr<llama_model> model;
    std::unique_ptr<tokenizer> tok;
    std::vector<int32_t> prompt;
    std::vector<int32_t> greedy;  // 16 tokens by hand: eval + argmax
    std::string greedy_text;
};

constexpr int kGreedy = 16;
// note: one thread. A spinning pool loses badly when the test machine is busy with other work.
const context_params kCtx{.n_ctx = 128, .n_batch = 64, .n_threads = 1};

// Index of the largest logit, the lowest on ties.
int32_t argmax(std::span<const float> v) {
    size_t best = 0;
    for (size_t i = 1; i < v.size(); ++i)
        if (v[i] > v[best]) best = i;
    return static_cast<int32_t>(best);
}

// Loaded once; a missing model fails the test, never skips it.
const smollm &model() {
    static smollm m;
    if (!m.model) {
        std::string err;
        m.model = llama_model::load(test_paths::model(), err);
        REQUIRE_MESSAGE(m.model, err, " (run scripts/setup.sh to fetch the model)");
        m.tok = tokenizer::from_gguf(m.model->file(), err);
        REQUIRE_MESSAGE(m.tok, err);
        if (m.tok->add_bos()) m.prompt.push_back(m.tok->bos());
        for (int32_t id : m.tok->encode("The capital of France is", false)) m.prompt.push_back(id);

        llama_context ctx(*m.model, kCtx);
        REQUIRE_MESSAGE(ctx.eval(m.prompt, err), err);
        for (int i = 0; i < kGreedy; ++i) {
            const int32_t id = argmax(ctx.logits());
            REQUIRE_MESSAGE(!m.tok->is_eog(id), "the reference prompt should not end within 16 tokens");
            m.greedy.push_back(id);
            REQUIRE_MESSAGE(ctx.eval({&id, 1}, err), err);
        }
        m.greedy_text = m.tok->decode(m.greedy, false);
        REQUIRE(is_valid_utf8(m.greedy_text));
    }
    return m;
}

generate_params greedy_params(int max_tokens) {
    generate_params p;
    p.max_tokens = max_tokens;
    p.sampling.temperature = 0.0f;
    return p;
}

struct run_result {
    bool ok;
    std::string err, text;
    std::vector<std::string> chunks;
    generate_stats stats;
    int n_past;
};

run_result run(const generate_params &p, const context_params &cp = kCtx, int cancel_after_chunks = -1) {
    const smollm &m = model();
    llama_context ctx(*m.model, cp);
    run_result r;
    r.ok = generate(ctx, *m.tok, m.prompt, p,
                    [&](std::string_view t) {
                        r.chunks.emplace_back(t);
                        r.text += t;
                        return static_cast<int>(r.chunks.size()) != cancel_after_chunks;
                    },
                    r.stats, r.err);
    r.n_past = ctx.n_past();
    return r;
}

} // namespace

TEST_CASE("generate: greedy tokens equal eval + argmax by hand") {
    const smollm &m = model();
    const run_result r = run(greedy_params(kGreedy));
    REQUIRE_MESSAGE(r.ok, r.err);
    CHECK(r.stats.tokens == m.greedy);
    CHECK(r.text == m.greedy_text);
    CHECK(r.stats.n_prompt == static_cast<int>(m.prompt.size()));
    CHECK(r.stats.n_generated == kGreedy);
    CHECK(r.stats.finish_reason == "length");
    CHECK(r.n_past == static_cast<int>(m.prompt.size()) + kGreedy - 1); // the last token is not evaluated
    for (const std::string &c : r.chunks) {
        CHECK_FALSE(c.empty());
        CHECK(is_valid_utf8(c));
    }
    MESSAGE("greedy: \"", m.greedy_text, "\"");
}

TEST_CASE("generate: max_tokens is respected") {
    const smollm &m = model();
    const run_result r = run(greedy_params(3));
    REQUIRE_MESSAGE(r.ok, r.err);
    CHECK(r.stats.n_generated == 3);
    CHECK(r.stats.tokens == std::vector<int32_t>(m.greedy.begin(), m.greedy.begin() + 3));
    CHECK(r.stats.finish_reason == "length");
}

TEST_CASE("generate: a stop string in the greedy output truncates the text before it") {
    const smollm &m = model();
    // A stop string from the middle of the greedy text, starting on a character.
    size_t at = m.greedy_text.size() / 2;
    while (at > 0 && (static_cast<unsigned char>(m.greedy_text[at]) & 0xC0) == 0x80) --at;
    const std::string stop = m.greedy_text.substr(at, 3);
    const size_t first = m.greedy_text.find(stop);
    CAPTURE(stop);

    generate_params p = greedy_params(kGreedy);
    p.stop = {"never appears in this text", stop};
    const run_result r = run(p);
    REQUIRE_MESSAGE(r.ok, r.err);
    CHECK(r.text == m.greedy_text.substr(0, first));
    CHECK(r.stats.finish_reason == "stop");
    CHECK(r.stats.n_generated < kGreedy);
}

TEST_CASE("generate: a full context ends generation without an error") {
    const smollm &m = model();
    context_params cp = kCtx;
    cp.n_ctx = static_cast<int>(m.prompt.size()) + 3;
    const run_result r = run(greedy_params(kGreedy), cp);
    REQUIRE_MESSAGE(r.ok, r.err);
    CHECK(r.stats.finish_reason == "context");
    CHECK(r.stats.n_generated == 4); // 3 evaluated into the free positions, the 4th sampled from the last
    CHECK(r.stats.tokens == std::vector<int32_t>(m.greedy.begin(), m.greedy.begin() + 4));
    CHECK(r.n_past == cp.n_ctx);
}

TEST_CASE("generate: the callback returning false cancels") {
    const run_result r = run(greedy_params(kGreedy), kCtx, /*cancel_after_chunks=*/1);
    REQUIRE_MESSAGE(r.ok, r.err);
    CHECK(r.chunks.size() == 1);
    CHECK(r.stats.finish_reason == "cancelled");
    CHECK(r.stats.n_generated < kGreedy);
}

TEST_CASE("generate: bad input is an error, not a crash") {
    const smollm &m = model();
    SUBCASE("prompt longer than the context") {
        context_params cp = kCtx;
        cp.n_ctx = static_cast<int>(m.prompt.size()) - 1;
        const run_result r = run(greedy_params(4), cp);
        CHECK_FALSE(r.ok);
        CHECK(r.err == "prompt has " + std::to_string(m.prompt.size()) + " tokens, the context has room for " +
                           std::to_string(cp.n_ctx));
    }
    SUBCASE("invalid sampling parameters") {
        generate_params p = greedy_params(4);
        p.sampling.top_p = 0.0f;
        const run_result r = run(p);
        CHECK_FALSE(r.ok);
        CHECK(r.err.find("top_p") == 0);
    }
    SUBCASE("max_tokens below 1") {
        const run_result r = run(greedy_params(0));
        CHECK_FALSE(r.ok);
        CHECK(r.err.find("max_tokens") == 0);
    }
    SUBCASE("empty prompt") {
        llama_context ctx(*m.model, kCtx);
        generate_stats st;
        std::string err;
        CHECK_FALSE(generate(ctx, *m.tok, {}, greedy_params(4), nullptr, st, err));
        CHECK(err == "the prompt is empty");
    }
}

TEST_CASE("generate: a seeded sampled run is reproducible") {
    generate_params p;
    p.max_tokens = 6;
    p.sampling.temperature = 1.0f;
    p.sampling.seed = 7;
    const run_result a = run(p), b = run(p);
    REQUIRE(a.ok);
    REQUIRE(b.ok);
    CHECK(a.stats.tokens == b.stats.tokens);
    CHECK(a.text == b.text);
}
