// SPDX-License-Identifier: Apache-2.0
// Time, as simnic's timers, measurements and captures read it.
#pragma once

#include <time.h>

#include <cstdint>

namespace simnic::base {

// Nanoseconds of CLOCK_MONOTONIC. This is the clock of the absolute
// deadlines the engine and the daemon arm on timerfd_create(CLOCK_MONOTONIC),
// so it is named outright rather than taken from std::chrono::steady_clock,
// which is the same clock on Linux without promising it. clock_gettime reads
// it through the vDSO, without a system call: cheap enough for the engine's
// loop and for poll_cq.
inline std::uint64_t mono_ns() noexcept {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

// Microseconds of the wall clock (CLOCK_REALTIME): the timestamps of packet
// captures, which tools line up with other captures of the same traffic.
inline std::uint64_t wall_us() noexcept {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000ull + static_cast<std::uint64_t>(ts.tv_nsec) / 1000;
}

}  // namespace simnic::base
