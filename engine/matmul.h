// y = x W^T for a batch of activation rows against one weight matrix.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/model.h"
#include "engine/thread_pool.h"

namespace actorserve {

// x: (n_tok, w.n_in) float, y: (n_tok, w.n_out) float.
// x is first quantized into scratch (reused, grown as needed) in the format the weight
// type pairs with; then each weight row is read once and dotted with every token's row, rows
// split across the pool. Cost: n_tok * n_out dots of n_in; the weight read dominates at small
// n_tok, which is why a batch shares it.
struct matmul_scratch {
    std::vector<uint8_t> xq; // (n_tok, row_bytes) quantized activations
    std::vector<float> xd;   // (n_tok, n_in / 32, 2) their block scales as floats
};
void matmul(const weight_matrix &w, const float *x, int64_t n_tok, float *y, thread_pool &pool,
            matmul_scratch &scratch);

} // namespace actorserve
