// The record of reaction points over time (`simnic fabric dcqcn`): each bin
// holds the state at its end, values hold until the next, a QP's life is
// one track, and the bound merges bins in pairs keeping the later state.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "simnic/congestion/rp_record.h"

using namespace simnic::congestion;

namespace {
constexpr uint64_t kUs = 1000;
constexpr double kG = 1e9;
}  // namespace

TEST_CASE("RP record: a bin holds the state at its end, held until the next change, nothing before the "
          "QP began or after it ended",
          "[dcqcn]") {
    RpRecord rec(10 * kUs, 1 << 20);
    CHECK(rec.table(10 * kUs, 1000, 120 * kUs).bins == 0);  // no QP yet: no rows
    RpObserver* dev0 = rec.source(0);
    RpObserver* dev1 = rec.source(1);
    dev0->rp_begin(7, 25 * kUs);  // bin 2
    dev0->rp_rate(7, 25 * kUs, 100 * kG, 100 * kG);
    dev0->rp_alpha(7, 25 * kUs, 1.0);
    dev0->rp_rate(7, 41 * kUs, 50 * kG, 100 * kG);  // bin 4: two changes, the later one's state is kept
    dev0->rp_rate(7, 49 * kUs, 60 * kG, 100 * kG);
    dev0->rp_alpha(7, 80 * kUs, 0.5);  // told after a later rate change: each kind in its own order
    dev0->rp_rate(7, 96 * kUs, 70 * kG, 100 * kG);
    dev1->rp_begin(7, 0);  // the same QPN on another device: its own track
    dev1->rp_rate(7, 0, 100 * kG, 100 * kG);
    dev1->rp_alpha(7, 0, 1.0);
    dev1->rp_end(7, 33 * kUs);
    const RpRecord::Table t = rec.table(10 * kUs, 1000, 120 * kUs);
    CHECK(t.bin_ns == 10 * kUs);
    REQUIRE(t.bins == 13);  // up to 120 us: bins 0..12
    REQUIRE(t.tracks.size() == 2);
    const RpRecord::Track& a = t.tracks[0];
    CHECK(a.source == 0);
    CHECK(a.id == 7);
    CHECK(a.life == 1);
    CHECK(a.begin_ns == 25 * kUs);
    CHECK(!a.ended);
    const double rc[] = {NAN, NAN, 100, 100, 60, 60, 60, 60, 60, 70, 70, 70, 70};
    const double al[] = {NAN, NAN, 1, 1, 1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.5};
    for (size_t b = 0; b < t.bins; ++b) {
        INFO("bin " << b);
        if (std::isnan(rc[b])) {
            CHECK(std::isnan(a.rc_bps[b]));
            CHECK(std::isnan(a.alpha[b]));
            continue;
        }
        CHECK(a.rc_bps[b] == rc[b] * kG);
        CHECK(a.rt_bps[b] == 100 * kG);
        CHECK(a.alpha[b] == al[b]);
    }
    const RpRecord::Track& d = t.tracks[1];
    CHECK(d.source == 1);
    CHECK(d.ended);
    CHECK(d.end_ns == 33 * kUs);
    for (size_t b = 0; b < t.bins; ++b) {
        INFO("bin " << b);
        CHECK(std::isnan(d.rc_bps[b]) == (b > 3));  // it existed in bins 0..3
    }
    // Wider bins: the state at each wide bin's end.
    const RpRecord::Table w = rec.table(30 * kUs, 1000, 120 * kUs);
    CHECK(w.bin_ns == 30 * kUs);
    REQUIRE(w.bins == 5);
    const double wide[] = {100, 60, 60, 70, 70};  // at 30, 60, 90, 120 us, and at the time read
    for (size_t b = 0; b < w.bins; ++b) CHECK(w.tracks[0].rc_bps[b] == wide[b] * kG);
    CHECK(!std::isnan(w.tracks[1].rc_bps[1]));  // it ended at 33 us, within [30, 60)
    CHECK(std::isnan(w.tracks[1].rc_bps[2]));
}

