// The soft engine's thread, its context list, the doorbells, the QP life
// cycle and the ports it gives the transport core (see engine.h).
#include "simnic/soft_engine/engine.h"
#include "tx_queue.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <linux/futex.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "simnic/base/clock.h"
#include "simnic/hw/layout.h"
#include "simnic/hw/mmio.h"
#include "simnic/roce/opcode.h"
#include "simnic/roce/packet.h"
#include "simnic/roce/pcap_io.h"
#include "simnic/transport/qp.h"
#include "mpt_mw.h"

namespace simnic::soft_engine {

namespace tp = simnic::transport;
using hw::Table;

namespace {

using base::mono_ns;
uint64_t wall_us() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return uint64_t(ts.tv_sec) * 1000000ull + uint64_t(ts.tv_nsec) / 1000;
}

bool dma(pid_t pid, bool wr, const iovec* remote, size_t nremote, void* local, size_t len) {
    if (len == 0) return true;
    iovec l{local, len};
    const ssize_t n = wr ? process_vm_writev(pid, &l, 1, remote, nremote, 0)
                         : process_vm_readv(pid, &l, 1, remote, nremote, 0);
    return n == static_cast<ssize_t>(len);
}
bool dma_read(pid_t pid, uint64_t addr, void* dst, size_t len) {
    iovec r{reinterpret_cast<void*>(addr), len};
    return dma(pid, false, &r, 1, dst, len);
}
bool dma_write(pid_t pid, uint64_t addr, const void* src, size_t len) {
    iovec r{reinterpret_cast<void*>(addr), len};
    return dma(pid, true, &r, 1, const_cast<void*>(src), len);
}

// Host memory of one DMA domain (hw-spec 1.3): a process, reached with
// process_vm_readv/writev, or a shared object (SHM) that the process mapped
// at map_base and the daemon mapped at `base`, reached with plain loads and
// stores — no system call, as a NIC's DMA needs none.
struct HostDom {
    pid_t pid = 0;
    uint8_t* base = nullptr;
    uint64_t map_base = 0, map_len = 0;
    bool ok() const { return pid > 0 || base != nullptr; }
    // SHM: where [addr, addr + len) is here; null outside the domain.
    uint8_t* at(uint64_t addr, size_t len) const {
        if (!base || addr < map_base || len > map_len || addr - map_base > map_len - len) return nullptr;
        return base + (addr - map_base);
    }
    bool read(uint64_t addr, void* dst, size_t len) const {
        if (len == 0) return true;
        if (!base) return pid > 0 && dma_read(pid, addr, dst, len);
        const uint8_t* p = at(addr, len);
        if (!p) return false;
        std::memcpy(dst, p, len);
        return true;
    }
    bool write(uint64_t addr, const void* src, size_t len) const {
        if (len == 0) return true;
        if (!base) return pid > 0 && dma_write(pid, addr, src, len);
        uint8_t* p = at(addr, len);
        if (!p) return false;
        std::memcpy(p, src, len);
        return true;
    }
};

// The address-vector fields of one of the layouts that embed an AV.
struct AvFields {
    hw::Field dgid, sgid_index, hop_limit, traffic_class, flow_label, dmac;
};
constexpr AvFields kQpcAv{hw::qpc::av_dgid, hw::qpc::av_sgid_index, hw::qpc::av_hop_limit,
                          hw::qpc::av_traffic_class, hw::qpc::av_flow_label, hw::qpc::av_dmac};
constexpr AvFields kAhAv{hw::ah_entry::av_dgid, hw::ah_entry::av_sgid_index, hw::ah_entry::av_hop_limit,
                         hw::ah_entry::av_traffic_class, hw::ah_entry::av_flow_label, hw::ah_entry::av_dmac};
constexpr AvFields kSegAv{hw::av::dgid, hw::av::sgid_index, hw::av::hop_limit,
                          hw::av::traffic_class, hw::av::flow_label, hw::av::dmac};

hw::ErrorCause cause_of(hw::WcStatus s) {
    switch (s) {
        case hw::WcStatus::Success: return hw::ErrorCause::None;
        case hw::WcStatus::LocLenErr: return hw::ErrorCause::LocLen;
        case hw::WcStatus::LocQpOpErr: return hw::ErrorCause::LocQpOp;
        case hw::WcStatus::LocProtErr: return hw::ErrorCause::LocProt;
        case hw::WcStatus::RemAccessErr: return hw::ErrorCause::RemAccess;
        case hw::WcStatus::RemInvReqErr: return hw::ErrorCause::RemInvReq;
        case hw::WcStatus::RemOpErr: return hw::ErrorCause::RemOp;
        case hw::WcStatus::RetryExcErr: return hw::ErrorCause::RetryExc;
        case hw::WcStatus::RnrRetryExcErr: return hw::ErrorCause::RnrRetryExc;
        case hw::WcStatus::BadRespErr: return hw::ErrorCause::BadResp;
        case hw::WcStatus::MwBindErr: return hw::ErrorCause::MwBind;
        default: return hw::ErrorCause::None;
    }
}

}  // namespace


// One QP as the engine runs it: the QPC fields it needs, ring cursors, the
// transport core's Qp, and the ports the core reaches the world through.
struct EQp final : tp::MemoryPort, tp::RecvQueuePort, tp::CompletionPort, tp::WirePort,
                   tp::TimerPort, tp::EventPort {
    EQp(SoftEngine::Impl& e, uint32_t n) : eng(e), qpn(n) {}
    SoftEngine::Impl& eng;
    uint32_t qpn;
    uint16_t ctx = 0;
    HostDom qdom;  // queue memory domain
    hw::QpState hw_state = hw::QpState::Reset;
    hw::QpType type = hw::QpType::Rc;
    uint32_t pdn = 0, send_cqn = 0, recv_cqn = 0, srqn = 0;
    bool srq = false;
    uint64_t sq_base = 0, rq_base = 0;
    uint8_t log_sq_size = 0, log_sq_stride = 6, log_rq_size = 0, log_rq_stride = 4;
    uint32_t max_send_sge = 0, max_recv_sge = 0, max_inline = 0;
    // Ring cursors (free-running).
    uint32_t sq_pi = 0, sq_fetch = 0, rq_pi = 0, rq_ci = 0;
    std::unique_ptr<tp::Qp> tqp;
    // Transport SQ sequence -> ring index, oldest first.
    std::deque<std::pair<uint64_t, uint32_t>> seqmap;
    std::optional<uint32_t> posting_index;
    std::deque<uint32_t> recv_idx;  // ring index of each receive WQE taken, oldest first
    std::optional<tp::RecvWqe> peeked;
    uint64_t timer_deadline[2] = {0, 0};
    uint32_t hi_psn = 0;  // next new request PSN (for counting retransmits)
    hw::ErrorCause fault = hw::ErrorCause::None;  // a fault to act on after the core returns
    hw::ErrorCause cause = hw::ErrorCause::None;
    // What writeback() last wrote to the QPC, per field.
    static constexpr size_t kWriteback = 11;
    std::array<uint64_t, kWriteback> wb{};
    std::array<bool, kWriteback> wb_valid{};

    // MemoryPort
    tp::MemStatus check(tp::KeyKind kind, uint32_t key, uint64_t addr, uint64_t len, uint32_t access) override;
    tp::MemStatus read(tp::KeyKind kind, uint32_t key, uint64_t addr, void* dst, size_t len, uint32_t access) override;
    tp::MemStatus write(tp::KeyKind kind, uint32_t key, uint64_t addr, const void* src, size_t len,
                        uint32_t access) override;
    tp::MemStatus atomic(uint32_t rkey, uint64_t addr, tp::AtomicOp op, uint64_t swap_add, uint64_t compare,
                         uint64_t& orig) override;
    tp::MemStatus invalidate(uint32_t rkey) override;
    tp::MemStatus bind_mw(const tp::MwBind& b) override;
    // RecvQueuePort
    const tp::RecvWqe* peek() override;
    void pop() override;
    // CompletionPort
    void post(tp::CqSide side, const tp::Completion& c, bool solicited) override;
    // WirePort
    void transmit(roce::Packet& pkt) override;
    // TimerPort
    uint64_t now_ns() override { return mono_ns(); }
    void arm(tp::QpTimer t, uint64_t deadline_ns) override { timer_deadline[int(t)] = deadline_ns ? deadline_ns : 1; }
    void cancel(tp::QpTimer t) override { timer_deadline[int(t)] = 0; }
    // EventPort
    void async_event(hw::EventType ev) override;

    tp::TransportEnv env() {
        tp::TransportEnv e;
        e.mem = this;
        e.rq = this;
        e.cq = this;
        e.wire = this;
        e.timers = this;
        e.events = this;
        return e;
    }
};

struct SoftEngine::Impl final : Datapath {
    EngineConfig cfg;
    hw::TableStore& tables;
    std::recursive_mutex mu;
    std::atomic<int> fence_waiters{0};
    std::atomic<bool> stop{false};
    std::thread thread;
    int epfd = -1, wake_fd = -1, timer_fd = -1, rx_fd = -1;
    uint32_t local_ip = 0;  // host order
    // RoCE v2 over IPv6: one socket per IPv6 address of the netdev (the GID
    // table holds them all, as rxe's does), and its scope for link-local ones.
    struct Local6 {
        roce::Ipv6Addr addr{};
        uint32_t scope = 0;
        int rx_fd = -1;
    };
    std::vector<Local6> local6;
    std::unordered_map<uint32_t, int> tx_socks6;  // (address index << 16 | sport) -> socket
    std::unique_ptr<roce::PcapWriter> pcap;

    struct CtxState {
        uint8_t* page = nullptr;
        int engine_fd = -1;
        uint32_t fifo_ci = 0;
        bool cqe_written = false;  // since the last wake_cq_waiters(); listed in cqe_ctxs
    };
    std::map<uint16_t, CtxState> ctxs;
    std::unordered_map<uint32_t, std::unique_ptr<EQp>> qps;
    struct CqState {
        bool notable = false;  // a solicited or error CQE at notable_idx
        uint32_t notable_idx = 0;
    };
    std::unordered_map<uint32_t, CqState> cqs;
    struct SrqState {
        std::optional<tp::RecvWqe> peeked;
    };
    std::unordered_map<uint32_t, SrqState> srqs;
    std::unordered_map<uint16_t, int> tx_socks;
    std::vector<uint8_t> txbuf, wqebuf;
    std::vector<iovec> iov;
    // Model devices: the timing model (timing.h), and the record of the step
    // it is executing (null outside one; always null on a soft device).
    std::unique_ptr<TimingModel> pipe;
    OpRecord* rec = nullptr;
    // Loopback shortcut (EngineConfig::loopback): self-addressed IP packets
    // waiting for this device's RX, and spare buffers for them.
    std::deque<std::vector<uint8_t>> loop_q;
    std::vector<std::vector<uint8_t>> loop_spare;
    uint32_t sock_quiet = 0, sock_skip = 0;  // socket passes that found nothing
    static constexpr int kRxBatch = 16;
    static constexpr size_t kRxCtl = 256;
    std::vector<std::vector<uint8_t>> rx_bufs;  // recvmmsg's buffers, IP + UDP header room first
    std::vector<char> rx_ctl;
    uint8_t port_mac[6] = {};
    // QP1 (GSI): its next PSN. Its MADs come from and go to the daemon's CM
    // agent (EngineConfig::gsi_rx, SoftEngine::gsi_send).
    static constexpr uint32_t kGsiQpn = 1, kGsiQkey = 0x80010000;
    uint32_t gsi_psn = 0;
    std::vector<uint8_t> gsi_buf;

    void gsi_receive(const roce::Packet& pkt) {
        if (pkt.hdr.bth.opcode != roce::op::UD_SEND_ONLY || pkt.hdr.deth.qkey != kGsiQkey || !cfg.gsi_rx) {
            stat(hw::stats_block::rx_drops_no_qp);
            return;
        }
        std::array<uint8_t, 16> src{}, dst{};
        if (pkt.ip_version == roce::IpVersion::V4) {
            src[10] = src[11] = dst[10] = dst[11] = 0xff;
            for (int i = 0; i < 4; ++i) {
                src[size_t(12 + i)] = uint8_t(pkt.ip4.src >> (24 - 8 * i));
                dst[size_t(12 + i)] = uint8_t(pkt.ip4.dst >> (24 - 8 * i));
            }
        } else {
            std::copy(pkt.ip6.src.begin(), pkt.ip6.src.end(), src.begin());
            std::copy(pkt.ip6.dst.begin(), pkt.ip6.dst.end(), dst.begin());
        }
        cfg.gsi_rx(pkt.payload, pkt.payload_len, src, dst);
    }

    explicit Impl(const EngineConfig& c) : cfg(c), tables(*c.tables) {}
    ~Impl() {
        for (int fd : {epfd, wake_fd, timer_fd, rx_fd})
            if (fd >= 0) close(fd);
        for (const Local6& l : local6)
            if (l.rx_fd >= 0) close(l.rx_fd);
        for (auto& s6 : tx_socks6)
            if (s6.second >= 0) close(s6.second);
        for (auto& s : tx_socks)
            if (s.second >= 0) close(s.second);
    }

    // ---- statistics (hw-spec 2.6) ----
    void stat(hw::Field f, uint64_t n = 1) {
        if (!cfg.bar) return;
        __atomic_fetch_add(reinterpret_cast<uint64_t*>(cfg.bar + hw::kBar0StatsBlock + f.offset), n,
                           __ATOMIC_RELAXED);
    }

    // ---- tables ----
    uint8_t* entry(Table t, uint32_t i) { return tables.entry(t, i); }
    static uint64_t g(const uint8_t* e, Table t, hw::Field f) { return hw::get(e, hw::entry_size(t), f); }
    static void s(uint8_t* e, Table t, hw::Field f, uint64_t v) {
        hw::set(e, hw::entry_size(t), f, v & hw::mask_of(f.width));
    }

