// Weight quantization: float rows -> Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K blocks (and
// F16, F32), byte for byte what ggml's reference quantizers write (quantize_row_*_ref, the
// ones llama.cpp's quantize tool runs without an importance matrix), and the conversion of
// a whole matrix from one stored type to another at load time (--weights).
//
// note: these are not the activation quantizers of quants.h. ggml quantizes activations with
// its SIMD routine (scale 127/amax, round half to even) and weights with the reference one
// (scale 1/d with d = amax/127, round half away from zero); the two differ in the last bit
// of some values, and a model file is made by the latter.
#pragma once

#include <cstdint>

#include "engine/gguf.h"
#include "engine/quants.h"
#include "engine/quants_k.h"
#include "engine/thread_pool.h"

namespace actorserve {

// x (n,) -> y (n / QK blocks); n % QK == 0. Rounding rules per format in quantize.cpp.
void quantize_weights_q4_0(const float *x, block_q4_0 *y, int64_t n);
void quantize_weights_q4_1(const float *x, block_q4_1 *y, int64_t n);
void quantize_weights_q8_0(const float *x, block_q8_0 *y, int64_t n);
// The same for the 5-bit and K-quant formats (quantize_k.cpp; n % 256 == 0 for the K-quants).
void quantize_weights_q5_0(const float *x, block_q5_0 *y, int64_t n);
void quantize_weights_q5_1(const float *x, block_q5_1 *y, int64_t n);
void quantize_weights_q4_k(const float *x, block_q4_k *y, int64_t n);
void quantize_weights_q5_k(const float *x, block_q5_k *y, int64_t n);
void quantize_weights_q6_k(const float *x, block_q6_k *y, int64_t n);

// Whether a matrix with rows of n_in elements can be stored as t (a compute type whose block
// length divides n_in).
bool can_store_as(tensor_type t, int64_t n_in);

// n_rows rows of n_in elements, stored as `from` in src (row stride row_bytes(from, n_in)),
// -> stored as `to` in dst (row stride row_bytes(to, n_in)): each row dequantized to float
// and written in the new format; F16 by round to nearest even, F32 as is. Rows are split
// over the pool. Requires can_store_as(to, n_in) and from, to compute types.
// Cost: one pass over both matrices; for 135M parameters about a second on 2 cores.
void convert_rows(tensor_type from, const uint8_t *src, tensor_type to, uint8_t *dst, int64_t n_in, int64_t n_rows,
                  thread_pool &pool);

} // namespace actorserve
