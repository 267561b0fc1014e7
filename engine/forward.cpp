#include "engine/forward.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "engine/fp16.h"
#include "engine/matmul.h"
#include "engine/ops.h"
#include "engine/quants.h"

namespace actorserve {

llama_context::llama_context(const llama_model &model, const context_params &params)
    : model_(model), params_(params),
      pool_(params.n_threads > 0 ? params.n_threads : thread_pool::default_threads()) {
    const llama_hparams &hp = model.hparams();
    params_.n_ctx = std::max(1, params_.n_ctx);
    params_.n_batch = std::max(1, params_.n_batch);
    const size_t T = static_cast<size_t>(params_.n_batch);
    n_ctx_pad_ = (params_.n_ctx + 31) / 32 * 32;
    k_cache_.assign(static_cast<size_t>(hp.n_layer) * params_.n_ctx * hp.n_kv(), 0);
    v_cache_.assign(static_cast<size_t>(hp.n_layer) * hp.n_kv() * n_ctx_pad_, 0);
    x_.resize(T * hp.n_embd);
    xb_.resize(T * hp.n_embd);
    q_.resize(T * hp.n_q());
    k_.resize(T * hp.n_kv());
    v_.resize(T * hp.n_kv());
    att_.resize(T * hp.n_q());
    gate_.resize(T * hp.n_ff);
    up_.resize(T * hp.n_ff);
    scores_.resize(static_cast<size_t>(hp.n_head) * n_ctx_pad_);
    qh_.resize(static_cast<size_t>(hp.n_q()));
    ph_.assign(static_cast<size_t>(hp.n_head) * n_ctx_pad_, 0);
    logits_.resize(static_cast<size_t>(hp.n_vocab));
}

void llama_context::truncate(int n) {
    assert(n >= 0 && n <= n_past_);
    n_past_ = n;
}

bool llama_context::eval(std::span<const int32_t> tokens, std::string &err) {
    const int n_vocab = model_.hparams().n_vocab;
    if (tokens.empty()) {
        err = "nothing to evaluate: the token list is empty";
        return false;
    }
    if (tokens.size() > static_cast<size_t>(params_.n_ctx - n_past_)) {
        err = "context overflow: " + std::to_string(n_past_) + " tokens so far + " + std::to_string(tokens.size()) +
              " new > context size " + std::to_string(params_.n_ctx);
        return false;
    }
    for (size_t i = 0; i < tokens.size(); ++i)
        if (tokens[i] < 0 || tokens[i] >= n_vocab) {
            err = "token id " + std::to_string(tokens[i]) + " at index " + std::to_string(i) +
                  " is outside the vocabulary [0, " + std::to_string(n_vocab) + ")";
            return false;
        }
    const int n = static_cast<int>(tokens.size());
    for (int i = 0; i < n; i += params_.n_batch) {
        const int n_tok = std::min(params_.n_batch, n - i);
        forward_chunk(tokens.data() + i, n_tok, n_past_, /*want_logits=*/i + n_tok == n);
        n_past_ += n_tok;
    }
    return true;
}

void llama_context::forward_chunk(const int32_t *tokens, int n_tok, int pos0, bool want_logits) {
    const llama_hparams &hp = model_.hparams();
    const int E = hp.n_embd, F = hp.n_ff, NQ = hp.n_q(), NKV = hp.n_kv(), HD = hp.head_dim;
    const weight_matrix &embd = model_.token_embd();

    for (int t = 0; t < n_tok; ++t)
        dequantize_row(embd.type, embd.data + static_cast<size_t>(tokens[t]) * embd.row_bytes, &x_[t * E], E);

    for (int il = 0; il < hp.n_layer; ++il) {
        const llama_layer &L = model_.layers()[static_cast<size_t>(il)];

        // --- attention block ---
        for (int t = 0; t < n_tok; ++t) rms_norm(&x_[t * E], L.attn_norm, &xb_[t * E], E, hp.rms_eps);
        matmul(L.wq, xb_.data(), n_tok, q_.data(), pool_, xq_);
        matmul(L.wk, xb_.data(), n_tok, k_.data(), pool_, xq_);
        matmul(L.wv, xb_.data(), n_tok, v_.data(), pool_, xq_);
        for (int t = 0; t < n_tok; ++t) {
            const int pos = pos0 + t;
            for (int h = 0; h < hp.n_head; ++h)
                rope_norm(&q_[t * NQ + h * HD], HD, hp.n_rot, pos, hp.rope_theta, hp.rope_freq_scale, model_.rope_freqs());
            for (int h = 0; h < hp.n_head_kv; ++h)
                rope_norm(&k_[t * NKV + h * HD], HD, hp.n_rot, pos, hp.rope_theta, hp.rope_freq_scale, model_.rope_freqs());
            uint16_t *kc = &k_cache_[(static_cast<size_t>(il) * params_.n_ctx + pos) * NKV];
            uint16_t *vc = &v_cache_[static_cast<size_t>(il) * NKV * n_ctx_pad_ + pos];
            for (int j = 0; j < NKV; ++j) {
                kc[j] = fp32_to_fp16(k_[t * NKV + j]);
                vc[static_cast<size_t>(j) * n_ctx_pad_] = fp32_to_fp16(v_[t * NKV + j]);
            }
        }
        attention(n_tok, pos0, il);
        matmul(L.wo, att_.data(), n_tok, xb_.data(), pool_, xq_);
        for (int t = 0; t < n_tok; ++t) add_inplace(&x_[t * E], &xb_[t * E], E);

        // --- feed-forward block ---
        for (int t = 0; t < n_tok; ++t) rms_norm(&x_[t * E], L.ffn_norm, &xb_[t * E], E, hp.rms_eps);
        matmul(L.w_gate, xb_.data(), n_tok, gate_.data(), pool_, xq_);
        matmul(L.w_up, xb_.data(), n_tok, up_.data(), pool_, xq_);
        for (int t = 0; t < n_tok; ++t) swiglu(&gate_[t * F], &up_[t * F], &gate_[t * F], F);
        matmul(L.w_down, gate_.data(), n_tok, xb_.data(), pool_, xq_);
        for (int t = 0; t < n_tok; ++t) add_inplace(&x_[t * E], &xb_[t * E], E);
    }

    if (!want_logits) return;
    const float *last = &x_[(n_tok - 1) * E];
    rms_norm(last, model_.output_norm(), xb_.data(), E, hp.rms_eps);
    matmul(model_.output(), xb_.data(), 1, logits_.data(), pool_, xq_);
}

// Causal grouped-query attention for the chunk's tokens, heads split across threads.
// For query head h the K/V head is h / (n_head / n_head_kv).
//
// note: the numerics follow llama.cpp's CPU path (F16 cache, no flash attention) step by
// step, so that our logits are bit-identical to it, not merely close; the model is sensitive
// enough that a one-ulp difference anywhere flips 8-bit activation roundings downstream and
// moves logits by tenths. Concretely:
//  - q and the softmax weights are rounded to half precision before their dot products;
//  - every row spans n_kv keys: the cached positions rounded up to 32 (llama.cpp pads its
//    cache view so), later ones masked to weight 0;
//  - a chunk of one token sums its dot products in ggml's vec_dot order (dot_f16_lanes), a
//    chunk of several in its GEMM order (dot_f16_gemm), since llama.cpp routes a batch
//    through a tiled matrix kernel. The two orders differ in the last bits, which is why a
//    prompt and the same tokens fed one by one need not give identical logits (in llama.cpp
//    as here).
// Cost: O(n_kv * head_dim) per head and token, with scalar half conversions; no tiling yet.
void llama_context::attention(int n_tok, int pos0, int il) {
    const llama_hparams &hp = model_.hparams();
    const int NQ = hp.n_q(), NKV = hp.n_kv(), HD = hp.head_dim;
    const int group = hp.n_head / hp.n_head_kv;
    const float scale = 1.0f / std::sqrt(static_cast<float>(HD));
    const uint16_t *kc = &k_cache_[static_cast<size_t>(il) * params_.n_ctx * NKV];
    const uint16_t *vc = &v_cache_[static_cast<size_t>(il) * NKV * n_ctx_pad_];
    const int n_kv = std::min((pos0 + n_tok + 31) / 32 * 32, n_ctx_pad_);
    float (*const dot)(int, const uint16_t *, const uint16_t *) = n_tok > 1 ? dot_f16_gemm : dot_f16_lanes;

    pool_.parallel_for(hp.n_head, [&](int64_t h0, int64_t h1) {
        for (int64_t h = h0; h < h1; ++h) {
            const int kvh = static_cast<int>(h) / group;
            float *sc = &scores_[static_cast<size_t>(h) * n_ctx_pad_];
            uint16_t *qh = &qh_[static_cast<size_t>(h) * HD];
            uint16_t *ph = &ph_[static_cast<size_t>(h) * n_ctx_pad_];
            for (int t = 0; t < n_tok; ++t) {
                const int n_keys = pos0 + t + 1; // causal: positions 0 .. pos0+t
                convert_row_f16(&q_[t * NQ + h * HD], qh, HD);
                for (int j = 0; j < n_keys; ++j) sc[j] = dot(HD, kc + static_cast<size_t>(j) * NKV + kvh * HD, qh);
                std::fill(sc + n_keys, sc + n_kv, -INFINITY);
                softmax(sc, n_kv, scale);
                convert_row_f16(sc, ph, n_kv);
                float *out = &att_[t * NQ + h * HD];
                for (int d = 0; d < HD; ++d) out[d] = dot(n_kv, vc + static_cast<size_t>(kvh * HD + d) * n_ctx_pad_, ph);
            }
        }
    });
}

} // namespace actorserve