    // The host memory of domain `dom`, PROCESS or SHM.
    std::unordered_map<uint64_t, std::pair<uint8_t*, uint64_t>> shm_views;  // (ctx, handle) -> mapping
    bool host_dom(uint32_t dom, HostDom& h) {
        h = HostDom{};
        const uint8_t* d = entry(Table::Domain, dom);
        if (!d || dom == 0 || !g(d, Table::Domain, hw::domain_entry::valid)) return false;
        const uint64_t kind = g(d, Table::Domain, hw::domain_entry::kind);
        if (kind == uint64_t(hw::DomainKind::Process)) {
            h.pid = static_cast<pid_t>(g(d, Table::Domain, hw::domain_entry::pid));
            return h.pid > 0;
        }
        if (kind != uint64_t(hw::DomainKind::Shm) || !cfg.shm) return false;
        const uint64_t ctx = g(d, Table::Domain, hw::domain_entry::ctx_id);
        const uint64_t handle = g(d, Table::Domain, hw::domain_entry::shm_handle);
        auto it = shm_views.find(ctx << 32 | handle);
        if (it == shm_views.end()) {
            uint64_t size = 0;
            uint8_t* p = cfg.shm(uint16_t(ctx), uint32_t(handle), size);
            if (!p) return false;
            it = shm_views.emplace(ctx << 32 | handle, std::make_pair(p, size)).first;
        }
        h.base = it->second.first;
        h.map_base = g(d, Table::Domain, hw::domain_entry::map_base);
        h.map_len = std::min(g(d, Table::Domain, hw::domain_entry::map_len), it->second.second);
        return true;
    }

    bool domain_pid(uint32_t dom, pid_t& pid) {
        const uint8_t* d = entry(Table::Domain, dom);
        if (!d || dom == 0 || !g(d, Table::Domain, hw::domain_entry::valid) ||
            g(d, Table::Domain, hw::domain_entry::kind) != uint64_t(hw::DomainKind::Process))
            return false;
        pid = static_cast<pid_t>(g(d, Table::Domain, hw::domain_entry::pid));
        return pid > 0;
    }

    // ---- events ----
    void post_event(uint16_t ctx, hw::EventType type, uint32_t obj, uint32_t aux = 0) {
        if (rec) rec->add(Op::Kind::Eqe, uint32_t(type));
        wc_flush();
        uint8_t e[hw::eqe::kSize] = {};
        hw::set(e, hw::eqe::event_type, uint8_t(type));
        hw::set(e, hw::eqe::obj_num, obj & 0xFFFFFF);
        hw::set(e, hw::eqe::aux, aux);
        cfg.events->post_eqe(ctx, e, sizeof e);
    }

    // ---- MR check and translation (hw-spec 11.2) ----
    // The MPT entries in use, decoded once: every packet checks one, and the
    // bit-field reads were a tenth of the engine's time. The firmware changes
    // an MPT or domain entry only between fence() and unfence(), which drop
    // what they cover (see SoftEngine::unfence).
    struct MptView {
        bool valid = false, zero_based = false, mtt_mode = false;
        bool mw = false;  // a memory window: resolved through its MR (mw.h)
        uint32_t key = 0, ctx = 0, pdn = 0, rights = 0, domain = 0, log_page = 0, mtt_base = 0, mtt_count = 0;
        uint64_t iova = 0, length = 0, host_addr = 0;
        pid_t pid = 0;  // of `domain`, 0 if it has none
    };
    std::unordered_map<uint32_t, MptView> mpt_views;
    const MptView* mpt_view(uint32_t idx) {
        auto it = mpt_views.find(idx);
        if (it != mpt_views.end()) return &it->second;
        const uint8_t* m = idx ? entry(Table::Mpt, idx) : nullptr;
        if (!m) return nullptr;
        MptView v;
        v.valid = g(m, Table::Mpt, hw::mpt_entry::valid) != 0;
        v.key = uint32_t(g(m, Table::Mpt, hw::mpt_entry::key));
        v.ctx = uint32_t(g(m, Table::Mpt, hw::mpt_entry::ctx_id));
        v.pdn = uint32_t(g(m, Table::Mpt, hw::mpt_entry::pdn));
        v.rights = uint32_t(g(m, Table::Mpt, hw::mpt_entry::access));
        v.iova = g(m, Table::Mpt, hw::mpt_entry::iova_start);
        v.length = g(m, Table::Mpt, hw::mpt_entry::length);
        v.zero_based = g(m, Table::Mpt, hw::mpt_entry::zero_based) != 0;
        v.mtt_mode = g(m, Table::Mpt, hw::mpt_entry::mtt_mode) != 0;
        v.host_addr = g(m, Table::Mpt, hw::mpt_entry::host_addr);
        v.log_page = uint32_t(g(m, Table::Mpt, hw::mpt_entry::log_page_size));
        v.mtt_base = uint32_t(g(m, Table::Mpt, hw::mpt_entry::mtt_base));
        v.mtt_count = uint32_t(g(m, Table::Mpt, hw::mpt_entry::mtt_count));
        v.domain = uint32_t(g(m, Table::Mpt, hw::mpt_entry::domain_id));
        v.mw = mpt_is_mw(m);
        if (!domain_pid(v.domain, v.pid)) v.pid = 0;
        return &mpt_views.emplace(idx, v).first->second;
    }
    // `quiet`: a read-ahead's look, which counts nothing.
    tp::MemStatus translate(const EQp& q, tp::KeyKind kind, uint32_t key, uint64_t va, uint64_t len,
                            uint32_t access, pid_t* pid, std::vector<iovec>* out, bool quiet = false,
                            uint64_t* room = nullptr) {
        uint32_t idx = hw::key_index(key);
        const MptView* m = mpt_view(idx);
        if (rec && !quiet) rec->add(Op::Kind::Mpt, idx);
        auto stat = [&](hw::Field f) {
            if (!quiet) this->stat(f);
        };
        auto refuse = [&](tp::MemStatus st) {
            stat(kind == tp::KeyKind::Lkey ? hw::stats_block::local_prot_err : hw::stats_block::remote_access_err);
            return st;
        };
        bool windowed = false;
        if (m && m->valid && m->mw) {
            // An rkey naming a window (hw-spec 11.2): the window's checks, then
            // the access goes on in the MR it is bound to, at the MR address.
            if (kind != tp::KeyKind::Rkey || m->ctx != q.ctx) return refuse(tp::MemStatus::BadKey);
            const tp::MwRecord w = read_mw(entry(Table::Mpt, idx));
            uint64_t mr_va = 0;
            const tp::MemStatus st = tp::window_access(w, key, tp::MwQp{q.qpn, q.pdn}, va, len, access, mr_va);
            if (st != tp::MemStatus::Ok) return refuse(st);
            key = w.mr_key;
            va = mr_va;
            idx = hw::key_index(key);
            m = mpt_view(idx);
            if (rec && !quiet) rec->add(Op::Kind::Mpt, idx);
            windowed = true;
        }
        if (!m || !m->valid || m->mw || m->key != key || m->ctx != q.ctx) return refuse(tp::MemStatus::BadKey);
        // Through a window, the bind checked the MR's PD and rights (rxe).
        if (!windowed && m->pdn != q.pdn) return refuse(tp::MemStatus::BadKey);
        if (!windowed && (m->rights & access) != access) return refuse(tp::MemStatus::NoPermission);
        const uint64_t iova = m->iova;
        const uint64_t mlen = m->length;
        const bool zb = m->zero_based;
        const uint64_t start = zb ? 0 : iova;
        if (va < start || va + len < va || va + len > start + mlen) return refuse(tp::MemStatus::OutOfBounds);
        if (room) *room = start + mlen - va;
        if (!pid) return tp::MemStatus::Ok;
        if (m->pid <= 0) {
            stat(hw::stats_block::dma_faults);
            return refuse(tp::MemStatus::BadKey);
        }
        *pid = m->pid;
        out->clear();
        const uint64_t off0 = va - start;
        if (!m->mtt_mode) {
            out->push_back(iovec{reinterpret_cast<void*>(m->host_addr + off0), len});
            return tp::MemStatus::Ok;
        }
        const uint32_t lps = m->log_page;
        const uint64_t ps = uint64_t{1} << lps;
        const uint64_t base_off = (zb ? 0 : (iova & (ps - 1)));
        uint64_t off = off0 + base_off;
        uint64_t left = len;
        const uint32_t mtt_base = m->mtt_base;
        const uint32_t mtt_count = m->mtt_count;
        while (left > 0) {
            const uint64_t page = off >> lps;
            if (page >= mtt_count) return refuse(tp::MemStatus::OutOfBounds);
            const uint8_t* t = entry(Table::Mtt, mtt_base + uint32_t(page));
            if (rec && !quiet) rec->add(Op::Kind::Mtt, mtt_base + uint32_t(page));
            const uint64_t pa = t ? g(t, Table::Mtt, hw::mtt_entry::page_addr) : 0;
            if (pa == 0) {
                stat(hw::stats_block::dma_faults);
                return refuse(tp::MemStatus::OutOfBounds);
            }
            const uint64_t in = off & (ps - 1);
            const uint64_t n = std::min(left, ps - in);
            if (!out->empty() && reinterpret_cast<uint64_t>(out->back().iov_base) + out->back().iov_len == pa + in)
                out->back().iov_len += n;
            else
                out->push_back(iovec{reinterpret_cast<void*>(pa + in), n});
            off += n;
            left -= n;
        }
        return tp::MemStatus::Ok;
    }

    // ---- memory windows (hw-spec 6.5): the engine writes the ENG fields ----
    // The MPT entry a key of the QP's context names, or null.
    uint8_t* mpt_of(const EQp& q, uint32_t key) {
        const uint32_t idx = hw::key_index(key);
        uint8_t* e = idx ? entry(Table::Mpt, idx) : nullptr;
        if (!e || !g(e, Table::Mpt, hw::mpt_entry::valid) || g(e, Table::Mpt, hw::mpt_entry::ctx_id) != q.ctx)
            return nullptr;
        if (rec) rec->add(Op::Kind::Mpt, idx);
        return e;
    }
    // One more or one fewer window bound to the MR `key` (rxe's num_mw).
    void count_mw(const EQp& q, uint32_t key, int delta) {
        if (uint8_t* mr = key ? mpt_of(q, key) : nullptr) {
            const uint64_t n = g(mr, Table::Mpt, hw::mpt_entry::mw_count);
            s(mr, Table::Mpt, hw::mpt_entry::mw_count, delta > 0 ? n + 1 : (n ? n - 1 : 0));
        }
    }
    tp::MemStatus bind_mw(const EQp& q, const tp::MwBind& b) {
        uint8_t* e = mpt_of(q, b.mw_rkey);
        if (!e || !mpt_is_mw(e)) return tp::MemStatus::BadKey;
        tp::MwRecord w = read_mw(e);
        uint8_t* mr = b.length ? mpt_of(q, b.mr_lkey) : nullptr;
        if (mr && mpt_is_mw(mr)) mr = nullptr;
        tp::MrFacts f;
        if (mr) f = read_mr_facts(mr);
        const tp::MwQp qp{q.qpn, q.pdn};
        const tp::MemStatus st = tp::check_bind(w, mr ? &f : nullptr, b, qp);
        if (st != tp::MemStatus::Ok) return st;
        count_mw(q, w.mr_key, -1);
        tp::apply_bind(w, b, qp);
        write_mw(e, w);
        count_mw(q, w.mr_key, +1);
        mpt_views.erase(hw::key_index(b.mw_rkey));
        return tp::MemStatus::Ok;
    }
    // LOCAL_INV and SEND_WITH_INV. Only windows: rxe invalidates fast-
    // registration MRs alone, and every MR here is a user MR.
    tp::MemStatus invalidate(const EQp& q, uint32_t rkey) {
        uint8_t* e = mpt_of(q, rkey);
        if (!e || !mpt_is_mw(e)) return tp::MemStatus::BadKey;
        tp::MwRecord w = read_mw(e);
        const tp::MemStatus st = tp::check_invalidate(w, rkey);
        if (st != tp::MemStatus::Ok || w.state != hw::MwState::Valid) return st;
        count_mw(q, w.mr_key, -1);
        tp::apply_invalidate(w);
        write_mw(e, w);
        mpt_views.erase(hw::key_index(rkey));
        return tp::MemStatus::Ok;
    }

    // Read-ahead of a requester's gather (lkey reads): the first packet of a
    // message reads up to kReadAhead bytes of the SGE in one process_vm_readv
    // and the following packets copy from it. Hardware may fetch a posted
    // WQE's data at any time before it completes, and the application may
    // change the buffer only after a completion the engine writes; the copy
    // is dropped on every CQE, every write to host memory and whenever the
    // engine's lock is released, so it never outlives that window.
    static constexpr size_t kReadAhead = 64 * 1024;
    struct ReadAhead {
        bool valid = false;
        uint16_t ctx = 0;
        uint32_t key = 0;
        uint64_t va = 0;
        size_t len = 0;
        std::vector<uint8_t> buf;
    } ra;
    std::vector<iovec> ra_iov;
    void drop_read_ahead() { ra.valid = false; }
    bool read_ahead(const EQp& q, uint32_t key, uint64_t va, void* dst, size_t len, uint64_t room) {
        if (ra.valid && ra.ctx == q.ctx && ra.key == key && va >= ra.va && va - ra.va + len <= ra.len) {
            std::memcpy(dst, ra.buf.data() + (va - ra.va), len);
            return true;
        }
        // Only a full packet's read (len >= 1 KiB, the smallest MTU) hints at
        // more of the same message; read at most 16 packets ahead, so a small
        // message in a large MR does not pay for 64 KiB.
        if (len < 1024) return false;
        const size_t ahead = size_t(std::min<uint64_t>({room, kReadAhead, uint64_t{16} * len}));
        if (ahead <= len) return false;
        pid_t pid = 0;
        ra.valid = false;
        if (translate(q, tp::KeyKind::Lkey, key, va, ahead, 0, &pid, &ra_iov, true) != tp::MemStatus::Ok) return false;
        ra.buf.resize(kReadAhead);
        if (!dma(pid, false, ra_iov.data(), ra_iov.size(), ra.buf.data(), ahead)) return false;
        ra = ReadAhead{true, q.ctx, key, va, ahead, std::move(ra.buf)};
        std::memcpy(dst, ra.buf.data(), len);
        return true;
    }

