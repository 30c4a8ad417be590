// The in-process context: a host::Context around a fw::Firmware object, for
// tests and tools that want a device without a daemon. Commands execute
// synchronously in the caller's thread; BAR0's global area is assembled from
// the firmware's block images at the offsets of hw-spec 2.1; events arrive
// through a LocalEventSink and wake an eventfd as the interrupt path of
// hw-spec 8.3 does.
#include "simnic/host/local_context.h"

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <deque>
#include <string>

#include "simnic/fw/firmware.h"
#include "simnic/fw/shm_object.h"
#include "simnic/hw/field.h"
#include "simnic/hw/layout.h"

namespace simnic::host {

namespace {
constexpr std::uint32_t kGlobalArea = hw::kBar0CtxBase;  // 0x0000-0x0FFF
}  // namespace

class LocalContext final : public Context {
public:
    LocalContext(fw::Firmware& fw, LocalEventSink& sink, std::string name, std::uint16_t ctx_id,
                 std::uint16_t boot, std::uint16_t device_index, int efd, DoorbellSink doorbells)
        : fw_(fw), sink_(sink), name_(std::move(name)), ctx_id_(ctx_id), boot_(boot),
          device_index_(device_index), efd_(efd), doorbells_(std::move(doorbells)) {
        sink_.attach(ctx_id_, this);
    }

    ~LocalContext() override {
        sink_.detach(ctx_id_, this);
        // The firmware's teardown fences the context's domains, so the
        // engine lets go of the objects' mappings before they are unmapped.
        fw_.destroy_context(ctx_id_);
        sink_.remove_shm(ctx_id_);
        ::close(efd_);
    }

    const std::string& device_name() const override { return name_; }

    int command(hw::CmdOpcode opcode, const std::uint8_t* in, std::size_t in_len,
                std::size_t out_cap, CmdOutcome& res) override {
        if (in_len != 0 && in == nullptr) return EFAULT;
        const fw::CmdResult r =
            fw_.execute(ctx_id_, static_cast<std::uint16_t>(opcode), in, in_len, out_cap);
        res.status = r.status;
        res.syndrome = r.syndrome;
        const std::size_t n = std::min<std::size_t>({r.out_bytes, r.out.size(), out_cap});
        res.out.assign(r.out.begin(), r.out.begin() + static_cast<std::ptrdiff_t>(n));
        return 0;
    }

    bool read_bar(std::uint32_t offset, std::uint8_t* dst, std::size_t len) override {
        if (dst == nullptr && len != 0) return false;
        if (offset > kGlobalArea || len > kGlobalArea - offset) return false;
        std::array<std::uint8_t, kGlobalArea> bar{};
        place(bar, hw::kBar0IdBlock, fw_.id_block(hw::EngineKind::Soft, device_index_));
        const auto cap = fw_.cap_block();
        place(bar, hw::kBar0CapBlock, cap);
        place(bar, hw::kBar0PortBlock, fw_.port_block());
        // No engine behind a local context: the statistics stay zero.
        for (std::size_t i = 0; i < hw::kBar0DeviceBlockCount; ++i) {
            const hw::GlobalBlock& b = hw::kBar0DeviceBlocks[i];
            header(bar.data() + b.at, b.length, b.type, hw::bar0_device_block_next(i));
        }
        std::uint8_t* win = bar.data() + hw::kBar0CtxWinBlock;
        hw::set(win, hw::ctxwin_block::kSize, hw::ctxwin_block::ctx_base, hw::kBar0CtxBase);
        hw::set(win, hw::ctxwin_block::kSize, hw::ctxwin_block::ctx_stride, hw::kCtxPageSize);
        hw::set(win, hw::ctxwin_block::kSize, hw::ctxwin_block::ctx_count,
                hw::get(cap.data(), cap.size(), hw::cap_block::max_ctx));
        std::memcpy(dst, bar.data() + offset, len);
        return true;
    }

    int event_fd() const override { return efd_; }

    bool next_event(hw::Eqe& eqe) override {
        std::lock_guard<std::mutex> lk(mu_);
        if (events_.empty()) return false;
        eqe = events_.front();
        events_.pop_front();
        return true;
    }

    void arm_events() override {
        std::lock_guard<std::mutex> lk(mu_);
        armed_ = true;
        if (!events_.empty()) fire_locked();
    }

    std::uint16_t boot_domain() const override { return boot_; }

    // As the daemon takes an object (add_shm), where the sink offers it.
    int share_memory(int fd, std::uint64_t size, std::uint32_t& handle) override {
        if (!sink_.shm_offered()) return EOPNOTSUPP;
        std::uint8_t* p = nullptr;
        std::string why;
        if (const int e = fw::map_shm_object(fd, size, p, why)) return e;
        std::lock_guard<std::mutex> lk(mu_);
        const std::uint32_t h = next_shm_++;
        if (fw_.add_shm_object(ctx_id_, h, size) != hw::CmdStatus::Ok) {
            munmap(p, size);
            return EIO;
        }
        sink_.add_shm(ctx_id_, h, p, size);
        handle = h;
        return 0;
    }

    // In order, to the device's engine if it has one (DoorbellSink).
    // (An arm's `cq_seen` does not reach an in-process engine: it takes
    // the arm as from the register, cq_seen = cq_ci.)
    void ring_doorbell(hw::DbKind kind, std::uint32_t num, std::uint32_t index, std::uint8_t cq_cmd,
                       std::uint32_t /*cq_seen*/) override {
        if (doorbells_) doorbells_(ctx_id_, kind, num, index, cq_cmd);
    }

