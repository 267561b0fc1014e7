// llama_model::load on tiny GGUF files the test writes: hyperparameters from metadata, and
// the errors a person gets for a file the engine cannot run.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <unistd.h>

#include "engine/forward.h"
#include "engine/model.h"
#include "gguf_writer.h"

using namespace actorserve;
using namespace actorserve::testing;

namespace {

constexpr uint64_t E = 64, F = 256, V = 16, HD = 32; // width, ffn width, vocabulary, head size

std::vector<uint8_t> f32_bytes(uint64_t n, float seed) {
    std::vector<uint8_t> out(n * 4);
    for (uint64_t i = 0; i < n; ++i) {
        const float v = 0.05f * std::cos(static_cast<float>(i) * 0.7f + seed);
        std::memcpy(out.data() + i * 4, &v, 4);
    }
    return out;
}

// A one-layer LLaMA with two query heads sharing one K/V head, all weights F32.
// `edit` may change the writer before the tensors are added; `skip` drops one tensor by name;
// `retype` gives one tensor another type id.
std::string write_tiny_model(const std::string &arch = "llama", const std::string &skip = "",
                             const std::string &retype = "", uint32_t retype_to = 0,
                             uint64_t head_count = 2, uint64_t wrong_q_rows = 0, uint32_t sliding_window = 0) {
    gguf_writer w;
    const std::string p = arch + ".";
    w.kv("general.architecture", meta::str(arch));
    w.kv(p + "block_count", meta::u32(1));
    w.kv(p + "context_length", meta::u32(64));
    w.kv(p + "embedding_length", meta::u32(E));
    w.kv(p + "feed_forward_length", meta::u32(F));
    w.kv(p + "attention.head_count", meta::u32(static_cast<uint32_t>(head_count)));
    w.kv(p + "attention.head_count_kv", meta::u32(1));
    w.kv(p + "attention.layer_norm_rms_epsilon", meta::f32(1e-5f));
    if (sliding_window) w.kv(p + "attention.sliding_window", meta::u32(sliding_window));
    auto add = [&](const std::string &name, std::vector<uint64_t> dims, float seed) {
        if (name == skip) return;
        uint64_t n = 1;
        for (uint64_t d : dims) n *= d;
        if (name == retype) {
            const tensor_type_traits *tr = tensor_traits(retype_to);
            w.tensor(name, retype_to, dims, std::vector<uint8_t>(n / tr->block_size * tr->type_size, 0));
        } else {
            w.tensor(name, tensor_type::f32, dims, f32_bytes(n, seed));
        }
    };
    add("token_embd.weight", {E, V}, 0.1f);
    add("output_norm.weight", {E}, 0.2f);
    add("blk.0.attn_norm.weight", {E}, 0.3f);
    add("blk.0.attn_q.weight", {E, wrong_q_rows ? wrong_q_rows : 2 * HD}, 0.4f);
    add("blk.0.attn_k.weight", {E, HD}, 0.5f);
    add("blk.0.attn_v.weight", {E, HD}, 0.6f);
    add("blk.0.attn_output.weight", {2 * HD, E}, 0.7f);
    add("blk.0.ffn_norm.weight", {E}, 0.8f);
    add("blk.0.ffn_gate.weight", {E, F}, 0.9f);
    add("blk.0.ffn_up.weight", {E, F}, 1.0f);
    add("blk.0.ffn_down.weight", {F, E}, 1.1f);

    char path[] = "/tmp/actorserve-test-model-XXXXXX";
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    const gguf_image img = w.build();
    REQUIRE(write(fd, img.bytes.data(), img.bytes.size()) == static_cast<ssize_t>(img.bytes.size()));
    close(fd);
    return path;
}

std::string load_error(const std::string &path) {
    std::string err;
    auto m = llama_model::load(path, err);
    std::remove(path.c_str());
    CHECK(m == nullptr);
    CHECK(err.rfind(path + ": ", 0) == 0); // names the file first
    return err;
}

} // namespace

