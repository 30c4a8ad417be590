// DCQCN's notification point: one CNP per QP per interval N, time given by
// the caller.
#include <catch2/catch.hpp>

#include "simnic/congestion/notification_point.h"

using namespace simnic::congestion;

TEST_CASE("NP: the first CE mark asks for a CNP, then at most one per N per QP", "[np]") {
    NotificationPoint np;  // N = 50 us
    REQUIRE(np.config().min_cnp_interval_ns == 50'000);
    CHECK(np.on_ce(7, 1'000));
    CHECK_FALSE(np.on_ce(7, 1'001));
    CHECK_FALSE(np.on_ce(7, 50'999));   // 49.999 us after the CNP
    CHECK(np.on_ce(7, 51'000));         // exactly N after it
    CHECK_FALSE(np.on_ce(7, 60'000));
    // Another QP has its own interval.
    CHECK(np.on_ce(8, 60'000));
    CHECK_FALSE(np.on_ce(8, 60'001));
    // The interval runs from the last CNP, not from the last suppressed mark.
    CHECK(np.on_ce(7, 101'000));
    const NpCounters& c = np.counters();
    CHECK(c.ce_packets == 8);
    CHECK(c.cnps_requested == 4);
    CHECK(c.cnps_suppressed == 4);
    CHECK(c.cnps_requested + c.cnps_suppressed == c.ce_packets);
}

TEST_CASE("NP: a configurable interval, 0 answers every mark", "[np]") {
    NotificationPoint every(NpConfig{0});
    for (uint64_t t = 0; t < 5; ++t) CHECK(every.on_ce(1, 100));
    CHECK(every.counters().cnps_requested == 5);
    CHECK(every.counters().cnps_suppressed == 0);

    NotificationPoint np(NpConfig{4'000});  // 4 us
    int sent = 0;
    // A CE mark every 500 ns for 40 us: one CNP every 4 us.
    for (uint64_t t = 0; t < 40'000; t += 500) sent += np.on_ce(3, t) ? 1 : 0;
    CHECK(sent == 10);
    CHECK(np.counters().cnps_suppressed == 80 - 10);
}

TEST_CASE("NP: a forgotten QP asks at once, a clock stepping back opens nothing", "[np]") {
    NotificationPoint np;
    CHECK(np.on_ce(5, 100'000));
    np.forget(5);
    CHECK(np.on_ce(5, 100'001));
    CHECK_FALSE(np.on_ce(5, 10));  // earlier than the last CNP
    CHECK(np.on_ce(5, 150'001));
}
