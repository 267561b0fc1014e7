// The prefix cache alone, on blocks of 4 tokens: a block is found only after the same parent
// with the same tokens, a prompt matches the chain of its leading full blocks and never its
// last token, and a removed block takes the rest of its chain out of reach.
#include "scheduling/prefix_cache.h"

#include <doctest/doctest.h>

#include <vector>

using namespace actorserve;

namespace {
using ids = std::vector<int32_t>;
}

TEST_CASE("prefix cache: a block is found under its parent and its tokens, nothing else") {
    prefix_cache c(8, 4);
    CHECK(c.size() == 0);
    CHECK(c.find(0, ids{1, 2, 3, 4}) == -1);
    const uint64_t first = c.add(5, 0, ids{1, 2, 3, 4});
    CHECK(first != 0);
    CHECK(c.content(5) == first);
    CHECK(c.content(4) == 0);
    CHECK(c.find(0, ids{1, 2, 3, 4}) == 5);
    CHECK(c.find(0, ids{1, 2, 3, 5}) == -1);     // other tokens
    CHECK(c.find(first, ids{1, 2, 3, 4}) == -1); // the same tokens after another block
    const uint64_t second = c.add(2, first, ids{1, 2, 3, 4});
    CHECK(second != first);
    CHECK(c.find(first, ids{1, 2, 3, 4}) == 2);
    CHECK(c.size() == 2);
}

TEST_CASE("prefix cache: a prompt matches its leading chain, leaving its last token to compute") {
    prefix_cache c(8, 4);
    const uint64_t a = c.add(0, 0, ids{1, 2, 3, 4});
    const uint64_t b = c.add(1, a, ids{5, 6, 7, 8});
    c.add(2, b, ids{9, 10, 11, 12});
    CHECK(c.match(ids{}) == ids{});
    CHECK(c.match(ids{1, 2, 3}) == ids{});
    CHECK(c.match(ids{1, 2, 3, 4}) == ids{});        // the last token is always computed
    CHECK(c.match(ids{1, 2, 3, 4, 5}) == ids{0});
    CHECK(c.match(ids{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}) == ids{0, 1});
    CHECK(c.match(ids{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}) == ids{0, 1, 2});
    CHECK(c.match(ids{1, 2, 3, 4, 5, 6, 7, 0, 9, 10, 11, 12, 13}) == ids{0}); // diverges in block 2
    CHECK(c.match(ids{5, 6, 7, 8, 1}) == ids{});     // block 1's tokens, but not after block 0
}

TEST_CASE("prefix cache: a removed block is gone, and so is the chain after it") {
    prefix_cache c(8, 4);
    const uint64_t a = c.add(0, 0, ids{1, 2, 3, 4});
    c.add(1, a, ids{5, 6, 7, 8});
    c.remove(0);
    CHECK(c.content(0) == 0);
    CHECK(c.size() == 1);
    CHECK(c.match(ids{1, 2, 3, 4, 5, 6, 7, 8, 9}) == ids{});
    // Block 0 registered again holds the same tokens under a new content id: the old chain
    // (block 1, registered after the old id) stays out of reach.
    const uint64_t again = c.add(0, 0, ids{1, 2, 3, 4});
    CHECK(again != a);
    CHECK(c.match(ids{1, 2, 3, 4, 5, 6, 7, 8, 9}) == ids{0});
}

TEST_CASE("prefix cache: blocks whose hashes share a bucket are told apart by their tokens") {
    // Many registrations in 64 blocks: every lookup returns the block added for exactly those
    // tokens after exactly that parent, whatever buckets they share.
    prefix_cache c(64, 4);
    std::vector<uint64_t> content(64);
    for (int32_t b = 0; b < 64; ++b) {
        const uint64_t parent = b == 0 ? 0 : content[static_cast<size_t>(b - 1)];
        content[static_cast<size_t>(b)] = c.add(b, parent, ids{b % 3, b % 5, b % 7, 1});
    }
    for (int32_t b = 0; b < 64; ++b) {
        const uint64_t parent = b == 0 ? 0 : content[static_cast<size_t>(b - 1)];
        CHECK(c.find(parent, ids{b % 3, b % 5, b % 7, 1}) == b);
        CHECK(c.find(parent, ids{b % 3, b % 5, b % 7, 2}) == -1);
    }
}
