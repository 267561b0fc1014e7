// The K-quants' 512-bit VNNI kernel (declared in quants_k.h): 16 tokens in the lanes.
//
// The one-row kernel's bits (quants_k.cpp) are fixed by its 8 int32 lanes per super-block,
// lane l holding the scaled products of bytes 4l..4l+3 of each 32-byte step, then one
// conversion and one fma per lane with the super-block scale, and the mins chain. The lane sums
// are exact integers, so any instruction that forms the same integers gives the same bits.
// Here each weight row's super-block is widened once into int16 products scale * quant (the
// sub-block scale folded in, so nothing is multiplied after the dot), and the tokens once into
// int16 pairs transposed so that one load holds the same pair of 16 tokens. Then one vpdpwssd
// adds 2 products for each of 16 tokens into register l of a row: the 8 lane registers of a
// row are the one-row kernel's 8 lanes, token by token. 32 products per instruction, against
// 32 per three (maddubs, madd with the scale, add) in the 256-bit tiles.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "engine/quants.h"
#include "engine/quants_k.h"
#include "engine/simd_avx2.h"
#include "engine/tile_k_format.h"

// GCC 12's avx512fintrin.h starts results from _mm512_undefined_*() (a self-initialised
// variable), which -Wuninitialized reports at every use; every lane is written.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#define AS_KZMM __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))

namespace actorserve {

namespace {

using kfmt::kformat;
using simd::h2f;

constexpr int kPairs = QK_K / 2;              // int16 pairs per super-block
constexpr int kWordD = kKzTokens * kPairs;    // the tokens' scales
constexpr int kWordMins = kWordD + kKzTokens; // 4 pairs of bsum pairs per token

// One weight row's super-block ready for vpdpwssd.
struct alignas(64) krow {
    int32_t w[kPairs]; // (scale * quant) int16 pairs in element order
    int32_t mins[4];   // (min 2m, min 2m+1) int16 pairs, as _mm_madd_epi16 pairs them
    float d, dmin;
};

template <class W> AS_KZMM void repack(const W &wb, krow &k) {
    using F = kformat<W>;
    alignas(16) uint8_t sm[16];
    if constexpr (F::kMins) k_scales(wb.scales, sm);
    for (int i = 0; i < 8; ++i) {
        __m512i q = _mm512_cvtepu8_epi16(F::quants(wb, i));
        __m512i s;
        if constexpr (F::kOffset) {
            q = _mm512_sub_epi16(q, _mm512_set1_epi16(32));
            const int j = 8 * (i / 4) + 2 * (i % 4); // the step's two 16-element sub-blocks
            s = _mm512_inserti64x4(_mm512_set1_epi16(wb.scales[j]), _mm256_set1_epi16(wb.scales[j + 1]), 1);
        } else {
            s = _mm512_set1_epi16(sm[i]);
        }
        _mm512_store_si512(k.w + 16 * i, _mm512_mullo_epi16(q, s)); // |product| <= 4096: exact
    }
    k.d = h2f(wb.d);
    k.dmin = 0.0f;
    if constexpr (F::kMins) {
        for (int m = 0; m < 4; ++m) k.mins[m] = static_cast<int32_t>(sm[8 + 2 * m] | (sm[9 + 2 * m] << 16));
        k.dmin = h2f(wb.dmin);
    }
}

// acc + the int16 pair products of x and the pair at w broadcast, with the broadcast folded into
// the instruction's memory operand (GCC 12 emits a separate vpbroadcastd for the intrinsic).
AS_KZMM inline __m512i dpwssd_bcast(__m512i acc, __m512i x, const int32_t *w) {
    asm("vpdpwssd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(x), "m"(*w));
    return acc;
}

// One (token tile, super-block) step for R rows (1 or 2, so that the 8 R integer lanes and the
// token pairs fit in the 32 registers): the lanes, then their one fma each into the float lanes
// (memory: acc[r][l], acc_m[r][m]).
template <class W, int R>
AS_KZMM inline void kstep(const krow *const *k, const int32_t *x, __m512 *const *acc, __m512 *const *acc_m) {
    using F = kformat<W>;
    __m512i lane[R][8];
    _Pragma("GCC unroll 2") for (int r = 0; r < R; ++r)
        _Pragma("GCC unroll 8") for (int l = 0; l < 8; ++l) lane[r][l] = _mm512_setzero_si512();
    for (int s = 0; s < 8; ++s) {
        _Pragma("GCC unroll 16") for (int j = 0; j < 16; ++j) { // pair j of the step: lane j / 2
            const __m512i xv = _mm512_loadu_si512(x + 16 * (16 * s + j));
            _Pragma("GCC unroll 2") for (int r = 0; r < R; ++r)
                lane[r][j / 2] = dpwssd_bcast(lane[r][j / 2], xv, &k[r]->w[16 * s + j]);
        }
    }
    const __m512 xd = _mm512_loadu_ps(reinterpret_cast<const float *>(x + kWordD));
    _Pragma("GCC unroll 2") for (int r = 0; r < R; ++r) {
        const __m512 d = _mm512_mul_ps(xd, _mm512_set1_ps(k[r]->d)); // xb.d * d_w, as the scalar product
        _Pragma("GCC unroll 8") for (int l = 0; l < 8; ++l)
            acc[r][l] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(lane[r][l]), acc[r][l]);
        if constexpr (F::kMins) {
            const __m512i sign = _mm512_set1_epi32(static_cast<int32_t>(0x80000000u));
            const __m512 dmin = _mm512_mul_ps(_mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(xd), sign)),
                                              _mm512_set1_ps(k[r]->dmin)); // -xb.d * dmin_w
            __m512i pm[4];
            for (int m = 0; m < 4; ++m)
                pm[m] = _mm512_dpwssd_epi32(_mm512_setzero_si512(), _mm512_loadu_si512(x + kWordMins + 16 * m),
                                            _mm512_set1_epi32(k[r]->mins[m]));
            if constexpr (F::kMinsScalar) {
                const __m512i all = _mm512_add_epi32(_mm512_add_epi32(pm[0], pm[2]), _mm512_add_epi32(pm[1], pm[3]));
                acc_m[r][0] = _mm512_fmadd_ps(dmin, _mm512_cvtepi32_ps(all), acc_m[r][0]);
            } else {
                for (int m = 0; m < 4; ++m) acc_m[r][m] = _mm512_fmadd_ps(dmin, _mm512_cvtepi32_ps(pm[m]), acc_m[r][m]);
            }
        }
    }
}

