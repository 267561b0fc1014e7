// SipHash-2-4 (Aumasson & Bernstein), 64- and 128-bit outputs, for cache keys and file checksums.
//
// note: SipHash is a keyed PRF; here the key is a fixed constant, so it is used as a strong
// general hash (no known collisions to aim at), not as a defence against an adversary who knows
// the key. The caches still compare the full key after a hash match, so a collision can cost a
// probe but never returns the wrong entry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace actorserve {

struct hash128 {
    uint64_t lo = 0, hi = 0;
    bool operator==(const hash128 &) const = default;
};

// cost: about 1.5 cycles per byte plus ~100 cycles of finalisation.
uint64_t siphash64(std::string_view data, uint64_t k0 = 0x0706050403020100ull, uint64_t k1 = 0x0f0e0d0c0b0a0908ull);
hash128 siphash128(std::string_view data, uint64_t k0 = 0x0706050403020100ull, uint64_t k1 = 0x0f0e0d0c0b0a0908ull);

} // namespace actorserve
