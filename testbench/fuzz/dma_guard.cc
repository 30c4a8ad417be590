// process_vm_readv/writev for an engine running in this process, checked
// against the DMA guard's ranges (dma_guard.h). Only this process can be
// reached: the engine under test has no other.
#include "dma_guard.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace simnic::fuzz {

DmaGuard& DmaGuard::get() {
    static DmaGuard g;
    return g;
}

bool DmaGuard::check(std::uint64_t addr, std::size_t len, bool write) {
    ++(write ? writes : reads);
    if (len == 0) return true;
    for (const DmaRange& r : ranges) {
        if (addr < r.lo || addr >= r.hi || len > r.hi - addr) continue;
        if (write ? r.write : r.read) return true;
        char b[256];
        std::snprintf(b, sizeof b, "DMA %s of %zu bytes at %#llx in %s, which does not allow it",
                      write ? "write" : "read", len, static_cast<unsigned long long>(addr), r.what.c_str());
        last = b;
        goto bad;
    }
    {
        char b[256];
        std::snprintf(b, sizeof b, "DMA %s of %zu bytes at %#llx outside every registered range",
                      write ? "write" : "read", len, static_cast<unsigned long long>(addr));
        last = b;
    }
bad:
    ++violations;
    std::fprintf(stderr, "dma_guard: %s\n", last.c_str());
    if (abort_on_violation) std::abort();
    return false;
}

}  // namespace simnic::fuzz

namespace {

ssize_t guarded(pid_t pid, const iovec* local, unsigned long nlocal, const iovec* remote, unsigned long nremote,
                bool write) {
    if (pid != getpid()) {
        errno = ESRCH;
        return -1;
    }
    auto& g = simnic::fuzz::DmaGuard::get();
    for (unsigned long i = 0; i < nremote; ++i)
        if (!g.check(reinterpret_cast<std::uint64_t>(remote[i].iov_base), remote[i].iov_len, write)) {
            errno = EFAULT;
            return -1;
        }
    // Copy between the two lists of pieces, as the system call does.
    ssize_t done = 0;
    unsigned long li = 0, ri = 0;
    std::size_t lo = 0, ro = 0;
    while (li < nlocal && ri < nremote) {
        const std::size_t n = std::min(local[li].iov_len - lo, remote[ri].iov_len - ro);
        auto* l = static_cast<std::uint8_t*>(local[li].iov_base) + lo;
        auto* r = static_cast<std::uint8_t*>(remote[ri].iov_base) + ro;
        if (n) {
            if (write) std::memcpy(r, l, n);
            else std::memcpy(l, r, n);
        }
        done += static_cast<ssize_t>(n);
        lo += n;
        ro += n;
        if (lo == local[li].iov_len) ++li, lo = 0;
        if (ro == remote[ri].iov_len) ++ri, ro = 0;
    }
    return done;
}

}  // namespace

extern "C" ssize_t process_vm_readv(pid_t pid, const struct iovec* local_iov, unsigned long liovcnt,
                                    const struct iovec* remote_iov, unsigned long riovcnt, unsigned long) {
    return guarded(pid, local_iov, liovcnt, remote_iov, riovcnt, false);
}

extern "C" ssize_t process_vm_writev(pid_t pid, const struct iovec* local_iov, unsigned long liovcnt,
                                     const struct iovec* remote_iov, unsigned long riovcnt, unsigned long) {
    return guarded(pid, local_iov, liovcnt, remote_iov, riovcnt, true);
}
