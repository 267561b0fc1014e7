#include <doctest/doctest.h>

#include "cache/vector_scan.h"
#include "engine/fp16.h"

#include <cmath>
#include <random>
#include <vector>

using namespace actorserve;

namespace {

std::vector<float> unit_vector(std::mt19937 &rng, int dim) {
    std::normal_distribution<float> g;
    std::vector<float> v(static_cast<size_t>(dim));
    double n = 0;
    for (float &x : v) x = g(rng), n += double(x) * x;
    for (float &x : v) x = float(x / std::sqrt(n));
    return v;
}

} // namespace

// The selected SIMD path (run under ACTORSERVE_SIMD=ref|avx2|avx512 to pick one) against the
// plain loop, and the half scores against the fp32 products they stand for.
TEST_CASE("half_scores: every path agrees with the plain loop and stays within the slack of fp32") {
    std::mt19937 rng(42);
    for (int dim : {384, 16, 20, 7}) {
        CAPTURE(dim);
        const size_t n = 37;   // odd: the AVX-512 path's pair loop and its tail
        const std::vector<float> q = unit_vector(rng, dim);
        std::vector<std::vector<float>> xs;
        std::vector<uint16_t> codes;
        for (size_t i = 0; i < n; ++i) {
            xs.push_back(unit_vector(rng, dim));
            if (i == 3) xs.back() = q;   // one exact match: the largest product
            for (float x : xs.back()) codes.push_back(fp32_to_fp16(x));
        }
        std::vector<float> fast(n), ref(n);
        half_scores(q.data(), codes.data(), n, dim, fast.data());
        half_scores_ref(q.data(), codes.data(), n, dim, ref.data());
        for (size_t i = 0; i < n; ++i) {
            CAPTURE(i);
            CHECK(fast[i] == doctest::Approx(ref[i]).epsilon(1e-5));
            double exact = 0;
            for (int j = 0; j < dim; ++j) exact += double(q[size_t(j)]) * xs[i][size_t(j)];
            CHECK(std::fabs(fast[i] - exact) <= kHalfScoreSlack);
        }
        CHECK(fast[3] == doctest::Approx(1.0).epsilon(1e-3));
    }
}

TEST_CASE("half_scores: nothing to score writes nothing") {
    const float q[16] = {};
    float out = 5.0f;
    half_scores(q, nullptr, 0, 16, &out);
    CHECK(out == 5.0f);
}
