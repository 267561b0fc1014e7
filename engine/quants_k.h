// The 5-bit and K-quant block formats (ggml-compatible layouts) and their dot kernels:
//   Q5_0 · Q8_0, Q5_1 · Q8_1 (32-element blocks, a fifth bit per element in qh), and
//   Q4_K, Q5_K, Q6_K · Q8_K (256-element super-blocks with 6- or 8-bit sub-block scales).
// Most downloaded GGUF files mix these (a "Q4_K_M" file holds Q4_K and Q6_K matrices, and Q5_0
// or Q8_0 ones where a row is not a multiple of 256).
//
// note: the K-quant kernels sum in llama.cpp's AVX2 order: each super-block's products go
// into 8 exact int32 lanes (lane j takes bytes 4j..4j+3 of every 32-byte step, as maddubs +
// madd lay them out), converted to float and added into 8 float lanes by one fma with the
// super-block scale; the mins term (Q4_K, Q5_K) runs in a chain of its own; hsum8 at the end.
// (Q6_K's -32 offset is taken inside each lane, as llama-cpp-python 0.3.16's llama.cpp does.)
// The *_ref kernels are that order written out in scalar code, so every level gives the same
// bits, and a Q4_K_M, Q5_K_M or Q6_K file's logits are llama.cpp's AVX2 build's bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/quants.h"

namespace actorserve {

constexpr int QK_K = 256; // elements per K-quant super-block

struct block_q5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[16]; };      // x = (q - 16) * d
struct block_q5_1 { uint16_t d, m; uint8_t qh[4]; uint8_t qs[16]; };   // x = q * d + m
// q = low nibble (byte j: element j low, j+16 high, as Q4_0) + 16 * bit i of qh for element i
static_assert(sizeof(block_q5_0) == 22 && sizeof(block_q5_1) == 24);

// 8 sub-blocks of 32; sub-block s: x = (d * sc_s) * q - (dmin * m_s), sc and m 6-bit, packed
// in scales[12] (k_scales unpacks them). qs: 32-byte steps j = 0..3, low nibbles sub-block 2j,
// high nibbles 2j+1.
struct block_q4_k { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[128]; };
// as Q4_K, plus the fifth bit: element e of step j's low half has bit 2j of qh[e % 32], its
// high half bit 2j+1
struct block_q5_k { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; };
// 16 sub-blocks of 16, x = (d * scales_s) * (q - 32), q 6-bit: low 4 bits in ql, high 2 in qh
struct block_q6_k { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint16_t d; };
// activations: x = q * d, bsums[i] = sum of q over elements 16i..16i+15
struct block_q8_k { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; };
static_assert(sizeof(block_q4_k) == 144 && sizeof(block_q5_k) == 176);
static_assert(sizeof(block_q6_k) == 210 && sizeof(block_q8_k) == 292);

// The 8 scales then the 8 mins of a Q4_K / Q5_K super-block, each 0..63.
void k_scales(const uint8_t packed[12], uint8_t out[16]);

// Weight rows -> float (n elements; n a multiple of the block length). Each value is computed
// as ggml's dequantize_row_* computes it, so the bits are the same.
void dequantize_row_q5_0(const block_q5_0 *x, float *y, int64_t n);
void dequantize_row_q5_1(const block_q5_1 *x, float *y, int64_t n);
void dequantize_row_q4_k(const block_q4_k *x, float *y, int64_t n);
void dequantize_row_q5_k(const block_q5_k *x, float *y, int64_t n);
void dequantize_row_q6_k(const block_q6_k *x, float *y, int64_t n);

// Activations x (n,) -> Q8_K: d = max / -127 with max the element of largest magnitude (the
// first on a tie), q = min(127, round_to_even(x * -127 / max)), byte for byte ggml's.
void quantize_row_q8_k(const float *x, block_q8_k *y, int64_t n);
void quantize_row_q8_k_ref(const float *x, block_q8_k *y, int64_t n);  // the two behind it,
void quantize_row_q8_k_avx2(const float *x, block_q8_k *y, int64_t n); // every byte the same

// Dots, w a weight row, x an activation row of the paired format (n elements).
float dot_q5_0_q8_0_ref(int64_t n, const void *w, const void *x);
float dot_q5_1_q8_1_ref(int64_t n, const void *w, const void *x);
float dot_q4_k_q8_k_ref(int64_t n, const void *w, const void *x);
float dot_q5_k_q8_k_ref(int64_t n, const void *w, const void *x);
float dot_q6_k_q8_k_ref(int64_t n, const void *w, const void *x);
float dot_q5_0_q8_0_avx2(int64_t n, const void *w, const void *x);
float dot_q5_1_q8_1_avx2(int64_t n, const void *w, const void *x);
float dot_q4_k_q8_k_avx2(int64_t n, const void *w, const void *x);
float dot_q5_k_q8_k_avx2(int64_t n, const void *w, const void *x);
float dot_q6_k_q8_k_avx2(int64_t n, const void *w, const void *x);

// Register tiles (tile_k.cpp), the tile_fn of quants.h for Q8_K tokens (xt, sts and xc unused:
// the token's scale is a float in its block): up to kKTileRows (AVX2) or kKTileRowsWide
// (AVX-512VL, 32 registers) rows x kKTileCols tokens, each output the one-row kernel's bits.
constexpr int kKTileRows = 2, kKTileRowsWide = 4, kKTileCols = 4;
#define AS_KTILE_DECL(NAME) \
    void NAME(int64_t n, const void *w, size_t ws, int nr, const void *x, size_t xs, const float *xt, size_t sts, \
              const int32_t *xc, int nc, float *out);
AS_KTILE_DECL(tile_q4_k_q8_k_avx2)
AS_KTILE_DECL(tile_q5_k_q8_k_avx2)
AS_KTILE_DECL(tile_q6_k_q8_k_avx2)
AS_KTILE_DECL(tile_q4_k_q8_k_avx512)
AS_KTILE_DECL(tile_q5_k_q8_k_avx512)
AS_KTILE_DECL(tile_q6_k_q8_k_avx512)
#undef AS_KTILE_DECL

// The 512-bit VNNI kernel (tile_k_zmm.cpp), tokens in the lanes: kzmm_pack writes token tile
// `tile` (tokens 16 tile .. 16 tile + 15 of xq, zeros past n_tok) as kKzWords int32 per
// super-block: the Q8_K bytes as int16 pairs transposed (word 16 j + c is token c's pair j),
// the 16 scales, the bsum pairs of the mins term. A kzmm_fn takes nr <= kKzRows weight rows and
// the pack from a tile's start, and writes y[t * ys + r] for t < n_tok <= kKzMaxTokens, r < nr:
// each output the one-row kernel's bits. kzmm_kernel is null unless the level is avx512vnni.
constexpr int kKzTokens = 16, kKzRows = 16, kKzMaxTokens = 64;
constexpr size_t kKzWords = kKzTokens * (QK_K / 2 + 1 + 4);
void kzmm_pack(const void *xq, size_t x_row, int64_t n_tok, int64_t nb, int64_t tile, int32_t *pack);
using kzmm_fn = void (*)(int64_t n, const void *w, size_t ws, int nr, const int32_t *pack, int64_t n_tok, float *y, size_t ys);
kzmm_fn kzmm_kernel(tensor_type t);

} // namespace actorserve
