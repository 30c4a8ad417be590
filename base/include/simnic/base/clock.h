// SPDX-License-Identifier: Apache-2.0
// Monotonic time, as simnic's timers and measurements read it.
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

}  // namespace simnic::base
