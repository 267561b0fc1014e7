#include "engine/bert.h"

#include <cassert>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <immintrin.h>
#include <mutex>
#include <sstream>

#if ACTORSERVE_HAVE_BLAS
#include <cblas.h>
extern "C" void openblas_set_num_threads(int); // OpenBLAS's; cblas.h may be another BLAS's
#endif

#include "engine/json_reader.h"
#include "engine/ops.h"
#include "engine/quants.h"

namespace actorserve {

namespace {

constexpr int64_t kMaxDim = 1 << 20; // bound on every size read from config.json

bool read_file(const std::string &path, std::string &out, std::string &err) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        err = path + ": cannot open";
        return false;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) {
        err = path + ": read error";
        return false;
    }
    out = ss.str();
    return true;
}

bool read_config(const std::string &path, bert_hparams &hp, std::string &err) {
    std::string text;
    if (!read_file(path, text, err)) return false;
    json_value root;
    std::string jerr;
    if (!parse_json(text, root, jerr)) {
        err = path + ": not valid JSON: " + jerr;
        return false;
    }
    if (root.type != json_value::kind::object) {
        err = path + ": not a JSON object";
        return false;
    }
    const auto str = [&](const char *key) -> std::string {
        const json_value *v = root.find(key);
        return v && v->type == json_value::kind::string ? v->string : std::string();
    };
    if (const std::string t = str("model_type"); t != "bert") {
        err = path + ": model_type is '" + t + "', only 'bert' is supported";
        return false;
    }
    if (const std::string a = str("hidden_act"); a != "gelu") {
        err = path + ": hidden_act is '" + a + "', only 'gelu' (the erf form) is supported";
        return false;
    }
    if (const std::string p = str("position_embedding_type"); !p.empty() && p != "absolute") {
        err = path + ": position_embedding_type is '" + p + "', only 'absolute' is supported";
        return false;
    }
    struct field { const char *key; int *out; };
    for (const field &f : {field{"vocab_size", &hp.n_vocab}, field{"hidden_size", &hp.n_embd},
                           field{"num_hidden_layers", &hp.n_layer}, field{"num_attention_heads", &hp.n_head},
                           field{"intermediate_size", &hp.n_ff}, field{"max_position_embeddings", &hp.n_pos},
                           field{"type_vocab_size", &hp.n_type}}) {
        const json_value *v = root.find(f.key);
        const auto n = v ? v->as_int() : std::nullopt;
        if (!n || *n <= 0 || *n > kMaxDim) {
            err = path + ": " + f.key + " is missing or not an integer in [1, " + std::to_string(kMaxDim) + "]";
            return false;
        }
        *f.out = static_cast<int>(*n);
    }
    if (hp.n_embd % hp.n_head != 0) {
        err = path + ": hidden_size " + std::to_string(hp.n_embd) + " is not a multiple of num_attention_heads " +
              std::to_string(hp.n_head);
        return false;
    }
    if (const json_value *eps = root.find("layer_norm_eps")) {
        if (eps->type != json_value::kind::number || !(eps->number > 0.0) || eps->number > 1.0) {
            err = path + ": layer_norm_eps must be a number in (0, 1]";
            return false;
        }
        hp.ln_eps = static_cast<float>(eps->number);
    }
    return true;
}

// y = (x - mean) / sqrt(var + eps) * w + b over one row.  x, y, w, b: (n,); y may alias x.
// note: mean and variance in double (two passes), so the row's rounding does not depend on n.
void layer_norm(const float *x, const float *w, const float *b, float *y, int n, float eps) {
    double sum = 0.0;
    for (int i = 0; i < n; ++i) sum += x[i];
    const double mean = sum / n;
    double sq = 0.0;
    for (int i = 0; i < n; ++i) sq += (x[i] - mean) * (x[i] - mean);
    const float inv = static_cast<float>(1.0 / std::sqrt(sq / n + static_cast<double>(eps)));
    const float m = static_cast<float>(mean);
    for (int i = 0; i < n; ++i) y[i] = (x[i] - m) * inv * w[i] + b[i];
}