    // Write combining (soft device): the packets of one message land at
    // consecutive host addresses, so their payload writes are gathered and
    // done with one process_vm_writev instead of one per packet. They are
    // posted writes, as a NIC's are, and are flushed before anything that
    // must observe them: a CQE or an EQE, any read of registered memory, the
    // firmware's fence, and the end of every engine batch. Every packet's
    // write was checked against its MR before it was gathered.
    static constexpr size_t kCombineMax = 256 * 1024;
    struct WriteCombine {
        bool active = false;
        pid_t pid = 0;
        uint32_t qpn = 0;
        uint64_t addr = 0;  // host address of data[0]
        std::vector<uint8_t> data;
    } wc;
    void wc_flush() {
        if (!wc.active) return;
        wc.active = false;
        if (!dma_write(wc.pid, wc.addr, wc.data.data(), wc.data.size())) {
            // The memory went away under a registered MR: the QP cannot
            // deliver what it acknowledged. It goes to the error state.
            stat(hw::stats_block::dma_faults);
            auto it = qps.find(wc.qpn);
            if (it != qps.end()) it->second->fault = hw::ErrorCause::QueueFault;
        }
        wc.data.clear();
    }
    bool wc_add(const EQp& q, pid_t pid, const iovec& dst, const void* src, size_t len) {
        const uint64_t a = reinterpret_cast<uint64_t>(dst.iov_base);
        if (wc.active && (wc.pid != pid || wc.qpn != q.qpn || wc.addr + wc.data.size() != a ||
                          wc.data.size() + len > kCombineMax))
            wc_flush();
        if (!wc.active) {
            wc.active = true;
            wc.pid = pid;
            wc.qpn = q.qpn;
            wc.addr = a;
        }
        const uint8_t* p = static_cast<const uint8_t*>(src);
        wc.data.insert(wc.data.end(), p, p + len);
        return true;
    }

    tp::MemStatus mem_io(const EQp& q, tp::KeyKind kind, uint32_t key, uint64_t va, void* buf, size_t len,
                         uint32_t access, bool wr) {
        pid_t pid = 0;
        uint64_t room = 0;
        const tp::MemStatus st = translate(q, kind, key, va, len, access, &pid, &iov, false, &room);
        if (st != tp::MemStatus::Ok || len == 0) return st;
        // The model charges every packet's own DMA: no read-ahead or write
        // combining there.
        if (wr) {
            drop_read_ahead();
            if (!pipe && access != hw::access::kRemoteAtomic && iov.size() == 1 && len <= kCombineMax &&
                wc_add(q, pid, iov[0], buf, len))
                return tp::MemStatus::Ok;
        }
        wc_flush();  // a read (or an uncombined write) sees every earlier write
        if (!wr && !pipe && kind == tp::KeyKind::Lkey && access == 0 && read_ahead(q, key, va, buf, len, room))
            return tp::MemStatus::Ok;
        if (!dma(pid, wr, iov.data(), iov.size(), buf, len)) {
            stat(hw::stats_block::dma_faults);
            stat(kind == tp::KeyKind::Lkey ? hw::stats_block::local_prot_err : hw::stats_block::remote_access_err);
            return tp::MemStatus::OutOfBounds;
        }
        if (rec)
            rec->add(wr ? Op::Kind::DmaWrite : Op::Kind::DmaRead, 0, uint32_t(len), 0,
                     access == hw::access::kRemoteAtomic ? DmaPurpose::Atomic : DmaPurpose::Payload);
        return tp::MemStatus::Ok;
    }

    // ---- receive WQEs ----
    bool parse_recv(const HostDom& dom, uint64_t addr, uint32_t stride, uint32_t max_sge, tp::RecvWqe& w) {
        wqebuf.resize(stride);
        if (!dom.read(addr, wqebuf.data(), stride)) return false;
        if (rec) rec->add(Op::Kind::DmaRead, 0, stride, 0, DmaPurpose::RecvWqe);
        w = tp::RecvWqe{};
        w.wr_id = hw::get(wqebuf.data(), stride, hw::recv_wqe::wr_id);
        const uint32_t n = uint32_t(hw::get(wqebuf.data(), stride, hw::recv_wqe::num_sge));
        if (n > max_sge || hw::recv_wqe::kSize + n * hw::data_seg::kSize > stride) return false;
        for (uint32_t i = 0; i < n; ++i) {
            const uint8_t* d = wqebuf.data() + hw::recv_wqe::kSize + i * hw::data_seg::kSize;
            tp::Sge sge;
            sge.addr = hw::get(d, hw::data_seg::kSize, hw::data_seg::addr);
            sge.length = uint32_t(hw::get(d, hw::data_seg::kSize, hw::data_seg::length));
            sge.lkey = uint32_t(hw::get(d, hw::data_seg::kSize, hw::data_seg::lkey));
            w.sg.push(sge);
        }
        return true;
    }

    const tp::RecvWqe* srq_peek(EQp& q) {
        uint8_t* e = entry(Table::Srqc, q.srqn);
        if (!e || g(e, Table::Srqc, hw::srqc::srqn) != q.srqn || g(e, Table::Srqc, hw::srqc::error)) return nullptr;
        SrqState& st = srqs[q.srqn];
        if (st.peeked) return &*st.peeked;
        const uint32_t pi = uint32_t(g(e, Table::Srqc, hw::srqc::pi)), ci = uint32_t(g(e, Table::Srqc, hw::srqc::ci));
        if (pi == ci) return nullptr;
        const uint8_t ls = uint8_t(g(e, Table::Srqc, hw::srqc::log_size));
        const uint8_t lst = uint8_t(g(e, Table::Srqc, hw::srqc::log_stride));
        HostDom dom;
        tp::RecvWqe w;
        if (!host_dom(uint32_t(g(e, Table::Srqc, hw::srqc::domain_id)), dom) ||
            !parse_recv(dom, g(e, Table::Srqc, hw::srqc::base) + (uint64_t{hw::ring_slot(ci, ls)} << lst),
                        1u << lst, uint32_t(g(e, Table::Srqc, hw::srqc::max_sge)), w)) {
            stat(hw::stats_block::dma_faults);
            s(e, Table::Srqc, hw::srqc::error, 1);
            post_event(uint16_t(g(e, Table::Srqc, hw::srqc::ctx_id)), hw::EventType::SrqErr, q.srqn,
                       uint32_t(hw::ErrorCause::SrqFault));
            return nullptr;
        }
        st.peeked = w;
        return &*st.peeked;
    }
    uint32_t srq_pop(EQp& q) {
        uint8_t* e = entry(Table::Srqc, q.srqn);
        srqs[q.srqn].peeked.reset();
        if (!e) return 0;
        const uint32_t ci = uint32_t(g(e, Table::Srqc, hw::srqc::ci));
        const uint32_t pi = uint32_t(g(e, Table::Srqc, hw::srqc::pi));
        s(e, Table::Srqc, hw::srqc::ci, ci + 1);
        if (g(e, Table::Srqc, hw::srqc::limit_armed) && pi - (ci + 1) < g(e, Table::Srqc, hw::srqc::srq_limit)) {
            s(e, Table::Srqc, hw::srqc::limit_armed, 0);
            post_event(uint16_t(g(e, Table::Srqc, hw::srqc::ctx_id)), hw::EventType::SrqLimitReached, q.srqn);
        }
        return ci;
    }

    // ---- CQEs (hw-spec 7) ----
    // Writes the CQE's first `od` bytes, then the 4 bytes holding the owner
    // bit, so that a consumer never sees the new owner with an old body.
    static bool write_cqe_ordered(const HostDom& dom, uint64_t slot, uint8_t* b, uint32_t od) {
        if (dom.base) {
            // Shared memory: the body, then the owner dword with release
            // order, which the driver's acquire load pairs with.
            uint8_t* p = dom.at(slot, size_t(od) + 4);
            if (!p || (reinterpret_cast<uintptr_t>(p + od) & 3) != 0) return false;
            std::memcpy(p, b, od);
            uint32_t w;
            std::memcpy(&w, b + od, 4);
            __atomic_store_n(reinterpret_cast<uint32_t*>(p + od), w, __ATOMIC_RELEASE);
            return true;
        }
        const pid_t pid = dom.pid;
#if defined(__x86_64__) || defined(__i386__)
        // One system call: the kernel copies the remote iovecs one after the
        // other, each a separate copy, and x86 makes stores visible in
        // program order, so the owner word still lands after the body.
        iovec r[2] = {{reinterpret_cast<void*>(slot), od}, {reinterpret_cast<void*>(slot + od), 4}};
        return dma(pid, true, r, 2, b, size_t(od) + 4);
#else
        return dma_write(pid, slot, b, od) && dma_write(pid, slot + od, b + od, 4);
#endif
    }
    void cq_error(uint8_t* e, uint32_t cqn) {
        s(e, Table::Cqc, hw::cqc::error, 1);
        post_event(uint16_t(g(e, Table::Cqc, hw::cqc::ctx_id)), hw::EventType::CqErr, cqn);
    }
    // Returns false when the CQ overflowed (the QP then goes to ERR).
    bool write_cqe(uint32_t cqn, const tp::Completion& c, uint32_t wqe_index, bool is_send, bool solicited) {
        uint8_t* e = entry(Table::Cqc, cqn);
        if (!e || cqn == 0 || g(e, Table::Cqc, hw::cqc::cqn) != cqn || g(e, Table::Cqc, hw::cqc::error)) return true;
        const uint8_t n = uint8_t(g(e, Table::Cqc, hw::cqc::log_size));
        const uint32_t pi = uint32_t(g(e, Table::Cqc, hw::cqc::pi)), ci = uint32_t(g(e, Table::Cqc, hw::cqc::ci));
        if (pi - ci >= (1u << n)) {
            stat(hw::stats_block::cq_overflows);
            cq_error(e, cqn);
            return false;
        }
        drop_read_ahead();
        wc_flush();  // the data a CQE completes is in memory before the CQE
        uint8_t b[hw::cqe::kSize] = {};
        hw::set(b, hw::cqe::wr_id, c.wr_id);
        hw::set(b, hw::cqe::status, uint8_t(c.status));
        hw::set(b, hw::cqe::opcode, uint8_t(c.opcode));
        hw::set(b, hw::cqe::wc_flags, c.wc_flags & 0xFF);
        hw::set(b, hw::cqe::vendor_err, c.vendor_err);
        hw::set(b, hw::cqe::byte_len, c.byte_len);
        hw::set(b, hw::cqe::imm_inv, c.imm_data);
        hw::set(b, hw::cqe::qp_num, c.qp_num & 0xFFFFFF);
        hw::set(b, hw::cqe::src_qp, c.src_qp & 0xFFFFFF);
        hw::set(b, hw::cqe::is_send, is_send ? 1 : 0);
        hw::set(b, hw::cqe::wqe_index, wqe_index);
        hw::set(b, hw::cqe::owner, hw::phase_of(pi, n));
        HostDom dom;
        const uint64_t slot = g(e, Table::Cqc, hw::cqc::base) + uint64_t{hw::ring_slot(pi, n)} * hw::cqe::kSize;
        const uint32_t od = hw::cqe::owner.offset;
        if (!host_dom(uint32_t(g(e, Table::Cqc, hw::cqc::domain_id)), dom) || !write_cqe_ordered(dom, slot, b, od)) {
            stat(hw::stats_block::dma_faults);
            cq_error(e, cqn);
            return false;
        }
        s(e, Table::Cqc, hw::cqc::pi, pi + 1);
        {
            const auto id = uint16_t(g(e, Table::Cqc, hw::cqc::ctx_id));
            auto it = ctxs.find(id);
            if (it != ctxs.end() && !it->second.cqe_written) {
                it->second.cqe_written = true;
                cqe_ctxs.push_back(id);
            }
        }
        if (rec) rec->add(Op::Kind::Cqe, cqn, 0, wqe_index, DmaPurpose::Cqe, is_send);
        const bool notable = solicited || c.status != hw::WcStatus::Success;
        if (notable) cqs[cqn] = CqState{true, pi};
        const uint64_t arm = g(e, Table::Cqc, hw::cqc::arm);
        if (arm == uint64_t(hw::CqArm::Next) || (arm == uint64_t(hw::CqArm::Solicited) && notable)) {
            s(e, Table::Cqc, hw::cqc::arm, 0);
            post_event(uint16_t(g(e, Table::Cqc, hw::cqc::ctx_id)), hw::EventType::Completion, cqn);
        }
        return true;
    }

