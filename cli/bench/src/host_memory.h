// The host side the benches play for their devices, shared by the single
// device bench (bench.cc) and the fabric's (fabric_bench.cc): this process's
// anonymous memory, which the device reaches by DMA, and a work queue ring
// in it.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>

#include "simnic/hw/layout.h"

namespace simnic::model::bench_host {

constexpr uint8_t log2_ceil(uint64_t v) {
    uint8_t l = 0;
    while ((uint64_t{1} << l) < v) ++l;
    return l;
}

// Anonymous memory of this process: the host memory the device DMAs.
struct HostMem {
    size_t len = 0;
    uint8_t* p = nullptr;
    bool alloc(size_t n) {
        len = (n + 4095) & ~size_t(4095);
        void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) return false;
        p = static_cast<uint8_t*>(m);
        return true;
    }
    HostMem() = default;
    HostMem(const HostMem&) = delete;
    HostMem& operator=(const HostMem&) = delete;
    ~HostMem() {
        if (p) munmap(p, len);
    }
    uint64_t addr(size_t off = 0) const { return reinterpret_cast<uint64_t>(p + off); }
};

// A work queue ring in host memory (hw-spec 6.1); the host is its producer.
struct WorkRing {
    uint8_t* base = nullptr;
    uint8_t log_size = 0, log_stride = 0;
    uint32_t pi = 0;
    uint32_t stride() const { return 1u << log_stride; }
    uint8_t* slot(uint32_t i) const { return base + (size_t(hw::ring_slot(i, log_size)) << log_stride); }
};

}  // namespace simnic::model::bench_host
