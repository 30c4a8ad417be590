// The daemon-backed context: the device lives in the simnic daemon.
//
// Opening a context is one request on a control connection that then stays
// open for the context's life (its closing is how the daemon learns that the
// process went away). The daemon answers with four descriptors: the context
// page and the BAR0 global area (shared memory), the interrupt eventfd and the
// command doorbell eventfd. From then on commands follow hw-spec 5.1: the
// ring and the mailboxes are in this process's memory, CMDQ_REGS.pi is the
// doorbell, and completion is the entry's owner bit going to 0.
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include <sched.h>

#include "simnic/control/client.h"
#include "simnic/host/context.h"
#include "simnic/hw/mmio.h"

namespace simnic::host {
namespace {

constexpr size_t kPage = 0x1000;
constexpr uint32_t kCmdLogSize = 4;               // 16 command slots: commands run one at a time
constexpr uint32_t kEqLogSize = 8;                // 256 EQEs
constexpr size_t kEqBytes = size_t{hw::eqe::kSize} << kEqLogSize;
constexpr size_t kMailboxBytes = 1u << 20;        // REG_MR of up to 64K pages fits
constexpr int kCommandTimeoutMs = 30000;

// Memory the device reaches by DMA: page-aligned, zeroed, ours.
struct DmaBuffer {
    uint8_t* p = nullptr;
    size_t len = 0;
    bool alloc(size_t n) {
        void* m = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) return false;
        p = static_cast<uint8_t*>(m);
        len = n;
        return true;
    }
    ~DmaBuffer() {
        if (p) munmap(p, len);
    }
    uint64_t addr() const { return reinterpret_cast<uint64_t>(p); }
};

// The EQ ring in a memory object shared with the device (hw-spec 2.7.2, 4):
// the daemon writes each EQE with plain stores instead of a
// process_vm_writev into this process. Sealed, as the daemon requires of
// every shared object.
struct SharedRing {
    uint8_t* p = nullptr;
    size_t len = 0;
    bool alloc(size_t n, int& fd) {
        fd = memfd_create("simnic-eq", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0) return false;
        void* m = MAP_FAILED;
        if (ftruncate(fd, static_cast<off_t>(n)) == 0 &&
            fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0)
            m = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) {
            close(fd);
            fd = -1;
            return false;
        }
        p = static_cast<uint8_t*>(m);
        len = n;
        return true;
    }
    ~SharedRing() {
        if (p) munmap(p, len);
    }
    uint64_t addr() const { return reinterpret_cast<uint64_t>(p); }
};

class RemoteContext final : public Context {
public:
    ~RemoteContext() override {
        if (enabled_) {
            // Disable the queues before their memory goes away.
            hw::reg_set(page_, hw::kCtxCmdqBlock, hw::cmdq_regs::enable, 0);
            hw::reg_set(page_, hw::kCtxEqBlock, hw::eq_regs::enable, 0);
        }
        if (page_) munmap(page_, kPage);
        if (bar_) munmap(const_cast<uint8_t*>(bar_), kPage);
        for (int fd : {irq_fd_, db_fd_, engine_fd_})
            if (fd >= 0) close(fd);
    }