// Up to kKzRows rows by up to kKzMaxTokens tokens, super-block by super-block: each row's block
// is widened once for all the tokens, and each tile's slice of the pack (8.5 KB) is read from L1
// by all the rows.
template <class W>
AS_KZMM void kzmm(int64_t nb, const uint8_t *w, size_t ws, int nr, const int32_t *pack, int64_t n_tok, float *y, size_t ys) {
    using F = kformat<W>;
    constexpr int kTiles = kKzMaxTokens / kKzTokens;
    const int tiles = static_cast<int>((n_tok + kKzTokens - 1) / kKzTokens);
    alignas(64) __m512 acc[kKzRows][kTiles][8], acc_m[kKzRows][kTiles][4];
    for (int r = 0; r < nr; ++r)
        for (int t = 0; t < tiles; ++t) {
            for (int l = 0; l < 8; ++l) acc[r][t][l] = _mm512_setzero_ps();
            for (int m = 0; m < 4; ++m) acc_m[r][t][m] = _mm512_setzero_ps();
        }
    krow k[kKzRows];
    for (int64_t b = 0; b < nb; ++b) {
        for (int r = 0; r < nr; ++r) repack(reinterpret_cast<const W *>(w + r * ws)[b], k[r]);
        for (int t = 0; t < tiles; ++t) {
            const int32_t *x = pack + (t * nb + b) * static_cast<int64_t>(kKzWords);
            int r = 0;
            for (; r + 2 <= nr; r += 2) {
                const krow *kk[2] = {&k[r], &k[r + 1]};
                __m512 *a[2] = {acc[r][t], acc[r + 1][t]}, *am[2] = {acc_m[r][t], acc_m[r + 1][t]};
                kstep<W, 2>(kk, x, a, am);
            }
            if (r < nr) {
                const krow *kk[1] = {&k[r]};
                __m512 *a[1] = {acc[r][t]}, *am[1] = {acc_m[r][t]};
                kstep<W, 1>(kk, x, a, am);
            }
        }
    }
    for (int r = 0; r < nr; ++r)
        for (int t = 0; t < tiles; ++t) {
            // hsum8's order (simd_avx2.h) lane by lane: ((0+4)+(2+6)) + ((1+5)+(3+7))
            const __m512 *a = acc[r][t];
            __m512 v = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a[0], a[4]), _mm512_add_ps(a[2], a[6])),
                                     _mm512_add_ps(_mm512_add_ps(a[1], a[5]), _mm512_add_ps(a[3], a[7])));
            const __m512 *m = acc_m[r][t];
            if constexpr (F::kMinsScalar) v = _mm512_add_ps(v, m[0]);
            else if constexpr (F::kMins) v = _mm512_add_ps(v, _mm512_add_ps(_mm512_add_ps(m[0], m[2]), _mm512_add_ps(m[1], m[3])));
            alignas(64) float out[kKzTokens];
            _mm512_store_ps(out, v);
            const int nc = static_cast<int>(std::min<int64_t>(kKzTokens, n_tok - t * kKzTokens));
            for (int c = 0; c < nc; ++c) y[static_cast<size_t>(t * kKzTokens + c) * ys + static_cast<size_t>(r)] = out[c];
        }
}