TEST_CASE("RP record: a QP's RP built again while it lives continues its track, and a QPN used again after its "
          "end starts another",
          "[dcqcn]") {
    RpRecord rec(10 * kUs, 1 << 20);
    RpObserver* o = rec.source(3);
    o->rp_begin(9, 0);  // INIT
    o->rp_rate(9, 0, 100 * kG, 100 * kG);
    o->rp_begin(9, 5 * kUs);  // RTR: the same QP, its transport core built anew
    o->rp_rate(9, 5 * kUs, 100 * kG, 100 * kG);
    o->rp_rate(9, 15 * kUs, 40 * kG, 100 * kG);
    o->rp_end(9, 22 * kUs);
    o->rp_rate(9, 30 * kUs, 1 * kG, 1 * kG);  // after its end: no one's, dropped
    o->rp_begin(9, 45 * kUs);
    o->rp_rate(9, 45 * kUs, 100 * kG, 100 * kG);
    const RpRecord::Table t = rec.table(10 * kUs, 1000, 60 * kUs);
    REQUIRE(t.tracks.size() == 2);
    CHECK(t.tracks[0].life == 1);
    CHECK(t.tracks[1].life == 2);
    CHECK(t.tracks[0].rc_bps[0] == 100 * kG);
    CHECK(t.tracks[0].rc_bps[1] == 40 * kG);
    CHECK(t.tracks[0].rc_bps[2] == 40 * kG);  // ended at 22 us, within bin 2
    CHECK(std::isnan(t.tracks[0].rc_bps[3]));
    CHECK(std::isnan(t.tracks[1].rc_bps[3]));
    CHECK(t.tracks[1].rc_bps[4] == 100 * kG);
    CHECK(t.tracks[1].rc_bps[6] == 100 * kG);  // lives on to the time read
}

TEST_CASE("RP record: at its bound it merges bins in pairs, keeping the later state, and a reply is widened "
          "to its most numbers",
          "[dcqcn]") {
    RpRecord rec(10 * kUs, 300);  // 100 bins of one QP
    RpObserver* o = rec.source(0);
    o->rp_begin(1, 0);
    o->rp_alpha(1, 0, 1.0);
    // Rc = 1 Gb/s times the bin index, told at each bin's middle, for 150
    // bins: past the bound, the bins double (20 us) and then hold 75 bins.
    for (uint64_t b = 0; b < 150; ++b) o->rp_rate(1, b * 10 * kUs + 5 * kUs, double(b + 1) * kG, 200 * kG);
    CHECK(rec.bin_ns() == 20 * kUs);
    CHECK(rec.cells() <= 300);
    const RpRecord::Table t = rec.table(10 * kUs, 1000, 1500 * kUs - 1);
    CHECK(t.bin_ns == 20 * kUs);
    REQUIRE(t.bins == 75);
    for (size_t b = 0; b < t.bins; ++b) {
        INFO("bin " << b);
        CHECK(t.tracks[0].rc_bps[b] == double(2 * b + 2) * kG);  // the later of each pair
        CHECK(t.tracks[0].alpha[b] == 1.0);                      // held from the first bin
    }
    // 30 numbers at most: 10 bins of one QP, each the state at its end.
    const RpRecord::Table n = rec.table(10 * kUs, 30, 1500 * kUs - 1);
    REQUIRE(n.bins <= 10);
    CHECK(n.bin_ns % (20 * kUs) == 0);
    const uint64_t per = n.bin_ns / (20 * kUs);  // the record's bins in one of the reply's
    for (size_t b = 0; b < n.bins; ++b) {
        const uint64_t m = std::min<uint64_t>((b + 1) * per - 1, 74);  // the record's last bin in it
        CHECK(n.tracks[0].rc_bps[b] == double(2 * m + 2) * kG);
    }
}
