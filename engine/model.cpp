#include "engine/model.h"

#include <cmath>

#include "engine/quantize.h"
#include "engine/quants.h"

namespace actorserve {

namespace {

std::string supported_types() { return "F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K"; }

struct format_entry {
    weight_format format;
    const char *name;
    tensor_type type; // unused for native
};
constexpr format_entry kFormats[] = {
    {weight_format::native, "native", tensor_type::f32}, {weight_format::f32, "f32", tensor_type::f32},
    {weight_format::f16, "f16", tensor_type::f16},       {weight_format::q8_0, "q8_0", tensor_type::q8_0},
    {weight_format::q4_0, "q4_0", tensor_type::q4_0},    {weight_format::q4_1, "q4_1", tensor_type::q4_1},
    {weight_format::q5_0, "q5_0", tensor_type::q5_0},    {weight_format::q5_1, "q5_1", tensor_type::q5_1},
    {weight_format::q4_k, "q4_k", tensor_type::q4_k},    {weight_format::q5_k, "q5_k", tensor_type::q5_k},
    {weight_format::q6_k, "q6_k", tensor_type::q6_k},
};

// llama-quantize's type for a matrix whose rows do not fit a K-quant's 256-element blocks
tensor_type fallback(tensor_type t) {
    switch (t) {
    case tensor_type::q4_k: return tensor_type::q5_0;
    case tensor_type::q5_k: return tensor_type::q5_1;
    case tensor_type::q6_k: return tensor_type::q8_0;
    default: return t;
    }
}

const format_entry &entry(weight_format f) {
    for (const format_entry &e : kFormats)
        if (e.format == f) return e;
    return kFormats[0];
}

} // namespace

const char *weight_format_name(weight_format f) { return entry(f).name; }

std::optional<weight_format> parse_weight_format(std::string_view s) {
    for (const format_entry &e : kFormats)
        if (s == e.name) return e.format;
    return std::nullopt;
}

const char *weight_format_names() { return "native, f32, f16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k"; }

// What differs between the architectures the engine runs; the rest of the layer is LLaMA's.
struct arch_traits {
    const char *name;
    bool rope_neox;
    bool qkv_bias; // attn_{q,k,v}.bias, required
    bool qk_norm;  // attn_{q,k}_norm.weight, required
    bool fused;    // attn_qkv (q, k, v rows) and ffn_up (gate rows, then up rows): phi3
    bool gemma;    // embeddings scaled, post-norms, GeGLU, q scaled first
    int swa_pattern;
};
constexpr arch_traits kArchs[] = {
    {"llama", false, false, false, false, false, 1}, {"qwen2", true, true, false, false, false, 1},
    {"qwen3", true, false, true, false, false, 1},   {"phi3", true, false, false, true, false, 1},
    {"gemma2", true, false, false, false, true, 2},  {"gemma3", true, false, true, false, true, 6},
};

namespace {

// rows [row0, row0 + n) of w, in place: a part of a fused matrix
weight_matrix rows_of(const weight_matrix &w, int64_t row0, int64_t n) {
    weight_matrix part = w;
    part.data = w.data + static_cast<size_t>(row0) * w.row_bytes;
    part.n_out = n;
    return part;
}
} // namespace

const char *supported_architectures() { return "llama, qwen2, qwen3, phi3, gemma2, gemma3"; }

std::unique_ptr<llama_model> llama_model::load(const std::string &path, const load_options &opts, std::string &err) {
    std::unique_ptr<llama_model> m(new llama_model());
    m->file_ = gguf_file::open(path, err);
    if (!m->file_) return nullptr;
    if (!m->init(opts, err)) {
        err = path + ": " + err;
        return nullptr;
    }
    return m;
}

bool llama_model::init(const load_options &opts, std::string &err) {
    const gguf_file &f = *file_;
    weights_ = opts.weights;
    auto fail = [&](std::string msg) { err = std::move(msg); return false; };

    auto arch = f.get_string("general.architecture");
    if (!arch) return fail("metadata 'general.architecture' is missing");
    // Llama 2/3, TinyLlama, SmolLM2 and Mistral-style files all declare "llama".
    const arch_traits *traits = nullptr;
    for (const arch_traits &a : kArchs)
        if (*arch == a.name) traits = &a;
    if (!traits) return fail("unsupported architecture '" + *arch + "' (supported: " + supported_architectures() + ")");
    hp_.arch = *arch;
    hp_.rope_neox = traits->rope_neox;
    const std::string p = *arch + ".";

    auto req_int = [&](const std::string &key, int &out) {
        auto v = f.get_uint(key);
        if (!v) return fail("metadata '" + key + "' is missing or not an integer");
        if (*v == 0 || *v > (1u << 24)) return fail("metadata '" + key + "' = " + std::to_string(*v) + " is out of range");
        out = static_cast<int>(*v);
        return true;
    };
    if (!req_int(p + "block_count", hp_.n_layer) || !req_int(p + "embedding_length", hp_.n_embd) ||
        !req_int(p + "feed_forward_length", hp_.n_ff) || !req_int(p + "attention.head_count", hp_.n_head) ||
        !req_int(p + "context_length", hp_.n_ctx_train))
        return false;
    hp_.n_head_kv = hp_.n_head;
    if (f.find(p + "attention.head_count_kv") && !req_int(p + "attention.head_count_kv", hp_.n_head_kv)) return false;
    if (hp_.n_head % hp_.n_head_kv != 0)
        return fail("head_count " + std::to_string(hp_.n_head) + " is not a multiple of head_count_kv " +
                    std::to_string(hp_.n_head_kv));
    hp_.head_dim = hp_.n_embd / hp_.n_head;
    if (f.find(p + "attention.key_length") && !req_int(p + "attention.key_length", hp_.head_dim)) return false;
    if (auto vl = f.get_uint(p + "attention.value_length"); vl && static_cast<int>(*vl) != hp_.head_dim)
        return fail("attention.value_length differs from key_length; not supported");
    hp_.n_rot = hp_.head_dim;
    if (f.find(p + "rope.dimension_count") && !req_int(p + "rope.dimension_count", hp_.n_rot)) return false;
    if (hp_.n_rot > hp_.head_dim || hp_.n_rot % 2 != 0)
        return fail("rope.dimension_count " + std::to_string(hp_.n_rot) + " does not fit head size " +
                    std::to_string(hp_.head_dim));
    if (auto v = f.get_float(p + "rope.freq_base")) hp_.rope_theta = static_cast<float>(*v);
    if (auto v = f.get_float(p + "attention.layer_norm_rms_epsilon")) hp_.rms_eps = static_cast<float>(*v);
    // a window the file declares, on every layer (Mistral 7B v0.1's 4096)
    if (f.find(p + "attention.sliding_window") && !req_int(p + "attention.sliding_window", hp_.n_swa)) return false;
    if (auto st = f.get_string(p + "rope.scaling.type"); st && *st != "none") {
        if (*st != "linear") return fail("unsupported rope scaling type '" + *st + "' (supported: none, linear)");
        auto factor = f.get_float(p + "rope.scaling.factor");
        if (!factor || *factor <= 0) return fail("rope.scaling.factor missing or not positive");
        hp_.rope_freq_scale = static_cast<float>(1.0 / *factor);
    }
    if (!(hp_.rope_theta > 0) || !(hp_.rms_eps > 0)) return fail("rope.freq_base and rms epsilon must be positive");
    if (!arch_hparams(*traits, err)) return false;

    // --- tensors ---
    // note: converted_ holds vectors the file stores as F16, owned_ matrices converted to
    // opts.weights; pointers into their buffers stay valid when the outer vectors grow, since
    // moving a std::vector keeps its buffer.
    const bool convert = opts.weights != weight_format::native;
    const tensor_type wanted = entry(opts.weights).type;
    std::unique_ptr<thread_pool> pool; // only when converting
    if (convert) pool = std::make_unique<thread_pool>(opts.n_threads > 0 ? opts.n_threads : thread_pool::default_threads());
    auto matrix = [&](const std::string &name, int64_t n_in, int64_t n_out, weight_matrix &w, bool optional = false) {
        const gguf_tensor *t = f.tensor(name);
        if (!t) return optional ? true : fail("tensor '" + name + "' is missing");
        if (!is_compute_type(t->type))
            return fail("tensor '" + name + "' has unsupported tensor type " + tensor_type_name(t->type) +
                        " (supported: " + supported_types() + ")");
        if (t->n_dims != 2 || t->ne[0] != n_in || t->ne[1] != n_out)
            return fail("tensor '" + name + "' has shape " + t->shape_string() + ", expected [" +
                        std::to_string(n_in) + ", " + std::to_string(n_out) + "]");
        // (rows are whole blocks of their type: gguf_file::open checked every tensor's ne[0])
        w = weight_matrix{t, t->type, t->data, n_in, n_out, row_bytes(t->type, n_in)};
        const tensor_type target = can_store_as(wanted, n_in) ? wanted : fallback(wanted);
        if (!convert || t->type == target) { // already in the format asked for: used in place
            mapped_bytes_ += t->nbytes;
            return true;
        }
        if (!can_store_as(target, n_in))
            return fail("tensor '" + name + "' has rows of " + std::to_string(n_in) +
                        " elements, not a multiple of 32: it cannot be converted to " + tensor_type_name(target));
        const size_t rb = row_bytes(target, n_in);
        owned_.emplace_back(rb * static_cast<size_t>(n_out));
        convert_rows(t->type, t->data, target, owned_.back().data(), n_in, n_out, *pool);
        f.release(*t); // the source is not read again
        owned_bytes_ += owned_.back().size();
        w = weight_matrix{t, target, owned_.back().data(), n_in, n_out, rb};
        return true;
    };
    auto vec = [&](const std::string &name, int64_t n, const float *&out, bool optional = false) {
        const gguf_tensor *t = f.tensor(name);
        if (!t) return optional ? true : fail("tensor '" + name + "' is missing");
        if (t->n_elements() != n || t->ne[0] != n)
            return fail("tensor '" + name + "' has shape " + t->shape_string() + ", expected [" + std::to_string(n) + "]");
        if (t->type == tensor_type::f32) {
            if (reinterpret_cast<uintptr_t>(t->data) % alignof(float) != 0)
                return fail("tensor '" + name + "' is not 4-byte aligned");
            out = reinterpret_cast<const float *>(t->data);
            mapped_bytes_ += t->nbytes;
            return true;
        }
        if (!is_compute_type(t->type))
            return fail("tensor '" + name + "' has unsupported tensor type " + tensor_type_name(t->type));
        converted_.emplace_back(static_cast<size_t>(n));
        dequantize_row(t->type, t->data, converted_.back().data(), n);
        out = converted_.back().data();
        owned_bytes_ += static_cast<uint64_t>(n) * sizeof(float);
        return true;
    };

    const gguf_tensor *embd = f.tensor("token_embd.weight");
    if (!embd) return fail("tensor 'token_embd.weight' is missing");
    hp_.n_vocab = static_cast<int>(embd->ne[1]);
    if (!matrix("token_embd.weight", hp_.n_embd, hp_.n_vocab, tok_embd_)) return false;
    if (!vec("output_norm.weight", hp_.n_embd, output_norm_)) return false;
    output_ = tok_embd_;
    if (!matrix("output.weight", hp_.n_embd, hp_.n_vocab, output_, /*optional=*/true)) return false;
    if (!vec("rope_freqs.weight", hp_.n_rot / 2, rope_freqs_, /*optional=*/true)) return false;

    layers_.resize(static_cast<size_t>(hp_.n_layer));
    for (int i = 0; i < hp_.n_layer; ++i) {
        llama_layer &l = layers_[static_cast<size_t>(i)];
        const std::string b = "blk." + std::to_string(i) + ".";
        if (!vec(b + "attn_norm.weight", hp_.n_embd, l.attn_norm)) return false;
        if (traits->fused) {
            weight_matrix qkv, up;
            if (!matrix(b + "attn_qkv.weight", hp_.n_embd, hp_.n_q() + 2 * hp_.n_kv(), qkv) ||
                !matrix(b + "ffn_up.weight", hp_.n_embd, 2 * static_cast<int64_t>(hp_.n_ff), up))
                return false;
            l.wq = rows_of(qkv, 0, hp_.n_q());
            l.wk = rows_of(qkv, hp_.n_q(), hp_.n_kv());
            l.wv = rows_of(qkv, hp_.n_q() + hp_.n_kv(), hp_.n_kv());
            l.w_gate = rows_of(up, 0, hp_.n_ff);
            l.w_up = rows_of(up, hp_.n_ff, hp_.n_ff);
        } else if (!matrix(b + "attn_q.weight", hp_.n_embd, hp_.n_q(), l.wq) ||
                   !matrix(b + "attn_k.weight", hp_.n_embd, hp_.n_kv(), l.wk) ||
                   !matrix(b + "attn_v.weight", hp_.n_embd, hp_.n_kv(), l.wv) ||
                   !matrix(b + "ffn_gate.weight", hp_.n_embd, hp_.n_ff, l.w_gate) ||
                   !matrix(b + "ffn_up.weight", hp_.n_embd, hp_.n_ff, l.w_up)) {
            return false;
        }
        if ((traits->qkv_bias && (!vec(b + "attn_q.bias", hp_.n_q(), l.bq) || !vec(b + "attn_k.bias", hp_.n_kv(), l.bk) ||
                                  !vec(b + "attn_v.bias", hp_.n_kv(), l.bv))) ||
            (traits->qk_norm && (!vec(b + "attn_q_norm.weight", hp_.head_dim, l.q_norm) ||
                                 !vec(b + "attn_k_norm.weight", hp_.head_dim, l.k_norm))) ||
            !matrix(b + "attn_output.weight", hp_.n_q(), hp_.n_embd, l.wo) ||
            !vec(b + "ffn_norm.weight", hp_.n_embd, l.ffn_norm) ||
            !matrix(b + "ffn_down.weight", hp_.n_ff, hp_.n_embd, l.w_down))
            return false;
        if (traits->gemma && (!vec(b + "post_attention_norm.weight", hp_.n_embd, l.attn_post_norm) ||
                              !vec(b + "post_ffw_norm.weight", hp_.n_embd, l.ffn_post_norm)))
            return false;
    }
    return true;
}

// What differs by architecture, as llama.cpp's llama_model::load_hparams sets it.
bool llama_model::arch_hparams(const arch_traits &traits, std::string &err) {
    const gguf_file &f = *file_;
    const std::string p = hp_.arch + ".";
    auto fail = [&](std::string msg) { err = std::move(msg); return false; };
    hp_.swa_pattern = traits.swa_pattern;
    hp_.rope_theta_swa = hp_.rope_theta;
    hp_.rope_freq_scale_swa = hp_.rope_freq_scale;
    hp_.attn_scale = 1.0f / std::sqrt(static_cast<float>(hp_.head_dim));
    if (hp_.arch == "phi3") {
        // llama.cpp ignores Phi's window (its converters write one that is not the model's)
        hp_.n_swa = 0;
        hp_.q_prescaled = true;
        if (hp_.n_q() != hp_.n_embd) return fail("phi3: n_head * head size must equal embedding_length");
        if (f.tensor("rope_factors_long.weight") || f.tensor("rope_factors_short.weight"))
            return fail("phi3 with LongRoPE factors (rope_factors_long/short, the 128k-context files) is not supported");
    }
    if (traits.gemma) {
        hp_.q_prescaled = true;
        hp_.embd_scale = std::sqrt(static_cast<float>(hp_.n_embd));
        hp_.post_norms = true;
        hp_.act = llama_hparams::ffn_act::gelu;
        // gemma_pytorch's query scale: 27B models divide by sqrt(n_embd / n_head) instead
        if ((hp_.arch == "gemma2" && hp_.n_layer == 46) || (hp_.arch == "gemma3" && hp_.n_layer == 62))
            hp_.attn_scale = 1.0f / std::sqrt(static_cast<float>(hp_.n_embd / hp_.n_head));
    }
    if (hp_.arch == "gemma2") {
        if (!f.find(p + "attention.sliding_window")) hp_.n_swa = 4096; // llama.cpp's default for gemma2
        hp_.attn_softcap = static_cast<float>(f.get_float(p + "attn_logit_softcapping").value_or(50.0));
        hp_.final_softcap = static_cast<float>(f.get_float(p + "final_logit_softcapping").value_or(30.0));
        if (!(hp_.attn_softcap > 0) || !(hp_.final_softcap > 0)) return fail("gemma2: logit soft-capping must be positive");
    }
    if (hp_.arch == "gemma3") {
        if (hp_.n_swa == 0) return fail("metadata 'gemma3.attention.sliding_window' is missing");
        hp_.rope_theta_swa = 10000.0f;
        hp_.rope_freq_scale_swa = 1.0f;
    }
    return true;
}

uint64_t llama_model::weight_bytes() const {
    auto bytes = [](const weight_matrix &w) { return static_cast<uint64_t>(w.row_bytes) * static_cast<uint64_t>(w.n_out); };
    uint64_t total = bytes(output_);
    for (const llama_layer &l : layers_)
        for (const weight_matrix *w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down})
            total += bytes(*w);
    return total;
}

} // namespace actorserve
