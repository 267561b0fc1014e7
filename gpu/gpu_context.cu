// gpu_context: llama_context's forward pass (engine/forward.cpp) on one CUDA device. The host
// keeps the same bookkeeping as the CPU context (positions, block tables, validation); the
// device holds the weights (F16), the paged KV cache (F16, llama_context's layout) and the
// activations of one batch.
#include "gpu/gpu_context.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "engine/quants.h"
#include "engine/thread_pool.h"
#include "gpu/cuda_check.h"
#include "gpu/kernels.cuh"

namespace actorserve {

namespace {

constexpr size_t kWorkspaceBytes = size_t{32} << 20; // cuBLAS workspace (NVIDIA's suggestion for Hopper)
constexpr size_t kStagingBytes = size_t{64} << 20;   // each of the two weight upload buffers
constexpr size_t kDefaultSharedBytes = 48 * 1024;    // a block's shared memory without opting in

// Carves one device allocation into aligned pieces. Run once without a base to learn the size,
// then again over the allocation to get the pointers: the same code gives both, so they agree.
struct arena {
    char *base = nullptr;
    size_t size = 0;
    template <typename T> T *take(size_t count) {
        const size_t off = size;
        size += (count * sizeof(T) + 255) / 256 * 256;
        return base ? reinterpret_cast<T *>(base + off) : nullptr;
    }
};

size_t matrix_halves(const weight_matrix &w) { return static_cast<size_t>(w.n_in) * static_cast<size_t>(w.n_out); }

} // namespace

struct gpu_context::impl {
    impl(const llama_model &m, const context_params &p, int dev)
        : model(m), slots(p, m.hparams().n_vocab), params(slots.params()), device(dev) {}
    ~impl();
    impl(const impl &) = delete;
    impl &operator=(const impl &) = delete;

    bool init(std::string &err);
    void plan_weights(arena &a);
    void plan_scratch(arena &a);
    bool upload_weights(std::string &err);
    // Uploads the metadata in meta_host[slot], runs the batch, brings the logits back.
    bool run(int n_tok, int n_out, size_t meta_count, std::string &err);
    bool forward(int n_tok, int n_out, int slot, std::string &err);
    // A decode step through its CUDA graph, captured on first use (see graphs).
    bool replay(int n_tok, int slot, std::string &err);
    bool gemm(const __half *w, int n_out, int n_in, const __half *x, int n_rows, float *y, float beta, const char *what,
              int layer, std::string &err);

    const llama_model &model;
    kv_slots slots;        // positions, block tables and batch checks: exactly llama_context's
    context_params params; // as normalized by slots
    const int device;

    // --- host side, from slots ---
    int n_vocab = 0;
    int block_size = 0;  // B
    int n_blocks = 0;    // blocks in the pool (slot mode: n_seq * table_len)
    int table_len = 0;   // ceil(n_ctx / B): the table entries a position < n_ctx can reach
    size_t block_halves = 0; // one block: n_layer * 2 * B * n_kv
    std::vector<int> seq_row;                  // (n_seq,) its table's row in the batch's metadata, or -1
    std::vector<batch_token> eval_batch;       // (n_batch,) eval()'s chunk

    // --- device ---
    cudaStream_t compute = nullptr; // every kernel and GEMM, and the logits' copy back
    cudaStream_t copy = nullptr;    // batch metadata up (and the weights, at create)
    cublasHandle_t blas = nullptr;  // bound to compute
    void *weights = nullptr;
    size_t weight_size = 0;
    __half *kv = nullptr; // (n_blocks, n_layer, 2 * B * n_kv), zeroed at create as the CPU pool is
    size_t kv_size = 0;
    void *scratch = nullptr;
    size_t scratch_size = 0;

    // Views into `weights`.
    struct layer_weights {
        float *attn_norm = nullptr, *ffn_norm = nullptr;                 // (n_embd,)
        __half *wq = nullptr, *wk = nullptr, *wv = nullptr, *wo = nullptr; // as llama_layer, row-major
        __half *w_gate = nullptr, *w_up = nullptr, *w_down = nullptr;
    };
    std::vector<layer_weights> layers;
    __half *tok_embd = nullptr; // (n_vocab, n_embd)
    __half *output = nullptr;   // (n_vocab, n_embd); tok_embd itself when the model ties them
    float *output_norm = nullptr;
    float *rope_freqs = nullptr; // (n_rot / 2,) or null

