#include "engine/forward.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>

#include "engine/attention_ops.h"
#include "engine/fp16.h"
#include "engine/matmul.h"
#include "engine/ops.h"
#include "engine/quants.h"

namespace actorserve {

size_t llama_context::kv_bytes_per_block(const llama_hparams &hp, int block_size) {
    return static_cast<size_t>(hp.n_layer) * 2 * round_kv_block_size(block_size) * hp.n_kv() * sizeof(uint16_t);
}

llama_context::llama_context(const llama_model &model, const context_params &params)
    : model_(model), slots_(params, model.hparams().n_vocab),
      pool_(params.n_threads > 0 ? params.n_threads : thread_pool::default_threads()) {
    const llama_hparams &hp = model.hparams();
    const context_params &p = slots_.params();
    n_vocab_ = hp.n_vocab;
    const size_t T = static_cast<size_t>(p.n_batch);
    block_size_ = slots_.block_size();
    n_ctx_pad_ = (p.n_ctx + 31) / 32 * 32;
    block_halves_ = kv_bytes_per_block(hp, block_size_) / sizeof(uint16_t);
    kv_.assign(static_cast<size_t>(slots_.n_blocks()) * block_halves_, 0);

    x_.resize(T * hp.n_embd);
    xb_.resize(T * hp.n_embd);
    q_.resize(T * hp.n_q());
    k_.resize(T * hp.n_kv());
    v_.resize(T * hp.n_kv());
    att_.resize(T * hp.n_q());
    gate_.resize(T * hp.n_ff);
    up_.resize(T * hp.n_ff);
    // attention's scratch, per thread: one K/V head's group of query heads at a time
    const size_t group_rows = static_cast<size_t>(pool_.size()) * static_cast<size_t>(hp.n_head / hp.n_head_kv);
    scores_.resize(group_rows * n_ctx_pad_);
    wide_.resize(group_rows * n_ctx_pad_);
    qh_.resize(group_rows * static_cast<size_t>(hp.head_dim));
    ph_.assign(group_rows * n_ctx_pad_, 0);
    logits_.resize(static_cast<size_t>(n_vocab_));
    eval_batch_.reserve(T);
}

uint16_t *llama_context::kv_layer(int32_t block, int il) {
    const llama_hparams &hp = model_.hparams();
    return &kv_[static_cast<size_t>(block) * block_halves_ + static_cast<size_t>(il) * 2 * block_size_ * hp.n_kv()];
}

void llama_context::truncate(int n, int seq) { slots_.truncate(n, seq); }

void llama_context::set_blocks(int seq, std::span<const int32_t> table, int n_past) {
    slots_.set_blocks(seq, table, n_past);
}

void llama_context::clear(int seq) { slots_.clear(seq); }

bool llama_context::decode(std::span<const batch_token> batch, std::string &err) {
    if (!slots_.check_batch(batch, err)) return false;
    forward(batch);
    slots_.commit_batch();
    return true;
}

bool llama_context::eval(std::span<const int32_t> tokens, std::string &err) {
    if (!slots_.check_eval(tokens, err)) return false;
    for (size_t i = 0; i < tokens.size(); i += static_cast<size_t>(slots_.params().n_batch)) {
        slots_.eval_chunk(tokens, i, eval_batch_); // capacity n_batch, reserved once
        if (!decode(eval_batch_, err)) return false; // validated above; cannot fail halfway
    }
    return true;
}

void llama_context::forward(std::span<const batch_token> batch) {
    const llama_hparams &hp = model_.hparams();
    const int E = hp.n_embd, F = hp.n_ff, NQ = hp.n_q(), NKV = hp.n_kv(), HD = hp.head_dim;
    const int n_tok = static_cast<int>(batch.size());
    const weight_matrix &embd = model_.token_embd();

    for (int t = 0; t < n_tok; ++t) {
        float *x = &x_[t * E];
        dequantize_row(embd.type, embd.data + static_cast<size_t>(batch[t].token) * embd.row_bytes, x, E);
        if (hp.embd_scale != 0)
            for (int i = 0; i < E; ++i) x[i] *= hp.embd_scale; // gemma
    }

    for (int il = 0; il < hp.n_layer; ++il) {
        const llama_layer &L = model_.layers()[static_cast<size_t>(il)];

        // --- attention block ---
        for (int t = 0; t < n_tok; ++t) rms_norm(&x_[t * E], L.attn_norm, &xb_[t * E], E, hp.rms_eps);
        const matmul_out qkv[] = {{&L.wq, q_.data()}, {&L.wk, k_.data()}, {&L.wv, v_.data()}};
        matmul(qkv, xb_.data(), n_tok, pool_, xq_);
        const auto rope = hp.rope_neox ? rope_neox : rope_norm;
        const float theta = hp.rope_theta_of(il), freq_scale = hp.rope_scale_of(il);
        for (int t = 0; t < n_tok; ++t) {
            const int pos = batch[t].pos, seq = batch[t].seq;
            float *q = &q_[t * NQ], *k = &k_[t * NKV], *v = &v_[t * NKV];
            if (L.bq) { // qwen2
                add_inplace(q, L.bq, NQ);
                add_inplace(k, L.bk, NKV);
                add_inplace(v, L.bv, NKV);
            }
            if (L.q_norm) { // qwen3: each head normalised before its rotation
                for (int h = 0; h < hp.n_head; ++h) rms_norm(q + h * HD, L.q_norm, q + h * HD, HD, hp.rms_eps);
                for (int h = 0; h < hp.n_head_kv; ++h) rms_norm(k + h * HD, L.k_norm, k + h * HD, HD, hp.rms_eps);
            }
            for (int h = 0; h < hp.n_head; ++h) rope(q + h * HD, HD, hp.n_rot, pos, theta, freq_scale, model_.rope_freqs());
            for (int h = 0; h < hp.n_head_kv; ++h) rope(k + h * HD, HD, hp.n_rot, pos, theta, freq_scale, model_.rope_freqs());
            if (hp.q_prescaled) // phi3, gemma: the scale on q, in float, before attention rounds it to half
                for (int i = 0; i < NQ; ++i) q[i] *= hp.attn_scale;
            // K row at offset pos % B of the position's block, V column there
            const int B = block_size_, off = pos % B;
            uint16_t *kl = kv_layer(slots_.table(seq)[static_cast<size_t>(pos / B)], il);
            uint16_t *kc = kl + static_cast<size_t>(off) * NKV; // (n_kv,)
            uint16_t *vc = kl + static_cast<size_t>(B) * NKV + off; // (n_kv,) stride B
            if (off == 0) // a block's first position: clear the rest of its V (see kv_)
                for (int j = 0; j < NKV; ++j) std::fill_n(vc + static_cast<size_t>(j) * B + 1, B - 1, uint16_t{0});
            for (int j = 0; j < NKV; ++j) {
                kc[j] = fp32_to_fp16(k_[t * NKV + j]);
                vc[static_cast<size_t>(j) * B] = fp32_to_fp16(v_[t * NKV + j]);
            }
        }
        attention(batch, il);
        matmul(L.wo, att_.data(), n_tok, xb_.data(), pool_, xq_);
        if (L.attn_post_norm)
            for (int t = 0; t < n_tok; ++t) rms_norm(&xb_[t * E], L.attn_post_norm, &xb_[t * E], E, hp.rms_eps);
        for (int t = 0; t < n_tok; ++t) add_inplace(&x_[t * E], &xb_[t * E], E);

        // --- feed-forward block ---
        for (int t = 0; t < n_tok; ++t) rms_norm(&x_[t * E], L.ffn_norm, &xb_[t * E], E, hp.rms_eps);
        const matmul_out gate_up[] = {{&L.w_gate, gate_.data()}, {&L.w_up, up_.data()}};
        matmul(gate_up, xb_.data(), n_tok, pool_, xq_);
        const auto act = hp.act == llama_hparams::ffn_act::gelu ? geglu : swiglu;
        for (int t = 0; t < n_tok; ++t) act(&gate_[t * F], &up_[t * F], &gate_[t * F], F);
        matmul(L.w_down, gate_.data(), n_tok, xb_.data(), pool_, xq_);
        if (L.ffn_post_norm)
            for (int t = 0; t < n_tok; ++t) rms_norm(&xb_[t * E], L.ffn_post_norm, &xb_[t * E], E, hp.rms_eps);
        for (int t = 0; t < n_tok; ++t) add_inplace(&x_[t * E], &xb_[t * E], E);
    }

    // --- logits, only for the rows that asked ---
    n_outputs_ = 0;
    for (const batch_token &b : batch) n_outputs_ += b.logits ? 1 : 0;
    if (n_outputs_ == 0) return;
    const size_t n_out = static_cast<size_t>(n_outputs_);
    if (out_x_.size() < n_out * E) out_x_.resize(n_out * E);
    if (logits_.size() < n_out * n_vocab_) logits_.resize(n_out * n_vocab_);
    size_t o = 0;
    for (int t = 0; t < n_tok; ++t)
        if (batch[t].logits) rms_norm(&x_[t * E], model_.output_norm(), &out_x_[o++ * E], E, hp.rms_eps);
    matmul(model_.output(), out_x_.data(), n_outputs_, logits_.data(), pool_, xq_);
    if (hp.final_softcap > 0) softcap(logits_.data(), n_outputs_ * n_vocab_, hp.final_softcap); // gemma2
}

// Causal grouped-query attention for the batch's tokens. The work is split across threads by
// (token, K/V head): the n_head / n_head_kv query heads of a group read each K row and V
// segment once together (attention_ops.h), and every thread has its own scratch.
//
// note: the numerics follow llama.cpp's CPU path (F16 cache, no flash attention) step by
// step, so that our logits are bit-identical to it, not merely close; the model is sensitive
// enough that a one-ulp difference anywhere flips 8-bit activation roundings downstream and
// moves logits by tenths. Concretely:
//  - q and the softmax weights are rounded to half precision before their dot products;
//  - a token's row spans n_kv keys: its sequence's positions up to the end of this batch,
//    rounded up to 32 (llama.cpp pads its cache view so), later ones masked to weight 0;
//  - a sequence with one token in the batch sums its dot products in ggml's vec_dot order
//    (dot_f16_lanes), one with several in its GEMM order (dot_f16_gemm), since llama.cpp
//    routes a multi-token batch through a tiled matrix kernel. So a prompt evaluated at once
//    and the same tokens fed one by one differ in the last bits (in llama.cpp as here).
// Both choices depend only on the token's own sequence, never on the others in the batch:
// that is what makes a sequence's logits the same alone or batched. The cache being paged
// changes no bits either: a score is one key's dot as before, and each output channel sums
// its V row block by block carrying its accumulators across blocks, so in exactly the
// contiguous order (B % 32 == 0).
// The masked keys past the token's own position are skipped from the first multiple of 32
// after it (n_use): their weights are exactly 0 after the softmax, which adds exp(-inf) = 0 to
// its sum, and each output channel's accumulators would only add 0 * V for them (V is finite,
// see kv_). Adding an exact zero leaves a float unchanged (but for -0 + 0, which is +0 and
// equal), so the bits are those of the whole padded row. In a prompt this halves the work.
// Cost: O(n_use * head_dim) per head and token.
void llama_context::attention(std::span<const batch_token> batch, int il) {
    const llama_hparams &hp = model_.hparams();
    const int NQ = hp.n_q(), NKV = hp.n_kv(), HD = hp.head_dim, B = block_size_;
    const int group = hp.n_head / hp.n_head_kv;
    const float scale = hp.q_prescaled ? 1.0f : hp.attn_scale; // else q carries it
    const int n_swa = hp.swa_layer(il) ? hp.n_swa : 0;
    const int n_tok = static_cast<int>(batch.size());
    const uint16_t *layer0 = kv_layer(0, il); // this layer in block 0; block b is b * block_halves_ further
    const size_t rows = static_cast<size_t>(group) * n_ctx_pad_; // per-thread scratch of one group

    pool_.parallel_for(static_cast<int64_t>(n_tok) * hp.n_head_kv, [&](int64_t a0, int64_t a1, int thread) {
        float *sc = &scores_[static_cast<size_t>(thread) * rows];
        float *wide = &wide_[static_cast<size_t>(thread) * rows];
        uint16_t *ph = &ph_[static_cast<size_t>(thread) * rows];
        uint16_t *qh = &qh_[static_cast<size_t>(thread) * group * HD];
        for (int64_t a = a0; a < a1; ++a) {
            const int t = static_cast<int>(a / hp.n_head_kv), kvh = static_cast<int>(a % hp.n_head_kv);
            const int s = batch[t].seq;
            const int32_t *table = slots_.table(s).data();
            const int n_keys = batch[t].pos + 1; // causal: positions 0 .. pos
            const int n_kv = std::min((slots_.last(s) + 1 + 31) / 32 * 32, n_ctx_pad_);
            const int n_use = std::min(n_kv, (n_keys + 31) / 32 * 32);
            assert(static_cast<size_t>(n_kv) <= slots_.table(s).size() * B);
            const bool gemm = slots_.count(s) > 1 || slots_.params().chunk_invariant;
            const uint16_t *k0 = layer0 + kvh * HD;                                                    // K row 0, this head
            const uint16_t *v0 = layer0 + static_cast<size_t>(B) * NKV + static_cast<size_t>(kvh) * HD * B; // V tile, this head
            const int h0 = kvh * group; // the group's query heads h0 .. h0 + group - 1, adjacent in q_
            convert_row_f16(&q_[t * NQ + h0 * HD], qh, group * HD);
            attn_scores(gemm, HD, n_keys, k0, table, block_halves_, B, NKV, qh, group, sc, n_ctx_pad_);
            for (int g = 0; g < group; ++g) {
                float *sg = sc + static_cast<size_t>(g) * n_ctx_pad_;
                if (hp.attn_softcap > 0) softcap(sg, n_keys, hp.attn_softcap); // gemma2
                std::fill(sg + n_keys, sg + n_use, -INFINITY);
                if (n_swa > 0 && n_keys > n_swa) std::fill(sg, sg + (n_keys - n_swa), -INFINITY); // before the window
                softmax(sg, n_use, scale);
                convert_row_f16(sg, ph + static_cast<size_t>(g) * n_ctx_pad_, n_use);
            }
            // out[g * HD + d] = sum_j V[d][j] ph_g[j]
            attn_values(gemm, n_use, HD, v0, table, block_halves_, B, ph, n_ctx_pad_, group, wide, &att_[t * NQ + h0 * HD]);
        }
    });
}

} // namespace actorserve
