#include "simnic/daemon/device_runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <mutex>
#include <climits>
#include <cstring>
#include <vector>

#include "simnic/fw/firmware.h"
#include "simnic/fw/gid.h"
#include "simnic/fw/linux_netdev.h"
#include "simnic/fw/shm_object.h"
#include "simnic/fw/table_store.h"
#include "simnic/fw/wire_netdev.h"
#include "simnic/hw/cqe.h"
#include "simnic/hw/layout.h"
#include "simnic/hw/mmio.h"
#include "simnic/model/fabric/fabric.h"
#include "simnic/soft_engine/engine.h"

namespace simnic::daemon {
namespace {

namespace hw = simnic::hw;

constexpr size_t kPageBytes = 0x1000;

// A 4 KiB shared memory object mapped read-write here.
struct SharedPage {
    int fd = -1;
    uint8_t* p = nullptr;

    bool create(const char* name) {
        fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0 || ftruncate(fd, kPageBytes) != 0) return false;
        void* m = mmap(nullptr, kPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) return false;
        p = static_cast<uint8_t*>(m);
        // The size is fixed: a process cannot grow or shrink what we map.
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
        return true;
    }
    ~SharedPage() {
        if (p) munmap(p, kPageBytes);
        if (fd >= 0) close(fd);
    }
};

void put_header(uint8_t* page, uint32_t block, hw::BlockType type, uint32_t next, uint32_t len) {
    namespace h = hw::reg_block_header;
    hw::reg_set(page, block, h::type, static_cast<uint32_t>(type));
    hw::reg_set(page, block, h::version, hw::kBlockVersion);
    hw::reg_set(page, block, h::next, next);
    hw::reg_set(page, block, h::length, len);
}

void futex_wake_all(uint8_t* page, uint32_t off) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(page + off), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// Host memory of one process, reached the way a NIC's DMA reaches it.
class ProcessMemory final : public fw::MailboxIo {
public:
    explicit ProcessMemory(pid_t pid) : pid_(pid) {}
    bool read(uint64_t addr, uint8_t* dst, size_t len) override {
        iovec l{dst, len}, r{reinterpret_cast<void*>(addr), len};
        return len == 0 || process_vm_readv(pid_, &l, 1, &r, 1, 0) == static_cast<ssize_t>(len);
    }
    bool write(uint64_t addr, const uint8_t* src, size_t len) override {
        iovec l{const_cast<uint8_t*>(src), len}, r{reinterpret_cast<void*>(addr), len};
        return len == 0 || process_vm_writev(pid_, &l, 1, &r, 1, 0) == static_cast<ssize_t>(len);
    }
    // An entry whose owner dword (at `owner_off`) must land after its body:
    // one system call on x86, where the kernel copies the remote iovecs one
    // after the other and stores become visible in program order (as the
    // soft engine writes CQEs); two elsewhere.
    bool write_entry(uint64_t addr, const uint8_t* src, size_t owner_off) {
#if defined(__x86_64__) || defined(__i386__)
        iovec l{const_cast<uint8_t*>(src), owner_off + 4};
        iovec r[2] = {{reinterpret_cast<void*>(addr), owner_off}, {reinterpret_cast<void*>(addr + owner_off), 4}};
        return process_vm_writev(pid_, &l, 1, r, 2, 0) == static_cast<ssize_t>(owner_off + 4);
#else
        return write(addr, src, owner_off) && write(addr + owner_off, src + owner_off, 4);
#endif
    }

private:
    pid_t pid_;
};

}  // namespace

struct DeviceRuntime::Impl final : hw::EventSink {
    struct Ctx {
        uint32_t pid = 0;
        uint16_t boot_domain = 0;
        SharedPage page;
        int irq_fd = -1;
        int db_fd = -1;
        int engine_fd = -1;
        // Memory objects the process shared (queue memory): handle -> mapping.
        std::map<uint32_t, std::pair<uint8_t*, uint64_t>> shm;
        uint32_t next_shm = 1;
        // Where the EQ ring is here (eq_ring()), for the EQ_REGS base and
        // size and the CMDQ_REGS ci it was found with; `ring` null: in the
        // process's private memory.
        struct EqView {
            bool known = false;
            uint64_t base = 0;
            uint32_t log_size = 0, cmd_ci = 0;
            uint8_t* ring = nullptr;
        } eq_view;
        ~Ctx() {
            for (int fd : {irq_fd, db_fd, engine_fd})
                if (fd >= 0) close(fd);
            for (auto& [h, m] : shm) munmap(m.first, m.second);
        }
    };

