// Block formats (ggml-compatible layouts) and the dot-product kernels that consume them.
//
// A weight row of a quantized matrix is a run of 32-element blocks (256-element super-blocks
// for the K-quants). Activations are quantized once per matmul into the format each weight
// type pairs with, so the inner loop is an integer dot product with one float scale per block:
//   Q4_0 · Q8_0,  Q4_1 · Q8_1,  Q8_0 · Q8_0,  F16 · F16,  F32 · F32, and (quants_k.h)
//   Q5_0 · Q8_0,  Q5_1 · Q8_1,  Q4_K, Q5_K, Q6_K · Q8_K.
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
// Q5_0, Q5_1 and the K-quants: quants_k.h.

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
void cols_q5_0_q8_0_avx2(int64_t n, const void *w, const void *x, size_t x_stride, const float *xd, int n_cols, float *out);
void cols_q5_1_q8_1_avx2(int64_t n, const void *w, const void *x, size_t x_stride, const float *xd, int n_cols, float *out);
// One quantized activation row (Q8_0 or Q8_1, n elements) -> its scales (n/QK, 2): d, s (0 for Q8_0).
void activation_scales(tensor_type t, const void *x, int64_t n, float *xd);
// xd of n_rows rows ((n_rows, nb, 2) as activation_scales writes them) -> xt (nb, 2, sts),
// sts >= n_rows + kTileOut, the padding zeroed.
void transpose_scales(const float *xd, int64_t n_rows, int64_t nb, float *xt, size_t sts);
// The multi-column kernel for a weight type at selected_simd_isa().
dot_cols_fn dot_cols_kernel(tensor_type weight);

// Register tiles: out[r * kTileOut + c] = dot(w_r, x_c) for nr weight rows w_r = w + r * ws
// bytes (1 <= nr <= the kernel's rows) and nc activation rows x_c = x + c * xs bytes (1 <= nc
// <= its columns), each weight block unpacked once for all the tile's tokens and each token's
// block loaded once for all its rows. Bit-identical to nr * nc separate dot_fn calls.
// xt: the activation rows' block scales as floats, transposed: xt[2 * b * sts + c] = d and
// xt[(2 * b + 1) * sts + c] = s (Q8_1; 0 for Q8_0) of block b and row c, from
// transpose_scales; kTileOut floats must be readable from any c < nc.
// xc: for the kernels with an offset k (tile_kernel_info), the activation rows' offset sums
// from offset_sums; the others ignore it.
constexpr int kTileOut = 16; // the row stride of a tile's out, and xt's padding
using tile_fn = void (*)(int64_t n, const void *w, size_t ws, int nr, const void *x, size_t xs, const float *xt,
                         size_t sts, const int32_t *xc, int nc, float *out);
// 256-bit tiles (tile_kernel.inc), AVX2 and AVX-512 without VNNI: 4 rows x 4 tokens.
// (A VNNI build of them measured 0.66 ns per block and token against the 512-bit tiles' 0.48 and
// was dropped.)
// 4 x 4 measured fastest on Zen 4 (AVX-512 VNNI and AVX2) against 2 x 4, 4 x 8, 6 x 4 and 8 x 4
// (docs/engine.md); 16 accumulators, and AVX-512VL's 32 vector registers hold them without spills.
constexpr int kTileRows = 4, kTileCols = 4; // the largest tile; smaller ones at the edges
#define AS_TILE_DECL(NAME) \
    void NAME(int64_t n, const void *w, size_t ws, int nr, const void *x, size_t xs, const float *xt, size_t sts, \
              const int32_t *xc, int nc, float *out);
AS_TILE_DECL(tile_q4_0_q8_0_avx2)
AS_TILE_DECL(tile_q4_1_q8_1_avx2)
AS_TILE_DECL(tile_q8_0_q8_0_avx2)
AS_TILE_DECL(tile_q4_0_q8_0_avx512)
AS_TILE_DECL(tile_q4_1_q8_1_avx512)
AS_TILE_DECL(tile_q8_0_q8_0_avx512)
AS_TILE_DECL(tile_q5_0_q8_0_avx2)
AS_TILE_DECL(tile_q5_1_q8_1_avx2)
AS_TILE_DECL(tile_q5_0_q8_0_avx512)
AS_TILE_DECL(tile_q5_1_q8_1_avx512)
// 512-bit tiles (tile_zmm.cpp), AVX-512 VNNI: two weight rows per vector, up to kZmmTileRows
// rows x kZmmTileCols tokens. The signed formats (Q4_0, Q5_0, Q8_0) take offset sums xc and run
// 4 rows x 8 tokens (each token's loads serve two row pairs: 2-7% faster on a Gemma 3 270M
// prompt, mostly Q5_0, in alternating runs on a noisy machine); those with a min (Q4_1, Q5_1)
// stay 2 x 16, whose min terms fill a vector per row (4 x 8 measured no better on SmolLM2).
constexpr int kZmmSignedRows = 4, kZmmSignedCols = 8, kZmmMinRows = 2, kZmmMinCols = 16;
constexpr int kZmmTileRows = kZmmSignedRows > kZmmMinRows ? kZmmSignedRows : kZmmMinRows; // the bounds
constexpr int kZmmTileCols = kZmmSignedCols > kZmmMinCols ? kZmmSignedCols : kZmmMinCols; // of both
AS_TILE_DECL(tile_q4_0_q8_0_zmm)
AS_TILE_DECL(tile_q4_1_q8_1_zmm)
AS_TILE_DECL(tile_q8_0_q8_0_zmm)
AS_TILE_DECL(tile_q5_0_q8_0_zmm) // offset 16
AS_TILE_DECL(tile_q5_1_q8_1_zmm)
#undef AS_TILE_DECL
// What matmul needs to drive a tile kernel: the function, its largest shape, and the offset k
// of its xc (0: none).
struct tile_kernel_info {
    tile_fn fn = nullptr;
    int rows = 0, cols = 0;
    int offset = 0;
};
// The tile kernel for a weight type at selected_simd_isa(); fn is nullptr where there is none
// (the ref level, F16, F32): those go through dot_cols_kernel.
tile_kernel_info tile_kernel(tensor_type weight);
// xc[(c * nb + b) * 8 + j] = -k * (sum of bytes 4j..4j+3 of block b's quants) for n_rows Q8_0
// activation rows x + c * xs of nb blocks: the lane offsets of a signed weight taken as
// unsigned (Q4_0: k = 8, Q5_0: k = 16, Q8_0: k = 128).
void offset_sums(const void *x, int64_t n_rows, size_t xs, int64_t nb, int k, int32_t *xc);

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
float dot_q5_0_q8_0_avx512(int64_t n, const void *w, const void *x);
float dot_q5_1_q8_1_avx512(int64_t n, const void *w, const void *x);
float dot_q5_0_q8_0_avx512vnni(int64_t n, const void *w, const void *x);
float dot_q5_1_q8_1_avx512vnni(int64_t n, const void *w, const void *x);
void cols_q5_0_q8_0_avx512(int64_t n, const void *w, const void *x, size_t x_stride, const float *xd, int n_cols, float *out);
void cols_q5_1_q8_1_avx512(int64_t n, const void *w, const void *x, size_t x_stride, const float *xd, int n_cols, float *out);
void cols_q5_0_q8_0_avx512vnni(int64_t n, const void *w, const void *x, size_t x_stride, const float *xd, int n_cols, float *out);
void cols_q5_1_q8_1_avx512vnni(int64_t n, const void *w, const void *x, size_t x_stride, const float *xd, int n_cols, float *out);

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