// x = gelu(x + b) = z/2 (1 + erf(z / sqrt 2)), z = x + b, over one row.  x: (n,), b: (n,).
// erf comes 8 lanes at a time from glibc's libmvec where the CPU has AVX2 (its AVX2 erff: not
// libm's bits, but elementwise, so a text's vector is still the same alone or batched; the
// cosine against sentence-transformers is checked by test_embed), else from libm per element.
// libm's scalar erf was 11% of embedding 200-token chunks (perf).
#if ACTORSERVE_HAVE_MVEC
// libmvec's erff on 8 lanes (AVX2); declared for AVX2 code, as clang wants for an __m256 argument
extern "C" __attribute__((target("avx2"))) __m256 _ZGVdN8v_erff(__m256);
__attribute__((target("avx2,fma"))) int bias_gelu_avx2(float *x, const float *b, int n) {
    const __m256 k = _mm256_set1_ps(0.70710678118654752f), half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 z = _mm256_add_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(b + i));
        const __m256 e = _ZGVdN8v_erff(_mm256_mul_ps(z, k));
        _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_mul_ps(half, z), _mm256_add_ps(one, e)));
    }
    return i;
}
#endif
void bias_gelu(float *x, const float *b, int n) {
    constexpr float kInvSqrt2 = 0.70710678118654752f;
    int i0 = 0;
#if ACTORSERVE_HAVE_MVEC
    if (use_avx2()) i0 = bias_gelu_avx2(x, b, n);
#endif
    for (int i = i0; i < n; ++i) {
        const float z = x[i] + b[i];
        x[i] = 0.5f * z * (1.0f + std::erf(z * kInvSqrt2));
    }
}

// y = LN(y + x + b) over one row: the residual add and the post-LayerNorm.
void residual_norm(float *y, const float *x, const float *b, const float *w, const float *lb, int n, float eps) {
    for (int i = 0; i < n; ++i) y[i] += x[i] + b[i];
    layer_norm(y, w, lb, y, n, eps);
}

} // namespace

const float *bert_model::get(const std::string &name, std::vector<int64_t> shape, std::string &err) {
    const std::string full = prefix_ + name;
    const st_tensor *t = file_->tensor(full);
    if (!t) {
        err = file_->path() + ": tensor '" + full + "' is missing";
        return nullptr;
    }
    if (t->dtype != st_dtype::f32) {
        err = file_->path() + ": tensor '" + full + "' is " + st_dtype_name(t->dtype) + ", only F32 is supported";
        return nullptr;
    }
    if (t->shape != shape) {
        st_tensor want;
        want.shape = std::move(shape);
        err = file_->path() + ": tensor '" + full + "' has shape " + t->shape_string() + ", config.json implies " +
              want.shape_string();
        return nullptr;
    }
    if (reinterpret_cast<uintptr_t>(t->data) % alignof(float) == 0) return reinterpret_cast<const float *>(t->data);
    // The format does not promise alignment; a misaligned tensor is copied once.
    std::vector<float> &c = copies_.emplace_back(t->nbytes / sizeof(float));
    std::memcpy(c.data(), t->data, t->nbytes);
    return c.data();
}

bool bert_model::get_matrix(const std::string &name, int64_t n_out, int64_t n_in, weight_matrix &w, std::string &err) {
    const float *p = get(name, {n_out, n_in}, err);
    if (!p) return false;
    w.tensor = nullptr; // not a GGUF tensor: matmul reads only type, data and sizes
    w.type = tensor_type::f32;
    w.data = reinterpret_cast<const uint8_t *>(p);
    w.n_in = n_in;
    w.n_out = n_out;
    w.row_bytes = static_cast<size_t>(n_in) * sizeof(float);
    return true;
}

std::unique_ptr<bert_model> bert_model::load(const std::string &config_path, const std::string &weights_path,
                                             std::string &err) {
    std::unique_ptr<bert_model> m(new bert_model());
    if (!read_config(config_path, m->hp_, err)) return nullptr;
    m->file_ = safetensors_file::open(weights_path, err);
    if (!m->file_) return nullptr;
    if (!m->init(err)) return nullptr;
    return m;
}

