// The CUDA forward pass against the CPU engine. Both run the model with every matrix as F16
// (llama_model loaded with weight_format::f16: the values gpu_context uploads), so what may
// differ is only the order and precision of the arithmetic, not the weights: greedy tokens
// agree, logits agree within kRelTol of their range, batching and prefix sharing change
// nothing, and a bad batch fails with the CPU's message and leaves the context as it was.
// Runs on device 0, or $ACTORSERVE_GPU_DEVICE; without a device gpu_test_main skips it.
#include "tests/support/paths.h"
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "engine/chat_template.h"
#include "engine/forward.h"
#include "engine/tokenizer.h"
#include "gpu/gpu_context.h"

using namespace actorserve;

namespace {

// Logit tolerance, relative to the largest |logit| of the CPU's row (SmolLM2's logits reach
// about 20-30, so about 0.2-0.3 absolute). Why this size: the weights are the same halves on
// both sides, but the GPU rounds activations to half for cuBLAS and sums in another order
// (F32 accumulation in tiles), and the CPU engine has its own order and exp/rsqrt. Each such
// rounding is ~5e-4 relative (half's 11-bit mantissa) and 30 layers compound it into a few
// hundredths of a logit: transformers in float32 on these same halves differs from the CPU
// engine by 0.033 at most (max |logit| 25.8, 1.3e-3 relative), 8x inside. The same model with
// q8_0 weights differs by 0.9-1.5, and a real bug (a wrong RoPE pairing, a missing norm, a KV
// read from the wrong block, an off-by-one position) moves logits by whole units: far outside.
// The worst difference seen is printed, so a run on a GPU shows the margin left.
constexpr float kRelTol = 1e-2f;
constexpr int kNewTokens = 32; // greedy tokens generated per prompt

const llama_model &model() {
    static std::unique_ptr<llama_model> m = [] {
        std::string err;
        load_options opts;
        opts.weights = weight_format::f16;
        auto p = llama_model::load(test_paths::model(), opts, err);
        if (!p) FAIL("cannot load the model (run scripts/setup.sh): " << err);
        return p;
    }();
    return *m;
}

int n_vocab() { return model().hparams().n_vocab; }

int device() {
    const char *env = std::getenv("ACTORSERVE_GPU_DEVICE");
    return env && *env ? std::atoi(env) : 0;
}

// Eight prompts of different kinds and lengths: chat turns (ChatML from the model's own
// template, with its default system prompt or one of ours) and plain text to continue.
const std::vector<std::vector<int32_t>> &prompts() {
    static const std::vector<std::vector<int32_t>> out = [] {
        std::string err;
        auto tok = tokenizer::from_gguf(model().file(), err);
        REQUIRE_MESSAGE(tok, err);
        auto tmpl = chat_template::detect(model().file().get_string("tokenizer.chat_template").value_or(""), err);
        REQUIRE_MESSAGE(tmpl, err);
        auto chat = [&](std::vector<chat_message> msgs) { return encode_prompt(*tok, tmpl->render(msgs, true)); };
        std::vector<std::vector<int32_t>> p;
        p.push_back(chat({{"user", "What is the capital of France?"}}));
        p.push_back(chat({{"user", "Write a haiku about the sea."}}));
        p.push_back(chat({{"system", "You are a pirate. Answer like one."}, {"user", "Tell me about your ship."}}));
        p.push_back(chat({{"user", "Explain in one paragraph why the sky is blue."}}));
        p.push_back(encode_prompt(*tok, "The quick brown fox jumps over the lazy dog. The quick brown fox"));
        p.push_back(encode_prompt(*tok, "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"));
        p.push_back(encode_prompt(*tok, "Once upon a time, in a small village by the mountains, there lived"));
        p.push_back(encode_prompt(*tok, "1, 2, 3, 5, 8, 13,"));
        return p;
    }();
    return out;
}

// As the runtime makes them (actors/runtime.cpp): chunk_invariant on.
context_params params(int n_seq, int n_ctx = 256, int n_batch = 512) {
    context_params cp;
    cp.n_ctx = n_ctx;
    cp.n_batch = n_batch;
    cp.n_seq = n_seq;
    cp.chunk_invariant = true;
    return cp;
}

std::unique_ptr<gpu_context> make_gpu(const context_params &cp) {
    std::string err;
    auto g = gpu_context::create(model(), cp, device(), err);
    if (!g) FAIL("gpu_context::create on device " << device() << ": " << err);
    return g;
}

int32_t argmax(const float *l) { return static_cast<int32_t>(std::max_element(l, l + n_vocab()) - l); }

float max_abs(const float *l) {
    float m = 0.0f;
    for (int i = 0; i < n_vocab(); ++i) m = std::max(m, std::fabs(l[i]));
    return m;
}

float max_abs_diff(const float *a, const float *b) {
    float m = 0.0f;
    for (int i = 0; i < n_vocab(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
    return m;
}

float tolerance(const float *ref) { return kRelTol * max_abs(ref); }

// Two candidates whose reference logits are within the tolerance of each other are a tie the
// arithmetic's order may break either way: not a failure, but the rest of that sequence then
// follows another text and is not compared.
bool near_tie(const float *ref, int32_t a, int32_t b) { return std::fabs(ref[a] - ref[b]) <= tolerance(ref); }

std::vector<batch_token> prompt_batch(std::span<const int32_t> tokens, int seq, int pos0) {
    std::vector<batch_token> b;
    for (size_t i = 0; i < tokens.size(); ++i)
        b.push_back({tokens[i], seq, pos0 + static_cast<int32_t>(i), i + 1 == tokens.size()});
    return b;
}

// The worst |gpu - cpu| / max|cpu| seen by the test cases, reported at the end of each.
float g_worst = 0.0f;

void check_close(const float *gpu, const float *cpu, const std::string &what, size_t index, int step) {
    const float d = max_abs_diff(gpu, cpu), tol = tolerance(cpu);
    g_worst = std::max(g_worst, d / std::max(max_abs(cpu), 1e-6f));
    CHECK_MESSAGE(d <= tol, what << " " << index << ", step " << step << ": max |gpu - cpu| = " << d
                                 << " > tolerance " << tol);
}

} // namespace

TEST_CASE("gpu forward: greedy tokens and logits of 8 prompts match the CPU engine on the same F16 weights") {
    llama_context cpu(model(), params(1));
    auto gpu = make_gpu(params(1));
    std::string err;
    int ties = 0;
    g_worst = 0.0f;
    for (size_t p = 0; p < prompts().size(); ++p) {
        cpu.truncate(0);
        gpu->truncate(0);
        REQUIRE_MESSAGE(cpu.eval(prompts()[p], err), err);
        REQUIRE_MESSAGE(gpu->eval(prompts()[p], err), err);
        REQUIRE(gpu->n_past() == cpu.n_past());
        // Step 0 is the prompt's last token (part b); then the greedy tokens (part a), both
        // sides fed the same (CPU) token, so a failure names the first step that differs.
        for (int step = 0; step <= kNewTokens; ++step) {
            const float *c = cpu.logits().data(), *g = gpu->logits(0);
            check_close(g, c, "prompt", p, step);
            const int32_t tc = argmax(c), tg = argmax(g);
            if (tc != tg) {
                if (near_tie(c, tc, tg)) {
                    ++ties;
                    MESSAGE("prompt " << p << ", position " << cpu.n_past() << ": near tie, gpu token " << tg
                                      << " vs cpu token " << tc << " (cpu logits " << c[tg] << ", " << c[tc] << ")");
                } else {
                    FAIL_CHECK("prompt " << p << ", position " << cpu.n_past() << ": gpu token " << tg
                                         << " (logit " << g[tg] << ") vs cpu token " << tc << " (logit " << c[tc]
                                         << "; gpu gives it " << g[tc] << ")");
                }
                break;
            }
            if (step == kNewTokens) break;
            REQUIRE_MESSAGE(cpu.eval(std::span<const int32_t>(&tc, 1), err), err);
            REQUIRE_MESSAGE(gpu->eval(std::span<const int32_t>(&tc, 1), err), err);
        }
    }
    // A tie or two among 8 x 33 choices is chance; more means the GPU is further off than it seems.
    CHECK(ties <= 2);
    MESSAGE("worst max|gpu - cpu| / max|cpu| over all steps: " << g_worst << " (tolerance " << kRelTol << ")");
}

TEST_CASE("gpu forward: the 8 prompts decoded together in one batch give the tokens they give alone") {
    const size_t n = prompts().size();
    std::string err;
    // alone: logits after the prompt and after each greedy token (the GPU's own greedy path)
    std::vector<std::vector<std::vector<float>>> alone(n);
    std::vector<std::vector<int32_t>> alone_tokens(n);
    {
        auto gpu = make_gpu(params(1));
        for (size_t p = 0; p < n; ++p) {
            gpu->truncate(0);
            REQUIRE_MESSAGE(gpu->eval(prompts()[p], err), err);
            for (int step = 0; step <= kNewTokens; ++step) {
                alone[p].emplace_back(gpu->logits(0), gpu->logits(0) + n_vocab());
                const int32_t t = argmax(gpu->logits(0));
                alone_tokens[p].push_back(t);
                if (step < kNewTokens) REQUIRE_MESSAGE(gpu->eval(std::span<const int32_t>(&t, 1), err), err);
            }
        }
    }
    // together: one slot per prompt, all prompts in one decode(), then one token per slot per step
    auto gpu = make_gpu(params(static_cast<int>(n)));
    std::vector<batch_token> batch;
    for (size_t p = 0; p < n; ++p) {
        const auto b = prompt_batch(prompts()[p], static_cast<int>(p), 0);
        batch.insert(batch.end(), b.begin(), b.end());
    }
    REQUIRE_MESSAGE(gpu->decode(batch, err), err);
    std::vector<bool> diverged(n, false);
    for (int step = 0; step <= kNewTokens; ++step) {
        batch.clear();
        for (size_t p = 0; p < n; ++p) {
            const float *g = gpu->logits(p);
            const int32_t t = argmax(g);
            if (!diverged[p]) {
                const float *a = alone[p][static_cast<size_t>(step)].data();
                check_close(g, a, "batched prompt", p, step);
                if (t != alone_tokens[p][static_cast<size_t>(step)]) {
                    diverged[p] = true;
                    if (near_tie(a, t, alone_tokens[p][static_cast<size_t>(step)]))
                        MESSAGE("prompt " << p << ", step " << step << ": near tie between batched and alone");
                    else
                        FAIL_CHECK("prompt " << p << ", step " << step << ": batched token " << t << " but alone "
                                             << alone_tokens[p][static_cast<size_t>(step)]);
                }
            }
            batch.push_back({t, static_cast<int32_t>(p), gpu->n_past(static_cast<int>(p)), true});
        }
        if (step < kNewTokens) REQUIRE_MESSAGE(gpu->decode(batch, err), err);
    }
}

TEST_CASE("gpu forward: a bad batch fails with the CPU's message and changes nothing") {
    // n_ctx 20 so that a context overflow fits in a batch of n_batch 16
    const context_params cp = params(2, /*n_ctx=*/20, /*n_batch=*/16);
    llama_context cpu(model(), cp);
    auto gpu = make_gpu(cp);
    const std::vector<int32_t> prompt(prompts()[4].begin(), prompts()[4].begin() + 8);
    std::string err, cerr;
    REQUIRE(cpu.eval(prompt, cerr));
    REQUIRE_MESSAGE(gpu->eval(prompt, err), err);
    const std::vector<float> before(gpu->logits(0), gpu->logits(0) + n_vocab());
    const int32_t V = n_vocab(), t = 1000, n = 8;

    std::vector<std::vector<batch_token>> bad = {
        {},                                                  // empty
        std::vector<batch_token>(17, batch_token{t, 1, 0, true}), // over n_batch
        {{t, 0, n, false}, {V, 0, n + 1, true}},             // token id n_vocab
        {{-1, 0, n, true}},                                  // negative token id
        {{t, 2, 0, true}},                                   // sequence outside [0, n_seq)
        {{t, -1, 0, true}},                                  // negative sequence
        {{t, 0, n + 1, true}},                               // position gap
        {{t, 0, n - 1, true}},                               // position already written
        {{t, 1, 0, false}, {t, 1, 2, true}},                 // gap inside the batch
        {{t, 1, 0, true}, {V, 0, n, true}},                  // a good sequence, then a bad token
    };
    std::vector<batch_token> overflow; // seq 0 from 8 up to 20 (n_ctx)
    for (int i = n; i <= 20; ++i) overflow.push_back({t, 0, i, i == 20});
    bad.push_back(overflow);
    for (size_t i = 0; i < bad.size(); ++i) {
        CAPTURE(i);
        CHECK_FALSE(cpu.decode(bad[i], cerr));
        CHECK_FALSE(gpu->decode(bad[i], err));
        CHECK(err == cerr);
        CHECK(gpu->n_past(0) == n);
        CHECK(gpu->n_past(1) == 0);
        CHECK(std::memcmp(gpu->logits(0), before.data(), sizeof(float) * before.size()) == 0);
    }
    // eval()'s own checks: nothing to evaluate, and a context overflow
    CHECK_FALSE(cpu.eval({}, cerr));
    CHECK_FALSE(gpu->eval({}, err));
    CHECK(err == cerr);
    const std::vector<int32_t> too_many(13, t);
    CHECK_FALSE(cpu.eval(too_many, cerr));
    CHECK_FALSE(gpu->eval(too_many, err));
    CHECK(err == cerr);
    CHECK(gpu->n_past(0) == n);

    // and the context goes on as if nothing had been tried
    const std::vector<batch_token> good = {{t, 0, n, true}, {t, 1, 0, true}};
    REQUIRE_MESSAGE(cpu.decode(good, cerr), cerr);
    REQUIRE_MESSAGE(gpu->decode(good, err), err);
    check_close(gpu->logits(0), cpu.logits(0), "sequence", 0, 1);
    check_close(gpu->logits(1), cpu.logits(1), "sequence", 1, 0);

    // pool mode: a slot with no blocks, and one whose table is too short
    context_params pp = params(1, 256, 64);
    pp.n_kv_blocks = 4;
    llama_context cpu_pool(model(), pp);
    auto gpu_pool = make_gpu(pp);
    const std::vector<int32_t> long_prompt(40, t);
    CHECK_FALSE(cpu_pool.eval(long_prompt, cerr));
    CHECK_FALSE(gpu_pool->eval(long_prompt, err));
    CHECK(err == cerr);
    const std::vector<int32_t> one = {3};
    cpu_pool.set_blocks(0, one, 0);
    gpu_pool->set_blocks(0, one, 0);
    CHECK_FALSE(cpu_pool.decode(prompt_batch(long_prompt, 0, 0), cerr));
    CHECK_FALSE(gpu_pool->decode(prompt_batch(long_prompt, 0, 0), err));
    CHECK(err == cerr);
    CHECK(gpu_pool->n_past(0) == 0);
}

TEST_CASE("gpu forward: a sequence continued from another slot's prefix blocks gives the logits of one computed from scratch") {
    // A prompt longer than two blocks of 32, so the shared prefix is two whole blocks and the
    // rest is a chunk of several tokens.
    std::vector<int32_t> prompt = prompts()[2];
    for (size_t i : {3, 6}) prompt.insert(prompt.end(), prompts()[i].begin(), prompts()[i].end());
    REQUIRE(prompt.size() >= 2 * 32 + 2);
    context_params pp = params(2);
    pp.kv_block_size = 32;
    pp.n_kv_blocks = 8;
    auto gpu = make_gpu(pp);
    std::string err;

    // reference: the CPU from scratch, slot mode
    llama_context cpu(model(), params(1));
    REQUIRE_MESSAGE(cpu.eval(prompt, err), err);

    // slot 0 computes the whole prompt in blocks 6, 1, 4, 3 (from scratch on the GPU)
    const std::vector<int32_t> ta = {6, 1, 4, 3}, tb = {6, 1, 0, 5};
    gpu->set_blocks(0, ta, 0);
    REQUIRE_MESSAGE(gpu->decode(prompt_batch(prompt, 0, 0), err), err);
    const std::vector<float> a(gpu->logits(0), gpu->logits(0) + n_vocab());
    check_close(a.data(), cpu.logits().data(), "slot", 0, 0);

    // slot 1 takes slot 0's blocks 6 and 1 (positions 0..63) and computes only the rest
    gpu->set_blocks(1, tb, 64);
    CHECK(gpu->n_past(1) == 64);
    REQUIRE_MESSAGE(gpu->decode(prompt_batch(std::span(prompt).subspan(64), 1, 64), err), err);
    const float *b = gpu->logits(0);
    check_close(b, cpu.logits().data(), "slot", 1, 0);
    const float d = max_abs_diff(b, a.data());
    CHECK_MESSAGE(d <= tolerance(a.data()), "shared prefix vs from scratch: max diff " << d);
    CHECK(argmax(b) == argmax(a.data()));
    MESSAGE("shared prefix vs from scratch on the GPU: max |diff| " << d
                                                                    << std::string(d == 0.0f ? " (bit-identical)" : ""));

    // both go on together with the CPU's greedy tokens; neither disturbed the other's KV
    for (int step = 1; step <= 3; ++step) {
        const int32_t t = argmax(cpu.logits().data());
        REQUIRE(cpu.eval(std::span<const int32_t>(&t, 1), err));
        const std::vector<batch_token> both = {{t, 0, gpu->n_past(0), true}, {t, 1, gpu->n_past(1), true}};
        REQUIRE_MESSAGE(gpu->decode(both, err), err);
        check_close(gpu->logits(0), cpu.logits().data(), "slot", 0, step);
        check_close(gpu->logits(1), cpu.logits().data(), "slot", 1, step);
    }
}

TEST_CASE("gpu forward: decode steps replayed from CUDA graphs compute the bits that direct launches compute") {
    const size_t n = prompts().size();
    std::string err;
    // The same 8 sequences twice: decode steps of 8 tokens, then of 1 token (two graph sizes,
    // each on both metadata buffers), once with graphs and once without.
    auto run = [&](bool graphs) {
        auto gpu = make_gpu(params(static_cast<int>(n)));
        gpu->use_graphs(graphs);
        std::vector<batch_token> batch;
        for (size_t p = 0; p < n; ++p) {
            const auto b = prompt_batch(prompts()[p], static_cast<int>(p), 0);
            batch.insert(batch.end(), b.begin(), b.end());
        }
        REQUIRE_MESSAGE(gpu->decode(batch, err), err);
        std::vector<float> out;
        std::vector<int32_t> next(n);
        for (size_t p = 0; p < n; ++p) next[p] = argmax(gpu->logits(p));
        for (int step = 0; step < 6; ++step) {
            batch.clear();
            for (size_t p = 0; p < n; ++p)
                batch.push_back({next[p], static_cast<int32_t>(p), gpu->n_past(static_cast<int>(p)), true});
            REQUIRE_MESSAGE(gpu->decode(batch, err), err);
            for (size_t p = 0; p < n; ++p) {
                out.insert(out.end(), gpu->logits(p), gpu->logits(p) + n_vocab());
                next[p] = argmax(gpu->logits(p));
            }
        }
        for (int step = 0; step < 4; ++step) { // sequence 3 alone
            batch.assign(1, {next[3], 3, gpu->n_past(3), true});
            REQUIRE_MESSAGE(gpu->decode(batch, err), err);
            out.insert(out.end(), gpu->logits(0), gpu->logits(0) + n_vocab());
            next[3] = argmax(gpu->logits(0));
        }
        if (graphs) CHECK_MESSAGE(gpu->graphs_in_use(), "a graph capture failed; steps fell back to direct launches");
        return out;
    };
    const std::vector<float> with = run(true), without = run(false);
    REQUIRE(with.size() == without.size());
    CHECK(std::memcmp(with.data(), without.data(), with.size() * sizeof(float)) == 0);
}
