// The architectures and tensor mixes the engine loads, against llama.cpp: tiny models with
// random weights (scripts/gen_tiny_models.py, written into the build tree by the ctest fixture
// engine.tiny_models) and llama.cpp's logits on them (tests/fixtures/tiny_models.json, from
// scripts/gen_tiny_reference.py): LLaMA with the K-quant mix of a Q4_K_M file, Llama 3's RoPE
// divisors, Qwen 2's biases and NeoX RoPE, Qwen 3's per-head q/k norms, LLaMA with a
// SentencePiece vocabulary, Phi-3's fused matrices, Gemma 2's soft caps, post-norms, GeGLU and
// alternating window, Gemma 3's head norms and window layers with a RoPE of their own. On the
// SentencePiece models also llama.cpp's tokens of a few texts and of a chat its renderer wrote.
#include "tests/support/paths.h"
#include <doctest/doctest.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/chat_template.h"
#include "engine/forward.h"
#include "engine/quants.h"
#include "engine/tokenizer.h"

using namespace actorserve;

namespace {

// The same tolerance as the golden tests of the default model (test_forward_golden.cpp): in
// practice every logit is llama.cpp's to the bit.
constexpr double kTolLogit = 1e-4;

struct tiny_case {
    std::string name, arch;
    std::vector<float> batch_logits, step_logits;
    std::vector<int32_t> greedy;
};

std::vector<int32_t> ints(simdjson::dom::element e) {
    std::vector<int32_t> v;
    for (int64_t x : e.get_array()) v.push_back(static_cast<int32_t>(x));
    return v;
}

// llama.cpp's tokens of each text (BOS added, specials parsed), and its rendering of the chat
// from the file's template against ours, tokenized as a chat prompt.
void check_tokens(const llama_model &model, simdjson::dom::element m) {
    std::string err;
    const auto tok = tokenizer::from_gguf(model.file(), err);
    REQUIRE_MESSAGE(tok, err);
    CHECK(tok->model_kind() == tokenizer::kind::spm);
    for (simdjson::dom::element t : m["tokenize"].get_array()) {
        const std::string text{std::string_view(t["text"])};
        CAPTURE(text);
        CHECK(encode_prompt(*tok, text) == ints(t["ids"]));
    }
    std::vector<chat_message> chat;
    for (simdjson::dom::element c : m["chat"].get_array())
        chat.push_back({std::string(std::string_view(c["role"])), std::string(std::string_view(c["content"]))});
    const auto tmpl = chat_template::detect(std::string(*model.file().get_string("tokenizer.chat_template")), err);
    REQUIRE_MESSAGE(tmpl, err);
    const rendered_chat r = tmpl->render_marked(chat, true);
    const std::string want{std::string_view(m["chat_text"])};
    CHECK(r.text == want);
    const simdjson::dom::array all = m["tokenize"].get_array();
    CHECK(encode_prompt(*tok, r.text, r.controls) == ints(all.at(all.size() - 1)["ids"]));
}

std::vector<float> floats(simdjson::dom::element e) {
    std::vector<float> v;
    for (double x : e.get_array()) v.push_back(static_cast<float>(x));
    return v;
}

std::string models_dir() {
    const char *d = std::getenv("ACTORSERVE_TINY_MODELS");
    REQUIRE_MESSAGE(d != nullptr, "ACTORSERVE_TINY_MODELS is not set: run through ctest, whose fixture "
                                  "engine.tiny_models writes the models (scripts/gen_tiny_models.py)");
    return d;
}

double worst(const std::vector<float> &got, const std::vector<float> &want) {
    REQUIRE(got.size() == want.size());
    double w = 0;
    for (size_t i = 0; i < got.size(); ++i) w = std::max(w, std::fabs(static_cast<double>(got[i]) - want[i]));
    return w;
}

} // namespace

TEST_CASE("arch: every tiny model's logits and greedy tokens match llama.cpp's") {
    REQUIRE_MESSAGE(std::string(simd_level()) != "ref", "reference kernels are not llama.cpp's order");
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    const std::string path = test_paths::fixtures() + "/tiny_models.json";
    REQUIRE_MESSAGE(parser.load(path).get(doc) == simdjson::SUCCESS, "cannot read " << path);
    std::vector<int32_t> prompt;
    for (int64_t t : doc["prompt"].get_array()) prompt.push_back(static_cast<int32_t>(t));
    std::vector<std::string> archs;
    for (simdjson::dom::element m : doc["models"].get_array()) {
        tiny_case c;
        c.name = std::string(std::string_view(m["name"]));
        c.arch = std::string(std::string_view(m["arch"]));
        c.batch_logits = floats(m["batch_logits"]);
        c.step_logits = floats(m["step_logits"]);
        for (int64_t t : m["greedy_ids"].get_array()) c.greedy.push_back(static_cast<int32_t>(t));
        CAPTURE(c.name);
        std::string err;
        auto model = llama_model::load(models_dir() + "/" + c.name + ".gguf", err);
        REQUIRE_MESSAGE(model, err);
        CHECK(model->hparams().arch == c.arch);
        archs.push_back(c.arch);
        context_params cp;
        cp.n_ctx = 256;
        cp.n_threads = 2;
        llama_context ctx(*model, cp);
        REQUIRE_MESSAGE(ctx.eval(prompt, err), err);
        const std::vector<float> batch(ctx.logits().begin(), ctx.logits().end());
        CHECK(worst(batch, c.batch_logits) <= kTolLogit);
        // greedy, one token at a time
        std::vector<int32_t> greedy;
        std::vector<float> cur = batch;
        for (size_t i = 0; i < c.greedy.size(); ++i) {
            const int32_t t = static_cast<int32_t>(std::max_element(cur.begin(), cur.end()) - cur.begin());
            greedy.push_back(t);
            REQUIRE_MESSAGE(ctx.eval(std::vector<int32_t>{t}, err), err);
            cur.assign(ctx.logits().begin(), ctx.logits().end());
        }
        CHECK(greedy == c.greedy);
        CHECK(worst(cur, c.step_logits) <= kTolLogit);
        if (m["tokenize"].error() == simdjson::SUCCESS) check_tokens(*model, m);
    }
    for (const char *a : {"llama", "qwen2", "qwen3", "phi3", "gemma2", "gemma3"})
        CHECK(std::count(archs.begin(), archs.end(), a) >= 1);
}