    Device dev;
    model::ModelConfig model_cfg;
    // A model device's pipeline: the engine's timing model, owned by the
    // engine; reached only through SoftEngine::exclusive().
    model::Pipeline* pipe = nullptr;
    std::unique_ptr<fw::MemTableStore> tables;
    // The port's netdev as the firmware sees it: the host's (LinuxNetdev),
    // or the wire port's own (WireNetdev, over the engine's neighbour table).
    std::unique_ptr<fw::NetdevInfo> netdev;
    std::unique_ptr<fw::Firmware> fw;
    SharedPage bar;
    std::mutex eq_mu;  // ctxs and the EQ rings: the control thread and the engine post EQEs
    std::map<uint16_t, std::unique_ptr<Ctx>> ctxs;
    // Last member: destroyed (its thread stopped) before everything it uses.
    std::unique_ptr<soft_engine::SoftEngine> engine;

    void refresh_bar() {
        const auto id = fw->id_block(dev.type == DeviceType::Soft ? hw::EngineKind::Soft : hw::EngineKind::Model, 0);
        const auto cap = fw->cap_block();
        const auto port = fw->port_block();
        std::memcpy(bar.p + hw::kBar0IdBlock, id.data(), id.size());
        std::memcpy(bar.p + hw::kBar0CapBlock, cap.data(), cap.size());
        std::memcpy(bar.p + hw::kBar0PortBlock, port.data(), port.size());
        for (std::size_t i = 0; i < hw::kBar0DeviceBlockCount; ++i) {
            const hw::GlobalBlock& b = hw::kBar0DeviceBlocks[i];
            put_header(bar.p, b.at, b.type, hw::bar0_device_block_next(i), b.length);
        }
    }

    // The EQ ring of context `c` as the daemon maps it, when it lies inside
    // an SHM domain of the context (hw-spec 1.3, 2.7.2: the bootstrap-domain
    // address and the SHM object are the same memory there, and the driver
    // puts its EQ in such an object); null: in the process's private memory,
    // reached with process_vm_writev. Only the context's own objects are
    // used, and never past their size: a wrong map_base from the process
    // misplaces its own EQEs, nobody else's. Domains change only by
    // commands, so the answer holds until CMDQ_REGS.ci moves (or EQ_REGS base
    // or size change); a DETACH_DOMAIN racing an EQE leaves the object
    // mapped here until the context goes, like a DMA in flight.
    uint8_t* eq_ring(uint16_t ctx_id, Ctx& c, uint64_t base, uint32_t log) {
        const auto cmd_ci = static_cast<uint32_t>(hw::reg_get(c.page.p, hw::kCtxCmdqBlock, hw::cmdq_regs::ci));
        Ctx::EqView& v = c.eq_view;
        if (v.known && v.base == base && v.log_size == log && v.cmd_ci == cmd_ci) return v.ring;
        v = Ctx::EqView{true, base, log, cmd_ci, nullptr};
        if (base % hw::eqe::kSize != 0) return nullptr;  // not a ring the driver made
        const uint64_t len = uint64_t{hw::eqe::kSize} << log;
        namespace de = hw::domain_entry;
        const uint32_t ndom = tables->capacity(hw::Table::Domain);
        for (uint32_t d = 1; d < ndom; ++d) {
            const uint8_t* e = tables->entry(hw::Table::Domain, d);
            if (e == nullptr || !hw::get(e, de::kSize, de::valid) || hw::get(e, de::kSize, de::ctx_id) != ctx_id ||
                hw::get(e, de::kSize, de::kind) != uint64_t(hw::DomainKind::Shm))
                continue;
            auto s = c.shm.find(static_cast<uint32_t>(hw::get(e, de::kSize, de::shm_handle)));
            if (s == c.shm.end()) continue;
            const uint64_t map_base = hw::get(e, de::kSize, de::map_base);
            const uint64_t map_len = std::min(hw::get(e, de::kSize, de::map_len), s->second.second);
            if (base >= map_base && len <= map_len && base - map_base <= map_len - len) {
                v.ring = s->second.first + (base - map_base);
                break;
            }
        }
        return v.ring;
    }