    // Completion wake-up (hw-spec 3.5): a driver thread that found its CQs
    // empty for a while sleeps on CQ_WAKE_SEQ of its context page instead of
    // spinning. After the CQEs of a batch are written, every context that got
    // one and has sleepers is woken; the full fence pairs with the driver's
    // (it registers in CQ_WAITERS, fences, then looks at its CQs once more).
    // Runs after every engine batch: it looks only at the contexts that got
    // a CQE (cqe_ctxs), not at every open context.
    std::vector<uint16_t> cqe_ctxs;  // contexts with cqe_written set
    void wake_cq_waiters() {
        if (cqe_ctxs.empty()) return;
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        for (const uint16_t id : cqe_ctxs) {
            auto it = ctxs.find(id);
            if (it == ctxs.end()) continue;  // closed since
            CtxState& c = it->second;
            c.cqe_written = false;
            constexpr uint32_t f = hw::kCtxDbFifo;
            if (hw::mmio_load32(c.page, f + hw::db_fifo_regs::cq_waiters.offset) == 0) continue;
            auto* seq = reinterpret_cast<uint32_t*>(c.page + f + hw::db_fifo_regs::cq_wake_seq.offset);
            __atomic_fetch_add(seq, 1, __ATOMIC_RELEASE);
            syscall(SYS_futex, seq, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
        }
        cqe_ctxs.clear();
    }

    void cq_doorbell(uint16_t ctx, uint32_t cqn, uint32_t ci, uint32_t cmd) {
        uint8_t* e = entry(Table::Cqc, cqn);
        if (!e || cqn == 0 || g(e, Table::Cqc, hw::cqc::cqn) != cqn || g(e, Table::Cqc, hw::cqc::ctx_id) != ctx) {
            stat(hw::stats_block::dma_faults);
            return;
        }
        const uint32_t pi = uint32_t(g(e, Table::Cqc, hw::cqc::pi));
        const uint32_t old_ci = uint32_t(g(e, Table::Cqc, hw::cqc::ci));
        if (ci - old_ci > pi - old_ci) {
            // A consumer index past the producer index is no consumer of
            // this CQ: a driver's bad doorbell. Taken, it would make the CQ
            // look overfull. (Doorbells of a destroyed CQ whose number was
            // reused are stopped earlier: cq_destroying, forget_doorbells.)
            stat(hw::stats_block::dma_faults);
            return;
        }
        s(e, Table::Cqc, hw::cqc::ci, ci);
        if (cmd != uint32_t(hw::CqArm::Next) && cmd != uint32_t(hw::CqArm::Solicited)) return;
        bool fire = false;
        if (cmd == uint32_t(hw::CqArm::Next)) {
            fire = pi != ci;
        } else {
            const CqState& st = cqs[cqn];
            fire = st.notable && st.notable_idx - ci < pi - ci;
        }
        if (fire) {
            s(e, Table::Cqc, hw::cqc::arm, 0);
            post_event(ctx, hw::EventType::Completion, cqn);
        } else {
            s(e, Table::Cqc, hw::cqc::arm, cmd);
        }
    }

    // ---- wire (wire.cc) ----
    bool open_wire(std::string& err);
    int tx_sock(uint16_t sport);
    int tx_sock6(size_t idx, uint16_t sport);
    // The index in local6 of an IPv6 address of this device, or -1.
    int local6_index(const uint8_t* a) const {
        for (size_t i = 0; i < local6.size(); ++i)
            if (std::memcmp(local6[i].addr.data(), a, 16) == 0) return int(i);
        return -1;
    }
    void transmit(EQp& q, roce::Packet& pkt);
    void send_frame(const uint8_t* frame, size_t len);
    void tx_flush() {
        if (tx) tx->flush();
    }
    std::unique_ptr<TxQueue> tx;  // MAC TX (tx_queue.h); made by create()
    bool rx_batch();
    void rx_deliver(const uint8_t* ip_packet, size_t len, bool trusted = false);
    void deliver_ip(const uint8_t* ip, size_t total);
    static void put_udp(uint8_t* udp, uint16_t sport, size_t n);

    // ---- QPs ----
    void build_av(const uint8_t* buf, size_t len, const AvFields& f, tp::AddressVector& av) {
        uint8_t dgid[16] = {};
        hw::get_bytes(buf, len, f.dgid, dgid, 16);
        const uint32_t sidx = uint32_t(hw::get(buf, len, f.sgid_index));
        uint8_t sgid[16] = {};
        if (const uint8_t* ge = entry(Table::Gid, sidx)) hw::get_bytes(ge, hw::gid_entry::kSize, hw::gid_entry::gid, sgid, 16);
        av = tp::AddressVector{};
        // An IPv4-mapped GID (::ffff:a.b.c.d) is RoCE v2 over IPv4; any other
        // GID is an IPv6 address (RoCE v2 over IPv6), as rxe decides.
        static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (std::memcmp(dgid, kMapped, 12) == 0) {
            av.ip_version = roce::IpVersion::V4;
            av.dst_ip4 = uint32_t(dgid[12]) << 24 | uint32_t(dgid[13]) << 16 | uint32_t(dgid[14]) << 8 | dgid[15];
            av.src_ip4 = uint32_t(sgid[12]) << 24 | uint32_t(sgid[13]) << 16 | uint32_t(sgid[14]) << 8 | sgid[15];
            if (av.src_ip4 == 0) av.src_ip4 = local_ip;
        } else {
            av.ip_version = roce::IpVersion::V6;
            std::copy(dgid, dgid + 16, av.dst_ip6.begin());
            std::copy(sgid, sgid + 16, av.src_ip6.begin());
        }
        uint8_t mac[6] = {};
        hw::get_bytes(buf, len, f.dmac, mac, 6);
        std::copy(mac, mac + 6, av.dst_mac.begin());
        if (cfg.bar) {
            uint8_t smac[6] = {};
            hw::get_bytes(cfg.bar + hw::kBar0PortBlock, hw::port_block::kSize, hw::port_block::mac, smac, 6);
            std::copy(smac, smac + 6, av.src_mac.begin());
        }
        av.flow_label = uint32_t(hw::get(buf, len, f.flow_label));
        const uint8_t hl = uint8_t(hw::get(buf, len, f.hop_limit));
        av.hop_limit = hl ? hl : 64;
        av.traffic_class = uint8_t(hw::get(buf, len, f.traffic_class));
    }

    tp::QpConfig qp_config(const EQp& q, const uint8_t* e) {
        tp::QpConfig c;
        c.type = q.type;
        c.qpn = q.qpn;
        c.dest_qpn = uint32_t(g(e, Table::Qpc, hw::qpc::dest_qpn));
        // The port's active MTU bounds every QP (hw-spec 5.6.7: a larger path MTU is
        // clamped to it, as rxe does). A UD QP has no path MTU of its own: like
        // rxe's get_mtu(), its messages are bounded by the port's active MTU.
        uint8_t active = cfg.bar ? uint8_t(hw::get(cfg.bar + hw::kBar0PortBlock, hw::port_block::kSize,
                                                   hw::port_block::active_mtu))
                                 : 0;
        if (active < 1 || active > 5) active = uint8_t(roce::IbMtu::Mtu1024);
        uint8_t mtu = uint8_t(g(e, Table::Qpc, hw::qpc::path_mtu));
        if (mtu < 1 || mtu > 5) mtu = uint8_t(roce::IbMtu::Mtu1024);
        if (q.type == hw::QpType::Ud || mtu > active) mtu = active;
        c.path_mtu = roce::IbMtu(mtu);
        c.sq_psn = uint32_t(g(e, Table::Qpc, hw::qpc::sq_psn));
        c.rq_psn = uint32_t(g(e, Table::Qpc, hw::qpc::rq_psn));
        c.retry_cnt = uint8_t(g(e, Table::Qpc, hw::qpc::retry_cnt));
        c.rnr_retry = uint8_t(g(e, Table::Qpc, hw::qpc::rnr_retry));
        c.timeout = uint8_t(g(e, Table::Qpc, hw::qpc::timeout));
        c.min_rnr_timer = uint8_t(g(e, Table::Qpc, hw::qpc::min_rnr_timer));
        c.max_rd_atomic = uint8_t(g(e, Table::Qpc, hw::qpc::max_rd_atomic));
        c.max_dest_rd_atomic = uint8_t(g(e, Table::Qpc, hw::qpc::max_dest_rd_atomic));
        c.access_flags = uint32_t(g(e, Table::Qpc, hw::qpc::qp_access_flags));
        c.qkey = uint32_t(g(e, Table::Qpc, hw::qpc::qkey));
        c.sq_sig_all = g(e, Table::Qpc, hw::qpc::sq_sig_all) != 0;
        c.srq = q.srq;
        c.en_sqd_async_notify = g(e, Table::Qpc, hw::qpc::en_sqd_async_notify) != 0;
        if (q.type != hw::QpType::Ud) build_av(e, hw::qpc::kSize, kQpcAv, c.av);
        return c;
    }

    void load_static(EQp& q, const uint8_t* e) {
        q.ctx = uint16_t(g(e, Table::Qpc, hw::qpc::ctx_id));
        q.type = hw::QpType(g(e, Table::Qpc, hw::qpc::qp_type));
        q.pdn = uint32_t(g(e, Table::Qpc, hw::qpc::pdn));
        q.send_cqn = uint32_t(g(e, Table::Qpc, hw::qpc::send_cqn));
        q.recv_cqn = uint32_t(g(e, Table::Qpc, hw::qpc::recv_cqn));
        q.srq = g(e, Table::Qpc, hw::qpc::srq_en) != 0;
        q.srqn = uint32_t(g(e, Table::Qpc, hw::qpc::srqn));
        q.sq_base = g(e, Table::Qpc, hw::qpc::sq_base);
        q.rq_base = g(e, Table::Qpc, hw::qpc::rq_base);
        q.log_sq_size = uint8_t(g(e, Table::Qpc, hw::qpc::log_sq_size));
        q.log_sq_stride = uint8_t(g(e, Table::Qpc, hw::qpc::log_sq_stride));
        q.log_rq_size = uint8_t(g(e, Table::Qpc, hw::qpc::log_rq_size));
        q.log_rq_stride = uint8_t(g(e, Table::Qpc, hw::qpc::log_rq_stride));
        q.max_send_sge = uint32_t(g(e, Table::Qpc, hw::qpc::max_send_sge));
        q.max_recv_sge = uint32_t(g(e, Table::Qpc, hw::qpc::max_recv_sge));
        q.max_inline = uint32_t(g(e, Table::Qpc, hw::qpc::max_inline));
        host_dom(uint32_t(g(e, Table::Qpc, hw::qpc::domain_id)), q.qdom);
    }

    // The firmware may have changed the QPC entry of `qpn`: follow it.
    void reload_qp(uint32_t qpn) {
        uint8_t* e = entry(Table::Qpc, qpn);
        if (!e) return;
        const bool live = g(e, Table::Qpc, hw::qpc::qpn) == qpn && qpn != 0;
        const hw::QpState st = live ? hw::QpState(g(e, Table::Qpc, hw::qpc::state)) : hw::QpState::Reset;
        auto it = qps.find(qpn);
        if (st == hw::QpState::Reset) {
            if (it != qps.end()) qps.erase(it);
            if (pipe) pipe->qp_reset(qpn);
            return;
        }
        if (it == qps.end()) it = qps.emplace(qpn, std::make_unique<EQp>(*this, qpn)).first;
        EQp& q = *it->second;
        q.wb_valid.fill(false);  // the firmware may have written the entry
        load_static(q, e);
        const hw::QpState from = q.hw_state;
        if (from == st) {
            // Same state: attributes may have changed (RTS->RTS, SQD->SQD).
            if (q.tqp && st != hw::QpState::Err) {
                tp::QpContext& c = q.tqp->context();
                const tp::QpConfig n = qp_config(q, e);
                c.cfg.timeout = n.timeout;
                c.cfg.retry_cnt = n.retry_cnt;
                c.cfg.rnr_retry = n.rnr_retry;
                c.cfg.min_rnr_timer = n.min_rnr_timer;
                c.cfg.access_flags = n.access_flags;
                c.cfg.qkey = n.qkey;
            }
            return;
        }
        switch (st) {
            case hw::QpState::Init:
                q.tqp = std::make_unique<tp::Qp>(qp_config(q, e), q.env());
                q.tqp->set_state(hw::QpState::Init);
                break;
            case hw::QpState::Rtr:
                q.tqp = std::make_unique<tp::Qp>(qp_config(q, e), q.env());
                q.tqp->set_state(hw::QpState::Rtr);
                break;
            case hw::QpState::Rts: {
                if (!q.tqp) q.tqp = std::make_unique<tp::Qp>(qp_config(q, e), q.env());
                tp::QpContext& c = q.tqp->context();
                const tp::QpConfig n = qp_config(q, e);
                if (from == hw::QpState::Rtr || from == hw::QpState::Init) {
                    c.cfg.sq_psn = n.sq_psn;
                    c.req.psn = n.sq_psn & roce::kPsnMask;
                    c.comp.psn = c.req.psn;
                    c.cfg.max_rd_atomic = n.max_rd_atomic;
                    c.req.rd_atomic_credits = n.max_rd_atomic;
                    q.hi_psn = c.req.psn;
                }
                c.cfg.timeout = n.timeout;
                c.cfg.retry_cnt = n.retry_cnt;
                c.cfg.rnr_retry = n.rnr_retry;
                c.cfg.min_rnr_timer = n.min_rnr_timer;
                c.reset_retry_counters();
                q.hw_state = st;
                run(q, [&] { q.tqp->set_state(hw::QpState::Rts); });
                fetch_sq(q);
                return;
            }
            case hw::QpState::Sqd:
            case hw::QpState::Sqe:
                q.hw_state = st;
                // RTS->SQD: the firmware set sq_draining and en_sqd_async_notify;
                // the core drains and writeback() clears sq_draining when done.
                if (q.tqp && st == hw::QpState::Sqd)
                    q.tqp->context().cfg.en_sqd_async_notify =
                        g(e, Table::Qpc, hw::qpc::en_sqd_async_notify) != 0;
                if (q.tqp) run(q, [&] { q.tqp->set_state(st); });
                return;
            case hw::QpState::Err:
                if (q.cause == hw::ErrorCause::None) q.cause = hw::ErrorCause::ModifyToErr;
                q.hw_state = st;
                if (!q.tqp) q.tqp = std::make_unique<tp::Qp>(qp_config(q, e), q.env());
                run(q, [&] { q.tqp->set_state(hw::QpState::Err); });
                if (pipe) pipe->qp_reset(qpn);
                return;
            case hw::QpState::Reset: break;
        }
        q.hw_state = st;
        writeback(q);
    }

    // Runs `f` on the QP's core, then acts on what it left behind.
    template <typename F>
    void run(EQp& q, F&& f) {
        f();
        after(q);
    }
    void after(EQp& q) {
        // What this step sent goes out now, in one sendmmsg: a message's
        // packets together, a lone ACK without waiting for the batch's end.
        tx_flush();
        if (!q.tqp) return;
        if (q.fault != hw::ErrorCause::None && q.tqp->state() != hw::QpState::Err) {
            q.cause = q.fault;
            q.fault = hw::ErrorCause::None;
            post_event(q.ctx, hw::EventType::QpFatal, q.qpn, uint32_t(q.cause));
            q.tqp->set_state(hw::QpState::Err);
        }
        q.fault = hw::ErrorCause::None;
        if (q.tqp->state() == hw::QpState::Err && q.hw_state != hw::QpState::Err) {
            q.hw_state = hw::QpState::Err;
            if (pipe) pipe->qp_reset(q.qpn);
        }
        writeback(q);
    }

    // The QP's dynamic state into its QPC entry (what QUERY_QP and `simnic
    // resource show` read). It runs after every step of the QP, so only the
    // fields that changed since the last write are written; the firmware's
    // own writes come through reload_qp(), which forgets what was written.
    void writeback(EQp& q) {
        uint8_t* e = entry(Table::Qpc, q.qpn);
        if (!e || g(e, Table::Qpc, hw::qpc::qpn) != q.qpn) return;
        constexpr Table T = Table::Qpc;
        uint32_t sq_ci = q.sq_fetch;
        bool psns = false, sq_psns = false;
        tp::QpTransportState t{};
        if (q.tqp) {
            tp::SendQueue& sq = q.tqp->context().sq;
            if (!sq.empty()) sq_ci = ring_index_of(q, sq.head_seq());
            if (q.hw_state != hw::QpState::Reset && q.hw_state != hw::QpState::Init) {
                t = q.tqp->snapshot();
                psns = true;
                sq_psns = q.hw_state != hw::QpState::Rtr;
            }
        }
        const std::array<std::pair<hw::Field, uint64_t>, EQp::kWriteback> v{{
            {hw::qpc::state, uint8_t(q.hw_state)},
            {hw::qpc::error_cause, uint8_t(q.cause)},
            {hw::qpc::sq_pi, q.sq_pi},
            {hw::qpc::rq_pi, q.rq_pi},
            {hw::qpc::rq_ci, q.rq_ci},
            {hw::qpc::sq_ci, sq_ci},
            {hw::qpc::sq_psn, t.sq_psn},
            {hw::qpc::last_acked_psn, roce::psn_add(t.comp_psn, roce::kPsnMask)},
            {hw::qpc::rq_psn, t.rq_psn},
            {hw::qpc::msn, t.msn},
            {hw::qpc::sq_draining, t.sq_draining ? 1u : 0u},
        }};
        for (size_t i = 0; i < v.size(); ++i) {
            if (i >= 6 && i <= 7 && !sq_psns) continue;
            if (i >= 8 && !psns) continue;
            const uint64_t val = v[i].second & hw::mask_of(v[i].first.width);
            if (q.wb_valid[i] && q.wb[i] == val) continue;
            s(e, T, v[i].first, val);
            q.wb[i] = val;
            q.wb_valid[i] = true;
        }
    }

    uint32_t ring_index_of(EQp& q, uint64_t seq) {
        while (!q.seqmap.empty() && q.seqmap.front().first < seq) q.seqmap.pop_front();
        if (q.seqmap.empty() || q.seqmap.front().first != seq) return q.sq_fetch;
        return q.seqmap.front().second;
    }

    // ---- send WQEs (hw-spec 6.2) ----
    // Decodes the WQE in wqebuf; returns the status for a malformed one.
    hw::WcStatus decode_send(EQp& q, tp::SendWqe& w) {
        const uint32_t stride = 1u << q.log_sq_stride;
        const uint8_t* b = wqebuf.data();
        namespace c = hw::ctrl_seg;
        const uint32_t op = uint32_t(hw::get(b, stride, c::opcode));
        w = tp::SendWqe{};
        w.wr_id = hw::get(b, stride, c::wr_id);
        w.opcode = hw::WrOpcode(op);
        if (hw::get(b, stride, c::fence)) w.send_flags |= hw::send_flags::kFence;
        if (hw::get(b, stride, c::signaled)) w.send_flags |= hw::send_flags::kSignaled;
        if (hw::get(b, stride, c::solicited)) w.send_flags |= hw::send_flags::kSolicited;
        const bool inl = hw::get(b, stride, c::inline_data) != 0;
        const uint32_t nsge = uint32_t(hw::get(b, stride, c::num_sge));
        const uint32_t imm = uint32_t(hw::get(b, stride, c::imm_inv));
        const uint32_t total = uint32_t(hw::get(b, stride, c::total_len));
        const auto o = hw::WrOpcode(op);
        const bool rdma = o == hw::WrOpcode::RdmaWrite || o == hw::WrOpcode::RdmaWriteWithImm ||
                          o == hw::WrOpcode::RdmaRead;
        const bool atomic = o == hw::WrOpcode::AtomicCmpAndSwp || o == hw::WrOpcode::AtomicFetchAndAdd;
        const bool send = o == hw::WrOpcode::Send || o == hw::WrOpcode::SendWithImm || o == hw::WrOpcode::SendWithInv;
        if (o == hw::WrOpcode::BindMw || o == hw::WrOpcode::LocalInv) {
            // Local operations (hw-spec 6.2, 6.5): no data.
            if (inl || nsge != 0) return hw::WcStatus::LocQpOpErr;
            if (o == hw::WrOpcode::LocalInv) {
                w.invalidate_rkey = imm;
                return hw::WcStatus::Success;
            }
            namespace bs = hw::bind_seg;
            if (c::kSize + bs::kSize > stride) return hw::WcStatus::LocQpOpErr;
            const uint8_t* s = b + c::kSize;
            w.bind.mw_rkey = uint32_t(hw::get(s, bs::kSize, bs::mw_rkey));
            w.bind.new_rkey = uint32_t(hw::get(s, bs::kSize, bs::new_rkey));
            w.bind.mr_lkey = uint32_t(hw::get(s, bs::kSize, bs::mr_lkey));
            w.bind.access = uint32_t(hw::get(s, bs::kSize, bs::access));
            w.bind.addr = hw::get(s, bs::kSize, bs::addr);
            w.bind.length = hw::get(s, bs::kSize, bs::length);
            return hw::WcStatus::Success;
        }
        if (!rdma && !atomic && !send) return hw::WcStatus::LocQpOpErr;
        if (o == hw::WrOpcode::SendWithInv) w.invalidate_rkey = imm;
        else w.imm_data = imm;
        uint32_t off = c::kSize;
        auto need = [&](uint32_t n) { return off + n <= stride; };
        if (rdma || atomic) {
            if (!need(hw::raddr_seg::kSize)) return hw::WcStatus::LocQpOpErr;
            w.remote_addr = hw::get(b + off, hw::raddr_seg::kSize, hw::raddr_seg::remote_va);
            w.rkey = uint32_t(hw::get(b + off, hw::raddr_seg::kSize, hw::raddr_seg::rkey));
            off += hw::raddr_seg::kSize;
        }
        if (atomic) {
            if (!need(hw::atomic_seg::kSize)) return hw::WcStatus::LocQpOpErr;
            w.compare_add = hw::get(b + off, hw::atomic_seg::kSize, hw::atomic_seg::compare_add);
            w.swap = hw::get(b + off, hw::atomic_seg::kSize, hw::atomic_seg::swap);
            off += hw::atomic_seg::kSize;
            if (w.remote_addr % 8 != 0) return hw::WcStatus::LocQpOpErr;
        }
        if (q.type == hw::QpType::Ud) {
            if (!need(hw::ud_seg::kSize)) return hw::WcStatus::LocQpOpErr;
            const uint32_t ah = uint32_t(hw::get(b + off, hw::ud_seg::kSize, hw::ud_seg::ah_num));
            w.ud.remote_qpn = uint32_t(hw::get(b + off, hw::ud_seg::kSize, hw::ud_seg::dest_qpn));
            w.ud.remote_qkey = uint32_t(hw::get(b + off, hw::ud_seg::kSize, hw::ud_seg::qkey));
            off += hw::ud_seg::kSize;
            if (ah == 0) {
                if (!need(hw::av::kSize)) return hw::WcStatus::LocQpOpErr;
                build_av(b + off, hw::av::kSize, kSegAv, w.ud.av);
                off += hw::av::kSize;
            } else {
                const uint8_t* a = entry(Table::Ah, ah);
                if (!a || !g(a, Table::Ah, hw::ah_entry::valid) || g(a, Table::Ah, hw::ah_entry::pdn) != q.pdn ||
                    g(a, Table::Ah, hw::ah_entry::ctx_id) != q.ctx)
                    return hw::WcStatus::LocQpOpErr;
                build_av(a, hw::ah_entry::kSize, kAhAv, w.ud.av);
            }
        }
        if (inl) {
            if (o == hw::WrOpcode::RdmaRead || atomic || !need(hw::inline_seg::kSize)) return hw::WcStatus::LocQpOpErr;
            const uint32_t n = uint32_t(hw::get(b + off, hw::inline_seg::kSize, hw::inline_seg::byte_count));
            off += hw::inline_seg::kSize;
            if (n > q.max_inline || n > hw::kMaxInline || !need(n)) return hw::WcStatus::LocQpOpErr;
            w.send_flags |= hw::send_flags::kInline;
            w.inline_data.assign(b + off, b + off + n);
            if (n != total) return hw::WcStatus::LocLenErr;
        } else {
            if (nsge > q.max_send_sge || nsge > hw::kMaxSge) return hw::WcStatus::LocQpOpErr;
            uint64_t sum = 0;
            for (uint32_t i = 0; i < nsge; ++i) {
                if (!need(hw::data_seg::kSize)) return hw::WcStatus::LocQpOpErr;
                tp::Sge sge;
                sge.addr = hw::get(b + off, hw::data_seg::kSize, hw::data_seg::addr);
                sge.length = uint32_t(hw::get(b + off, hw::data_seg::kSize, hw::data_seg::length));
                sge.lkey = uint32_t(hw::get(b + off, hw::data_seg::kSize, hw::data_seg::lkey));
                w.sg.push(sge);
                sum += sge.length;
                off += hw::data_seg::kSize;
            }
            if (atomic && (nsge != 1 || sum != 8)) return hw::WcStatus::LocQpOpErr;
            if (!atomic && sum != total) return hw::WcStatus::LocLenErr;
        }
        return hw::WcStatus::Success;
    }

    void fail_wqe(EQp& q, uint32_t idx, const tp::SendWqe& w, hw::WcStatus st) {
        tp::Completion c;
        c.wr_id = w.wr_id;
        c.status = st;
        c.opcode = hw::WcOpcode::Send;
        c.qp_num = q.qpn;
        c.vendor_err = uint32_t(cause_of(st));
        if (q.cause == hw::ErrorCause::None) q.cause = cause_of(st);
        write_cqe(q.send_cqn, c, idx, true, false);
        q.tqp->set_state(hw::QpState::Err);
    }

    void fetch_sq(EQp& q) {
        if (!q.tqp) return;
        const hw::QpState st = q.hw_state;
        if (st == hw::QpState::Reset || st == hw::QpState::Init) return;
        const uint32_t stride = 1u << q.log_sq_stride;
        wqebuf.resize(std::max<size_t>(stride, 16));
        while (q.sq_fetch != q.sq_pi) {
            const uint32_t idx = q.sq_fetch;
            const uint64_t addr = q.sq_base + (uint64_t{hw::ring_slot(idx, q.log_sq_size)} << q.log_sq_stride);
            if (!q.qdom.read(addr, wqebuf.data(), stride)) {
                stat(hw::stats_block::dma_faults);
                q.fault = hw::ErrorCause::QueueFault;
                after(q);
                return;
            }
            ++q.sq_fetch;
            if (rec) {
                rec->add(Op::Kind::DmaRead, 0, stride, 0, DmaPurpose::WqeFetch);
                rec->add(Op::Kind::WqeFetched, q.qpn, 0, idx);
            }
            tp::SendWqe w;
            const hw::WcStatus dst = decode_send(q, w);
            if (dst != hw::WcStatus::Success) {
                run(q, [&] { fail_wqe(q, idx, w, dst); });
                continue;
            }
            q.seqmap.emplace_back(q.tqp->context().sq.tail_seq(), idx);
            q.posting_index = idx;
            tp::PostStatus ps = tp::PostStatus::Ok;
            run(q, [&] { ps = q.tqp->post_send(w); });
            q.posting_index.reset();
            if (ps == tp::PostStatus::Ok || ps == tp::PostStatus::Flushed) {
                if (ps == tp::PostStatus::Flushed && !q.seqmap.empty()) q.seqmap.pop_back();
                continue;
            }
            if (!q.seqmap.empty()) q.seqmap.pop_back();
            run(q, [&] { fail_wqe(q, idx, w, ps == tp::PostStatus::BadLength ? hw::WcStatus::LocLenErr
                                                                              : hw::WcStatus::LocQpOpErr); });
        }
    }

    // ---- doorbells (hw-spec 3.2, 3.4) ----
    EQp* qp_of_ctx(uint16_t ctx, uint32_t qpn) {
        auto it = qps.find(qpn);
        if (it == qps.end() || it->second->ctx != ctx) return nullptr;
        return it->second.get();
    }

    void doorbell(uint16_t ctx, hw::DbKind kind, uint32_t num, uint32_t index, uint32_t cq_cmd) {
        switch (kind) {
            case hw::DbKind::Sq: {
                EQp* q = qp_of_ctx(ctx, num);
                if (!q) { stat(hw::stats_block::dma_faults); return; }
                if (index - q->sq_fetch > (1u << q->log_sq_size)) {
                    stat(hw::stats_block::dma_faults);
                    q->fault = hw::ErrorCause::LocQpOp;
                    after(*q);
                    return;
                }
                q->sq_pi = index;
                fetch_sq(*q);
                writeback(*q);
                return;
            }
            case hw::DbKind::Rq: {
                EQp* q = qp_of_ctx(ctx, num);
                if (!q) { stat(hw::stats_block::dma_faults); return; }
                q->rq_pi = index;
                if (q->tqp && q->tqp->state() == hw::QpState::Err && !q->srq) {
                    while (const tp::RecvWqe* w = q->peek()) {
                        tp::Completion c;
                        c.wr_id = w->wr_id;
                        c.status = hw::WcStatus::WrFlushErr;
                        c.opcode = hw::WcOpcode::Recv;
                        c.qp_num = q->qpn;
                        q->pop();
                        q->post(tp::CqSide::Recv, c, false);
                    }
                }
                writeback(*q);
                return;
            }
            case hw::DbKind::Srq: {
                uint8_t* e = entry(Table::Srqc, num);
                if (!e || num == 0 || g(e, Table::Srqc, hw::srqc::srqn) != num ||
                    g(e, Table::Srqc, hw::srqc::ctx_id) != ctx) {
                    stat(hw::stats_block::dma_faults);
                    return;
                }
                s(e, Table::Srqc, hw::srqc::pi, index);
                return;
            }
            case hw::DbKind::Cq: cq_doorbell(ctx, num, index, cq_cmd); return;
        }
        stat(hw::stats_block::dma_faults);
    }

    // Consumes what each context's FIFO holds; returns true if anything.
    bool drain_fifos() {
        bool any = false;
        for (auto& [id, c] : ctxs) {
            uint8_t* pg = c.page;
            for (int k = 0; k < 256; ++k) {
                const uint32_t slot = c.fifo_ci & (hw::kDbFifoEntries - 1);
                const uint32_t base = hw::kCtxDbFifoEntries + slot * hw::db_fifo_entry::kSize;
                if (hw::mmio_load32(pg, base + hw::db_fifo_entry::seq.offset) != c.fifo_ci + 1) break;
                const uint32_t w1 = hw::mmio_load32(pg, base + hw::db_fifo_entry::num.offset);
                const uint32_t idx = hw::mmio_load32(pg, base + hw::db_fifo_entry::index.offset);
                auto fld = [w1](hw::Field f) { return (w1 >> f.lo) & uint32_t(hw::mask_of(f.width)); };
                if (pipe)
                    pipe->doorbell(Doorbell{id, uint8_t(fld(hw::db_fifo_entry::kind)), fld(hw::db_fifo_entry::num),
                                                   idx, fld(hw::db_fifo_entry::cq_cmd)});
                else
                    doorbell(id, hw::DbKind(fld(hw::db_fifo_entry::kind)), fld(hw::db_fifo_entry::num), idx,
                             fld(hw::db_fifo_entry::cq_cmd));
                ++c.fifo_ci;
                hw::mmio_store32(pg, hw::kCtxDbFifo + hw::db_fifo_regs::fifo_ci.offset, c.fifo_ci);
                any = true;
            }
        }
        return any;
    }
    bool fifos_pending() {
        for (auto& [id, c] : ctxs)
            if (hw::mmio_load32(c.page, hw::kCtxDbFifo + hw::db_fifo_regs::fifo_pi.offset) != c.fifo_ci) return true;
        return false;
    }
    void set_sleeping(uint32_t v) {
        for (auto& [id, c] : ctxs) hw::mmio_store32(c.page, hw::kCtxDbFifo + hw::db_fifo_regs::engine_sleeping.offset, v);
    }

    // ---- timers ----
    bool run_timers(uint64_t now) {
        bool any = false;
        std::vector<EQp*> due;
        for (auto& [n, q] : qps)
            for (int t = 0; t < 2; ++t)
                if (q->timer_deadline[t] && q->timer_deadline[t] <= now) due.push_back(q.get());
        for (EQp* q : due) {
            for (int t = 0; t < 2; ++t) {
                if (!q->timer_deadline[t] || q->timer_deadline[t] > now || !q->tqp) continue;
                q->timer_deadline[t] = 0;
                any = true;
                // A model device runs the timer in its completer stage.
                if (pipe) pipe->timer(q->qpn, uint8_t(t));
                else fire_timer(*q, t);
            }
        }
        return any;
    }
    void fire_timer(EQp& q, int t) {
        if (!q.tqp) return;
        if (t == int(tp::QpTimer::Retransmit)) stat(hw::stats_block::timeouts);
        run(q, [&] { q.tqp->on_timer(tp::QpTimer(t)); });
    }

    // ---- Datapath: a timing model's stages execute here (timing.h) ----
    struct Recording {
        Recording(Impl& m, OpRecord& r) : m_(m) { m_.rec = &r; }
        ~Recording() { m_.rec = nullptr; }
        Impl& m_;
    };
    void exec_doorbell(const Doorbell& db, OpRecord& r) override {
        Recording g(*this, r);
        doorbell(db.ctx, hw::DbKind(db.kind), db.num, db.index, db.cq_cmd);
    }
    void exec_rx(const uint8_t* frame, size_t len, OpRecord& r) override {
        Recording g(*this, r);
        if (len > roce::kEthHdrBytes) rx_deliver(frame + roce::kEthHdrBytes, len - roce::kEthHdrBytes);
    }
    void exec_timer(uint32_t qpn, uint8_t t, OpRecord& r) override {
        Recording g(*this, r);
        auto it = qps.find(qpn);
        if (it != qps.end() && t < 2) fire_timer(*it->second, t);
    }
    void wire_tx(const uint8_t* frame, size_t len) override { send_frame(frame, len); }

    uint64_t next_deadline() {
        uint64_t d = 0;
        for (auto& [n, q] : qps)
            for (uint64_t t : q->timer_deadline)
                if (t && (d == 0 || t < d)) d = t;
        return d;
    }

    void loop();
};


// ---- wire: UDP port 4791 on the netdev's IPv4 address (hw-spec 1.1, issue 4) ----

bool SoftEngine::Impl::open_wire(std::string& err) {
    ifaddrs* ifa = nullptr;
    if (getifaddrs(&ifa) == 0) {
        for (ifaddrs* i = ifa; i; i = i->ifa_next) {
            if (!i->ifa_addr || cfg.netdev != i->ifa_name) continue;
            if (i->ifa_addr->sa_family == AF_INET && local_ip == 0) {
                local_ip = ntohl(reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr);
            } else if (i->ifa_addr->sa_family == AF_INET6) {
                const auto* a6 = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
                Local6 l;
                std::memcpy(l.addr.data(), &a6->sin6_addr, 16);
                l.scope = a6->sin6_scope_id;
                local6.push_back(l);
            }
        }
        freeifaddrs(ifa);
    }
    if (local_ip == 0) {
        err = "netdev " + cfg.netdev + " has no IPv4 address (the soft engine sends RoCE v2 over IPv4)";
        return false;
    }
    if (cfg.standalone) return true;  // no wire: MAC TX feeds MAC RX
    rx_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (rx_fd < 0) {
        err = std::string("socket: ") + std::strerror(errno);
        return false;
    }
    const int one = 1, big = 8 << 20;
    setsockopt(rx_fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof one);
    setsockopt(rx_fd, IPPROTO_IP, IP_RECVTTL, &one, sizeof one);
    setsockopt(rx_fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof one);
    setsockopt(rx_fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(roce::kRoceV2Port);
    a.sin_addr.s_addr = htonl(local_ip);
    // The message for a port-4791 socket that cannot bind `where`.
    auto bind_failed = [&](const std::string& where) {
        err = "cannot bind UDP " + where + ":4791 on " + cfg.netdev + ": " + std::strerror(errno) +
              (errno == EADDRINUSE ? " (another simnic device or daemon, or a kernel rxe device, uses RoCE v2 "
                                     "on this address)"
                                   : "");
        return false;
    };
    if (bind(rx_fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        char ip[INET_ADDRSTRLEN] = {};
        inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
        return bind_failed(ip);
    }
    // IPv6: the same port on every IPv6 address of the netdev.
    for (Local6& l : local6) {
        l.rx_fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (l.rx_fd < 0) continue;
        setsockopt(l.rx_fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        setsockopt(l.rx_fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof one);
        setsockopt(l.rx_fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &one, sizeof one);
        setsockopt(l.rx_fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof one);
        setsockopt(l.rx_fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
        // An address still in duplicate address detection (a link just
        // brought up) is "tentative" and cannot be bound without this.
        setsockopt(l.rx_fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof one);
        sockaddr_in6 a6{};
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons(roce::kRoceV2Port);
        std::memcpy(&a6.sin6_addr, l.addr.data(), 16);
        a6.sin6_scope_id = l.scope;
        if (bind(l.rx_fd, reinterpret_cast<sockaddr*>(&a6), sizeof a6) != 0) {
            if (errno != EADDRINUSE) {
                // This address cannot carry RoCE (it went away, say): the
                // device serves the others; a GID naming it gets no answer.
                close(l.rx_fd);
                l.rx_fd = -1;
                continue;
            }
            char ip[INET6_ADDRSTRLEN] = {};
            inet_ntop(AF_INET6, &a6.sin6_addr, ip, sizeof ip);
            return bind_failed(std::string("[") + ip + "]");
        }
    }
    return true;
}

namespace {
// What every sending socket has, IPv4 or IPv6: several sockets share a
// source port (SO_REUSEPORT), and the queue is deep. Then it binds to
// `addr` (its port being rxe's source port); if that port is taken it sends
// from an ephemeral one rather than not at all. Returns fd, or -1 (closed).
int finish_tx_socket(int fd, sockaddr* addr, socklen_t len, in_port_t* port) {
    const int one = 1, big = 8 << 20;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    if (bind(fd, addr, len) == 0) return fd;
    *port = 0;
    if (bind(fd, addr, len) == 0) return fd;
    close(fd);
    return -1;
}
}  // namespace

// The socket that sends from [local6[idx]]:sport (rxe's source-port rule
// holds for IPv6 too). The kernel writes hop limit 64, traffic class 0 and
// no automatic flow label, as our encoded frame has them.
int SoftEngine::Impl::tx_sock6(size_t idx, uint16_t sport) {
    const uint32_t key = uint32_t(idx) << 16 | sport;
    auto it = tx_socks6.find(key);
    if (it != tx_socks6.end()) return it->second;
    int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd >= 0) {
        const int one = 1, zero = 0, hops = 64, pmtu = IPV6_PMTUDISC_DO;
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        setsockopt(fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &hops, sizeof hops);
        setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &zero, sizeof zero);
        setsockopt(fd, IPPROTO_IPV6, IPV6_AUTOFLOWLABEL, &zero, sizeof zero);
        setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &pmtu, sizeof pmtu);
        setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof one);
        sockaddr_in6 a6{};
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons(sport);
        std::memcpy(&a6.sin6_addr, local6[idx].addr.data(), 16);
        a6.sin6_scope_id = local6[idx].scope;
        fd = finish_tx_socket(fd, reinterpret_cast<sockaddr*>(&a6), sizeof a6, &a6.sin6_port);
    }
    tx_socks6[key] = fd;
    return fd;
}

int SoftEngine::Impl::tx_sock(uint16_t sport) {
    auto it = tx_socks.find(sport);
    if (it != tx_socks.end()) return it->second;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd >= 0) {
        const int pmtu = IP_PMTUDISC_DO, ttl = 64;
        // DF set and an unconnected socket: the kernel sends IP ID 0, which the
        // ICRC covers (as rxe's packets have it).
        setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof pmtu);
        setsockopt(fd, IPPROTO_IP, IP_TTL, &ttl, sizeof ttl);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(sport);
        a.sin_addr.s_addr = htonl(local_ip);
        fd = finish_tx_socket(fd, reinterpret_cast<sockaddr*>(&a), sizeof a, &a.sin_port);
    }
    tx_socks[sport] = fd;
    return fd;
}