    // From the sink, possibly inside the firmware's lock.
    void deliver(const std::uint8_t* eqe, std::size_t len) {
        std::array<std::uint8_t, hw::kEqeSize> e{};
        std::memcpy(e.data(), eqe, std::min(len, e.size()));
        std::lock_guard<std::mutex> lk(mu_);
        // Same bound as an EQ of the largest size the device offers; beyond
        // it the EQE is dropped, as on an overrun (hw-spec 8.1).
        if (events_.size() >= kMaxQueued) return;
        events_.push_back(hw::decode_eqe(e.data()));
        if (armed_) fire_locked();
    }

private:
    static constexpr std::size_t kMaxQueued = std::size_t{1} << 12;

    template <std::size_t N>
    static void place(std::array<std::uint8_t, kGlobalArea>& bar, std::uint32_t at,
                      const std::array<std::uint8_t, N>& block) {
        static_assert(N <= kGlobalArea, "block larger than the global area");
        std::memcpy(bar.data() + at, block.data(), N);
    }

    static void header(std::uint8_t* b, std::size_t n, hw::BlockType type, std::uint32_t next) {
        hw::set(b, n, hw::reg_block_header::type, static_cast<std::uint32_t>(type));
        hw::set(b, n, hw::reg_block_header::version, hw::kBlockVersion);
        hw::set(b, n, hw::reg_block_header::next, next);
        hw::set(b, n, hw::reg_block_header::length, n);
    }

    void fire_locked() {
        armed_ = false;
        const std::uint64_t one = 1;
        // EAGAIN means the counter is saturated: the fd is readable anyway.
        [[maybe_unused]] const ssize_t w = ::write(efd_, &one, sizeof one);
    }

    fw::Firmware& fw_;
    LocalEventSink& sink_;
    const std::string name_;
    const std::uint16_t ctx_id_;
    const std::uint16_t boot_;
    const std::uint16_t device_index_;
    const int efd_;
    const DoorbellSink doorbells_;
    std::mutex mu_;
    std::deque<hw::Eqe> events_;
    bool armed_ = false;
    std::uint32_t next_shm_ = 1;
};

void LocalEventSink::post_eqe(std::uint16_t ctx_id, const std::uint8_t* eqe, std::size_t len) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = ctxs_.find(ctx_id);
    if (it == ctxs_.end()) return;  // no receiver: dropped, as for a disabled EQ
    it->second->deliver(eqe, len);
}

void LocalEventSink::attach(std::uint16_t ctx_id, LocalContext* ctx) {
    std::lock_guard<std::mutex> lk(mu_);
    ctxs_[ctx_id] = ctx;
}

void LocalEventSink::detach(std::uint16_t ctx_id, LocalContext* ctx) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = ctxs_.find(ctx_id);
    if (it != ctxs_.end() && it->second == ctx) ctxs_.erase(it);
}

std::uint8_t* LocalEventSink::shm_object(std::uint16_t ctx_id, std::uint32_t handle, std::uint64_t& size) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = shm_.find(std::uint64_t{ctx_id} << 32 | handle);
    if (it == shm_.end()) return nullptr;
    size = it->second.second;
    return it->second.first;
}

void LocalEventSink::add_shm(std::uint16_t ctx_id, std::uint32_t handle, std::uint8_t* p, std::uint64_t size) {
    std::lock_guard<std::mutex> lk(mu_);
    shm_[std::uint64_t{ctx_id} << 32 | handle] = {p, size};
}

void LocalEventSink::remove_shm(std::uint16_t ctx_id) {
    std::lock_guard<std::mutex> lk(mu_);
    const std::uint64_t lo = std::uint64_t{ctx_id} << 32;
    const auto from = shm_.lower_bound(lo), to = shm_.lower_bound(lo + (std::uint64_t{1} << 32));
    for (auto it = from; it != to; ++it) munmap(it->second.first, it->second.second);
    shm_.erase(from, to);
}

LocalEventSink::ShmLookup LocalEventSink::offer_shm() {
    shm_offered_ = true;
    return [this](std::uint16_t ctx_id, std::uint32_t handle, std::uint64_t& size) {
        return shm_object(ctx_id, handle, size);
    };
}

LocalEventSink::~LocalEventSink() {
    // Contexts unmap theirs as they go; these are of contexts still open.
    for (const auto& [key, m] : shm_) munmap(m.first, m.second);
}

LocalEventSink& local_event_sink() {
    static LocalEventSink sink;
    return sink;
}

std::unique_ptr<Context> open_local_context(fw::Firmware& fw, LocalEventSink& events,
                                            const std::string& device_name,
                                            std::uint16_t ctx_id, std::uint32_t pid,
                                            std::uint16_t device_index, DoorbellSink doorbells) {
    const int efd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (efd < 0) return nullptr;
    std::uint16_t boot = 0;
    if (fw.open_context(ctx_id, pid, &boot) != hw::CmdStatus::Ok) {
        ::close(efd);
        return nullptr;
    }
    return std::make_unique<LocalContext>(fw, events, device_name, ctx_id, boot, device_index,
                                          efd, std::move(doorbells));
}

std::unique_ptr<Context> open_local_context(fw::Firmware& fw, const std::string& device_name,
                                            std::uint16_t ctx_id, std::uint32_t pid) {
    return open_local_context(fw, local_event_sink(), device_name, ctx_id, pid);
}

}  // namespace simnic::host
