// Block formats (ggml-compatible layouts) and the dot-product kernels that consume them.
//
// A weight row of a quantized matrix is a run of 32-element blocks. Activations are
// quantized once per matmul into the format each weight type pairs with, so the inner
// loop is an integer dot product with one float scale per block:
//   Q4_0 · Q8_0,  Q4_1 · Q8_1,  Q8_0 · Q8_0,  F16 · F16,  F32 · F32.
// Every SIMD variant has a *_ref beside it; tests hold them together within kTolDot.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/gguf.h"

namespace actorserve {

constexpr int QK = 32; // elements per block

struct block_q4_0 { uint16_t d; uint8_t qs[QK / 2]; };          // x = (q - 8) * d
struct block_q4_1 { uint16_t d, m; uint8_t qs[QK / 2]; };       // x = q * d + m
struct block_q8_0 { uint16_t d; int8_t qs[QK]; };               // x = q * d
struct block_q8_1 { uint16_t d, s; int8_t qs[QK]; };            // x = q * d, s = d * sum(q)
static_assert(sizeof(block_q4_0) == 18 && sizeof(block_q4_1) == 20);
static_assert(sizeof(block_q8_0) == 34 && sizeof(block_q8_1) == 36);
// note: in both 4-bit formats byte j holds element j in its low nibble and element j+16
// in its high nibble.

// Relative tolerance between a SIMD dot and its reference (float summation order differs;
// the integer block sums are exact in both).
constexpr float kTolDot = 1e-5f;

// Activation format a weight type is multiplied with.
tensor_type activation_type(tensor_type weight);
// Bytes of one row of n elements (n % QK == 0 for block types).
size_t row_bytes(tensor_type t, int64_t n);
// true for the types the engine computes with.
bool is_compute_type(tensor_type t);

// x (n,) -> y (n / QK blocks). Scale d = amax / 127, q = round_to_even(x * 127 / amax).
void quantize_row_q8_0(const float *x, block_q8_0 *y, int64_t n);
void quantize_row_q8_1(const float *x, block_q8_1 *y, int64_t n);
// x (n,) -> half precision
void convert_row_f16(const float *x, uint16_t *y, int64_t n);
// The variants behind the three above; every output byte identical.
void quantize_row_q8_0_ref(const float *x, block_q8_0 *y, int64_t n);
void quantize_row_q8_1_ref(const float *x, block_q8_1 *y, int64_t n);
void convert_row_f16_ref(const float *x, uint16_t *y, int64_t n);
void quantize_row_q8_0_avx2(const float *x, block_q8_0 *y, int64_t n);
void quantize_row_q8_1_avx2(const float *x, block_q8_1 *y, int64_t n);
void convert_row_f16_avx2(const float *x, uint16_t *y, int64_t n);
// Quantizes/converts a row into the activation format t; y must hold row_bytes(t, n).
void quantize_row(tensor_type t, const float *x, void *y, int64_t n);
// Weight row (n elements of type t) -> float.
void dequantize_row(tensor_type t, const void *x, float *y, int64_t n);

// sum_i w[i] * x[i] over n elements; w is a weight row, x an activation row of the paired format.
using dot_fn = float (*)(int64_t n, const void *w, const void *x);
float dot_q4_0_q8_0_ref(int64_t n, const void *w, const void *x);
float dot_q4_1_q8_1_ref(int64_t n, const void *w, const void *x);
float dot_q8_0_q8_0_ref(int64_t n, const void *w, const void *x);
float dot_f16_f16_ref(int64_t n, const void *w, const void *x);
float dot_f32_f32_ref(int64_t n, const void *w, const void *x);
float dot_q4_0_q8_0_avx2(int64_t n, const void *w, const void *x);
float dot_q4_1_q8_1_avx2(int64_t n, const void *w, const void *x);
float dot_q8_0_q8_0_avx2(int64_t n, const void *w, const void *x);
float dot_f16_f16_avx2(int64_t n, const void *w, const void *x);
float dot_f32_f32_avx2(int64_t n, const void *w, const void *x);

// out[c] = dot(w, x + c * x_stride) for c < n_cols (1..kMaxCols): one pass over a weight row
// for several activation rows. Bit-identical to n_cols separate dot_fn calls.
// xd: the rows' block scales as floats, (n_cols, n/QK, 2), from activation_scales (rows of
// the 8-bit formats laid out one after another), or nullptr to read them from the blocks.
constexpr int kMaxCols = 4;
using dot_cols_fn = void (*)(int64_t n, const void *w, const void *x, size_t x_stride, const float *xd, int n_cols,
                             float *out);
void cols_q4_0_q8_0_avx2(int64_t n, const void *w, const void *x, size_t x_stride, const float *xd, int n_cols, float *out);
void cols_q4_1_q8_1_avx2(int64_t n, const void *w, const void *x, size_t x_stride, const float *xd, int n_cols, float *out);
void cols_q8_0_q8_0_avx2(int64_t n, const void *w, const void *x, size_t x_stride, const float *xd, int n_cols, float *out);
// One quantized activation row (Q8_0 or Q8_1, n elements) -> its scales (n/QK, 2): d, s (0 for Q8_0).
void activation_scales(tensor_type t, const void *x, int64_t n, float *xd);
// The multi-column kernel for a weight type at selected_simd_isa().
dot_cols_fn dot_cols_kernel(tensor_type weight);

// AVX-512 variants (quants_avx512.cpp): 256-bit AVX-512VL/BW steps, vpdpbusd in the
// *_avx512vnni ones, maddubs + madd in the *_avx512 ones; bit-identical to the AVX2 kernels.
float dot_q4_0_q8_0_avx512(int64_t n, const void *w, const void *x);
float dot_q4_1_q8_1_avx512(int64_t n, const void *w, const void *x);
float dot_q8_0_q8_0_avx512(int64_t n, const void *w, const void *x);
float dot_q4_0_q8_0_avx512vnni(int64_t n, const void *w, const void *x);
float dot_q4_1_q8_1_avx512vnni(int64_t n, const void *w, const void *x);
float dot_q8_0_q8_0_avx512vnni(int64_t n, const void *w, const void *x);
void cols_q4_0_q8_0_avx512(int64_t n, const void *w, const void *x, size_t x_stride, const float *xd, int n_cols, float *out);
void cols_q4_1_q8_1_avx512(int64_t n, const void *w, const void *x, size_t x_stride, const float *xd, int n_cols, float *out);
void cols_q8_0_q8_0_avx512(int64_t n, const void *w, const void *x, size_t x_stride, const float *xd, int n_cols, float *out);
void cols_q4_0_q8_0_avx512vnni(int64_t n, const void *w, const void *x, size_t x_stride, const float *xd, int n_cols, float *out);
void cols_q4_1_q8_1_avx512vnni(int64_t n, const void *w, const void *x, size_t x_stride, const float *xd, int n_cols, float *out);
void cols_q8_0_q8_0_avx512vnni(int64_t n, const void *w, const void *x, size_t x_stride, const float *xd, int n_cols, float *out);

// Instruction set levels, each including the ones before it:
//   ref         portable C++ only
//   avx2        + AVX2, FMA, F16C: every SIMD kernel of the engine
//   avx512      + AVX-512 F, BW, VL: the quantized dots above (the rest stays AVX2)
//   avx512vnni  + AVX-512 VNNI: the same dots with vpdpbusd
enum class simd_isa : uint8_t { ref, avx2, avx512, avx512vnni };
const char *simd_isa_name(simd_isa isa);
// The highest level this CPU reports (cpuid, through __builtin_cpu_supports).
simd_isa cpu_simd_isa();
// The level to run on a CPU whose highest is `cpu`: `request` (ACTORSERVE_SIMD: "ref", "avx2",
// "avx512", "avx512vnni") lowered to what the CPU has; with no request (null or empty) the
// default, which is `cpu` except that avx512 without VNNI runs only when asked for (measured
// slower than avx2; see docs/engine.md). An unknown name sets *unknown and gives the default.
simd_isa choose_simd_isa(simd_isa cpu, const char *request, bool *unknown = nullptr);
// choose_simd_isa(cpu_simd_isa(), getenv("ACTORSERVE_SIMD")), decided once per process (an
// unknown name is reported once on stderr). Every dispatcher in the engine asks this.
simd_isa selected_simd_isa();

// The kernel for a weight type at selected_simd_isa(). F16 and F32 weights keep the AVX2 dots
// on the AVX-512 levels: a 16-lane sum would change their summation order.
dot_fn dot_kernel(tensor_type weight);
// Whether the AVX2 kernels run (selected level avx2 or above).
bool use_avx2();
// simd_isa_name(selected_simd_isa()), for display.
const char *simd_level();
bool cpu_has_avx2();
bool cpu_has_avx512();     // F, BW, VL (and AVX2, FMA, F16C)
bool cpu_has_avx512vnni(); // and VNNI

} // namespace actorserve