    // EQEs go into the context's EQ ring (hw-spec 8.1, 8.3): body first,
    // owner dword last, then pi, then the interrupt if the EQ was armed.
    // In an SHM object with plain stores and a release fence; otherwise in
    // the process's memory with process_vm_writev.
    void post_eqe(uint16_t ctx_id, const uint8_t* eqe, size_t len) override {
        std::lock_guard<std::mutex> lk(eq_mu);
        auto it = ctxs.find(ctx_id);
        if (it == ctxs.end() || len != hw::kEqeSize) return;
        Ctx& c = *it->second;
        uint8_t* pg = c.page.p;
        constexpr uint32_t eq = hw::kCtxEqBlock;
        if (!hw::reg_get(pg, eq, hw::eq_regs::enable)) return;
        const uint32_t n = static_cast<uint32_t>(hw::reg_get(pg, eq, hw::eq_regs::log_size));
        const uint32_t pi = static_cast<uint32_t>(hw::reg_get(pg, eq, hw::eq_regs::pi));
        const uint32_t ci = static_cast<uint32_t>(hw::reg_get(pg, eq, hw::eq_regs::ci));
        if (pi - ci >= (1u << n)) {
            hw::reg_set(pg, eq, hw::eq_regs::overrun, 1);
            return;
        }
        std::array<uint8_t, hw::kEqeSize> e{};
        std::memcpy(e.data(), eqe, e.size());
        const auto log = static_cast<uint8_t>(n);
        hw::stamp_owner(hw::kEqRing, e.data(), pi, log);
        const uint64_t base = hw::reg_get(pg, eq, hw::eq_regs::base);
        const uint64_t off = hw::ring_entry_offset(hw::kEqRing, pi, log);
        const uint32_t owner_off = hw::kEqRing.owner.offset;
        if (uint8_t* ring = eq_ring(ctx_id, c, base, n)) {
            std::memcpy(ring + off, e.data(), owner_off);
            uint32_t owner_dw;
            std::memcpy(&owner_dw, e.data() + owner_off, sizeof owner_dw);
            hw::mmio_store32(ring + off, owner_off, owner_dw);  // release: after the body
        } else {
            ProcessMemory mem(static_cast<pid_t>(c.pid));
            if (!mem.write_entry(base + off, e.data(), owner_off)) return;
        }
        hw::mmio_store32(pg, eq + hw::eq_regs::pi.offset, pi + 1);
        // Store-load ordering with the driver's arm (see its arm_events()).
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        if (hw::reg_get(pg, eq, hw::eq_regs::arm)) {
            hw::reg_set(pg, eq, hw::eq_regs::arm, 0);
            raise_interrupt(c);
        }
    }

    void raise_interrupt(Ctx& c) {
        uint8_t* pg = c.page.p;
        constexpr uint32_t ib = hw::kCtxIntrBlock;
        if (hw::reg_get(pg, ib, hw::intr_regs::mask)) {
            hw::reg_set(pg, ib, hw::intr_regs::pending, 1);
            return;
        }
        hw::reg_set(pg, ib, hw::intr_regs::count, hw::reg_get(pg, ib, hw::intr_regs::count) + 1);
        const uint64_t one = 1;
        if (write(c.irq_fd, &one, sizeof one) != sizeof one) { /* counter saturated: still pending */ }
    }
};

std::unique_ptr<DeviceRuntime> DeviceRuntime::create(const Device& dev, std::string& err, GsiHandler gsi) {
    return create(dev, err, std::move(gsi), Options{});
}

