// A model device moves a message's payload to and from the host the way a
// soft device does (read-ahead of the gather and of a READ's response
// data, write combining of the scatter: soft_engine/src/host_memory.cc),
// but its pipeline must still charge every packet's own DMA: the bytes
// each stage reads and writes, whatever the engine did to get them there.
#include <catch2/catch.hpp>

#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "bench_checks.h"

using namespace simnic;
using namespace simnic::model;

namespace {
std::atomic<unsigned> g_process_vm_calls{0};
}  // namespace

// Every process_vm_readv/writev of this test program is counted here on its
// way to the kernel (this definition takes the place of libc's).
extern "C" ssize_t process_vm_readv(pid_t pid, const iovec* local, unsigned long nlocal, const iovec* remote,
                                    unsigned long nremote, unsigned long flags) {
    ++g_process_vm_calls;
    return syscall(SYS_process_vm_readv, pid, local, nlocal, remote, nremote, flags);
}
extern "C" ssize_t process_vm_writev(pid_t pid, const iovec* local, unsigned long nlocal, const iovec* remote,
                                     unsigned long nremote, unsigned long flags) {
    ++g_process_vm_calls;
    return syscall(SYS_process_vm_writev, pid, local, nlocal, remote, nremote, flags);
}

namespace {

double stat(const BenchResult& r, const std::string& name) { return bench_checks::stat_or(r, name, 0); }

BenchResult run(BenchOp op, uint32_t size, uint32_t mtu) {
    BenchSpec s;
    s.op = op;
    s.size = size;
    s.mtu = mtu;
    s.depth = 4;
    s.messages = 24;
    s.warmup = 0;  // every message in the counters
    return bench_checks::run_ok(s);
}

}  // namespace

TEST_CASE("bench DMA: every packet's payload is charged once, read-ahead and write combining or not",
          "[model][bench][dma]") {
    // 64 KiB at MTU 4096 (16 packets, the whole message one read-ahead),
    // and 40000 B at MTU 1024 (40 packets, a short last one; read ahead
    // 16 packets at a time).
    struct Case {
        uint32_t size, mtu;
    };
    for (const Case c : {Case{65536, 4096}, Case{40000, 1024}}) {
        for (const BenchOp op : {BenchOp::Write, BenchOp::Read, BenchOp::Send}) {
            const BenchResult r = run(op, c.size, c.mtu);
            const double bytes = 24.0 * c.size;
            INFO("op " << int(op) << ", " << c.size << " B at MTU " << c.mtu);
            // The requester's gather (WRITE, SEND) or the responder's READ
            // response data is read once per packet; the responder's
            // placement (WRITE, SEND) or the requester's READ response data
            // is written once per packet. Charged per packet, with nothing
            // lost to the packets a read-ahead copy served or a combined
            // write gathered.
            CHECK(stat(r, "dma.read_bytes.payload") == bytes);
            CHECK(stat(r, "dma.write_bytes.payload") == bytes);
            const uint64_t packets = 24 * ((c.size + c.mtu - 1) / c.mtu);
            CHECK(stat(r, "dma.reads") >= double(packets));
            CHECK(stat(r, "dma.writes") >= double(packets));
        }
    }
}

// The bench's host memory (rings, CQs, data) is an SHM domain, so the
// device reaches it with loads and stores: a process_vm_readv or
// process_vm_writev of the bench's own process was a system call per DMA,
// a third of a small-message run's time. The pipeline charges the same
// DMA either way.
TEST_CASE("bench DMA: the host's memory is reached without a system call, and charged as before",
          "[model][bench][dma]") {
    for (const BenchOp op : {BenchOp::Write, BenchOp::Read, BenchOp::Send}) {
        INFO("op " << int(op));
        const unsigned before = g_process_vm_calls.load();
        const BenchResult r = run(op, 8192, 1024);
        CHECK(g_process_vm_calls.load() == before);
        CHECK(stat(r, "dma.read_bytes.payload") == 24.0 * 8192);
        CHECK(stat(r, "dma.write_bytes.payload") == 24.0 * 8192);
    }
}
