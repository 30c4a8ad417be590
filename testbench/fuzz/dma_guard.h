// Host memory as an engine may touch it, checked: this executable defines
// process_vm_readv and process_vm_writev itself (dma_guard.cc), in place of
// libc's (ASan's interceptors are weak), so that every DMA a soft engine
// makes into a PROCESS domain of this process comes through here. Each
// remote range is checked against the ranges the test registered to the
// device, with their rights (read, write), before it is copied; one outside
// them, or against their rights, is a violation: reported on stderr and, if
// `abort_on_violation`, fatal (the fuzzer's crash).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace simnic::fuzz {

struct DmaRange {
    std::uint64_t lo = 0, hi = 0;  // [lo, hi)
    bool read = false, write = false;
    std::string what;
};

struct DmaGuard {
    std::vector<DmaRange> ranges;
    bool abort_on_violation = true;
    std::size_t violations = 0;
    std::size_t reads = 0, writes = 0;  // DMA calls checked
    std::string last;                   // the last violation

    static DmaGuard& get();
    void clear() {
        ranges.clear();
        violations = reads = writes = 0;
        last.clear();
    }
    void allow(const void* p, std::size_t n, bool read, bool write, std::string what) {
        const auto a = reinterpret_cast<std::uint64_t>(p);
        ranges.push_back({a, a + n, read, write, std::move(what)});
    }
    // Whether [addr, addr + len) lies in one range that allows the access.
    bool check(std::uint64_t addr, std::size_t len, bool write);
};

}  // namespace simnic::fuzz
