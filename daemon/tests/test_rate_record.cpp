// A fabric's record of each flow's bytes over simulated time (`simnic
// fabric rates`, daemon/src/rate_record.h): bins, rates, the reply's bound,
// and the record's own bound, which coarsens it without losing a byte.
#include <catch2/catch.hpp>

#include "../src/rate_record.h"

using simnic::daemon::RateRecord;

namespace {
constexpr std::uint64_t kUs = 1'000'000;  // ps
}

TEST_CASE("rate record: bytes per bin per flow, as Gb/s over the bin asked for", "[rates]") {
    RateRecord rec(10 * kUs, 1000);
    rec.count(1, 0, 0, 1250);            // h1 -> h0, bin 0
    rec.count(1, 0, 9 * kUs, 1250);      // still bin 0
    rec.count(1, 0, 25 * kUs, 2500);     // bin 2
    rec.count(0, 1, 15 * kUs, 125);      // h0 -> h1, bin 1
    const RateRecord::Rates r = rec.rates(10 * kUs, 1000);
    CHECK(r.bin_ps == 10 * kUs);
    CHECK(r.bins == 3);
    REQUIRE(r.flows.size() == 2);
    // By (from, to): h0 -> h1 first.
    CHECK(r.flows[0].from == 0);
    CHECK(r.flows[0].to == 1);
    CHECK(r.flows[0].gbps == std::vector<double>{0, 0.1, 0});  // 125 B in 10 us
    CHECK(r.flows[1].gbps == std::vector<double>{2, 0, 2});     // 2500 B in 10 us
    CHECK(r.flows[1].bytes == 5000);
    // 25 us asked: whole bins of the record, 30 us.
    const RateRecord::Rates w = rec.rates(25 * kUs, 1000);
    CHECK(w.bin_ps == 30 * kUs);
    CHECK(w.bins == 1);
    CHECK(w.flows[1].gbps.front() == Approx(5000 * 8 / 30e3));
}

TEST_CASE("rate record: a reply holds at most the numbers it may, in wider bins", "[rates]") {
    RateRecord rec(10 * kUs, 1 << 20);
    for (std::uint64_t b = 0; b < 1000; ++b) {
        rec.count(1, 0, b * 10 * kUs, 100);
        rec.count(2, 0, b * 10 * kUs, 100);
    }
    const RateRecord::Rates r = rec.rates(10 * kUs, 500);  // 2 flows: 250 bins each at most
    CHECK(r.bins <= 250);
    CHECK(r.bin_ps == 40 * kUs);
    for (const RateRecord::Flow& f : r.flows) {
        CHECK(f.bytes == 100'000);
        CHECK(f.gbps.front() == Approx(0.08));  // 100 B per 10 us
    }
}

TEST_CASE("rate record: at its bound every flow's bins merge in pairs, no byte lost", "[rates]") {
    RateRecord rec(10 * kUs, 64);
    std::uint64_t sent = 0;
    // Two flows for 1 ms of simulated time, a frame each every 5 us: 100
    // bins of 10 us each, 200 in all, over the bound of 64; merged twice
    // (100 in all, then 50), to bins of 40 us.
    for (std::uint64_t us = 0; us < 1000; us += 5) {
        rec.count(1, 0, us * kUs, 1000);
        rec.count(2, 0, us * kUs, 500);
        sent += 1500;
    }
    CHECK(rec.bin_ps() == 40 * kUs);
    CHECK(rec.cells() == 50);
    const RateRecord::Rates r = rec.rates(10 * kUs, 1000);
    CHECK(r.bin_ps == 40 * kUs);  // no finer than the record now is
    REQUIRE(r.flows.size() == 2);
    CHECK(r.flows[0].bytes + r.flows[1].bytes == sent);
    // Every bin of h1's: 8 frames of 1000 B in 40 us.
    for (std::size_t b = 0; b < r.bins; ++b) CHECK(r.flows[0].gbps[b] == Approx(1.6));
    // Counting goes on at the coarser bin; at 2 ms h1 has 51 bins and h2
    // 25, over the bound again: bins of 80 us.
    rec.count(1, 0, 2000 * kUs, 8000);
    CHECK(rec.bin_ps() == 80 * kUs);
    CHECK(rec.rates(10 * kUs, 1000).flows[0].gbps.back() == Approx(0.8));
}
