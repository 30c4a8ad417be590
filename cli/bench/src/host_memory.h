// The host side the benches play for their devices, shared by the single
// device bench (bench.cc) and the fabric's (fabric_bench.cc): this process's
// memory, which the device reaches by DMA through an SHM domain, and a work
// queue ring in it.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "simnic/host/context.h"
#include "simnic/hw/layout.h"

namespace simnic::model::bench_host {

constexpr uint8_t log2_ceil(uint64_t v) {
    uint8_t l = 0;
    while ((uint64_t{1} << l) < v) ++l;
    return l;
}

// Memory of this process that the device reaches: the BAR's page
// (alloc: private anonymous memory), or the host memory the device DMAs
// (alloc_shared and attach_shm_domain below).
struct HostMem {
    size_t len = 0;
    uint8_t* p = nullptr;
    int fd = -1;  // alloc_shared's memory object
    bool alloc(size_t n) {
        len = page(n);
        void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) return false;
        p = static_cast<uint8_t*>(m);
        return true;
    }
    // A memory object (a memfd sealed at its size, as a driver shares its
    // queues: hw-spec 1.3) mapped here, for attach_shm_domain.
    bool alloc_shared(size_t n) {
        len = page(n);
        fd = memfd_create("simnic-bench-host", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0) return false;
        if (ftruncate(fd, off_t(len)) != 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
            return false;
        void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
        if (m == MAP_FAILED) return false;
        p = static_cast<uint8_t*>(m);
        return true;
    }
    HostMem() = default;
    HostMem(const HostMem&) = delete;
    HostMem& operator=(const HostMem&) = delete;
    ~HostMem() {
        if (p) munmap(p, len);
        if (fd >= 0) close(fd);
    }
    uint64_t addr(size_t off = 0) const { return reinterpret_cast<uint64_t>(p + off); }
    static size_t page(size_t n) { return (n + 4095) & ~size_t(4095); }
};

// Shares `m` (alloc_shared) with the device of `ctx` and attaches all of it
// as an SHM domain (host::attach_shm_domain), into `domain`: the bench's
// rings, CQs and data buffers live there, so the device reaches them with
// loads and stores, where a PROCESS domain of this very process costs a
// process_vm_readv or process_vm_writev per access. That changes the wall
// time of a run only: the pipeline charges every DMA its simulated time
// either way, so the simulated figures are the same.
inline bool attach_shm_domain(host::Context& ctx, const HostMem& m, uint16_t& domain, std::string& err) {
    if (const int e = host::attach_shm_domain(ctx, m.fd, m.addr(), m.len, domain)) {
        err = std::string("the device did not take the bench's host memory as an SHM domain: ") + std::strerror(e);
        return false;
    }
    return true;
}

// A work queue ring in host memory (hw-spec 6.1); the host is its producer.
struct WorkRing {
    uint8_t* base = nullptr;
    uint8_t log_size = 0, log_stride = 0;
    uint32_t pi = 0;
    uint32_t stride() const { return 1u << log_stride; }
    uint8_t* slot(uint32_t i) const { return base + (size_t(hw::ring_slot(i, log_size)) << log_stride); }
};

}  // namespace simnic::model::bench_host
