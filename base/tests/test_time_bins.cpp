// Bounded records in bins of time (time_bins.h): pairs merge in place by the
// record's rule, and tables widen to what the reader can take.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "simnic/base/time_bins.h"

using simnic::base::bins_per_table_bin;
using simnic::base::merge_bin_pairs;

TEST_CASE("time bins: pairs merge in place by the record's rule, an odd last bin whole", "[time_bins]") {
    std::vector<std::uint64_t> bytes{1, 2, 3, 4, 5};
    merge_bin_pairs(bytes, [](std::uint64_t a, std::uint64_t b) { return a + b; });
    CHECK(bytes == std::vector<std::uint64_t>{3, 7, 5});

    std::vector<std::uint64_t> peak{9, 2, 3, 8};
    merge_bin_pairs(peak, [](std::uint64_t a, std::uint64_t b) { return std::max(a, b); });
    CHECK(peak == std::vector<std::uint64_t>{9, 8});

    // The later bin wins: merge(earlier, later) in that order.
    std::vector<int> state{1, 2, 3, 4};
    merge_bin_pairs(state, [](int, int later) { return later; });
    CHECK(state == std::vector<int>{2, 4});

    std::vector<int> none;
    merge_bin_pairs(none, [](int a, int) { return a; });
    CHECK(none.empty());
}

TEST_CASE("time bins: a table's bins are whole bins of the record, widened to the points the reader takes",
          "[time_bins]") {
    // 25 ps asked of 10 ps bins: 3 bins (30 ps), rounded up.
    CHECK(bins_per_table_bin(25, 10, 100, 2, 1000) == 3);
    // Nothing asked: one bin of the record.
    CHECK(bins_per_table_bin(0, 10, 100, 2, 1000) == 1);
    // 4 series over 1000 bins in at most 400 numbers: 100 a series, 10 bins each.
    CHECK(bins_per_table_bin(1, 10, 1000, 4, 400) == 10);
    // Three numbers a bin (Rc, Rt, alpha): a third as many bins.
    CHECK(bins_per_table_bin(1, 10, 1000, 4, 1200, 3) == 10);
    // A reader that takes fewer numbers than series: one bin of all.
    CHECK(bins_per_table_bin(1, 10, 1000, 4, 2) == 1000);
    // No series: what was asked.
    CHECK(bins_per_table_bin(25, 10, 1000, 0, 2) == 3);
}