void SoftEngine::Impl::transmit(EQp& q, roce::Packet& pkt) {
    const roce::OpcodeInfo& info = pkt.opinfo();
    // The header fields the kernel will write (see tx_sock, tx_sock6), so
    // that the encoded frame is the one on the wire.
    if (pkt.ip_version == roce::IpVersion::V4) {
        pkt.ip4.id = 0;
        pkt.ip4.frag = 0x4000;
        pkt.ip4.ttl = 64;
        pkt.ip4.tos = 0;
    } else {
        pkt.ip6.hop_limit = 64;
        pkt.ip6.traffic_class = 0;
        pkt.ip6.flow_label = 0;
    }
    if (!roce::encode_frame(pkt, txbuf)) {
        stat(hw::stats_block::tx_drops);
        return;
    }
    if (rec) {
        // A model device: the frame goes down the TX pipeline and leaves
        // through wire_tx() when it leaves MAC TX.
        TxFrameRec f;
        f.bytes.assign(txbuf.begin(), txbuf.begin() + long(pkt.frame_len));
        f.qpn = q.qpn;
        f.psn = pkt.hdr.bth.psn;
        f.opcode = pkt.hdr.bth.opcode;
        f.payload = uint32_t(pkt.payload_len);
        rec->add(Op::Kind::TxFrame, q.qpn, uint32_t(pkt.frame_len), uint32_t(rec->frames.size()));
        rec->frames.push_back(std::move(f));
    } else {
        send_frame(txbuf.data(), pkt.frame_len);
    }
    if (info.has(roce::kRequest) && q.type != hw::QpType::Ud) {
        const uint32_t psn = pkt.hdr.bth.psn;
        if (roce::psn_before(psn, q.hi_psn)) stat(hw::stats_block::retransmits);
        else q.hi_psn = roce::psn_add(psn, 1);
    } else if (info.has(roce::kHasAeth)) {
        const uint8_t syn = pkt.hdr.aeth.syndrome;
        const roce::AethType t = roce::aeth_type(syn);
        if (t == roce::AethType::RnrNak) stat(hw::stats_block::tx_rnr_nak);
        else if (t == roce::AethType::Nak) {
            const hw::Field f[] = {hw::stats_block::tx_nak_psn_seq, hw::stats_block::tx_nak_inv_req,
                                   hw::stats_block::tx_nak_rem_access, hw::stats_block::tx_nak_rem_op};
            if ((syn & 0x1F) < 4) stat(f[syn & 0x1F]);
        }
    }
}

