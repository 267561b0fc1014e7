// actorserve info: describe a model file.
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>

#include "engine/gguf.h"
#include "engine/matmul.h"
#include "engine/quants.h"
#include "engine/quants_k.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace actorserve::cli {

namespace {
// What the forward pass does beyond LLaMA's layer, as read from the file.
std::string arch_features(const llama_model &model) {
    const llama_hparams &hp = model.hparams();
    const llama_layer &l0 = model.layers().front();
    char buf[160];
    std::string s = hp.rope_neox ? "NeoX RoPE" : "LLaMA RoPE";
    if (model.rope_freqs()) s += " with rope_freqs divisors";
    if (l0.bq) s += ", q/k/v biases";
    if (l0.q_norm) s += ", q/k head norms";
    if (l0.wq.tensor == l0.wk.tensor) s += ", fused qkv and gate/up matrices";
    if (hp.embd_scale != 0) s += ", embeddings scaled";
    if (hp.post_norms) s += ", post-norms";
    s += hp.act == llama_hparams::ffn_act::gelu ? ", GeGLU" : ", SwiGLU";
    if (hp.attn_softcap > 0) {
        std::snprintf(buf, sizeof buf, ", soft caps %g (scores) and %g (logits)", static_cast<double>(hp.attn_softcap),
                      static_cast<double>(hp.final_softcap));
        s += buf;
    }
    if (hp.n_swa > 0) {
        if (hp.swa_pattern == 1) std::snprintf(buf, sizeof buf, ", window %d on every layer", hp.n_swa);
        else std::snprintf(buf, sizeof buf, ", window %d on %d of every %d layers", hp.n_swa, hp.swa_pattern - 1, hp.swa_pattern);
        s += buf;
        if (hp.rope_theta_swa != hp.rope_theta || hp.rope_freq_scale_swa != hp.rope_freq_scale) {
            std::snprintf(buf, sizeof buf, " (their RoPE base %g, scale %g)", static_cast<double>(hp.rope_theta_swa),
                          static_cast<double>(hp.rope_freq_scale_swa));
            s += buf;
        }
    }
    return s;
}
} // namespace

int cmd_info(const model_options &o) {
    std::string err;
    auto m = load_model(o, err);
    if (!m) return fail(err);
    const llama_model &model = *m->model;
    const gguf_file &f = model.file();
    const llama_hparams &hp = model.hparams();
    const tokenizer &tok = *m->tok;

    std::map<std::string, int> type_counts;
    int64_t n_params = 0;
    for (const gguf_tensor &t : f.tensors()) {
        ++type_counts[tensor_type_name(t.type)];
        n_params += t.n_elements();
    }
    std::string types;
    for (const auto &[name, count] : type_counts) types += (types.empty() ? "" : ", ") + name + " " + std::to_string(count);

    // The matrices as held after loading (--weights may have converted them).
    std::map<std::string, int> held_counts;
    auto count_held = [&](const weight_matrix &w) { ++held_counts[tensor_type_name(w.type)]; };
    count_held(model.token_embd());
    if (!model.tied_output()) count_held(model.output());
    for (const llama_layer &l : model.layers())
        for (const weight_matrix *w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) count_held(*w);
    std::string held;
    for (const auto &[name, count] : held_counts) held += (held.empty() ? "" : ", ") + name + " " + std::to_string(count);
    // what the engine does with each type of matrix it holds, at this CPU's kernel level
    std::map<std::string, std::string> plans;
    auto plan = [&](const weight_matrix &w) {
        const tile_kernel_info tk = tile_kernel(w.type);
        std::string p = std::string("x ") + tensor_type_name(activation_type(w.type)) + " activations, ";
        if (kzmm_kernel(w.type) != nullptr)
            p += "512-bit VNNI kernel of " + std::to_string(kKzRows) + " rows x " + std::to_string(kKzTokens) +
                 "-token lanes from " + std::to_string(kMinTileTokens) + " tokens, the one-row kernel below";
        else
            p += tk.fn ? std::to_string(tk.rows) + "x" + std::to_string(tk.cols) + " register tiles from " +
                             std::to_string(kMinTileTokens) + " tokens, the one-row kernel below"
                       : std::string("the one-row kernel");
        plans[tensor_type_name(w.type)] = p;
    };
    plan(model.token_embd());
    plan(model.output());
    for (const llama_layer &l : model.layers())
        for (const weight_matrix *w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) plan(*w);

    std::string tmpl_desc;
    if (const auto t = load_template(model, err)) {
        tmpl_desc = t->name();
        if (t->default_system()) tmpl_desc += " (default system prompt: \"" + printable(*t->default_system()) + "\")";
    } else {
        tmpl_desc = "none recognised";
    }

    std::printf("file:            %s (%.1f MB, GGUF v%u)\n", f.path().c_str(), static_cast<double>(f.file_size()) / 1e6, f.version());
    std::printf("name:            %s\n", f.get_string("general.name").value_or("(none)").c_str());
    std::printf("architecture:    %s (%s)\n", hp.arch.c_str(), arch_features(model).c_str());
    std::printf("parameters:      %.1f M\n", static_cast<double>(n_params) / 1e6);
    std::printf("context (train): %d\n", hp.n_ctx_train);
    std::printf("embedding:       %d\n", hp.n_embd);
    std::printf("layers:          %d\n", hp.n_layer);
    std::printf("heads:           %d (kv heads %d, head dim %d, rope dims %d)\n", hp.n_head, hp.n_head_kv,
                hp.head_dim, hp.n_rot);
    std::printf("feed-forward:    %d\n", hp.n_ff);
    std::printf("rope theta:      %g (freq scale %g)\n", hp.rope_theta, hp.rope_freq_scale);
    std::printf("rms eps:         %g\n", hp.rms_eps);
    std::printf("output:          %s\n", model.tied_output() ? "tied to token embedding" : "separate matrix");
    std::printf("tensors:         %zu (%s)\n", f.tensors().size(), types.c_str());
    std::printf("weights:         %.1f MB read per token\n", static_cast<double>(model.weight_bytes()) / 1e6);
    std::printf("weight format:   %s (matrices %s)\n", weight_format_name(model.weights()), held.c_str());
    for (const auto &[name, p] : plans) std::printf("  %-6s         %s\n", name.c_str(), p.c_str());
    std::printf("weight memory:   %.1f MB (%.1f MB converted, %.1f MB in place in the file)\n",
                static_cast<double>(model.resident_weight_bytes()) / 1e6,
                static_cast<double>(model.owned_weight_bytes()) / 1e6,
                static_cast<double>(model.mapped_weight_bytes()) / 1e6);
    const std::string tok_desc = tok.model_kind() == tokenizer::kind::spm ? std::string("SentencePiece")
                                                                         : "byte-level BPE, pre-tokenizer " + tok.pre_name();
    std::printf("vocab:           %d (bos %d, eos %d, add bos %s, %s)\n", tok.n_vocab(), tok.bos(), tok.eos(),
                tok.add_bos() ? "yes" : "no", tok_desc.c_str());
    std::printf("chat template:   %s\n", tmpl_desc.c_str());
    std::printf("simd:            %s\n", simd_level());
    return 0;
}

} // namespace actorserve::cli
