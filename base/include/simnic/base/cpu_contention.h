// SPDX-License-Identifier: Apache-2.0
// Whether the machine's CPUs are all taken: what a thread that would spin
// asks before it gives its core away.
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <charconv>
#include <string_view>

namespace simnic::base {

// From the text of /proc/loadavg ("0.20 0.18 0.12 3/245 1234"): whether more
// threads are runnable now (the first number of its fourth field, the
// reader included) than `cpus`. Text it cannot read counts as contended:
// the caller then behaves as on a machine with no core to spare.
inline bool runnable_exceed(std::string_view loadavg, unsigned cpus) {
    std::size_t at = 0;
    for (int field = 0; field < 3; ++field) {
        at = loadavg.find(' ', at);
        if (at == std::string_view::npos) return true;
        ++at;
    }
    unsigned running = 0;
    const char* const end = loadavg.data() + loadavg.size();
    const auto r = std::from_chars(loadavg.data() + at, end, running);
    if (r.ec != std::errc() || r.ptr == end || *r.ptr != '/') return true;
    return running > cpus;
}

// What the calling thread's CPUs look like: how many it may run on (its
// affinity, as taskset sets it), and whether more threads are runnable than
// that (/proc/loadavg). Four system calls: callers keep the answer for a
// while.
struct CpuShare {
    unsigned cpus = 1;
    bool contended = true;
};

inline CpuShare cpu_share() {
    CpuShare s;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) s.cpus = unsigned(CPU_COUNT(&set));
    const int fd = ::open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return s;
    char buf[128];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    ::close(fd);
    if (n <= 0) return s;
    s.contended = runnable_exceed(std::string_view(buf, std::size_t(n)), s.cpus);
    return s;
}

}  // namespace simnic::base