TEST_CASE("model: a tiny F32 llama loads, takes its shape from metadata, and runs") {
    const std::string path = write_tiny_model();
    std::string err;
    auto m = llama_model::load(path, err);
    std::remove(path.c_str());
    REQUIRE_MESSAGE(m, err);
    const llama_hparams &hp = m->hparams();
    CHECK(hp.n_layer == 1);
    CHECK(hp.n_embd == 64);
    CHECK(hp.n_head == 2);
    CHECK(hp.n_head_kv == 1);
    CHECK(hp.head_dim == 32);
    CHECK(hp.n_rot == 32);
    CHECK(hp.n_vocab == 16);
    CHECK(hp.rope_theta == 10000.0f); // the default when the file does not say
    CHECK(m->tied_output());

    context_params cp;
    cp.n_ctx = 8;
    cp.n_threads = 2;
    llama_context ctx(*m, cp);
    REQUIRE_MESSAGE(ctx.eval(std::vector<int32_t>{3, 1, 4}, err), err);
    for (float l : ctx.logits()) CHECK(std::isfinite(l));
    // one token at a time reaches the same greedy choice
    llama_context step(*m, cp);
    for (int32_t t : {3, 1, 4}) REQUIRE(step.eval(std::span<const int32_t>(&t, 1), err));
    for (size_t i = 0; i < ctx.logits().size(); ++i)
        CHECK(step.logits()[i] == doctest::Approx(ctx.logits()[i]).epsilon(1e-3));
}

TEST_CASE("model: a tensor of a type the engine does not compute is named with its type") {
    const std::string err = load_error(write_tiny_model("llama", "", "blk.0.ffn_down.weight",
                                                        static_cast<uint32_t>(tensor_type::q3_k)));
    CHECK(err.find("tensor 'blk.0.ffn_down.weight' has unsupported tensor type Q3_K") != std::string::npos);
}

TEST_CASE("model: another architecture, a missing tensor, a wrong shape and bad heads are refused") {
    CHECK(load_error(write_tiny_model("gpt2")).find("unsupported architecture 'gpt2' (supported: llama, qwen2, qwen3, phi3, gemma2, gemma3)") != std::string::npos);
    CHECK(load_error(write_tiny_model("llama", "blk.0.attn_k.weight")).find("tensor 'blk.0.attn_k.weight' is missing") !=
          std::string::npos);
    CHECK(load_error(write_tiny_model("llama", "", "", 0, 2, 48))
              .find("tensor 'blk.0.attn_q.weight' has shape [64, 48], expected [64, 64]") != std::string::npos);
    CHECK(load_error(write_tiny_model("llama", "", "", 0, 0)).find("attention.head_count' = 0 is out of range") !=
          std::string::npos);
}

TEST_CASE("model: a missing or corrupt file is reported, not crashed on") {
    std::string err;
    CHECK(llama_model::load("/nonexistent/model.gguf", err) == nullptr);
    CHECK(err.find("/nonexistent/model.gguf: cannot open") == 0);
    const std::string path = write_tiny_model();
    { std::ofstream(path, std::ios::binary | std::ios::trunc) << "GGUF\x03"; }
    const std::string e = load_error(path);
    CHECK(e.find("truncated file") != std::string::npos);
}

TEST_CASE("model: a declared sliding window hides the tokens before it, and only those") {
    // one layer: the last token's logits depend on the window's tokens alone
    auto last_logits = [](const std::string &path, std::vector<int32_t> tokens) {
        std::string err;
        auto m = llama_model::load(path, err);
        REQUIRE_MESSAGE(m, err);
        context_params cp;
        cp.n_ctx = 32;
        cp.n_threads = 1;
        llama_context ctx(*m, cp);
        REQUIRE_MESSAGE(ctx.eval(tokens, err), err);
        return std::vector<float>(ctx.logits().begin(), ctx.logits().end());
    };
    const std::vector<int32_t> a{1, 2, 3, 4, 5, 6}, b{7, 2, 3, 4, 5, 6}, c{1, 2, 3, 7, 5, 6};
    const std::string windowed = write_tiny_model("llama", "", "", 0, 2, 0, /*sliding_window=*/3);
    const std::string full = write_tiny_model("llama");
    CHECK(last_logits(windowed, a) == last_logits(windowed, b)); // token 0 is outside the window
    CHECK(last_logits(windowed, a) != last_logits(windowed, c)); // token 3 is inside it
    CHECK(last_logits(full, a) != last_logits(full, b));
    std::remove(windowed.c_str());
    std::remove(full.c_str());
}

TEST_CASE("model: a K-quant matrix whose rows are not a multiple of 256 is refused at open, naming the block") {
    const std::string path = write_tiny_model("llama", "", "blk.0.attn_q.weight", static_cast<uint32_t>(tensor_type::q4_k));
    const std::string err = load_error(path);
    CAPTURE(err);
    CHECK(err.find("tensor 'blk.0.attn_q.weight' row length 64 is not a multiple of the Q4_K block size 256") != std::string::npos);
}