// Sends an encoded IPv4 frame (Ethernet header first) over the UDP socket of
// its source port; the kernel adds the IP and UDP headers we encoded the
// same way (rxe's DF, ID 0, TTL 64), so the wire carries these bytes.
void SoftEngine::Impl::send_frame(const uint8_t* f, size_t len) {
    constexpr size_t l3 = roce::kEthHdrBytes;
    if (len < l3 + roce::kIpv4HdrBytes + roce::kUdpHdrBytes) {
        stat(hw::stats_block::tx_drops);
        return;
    }
    const bool v6 = (f[l3] >> 4) == 6;
    if (!v6 && ((f[l3] >> 4) != 4 || (f[l3] & 0xF) != 5)) {
        stat(hw::stats_block::tx_drops);
        return;
    }
    const size_t l4 = l3 + (v6 ? roce::kIpv6HdrBytes : roce::kIpv4HdrBytes), bth = l4 + roce::kUdpHdrBytes;
    if (len < bth) {
        stat(hw::stats_block::tx_drops);
        return;
    }
    const uint16_t sport = uint16_t(f[l4] << 8 | f[l4 + 1]);
    // Without Ethernet padding: the IP length says where the packet ends.
    const size_t ip_end = v6 ? l3 + roce::kIpv6HdrBytes + size_t(f[l3 + 4] << 8 | f[l3 + 5])
                             : l3 + size_t(f[l3 + 2] << 8 | f[l3 + 3]);
    const size_t end = std::min(len, ip_end);
    if (cfg.standalone) return;
    const uint32_t dst = v6 ? 0 : uint32_t(f[l3 + 16]) << 24 | uint32_t(f[l3 + 17]) << 16 | uint32_t(f[l3 + 18]) << 8 |
                                      f[l3 + 19];
    const bool to_self = v6 ? local6_index(f + l3 + 24) >= 0 : dst == local_ip;
    if (cfg.loopback && to_self) {
        // rxe's shortcut: the frame never reaches the kernel. It is counted
        // and captured as sent, then received from the queue by rx_batch()
        // (not here: the sender's state machine is still running).
        stat(hw::stats_block::tx_packets);
        stat(hw::stats_block::tx_bytes, end - bth);
        if (pcap) pcap->write(f, len, wall_us());
        if (pipe) {
            pipe->rx_frame(f, len);
            return;
        }
        std::vector<uint8_t> b;
        if (!loop_spare.empty()) {
            b = std::move(loop_spare.back());
            loop_spare.pop_back();
        }
        b.assign(f + l3, f + end);
        loop_q.push_back(std::move(b));
        return;
    }
    int fd = -1;
    sockaddr_storage to{};
    socklen_t to_len = 0;
    if (v6) {
        const int idx = local6_index(f + l3 + 8);  // the source must be one of ours
        if (idx >= 0) fd = tx_sock6(size_t(idx), sport);
        auto* d6 = reinterpret_cast<sockaddr_in6*>(&to);
        d6->sin6_family = AF_INET6;
        d6->sin6_port = htons(roce::kRoceV2Port);
        std::memcpy(&d6->sin6_addr, f + l3 + 24, 16);
        if (idx >= 0 && IN6_IS_ADDR_LINKLOCAL(&d6->sin6_addr)) d6->sin6_scope_id = local6[size_t(idx)].scope;
        to_len = sizeof *d6;
    } else {
        fd = tx_sock(sport);
        auto* d4 = reinterpret_cast<sockaddr_in*>(&to);
        d4->sin_family = AF_INET;
        d4->sin_port = htons(roce::kRoceV2Port);
        d4->sin_addr.s_addr = htonl(dst);
        to_len = sizeof *d4;
    }
    if (fd < 0) {
        stat(hw::stats_block::tx_drops);
        return;
    }
    // Queued, and sent with one sendmmsg per socket after the step that
    // built it (or when the batch is full): a system call per step, not per
    // packet.
    TxFrame& it = tx->next();
    it.fd = fd;
    it.dst = to;
    it.dst_len = to_len;
    it.data.assign(f + bth, f + end);
    if (pcap) pcap->write(f, len, wall_us());
    if (tx->pending() >= TxQueue::kBatch) tx->flush();
}

