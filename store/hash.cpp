#include "store/hash.h"

#include <bit>
#include <cstring>

namespace actorserve {
namespace {

struct sip_state {
    uint64_t v0, v1, v2, v3;

    void round() {
        v0 += v1; v1 = std::rotl(v1, 13); v1 ^= v0; v0 = std::rotl(v0, 32);
        v2 += v3; v3 = std::rotl(v3, 16); v3 ^= v2;
        v0 += v3; v3 = std::rotl(v3, 21); v3 ^= v0;
        v2 += v1; v1 = std::rotl(v1, 17); v1 ^= v2; v2 = std::rotl(v2, 32);
    }
    void compress(uint64_t m) {
        v3 ^= m;
        round(); round();
        v0 ^= m;
    }
};

uint64_t load_le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

// Absorbs the message: 8-byte little-endian words, then the tail word with the length in its top byte.
sip_state absorb(std::string_view data, uint64_t k0, uint64_t k1, bool wide) {
    sip_state s{k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull,
                k0 ^ 0x6c7967656e657261ull, k1 ^ 0x7465646279746573ull};
    if (wide) s.v1 ^= 0xee;
    const auto *p = reinterpret_cast<const unsigned char *>(data.data());
    const size_t n = data.size();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) s.compress(load_le64(p + i));
    uint64_t last = static_cast<uint64_t>(n & 0xff) << 56;
    for (size_t j = 0; i + j < n; ++j) last |= static_cast<uint64_t>(p[i + j]) << (8 * j);
    s.compress(last);
    return s;
}

} // namespace

uint64_t siphash64(std::string_view data, uint64_t k0, uint64_t k1) {
    sip_state s = absorb(data, k0, k1, false);
    s.v2 ^= 0xff;
    for (int r = 0; r < 4; ++r) s.round();
    return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

hash128 siphash128(std::string_view data, uint64_t k0, uint64_t k1) {
    sip_state s = absorb(data, k0, k1, true);
    s.v2 ^= 0xee;
    for (int r = 0; r < 4; ++r) s.round();
    hash128 h;
    h.lo = s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
    s.v1 ^= 0xdd;
    for (int r = 0; r < 4; ++r) s.round();
    h.hi = s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
    return h;
}

} // namespace actorserve
