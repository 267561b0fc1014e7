#include "engine/matmul.h"

#include <algorithm>
#include <cassert>
#include <xmmintrin.h>

#include "engine/quants.h"

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
} // namespace

void matmul(const weight_matrix &w, const float *x, int64_t n_tok, float *y, thread_pool &pool,
            matmul_scratch &scratch) {
    const tensor_type at = activation_type(w.type);
    const size_t x_row = row_bytes(at, w.n_in);
    std::vector<uint8_t> &xq = scratch.xq;
    if (xq.size() < x_row * static_cast<size_t>(n_tok)) xq.resize(x_row * static_cast<size_t>(n_tok));
    for (int64_t t = 0; t < n_tok; ++t) quantize_row(at, x + t * w.n_in, xq.data() + t * x_row, w.n_in);
    // Block scales as floats for the 8-bit formats: converted once here, read by every row.
    const bool scaled = at == tensor_type::q8_0 || at == tensor_type::q8_1;
    const size_t nd = static_cast<size_t>(w.n_in / QK * 2);
    if (scaled) {
        if (scratch.xd.size() < nd * static_cast<size_t>(n_tok)) scratch.xd.resize(nd * static_cast<size_t>(n_tok));
        for (int64_t t = 0; t < n_tok; ++t) activation_scales(at, xq.data() + t * x_row, w.n_in, scratch.xd.data() + t * nd);
    }
    const float *xd = scaled ? scratch.xd.data() : nullptr;

    const uint8_t *xqd = xq.data();
    const tile_kernel_info tk = scaled ? tile_kernel(w.type) : tile_kernel_info{};
    if (tk.fn == nullptr || n_tok < kMinTileTokens) {
        const dot_cols_fn dot = dot_cols_kernel(w.type);
        assert(dot != nullptr);
        pool.parallel_for(w.n_out, [&](int64_t r0, int64_t r1) {
            float out[kMaxCols];
            for (int64_t r = r0; r < r1; ++r) {
                const uint8_t *row = w.data + static_cast<size_t>(r) * w.row_bytes;
                if (r + kPrefetchRows < r1) prefetch(row + kPrefetchRows * w.row_bytes, w.row_bytes);
                for (int64_t t = 0; t < n_tok; t += kMaxCols) {
                    const int nc = static_cast<int>(std::min<int64_t>(kMaxCols, n_tok - t));
                    dot(w.n_in, row, xqd + static_cast<size_t>(t) * x_row, x_row, xd ? xd + t * nd : nullptr, nc, out);
                    for (int c = 0; c < nc; ++c) y[(t + c) * w.n_out + r] = out[c];
                }
            }
        });
        return;
    }

    // the scales transposed, so that a tile reads its tokens' in one load; the offset sums of
    // the kernels that take signed weights as unsigned
    const int64_t nb = w.n_in / QK;
    const size_t sts = static_cast<size_t>(n_tok + kTileOut);
    if (scratch.xt.size() < 2 * nb * sts) scratch.xt.resize(2 * nb * sts);
    transpose_scales(xd, n_tok, nb, scratch.xt.data(), sts);
    const float *xt = scratch.xt.data();
    const int32_t *xc = nullptr;
    if (tk.offset != 0) {
        const size_t n_xc = static_cast<size_t>(n_tok * nb * 8);
        if (scratch.xc.size() < n_xc) scratch.xc.resize(n_xc);
        offset_sums(xqd, n_tok, x_row, nb, tk.offset, scratch.xc.data());
        xc = scratch.xc.data();
    }
    const int64_t n_tiles = (w.n_out + tk.rows - 1) / tk.rows;
    const size_t xc_row = static_cast<size_t>(nb * 8);
    pool.parallel_for(n_tiles, [&](int64_t t0, int64_t t1) {
        float out[kZmmTileRows > kTileRows ? kZmmTileRows * kTileOut : kTileRows * kTileOut];
        for (int64_t tb = 0; tb < n_tok; tb += kTokenBlock) {
            const int64_t te = std::min<int64_t>(n_tok, tb + kTokenBlock);
            for (int64_t tile_i = t0; tile_i < t1; ++tile_i) {
                const int64_t r = tile_i * tk.rows;
                const int nr = static_cast<int>(std::min<int64_t>(tk.rows, w.n_out - r));
                const uint8_t *rows = w.data + static_cast<size_t>(r) * w.row_bytes;
                if (tile_i + kPrefetchRows / tk.rows < t1) prefetch(rows + kPrefetchRows * w.row_bytes, tk.rows * w.row_bytes);
                for (int64_t t = tb; t < te; t += tk.cols) {
                    const int nc = static_cast<int>(std::min<int64_t>(tk.cols, te - t));
                    tk.fn(w.n_in, rows, w.row_bytes, nr, xqd + static_cast<size_t>(t) * x_row, x_row, xt + t, sts,
                          xc ? xc + static_cast<size_t>(t) * xc_row : nullptr, nc, out);
                    for (int c = 0; c < nc; ++c)
                        for (int i = 0; i < nr; ++i) y[(t + c) * w.n_out + r + i] = out[i * kTileOut + c];
                }
            }
        }
    });
}

} // namespace actorserve
