// A decoder-only model of the LLaMA family as GGUF describes it: hyperparameters from the
// metadata, weights used in place from the mapped file or, when asked, converted at load into
// another format. general.architecture selects the variant:
//   llama  LLaMA 1/2/3 (Llama 3's RoPE through rope_freqs.weight), SmolLM2, TinyLlama, Mistral 7B
//   qwen2  Qwen 2 / 2.5: biases on q, k and v; NeoX RoPE
//   qwen3  Qwen 3 (dense): RMS norms on each head of q and k before RoPE; NeoX RoPE
//   phi3   Phi-3 / 3.5 mini (4k context): q, k and v in one matrix, gate and up in one; NeoX
//          RoPE; q scaled before the scores
//   gemma2 Gemma 2: embeddings times sqrt(n_embd); RMS norms after attention and after the
//          feed-forward too; GeGLU; soft-capped attention scores and logits; a sliding window
//          on every other layer; NeoX RoPE
//   gemma3 Gemma 3 (text): as gemma2 without the soft caps, with q/k head norms, the window on
//          five layers of six, whose RoPE has base 10000 and no scaling
// Others are refused by name (supported_architectures()).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf.h"

namespace actorserve {

struct llama_hparams {
    std::string arch;     // general.architecture
    int n_vocab = 0;
    int n_ctx_train = 0;
    int n_embd = 0;       // model width
    int n_layer = 0;
    int n_head = 0;
    int n_head_kv = 0;    // < n_head: grouped-query attention
    int head_dim = 0;     // per head, for q, k and v
    int n_rot = 0;        // leading dims of a head that RoPE rotates
    int n_ff = 0;         // feed-forward width
    float rope_theta = 10000.0f;
    float rope_freq_scale = 1.0f; // linear RoPE scaling: positions multiplied by this
    float rms_eps = 1e-5f;
    // RoPE pairs: false, dims (2i, 2i+1) (llama); true, dims (i, i + n_rot/2) (NeoX: qwen2, qwen3)
    bool rope_neox = false;
    // attention.sliding_window: a token attends to itself and the n_swa - 1 positions before it
    // (0: the whole context), on the layers swa_layer() names
    int n_swa = 0;
    // of each swa_pattern layers, all but the last have the window (llama.cpp's set_swa_pattern:
    // 1 every layer, gemma2 2, gemma3 6); their RoPE has a base and scale of its own (gemma3's
    // 10000 and 1; the others' are rope_theta and rope_freq_scale)
    int swa_pattern = 1;
    float rope_theta_swa = 10000.0f, rope_freq_scale_swa = 1.0f;
    // the scores' scale; q_prescaled: q is multiplied by it before the dot products (phi3,
    // gemma, as llama.cpp does, in float before q is rounded to half), else the scores are
    float attn_scale = 0;
    bool q_prescaled = false;
    float embd_scale = 0;     // gemma: token embeddings times this (0: none)
    float attn_softcap = 0;   // gemma2: scores s -> c * tanh(s / c) (0: none)
    float final_softcap = 0;  // gemma2: logits likewise
    bool post_norms = false;  // gemma: the attention and feed-forward outputs RMS-normed
    enum class ffn_act : uint8_t { silu, gelu } act = ffn_act::silu; // silu(gate) * up, or GeGLU

    bool swa_layer(int il) const { return n_swa > 0 && (swa_pattern == 1 || il % swa_pattern < swa_pattern - 1); }
    float rope_theta_of(int il) const { return swa_layer(il) ? rope_theta_swa : rope_theta; }
    float rope_scale_of(int il) const { return swa_layer(il) ? rope_freq_scale_swa : rope_freq_scale; }