    int init(const std::string& device) {
        name_ = device;
        std::string err, notice;
        client_ = std::make_unique<control::Client>(
            control::Client::connect(control::runtime_paths(), false, err, notice));
        if (!client_->connected()) return ECONNREFUSED;
        std::vector<int> fds;
        control::Json r = client_->request_with_fds(control::Json{{"op", "open_context"}, {"device", device}}, fds);
        auto close_all = [&fds] {
            for (int fd : fds) close(fd);
        };
        if (!r.value("ok", false)) {
            close_all();
            const int e = r.value("errno", EIO);
            return e ? e : EIO;
        }
        if (fds.size() != 5) {
            close_all();
            return EPROTO;
        }
        void* pg = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
        void* bar = mmap(nullptr, kPage, PROT_READ, MAP_SHARED, fds[1], 0);
        close(fds[0]);
        close(fds[1]);
        irq_fd_ = fds[2];
        // Non-blocking (event_fd()): the provider's event thread and a thread
        // waiting in ibv_get_cq_event both wait for the interrupt, and the one
        // that reads it second must not block. The flag is the open file's,
        // shared with the daemon, whose writes never block on an eventfd
        // that is read.
        fcntl(irq_fd_, F_SETFL, fcntl(irq_fd_, F_GETFL) | O_NONBLOCK);
        db_fd_ = fds[3];
        engine_fd_ = fds[4];
        if (pg == MAP_FAILED || bar == MAP_FAILED) {
            if (pg != MAP_FAILED) munmap(pg, kPage);
            if (bar != MAP_FAILED) munmap(bar, kPage);
            return ENOMEM;
        }
        page_ = static_cast<uint8_t*>(pg);
        bar_ = static_cast<const uint8_t*>(bar);
        boot_domain_ = r.value("boot_domain", 0);
        irq_taken_ = static_cast<uint32_t>(hw::reg_get(page_, hw::kCtxIntrBlock, hw::intr_regs::count));
        // Let the daemon reach this process's memory even where Yama limits
        // ptrace to ancestors (EINVAL: no Yama, nothing to do).
        prctl(PR_SET_PTRACER, static_cast<unsigned long>(r.value("daemon_pid", 0)), 0, 0, 0);

        // Command ring and mailbox window (hw-spec 5.1 setup), then the EQ.
        if (!ring_.alloc(kPage) || !mbox_.alloc(kMailboxBytes)) return ENOMEM;
        constexpr uint32_t cq = hw::kCtxCmdqBlock, eq = hw::kCtxEqBlock;
        hw::reg_set(page_, cq, hw::cmdq_regs::ring_base, ring_.addr());
        hw::reg_set(page_, cq, hw::cmdq_regs::log_size, kCmdLogSize);
        hw::reg_set(page_, cq, hw::cmdq_regs::mbox_base, mbox_.addr());
        hw::reg_set(page_, cq, hw::cmdq_regs::mbox_len, kMailboxBytes);
        hw::reg_set(page_, cq, hw::cmdq_regs::enable, 1);
        if (!hw::reg_get(page_, cq, hw::cmdq_regs::ready)) return EIO;
        eq_ring_ = share_eq();
        if (eq_ring_ == nullptr) {  // no shared object: private memory, one system call per EQE
            if (!eq_.alloc(kEqBytes)) return ENOMEM;
            eq_ring_ = eq_.p;
        }
        hw::reg_set(page_, eq, hw::eq_regs::base, reinterpret_cast<uint64_t>(eq_ring_));
        hw::reg_set(page_, eq, hw::eq_regs::log_size, kEqLogSize);
        hw::reg_set(page_, eq, hw::eq_regs::enable, 1);
        enabled_ = true;
        return 0;
    }

    // The EQ ring in a shared object attached as an SHM domain that holds
    // nothing else, so the device reaches it with plain stores; null if the
    // daemon or the firmware would not take it.
    uint8_t* share_eq() {
        int fd = -1;
        if (!eq_shared_.alloc(kEqBytes, fd)) return nullptr;
        uint16_t domain = 0;
        const int e = attach_shm_domain(*this, fd, eq_shared_.addr(), kEqBytes, domain);
        close(fd);  // the mappings (here and in the daemon) keep the object
        return e == 0 ? eq_shared_.p : nullptr;
    }

    const std::string& device_name() const override { return name_; }