bool bert_model::init(std::string &err) {
    // BertModel saves names from "embeddings."; a BertFor* checkpoint puts "bert." before them.
    if (!file_->tensor("embeddings.word_embeddings.weight") && file_->tensor("bert.embeddings.word_embeddings.weight"))
        prefix_ = "bert.";
    const int64_t d = hp_.n_embd, ff = hp_.n_ff;
    if (!(word_ = get("embeddings.word_embeddings.weight", {hp_.n_vocab, d}, err))) return false;
    if (!(pos_ = get("embeddings.position_embeddings.weight", {hp_.n_pos, d}, err))) return false;
    if (!(type_ = get("embeddings.token_type_embeddings.weight", {hp_.n_type, d}, err))) return false;
    if (!(ln_emb_w_ = get("embeddings.LayerNorm.weight", {d}, err))) return false;
    if (!(ln_emb_b_ = get("embeddings.LayerNorm.bias", {d}, err))) return false;
    layers_.resize(static_cast<size_t>(hp_.n_layer));
    for (int il = 0; il < hp_.n_layer; ++il) {
        bert_layer &L = layers_[static_cast<size_t>(il)];
        const std::string p = "encoder.layer." + std::to_string(il) + ".";
        if (!get_matrix(p + "attention.self.query.weight", d, d, L.wq, err) ||
            !get_matrix(p + "attention.self.key.weight", d, d, L.wk, err) ||
            !get_matrix(p + "attention.self.value.weight", d, d, L.wv, err) ||
            !get_matrix(p + "attention.output.dense.weight", d, d, L.wo, err) ||
            !get_matrix(p + "intermediate.dense.weight", ff, d, L.w1, err) ||
            !get_matrix(p + "output.dense.weight", d, ff, L.w2, err))
            return false;
        struct vec { const char *name; int64_t n; const float **out; };
        for (const vec &v : {vec{"attention.self.query.bias", d, &L.bq}, vec{"attention.self.key.bias", d, &L.bk},
                             vec{"attention.self.value.bias", d, &L.bv}, vec{"attention.output.dense.bias", d, &L.bo},
                             vec{"attention.output.LayerNorm.weight", d, &L.ln1_w},
                             vec{"attention.output.LayerNorm.bias", d, &L.ln1_b},
                             vec{"intermediate.dense.bias", ff, &L.b1}, vec{"output.dense.bias", d, &L.b2},
                             vec{"output.LayerNorm.weight", d, &L.ln2_w}, vec{"output.LayerNorm.bias", d, &L.ln2_b}}) {
            if (!(*v.out = get(p + v.name, {v.n}, err))) return false;
        }
    }
    return true;
}

#if ACTORSERVE_HAVE_BLAS
// y = x W^T by OpenBLAS's sgemm: one call per tile (up to kTileRows rows of one sequence) and
// slice of kSliceCols weight rows, the calls spread over the pool. OpenBLAS's kernels round a
// row differently depending on its place in the call (on Zen 3's AVX2 kernel, rows 6-11 of
// every 12 differ from rows 0-5 in the last bit), so a call never mixes sequences: a sequence's
// tiles, and so every call that makes its outputs, are the same whether it is embedded alone or
// in any batch, and with any thread count (tests/engine/test_embed.cpp checks both). BLAS runs
// on the calling thread only (set once below): the pool is the parallelism, as it is for the
// LLM's kernels. Speed before and after: docs/embeddings.md ("Speed").
void bert_context::mm(const weight_matrix &w, const float *x, float *y) {
    const int64_t n_in = w.n_in, n_out = w.n_out;
    const float *wt = reinterpret_cast<const float *>(w.data);
    const int64_t n_slices = (n_out + kSliceCols - 1) / kSliceCols, n_tiles = static_cast<int64_t>(tiles_.size());
    pool_.parallel_for(n_tiles * n_slices, [&](int64_t j0, int64_t j1) {
        for (int64_t j = j0; j < j1; ++j) {
            const auto [t, rows] = tiles_[static_cast<size_t>(j / n_slices)];
            const int64_t c0 = (j % n_slices) * kSliceCols, nc = std::min(kSliceCols, n_out - c0);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows), static_cast<int>(nc),
                        static_cast<int>(n_in), 1.0f, x + t * n_in, static_cast<int>(n_in), wt + c0 * n_in,
                        static_cast<int>(n_in), 0.0f, y + t * n_out + c0, static_cast<int>(n_out));
        }
    });
}
#else
// Without BLAS (the GPU-only configuration): y = x W^T by engine matmul calls, one per tile.
// matmul dots every weight row with every row of x it is given, so tiles keep x in L2 and read
// the weights once per tile. Bit-identical whatever the tiling.
void bert_context::mm(const weight_matrix &w, const float *x, float *y) {
    for (const auto &[t, rows] : tiles_) matmul(w, x + t * w.n_in, rows, y + t * w.n_out, pool_, mm_);
}
#endif

