#include "engine/matmul.h"

#include <algorithm>
#include <cassert>

#include "engine/quants.h"

namespace actorserve {

void matmul(const weight_matrix &w, const float *x, int64_t n_tok, float *y, thread_pool &pool,
            std::vector<uint8_t> &xq) {
    const tensor_type at = activation_type(w.type);
    const size_t x_row = row_bytes(at, w.n_in);
    if (xq.size() < x_row * static_cast<size_t>(n_tok)) xq.resize(x_row * static_cast<size_t>(n_tok));
    for (int64_t t = 0; t < n_tok; ++t) quantize_row(at, x + t * w.n_in, xq.data() + t * x_row, w.n_in);

    const dot_cols_fn dot = dot_cols_kernel(w.type);
    assert(dot != nullptr);
    const uint8_t *xqd = xq.data();
    pool.parallel_for(w.n_out, [&](int64_t r0, int64_t r1) {
        float out[kMaxCols];
        for (int64_t r = r0; r < r1; ++r) {
            const uint8_t *row = w.data + static_cast<size_t>(r) * w.row_bytes;
            for (int64_t t = 0; t < n_tok; t += kMaxCols) {
                const int nc = static_cast<int>(std::min<int64_t>(kMaxCols, n_tok - t));
                dot(w.n_in, row, xqd + static_cast<size_t>(t) * x_row, x_row, nc, out);
                for (int c = 0; c < nc; ++c) y[(t + c) * w.n_out + r] = out[c];
            }
        }
    });
}

} // namespace actorserve