    // Views into `scratch`, T = n_batch rows each.
    float *x = nullptr;                      // (T, n_embd) residual stream
    __half *xh = nullptr;                    // (T, n_embd) normed rows, the input of a projection
    float *q = nullptr, *k = nullptr, *v = nullptr; // (T, n_q), (T, n_kv), (T, n_kv)
    __half *att_h = nullptr;                 // (T, n_q) attention output
    float *gate = nullptr, *up = nullptr;    // (T, n_ff)
    __half *ffn_h = nullptr;                 // (T, n_ff) silu(gate) * up
    float *logits_dev = nullptr;             // (T, n_vocab)
    void *workspace = nullptr;               // cuBLAS

    // Batch metadata, int32 sections of T entries (tokens, positions, last position of the
    // token's sequence in the batch, the token's table row, the rows that want logits) and then
    // the block tables of the batch's sequences, table_len entries each. Two buffers in turn: the
    // next batch fills and uploads one while the compute stream may still read the other.
    static constexpr int kSecTokens = 0, kSecPos = 1, kSecLast = 2, kSecRow = 3, kSecOut = 4, kSections = 5;
    size_t meta_count = 0;                  // int32 entries of one buffer
    int32_t *meta_dev[2] = {};
    int32_t *meta_host[2] = {};             // pinned
    cudaEvent_t uploaded[2] = {};           // copy stream: meta_host[i] is free again
    cudaEvent_t consumed[2] = {};           // compute stream: meta_dev[i] is free again
    int ring = 0;                           // the buffer the next batch uses
    float *logits_host = nullptr;           // pinned (T, n_vocab)

    // CUDA graphs of decode steps: a step where every token wants logits (one token per
    // sequence) and there are at most kMaxGraphTokens of them runs as one graph launch instead
    // of about a dozen launches per layer. A graph is captured per (tokens, metadata buffer) on
    // first use: everything else a step varies (tokens, positions, block tables) is read from
    // device memory when it runs, so replaying it computes exactly what launching would.
    static constexpr int kMaxGraphTokens = 64;
    bool graphs = true;
    bool graphs_failed = false; // a capture failed once: launch directly from then on
    std::map<std::pair<int, int>, cudaGraphExec_t> graph_execs;

