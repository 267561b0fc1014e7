#include "gpu/kernels.cuh"

#include <algorithm>
#include <cmath>

namespace actorserve::gpu {

namespace {

constexpr int kThreads = 256;          // per block, for the row kernels
constexpr int kAttentionThreads = 256; // 8 warps per (token, head)
// Scores held in shared memory at once: a sequence longer than this is attended tile by tile
// with the softmax rescaled between tiles (the online softmax), so n_ctx is not bounded by
// shared memory. 16 KiB, which also keeps several blocks resident per SM.
constexpr int kMaxScoreTile = 4096;

struct sum_op {
    template <typename T> __device__ T operator()(T a, T b) const { return a + b; }
};
struct max_op {
    __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// Reduces v over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the
// result. red: 32 entries of shared memory, reusable by the next call.
template <typename T, typename Op> __device__ T block_reduce(T v, T *red, Op op) {
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    __syncthreads(); // a previous call's readers may not be done with red yet
    if (lane == 0) red[warp] = v;
    __syncthreads();
    v = red[0];
    for (int w = 1; w < n_warps; ++w) v = op(v, red[w]);
    return v;
}

__device__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Grid: one block per token.
__global__ void embed_kernel(const __half *table, const int32_t *tokens, int n_embd, float *x) {
    const int t = blockIdx.x;
    const __half *src = table + static_cast<size_t>(tokens[t]) * n_embd;
    float *dst = x + static_cast<size_t>(t) * n_embd;
    for (int i = threadIdx.x; i < n_embd; i += blockDim.x) dst[i] = __half2float(src[i]);
}

// Grid: one block per output row.
__global__ void rms_norm_kernel(const float *x, const int32_t *rows, int n, const float *w, float eps, float *out,
                                __half *out_h) {
    __shared__ double red[32];
    const int r = blockIdx.x;
    const int src = rows ? rows[r] : r;
    const float *xr = x + static_cast<size_t>(src) * n;
    double ss = 0.0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const float sq = xr[i] * xr[i]; // square in float, sum in double (as rms_norm)
        ss += static_cast<double>(sq);
    }
    ss = block_reduce(ss, red, sum_op{});
    const float mean = static_cast<float>(ss / n);
    const float scale = 1.0f / sqrtf(mean + eps);
    const size_t o = static_cast<size_t>(r) * n;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const float y = (xr[i] * scale) * w[i];
        if (out) out[o + i] = y;
        if (out_h) out_h[o + i] = __float2half(y);
    }
}

// Grid: one block per token; threads over (head, pair), q's heads first, then k's.
// Pair j of a head is (x[2j], x[2j+1]); its angle is freq_scale * theta_j / freq_factors[j] with
// theta_j = pos * theta_scale^j built by j float multiplications, as rope_norm builds it.
__global__ void rope_kernel(float *q, float *k, const int32_t *pos, rope_params p, int n_pairs) {
    const int t = blockIdx.x;
    const size_t n_q = static_cast<size_t>(p.n_head) * p.head_dim, n_kv = static_cast<size_t>(p.n_head_kv) * p.head_dim;
    const int total = (p.n_head + p.n_head_kv) * n_pairs;
    const float fpos = static_cast<float>(pos[t]);
    for (int idx = threadIdx.x; idx < total; idx += blockDim.x) {
        const int head = idx / n_pairs, j = idx % n_pairs;
        float *x = head < p.n_head ? q + t * n_q + static_cast<size_t>(head) * p.head_dim
                                   : k + t * n_kv + static_cast<size_t>(head - p.n_head) * p.head_dim;
        float theta = fpos;
        for (int i = 0; i < j; ++i) theta *= p.theta_scale;
        const float ff = p.freq_factors ? p.freq_factors[j] : 1.0f;
        const float angle = p.freq_scale * (theta / ff);
        float s, c;
        sincosf(angle, &s, &c);
        const float x0 = x[2 * j], x1 = x[2 * j + 1];
        x[2 * j] = fmaf(x0, c, -(x1 * s));
        x[2 * j + 1] = fmaf(x0, s, x1 * c);
    }
}

// Grid: one block per token; threads over the n_kv channels.
// Tokens of one sequence in a batch are consecutive positions, so a token at offset 0 of its
// block knows the batch also writes offsets 1 .. last - pos there; it zeroes only the columns
// after those, and so never races with the blocks that write them.
__global__ void kv_store_kernel(const float *k, const float *v, kv_view kv, batch_view b) {
    const int t = blockIdx.x;
    const int B = kv.block_size, pos = b.pos[t], off = pos % B;
    const int32_t block = kv.tables[static_cast<size_t>(b.row[t]) * kv.table_len + pos / B];
    __half *kb = kv.layer0 + static_cast<size_t>(block) * kv.block_halves; // K (B, n_kv)
    __half *vb = kb + static_cast<size_t>(B) * kv.n_kv;                       // V (n_kv, B)
    const int zero_from = off == 0 ? min(b.last[t] - pos + 1, B) : B;
    const float *kt = k + static_cast<size_t>(t) * kv.n_kv, *vt = v + static_cast<size_t>(t) * kv.n_kv;
    for (int j = threadIdx.x; j < kv.n_kv; j += blockDim.x) {
        kb[static_cast<size_t>(off) * kv.n_kv + j] = __float2half(kt[j]);
        __half *vrow = vb + static_cast<size_t>(j) * B;
        vrow[off] = __float2half(vt[j]);
        for (int c = zero_from; c < B; ++c) vrow[c] = __float2half(0.0f);
    }
}

// Grid: (token, query head). Shared memory: q (head_dim), the output accumulators (head_dim),
// 32 floats for reductions, then a tile of scores.
// Keys are taken a tile at a time: scores (a warp per key, lanes over the head's channels: one
// contiguous K row), the tile's exponentials against the running maximum, then each output
// channel (a warp per channel, lanes over keys: one contiguous run of its V row per block) adds
// its weighted sum to an accumulator first rescaled by exp(old max - new max). With one tile,
// as whenever n_ctx <= kMaxScoreTile, that is the plain softmax.
__global__ void attention_kernel(const float *q, kv_view kv, batch_view b, attention_params p, int tile,
                                 __half *out) {
    extern __shared__ float smem[];
    float *qs = smem;
    float *acc = qs + p.head_dim;
    float *red = acc + p.head_dim;
    float *sc = red + 32;

    const int t = blockIdx.x, h = blockIdx.y;
    const int HD = p.head_dim, B = kv.block_size;
    const int kvh = h / (p.n_head / p.n_head_kv);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    const size_t n_q = static_cast<size_t>(p.n_head) * HD;

    const float *qt = q + t * n_q + static_cast<size_t>(h) * HD;
    for (int d = threadIdx.x; d < HD; d += blockDim.x) {
        qs[d] = qt[d];
        acc[d] = 0.0f;
    }
    __syncthreads();

    const int n_keys = b.pos[t] + 1; // causal: positions 0 .. pos
    const int32_t *table = kv.tables + static_cast<size_t>(b.row[t]) * kv.table_len;
    const size_t k_head = static_cast<size_t>(kvh) * HD;                                 // in a K row
    const size_t v_head = static_cast<size_t>(B) * kv.n_kv + static_cast<size_t>(kvh) * HD * B; // V rows of this head

    float m = -INFINITY, l = 0.0f; // running maximum and sum of exponentials (same in every thread)
    for (int key0 = 0; key0 < n_keys; key0 += tile) {
        const int n = min(tile, n_keys - key0);
        for (int j = warp; j < n; j += n_warps) {
            const int key = key0 + j;
            const __half *kr = kv.layer0 + static_cast<size_t>(table[key / B]) * kv.block_halves +
                               static_cast<size_t>(key % B) * kv.n_kv + k_head;
            float s = 0.0f;
            for (int d = lane; d < HD; d += 32) s += qs[d] * __half2float(kr[d]);
            s = warp_sum(s);
            if (lane == 0) sc[j] = s * p.scale;
        }
        __syncthreads();

        float mx = -INFINITY;
        for (int j = threadIdx.x; j < n; j += blockDim.x) mx = fmaxf(mx, sc[j]);
        mx = block_reduce(mx, red, max_op{});
        const float m_new = fmaxf(m, mx);
        const float alpha = expf(m - m_new); // 0 on the first tile (m = -inf)
        float sum = 0.0f;
        for (int j = threadIdx.x; j < n; j += blockDim.x) {
            const float e = expf(sc[j] - m_new);
            sc[j] = e;
            sum += e;
        }
        sum = block_reduce(sum, red, sum_op{}); // its barriers also publish sc
        l = l * alpha + sum;
        m = m_new;

        for (int d = warp; d < HD; d += n_warps) {
            const size_t v_row = v_head + static_cast<size_t>(d) * B;
            float s = 0.0f;
            for (int j = lane; j < n; j += 32) {
                const int key = key0 + j;
                s += sc[j] * __half2float(kv.layer0[static_cast<size_t>(table[key / B]) * kv.block_halves + v_row + key % B]);
            }
            s = warp_sum(s);
            if (lane == 0) acc[d] = acc[d] * alpha + s;
        }
        __syncthreads(); // acc complete; sc free for the next tile
    }

    const float inv = 1.0f / l;
    __half *ot = out + t * n_q + static_cast<size_t>(h) * HD;
    for (int d = threadIdx.x; d < HD; d += blockDim.x) ot[d] = __float2half(acc[d] * inv);
}

// Grid-stride over n elements. silu(g) = g / (1 + e^-g).
__global__ void swiglu_kernel(const float *g, const float *u, __half *y, size_t n) {
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = __float2half(g[i] / (1.0f + expf(-g[i])) * u[i]);
}

} // namespace

