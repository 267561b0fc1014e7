// Element-wise and per-row operations of the LLaMA forward pass (float32).
#pragma once

#include <cstddef>
#include <cstdint>

namespace actorserve {

// y = x / sqrt(mean(x^2) + eps) * w.   x, y, w: (n,); y may alias x.
// note: sum of squares in double, as ggml does, so long rows lose nothing.
void rms_norm(const float *x, const float *w, float *y, int n, float eps);

// Rotary embedding of one head in place, "normal" (adjacent pair) layout:
// (x[2i], x[2i+1]) rotated by freq_scale * pos * theta_base^(-2i/n_rot) / freq_factors[i],
// for 2i < n_rot. freq_scale < 1 is linear position scaling; freq_factors (Llama 3.1+) may be null.
// note: the angle is built by repeated multiplication in float, matching llama.cpp bit for bit
// in the common case; powf per pair would differ in the last ulp.
void rope_norm(float *x, int head_dim, int n_rot, int pos, float theta_base, float freq_scale,
               const float *freq_factors);
// The same rotation on NeoX's pairs (x[i], x[i + n_rot/2]) for i < n_rot/2 (Qwen, Gemma, Phi-3).
void rope_neox(float *x, int head_dim, int n_rot, int pos, float theta_base, float freq_scale,
               const float *freq_factors);

// e^x by range reduction x = n ln2 + b, e^x = 2^n (1 + p(b)), p a degree-5 minimax polynomial
// (the Arm optimized-routines expf, which ggml's SIMD kernels also use): max error ~1.5 ulp.
// Computed with fused multiply-adds so scalar and vector lanes give identical bits.
float exp_poly(float x);

// In place: x = softmax(x * scale) over n. Exponentials by exp_poly, summed in groups of 8
// (pairwise within a group, groups added in double), the order of llama.cpp's AVX2 softmax;
// a tail of n % 8 by libm, as its scalar remainder. Entries of -inf get weight 0.
void softmax(float *x, int n, float scale);
void softmax_ref(float *x, int n, float scale);
void softmax_avx2(float *x, int n, float scale); // bit-identical to softmax_ref

// y = silu(g) * u, silu(g) = g / (1 + e^-g) with e^-g by exp_poly.  g, u, y: (n,); y may alias g.
void swiglu(const float *g, const float *u, float *y, int n);
void swiglu_ref(const float *g, const float *u, float *y, int n);
void swiglu_avx2(const float *g, const float *u, float *y, int n); // bit-identical to swiglu_ref

// y = gelu(g) * u as llama.cpp's CPU GeGLU computes it: gelu (its tanh form) read from a table
// of every half-precision input, at g rounded to half; 0 for g <= -10, g itself for g >= 10.
// y may alias g. The table (128 KiB, and 256 KiB widened to floats for AVX2) is built on first use.
void geglu(const float *g, const float *u, float *y, int n);
void geglu_ref(const float *g, const float *u, float *y, int n);
void geglu_avx2(const float *g, const float *u, float *y, int n); // bit-identical to geglu_ref
// x = c * tanh(x / c), in place: soft-capping (gemma2's attention scores and logits)
void softcap(float *x, int n, float c);

// sum_i a[i] * b[i] over halves widened to float: 32 partial sums (4 x 8 lanes) by fma, folded
// pairwise, then the tail in double. This is llama.cpp's F16 dot order, used for attention so
// that scores match its F16 KV cache bit for bit.
float dot_f16_lanes(int n, const uint16_t *a, const uint16_t *b);

// The same sum in the order of a tiled matrix kernel: one 8-lane fma accumulator over the
// whole row, folded as hsum8. n % 8 == 0.
float dot_f16_gemm(int n, const uint16_t *a, const uint16_t *b);
// The variants behind them (dispatched as the matmul kernels are); bit-identical.
float dot_f16_lanes_ref(int n, const uint16_t *a, const uint16_t *b);
float dot_f16_lanes_avx2(int n, const uint16_t *a, const uint16_t *b);
float dot_f16_gemm_ref(int n, const uint16_t *a, const uint16_t *b);
float dot_f16_gemm_avx2(int n, const uint16_t *a, const uint16_t *b);

// y = V w with V paged as the KV cache stores it: row r's element i lies at
//   v[blocks[i / block_len] * block_stride + r * block_len + i % block_len],
// i.e. block blocks[s] holds an (n_rows, block_len) tile of V's columns [s * block_len, ...)
// (v points at the tile's place inside block 0). w: (n,) contiguous, y: (n_rows,).
// block_len % 32 == 0, so each 32-element step (8 for gemm) lies in one tile; every row's
// accumulators carry from tile to tile, which makes y[r] bit-identical to dot_f16_lanes
// (resp. dot_f16_gemm) of row r laid out contiguously. n % 8 == 0 for gemm.
// Cost: as n_rows dots. The AVX2 variants go tile by tile, all rows per tile, keeping each
// row's accumulators in a stack buffer between tiles: a tile is read as one contiguous
// stream wherever its block lies, where a row-at-a-time loop would jump between blocks
// every block_len elements (about 3x slower at 2048 keys in a micro-benchmark); the price
// is a load and a store of a row's accumulators per 32 keys (lanes) or per block (gemm).
void matvec_f16_lanes_paged(int n, int n_rows, const uint16_t *v, const int32_t *blocks, size_t block_stride,
                            int block_len, const uint16_t *w, float *y);
void matvec_f16_gemm_paged(int n, int n_rows, const uint16_t *v, const int32_t *blocks, size_t block_stride,
                           int block_len, const uint16_t *w, float *y);
void matvec_f16_lanes_paged_ref(int n, int n_rows, const uint16_t *v, const int32_t *blocks, size_t block_stride,
                                int block_len, const uint16_t *w, float *y);
void matvec_f16_lanes_paged_avx2(int n, int n_rows, const uint16_t *v, const int32_t *blocks, size_t block_stride,
                                 int block_len, const uint16_t *w, float *y); // bit-identical to the ref
void matvec_f16_gemm_paged_ref(int n, int n_rows, const uint16_t *v, const int32_t *blocks, size_t block_stride,
                               int block_len, const uint16_t *w, float *y);
void matvec_f16_gemm_paged_avx2(int n, int n_rows, const uint16_t *v, const int32_t *blocks, size_t block_stride,
                                int block_len, const uint16_t *w, float *y); // bit-identical to the ref

// y += x over n.
void add_inplace(float *y, const float *x, int n);

} // namespace actorserve
