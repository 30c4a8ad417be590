// The soft engine's public face (engine.h): create() builds the device
// around its wire and thread, the control thread's calls (contexts, QP1,
// exclusive access) and the firmware's hooks (hw::EngineHooks: fences and
// the notices of QP, CQ and SRQ changes) come in here under the device lock.
// What each does is in the file of its concern (engine_internal.h).
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "engine_internal.h"
#include "simnic/hw/mmio.h"

namespace simnic::soft_engine {

SoftEngine::Impl::~Impl() {
    // The timing model holds a reference to this datapath: it goes first.
    pipe.reset();
    for (int fd : {epfd, wake_fd, timer_fd})
        if (fd >= 0) close(fd);
}

void SoftEngine::Impl::wake() {
    const uint64_t one = 1;
    if (::write(wake_fd, &one, sizeof one) != sizeof one) {}
}

bool EngineGroup::hold(bool on) {
    bool was = false;
    exclusive([&] {
        was = std::exchange(held, on);
        if (on || !was) return;
        // What the members took while held (and what was left simulating)
        // is simulated from the next pass: any member's pass simulates the
        // whole fabric, so the first engine awake starts it.
        for (SoftEngine::Impl* m : members) {
            m->resume_sim = true;
            m->wake();
        }
    });
    return was;
}

namespace {

// What every engine needs besides its port: the wake-up and timer
// descriptors and the epoll set of its thread.
std::unique_ptr<SoftEngine::Impl> new_impl(const EngineConfig& cfg, std::string& err) {
    if (!cfg.tables || !cfg.events) {
        err = "soft engine: no tables or event sink";
        return nullptr;
    }
    auto impl = std::make_unique<SoftEngine::Impl>(cfg);
    SoftEngine::Impl& m = *impl;
    m.epfd = epoll_create1(EPOLL_CLOEXEC);
    m.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    m.timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (m.epfd < 0 || m.wake_fd < 0 || m.timer_fd < 0) {
        err = std::string("soft engine: ") + std::strerror(errno);
        return nullptr;
    }
    return impl;
}

// How a port reports what it sent: counted in STATS_BLOCK, and captured.
// The callback runs on the engine thread (or under its lock), where the
// capture is written.
PortSent sent_counter(SoftEngine::Impl* mp) {
    return [mp](size_t bytes, bool ok, const uint8_t* frame, size_t len) {
        if (!ok) return mp->stat(hw::stats_block::tx_drops);
        mp->stat(hw::stats_block::tx_packets);
        mp->stat(hw::stats_block::tx_bytes, bytes);
        if (frame && mp->pcap) mp->pcap->write(frame, len, wall_us());
    };
}

// The rest of the device once it has its port: the timing model, the
// capture, the descriptors the thread sleeps on.
bool finish(SoftEngine::Impl& m, const EngineConfig& cfg, std::string& err) {
    m.ack_hold = AckHold(std::min(cfg.ack_hold_ns, EngineConfig::kMaxAckHoldNs));
    if (cfg.bar) hw::get_bytes(cfg.bar + hw::kBar0PortBlock, hw::port_block::kSize, hw::port_block::mac, m.port_mac, 6);
    if (cfg.timing) {
        m.pipe = cfg.timing(m, cfg.standalone, err);
        if (!m.pipe) return false;
        m.sim_time = m.pipe->simulated_protocol_time();
        m.model_cq_events = m.pipe->delivers_cq_events();
    }
    if (!cfg.pcap.empty()) {
        m.pcap = roce::PcapWriter::open(cfg.pcap, err);
        if (!m.pcap) return false;
    }
    m.port_fds = m.port->fds();
    std::vector<int> watch{m.wake_fd, m.timer_fd};
    watch.insert(watch.end(), m.port_fds.begin(), m.port_fds.end());
    for (int fd : watch) {
        if (fd < 0) continue;
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = fd;
        epoll_ctl(m.epfd, EPOLL_CTL_ADD, fd, &ev);
    }
    return true;
}

}  // namespace

std::unique_ptr<SoftEngine> SoftEngine::create(const EngineConfig& cfg, std::string& err) {
    auto impl = new_impl(cfg, err);
    if (!impl) return nullptr;
    Impl& m = *impl;
    // The port: a wire of frames if one is configured, else UDP 4791 on the
    // netdev's addresses; a standalone device (no wire) takes the netdev's
    // addresses only.
    if (cfg.wire.on() && !cfg.standalone) {
        // Nothing but this device answers for its addresses on the wire:
        // frames to them take rxe's shortcut, always.
        m.cfg.loopback = true;
        m.port = open_wire_port(cfg.wire, sent_counter(&m), err);
    } else {
        m.port = open_udp_port(cfg.netdev, !cfg.standalone, sent_counter(&m), err);
    }
    if (!m.port || !finish(m, cfg, err)) return nullptr;
    if (cfg.group) {
        std::lock_guard<std::recursive_mutex> lk(m.mu);
        cfg.group->members.push_back(&m);
    }
    if (!cfg.standalone || cfg.group) m.thread = std::thread([&m] { m.loop(); });
    return std::unique_ptr<SoftEngine>(new SoftEngine(std::move(impl)));
}

std::unique_ptr<SoftEngine> SoftEngine::create_driven(const EngineConfig& cfg, std::unique_ptr<Port> port,
                                                      std::string& err) {
    auto impl = new_impl(cfg, err);
    if (!impl) return nullptr;
    impl->port = std::move(port);
    if (!impl->port) {
        err = "soft engine: no port";
        return nullptr;
    }
    if (!finish(*impl, cfg, err)) return nullptr;
    impl->driven = true;
    return std::unique_ptr<SoftEngine>(new SoftEngine(std::move(impl)));
}

bool SoftEngine::poll(uint64_t now_ns) {
    bool simulating = false;
    std::lock_guard<std::recursive_mutex> lk(impl_->mu);
    impl_->driven_now = now_ns;
    return impl_->pass(now_ns, simulating);
}

SoftEngine::SoftEngine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

void SoftEngine::stop() {
    impl_->stop = true;
    impl_->wake();
    if (impl_->thread.joinable()) impl_->thread.join();
}

SoftEngine::~SoftEngine() {
    stop();
    if (impl_->pcap) impl_->pcap->flush();
    if (EngineGroup* g = impl_->cfg.group.get()) {
        std::lock_guard<std::recursive_mutex> lk(g->mu);
        g->members.erase(std::remove(g->members.begin(), g->members.end(), impl_.get()), g->members.end());
    }
}

void SoftEngine::add_context(uint16_t ctx_id, uint8_t* page, int engine_fd) {
    Impl& m = *impl_;
    ++m.fence_waiters;
    std::lock_guard<std::recursive_mutex> lk(m.mu);
    --m.fence_waiters;
    Impl::CtxState c;
    c.page = page;
    c.engine_fd = engine_fd;
    c.fifo_ci = hw::mmio_load32(page, hw::kCtxDbFifo + hw::db_fifo_regs::fifo_ci.offset);
    // Until the engine has looked at this context, drivers must wake it.
    hw::mmio_store32(page, hw::kCtxDbFifo + hw::db_fifo_regs::engine_sleeping.offset, 1);
    m.ctxs[ctx_id] = c;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = engine_fd;
    epoll_ctl(m.epfd, EPOLL_CTL_ADD, engine_fd, &ev);
    m.wake();
}

void SoftEngine::remove_context(uint16_t ctx_id) {
    Impl& m = *impl_;
    ++m.fence_waiters;
    std::lock_guard<std::recursive_mutex> lk(m.mu);
    --m.fence_waiters;
    m.wc_flush();
    m.drop_read_ahead();
    m.forget_mappings();  // its process's pid may be reused
    auto it = m.ctxs.find(ctx_id);
    if (it == m.ctxs.end()) return;
    epoll_ctl(m.epfd, EPOLL_CTL_DEL, it->second.engine_fd, nullptr);
    m.ctxs.erase(it);
    m.shm_views.clear();  // the context's shared objects go with it
}

void SoftEngine::note_command(uint16_t opcode) {
    if (!impl_->pipe) return;
    ++impl_->fence_waiters;
    std::lock_guard<std::recursive_mutex> lk(impl_->mu);
    --impl_->fence_waiters;
    impl_->pipe->fw_command(opcode);
}

bool SoftEngine::gsi_send(const std::array<uint8_t, 16>& sgid, const std::array<uint8_t, 16>& dgid,
                          const std::array<uint8_t, 6>& dmac, const uint8_t* mad, size_t len,
                          uint8_t traffic_class) {
    return impl_->gsi_send(sgid, dgid, dmac, mad, len, traffic_class);
}

std::optional<std::array<uint8_t, 6>> SoftEngine::neighbour(const std::array<uint8_t, 16>& gid) {
    // The port guards its own table: no engine lock, so that the firmware
    // never waits for an engine batch to ask.
    static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    IpAddr a;
    if (std::memcmp(gid.data(), kMapped, 12) == 0) {
        a.v4 = uint32_t(gid[12]) << 24 | uint32_t(gid[13]) << 16 | uint32_t(gid[14]) << 8 | gid[15];
    } else {
        a.version = roce::IpVersion::V6;
        std::copy(gid.begin(), gid.end(), a.v6.begin());
    }
    return impl_->port->neighbour(a);
}

void SoftEngine::exclusive(const std::function<void()>& f) {
    ++impl_->fence_waiters;
    std::lock_guard<std::recursive_mutex> lk(impl_->mu);
    --impl_->fence_waiters;
    f();
}

// ---- hw::EngineHooks ----

void SoftEngine::fence(hw::Table, uint32_t) {
    ++impl_->fence_waiters;
    impl_->mu.lock();
    --impl_->fence_waiters;
    impl_->wc_flush();  // the firmware may be about to unmap what it covers
    impl_->drop_read_ahead();  // or to reuse the key the copy was read under
    impl_->forget_mappings();  // and an MR may be about to cover other memory
}

void SoftEngine::unfence(hw::Table t, uint32_t index) {
    if (t == hw::Table::Qpc) impl_->reload_qp(index);
    if (t == hw::Table::Mpt) impl_->mpt_views.erase(index);
    if (t == hw::Table::Domain || t == hw::Table::Mtt) impl_->mpt_views.clear();
    if (t == hw::Table::Domain) impl_->shm_views.clear();
    if (t == hw::Table::Srqc) impl_->srqs.erase(index);
    if (t == hw::Table::Mcg) impl_->reload_mcg(index);
    if (t == hw::Table::Cqc) {
        const uint8_t* e = impl_->entry(hw::Table::Cqc, index);
        if (!e || Impl::g(e, hw::Table::Cqc, hw::cqc::cqn) != index) impl_->cqs.erase(index);
    }
    impl_->tx_flush();  // a QP transition may have sent (RTS: queued WQEs)
    impl_->wake_cq_waiters();  // or completed (ERR: flushed WQEs)
    impl_->mu.unlock();
}

void SoftEngine::qp_modified(uint32_t qpn, hw::QpState, hw::QpState) {
    {
        ++impl_->fence_waiters;
        std::lock_guard<std::recursive_mutex> lk(impl_->mu);
        --impl_->fence_waiters;
        impl_->reload_qp(qpn);
        impl_->tx_flush();
        impl_->wake_cq_waiters();
    }
    // The transition ran on this thread and may have left work for the
    // engine's: frames on the loopback queue (SQD->RTS resumes sending), a
    // timer to arm. Wake it in case it sleeps.
    impl_->wake();
}

void SoftEngine::qp_destroying(uint32_t qpn) {
    std::lock_guard<std::recursive_mutex> lk(impl_->mu);
    impl_->drain_fifos();  // as cq_destroying
    impl_->wc_flush();
    impl_->drop_read_ahead();
    if (impl_->pipe) {
        impl_->pipe->qp_reset(qpn);
        impl_->pipe->forget_doorbells(uint8_t(hw::DbKind::Sq), qpn);
        impl_->pipe->forget_doorbells(uint8_t(hw::DbKind::Rq), qpn);
    }
    impl_->drop_qp(qpn);
}

void SoftEngine::cq_destroying(uint32_t cqn) {
    std::lock_guard<std::recursive_mutex> lk(impl_->mu);
    // Doorbells rung before the command are taken first (PCIe orders the
    // driver's doorbell writes before its command doorbell); on a model
    // device they then die in the pipeline (forget_doorbells).
    impl_->drain_fifos();
    if (impl_->pipe) impl_->pipe->forget_doorbells(uint8_t(hw::DbKind::Cq), cqn);
    impl_->cqs.erase(cqn);
    // A model device's events still held for the model's interrupt go with
    // the CQ: that interrupt, if it comes, finds none (cq_event), and never
    // posts to a CQ that is gone or to a new one given its number.
    impl_->held_cq_events.erase(cqn);
    auto& due = impl_->due_cq_events;
    due.erase(std::remove_if(due.begin(), due.end(), [cqn](const auto& d) { return d.cqn == cqn; }), due.end());
}

void SoftEngine::srq_destroying(uint32_t srqn) {
    std::lock_guard<std::recursive_mutex> lk(impl_->mu);
    impl_->drain_fifos();  // as cq_destroying
    // SRQ numbers are reused lowest-free: a producer index still on its way
    // would make the new SRQ's empty ring look posted.
    if (impl_->pipe) impl_->pipe->forget_doorbells(uint8_t(hw::DbKind::Srq), srqn);
    impl_->srqs.erase(srqn);
}

// MODIFY_SRQ resizing: the producer index the firmware checks must be the
// driver's last doorbell, which may still wait in a FIFO (PCIe orders it
// before the command). A model device executes SRQ doorbells as it takes
// them (Pipeline::doorbell), so none is left on its way after this. The
// WQE peeked from the old ring goes at unfence (srqs.erase).
void SoftEngine::srq_resizing(uint32_t) {
    std::lock_guard<std::recursive_mutex> lk(impl_->mu);
    impl_->drain_fifos();
}

// rxe's provider copies the address vector into each UD WQE, so an AH may
// go as soon as the sends that name it are posted (mckey's sender posts its
// messages, then destroys its AH and QP at once). Here a WQE names the AH,
// and is read when the engine takes its doorbell: the doorbells rung before
// the command are taken, and their WQEs sent, before the AH goes (PCIe
// orders the driver's doorbell writes before its command doorbell). A model
// device simulates until its doorbell block has carried them out
// (TimingModel::take_doorbells; on its own time, to the end).
void SoftEngine::ah_destroying(uint32_t) {
    {
        std::lock_guard<std::recursive_mutex> lk(impl_->mu);
        impl_->drain_group_fifos();
        // Only as far as the doorbells: a fabric never goes idle while a
        // QP's timer re-arms in its simulated time, and this runs under the
        // lock every command and every member device waits for.
        if (impl_->pipe && impl_->pipe->take_doorbells()) impl_->resume_sim = true;
        impl_->wc_flush();
        impl_->tx_flush();
    }
    impl_->wake();  // to simulate what is left
}

bool SoftEngine::cq_copy_entries(const uint8_t* cqc, uint16_t new_domain, uint64_t new_base, uint8_t new_log_size) {
    std::lock_guard<std::recursive_mutex> lk(impl_->mu);
    return impl_->cq_copy_entries(cqc, new_domain, new_base, new_log_size);
}

std::vector<std::pair<std::string, uint64_t>> read_stats(const uint8_t* bar) {
    std::vector<std::pair<std::string, uint64_t>> r;
    const auto block = [&](uint32_t at, const auto& fields) {
        for (const hw::NamedField& f : fields) {
            if (f.field.offset < 0x10) continue;  // the block's header
            r.emplace_back(f.name, __atomic_load_n(reinterpret_cast<const uint64_t*>(bar + at + f.field.offset),
                                                   __ATOMIC_RELAXED));
        }
    };
    block(hw::kBar0StatsBlock, hw::stats_block::kFields);
    block(hw::kBar0CcStatsBlock, hw::cc_stats_block::kFields);
    block(hw::kBar0TxStatsBlock, hw::tx_stats_block::kFields);
    block(hw::kBar0DmaStatsBlock, hw::dma_stats_block::kFields);
    block(hw::kBar0RxStatsBlock, hw::rx_stats_block::kFields);
    return r;
}

std::vector<QpCongestionStats> SoftEngine::congestion_stats() {
    std::lock_guard<std::recursive_mutex> lk(impl_->mu);
    std::vector<QpCongestionStats> r;
    const uint64_t now = impl_->protocol_now();
    for (auto& [n, q] : impl_->qps) {
        if (!q->core) continue;
        const tp::QpCongestionState c = q->core->congestion(now);
        if (!c.on) continue;
        QpCongestionStats s;
        s.qpn = n;
        s.rate_bps = c.rate_bps;
        s.target_rate_bps = c.target_rate_bps;
        s.alpha = c.alpha;
        s.rate_limited = c.rate_limited;
        s.counters = c.counters;
        r.push_back(s);
    }
    std::sort(r.begin(), r.end(), [](const QpCongestionStats& a, const QpCongestionStats& b) { return a.qpn < b.qpn; });
    return r;
}

}  // namespace simnic::soft_engine