    int n_q() const { return n_head * head_dim; }     // width of the query projection
    int n_kv() const { return n_head_kv * head_dim; } // width of a K or V row
};

// A weight matrix: n_out rows of n_in elements of `type`, row-major in the file.
struct weight_matrix {
    const gguf_tensor *tensor = nullptr;
    tensor_type type = tensor_type::f32;
    const uint8_t *data = nullptr;
    int64_t n_in = 0;  // ne[0]
    int64_t n_out = 0; // ne[1]
    size_t row_bytes = 0;
};

// What the weight matrices are held as once loaded. native: as the file stores them, in
// place in the mapping (no copy). Any other: each matrix (the token embedding included, which
// is also the tied output) converted into memory of its own, except a matrix the file
// already stores in that format, which stays in place. Norm vectors stay float.
// The K-quants need rows of a multiple of 256: a matrix with shorter blocks of rows takes
// llama.cpp's fallback instead (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0).
enum class weight_format { native, f32, f16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k };
const char *weight_format_name(weight_format f);                 // "native", "q8_0", ...
std::optional<weight_format> parse_weight_format(std::string_view s);
const char *weight_format_names();                               // "native, f32, f16, ..."

struct load_options {
    weight_format weights = weight_format::native;
    int n_threads = 0; // threads that convert weights; 0: physical cores
};

struct llama_layer {
    const float *attn_norm;  // (n_embd,)
    weight_matrix wq;        // (n_q, n_embd)
    weight_matrix wk, wv;    // (n_kv, n_embd)
    const float *bq = nullptr, *bk = nullptr, *bv = nullptr; // (n_q,), (n_kv,), (n_kv,): qwen2
    const float *q_norm = nullptr, *k_norm = nullptr;        // (head_dim,), each head's: qwen3
    weight_matrix wo;        // (n_embd, n_q)
    const float *attn_post_norm = nullptr, *ffn_post_norm = nullptr; // (n_embd,): gemma
    const float *ffn_norm;   // (n_embd,)
    weight_matrix w_gate;    // (n_ff, n_embd)
    weight_matrix w_up;      // (n_ff, n_embd)
    weight_matrix w_down;    // (n_embd, n_ff)
};

struct arch_traits; // what differs by architecture (model.cpp)

// "llama, qwen2, qwen3, phi3, gemma2, gemma3"
const char *supported_architectures();

class llama_model {
public:
    // Opens, validates and maps a GGUF file. On failure: nullptr, err = "<path>: <problem>",
    // also when a matrix cannot be held in the requested format (rows not a multiple of 32).
    static std::unique_ptr<llama_model> load(const std::string &path, const load_options &opts, std::string &err);
    static std::unique_ptr<llama_model> load(const std::string &path, std::string &err) {
        return load(path, load_options{}, err);
    }

    const gguf_file &file() const { return *file_; }
    const llama_hparams &hparams() const { return hp_; }
    const std::vector<llama_layer> &layers() const { return layers_; }
    const weight_matrix &token_embd() const { return tok_embd_; } // (n_vocab, n_embd)
    const float *output_norm() const { return output_norm_; }     // (n_embd,)
    const weight_matrix &output() const { return output_; }       // (n_vocab, n_embd); may be token_embd
    const float *rope_freqs() const { return rope_freqs_; }        // (n_rot/2,) divisors, or nullptr
    bool tied_output() const { return output_.tensor == tok_embd_.tensor; }

    // Bytes of weights the forward pass reads per token (all matrices once, as held).
    uint64_t weight_bytes() const;
    // Bytes of weights held: converted into memory of our own, and used in place in the
    // mapping (each tensor counted once; the tied output is the embedding). Their sum is what
    // the weights occupy when resident; the mapping's other pages are never touched.
    uint64_t owned_weight_bytes() const { return owned_bytes_; }
    uint64_t mapped_weight_bytes() const { return mapped_bytes_; }
    uint64_t resident_weight_bytes() const { return owned_bytes_ + mapped_bytes_; }
    weight_format weights() const { return weights_; }

private:
    llama_model() = default;
    bool init(const load_options &opts, std::string &err);
    bool arch_hparams(const arch_traits &traits, std::string &err);

    std::unique_ptr<gguf_file> file_;
    llama_hparams hp_;
    std::vector<llama_layer> layers_;
    weight_matrix tok_embd_, output_;
    const float *output_norm_ = nullptr;
    const float *rope_freqs_ = nullptr;
    std::vector<std::vector<float>> converted_; // vectors stored as F16 in the file, as float
    std::vector<std::vector<uint8_t>> owned_;   // matrices converted at load (load_options)
    weight_format weights_ = weight_format::native;
    uint64_t owned_bytes_ = 0, mapped_bytes_ = 0;
};

} // namespace actorserve