bert_context::bert_context(const bert_model &model, int n_threads)
    : model_(model), pool_(n_threads < 1 ? 1 : n_threads, kEmbedSpin) {
#if ACTORSERVE_HAVE_BLAS
    // OpenBLAS's own threads would compete with the pool's; every call runs on its caller.
    static std::once_flag single_threaded;
    std::call_once(single_threaded, [] { openblas_set_num_threads(1); });
#endif
}

namespace {
// One head of one sequence's attention, row by row: scores by dot products, a softmax, then the
// weighted sum of V. q, k, v, ctx point at the sequence's first row and the head's columns,
// rows d apart. sc: scratch for len floats.
void attend_rows(const float *q, const float *k, const float *v, float *ctx, int len, int d, int hd, float scale,
                 float *sc) {
    const dot_fn dot = dot_kernel(tensor_type::f32);
    for (int i = 0; i < len; ++i) {
        const float *qi = q + static_cast<size_t>(i) * d;
        for (int j = 0; j < len; ++j) sc[j] = dot(hd, k + static_cast<size_t>(j) * d, qi);
        softmax(sc, len, scale);
        float *out = ctx + static_cast<size_t>(i) * d;
        std::fill(out, out + hd, 0.0f);
        for (int j = 0; j < len; ++j) {
            const float *vj = v + static_cast<size_t>(j) * d;
            const float p = sc[j];
            for (int c = 0; c < hd; ++c) out[c] += p * vj[c];
        }
    }
}

#if ACTORSERVE_HAVE_BLAS
// Sequences at least this long take attention by sgemm; shorter ones row by row, where the two
// calls per head cost more than they save (a 12-token question: 5.9 ms against 4.6 ms).
constexpr int kBlasAttentionMin = 32;

// The same by two sgemm calls: scores S = Q_h K_h^T (len x len over hd), a softmax per row,
// then ctx_h = S V_h (len x hd over len). sc: scratch for len * len floats.
void attend_blas(const float *q, const float *k, const float *v, float *ctx, int len, int d, int hd, float scale,
                 float *sc) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, len, len, hd, 1.0f, q, d, k, d, 0.0f, sc, len);
    for (int i = 0; i < len; ++i) softmax(sc + static_cast<size_t>(i) * len, len, scale);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, len, hd, len, 1.0f, sc, len, v, d, 0.0f, ctx, d);
}
#endif
} // namespace

// One task per (sequence, head); each writes its own columns of ctx_. Which routine a head
// takes, and every call's shape, depend only on its sequence: a sequence's bits are the same
// alone or in any batch and with any thread count.
void bert_context::attention(std::span<const std::span<const int32_t>> seqs, int64_t n_tok) {
    const bert_hparams &hp = model_.hparams();
    const int d = hp.n_embd, hd = hp.head_dim(), n_head = hp.n_head;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    std::vector<int64_t> starts(seqs.size());
    int64_t s0 = 0;
    for (size_t s = 0; s < seqs.size(); ++s) {
        starts[s] = s0;
        s0 += static_cast<int64_t>(seqs[s].size());
    }
    assert(s0 == n_tok);
    (void)n_tok;
    const int64_t n_tasks = static_cast<int64_t>(seqs.size()) * n_head;
    pool_.parallel_for(n_tasks, [&](int64_t t0, int64_t t1) {
        std::vector<float> scores;
        for (int64_t task = t0; task < t1; ++task) {
            const size_t s = static_cast<size_t>(task / n_head);
            const int h = static_cast<int>(task % n_head);
            const int len = static_cast<int>(seqs[s].size());
            const size_t off = static_cast<size_t>(starts[s]) * d + static_cast<size_t>(h) * hd;
#if ACTORSERVE_HAVE_BLAS
            if (len >= kBlasAttentionMin) {
                scores.resize(static_cast<size_t>(len) * len);
                attend_blas(q_.data() + off, k_.data() + off, v_.data() + off, ctx_.data() + off, len, d, hd, scale,
                            scores.data());
                continue;
            }
#endif
            scores.resize(static_cast<size_t>(len));
            attend_rows(q_.data() + off, k_.data() + off, v_.data() + off, ctx_.data() + off, len, d, hd, scale,
                        scores.data());
        }
    });
}

