#include "engine/matmul.h"

#include <algorithm>
#include <cassert>
#include <xmmintrin.h>

#include "engine/quants.h"
#include "engine/quants_k.h"

namespace actorserve {

namespace {
// Weight rows are prefetched this far ahead of the kernel, one row (or tile) at a time.
// note: on the 2-vCPU Xeon VM measured, the hardware prefetchers did not keep up with a weight
// stream: software prefetch took single-sequence decode from 62 to 160-175 tokens/s (2 threads)
// and from 38 to 78 (1 thread); see docs/engine.md.
constexpr int64_t kPrefetchRows = 8;
inline void prefetch(const uint8_t *p, size_t bytes) {
    for (size_t o = 0; o < bytes; o += 64) _mm_prefetch(reinterpret_cast<const char *>(p + o), _MM_HINT_T0);
}

// Where unit u of a group lies: the matrix (first[k] <= u < first[k + 1]) and its index there.
struct unit_map {
    int64_t first[kMaxMatmulGroup + 1];
    int n = 0;
    int find(int64_t u, int hint) const {
        while (u >= first[hint + 1]) ++hint;
        return hint;
    }
};
// Units per chunk of the pool's dynamic loop: about kChunksPerThread chunks for each thread,
// enough for a thread that another process slows down to hand its share to the other, few
// enough that taking them costs nothing next to the kernels.
constexpr int64_t kChunksPerThread = 8;
int64_t grain(int64_t n_units, const thread_pool &pool) {
    return std::max<int64_t>(1, n_units / (kChunksPerThread * pool.size()));
}
} // namespace

void matmul(std::span<const matmul_out> outs, const float *x, int64_t n_tok, thread_pool &pool,
            matmul_scratch &scratch) {
    assert(!outs.empty() && outs.size() <= static_cast<size_t>(kMaxMatmulGroup));
    const weight_matrix &w0 = *outs[0].w;
    const auto same_form = [&](const matmul_out &o) { return o.w->type == w0.type && o.w->n_in == w0.n_in; };
    if (!std::all_of(outs.begin(), outs.end(), same_form)) { // one input form per quantization: one by one
        for (const matmul_out &o : outs) matmul(*o.w, x, n_tok, o.y, pool, scratch);
        return;
    }
    const int64_t n_in = w0.n_in;
    const tensor_type at = activation_type(w0.type);
    const size_t x_row = row_bytes(at, n_in);
    std::vector<uint8_t> &xq = scratch.xq;
    if (xq.size() < x_row * static_cast<size_t>(n_tok)) xq.resize(x_row * static_cast<size_t>(n_tok));
    for (int64_t t = 0; t < n_tok; ++t) quantize_row(at, x + t * n_in, xq.data() + t * x_row, n_in);
    // Block scales as floats for the 8-bit formats: converted once here, read by every row.
    const bool scaled = at == tensor_type::q8_0 || at == tensor_type::q8_1;
    const size_t nd = static_cast<size_t>(n_in / QK * 2);
    if (scaled) {
        if (scratch.xd.size() < nd * static_cast<size_t>(n_tok)) scratch.xd.resize(nd * static_cast<size_t>(n_tok));
        for (int64_t t = 0; t < n_tok; ++t) activation_scales(at, xq.data() + t * x_row, n_in, scratch.xd.data() + t * nd);
    }
    const float *xd = scaled ? scratch.xd.data() : nullptr;

    const uint8_t *xqd = xq.data();
    const bool k_quant = at == tensor_type::q8_k; // the token's scale is a float in its block
    const tile_kernel_info tk = scaled || k_quant ? tile_kernel(w0.type) : tile_kernel_info{};
    const bool tiled = tk.fn != nullptr && n_tok >= kMinTileTokens;
    const kzmm_fn kz = k_quant && n_tok >= kMinTileTokens ? kzmm_kernel(w0.type) : nullptr;
    // The group's work units, matrix after matrix: rows (one-row kernel) or tiles of tk.rows rows.
    const int64_t unit_rows = kz != nullptr ? kKzRows : tiled ? tk.rows : 1;
    unit_map units;
    units.n = static_cast<int>(outs.size());
    units.first[0] = 0;
    for (int k = 0; k < units.n; ++k)
        units.first[k + 1] = units.first[k] + (outs[static_cast<size_t>(k)].w->n_out + unit_rows - 1) / unit_rows;
    const int64_t n_units = units.first[units.n];

    if (kz != nullptr) { // the K-quants' 512-bit kernel: tokens packed once, 16 to a register
        static_assert(kTokenBlock % kKzTokens == 0 && kTokenBlock <= kKzMaxTokens);
        const int64_t nb = n_in / QK_K, n_tiles = (n_tok + kKzTokens - 1) / kKzTokens;
        const size_t need = static_cast<size_t>(n_tiles * nb) * kKzWords;
        if (scratch.xk.size() < need) scratch.xk.resize(need);
        int32_t *pack = scratch.xk.data();
        pool.parallel_for_dynamic(n_tiles, 1, [&](int64_t a, int64_t e) {
            for (int64_t t = a; t < e; ++t) kzmm_pack(xqd, x_row, n_tok, nb, t, pack);
        });
        pool.parallel_for_dynamic(n_units, grain(n_units, pool), [&](int64_t u0, int64_t u1) {
            for (int64_t tb = 0; tb < n_tok; tb += kTokenBlock) {
                const int64_t te = std::min<int64_t>(n_tok, tb + kTokenBlock);
                for (int64_t u = u0, k = units.find(u0, 0); u < u1; ++u) {
                    k = units.find(u, static_cast<int>(k));
                    const weight_matrix &w = *outs[static_cast<size_t>(k)].w;
                    float *y = outs[static_cast<size_t>(k)].y;
                    const int64_t r = (u - units.first[k]) * kKzRows;
                    const int nr = static_cast<int>(std::min<int64_t>(kKzRows, w.n_out - r));
                    const uint8_t *rows = w.data + static_cast<size_t>(r) * w.row_bytes;
                    if (r + kPrefetchRows + kKzRows <= w.n_out) prefetch(rows + kPrefetchRows * w.row_bytes, kKzRows * w.row_bytes);
                    kz(n_in, rows, w.row_bytes, nr, pack + static_cast<size_t>(tb / kKzTokens * nb) * kKzWords, te - tb,
                       y + tb * w.n_out + r, static_cast<size_t>(w.n_out));
                }
            }
        });
        return;
    }
    if (!tiled) {
        const dot_cols_fn dot = dot_cols_kernel(w0.type);
        assert(dot != nullptr);
        // token blocks as the tiled path walks them, so that a prompt's activations are read
        // from cache for every row of the chunk
        pool.parallel_for_dynamic(n_units, grain(n_units, pool), [&](int64_t u0, int64_t u1) {
            float out[kMaxCols];
            for (int64_t tb = 0; tb < n_tok; tb += kTokenBlock) {
                const int64_t te = std::min<int64_t>(n_tok, tb + kTokenBlock);
                for (int64_t u = u0, k = units.find(u0, 0); u < u1; ++u) {
                    k = units.find(u, static_cast<int>(k));
                    const weight_matrix &w = *outs[static_cast<size_t>(k)].w;
                    float *y = outs[static_cast<size_t>(k)].y;
                    const int64_t r = u - units.first[k];
                    const uint8_t *row = w.data + static_cast<size_t>(r) * w.row_bytes;
                    if (r + kPrefetchRows < w.n_out) prefetch(row + kPrefetchRows * w.row_bytes, w.row_bytes);
                    for (int64_t t = tb; t < te; t += kMaxCols) {
                        const int nc = static_cast<int>(std::min<int64_t>(kMaxCols, te - t));
                        dot(n_in, row, xqd + static_cast<size_t>(t) * x_row, x_row, xd ? xd + t * nd : nullptr, nc, out);
                        for (int c = 0; c < nc; ++c) y[(t + c) * w.n_out + r] = out[c];
                    }
                }
            }
        });
        return;
    }

    // the scales transposed, so that a tile reads its tokens' in one load; the offset sums of
    // the kernels that take signed weights as unsigned
    const int64_t nb = n_in / QK;
    const size_t sts = static_cast<size_t>(n_tok + kTileOut);
    const float *xt = nullptr;
    if (scaled) {
        if (scratch.xt.size() < 2 * nb * sts) scratch.xt.resize(2 * nb * sts);
        transpose_scales(xd, n_tok, nb, scratch.xt.data(), sts);
        xt = scratch.xt.data();
    }
    const int32_t *xc = nullptr;
    if (tk.offset != 0) {
        const size_t n_xc = static_cast<size_t>(n_tok * nb * 8);
        if (scratch.xc.size() < n_xc) scratch.xc.resize(n_xc);
        offset_sums(xqd, n_tok, x_row, nb, tk.offset, scratch.xc.data());
        xc = scratch.xc.data();
    }
    const size_t xc_row = static_cast<size_t>(nb * 8);
    pool.parallel_for_dynamic(n_units, grain(n_units, pool), [&](int64_t u0, int64_t u1) {
        float out[std::max({kZmmTileRows, kTileRows, kKTileRowsWide}) * kTileOut];
        for (int64_t tb = 0; tb < n_tok; tb += kTokenBlock) {
            const int64_t te = std::min<int64_t>(n_tok, tb + kTokenBlock);
            for (int64_t u = u0, k = units.find(u0, 0); u < u1; ++u) {
                k = units.find(u, static_cast<int>(k));
                const weight_matrix &w = *outs[static_cast<size_t>(k)].w;
                float *y = outs[static_cast<size_t>(k)].y;
                const int64_t r = (u - units.first[k]) * tk.rows;
                const int nr = static_cast<int>(std::min<int64_t>(tk.rows, w.n_out - r));
                const uint8_t *rows = w.data + static_cast<size_t>(r) * w.row_bytes;
                if (r + kPrefetchRows + tk.rows <= w.n_out) prefetch(rows + kPrefetchRows * w.row_bytes, tk.rows * w.row_bytes);
                for (int64_t t = tb; t < te; t += tk.cols) {
                    const int nc = static_cast<int>(std::min<int64_t>(tk.cols, te - t));
                    tk.fn(n_in, rows, w.row_bytes, nr, xqd + static_cast<size_t>(t) * x_row, x_row, xt ? xt + t : nullptr, sts,
                          xc ? xc + static_cast<size_t>(t) * xc_row : nullptr, nc, out);
                    for (int c = 0; c < nc; ++c)
                        for (int i = 0; i < nr; ++i) y[(t + c) * w.n_out + r + i] = out[i * kTileOut + c];
                }
            }
        }
    });
}

void matmul(const weight_matrix &w, const float *x, int64_t n_tok, float *y, thread_pool &pool,
            matmul_scratch &scratch) {
    const matmul_out one{&w, y};
    matmul(std::span<const matmul_out>(&one, 1), x, n_tok, pool, scratch);
}

} // namespace actorserve