template <class W>
void kzmm_run(int64_t n, const void *w, size_t ws, int nr, const int32_t *pack, int64_t n_tok, float *y, size_t ys) {
    kzmm<W>(n / QK_K, static_cast<const uint8_t *>(w), ws, nr, pack, n_tok, y, ys);
}

} // namespace

AS_KZMM void kzmm_pack(const void *xq, size_t x_row, int64_t n_tok, int64_t nb, int64_t tile, int32_t *pack) {
    alignas(64) int32_t tmp[kKzTokens * kPairs];
    const __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                           _mm512_set1_epi32(kPairs));
    for (int64_t b = 0; b < nb; ++b) {
        int32_t *o = pack + (tile * nb + b) * static_cast<int64_t>(kKzWords);
        float *od = reinterpret_cast<float *>(o + kWordD);
        for (int c = 0; c < kKzTokens; ++c) {
            const int64_t t = tile * kKzTokens + c;
            if (t >= n_tok) {
                std::memset(tmp + c * kPairs, 0, kPairs * sizeof(int32_t));
                od[c] = 0.0f;
                for (int m = 0; m < 4; ++m) o[kWordMins + 16 * m + c] = 0;
                continue;
            }
            const block_q8_k &xb = reinterpret_cast<const block_q8_k *>(static_cast<const uint8_t *>(xq) + t * x_row)[b];
            for (int h = 0; h < 8; ++h)
                _mm512_store_si512(tmp + c * kPairs + 16 * h,
                                   _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(xb.qs + 32 * h))));
            od[c] = xb.d;
            for (int m = 0; m < 4; ++m) { // _mm_hadd_epi16's pair sums, then two of them per madd lane
                const uint16_t lo = static_cast<uint16_t>(xb.bsums[4 * m] + xb.bsums[4 * m + 1]);
                const uint16_t hi = static_cast<uint16_t>(xb.bsums[4 * m + 2] + xb.bsums[4 * m + 3]);
                o[kWordMins + 16 * m + c] = static_cast<int32_t>(lo | (static_cast<uint32_t>(hi) << 16));
            }
        }
        for (int j = 0; j < kPairs; ++j) _mm512_storeu_si512(o + 16 * j, _mm512_i32gather_epi32(idx, tmp + j, 4));
    }
}

kzmm_fn kzmm_kernel(tensor_type t) {
    if (selected_simd_isa() != simd_isa::avx512vnni) return nullptr;
    switch (t) {
    case tensor_type::q4_k: return kzmm_run<block_q4_k>;
    case tensor_type::q5_k: return kzmm_run<block_q5_k>;
    case tensor_type::q6_k: return kzmm_run<block_q6_k>;
    default: return nullptr;
    }
}

} // namespace actorserve