    size_t section(int s) const { return static_cast<size_t>(s) * static_cast<size_t>(params.n_batch); }
    size_t tables_at() const { return section(kSections); }
};

gpu_context::impl::~impl() {
    (void)cudaSetDevice(device);
    if (compute) (void)cudaStreamSynchronize(compute);
    if (copy) (void)cudaStreamSynchronize(copy);
    for (auto &[key, exec] : graph_execs) (void)cudaGraphExecDestroy(exec);
    if (blas) (void)cublasDestroy(blas);
    if (weights) (void)cudaFree(weights);
    if (kv) (void)cudaFree(kv);
    if (scratch) (void)cudaFree(scratch);
    for (int i = 0; i < 2; ++i) {
        if (meta_host[i]) (void)cudaFreeHost(meta_host[i]);
        if (uploaded[i]) (void)cudaEventDestroy(uploaded[i]);
        if (consumed[i]) (void)cudaEventDestroy(consumed[i]);
    }
    if (logits_host) (void)cudaFreeHost(logits_host);
    if (compute) (void)cudaStreamDestroy(compute);
    if (copy) (void)cudaStreamDestroy(copy);
    (void)cudaGetLastError();
}

void gpu_context::impl::plan_weights(arena &a) {
    const llama_hparams &hp = model.hparams();
    const size_t E = static_cast<size_t>(hp.n_embd);
    tok_embd = a.take<__half>(matrix_halves(model.token_embd()));
    layers.resize(static_cast<size_t>(hp.n_layer));
    for (size_t il = 0; il < layers.size(); ++il) {
        const llama_layer &L = model.layers()[il];
        layer_weights &d = layers[il];
        d.attn_norm = a.take<float>(E);
        d.ffn_norm = a.take<float>(E);
        d.wq = a.take<__half>(matrix_halves(L.wq));
        d.wk = a.take<__half>(matrix_halves(L.wk));
        d.wv = a.take<__half>(matrix_halves(L.wv));
        d.wo = a.take<__half>(matrix_halves(L.wo));
        d.w_gate = a.take<__half>(matrix_halves(L.w_gate));
        d.w_up = a.take<__half>(matrix_halves(L.w_up));
        d.w_down = a.take<__half>(matrix_halves(L.w_down));
    }
    output_norm = a.take<float>(E);
    output = model.tied_output() ? tok_embd : a.take<__half>(matrix_halves(model.output()));
    rope_freqs = model.rope_freqs() ? a.take<float>(static_cast<size_t>(hp.n_rot / 2)) : nullptr;
}

void gpu_context::impl::plan_scratch(arena &a) {
    const llama_hparams &hp = model.hparams();
    const size_t T = static_cast<size_t>(params.n_batch);
    x = a.take<float>(T * hp.n_embd);
    xh = a.take<__half>(T * hp.n_embd);
    q = a.take<float>(T * hp.n_q());
    k = a.take<float>(T * hp.n_kv());
    v = a.take<float>(T * hp.n_kv());
    att_h = a.take<__half>(T * hp.n_q());
    gate = a.take<float>(T * hp.n_ff);
    up = a.take<float>(T * hp.n_ff);
    ffn_h = a.take<__half>(T * hp.n_ff);
    logits_dev = a.take<float>(T * static_cast<size_t>(n_vocab));
    workspace = a.take<char>(kWorkspaceBytes);
    for (int i = 0; i < 2; ++i) meta_dev[i] = a.take<int32_t>(meta_count);
}

bool gpu_context::impl::init(std::string &err) {
    const llama_hparams &hp = model.hparams();
    const std::string gpu = "GPU " + std::to_string(device) + ": ";
    // the CUDA forward pass is LLaMA's: no biases, head norms or NeoX rotation (yet)
    if (hp.arch != "llama") {
        err = gpu + "architecture '" + hp.arch + "' runs on the CPU only (the CUDA backend runs llama)";
        return false;
    }

    // --- host side: the slots' normalized params and layout ---
    n_vocab = hp.n_vocab;
    block_size = slots.block_size();
    n_blocks = slots.n_blocks();
    table_len = slots.table_len();
    const size_t S = static_cast<size_t>(params.n_seq), T = static_cast<size_t>(params.n_batch);
    seq_row.assign(S, -1);
    block_halves = llama_context::kv_bytes_per_block(hp, block_size) / sizeof(uint16_t);
    eval_batch.reserve(T);
    // a batch holds at most min(n_seq, n_batch) distinct sequences, one table each
    meta_count = tables_at() + std::min(S, T) * static_cast<size_t>(table_len);

    const size_t attn_smem = gpu::attention_shared_bytes(hp.head_dim, params.n_ctx);
    if (attn_smem > kDefaultSharedBytes) {
        err = gpu + "head size " + std::to_string(hp.head_dim) + " needs " + std::to_string(attn_smem) +
              " bytes of shared memory per attention block; at most " + std::to_string(kDefaultSharedBytes) +
              " are supported";
        return false;
    }

    // --- streams and cuBLAS first: what they take is then no longer counted as free ---
    if (!cuda_ok(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking), device, "cudaStreamCreateWithFlags", err) ||
        !cuda_ok(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking), device, "cudaStreamCreateWithFlags", err))
        return false;
    for (int i = 0; i < 2; ++i)
        if (!cuda_ok(cudaEventCreateWithFlags(&uploaded[i], cudaEventDisableTiming), device, "cudaEventCreateWithFlags",
                     err) ||
            !cuda_ok(cudaEventCreateWithFlags(&consumed[i], cudaEventDisableTiming), device, "cudaEventCreateWithFlags",
                     err))
            return false;
    if (!cublas_ok(cublasCreate(&blas), device, "cublasCreate", err) ||
        !cublas_ok(cublasSetStream(blas, compute), device, "cublasSetStream", err))
        return false;

    // --- device memory: sizes first, checked against what is free, then allocated ---
    arena wa, sa;
    plan_weights(wa);
    plan_scratch(sa);
    weight_size = wa.size;
    kv_size = static_cast<size_t>(n_blocks) * block_halves * sizeof(__half);
    scratch_size = sa.size;
    const size_t needed = weight_size + kv_size + scratch_size;
    size_t free_bytes = 0, total_bytes = 0;
    if (!cuda_ok(cudaMemGetInfo(&free_bytes, &total_bytes), device, "cudaMemGetInfo", err)) return false;
    if (needed > free_bytes) {
        err = gpu + "out of device memory: needs " + std::to_string(needed) + " bytes (weights " +
              std::to_string(weight_size) + ", KV cache " + std::to_string(kv_size) + ", scratch " +
              std::to_string(scratch_size) + ") but " + std::to_string(free_bytes) + " of " +
              std::to_string(total_bytes) + " are free";
        return false;
    }
    if (!cuda_ok(cudaMalloc(&weights, weight_size), device, "cudaMalloc (weights)", err) ||
        !cuda_ok(cudaMalloc(reinterpret_cast<void **>(&kv), kv_size), device, "cudaMalloc (KV cache)", err) ||
        !cuda_ok(cudaMemset(kv, 0, kv_size), device, "cudaMemset (KV cache)", err) ||
        !cuda_ok(cudaMalloc(&scratch, scratch_size), device, "cudaMalloc (scratch)", err))
        return false;
    arena wp{static_cast<char *>(weights)}, sp{static_cast<char *>(scratch)};
    plan_weights(wp);
    plan_scratch(sp);
    if (!cublas_ok(cublasSetWorkspace(blas, workspace, kWorkspaceBytes), device, "cublasSetWorkspace", err))
        return false;

    // --- pinned host buffers ---
    for (int i = 0; i < 2; ++i)
        if (!cuda_ok(cudaHostAlloc(reinterpret_cast<void **>(&meta_host[i]), meta_count * sizeof(int32_t),
                                   cudaHostAllocPortable),
                     device, "cudaHostAlloc (batch metadata)", err))
            return false;
    for (int i = 0; i < 2; ++i) std::memset(meta_host[i], 0, meta_count * sizeof(int32_t));
    if (!cuda_ok(cudaHostAlloc(reinterpret_cast<void **>(&logits_host), T * n_vocab * sizeof(float),
                               cudaHostAllocPortable),
                 device, "cudaHostAlloc (logits)", err))
        return false;
    std::memset(logits_host, 0, static_cast<size_t>(n_vocab) * sizeof(float)); // logits(0) before any decode, as on the CPU

    if (!upload_weights(err)) return false;
    // The KV memset and the norm vectors' copies ran on the legacy stream, which the
    // non-blocking compute stream does not wait for.
    return cuda_ok(cudaDeviceSynchronize(), device, "cudaDeviceSynchronize", err);
}