std::unique_ptr<DeviceRuntime> DeviceRuntime::create(const Device& dev, std::string& err, GsiHandler gsi,
                                                     const Options& opt) {
    auto impl = std::make_unique<Impl>();
    impl->dev = dev;
    fw::FwConfig cfg;
    cfg.cap = fw::default_cap_block();
    impl->tables = std::make_unique<fw::MemTableStore>(fw::table_capacities(cfg.cap.data(), cfg.gid_tbl_len));
    if (!dev.wire.on()) impl->netdev = std::make_unique<fw::LinuxNetdev>(dev.netdev);
    if (!impl->bar.create(("simnic-bar0-" + dev.name).c_str())) {
        err = std::string("cannot create BAR0 memory: ") + std::strerror(errno);
        return nullptr;
    }
    const std::string origin = dev.config_path.empty() ? "config" : dev.config_path;
    if (dev.type == DeviceType::Model && !model::parse_config(dev.config_text, origin, impl->model_cfg, err))
        return nullptr;
    // A soft device's config holds [congestion] only; its line rate is
    // 100 Gb/s unless the table says (it has no MAC of its own to ask).
    if (dev.type == DeviceType::Soft &&
        !model::parse_soft_config(dev.config_text, origin, impl->model_cfg.congestion, err))
        return nullptr;
    const model::CongestionConfig& cc = impl->model_cfg.congestion;
    const bool in_fabric = dev.fabric.on();
    if (in_fabric && (dev.type != DeviceType::Model || !opt.fabric || !opt.group)) {
        err = "a fabric's device is a model device built by its fabric";
        return nullptr;
    }
    // The RP's line rate: the device's MAC's (a fabric host's: its link's).
    const double line_gbps = in_fabric ? opt.fabric->topology().hosts[dev.fabric.host].rate_gbps
                                       : impl->model_cfg.mac.line_rate_gbps;
    if (opt.engine) {
        soft_engine::EngineConfig ec;
        if (in_fabric) {
            // The fabric is the wire: no port of its own (standalone), its
            // thread, and the fabric's device lock.
            ec.timing = opt.fabric->factory(dev.fabric.host, impl->model_cfg);
            ec.standalone = true;
            ec.group = opt.group;
        } else if (dev.type == DeviceType::Model) {
            ec.timing = model::Pipeline::factory(dev.name, impl->model_cfg, &impl->pipe);
        }
        ec.device = dev.name;
        // A fabric's device takes no address from a netdev (its GIDs are its
        // host's, below); the engine's address-only port wants one.
        ec.netdev = in_fabric ? "lo" : dev.netdev;
        if (dev.wire.on()) {
            ec.wire.hub_ip = dev.wire.hub_ip;
            ec.wire.hub_port = dev.wire.hub_port;
            ec.wire.mac = dev.wire.mac;
            ec.wire.ipv4 = dev.wire.ipv4;
            ec.wire.prefix = dev.wire.prefix;
            ec.wire.ipv6 = dev.wire.ipv6;
            ec.wire.mtu = dev.wire.mtu;
        }
        ec.pcap = dev.pcap;
        ec.loopback = dev.loopback;
        static_assert(uint64_t{Device::kMaxAckHoldUs} * 1000 == soft_engine::EngineConfig::kMaxAckHoldNs,
                      "one limit for ack_hold_us");
        ec.ack_hold_ns = uint64_t{dev.ack_hold_us} * 1000;
        ec.congestion.on = cc.enable != 0;
        ec.congestion.rp = cc.dcqcn(dev.type == DeviceType::Model ? line_gbps : 100);
        ec.congestion.np = cc.np();
        ec.congestion.observer = opt.rp_observer;
        // SHM domains: where a context's shared objects are mapped here.
        Impl* im = impl.get();
        ec.shm = [im](uint16_t ctx, uint32_t handle, uint64_t& size) -> uint8_t* {
            std::lock_guard<std::mutex> lk(im->eq_mu);
            auto c = im->ctxs.find(ctx);
            if (c == im->ctxs.end()) return nullptr;
            auto s = c->second->shm.find(handle);
            if (s == c->second->shm.end()) return nullptr;
            size = s->second.second;
            return s->second.first;
        };
        ec.tables = impl->tables.get();
        ec.events = impl.get();
        ec.bar = impl->bar.p;
        ec.gsi_rx = std::move(gsi);
        impl->engine = soft_engine::SoftEngine::create(ec, err);
        if (!impl->engine) return nullptr;
        if (in_fabric) impl->pipe = opt.fabric->device(dev.fabric.host);
    }
    if (in_fabric) {
        // The host's own MAC and IPv4 address, as on a wire; its neighbours
        // are the topology's hosts (a static table: no ARP crosses the
        // fabric).
        const model::fabric::Topology* topo = &opt.fabric->topology();
        const uint32_t v4 = dev.fabric.ipv4;
        impl->netdev = std::make_unique<fw::WireNetdev>(
            "fabric " + dev.fabric.fabric, dev.fabric.mac, kFabricMtu,
            std::array<uint8_t, 4>{uint8_t(v4 >> 24), uint8_t(v4 >> 16), uint8_t(v4 >> 8), uint8_t(v4)},
            std::vector<fw::Gid>{}, [topo](const fw::Gid& g) -> std::optional<fw::Mac> {
                for (const model::fabric::HostSpec& h : topo->hosts)
                    if (fw::ipv4_mapped_gid({uint8_t(h.ipv4 >> 24), uint8_t(h.ipv4 >> 16), uint8_t(h.ipv4 >> 8),
                                             uint8_t(h.ipv4)}) == g)
                        return h.mac;
                return std::nullopt;
            });
    }
    if (dev.wire.on()) {
        // The firmware reads the wire port as its netdev; neighbours come
        // from the port's table (which the firmware's thread may ask).
        const uint32_t v4 = dev.wire.ipv4;
        std::vector<fw::Gid> v6;
        for (const auto& a : dev.wire.ipv6) v6.push_back(a.first);
        soft_engine::SoftEngine* eng = impl->engine.get();
        impl->netdev = std::make_unique<fw::WireNetdev>(
            "wire " + dev.wire.endpoint, dev.wire.mac, dev.wire.mtu,
            std::array<uint8_t, 4>{uint8_t(v4 >> 24), uint8_t(v4 >> 16), uint8_t(v4 >> 8), uint8_t(v4)}, v6,
            [eng](const fw::Gid& g) { return eng->neighbour(g); });
    }
    impl->fw = std::make_unique<fw::Firmware>(cfg, *impl->tables, *impl->netdev, *impl, impl->engine.get());
    impl->refresh_bar();
    return std::unique_ptr<DeviceRuntime>(new DeviceRuntime(std::move(impl)));
}