bool SoftEngine::Impl::rx_batch() {
    constexpr size_t kHdr = roce::kIpv4HdrBytes + roce::kUdpHdrBytes;
    bool any = false;
    // Loopback frames first: they are this device's own traffic. Bounded, so
    // that doorbells and the socket are not starved by a long exchange.
    for (int k = 0; k < 256 && !loop_q.empty(); ++k) {
        std::vector<uint8_t> b = std::move(loop_q.front());
        loop_q.pop_front();
        rx_deliver(b.data(), b.size(), true);
        loop_spare.push_back(std::move(b));
        any = true;
    }
    // With the shortcut, a device on lo mostly talks to itself: while the
    // socket stays quiet, look at it every fourth pass only (a recvmsg that
    // finds nothing is a tenth of a spinning pass). Sleep still waits on it.
    if (cfg.loopback && sock_quiet > 16 && (++sock_skip & 3) != 0) return any;
    // One recvmmsg takes up to kRxBatch datagrams: a system call per batch,
    // not per packet. Each buffer keeps room for the IP and UDP headers the
    // kernel took off (IPv6's are the larger), which are rebuilt in front of
    // the payload.
    constexpr size_t kRoom = roce::kIpv6HdrBytes + roce::kUdpHdrBytes;
    bool got = false;
    if (rx_bufs.empty()) {
        rx_bufs.assign(kRxBatch, std::vector<uint8_t>(kRoom + 65536));
        rx_ctl.resize(kRxBatch * kRxCtl);
    }
    sockaddr_storage srcs[kRxBatch];
    iovec ivs[kRxBatch];
    mmsghdr msgs[kRxBatch];
    auto handle4 = [&](uint8_t* pay, size_t n, msghdr& mh, const sockaddr_in& src) {
        uint32_t dst = local_ip;
        uint8_t ttl = 64, tos = 0;
        for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
            if (c->cmsg_level != IPPROTO_IP) continue;
            if (c->cmsg_type == IP_PKTINFO) {
                in_pktinfo pi;
                std::memcpy(&pi, CMSG_DATA(c), sizeof pi);
                dst = ntohl(pi.ipi_addr.s_addr);
            } else if (c->cmsg_type == IP_TTL) {
                int v;
                std::memcpy(&v, CMSG_DATA(c), sizeof v);
                ttl = uint8_t(v);
            } else if (c->cmsg_type == IP_TOS) {
                tos = *reinterpret_cast<const uint8_t*>(CMSG_DATA(c));
            }
        }
        // The IPv4 and UDP headers the sender's kernel put in front (rxe:
        // DF, ID 0; the ICRC masks TTL, TOS and the checksums).
        const size_t total = kHdr + n;
        const uint32_t sip = ntohl(src.sin_addr.s_addr);
        const uint16_t sport = ntohs(src.sin_port);
        uint8_t* ip = pay - kHdr;
        ip[0] = 0x45;
        ip[1] = tos;
        ip[2] = uint8_t(total >> 8);
        ip[3] = uint8_t(total);
        ip[4] = ip[5] = 0;
        ip[6] = 0x40;
        ip[7] = 0;
        ip[8] = ttl;
        ip[9] = roce::kIpProtoUdp;
        ip[10] = ip[11] = 0;
        for (int i = 0; i < 4; ++i) {
            ip[12 + i] = uint8_t(sip >> (24 - 8 * i));
            ip[16 + i] = uint8_t(dst >> (24 - 8 * i));
        }
        const uint16_t cs = roce::ipv4_checksum(ip, roce::kIpv4HdrBytes);
        ip[10] = uint8_t(cs >> 8);
        ip[11] = uint8_t(cs);
        put_udp(ip + roce::kIpv4HdrBytes, sport, n);
        deliver_ip(ip, total);
    };
    auto handle6 = [&](uint8_t* pay, size_t n, msghdr& mh, const sockaddr_in6& src, size_t idx) {
        const uint8_t* dst = local6[idx].addr.data();
        in6_pktinfo pi{};
        int hops = 64, tclass = 0;
        for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
            if (c->cmsg_level != IPPROTO_IPV6) continue;
            if (c->cmsg_type == IPV6_PKTINFO) {
                std::memcpy(&pi, CMSG_DATA(c), sizeof pi);
                dst = reinterpret_cast<const uint8_t*>(&pi.ipi6_addr);
            } else if (c->cmsg_type == IPV6_HOPLIMIT) {
                std::memcpy(&hops, CMSG_DATA(c), sizeof hops);
            } else if (c->cmsg_type == IPV6_TCLASS) {
                std::memcpy(&tclass, CMSG_DATA(c), sizeof tclass);
            }
        }
        // The IPv6 and UDP headers (the ICRC masks traffic class, flow
        // label, hop limit and the UDP checksum; the socket API does not
        // give the flow label, which stays 0 here).
        const size_t hdr = roce::kIpv6HdrBytes + roce::kUdpHdrBytes;
        uint8_t* ip = pay - hdr;
        const size_t plen = roce::kUdpHdrBytes + n;
        ip[0] = uint8_t(0x60 | ((tclass >> 4) & 0xF));
        ip[1] = uint8_t((tclass & 0xF) << 4);
        ip[2] = ip[3] = 0;
        ip[4] = uint8_t(plen >> 8);
        ip[5] = uint8_t(plen);
        ip[6] = roce::kIpProtoUdp;
        ip[7] = uint8_t(hops);
        std::memcpy(ip + 8, &src.sin6_addr, 16);
        std::memcpy(ip + 24, dst, 16);
        put_udp(ip + roce::kIpv6HdrBytes, ntohs(src.sin6_port), n);
        deliver_ip(ip, hdr + n);
    };
    // Every socket of the device: IPv4, then each IPv6 address.
    for (size_t sk = 0; sk <= local6.size(); ++sk) {
        const int fd = sk == 0 ? rx_fd : local6[sk - 1].rx_fd;
        if (fd < 0) continue;
        for (int round = 0; round < 4; ++round) {
            for (int i = 0; i < kRxBatch; ++i) {
                srcs[i] = sockaddr_storage{};
                ivs[i] = iovec{rx_bufs[size_t(i)].data() + kRoom, rx_bufs[size_t(i)].size() - kRoom};
                msgs[i] = mmsghdr{};
                msgs[i].msg_hdr.msg_name = &srcs[i];
                msgs[i].msg_hdr.msg_namelen = sizeof srcs[i];
                msgs[i].msg_hdr.msg_iov = &ivs[i];
                msgs[i].msg_hdr.msg_iovlen = 1;
                msgs[i].msg_hdr.msg_control = rx_ctl.data() + size_t(i) * kRxCtl;
                msgs[i].msg_hdr.msg_controllen = kRxCtl;
            }
            const int m = recvmmsg(fd, msgs, kRxBatch, MSG_DONTWAIT, nullptr);
            if (m <= 0) break;
            any = got = true;
            for (int i = 0; i < m; ++i) {
                uint8_t* pay = rx_bufs[size_t(i)].data() + kRoom;
                if (sk == 0)
                    handle4(pay, msgs[i].msg_len, msgs[i].msg_hdr, *reinterpret_cast<const sockaddr_in*>(&srcs[i]));
                else
                    handle6(pay, msgs[i].msg_len, msgs[i].msg_hdr, *reinterpret_cast<const sockaddr_in6*>(&srcs[i]),
                            sk - 1);
            }
            if (m < kRxBatch) break;
        }
    }
    sock_quiet = got ? 0 : sock_quiet + 1;
    return any;
}

// The UDP header in front of a received payload of n bytes (checksum 0: the
// ICRC masks it and the kernel has checked it).
void SoftEngine::Impl::put_udp(uint8_t* udp, uint16_t sport, size_t n) {
    const size_t ulen = roce::kUdpHdrBytes + n;
    udp[0] = uint8_t(sport >> 8);
    udp[1] = uint8_t(sport);
    udp[2] = uint8_t(roce::kRoceV2Port >> 8);
    udp[3] = uint8_t(roce::kRoceV2Port & 0xFF);
    udp[4] = uint8_t(ulen >> 8);
    udp[5] = uint8_t(ulen);
    udp[6] = udp[7] = 0;
}

// A received IP packet (headers rebuilt): into the model's MAC RX, or to the
// soft datapath.
void SoftEngine::Impl::deliver_ip(const uint8_t* ip, size_t total) {
    if (pipe) {
        // A model device: the frame enters at MAC RX, as an Ethernet frame
        // addressed to the port.
        std::vector<uint8_t> fr(roce::kEthHdrBytes + total, 0);
        std::memcpy(fr.data(), port_mac, 6);
        const uint16_t et = (ip[0] >> 4) == 6 ? roce::kEtherTypeIpv6 : roce::kEtherTypeIpv4;
        fr[12] = uint8_t(et >> 8);
        fr[13] = uint8_t(et);
        std::memcpy(fr.data() + roce::kEthHdrBytes, ip, total);
        pipe->rx_frame(fr.data(), fr.size());
        return;
    }
    rx_deliver(ip, total);
}

// One received RoCE packet (IPv4 or IPv6): capture, decode, count, and hand it to its QP.
void SoftEngine::Impl::rx_deliver(const uint8_t* buf, size_t total, bool trusted) {
    constexpr size_t kEth = 14;
    const bool v6 = total > 0 && (buf[0] >> 4) == 6;
    const size_t n =
        total - std::min(total, (v6 ? roce::kIpv6HdrBytes : roce::kIpv4HdrBytes) + roce::kUdpHdrBytes);
    {
        if (pcap) {
            std::vector<uint8_t> fr(kEth + total, 0);
            const uint16_t et = v6 ? roce::kEtherTypeIpv6 : roce::kEtherTypeIpv4;
            fr[12] = uint8_t(et >> 8);
            fr[13] = uint8_t(et);
            std::memcpy(fr.data() + kEth, buf, total);
            pcap->write(fr, wall_us());
        }
        roce::Packet pkt;
        // A loopback frame was encoded by this engine a moment ago: its ICRC
        // is right by construction (and the capture shows it); checking it
        // again would be a third of the CRC work.
        roce::DecodeOptions dopt;
        dopt.check_icrc = !trusted;
        const roce::DecodeResult r = roce::decode_ip_packet(buf, total, pkt, dopt);
        if (!r.ok()) {
            stat(r.error == roce::DecodeError::BadIcrc ? hw::stats_block::icrc_errors
                                                        : hw::stats_block::rx_drops_bad_hdr);
            return;
        }
        stat(hw::stats_block::rx_packets);
        stat(hw::stats_block::rx_bytes, uint64_t(n));
        const roce::OpcodeInfo& info = pkt.opinfo();
        if (info.has(roce::kHasAeth)) {
            const uint8_t syn = pkt.hdr.aeth.syndrome;
            const roce::AethType t = roce::aeth_type(syn);
            if (t == roce::AethType::RnrNak) stat(hw::stats_block::rx_rnr_nak);
            else if (t == roce::AethType::Nak) {
                const hw::Field f[] = {hw::stats_block::rx_nak_psn_seq, hw::stats_block::rx_nak_inv_req,
                                       hw::stats_block::rx_nak_rem_access, hw::stats_block::rx_nak_rem_op};
                if ((syn & 0x1F) < 4) stat(f[syn & 0x1F]);
            }
        }
        if (pkt.hdr.bth.dqpn == kGsiQpn) {
            gsi_receive(pkt);
            return;
        }
        auto it = qps.find(pkt.hdr.bth.dqpn);
        if (it == qps.end() || !it->second->tqp || it->second->hw_state == hw::QpState::Reset ||
            it->second->hw_state == hw::QpState::Init) {
            stat(hw::stats_block::rx_drops_no_qp);
            return;
        }
        EQp& q = *it->second;
        run(q, [&] { q.tqp->on_packet(pkt); });
    }
}

// ---- EQp ports ----

tp::MemStatus EQp::check(tp::KeyKind kind, uint32_t key, uint64_t addr, uint64_t len, uint32_t access) {
    return eng.translate(*this, kind, key, addr, len, access, nullptr, nullptr);
}
tp::MemStatus EQp::read(tp::KeyKind kind, uint32_t key, uint64_t addr, void* dst, size_t len, uint32_t access) {
    return eng.mem_io(*this, kind, key, addr, dst, len, access, false);
}
tp::MemStatus EQp::write(tp::KeyKind kind, uint32_t key, uint64_t addr, const void* src, size_t len,
                         uint32_t access) {
    return eng.mem_io(*this, kind, key, addr, const_cast<void*>(src), len, access, true);
}
tp::MemStatus EQp::atomic(uint32_t rkey, uint64_t addr, tp::AtomicOp op, uint64_t swap_add, uint64_t compare,
                          uint64_t& orig) {
    // The engine thread is the only one touching device memory: this
    // read-modify-write is atomic against every other atomic of the device.
    uint64_t v = 0;
    tp::MemStatus st = eng.mem_io(*this, tp::KeyKind::Rkey, rkey, addr, &v, 8, hw::access::kRemoteAtomic, false);
    if (st != tp::MemStatus::Ok) return st;
    orig = v;
    const uint64_t nv = op == tp::AtomicOp::FetchAdd ? v + swap_add : (v == compare ? swap_add : v);
    return eng.mem_io(*this, tp::KeyKind::Rkey, rkey, addr, const_cast<uint64_t*>(&nv), 8,
                      hw::access::kRemoteAtomic, true);
}
tp::MemStatus EQp::invalidate(uint32_t rkey) { return eng.invalidate(*this, rkey); }
tp::MemStatus EQp::bind_mw(const tp::MwBind& b) { return eng.bind_mw(*this, b); }

