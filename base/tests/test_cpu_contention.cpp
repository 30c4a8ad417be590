// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "simnic/base/cpu_contention.h"

using simnic::base::runnable_exceed;

TEST_CASE("runnable_exceed: the runnable count of /proc/loadavg against the CPUs", "[base][cpu]") {
    CHECK_FALSE(runnable_exceed("0.97 1.31 1.04 2/94 10200\n", 2));
    CHECK(runnable_exceed("0.97 1.31 1.04 3/94 10200\n", 2));
    CHECK(runnable_exceed("0.97 1.31 1.04 2/94 10200\n", 1));
    CHECK_FALSE(runnable_exceed("12.00 9.50 7.25 17/1200 4\n", 64));
    // Text it cannot read: contended.
    CHECK(runnable_exceed("", 8));
    CHECK(runnable_exceed("0.97 1.31 1.04", 8));
    CHECK(runnable_exceed("0.97 1.31 1.04 x/94 1", 8));
    CHECK(runnable_exceed("0.97 1.31 1.04 2", 8));
}