// Every matrix as F16: rows dequantized on the host by the engine's own kernels and rounded to
// half (convert_row_f16, bit-identical to fp32_to_fp16), a chunk at a time into one of two
// pinned staging buffers; converting a chunk overlaps the copy of the previous one.
bool gpu_context::impl::upload_weights(std::string &err) {
    const llama_hparams &hp = model.hparams();
    struct upload {
        const weight_matrix *w;
        __half *dst;
    };
    std::vector<upload> uploads{{&model.token_embd(), tok_embd}};
    for (size_t il = 0; il < layers.size(); ++il) {
        const llama_layer &L = model.layers()[il];
        const layer_weights &d = layers[il];
        for (upload u : {upload{&L.wq, d.wq}, upload{&L.wk, d.wk}, upload{&L.wv, d.wv}, upload{&L.wo, d.wo},
                         upload{&L.w_gate, d.w_gate}, upload{&L.w_up, d.w_up}, upload{&L.w_down, d.w_down}})
            uploads.push_back(u);
    }
    if (!model.tied_output()) uploads.push_back({&model.output(), output});

    size_t widest = 0;
    for (const upload &u : uploads) widest = std::max(widest, static_cast<size_t>(u.w->n_in));
    const size_t staging_halves = std::max(kStagingBytes / sizeof(uint16_t), widest);

    // Staging buffers and their events, released on every path; the copy stream is drained
    // first, since a copy out of a buffer may still be running when an error returns early.
    struct staging_set {
        cudaStream_t stream;
        uint16_t *buf[2] = {};
        cudaEvent_t done[2] = {}; // the copy out of buf[i] has finished
        ~staging_set() {
            (void)cudaStreamSynchronize(stream);
            for (int i = 0; i < 2; ++i) {
                if (buf[i]) (void)cudaFreeHost(buf[i]);
                if (done[i]) (void)cudaEventDestroy(done[i]);
            }
        }
    } st{copy};
    for (int i = 0; i < 2; ++i)
        if (!cuda_ok(cudaHostAlloc(reinterpret_cast<void **>(&st.buf[i]), staging_halves * sizeof(uint16_t),
                                   cudaHostAllocDefault),
                     device, "cudaHostAlloc (weight staging)", err) ||
            !cuda_ok(cudaEventCreateWithFlags(&st.done[i], cudaEventDisableTiming), device, "cudaEventCreateWithFlags",
                     err))
            return false;

    thread_pool pool(params.n_threads > 0 ? params.n_threads : thread_pool::default_threads());
    int next = 0;
    for (const upload &u : uploads) {
        const weight_matrix &w = *u.w;
        const size_t n_in = static_cast<size_t>(w.n_in), n_out = static_cast<size_t>(w.n_out);
        const size_t chunk_rows = staging_halves / n_in; // >= 1: staging holds the widest row
        for (size_t r0 = 0; r0 < n_out; r0 += chunk_rows) {
            const size_t rows = std::min(chunk_rows, n_out - r0);
            uint16_t *buf = st.buf[next];
            if (!cuda_ok(cudaEventSynchronize(st.done[next]), device, "cudaEventSynchronize (weight upload)", err))
                return false;
            pool.parallel_for(static_cast<int64_t>(rows), [&](int64_t a, int64_t b) {
                std::vector<float> row;
                for (int64_t r = a; r < b; ++r) {
                    const uint8_t *src = w.data + (r0 + static_cast<size_t>(r)) * w.row_bytes;
                    uint16_t *dst = buf + static_cast<size_t>(r) * n_in;
                    if (w.type == tensor_type::f16) {
                        std::memcpy(dst, src, n_in * sizeof(uint16_t));
                    } else if (w.type == tensor_type::f32) {
                        convert_row_f16(reinterpret_cast<const float *>(src), dst, w.n_in);
                    } else {
                        row.resize(n_in);
                        dequantize_row(w.type, src, row.data(), w.n_in);
                        convert_row_f16(row.data(), dst, w.n_in);
                    }
                }
            });
            if (!cuda_ok(cudaMemcpyAsync(u.dst + r0 * n_in, buf, rows * n_in * sizeof(uint16_t), cudaMemcpyHostToDevice,
                                         copy),
                         device, "cudaMemcpyAsync (weights)", err) ||
                !cuda_ok(cudaEventRecord(st.done[next], copy), device, "cudaEventRecord", err))
                return false;
            next ^= 1;
        }
    }

    // Norm vectors as float, straight from the model (pageable memory: synchronous copies).
    const size_t vec = static_cast<size_t>(hp.n_embd) * sizeof(float);
    for (size_t il = 0; il < layers.size(); ++il) {
        const llama_layer &L = model.layers()[il];
        if (!cuda_ok(cudaMemcpy(layers[il].attn_norm, L.attn_norm, vec, cudaMemcpyHostToDevice), device,
                     "cudaMemcpy (attn_norm)", err) ||
            !cuda_ok(cudaMemcpy(layers[il].ffn_norm, L.ffn_norm, vec, cudaMemcpyHostToDevice), device,
                     "cudaMemcpy (ffn_norm)", err))
            return false;
    }
    if (!cuda_ok(cudaMemcpy(output_norm, model.output_norm(), vec, cudaMemcpyHostToDevice), device,
                 "cudaMemcpy (output_norm)", err))
        return false;
    if (rope_freqs && !cuda_ok(cudaMemcpy(rope_freqs, model.rope_freqs(), static_cast<size_t>(hp.n_rot / 2) * sizeof(float),
                                          cudaMemcpyHostToDevice),
                               device, "cudaMemcpy (rope_freqs)", err))
        return false;
    return cuda_ok(cudaStreamSynchronize(copy), device, "cudaStreamSynchronize (weight upload)", err);
}