void bert_context::encode(std::span<const std::span<const int32_t>> seqs, std::vector<float> &out) {
    const bert_hparams &hp = model_.hparams();
    const int d = hp.n_embd, ff = hp.n_ff;
    int64_t n_tok = 0;
    for (const auto &s : seqs) {
        assert(!s.empty() && static_cast<int64_t>(s.size()) <= hp.n_pos);
        n_tok += static_cast<int64_t>(s.size());
    }
    const size_t nd = static_cast<size_t>(n_tok) * static_cast<size_t>(d);
    out.resize(nd);
    for (std::vector<float> *b : {&q_, &k_, &v_, &ctx_, &tmp_}) b->resize(nd);
    ff_.resize(static_cast<size_t>(n_tok) * static_cast<size_t>(ff));
    // The matrix products' tiles: up to kTileRows rows, never two sequences in one (see mm).
    tiles_.clear();
    for (int64_t start = 0; const auto &s : seqs) {
        const int64_t len = static_cast<int64_t>(s.size());
        for (int64_t r = 0; r < len; r += kTileRows) tiles_.emplace_back(start + r, std::min(kTileRows, len - r));
        start += len;
    }
    float *x = out.data(); // (n_tok, d) the hidden states, updated in place layer by layer

    // Embeddings: word + position + token type 0, then LayerNorm.
    int64_t t = 0;
    for (const auto &s : seqs) {
        for (size_t p = 0; p < s.size(); ++p, ++t) {
            const int32_t id = s[p];
            assert(id >= 0 && id < hp.n_vocab);
            const float *we = model_.word_embd() + static_cast<size_t>(id) * d;
            const float *pe = model_.pos_embd() + p * static_cast<size_t>(d);
            const float *te = model_.type_embd();
            float *row = x + t * d;
            for (int c = 0; c < d; ++c) row[c] = we[c] + pe[c] + te[c];
            layer_norm(row, model_.ln_emb_w(), model_.ln_emb_b(), row, d, hp.ln_eps);
        }
    }

    for (const bert_layer &L : model_.layers()) {
        mm(L.wq, x, q_.data());
        mm(L.wk, x, k_.data());
        mm(L.wv, x, v_.data());
        for (int64_t i = 0; i < n_tok; ++i) {
            add_inplace(q_.data() + i * d, L.bq, d);
            add_inplace(k_.data() + i * d, L.bk, d);
            add_inplace(v_.data() + i * d, L.bv, d);
        }
        attention(seqs, n_tok);
        mm(L.wo, ctx_.data(), tmp_.data());
        for (int64_t i = 0; i < n_tok; ++i)
            residual_norm(x + i * d, tmp_.data() + i * d, L.bo, L.ln1_w, L.ln1_b, d, hp.ln_eps);

        mm(L.w1, x, ff_.data());
        pool_.parallel_for(n_tok, [&](int64_t i0, int64_t i1) {
            for (int64_t i = i0; i < i1; ++i) bias_gelu(ff_.data() + i * ff, L.b1, ff);
        });
        mm(L.w2, ff_.data(), tmp_.data());
        for (int64_t i = 0; i < n_tok; ++i)
            residual_norm(x + i * d, tmp_.data() + i * d, L.b2, L.ln2_w, L.ln2_b, d, hp.ln_eps);
    }
}

} // namespace actorserve