    int command(hw::CmdOpcode opcode, const uint8_t* in, size_t in_len, size_t out_cap,
                CmdOutcome& res) override {
        std::lock_guard<std::mutex> lock(mu_);
        if (!client_->alive()) return EIO;  // the device is gone: nobody would run it
        // A child of the process that opened the context (fork) shares the
        // register page but not the command ring and mailbox, which are the
        // parent's private memory, where the device reads them: its command
        // would run the parent's stale slot and leave the parent's ring out
        // of step. As rdma-core says of a parent's verbs objects after fork:
        // the child must not use them.
        if (getpid() != owner_) return EIO;
        const size_t in_room = (in_len + 63) & ~size_t{63};
        if (in_room + out_cap > kMailboxBytes) return E2BIG;
        if (in_len) std::memcpy(mbox_.p, in, in_len);
        uint8_t* out = mbox_.p + in_room;
        constexpr uint32_t cq = hw::kCtxCmdqBlock;
        const uint32_t pi = static_cast<uint32_t>(hw::reg_get(page_, cq, hw::cmdq_regs::pi));
        uint8_t* e = ring_.p + (pi & ((1u << kCmdLogSize) - 1)) * hw::cmdq_entry::kSize;
        std::memset(e, 0, hw::cmdq_entry::kSize);
        namespace ce = hw::cmdq_entry;
        hw::set(e, ce::kSize, ce::opcode, static_cast<uint16_t>(opcode));
        hw::set(e, ce::kSize, ce::token, pi);
        hw::set(e, ce::kSize, ce::in_addr, mbox_.addr());
        hw::set(e, ce::kSize, ce::out_addr, mbox_.addr() + in_room);
        hw::set(e, ce::kSize, ce::in_len, in_len);
        hw::set(e, ce::kSize, ce::out_len, out_cap);
        // The status dword, owner = 1, is written last with release.
        hw::mmio_store32(e, ce::status.offset, 1u << ce::owner.lo);
        hw::mmio_store32(page_, cq + hw::cmdq_regs::pi.offset, pi + 1);
        const uint64_t one = 1;
        if (write(db_fd_, &one, sizeof one) != sizeof one) return EIO;

        // Wait for the owner bit to drop. The daemon advances CMDQ_REGS.ci and
        // wakes futex waiters on it after each command.
        const uint32_t ci_off = cq + hw::cmdq_regs::ci.offset;
        timespec start{}, now{};
        clock_gettime(CLOCK_MONOTONIC, &start);
        while ((hw::mmio_load32(e, ce::status.offset) >> ce::owner.lo) & 1) {
            if (hw::reg_get(page_, cq, hw::cmdq_regs::fatal)) return EIO;
            // Sleep until ci moves (at most 10 ms): the device wakes us when
            // it finishes a command. Whatever ci says, the wait is bounded.
            const uint32_t ci = hw::mmio_load32(page_, ci_off);
            timespec ts{0, 10 * 1000 * 1000};
            syscall(SYS_futex, reinterpret_cast<uint32_t*>(page_ + ci_off), FUTEX_WAIT, ci, &ts, nullptr, 0);
            clock_gettime(CLOCK_MONOTONIC, &now);
            if ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 > kCommandTimeoutMs)
                return ETIMEDOUT;
            if (!client_->alive()) return EIO;
        }
        res.status = static_cast<hw::CmdStatus>(hw::get(e, ce::kSize, ce::status));
        res.syndrome = static_cast<uint32_t>(hw::get(e, ce::kSize, ce::syndrome));
        const size_t n = std::min<size_t>(hw::get(e, ce::kSize, ce::out_bytes), out_cap);
        res.out.assign(out, out + n);
        return 0;
    }

    bool read_bar(uint32_t offset, uint8_t* dst, size_t len) override {
        if (offset > kPage || len > kPage - offset) return false;
        std::memcpy(dst, bar_ + offset, len);
        return true;
    }

    int event_fd() const override { return irq_fd_; }
    int lost_fd() const override { return client_ ? client_->fd() : -1; }

    bool next_event(hw::Eqe& eqe) override {
        constexpr uint32_t eq = hw::kCtxEqBlock;
        const uint32_t ci = static_cast<uint32_t>(hw::reg_get(page_, eq, hw::eq_regs::ci));
        const uint8_t* slot = hw::eqe_peek(eq_ring_, ci, kEqLogSize);
        if (slot == nullptr) return false;
        eqe = hw::decode_eqe(slot);
        hw::mmio_store32(page_, eq + hw::eq_regs::ci.offset, ci + 1);
        return true;
    }

    // INTR_REGS.count goes up before each signal of the eventfd (hw-spec
    // 2.7.3): equal to what the reads took, nothing is there to read. Ahead
    // of them, the read takes what is signalled (maybe not yet all: the
    // rest is read next time).
    void ack_interrupt(bool ready) override {
        const auto raised = static_cast<uint32_t>(hw::reg_get(page_, hw::kCtxIntrBlock, hw::intr_regs::count));
        if (raised == irq_taken_ && !ready) return;
        uint64_t v = 0;
        if (read(irq_fd_, &v, sizeof v) == sizeof v) irq_taken_ += static_cast<uint32_t>(v);
    }

    void arm_events() override {
        hw::reg_set(page_, hw::kCtxEqBlock, hw::eq_regs::arm, 1);
        // The arm must be visible before the caller looks at the EQ again,
        // and the device orders its EQE before reading arm: with both
        // fences, an EQE either raises the interrupt or is seen by the look.
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    }

    uint16_t boot_domain() const override { return boot_domain_; }

    int share_memory(int fd, uint64_t size, uint32_t& handle) override {
        std::lock_guard<std::mutex> lock(mu_);
        control::Json r = client_->request_passing_fds(control::Json{{"op", "add_shm"}, {"size", size}}, {fd});
        if (!r.value("ok", false)) {
            const int e = r.value("errno", EIO);
            return e ? e : EIO;
        }
        handle = r.value("handle", 0u);
        return 0;
    }

    void ring_doorbell(hw::DbKind kind, uint32_t num, uint32_t index, uint8_t cq_cmd, uint32_t cq_seen) override {
        // 1. The register, for the record (hw-spec 3.1).
        namespace db = hw::db_regs;
        uint32_t reg = 0;
        uint64_t lo = num & 0xffffff;
        switch (kind) {
            case hw::DbKind::Sq: reg = hw::kCtxSqDoorbell; break;
            case hw::DbKind::Rq: reg = hw::kCtxRqDoorbell; break;
            case hw::DbKind::Srq: reg = hw::kCtxSrqDoorbell; break;
            case hw::DbKind::Cq:
                reg = hw::kCtxCqDoorbell;
                lo |= uint64_t{cq_cmd & 3u} << db::cq_cmd.lo;
                break;
        }
        hw::mmio_store64(page_, reg, lo | (uint64_t{index} << 32));
        // 2-3. A FIFO entry (hw-spec 3.4).
        constexpr uint32_t f = hw::kCtxDbFifo;
        uint32_t* pi = reinterpret_cast<uint32_t*>(page_ + f + hw::db_fifo_regs::fifo_pi.offset);
        const uint32_t i = __atomic_fetch_add(pi, 1, __ATOMIC_ACQ_REL);
        while (i - hw::mmio_load32(page_, f + hw::db_fifo_regs::fifo_ci.offset) >= hw::kDbFifoEntries) {
            if (!client_->alive()) return;  // no engine will ever drain it
            sched_yield();
        }
        uint8_t* e = page_ + hw::kCtxDbFifoEntries + (i % hw::kDbFifoEntries) * hw::db_fifo_entry::kSize;
        namespace fe = hw::db_fifo_entry;
        const uint32_t w1 = (num & 0xffffff) | (uint32_t{static_cast<uint8_t>(kind)} << fe::kind.lo) |
                            (uint32_t{cq_cmd & 3u} << fe::cq_cmd.lo);
        hw::mmio_store32(e, fe::num.offset, w1);
        hw::mmio_store32(e, fe::index.offset, index);
        hw::mmio_store32(e, fe::cq_seen.offset, kind == hw::DbKind::Cq && (cq_cmd & 3u) ? cq_seen : index);
        hw::mmio_store32(e, fe::seq.offset, i + 1);
        // 4. Wake the engine only if it sleeps.
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        // Of several doorbells rung while it sleeps (a SEND, its receive and
        // the CQ's arm), only the one that swaps ENGINE_SLEEPING to 0 makes
        // the system call: the others find the engine already being woken.
        auto* sleeping = reinterpret_cast<uint32_t*>(page_ + f + hw::db_fifo_regs::engine_sleeping.offset);
        uint32_t expected = 1;
        if (__atomic_load_n(sleeping, __ATOMIC_SEQ_CST) == 1 &&
            __atomic_compare_exchange_n(sleeping, &expected, 0, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
            const uint64_t one = 1;
            if (write(engine_fd_, &one, sizeof one) != sizeof one) { /* counter full: already signalled */ }
        }
    }

    bool wait_cqe(uint64_t timeout_ns, const std::function<bool()>& empty) override {
        constexpr uint32_t f = hw::kCtxDbFifo;
        auto* waiters = reinterpret_cast<uint32_t*>(page_ + f + hw::db_fifo_regs::cq_waiters.offset);
        auto* seq = reinterpret_cast<uint32_t*>(page_ + f + hw::db_fifo_regs::cq_wake_seq.offset);
        // Register, fence, look once more (pairs with the engine's fence
        // between writing CQEs and reading CQ_WAITERS), then sleep unless
        // CQ_WAKE_SEQ moved since it was read.
        __atomic_fetch_add(waiters, 1, __ATOMIC_SEQ_CST);
        const uint32_t s0 = __atomic_load_n(seq, __ATOMIC_ACQUIRE);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        if (empty() && client_->alive()) {
            timespec ts{static_cast<time_t>(timeout_ns / 1000000000ull),
                        static_cast<long>(timeout_ns % 1000000000ull)};
            syscall(SYS_futex, seq, FUTEX_WAIT, s0, &ts, nullptr, 0);
        }
        __atomic_fetch_sub(waiters, 1, __ATOMIC_SEQ_CST);
        return true;
    }

private:
    std::string name_;
    std::unique_ptr<control::Client> client_;
    uint8_t* page_ = nullptr;
    const uint8_t* bar_ = nullptr;
    int irq_fd_ = -1, db_fd_ = -1, engine_fd_ = -1;
    uint16_t boot_domain_ = 0;
    pid_t owner_ = getpid();  // the process that opened the context
    bool enabled_ = false;
    DmaBuffer ring_, mbox_, eq_;
    SharedRing eq_shared_;
    uint8_t* eq_ring_ = nullptr;  // eq_shared_ or eq_
    uint32_t irq_taken_ = 0;      // interrupts read from irq_fd_ (ack_interrupt)
    std::mutex mu_;
};

}  // namespace

int list_devices(std::vector<DeviceEntry>& out) {
    out.clear();
    std::string err, notice;
    control::Client c = control::Client::connect(control::runtime_paths(), false, err, notice);
    if (!c.connected()) return 0;  // no daemon, no devices
    control::Json r = c.request(control::Json{{"op", "link_show"}});
    if (!r.value("ok", false)) return EIO;
    for (const auto& l : r["links"])
        out.push_back({l.value("ifname", ""), l.value("netdev", ""), l.value("type", "")});
    return 0;
}

std::unique_ptr<Context> open_context(const std::string& device, int& err) {
    auto c = std::make_unique<RemoteContext>();
    err = c->init(device);
    if (err) return nullptr;
    return c;
}

}  // namespace simnic::host
