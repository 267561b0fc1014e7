#include "engine/matmul.h"

#include <algorithm>
#include <cassert>

#include "engine/quants.h"

namespace actorserve {

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

    const dot_cols_fn dot = dot_cols_kernel(w.type);
    assert(dot != nullptr);
    const uint8_t *xqd = xq.data();
    pool.parallel_for(w.n_out, [&](int64_t r0, int64_t r1) {
        float out[kMaxCols];
        for (int64_t r = r0; r < r1; ++r) {
            const uint8_t *row = w.data + static_cast<size_t>(r) * w.row_bytes;
            for (int64_t t = 0; t < n_tok; t += kMaxCols) {
                const int nc = static_cast<int>(std::min<int64_t>(kMaxCols, n_tok - t));
                dot(w.n_in, row, xqd + static_cast<size_t>(t) * x_row, x_row, xd ? xd + t * nd : nullptr, nc, out);
                for (int c = 0; c < nc; ++c) y[(t + c) * w.n_out + r] = out[c];
            }
        }
    });
}

} // namespace actorserve