DeviceRuntime::DeviceRuntime(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

DeviceRuntime::~DeviceRuntime() {
    while (!impl_->ctxs.empty()) close_context(impl_->ctxs.begin()->first);
}

const Device& DeviceRuntime::device() const { return impl_->dev; }
void DeviceRuntime::stop_engine() {
    if (impl_->engine) impl_->engine->stop();
}
size_t DeviceRuntime::context_count() const { return impl_->ctxs.size(); }

bool DeviceRuntime::open_context(uint32_t pid, OpenedContext& out, std::string& err, int& err_no) {
    Impl& m = *impl_;
    uint16_t id = 1;
    while (m.ctxs.count(id)) ++id;
    auto c = std::make_unique<Impl::Ctx>();
    c->pid = pid;
    if (!c->page.create(("simnic-ctx-" + m.dev.name + "-" + std::to_string(id)).c_str())) {
        err_no = errno;
        err = std::string("cannot create the context page: ") + std::strerror(errno);
        return false;
    }
    c->irq_fd = eventfd(0, EFD_CLOEXEC);
    c->db_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    c->engine_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (c->irq_fd < 0 || c->db_fd < 0 || c->engine_fd < 0) {
        err_no = errno;
        err = std::string("eventfd: ") + std::strerror(errno);
        return false;
    }
    uint16_t boot = 0;
    const hw::CmdStatus st = m.fw->open_context(id, pid, &boot);
    if (st != hw::CmdStatus::Ok) {
        err_no = hw::status_errno(st);
        err = "the device has no room for another context";
        return false;
    }
    c->boot_domain = boot;
    // The context page as the spec lays it out, with its read-only fields.
    uint8_t* pg = c->page.p;
    put_header(pg, hw::kCtxCmdqBlock, hw::BlockType::Cmdq, hw::kCtxEqBlock, hw::cmdq_regs::kSize);
    put_header(pg, hw::kCtxEqBlock, hw::BlockType::Eq, hw::kCtxIntrBlock, hw::eq_regs::kSize);
    put_header(pg, hw::kCtxIntrBlock, hw::BlockType::Intr, hw::kCtxDbBlock, hw::intr_regs::kSize);
    put_header(pg, hw::kCtxDbBlock, hw::BlockType::Doorbell, 0, hw::db_regs::kSize);
    hw::reg_set(pg, hw::kCtxCmdqBlock, hw::cmdq_regs::ctx_id, id);
    hw::reg_set(pg, hw::kCtxCmdqBlock, hw::cmdq_regs::boot_domain, boot);
    hw::reg_set(pg, hw::kCtxIntrBlock, hw::intr_regs::vector, id);
    hw::reg_set(pg, hw::kCtxCmdqBlock, hw::cmdq_regs::ready, 1);
    out.ctx_id = id;
    out.boot_domain = boot;
    out.page_fd = c->page.fd;
    out.bar_fd = m.bar.fd;
    out.irq_fd = c->irq_fd;
    out.db_fd = c->db_fd;
    out.engine_fd = c->engine_fd;
    uint8_t* page = c->page.p;
    const int efd = c->engine_fd;
    {
        std::lock_guard<std::mutex> lk(m.eq_mu);
        m.ctxs[id] = std::move(c);
    }
    if (m.engine) m.engine->add_context(id, page, efd);
    return true;
}

void DeviceRuntime::close_context(uint16_t ctx_id) {
    Impl& m = *impl_;
    auto it = m.ctxs.find(ctx_id);
    if (it == m.ctxs.end()) return;
    if (m.engine) m.engine->remove_context(ctx_id);
    m.fw->destroy_context(ctx_id);
    std::lock_guard<std::mutex> lk(m.eq_mu);
    m.ctxs.erase(ctx_id);
}

bool DeviceRuntime::add_shm(uint16_t ctx_id, int fd, uint64_t size, uint32_t& handle, std::string& err,
                            int& err_no) {
    Impl& m = *impl_;
    struct Closer {
        int fd;
        ~Closer() { close(fd); }
    } closer{fd};
    uint8_t* p = nullptr;
    if ((err_no = fw::map_shm_object(fd, size, p, err)) != 0) return false;
    std::lock_guard<std::mutex> lk(m.eq_mu);
    auto it = m.ctxs.find(ctx_id);
    if (it == m.ctxs.end()) {
        munmap(p, size);
        err_no = ENOENT;
        err = "no such context";
        return false;
    }
    Impl::Ctx& c = *it->second;
    const uint32_t h = c.next_shm++;
    if (m.fw->add_shm_object(ctx_id, h, size) != hw::CmdStatus::Ok) {
        munmap(p, size);
        err_no = EIO;
        err = "the firmware refused the object";
        return false;
    }
    c.shm[h] = {p, size};
    handle = h;
    return true;
}

size_t DeviceRuntime::shm_count(uint16_t ctx_id) const {
    std::lock_guard<std::mutex> lk(impl_->eq_mu);
    auto it = impl_->ctxs.find(ctx_id);
    return it == impl_->ctxs.end() ? 0 : it->second->shm.size();
}

void DeviceRuntime::refresh_netdev() {
    if (impl_->dev.wire.on() || impl_->dev.fabric.on()) return;
    impl_->fw->refresh_netdev();
    impl_->refresh_bar();
}

void DeviceRuntime::device_fatal() {
    std::vector<uint16_t> ids;
    {
        std::lock_guard<std::mutex> lk(impl_->eq_mu);
        for (const auto& [id, c] : impl_->ctxs) ids.push_back(id);
    }
    std::array<uint8_t, hw::eqe::kSize> e{};
    hw::set(e.data(), e.size(), hw::eqe::event_type, static_cast<uint8_t>(hw::EventType::DeviceFatal));
    for (uint16_t id : ids) impl_->post_eqe(id, e.data(), e.size());
}

void DeviceRuntime::command_doorbell(uint16_t ctx_id) {
    Impl& m = *impl_;
    auto it = m.ctxs.find(ctx_id);
    if (it == m.ctxs.end()) return;
    Impl::Ctx& c = *it->second;
    uint64_t v;
    while (read(c.db_fd, &v, sizeof v) == sizeof v) {}  // drain; we look at pi itself
    uint8_t* pg = c.page.p;
    constexpr uint32_t cq = hw::kCtxCmdqBlock;
    if (!hw::reg_get(pg, cq, hw::cmdq_regs::enable)) return;
    const uint32_t n = static_cast<uint32_t>(hw::reg_get(pg, cq, hw::cmdq_regs::log_size));
    const uint64_t ring = hw::reg_get(pg, cq, hw::cmdq_regs::ring_base);
    const uint64_t mbox = hw::reg_get(pg, cq, hw::cmdq_regs::mbox_base);
    const uint64_t mbox_len = hw::reg_get(pg, cq, hw::cmdq_regs::mbox_len);
    ProcessMemory mem(static_cast<pid_t>(c.pid));
    uint32_t ci = static_cast<uint32_t>(hw::reg_get(pg, cq, hw::cmdq_regs::ci));
    const uint32_t pi = static_cast<uint32_t>(hw::reg_get(pg, cq, hw::cmdq_regs::pi));
    // At most one ring's worth per doorbell: a pi beyond that is a driver bug.
    for (uint32_t k = 0; ci != pi && k < (1u << n); ++k) {
        const uint64_t slot = ring + uint64_t{ci & ((1u << n) - 1)} * hw::cmdq_entry::kSize;
        std::array<uint8_t, hw::cmdq_entry::kSize> e{};
        if (!mem.read(slot, e.data(), e.size())) {
            // The ring is not readable: the context's driver is broken or gone.
            hw::reg_set(pg, cq, hw::cmdq_regs::fatal, 1);
            break;
        }
        if (!hw::get(e.data(), e.size(), hw::cmdq_entry::owner)) break;  // not posted yet
        m.fw->run_entry(ctx_id, e.data(), e.size(), mbox, mbox_len, mem);
        if (m.engine) m.engine->note_command(uint16_t(hw::get(e.data(), e.size(), hw::cmdq_entry::opcode)));
        // run_entry cleared the owner bit; the status dword goes last.
        const uint32_t sd = hw::cmdq_entry::status.offset;
        const uint32_t tail = hw::cmdq_entry::syndrome.offset;  // syndrome, out_bytes, ...
        if (!mem.write(slot + tail, e.data() + tail, e.size() - tail) || !mem.write(slot + sd, e.data() + sd, 4)) {
            hw::reg_set(pg, cq, hw::cmdq_regs::fatal, 1);
            break;
        }
        ++ci;
        hw::mmio_store32(pg, cq + hw::cmdq_regs::ci.offset, ci);
    }
    futex_wake_all(pg, cq + hw::cmdq_regs::ci.offset);
    m.refresh_bar();  // commands change port-visible state (GIDs, limits in use)
}

std::vector<std::pair<std::string, uint64_t>> DeviceRuntime::stats() const {
    return soft_engine::read_stats(impl_->bar.p);
}

bool DeviceRuntime::congestion_on() const { return impl_->model_cfg.congestion.enable != 0; }

std::vector<soft_engine::QpCongestionStats> DeviceRuntime::congestion_stats() const {
    if (!impl_->engine) return {};
    return impl_->engine->congestion_stats();
}

std::vector<model::ModelStat> DeviceRuntime::model_stats(bool reset) const {
    std::vector<model::ModelStat> r;
    if (model::Pipeline* p = impl_->pipe)
        impl_->engine->exclusive([&] {
            r = p->stats();
            if (reset) p->reset_stats();
        });
    return r;
}
bool DeviceRuntime::trace(const std::string& file, const std::string& format, std::optional<uint64_t> from,
                          uint64_t cycles, std::string& err) {
    model::Pipeline* p = impl_->pipe;
    if (!p) {
        err = "not a model device (only model devices have a pipeline to trace)";
        return false;
    }
    bool ok = false;
    impl_->engine->exclusive([&] { ok = p->trace(file, format, from, cycles, err); });
    return ok;
}
void DeviceRuntime::trace_stop() {
    if (model::Pipeline* p = impl_->pipe) impl_->engine->exclusive([&] { p->trace_stop(); });
}
std::string DeviceRuntime::trace_state() const {
    std::string r;
    if (model::Pipeline* p = impl_->pipe) impl_->engine->exclusive([&] { r = p->trace_state(); });
    return r;
}

namespace {
fw::Firmware::ListRange fw_range(const DeviceRuntime::Range& r) { return {r.after, r.limit}; }
}  // namespace

std::vector<DeviceRuntime::QpInfo> DeviceRuntime::qps(const Range& r) const {
    Impl& m = *impl_;
    std::vector<QpInfo> out;
    std::map<uint16_t, uint32_t> pid_of;
    {
        std::lock_guard<std::mutex> lk(m.eq_mu);
        for (const auto& [id, c] : m.ctxs) pid_of[id] = c->pid;
    }
    namespace q = hw::qpc;
    for (uint32_t qpn : m.fw->qpns(fw_range(r))) {
        const uint8_t* e = m.tables->entry(hw::Table::Qpc, qpn);
        if (!e) continue;
        QpInfo i;
        i.qpn = qpn;
        i.type = static_cast<uint8_t>(hw::get(e, q::kSize, q::qp_type));
        i.state = static_cast<uint8_t>(hw::get(e, q::kSize, q::state));
        i.sq_psn = static_cast<uint32_t>(hw::get(e, q::kSize, q::sq_psn));
        i.rq_psn = static_cast<uint32_t>(hw::get(e, q::kSize, q::rq_psn));
        i.dest_qpn = static_cast<uint32_t>(hw::get(e, q::kSize, q::dest_qpn));
        auto p = pid_of.find(static_cast<uint16_t>(hw::get(e, q::kSize, q::ctx_id)));
        i.pid = p == pid_of.end() ? 0 : p->second;
        out.push_back(i);
    }
    return out;
}

std::vector<DeviceRuntime::CqInfo> DeviceRuntime::cqs(const Range& r) const {
    std::vector<CqInfo> out;
    for (const auto& l : impl_->fw->cq_list(fw_range(r))) out.push_back(CqInfo{l.cqn, l.cqe, l.users, l.ctx_id, l.pid});
    return out;
}

std::vector<DeviceRuntime::MrInfo> DeviceRuntime::mrs(const Range& r) const {
    std::vector<MrInfo> out;
    for (const auto& l : impl_->fw->mr_list(fw_range(r)))
        out.push_back(MrInfo{l.mrn, l.key, l.iova, l.length, l.pdn, l.ctx_id, l.pid});
    return out;
}

std::vector<DeviceRuntime::MwInfo> DeviceRuntime::mws(const Range& r) const {
    std::vector<MwInfo> out;
    for (const auto& l : impl_->fw->mw_list(fw_range(r)))
        out.push_back(MwInfo{l.mwn, l.rkey, l.type, l.state, l.pdn, l.mr_key, l.qpn, l.addr, l.length,
                             l.ctx_id, l.pid});
    return out;
}

std::vector<DeviceRuntime::PdInfo> DeviceRuntime::pds(const Range& r) const {
    std::vector<PdInfo> out;
    for (const auto& l : impl_->fw->pd_list(fw_range(r))) out.push_back(PdInfo{l.pdn, l.users, l.ctx_id, l.pid});
    return out;
}

std::vector<DeviceRuntime::SrqInfo> DeviceRuntime::srqs(const Range& r) const {
    std::vector<SrqInfo> out;
    for (const auto& l : impl_->fw->srq_list(fw_range(r)))
        out.push_back(SrqInfo{l.srqn, l.pdn, l.max_wr, l.max_sge, l.limit, l.qpns, l.ctx_id, l.pid});
    return out;
}

std::vector<std::pair<uint32_t, std::array<uint8_t, 16>>> DeviceRuntime::gids() const {
    Impl& m = *impl_;
    std::vector<std::pair<uint32_t, std::array<uint8_t, 16>>> out;
    namespace g = hw::gid_entry;
    const uint32_t n = m.tables->capacity(hw::Table::Gid);
    for (uint32_t i = 0; i < n; ++i) {
        const uint8_t* e = m.tables->entry(hw::Table::Gid, i);
        if (!e || !hw::get(e, g::kSize, g::valid)) continue;
        std::array<uint8_t, 16> gid{};
        hw::get_bytes(e, g::kSize, g::gid, gid.data(), gid.size());
        out.emplace_back(i, gid);
    }
    return out;
}

DeviceRuntime::GsiPort DeviceRuntime::gsi_port() const {
    GsiPort p;
    const uint8_t* bar = impl_->bar.p;
    p.node_guid = hw::get(bar + hw::kBar0IdBlock, hw::id_block::kSize, hw::id_block::node_guid);
    p.active_mtu = uint8_t(hw::get(bar + hw::kBar0PortBlock, hw::port_block::kSize, hw::port_block::active_mtu));
    return p;
}

bool DeviceRuntime::gsi_send(const std::array<uint8_t, 16>& sgid, const std::array<uint8_t, 16>& dgid,
                             uint8_t traffic_class, const uint8_t* mad, size_t len) {
    // Through the host's stack only the device's own capture sees this MAC
    // (the kernel's UDP socket puts the real Ethernet header on the wire);
    // unresolved: zeros, as on lo. A wire port resolves it again as the MAD
    // leaves (and holds it until then).
    std::array<uint8_t, 6> dmac{};
    fw::Gid g{};
    std::copy(dgid.begin(), dgid.end(), g.begin());
    if (auto m = impl_->netdev->resolve_neighbor(g)) std::copy(m->begin(), m->end(), dmac.begin());
    return impl_->engine && impl_->engine->gsi_send(sgid, dgid, dmac, mad, len, traffic_class);
}

bool DeviceRuntime::neighbour_ready(const std::array<uint8_t, 16>& dgid) const {
    if (!impl_->dev.wire.on()) return true;  // the kernel's, or a fabric's static table
    for (const auto& [idx, g] : gids())
        if (g == dgid) return true;  // its own address: rxe's shortcut
    return impl_->engine->neighbour(dgid).has_value();
}

DeviceRuntime::Counts DeviceRuntime::counts() const {
    const auto c = impl_->fw->counts();
    Counts r;
    r.qps = c.qps;
    r.cqs = c.cqs;
    r.mrs = c.mrs;
    r.pds = c.pds;
    r.srqs = c.srqs;
    r.ahs = c.ahs;
    r.mws = c.mws;
    return r;
}

}  // namespace simnic::daemon
