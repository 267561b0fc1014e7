// IEEE half <-> float, bit-exact and portable (round to nearest even on the way down).
// note: not on a hot path: weights in F16 are converted per block and activations once
// per matmul; the kernels' SIMD variants use F16C where the CPU has it.
#pragma once

#include <cstdint>
#include <cstring>

namespace actorserve {

inline float fp16_to_fp32(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13); // inf / nan
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (man << 13); // normal: rebias 15 -> 127
    } else if (man == 0) {
        bits = sign; // zero
    } else {
        // subnormal half: normalise the mantissa
        int e = -1;
        do { ++e; man <<= 1; } while ((man & 0x400u) == 0);
        bits = sign | (static_cast<uint32_t>(112 - e) << 23) | ((man & 0x3ffu) << 13);
    }
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

inline uint16_t fp32_to_fp16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, sizeof x);
    const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
    const uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) // inf or nan (keep nan quiet)
        return static_cast<uint16_t>(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
    if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u); // rounds to inf
    if (ax < 0x38800000u) {
        // result is subnormal or zero: shift with round-to-nearest-even
        if (ax < 0x33000000u) return sign; // below half the smallest subnormal
        const uint32_t e = ax >> 23;
        const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126 - e; // 14..24
        uint32_t r = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1u))) ++r;
        return static_cast<uint16_t>(sign | r);
    }
    // normal: rebias and round the 13 dropped mantissa bits to nearest even
    uint32_t r = ((ax - 0x38000000u) >> 13);
    const uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
}


} // namespace actorserve
