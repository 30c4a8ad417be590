// The stage latency histogram against sorted samples: exact below 128,
// within 1/128 above, min and max exact, quantiles clamped to them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "simnic/model/histogram.h"

using simnic::model::Histogram;

namespace {
// The exact quantile with the histogram's rank convention.
uint64_t exact(std::vector<uint64_t> v, double f) {
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, size_t(f * double(v.size())))];
}
}  // namespace

TEST_CASE("histogram: small values are exact, large ones within 1/128", "[model][histogram]") {
    Histogram h;
    CHECK(h.count() == 0);
    CHECK(h.quantile(0.5) == 0);
    CHECK(h.min() == 0);
    std::vector<uint64_t> small;
    for (uint64_t v = 0; v < 128; ++v) {
        h.add(v);
        small.push_back(v);
    }
    for (double f : {0.0, 0.1, 0.5, 0.99, 1.0}) CHECK(h.quantile(f) == exact(small, f));

    std::mt19937_64 rng(7);
    for (uint64_t range : {uint64_t(1000), uint64_t(4'000'000), uint64_t(1) << 40}) {
        Histogram g;
        std::vector<uint64_t> v;
        for (int i = 0; i < 5000; ++i) {
            const uint64_t x = 1 + rng() % range;
            g.add(x);
            v.push_back(x);
        }
        CHECK(g.count() == v.size());
        CHECK(g.min() == *std::min_element(v.begin(), v.end()));
        CHECK(g.max() == *std::max_element(v.begin(), v.end()));
        for (double f : {0.01, 0.5, 0.9, 0.99}) {
            const double want = double(exact(v, f)), got = double(g.quantile(f));
            INFO("range " << range << " quantile " << f);
            CHECK(got == Approx(want).epsilon(1.0 / 128));
        }
    }
}

TEST_CASE("histogram: equal samples give their value exactly, clear forgets", "[model][histogram]") {
    Histogram h;
    for (int i = 0; i < 100; ++i) h.add(85'608'960);  // one value, far above the exact range
    CHECK(h.quantile(0.5) == 85'608'960);
    CHECK(h.quantile(0.99) == 85'608'960);
    CHECK(h.sum() == 100ull * 85'608'960);
    h.add(12'910'400);
    CHECK(h.min() == 12'910'400);
    CHECK(h.quantile(0.0) == 12'910'400);
    CHECK(h.quantile(0.5) == 85'608'960);
    h.clear();
    CHECK(h.count() == 0);
    CHECK(h.max() == 0);
}
