// A BERT encoder (post-LayerNorm, absolute positions, GELU), F32 weights from safetensors as
// Hugging Face's BertModel names them: enough for sentence-transformers' all-MiniLM-L6-v2.
//
// Per sequence of T tokens (no padding: each sequence is attended over its own length):
//   x = LN_emb(word[id] + pos[p] + type[0])                                    (T, d)
//   per layer:  q, k, v = x Wq^T + bq, ...;  a = softmax(q k^T / sqrt(d_head)) v, per head
//               x = LN1(x + a Wo^T + bo)
//               x = LN2(x + gelu(x W1^T + b1) W2^T + b2),  gelu(z) = z/2 (1 + erf(z / sqrt 2))
// Several sequences run as one batch: every matrix product covers all their tokens at once
// (each weight row is read once per call), attention stays within each sequence. A token's
// result does not depend on the other sequences in the batch, bit for bit.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/matmul.h"
#include "engine/model.h"
#include "engine/safetensors.h"
#include "engine/thread_pool.h"

namespace actorserve {

struct bert_hparams {
    int n_vocab = 0;
    int n_embd = 0;   // hidden_size (d)
    int n_layer = 0;
    int n_head = 0;
    int n_ff = 0;     // intermediate_size
    int n_pos = 0;    // max_position_embeddings: the longest sequence
    int n_type = 0;   // type_vocab_size
    float ln_eps = 1e-12f;
    int head_dim() const { return n_embd / n_head; }
};

struct bert_layer {
    weight_matrix wq, wk, wv;       // (d, d)
    const float *bq, *bk, *bv;      // (d,)
    weight_matrix wo;               // (d, d)
    const float *bo;                // (d,)
    const float *ln1_w, *ln1_b;     // (d,) attention.output.LayerNorm
    weight_matrix w1;               // (n_ff, d) intermediate.dense
    const float *b1;                // (n_ff,)
    weight_matrix w2;               // (d, n_ff) output.dense
    const float *b2;                // (d,)
    const float *ln2_w, *ln2_b;     // (d,) output.LayerNorm
};

class bert_model {
public:
    // config_path: a Hugging Face config.json (model_type "bert", hidden_act "gelu");
    // weights_path: its model.safetensors, every tensor F32 in the shape the config implies.
    // On failure returns nullptr and sets err to "<file>: <problem>".
    static std::unique_ptr<bert_model> load(const std::string &config_path, const std::string &weights_path,
                                            std::string &err);

    const bert_hparams &hparams() const { return hp_; }
    const std::vector<bert_layer> &layers() const { return layers_; }
    const float *word_embd() const { return word_; }      // (n_vocab, d)
    const float *pos_embd() const { return pos_; }        // (n_pos, d)
    const float *type_embd() const { return type_; }      // (n_type, d)
    const float *ln_emb_w() const { return ln_emb_w_; }   // (d,)
    const float *ln_emb_b() const { return ln_emb_b_; }   // (d,)

private:
    bert_model() = default;
    bool init(std::string &err);
    const float *get(const std::string &name, std::vector<int64_t> shape, std::string &err);
    bool get_matrix(const std::string &name, int64_t n_out, int64_t n_in, weight_matrix &w, std::string &err);

    std::unique_ptr<safetensors_file> file_;
    std::string prefix_; // "" or "bert." before every tensor name
    bert_hparams hp_;
    std::vector<bert_layer> layers_;
    const float *word_ = nullptr, *pos_ = nullptr, *type_ = nullptr, *ln_emb_w_ = nullptr, *ln_emb_b_ = nullptr;
    std::vector<std::vector<float>> copies_; // tensors whose bytes are not 4-byte aligned in the file
};

// Runs the encoder. Owns the scratch buffers, reused from call to call; not thread-safe.
class bert_context {
public:
    bert_context(const bert_model &model, int n_threads);

    // seqs: token ids, each sequence 1..n_pos long, every id < n_vocab (the caller checks).
    // out: (sum of lengths, d) the last hidden states, sequences one after another.
    void encode(std::span<const std::span<const int32_t>> seqs, std::vector<float> &out);

private:
    void attention(std::span<const std::span<const int32_t>> seqs, int64_t n_tok);
    // rows per matrix call, all of one sequence (BLAS: a whole sequence of up to 256 tokens in
    // one call, so that its weights are packed once for all its rows)
    static constexpr int64_t kTileRows = 256;
    static constexpr int64_t kSliceCols = 64; // weight rows per call (BLAS)
    void mm(const weight_matrix &w, const float *x, float *y);
    // The pool's workers poll this long between the loops of one encoding before they block.
    // On a 2-vCPU VM a blocked worker took ~1.8 ms to wake (its vCPU halted), and with the
    // decoder's 200 us a worker slept and woke several times per question: a 3 ms question took
    // 13 ms after an idle gap (docs/cache.md, "Latency"). 2 ms spans every gap within one
    // question; a worker holds its core that long after the last one.
    static constexpr std::chrono::microseconds kEmbedSpin{2000};

    const bert_model &model_;
    thread_pool pool_;
    matmul_scratch mm_;                     // without BLAS
    std::vector<std::pair<int64_t, int64_t>> tiles_; // (first row, rows) of each matrix call
    // (n_tok, d) each, or (n_tok, n_ff) for ff
    std::vector<float> q_, k_, v_, ctx_, tmp_, ff_;
};

} // namespace actorserve