const tp::RecvWqe* EQp::peek() {
    if (srq) return eng.srq_peek(*this);
    if (peeked) return &*peeked;
    if (rq_ci == rq_pi) return nullptr;
    const uint32_t stride = 1u << log_rq_stride;
    tp::RecvWqe w;
    if (!eng.parse_recv(qdom, rq_base + (uint64_t{hw::ring_slot(rq_ci, log_rq_size)} << log_rq_stride),
                                    stride, max_recv_sge, w)) {
        eng.stat(hw::stats_block::dma_faults);
        fault = hw::ErrorCause::QueueFault;
        return nullptr;
    }
    peeked = w;
    return &*peeked;
}
void EQp::pop() {
    if (srq) {
        recv_idx.push_back(eng.srq_pop(*this));
        return;
    }
    peeked.reset();
    recv_idx.push_back(rq_ci++);
}

void EQp::post(tp::CqSide side, const tp::Completion& c, bool solicited) {
    uint32_t idx = 0;
    tp::Completion cc = c;
    if (side == tp::CqSide::Send) {
        tp::SendQueue& sq = tqp->context().sq;
        idx = (sq.empty() && posting_index) ? *posting_index : eng.ring_index_of(*this, sq.head_seq());
        if (c.status == hw::WcStatus::RetryExcErr) eng.stat(hw::stats_block::retry_exceeded);
        if (c.status == hw::WcStatus::RnrRetryExcErr) eng.stat(hw::stats_block::rnr_retry_exceeded);
    } else if (!recv_idx.empty()) {
        idx = recv_idx.front();
        recv_idx.pop_front();
    }
    if (c.status != hw::WcStatus::Success && c.status != hw::WcStatus::WrFlushErr && cause == hw::ErrorCause::None)
        cause = cause_of(c.status);
    if (c.status != hw::WcStatus::Success && cc.vendor_err == 0)
        cc.vendor_err = uint32_t(c.status == hw::WcStatus::WrFlushErr ? cause : cause_of(c.status));
    if (!eng.write_cqe(side == tp::CqSide::Send ? send_cqn : recv_cqn, cc, idx, side == tp::CqSide::Send, solicited))
        fault = hw::ErrorCause::CqOverflow;
}

void EQp::transmit(roce::Packet& pkt) { eng.transmit(*this, pkt); }

void EQp::async_event(hw::EventType ev) {
    // aux: the error cause for error events, 0 otherwise (hw-spec 8.1).
    eng.post_event(ctx, ev, qpn, hw::is_error_event(ev) ? uint32_t(cause) : 0);
}

// ---- the thread ----

void SoftEngine::Impl::loop() {
    constexpr uint64_t kSpinNs = 200'000;  // stay awake this long after the last work
    uint64_t last_work = mono_ns();
    epoll_event evs[32];
    while (!stop.load(std::memory_order_relaxed)) {
        bool work = false;
        {
            std::lock_guard<std::recursive_mutex> lk(mu);
            work |= drain_fifos();
            work |= rx_batch();
            work |= run_timers(mono_ns());
            // A model device simulates what came in until it is idle again.
            if (pipe && work) pipe->run();
            drop_read_ahead();
            wc_flush();
            tx_flush();
            wake_cq_waiters();
        }
        while (fence_waiters.load(std::memory_order_acquire) > 0) std::this_thread::yield();
        const uint64_t now = mono_ns();
        if (work) {
            last_work = now;
            continue;
        }
        if (now - last_work < kSpinNs) {
            // Spinning keeps doorbell-to-wire latency low, but on a machine
            // with fewer cores than busy threads it must not starve the
            // applications whose next doorbell it is waiting for.
            std::this_thread::yield();
            continue;
        }
        // Going to sleep (hw-spec 3.4): flag, fence, look once more.
        {
            std::lock_guard<std::recursive_mutex> lk(mu);
            set_sleeping(1);
            __atomic_thread_fence(__ATOMIC_SEQ_CST);
            if (fifos_pending() || !loop_q.empty()) {
                set_sleeping(0);
                continue;
            }
            itimerspec its{};
            if (const uint64_t d = next_deadline()) {
                its.it_value.tv_sec = time_t(d / 1000000000ull);
                its.it_value.tv_nsec = long(d % 1000000000ull);
            }
            timerfd_settime(timer_fd, TFD_TIMER_ABSTIME, &its, nullptr);
        }
        const int n = epoll_wait(epfd, evs, 32, -1);
        {
            std::lock_guard<std::recursive_mutex> lk(mu);
            set_sleeping(0);
        }
        for (int i = 0; i < n; ++i) {
            const int fd = evs[i].data.fd;
            if (fd == rx_fd) continue;  // read by rx_batch
            bool sock6 = false;
            for (const Local6& l : local6) sock6 = sock6 || fd == l.rx_fd;
            if (sock6) continue;
            uint64_t v;
            while (::read(fd, &v, sizeof v) == sizeof v) {}
        }
        last_work = mono_ns();
    }
}

// ---- public face ----

std::unique_ptr<SoftEngine> SoftEngine::create(const EngineConfig& cfg, std::string& err) {
    if (!cfg.tables || !cfg.events) {
        err = "soft engine: no tables or event sink";
        return nullptr;
    }
    auto impl = std::make_unique<Impl>(cfg);
    Impl& m = *impl;
    m.epfd = epoll_create1(EPOLL_CLOEXEC);
    m.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    m.timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (m.epfd < 0 || m.wake_fd < 0 || m.timer_fd < 0) {
        err = std::string("soft engine: ") + std::strerror(errno);
        return nullptr;
    }
    if (!m.open_wire(err)) return nullptr;
    Impl* mp = &m;
    m.tx = std::make_unique<TxQueue>([mp](size_t bytes, bool ok) {
        if (!ok) return mp->stat(hw::stats_block::tx_drops);
        mp->stat(hw::stats_block::tx_packets);
        mp->stat(hw::stats_block::tx_bytes, bytes);
    });
    if (cfg.bar) hw::get_bytes(cfg.bar + hw::kBar0PortBlock, hw::port_block::kSize, hw::port_block::mac, m.port_mac, 6);
    if (cfg.timing) {
        m.pipe = cfg.timing(m, cfg.standalone, err);
        if (!m.pipe) return nullptr;
    }
    if (!cfg.pcap.empty()) {
        m.pcap = roce::PcapWriter::open(cfg.pcap, err);
        if (!m.pcap) return nullptr;
    }
    std::vector<int> watch{m.wake_fd, m.timer_fd, m.rx_fd};
    for (const Impl::Local6& l : m.local6) watch.push_back(l.rx_fd);
    for (int fd : watch) {
        if (fd < 0) continue;
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = fd;
        epoll_ctl(m.epfd, EPOLL_CTL_ADD, fd, &ev);
    }
    if (!cfg.standalone) m.thread = std::thread([&m] { m.loop(); });
    return std::unique_ptr<SoftEngine>(new SoftEngine(std::move(impl)));
}

SoftEngine::SoftEngine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

SoftEngine::~SoftEngine() {
    impl_->stop = true;
    const uint64_t one = 1;
    if (::write(impl_->wake_fd, &one, sizeof one) != sizeof one) {}
    if (impl_->thread.joinable()) impl_->thread.join();
    if (impl_->pcap) impl_->pcap->flush();
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
    const uint64_t one = 1;
    if (::write(m.wake_fd, &one, sizeof one) != sizeof one) {}
}

void SoftEngine::remove_context(uint16_t ctx_id) {
    Impl& m = *impl_;
    ++m.fence_waiters;
    std::lock_guard<std::recursive_mutex> lk(m.mu);
    --m.fence_waiters;
    m.wc_flush();
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
                          const std::array<uint8_t, 6>& dmac, const uint8_t* mad, size_t len) {
    static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    const bool v4 = std::equal(kMapped, kMapped + 12, sgid.begin());
    if (v4 != std::equal(kMapped, kMapped + 12, dgid.begin())) return false;
    Impl& m = *impl_;
    std::lock_guard<std::recursive_mutex> lk(m.mu);
    roce::Packet p;
    std::copy(m.port_mac, m.port_mac + 6, p.eth.src.begin());
    std::copy(dmac.begin(), dmac.end(), p.eth.dst.begin());
    if (v4) {
        p.ip_version = roce::IpVersion::V4;
        p.eth.ethertype = roce::kEtherTypeIpv4;
        auto ip = [](const std::array<uint8_t, 16>& g) {
            return uint32_t(g[12]) << 24 | uint32_t(g[13]) << 16 | uint32_t(g[14]) << 8 | g[15];
        };
        p.ip4.src = ip(sgid);
        p.ip4.dst = ip(dgid);
        p.ip4.id = 0;
        p.ip4.frag = 0x4000;
        p.ip4.ttl = 64;
    } else {
        p.ip_version = roce::IpVersion::V6;
        p.eth.ethertype = roce::kEtherTypeIpv6;
        std::copy(sgid.begin(), sgid.end(), p.ip6.src.begin());
        std::copy(dgid.begin(), dgid.end(), p.ip6.dst.begin());
        p.ip6.hop_limit = 64;
    }
    // QP1 never gets an address vector: rxe keeps its creation-time port.
    p.udp.sport = roce::roce_udp_sport_unconnected(Impl::kGsiQpn);
    p.hdr.bth.opcode = roce::op::UD_SEND_ONLY;
    p.hdr.bth.pkey = 0xffff;
    p.hdr.bth.dqpn = Impl::kGsiQpn;
    p.hdr.bth.ack_req = true;
    p.hdr.bth.psn = m.gsi_psn;
    p.hdr.deth.qkey = Impl::kGsiQkey;
    p.hdr.deth.src_qp = Impl::kGsiQpn;
    p.payload = mad;
    p.payload_len = len;
    if (!roce::encode_frame(p, m.gsi_buf)) {
        m.stat(hw::stats_block::tx_drops);
        return false;
    }
    m.gsi_psn = roce::psn_add(m.gsi_psn, 1);
    // Straight to the wire (on a model device too: QP1 is the host's, and
    // its few MADs are not worth a place in the modelled TX timing).
    m.send_frame(m.gsi_buf.data(), p.frame_len);
    m.tx_flush();
    const uint64_t one = 1;
    if (::write(m.wake_fd, &one, sizeof one) != sizeof one) {}  // a loopback frame waits in loop_q
    return true;
}

void SoftEngine::exclusive(const std::function<void()>& f) {
    ++impl_->fence_waiters;
    std::lock_guard<std::recursive_mutex> lk(impl_->mu);
    --impl_->fence_waiters;
    f();
}

void SoftEngine::fence(hw::Table, uint32_t) {
    ++impl_->fence_waiters;
    impl_->mu.lock();
    --impl_->fence_waiters;
    impl_->wc_flush();  // the firmware may be about to unmap what it covers
}

void SoftEngine::unfence(hw::Table t, uint32_t index) {
    if (t == hw::Table::Qpc) impl_->reload_qp(index);
    if (t == hw::Table::Mpt) impl_->mpt_views.erase(index);
    if (t == hw::Table::Domain || t == hw::Table::Mtt) impl_->mpt_views.clear();
    if (t == hw::Table::Domain) impl_->shm_views.clear();
    if (t == hw::Table::Srqc) impl_->srqs.erase(index);
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
    const uint64_t one = 1;
    if (::write(impl_->wake_fd, &one, sizeof one) != sizeof one) {}
}

void SoftEngine::qp_destroying(uint32_t qpn) {
    std::lock_guard<std::recursive_mutex> lk(impl_->mu);
    impl_->drain_fifos();  // as cq_destroying
    impl_->wc_flush();
    if (impl_->pipe) {
        impl_->pipe->qp_reset(qpn);
        impl_->pipe->forget_doorbells(uint8_t(hw::DbKind::Sq), qpn);
        impl_->pipe->forget_doorbells(uint8_t(hw::DbKind::Rq), qpn);
    }
    impl_->qps.erase(qpn);
}

void SoftEngine::cq_destroying(uint32_t cqn) {
    std::lock_guard<std::recursive_mutex> lk(impl_->mu);
    // Doorbells rung before the command are taken first (PCIe orders the
    // driver's doorbell writes before its command doorbell); on a model
    // device they then die in the pipeline (forget_doorbells).
    impl_->drain_fifos();
    if (impl_->pipe) impl_->pipe->forget_doorbells(uint8_t(hw::DbKind::Cq), cqn);
    impl_->cqs.erase(cqn);
}

void SoftEngine::srq_destroying(uint32_t srqn) {
    std::lock_guard<std::recursive_mutex> lk(impl_->mu);
    impl_->drain_fifos();  // as cq_destroying
    // SRQ numbers are reused lowest-free: a producer index still on its way
    // would make the new SRQ's empty ring look posted.
    if (impl_->pipe) impl_->pipe->forget_doorbells(uint8_t(hw::DbKind::Srq), srqn);
    impl_->srqs.erase(srqn);
}

bool SoftEngine::cq_copy_entries(const uint8_t* cqc, uint16_t new_domain, uint64_t new_base, uint8_t new_log_size) {
    std::lock_guard<std::recursive_mutex> lk(impl_->mu);
    Impl& m = *impl_;
    constexpr hw::Table T = hw::Table::Cqc;
    const uint8_t n = uint8_t(Impl::g(cqc, T, hw::cqc::log_size));
    const uint32_t pi = uint32_t(Impl::g(cqc, T, hw::cqc::pi)), ci = uint32_t(Impl::g(cqc, T, hw::cqc::ci));
    HostDom from, to;
    if (!m.host_dom(uint32_t(Impl::g(cqc, T, hw::cqc::domain_id)), from) || !m.host_dom(new_domain, to))
        return false;
    const uint64_t base = Impl::g(cqc, T, hw::cqc::base);
    for (uint32_t i = ci; i != pi; ++i) {
        uint8_t b[hw::cqe::kSize];
        if (!from.read(base + uint64_t{hw::ring_slot(i, n)} * hw::cqe::kSize, b, sizeof b)) return false;
        hw::set(b, hw::cqe::owner, hw::phase_of(i, new_log_size));
        if (!to.write(new_base + uint64_t{hw::ring_slot(i, new_log_size)} * hw::cqe::kSize, b, sizeof b))
            return false;
    }
    return true;
}

std::vector<std::pair<std::string, uint64_t>> read_stats(const uint8_t* bar) {
    std::vector<std::pair<std::string, uint64_t>> r;
    for (const hw::NamedField& f : hw::stats_block::kFields) {
        if (f.field.offset < 0x10) continue;
        const uint64_t v = __atomic_load_n(
            reinterpret_cast<const uint64_t*>(bar + hw::kBar0StatsBlock + f.field.offset), __ATOMIC_RELAXED);
        r.emplace_back(f.name, v);
    }
    return r;
}

}  // namespace simnic::soft_engine