cudaError_t embed_rows(const __half *table, const int32_t *tokens, int n_tok, int n_embd, float *x,
                       cudaStream_t stream) {
    embed_kernel<<<n_tok, kThreads, 0, stream>>>(table, tokens, n_embd, x);
    return cudaGetLastError();
}

cudaError_t rms_norm_rows(const float *x, const int32_t *rows, int n_rows, int n, const float *w, float eps,
                          float *out, __half *out_h, cudaStream_t stream) {
    rms_norm_kernel<<<n_rows, kThreads, 0, stream>>>(x, rows, n, w, eps, out, out_h);
    return cudaGetLastError();
}

cudaError_t rope_qk(float *q, float *k, const int32_t *pos, int n_tok, const rope_params &p, cudaStream_t stream) {
    // the pairs rope_norm visits: i = 2j with i < n_rot and i + 1 < head_dim
    const int n_pairs = std::min((p.n_rot + 1) / 2, p.head_dim / 2);
    if (n_pairs <= 0) return cudaSuccess;
    rope_kernel<<<n_tok, kThreads, 0, stream>>>(q, k, pos, p, n_pairs);
    return cudaGetLastError();
}

cudaError_t kv_store(const float *k, const float *v, const kv_view &kv, const batch_view &b, cudaStream_t stream) {
    kv_store_kernel<<<b.n_tok, kThreads, 0, stream>>>(k, v, kv, b);
    return cudaGetLastError();
}