// y (n_rows, n_out) = beta * y + x (n_rows, n_in) W^T, W row-major (n_out, n_in). In cuBLAS's
// column-major terms W is (n_in, n_out), so y^T = op_T(W) x^T with every leading dimension the
// row length.
bool gpu_context::impl::gemm(const __half *w, int n_out, int n_in, const __half *xin, int n_rows, float *y,
                             float beta, const char *what, int layer, std::string &err) {
    const float alpha = 1.0f;
    const cublasStatus_t s =
        cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, n_out, n_rows, n_in, &alpha, w, CUDA_R_16F, n_in, xin, CUDA_R_16F,
                     n_in, &beta, y, CUDA_R_32F, n_out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (s == CUBLAS_STATUS_SUCCESS) return true;
    std::string call = std::string("cublasGemmEx (") + what;
    if (layer >= 0) call += ", layer " + std::to_string(layer);
    err = cublas_error_text(device, call + ")", s);
    return false;
}

// The layer loop of llama_context::forward on the compute stream, reading the batch from
// meta_dev[slot]. The two residual adds are the output and down projections' GEMMs with
// beta = 1, accumulating straight into x.
bool gpu_context::impl::forward(int n_tok, int n_out, int slot, std::string &err) {
    const llama_hparams &hp = model.hparams();
    const int E = hp.n_embd, F = hp.n_ff, NQ = hp.n_q(), NKV = hp.n_kv();
    const int32_t *meta = meta_dev[slot];
    const gpu::batch_view batch{meta + section(kSecPos), meta + section(kSecLast), meta + section(kSecRow), n_tok};
    gpu::rope_params rope;
    rope.n_head = hp.n_head;
    rope.n_head_kv = hp.n_head_kv;
    rope.head_dim = hp.head_dim;
    rope.n_rot = hp.n_rot;
    rope.theta_scale = std::pow(hp.rope_theta, -2.0f / static_cast<float>(hp.n_rot)); // as rope_norm
    rope.freq_scale = hp.rope_freq_scale;
    rope.freq_factors = rope_freqs;
    gpu::attention_params att;
    att.n_head = hp.n_head;
    att.n_head_kv = hp.n_head_kv;
    att.head_dim = hp.head_dim;
    att.n_ctx = params.n_ctx;
    att.scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim));
    auto launched = [&](cudaError_t e, const char *kernel, int layer) {
        if (e == cudaSuccess) return true;
        return cuda_ok(e, device, std::string(kernel) + " kernel" + (layer >= 0 ? ", layer " + std::to_string(layer) : ""),
                       err);
    };

    if (!launched(gpu::embed_rows(tok_embd, meta + section(kSecTokens), n_tok, E, x, compute), "embedding", -1))
        return false;
    for (int il = 0; il < hp.n_layer; ++il) {
        const layer_weights &L = layers[static_cast<size_t>(il)];
        gpu::kv_view kvl;
        kvl.layer0 = kv + static_cast<size_t>(il) * 2 * static_cast<size_t>(block_size) * NKV;
        kvl.block_halves = block_halves;
        kvl.block_size = block_size;
        kvl.n_kv = NKV;
        kvl.tables = meta + tables_at();
        kvl.table_len = table_len;

        // --- attention block ---
        if (!launched(gpu::rms_norm_rows(x, nullptr, n_tok, E, L.attn_norm, hp.rms_eps, nullptr, xh, compute),
                      "attn_norm", il) ||
            !gemm(L.wq, NQ, E, xh, n_tok, q, 0.0f, "wq", il, err) ||
            !gemm(L.wk, NKV, E, xh, n_tok, k, 0.0f, "wk", il, err) ||
            !gemm(L.wv, NKV, E, xh, n_tok, v, 0.0f, "wv", il, err) ||
            !launched(gpu::rope_qk(q, k, batch.pos, n_tok, rope, compute), "rope", il) ||
            !launched(gpu::kv_store(k, v, kvl, batch, compute), "kv_store", il) ||
            !launched(gpu::attention(q, kvl, batch, att, att_h, compute), "attention", il) ||
            !gemm(L.wo, E, NQ, att_h, n_tok, x, 1.0f, "wo", il, err))
            return false;

        // --- feed-forward block ---
        if (!launched(gpu::rms_norm_rows(x, nullptr, n_tok, E, L.ffn_norm, hp.rms_eps, nullptr, xh, compute),
                      "ffn_norm", il) ||
            !gemm(L.w_gate, F, E, xh, n_tok, gate, 0.0f, "w_gate", il, err) ||
            !gemm(L.w_up, F, E, xh, n_tok, up, 0.0f, "w_up", il, err) ||
            !launched(gpu::swiglu_half(gate, up, ffn_h, static_cast<size_t>(n_tok) * F, compute), "swiglu", il) ||
            !gemm(L.w_down, E, F, ffn_h, n_tok, x, 1.0f, "w_down", il, err))
            return false;
    }

    // --- logits, only for the rows that asked: normed into xh's first n_out rows ---
    if (n_out == 0) return true;
    return launched(gpu::rms_norm_rows(x, meta + section(kSecOut), n_out, E, output_norm, hp.rms_eps, nullptr, xh,
                                       compute),
                    "output_norm", -1) &&
           gemm(output, n_vocab, E, xh, n_out, logits_dev, 0.0f, "output", -1, err) &&
           cuda_ok(cudaMemcpyAsync(logits_host, logits_dev, static_cast<size_t>(n_out) * n_vocab * sizeof(float),
                                   cudaMemcpyDeviceToHost, compute),
                   device, "cudaMemcpyAsync (logits)", err);
}

