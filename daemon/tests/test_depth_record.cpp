// A fabric's record of each switch egress queue's depth over simulated time
// (`simnic fabric depth`, daemon/src/depth_record.h): the deepest per bin,
// a depth held across bins with no change and up to the time read, and the
// bound, which coarsens the record but keeps every peak.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "../src/depth_record.h"

using simnic::daemon::DepthRecord;

namespace {
constexpr std::uint64_t kUs = 1'000'000;  // ps
}

TEST_CASE("depth record: each bin's deepest, a depth held until it changes and up to the time read",
          "[depth]") {
    DepthRecord rec(10 * kUs, 1000);
    CHECK(rec.depths(10 * kUs, 1000, 50 * kUs).bins == 0);  // no queue has held a frame
    rec.set(0, 2, 3, 12 * kUs, 4000);  // switch 0 port 2 prio 3: bin 1
    rec.set(0, 2, 3, 14 * kUs, 9000);
    rec.set(0, 2, 3, 18 * kUs, 1000);  // peak 9000 in bin 1, holds 1000 after it
    rec.set(0, 2, 3, 43 * kUs, 0);     // bins 2 and 3 held 1000; bin 4 starts at 1000
    rec.set(1, 0, 0, 5 * kUs, 64);     // another switch: still 64 at the time read
    const DepthRecord::Depths d = rec.depths(10 * kUs, 1000, 65 * kUs);
    CHECK(d.bin_ps == 10 * kUs);
    REQUIRE(d.bins == 7);  // 0..65 us
    REQUIRE(d.queues.size() == 2);
    CHECK(d.queues[0].sw == 0);
    CHECK(d.queues[0].port == 2);
    CHECK(d.queues[0].prio == 3);
    CHECK(d.queues[0].now_bytes == 0);
    CHECK(d.queues[0].peak == std::vector<std::uint64_t>{0, 9000, 1000, 1000, 1000, 0, 0});
    CHECK(d.queues[1].sw == 1);
    CHECK(d.queues[1].now_bytes == 64);
    CHECK(d.queues[1].peak == std::vector<std::uint64_t>{64, 64, 64, 64, 64, 64, 64});
    // 25 us asked: whole bins of the record (30 us), each the deepest of its three.
    const DepthRecord::Depths w = rec.depths(25 * kUs, 1000, 65 * kUs);
    CHECK(w.bin_ps == 30 * kUs);
    REQUIRE(w.bins == 3);
    CHECK(w.queues[0].peak == std::vector<std::uint64_t>{9000, 1000, 0});
    // At most 4 numbers for 2 queues: two bins each, 40 us wide.
    const DepthRecord::Depths n = rec.depths(10 * kUs, 4, 65 * kUs);
    CHECK(n.bin_ps == 40 * kUs);
    CHECK(n.bins == 2);
    CHECK(n.queues[0].peak == std::vector<std::uint64_t>{9000, 1000});
}

TEST_CASE("depth record: at its bound the bins merge in pairs and every peak stays", "[depth]") {
    DepthRecord rec(10 * kUs, 100);
    // A queue that fills to b * 100 bytes in the middle of bin b and
    // drains at its end, for 300 bins: past the bound twice.
    for (std::uint64_t b = 0; b < 300; ++b) {
        rec.set(0, 1, 3, b * 10 * kUs + 5 * kUs, b * 100);
        rec.set(0, 1, 3, b * 10 * kUs + 9 * kUs, 0);
    }
    CHECK(rec.bin_ps() == 40 * kUs);
    CHECK(rec.cells() <= 100);
    const DepthRecord::Depths d = rec.depths(10 * kUs, 1000, 3000 * kUs - 1);
    CHECK(d.bin_ps == 40 * kUs);
    REQUIRE(d.bins == 75);
    for (std::size_t i = 0; i < d.bins; ++i) CHECK(d.queues[0].peak[i] == (4 * i + 3) * 100);  // the last of each four
    CHECK(*std::max_element(d.queues[0].peak.begin(), d.queues[0].peak.end()) == 29900);
}