namespace {
int score_tile(int n_ctx) { return std::min((n_ctx + 31) / 32 * 32, kMaxScoreTile); }
} // namespace

size_t attention_shared_bytes(int head_dim, int n_ctx) {
    return (2 * static_cast<size_t>(head_dim) + 32 + static_cast<size_t>(score_tile(n_ctx))) * sizeof(float);
}

cudaError_t attention(const float *q, const kv_view &kv, const batch_view &b, const attention_params &p,
                      __half *out, cudaStream_t stream) {
    const int tile = score_tile(p.n_ctx);
    const size_t smem = attention_shared_bytes(p.head_dim, p.n_ctx);
    const dim3 grid(static_cast<unsigned>(b.n_tok), static_cast<unsigned>(p.n_head)); // x: up to 2^31 - 1 tokens
    attention_kernel<<<grid, kAttentionThreads, smem, stream>>>(q, kv, b, p, tile, out);
    return cudaGetLastError();
}

cudaError_t swiglu_half(const float *g, const float *u, __half *y, size_t n, cudaStream_t stream) {
    const size_t blocks = std::min<size_t>((n + kThreads - 1) / kThreads, 65536);
    if (blocks == 0) return cudaSuccess;
    swiglu_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(g, u, y, n);
    return cudaGetLastError();
}

} // namespace actorserve::gpu