bool gpu_context::impl::replay(int n_tok, int slot, std::string &err) {
    auto it = graph_execs.find({n_tok, slot});
    if (it == graph_execs.end()) {
        // Thread-local capture: CUDA calls of other threads (another device's executor) neither
        // break it nor get refused. cuBLAS can be captured because its workspace is fixed
        // (cublasSetWorkspace), so it allocates nothing inside the graph.
        cudaGraph_t graph = nullptr;
        cudaGraphExec_t exec = nullptr;
        std::string capture_err;
        bool ok = cudaStreamBeginCapture(compute, cudaStreamCaptureModeThreadLocal) == cudaSuccess;
        if (ok) {
            ok = forward(n_tok, n_tok, slot, capture_err);
            ok = cudaStreamEndCapture(compute, &graph) == cudaSuccess && ok;
        }
        ok = ok && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
        if (graph) (void)cudaGraphDestroy(graph);
        if (!ok) {
            // Nothing of a failed capture ran; the step is launched directly, and so is every
            // later one: a capture that fails once will fail again.
            (void)cudaGetLastError();
            if (exec) (void)cudaGraphExecDestroy(exec);
            graphs_failed = true;
            return forward(n_tok, n_tok, slot, err);
        }
        it = graph_execs.emplace(std::make_pair(n_tok, slot), exec).first;
    }
    return cuda_ok(cudaGraphLaunch(it->second, compute), device, "cudaGraphLaunch", err);
}

