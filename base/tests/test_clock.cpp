// base::mono_ns reads CLOCK_MONOTONIC: the clock absolute timerfd deadlines
// use, so a deadline computed from it fires when it should.
#include <catch2/catch.hpp>

#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>

#include "simnic/base/clock.h"

namespace {
std::uint64_t clock_monotonic_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return std::uint64_t(ts.tv_sec) * 1000000000ull + std::uint64_t(ts.tv_nsec);
}
}  // namespace

TEST_CASE("mono_ns is CLOCK_MONOTONIC and never goes back", "[base][clock]") {
    const std::uint64_t before = clock_monotonic_ns();
    const std::uint64_t t = simnic::base::mono_ns();
    const std::uint64_t after = clock_monotonic_ns();
    CHECK(before <= t);
    CHECK(t <= after);
    std::uint64_t last = t;
    for (int i = 0; i < 1000; ++i) {
        const std::uint64_t now = simnic::base::mono_ns();
        REQUIRE(now >= last);
        last = now;
    }
}

TEST_CASE("an absolute timerfd deadline from mono_ns fires no earlier", "[base][clock]") {
    const int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    REQUIRE(fd >= 0);
    const std::uint64_t deadline = simnic::base::mono_ns() + 2'000'000;  // 2 ms
    itimerspec its{};
    its.it_value.tv_sec = time_t(deadline / 1000000000ull);
    its.it_value.tv_nsec = long(deadline % 1000000000ull);
    REQUIRE(timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, nullptr) == 0);
    std::uint64_t expirations = 0;
    REQUIRE(read(fd, &expirations, sizeof expirations) == ssize_t(sizeof expirations));  // blocks until it fires
    CHECK(expirations == 1);
    CHECK(simnic::base::mono_ns() >= deadline);
    close(fd);
}

TEST_CASE("base::wall_us is the wall clock in microseconds") {
    timespec before{}, after{};
    clock_gettime(CLOCK_REALTIME, &before);
    const std::uint64_t us = simnic::base::wall_us();
    clock_gettime(CLOCK_REALTIME, &after);
    CHECK(us >= std::uint64_t(before.tv_sec) * 1000000ull + std::uint64_t(before.tv_nsec) / 1000);
    CHECK(us <= std::uint64_t(after.tv_sec) * 1000000ull + std::uint64_t(after.tv_nsec) / 1000);
}