bool gpu_context::impl::run(int n_tok, int n_out, size_t count, std::string &err) {
    const int slot = ring;
    // the copy may overwrite meta_dev[slot] only once the batch before last stopped reading it
    if (!cuda_ok(cudaStreamWaitEvent(copy, consumed[slot], 0), device, "cudaStreamWaitEvent", err) ||
        !cuda_ok(cudaMemcpyAsync(meta_dev[slot], meta_host[slot], count * sizeof(int32_t), cudaMemcpyHostToDevice, copy),
                 device, "cudaMemcpyAsync (batch metadata)", err) ||
        !cuda_ok(cudaEventRecord(uploaded[slot], copy), device, "cudaEventRecord", err) ||
        !cuda_ok(cudaStreamWaitEvent(compute, uploaded[slot], 0), device, "cudaStreamWaitEvent", err))
        return false;
    ring ^= 1;
    const bool decode_step = n_out == n_tok && n_tok <= kMaxGraphTokens;
    const bool ok = graphs && !graphs_failed && decode_step ? replay(n_tok, slot, err) : forward(n_tok, n_out, slot, err);
    // recorded even after a failed launch, so the next upload into this slot waits for what
    // did get queued
    const cudaError_t recorded = cudaEventRecord(consumed[slot], compute);
    if (!ok || !cuda_ok(recorded, device, "cudaEventRecord", err)) return false;
    // Without logits nothing comes back, and the host goes on to the next batch while this one
    // runs; errors of its kernels then surface at the next synchronization.
    if (n_out == 0) return true;
    return cuda_ok(cudaStreamSynchronize(compute), device, "cudaStreamSynchronize", err);
}

// --- gpu_context ---

gpu_context::gpu_context(std::unique_ptr<impl> p) : p_(std::move(p)) {}
gpu_context::~gpu_context() = default;

std::unique_ptr<gpu_context> gpu_context::create(const llama_model &model, const context_params &params, int device,
                                                 std::string &err) {
    std::string why;
    const int n = gpu_device_count(why);
    if (device < 0 || device >= n) {
        err = "GPU " + std::to_string(device) + ": no such device (" + (n == 0 ? why : std::to_string(n) + " visible") +
              ")";
        return nullptr;
    }
    if (!cuda_ok(cudaSetDevice(device), device, "cudaSetDevice", err)) return nullptr;
    auto p = std::make_unique<impl>(model, params, device);
    if (!p->init(err)) return nullptr; // ~impl frees whatever init got
    return std::unique_ptr<gpu_context>(new gpu_context(std::move(p)));
}

bool gpu_context::decode(std::span<const batch_token> batch, std::string &err) {
    impl &c = *p_;
    if (!cuda_ok(cudaSetDevice(c.device), c.device, "cudaSetDevice", err)) return false;
    if (!c.slots.check_batch(batch, err)) return false; // llama_context's checks and messages

    // --- the batch's metadata into the pinned buffer of this turn ---
    const int slot = c.ring;
    if (!cuda_ok(cudaEventSynchronize(c.uploaded[slot]), c.device, "cudaEventSynchronize (batch metadata)", err))
        return false;
    int32_t *h = c.meta_host[slot];
    int32_t *tokens = h + c.section(impl::kSecTokens), *pos = h + c.section(impl::kSecPos);
    int32_t *last = h + c.section(impl::kSecLast), *row = h + c.section(impl::kSecRow);
    int32_t *out = h + c.section(impl::kSecOut), *tables = h + c.tables_at();
    std::fill(c.seq_row.begin(), c.seq_row.end(), -1);
    int n_rows = 0, n_out = 0;
    const size_t len = static_cast<size_t>(c.table_len);
    for (size_t i = 0; i < batch.size(); ++i) {
        const batch_token &b = batch[i];
        const size_t s = static_cast<size_t>(b.seq);
        if (c.seq_row[s] < 0) { // the sequence's first token: its table goes up once
            c.seq_row[s] = n_rows++;
            const std::vector<int32_t> &t = c.slots.table(b.seq);
            std::copy_n(t.data(), std::min(t.size(), len), tables + static_cast<size_t>(c.seq_row[s]) * len);
        }
        tokens[i] = b.token;
        pos[i] = b.pos;
        last[i] = c.slots.last(b.seq);
        row[i] = c.seq_row[s];
        if (b.logits) out[n_out++] = static_cast<int32_t>(i);
    }
    const size_t count = c.tables_at() + static_cast<size_t>(n_rows) * len;

    // On a CUDA failure the positions stay as they were: whatever reached the cache lies at
    // positions >= n_past, which nothing reads before they are written again.
    if (!c.run(static_cast<int>(batch.size()), n_out, count, err)) return false;
    c.slots.commit_batch();
    return true;
}

const float *gpu_context::logits(size_t i) const {
    return p_->logits_host + i * static_cast<size_t>(p_->n_vocab);
}

bool gpu_context::eval(std::span<const int32_t> tokens, std::string &err) {
    impl &c = *p_;
    if (!cuda_ok(cudaSetDevice(c.device), c.device, "cudaSetDevice", err)) return false;
    if (!c.slots.check_eval(tokens, err)) return false;
    for (size_t i = 0; i < tokens.size(); i += static_cast<size_t>(c.params.n_batch)) {
        c.slots.eval_chunk(tokens, i, c.eval_batch); // capacity n_batch, reserved once
        if (!decode(c.eval_batch, err)) return false; // validated above; only a CUDA failure stops it here
    }
    return true;
}

void gpu_context::truncate(int n, int seq) { p_->slots.truncate(n, seq); }

void gpu_context::set_blocks(int seq, std::span<const int32_t> table, int n_past) {
    p_->slots.set_blocks(seq, table, n_past);
}

void gpu_context::clear(int seq) { p_->slots.clear(seq); }

int gpu_context::n_past(int seq) const { return p_->slots.n_past(seq); }
const llama_model &gpu_context::model() const { return p_->model; }
int gpu_context::n_vocab() const { return p_->model.hparams().n_vocab; }
int gpu_context::device() const { return p_->device; }
void gpu_context::use_graphs(bool on) { p_->graphs = on; }
bool gpu_context::graphs_in_use() const { return p_->graphs && !p_->graphs_failed; }
int gpu_context::kv_block_size() const { return p_->block_size; }
int gpu_context::n_kv_blocks() const { return p_->n_blocks; }
size_t gpu_context::weight_bytes() const { return p_->weight_size; }
size_t gpu_context::kv_bytes() const { return p_->kv_size; }
size_t gpu_context::scratch_bytes() const { return p_->scratch_size; }

} // namespace actorserve
