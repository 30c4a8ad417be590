// The soft engine's inside, shared by its source files: the device
// (SoftEngine::Impl) and one QP as the engine runs it (EngineQp). Each
// concern lives in its own file, as kernel rxe splits its driver; the
// declarations below name the file that defines them:
//
//   engine.cc       the public face: create(), the firmware's hooks
//   loop.cc         the engine thread: batches, spinning, sleeping
//   doorbell.cc     the contexts' doorbell FIFOs and the doorbell dispatch
//   host_memory.cc  DMA domains, process_vm_*, read-ahead, write combining
//   mpt.cc          keys: the MPT view, translation, memory windows
//   cq_eq.cc        CQEs, the CQ doorbell, completion wake-up, EQEs
//   qp.cc           QP life cycle: QPC load and reload, transitions, writeback
//   send_queue.cc   the SQ doorbell, WQE fetch and decode
//   recv_queue.cc   receive WQEs of RQs and SRQs
//   net.cc          the wire above the port: transmit, loopback shortcut, receive
//   udp_port.cc     a port: UDP 4791 on the netdev's addresses (port.h)
//   wire_port.cc    a port: a device with its own addresses on a wire of
//                   frames (neighbour_table.h: its ARP/ND neighbours)
//   gsi.cc          QP1 (GSI): MADs to and from the host's CM
//   timers.cc       the QPs' retransmit, RNR and rate-limit timers, and
//                   the clock they run on
//   datapath.cc     the Datapath a timing model's stages call (timing.h)
#pragma once

#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "simnic/base/clock.h"
#include "simnic/hw/cqe.h"
#include "simnic/hw/layout.h"
#include "simnic/hw/wqe.h"
#include "simnic/roce/packet.h"
#include "simnic/roce/pcap_io.h"
#include "simnic/soft_engine/engine.h"
#include "simnic/transport/qp.h"
#include "ack_hold.h"
#include "map_spans.h"
#include "port.h"

namespace simnic::soft_engine {

namespace tp = simnic::transport;
using hw::Table;

using base::mono_ns;
using base::wall_us;

// ---- host memory (host_memory.cc) ----

// One transfer between this process and process `pid` (process_vm_*).
// Inline: every packet's payload and every CQE of a PROCESS domain come
// through here.
inline bool dma(pid_t pid, bool wr, const iovec* remote, size_t nremote, void* local, size_t len) {
    if (len == 0) return true;
    iovec l{local, len};
    const ssize_t n = wr ? process_vm_writev(pid, &l, 1, remote, nremote, 0)
                         : process_vm_readv(pid, &l, 1, remote, nremote, 0);
    return n == static_cast<ssize_t>(len);
}
inline bool dma_read(pid_t pid, uint64_t addr, void* dst, size_t len) {
    iovec r{reinterpret_cast<void*>(addr), len};
    return dma(pid, false, &r, 1, dst, len);
}
inline bool dma_write(pid_t pid, uint64_t addr, const void* src, size_t len) {
    iovec r{reinterpret_cast<void*>(addr), len};
    return dma(pid, true, &r, 1, const_cast<void*>(src), len);
}

// What translate() gives as the pid of an MR in an SHM domain: its
// iovecs are then addresses in this process (the object's mapping here),
// and mem_io copies with memcpy. No process has this pid, so a
// process_vm_readv/writev given it by mistake fails (ESRCH).
constexpr pid_t kMappedHere = -1;

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

// ---- QPs (qp.cc) ----

// The QPC's error cause for a completion status.
hw::ErrorCause cause_of(hw::WcStatus s);

// One QP as the engine runs it. Its state has one owner per fact. The
// transport core (`core`) owns the protocol: the QP state (RESET..ERR), the
// PSNs, MSN, send queue, drain and retry counters, and the attributes it was
// built with (type, SRQ use, MTU, timers). The EngineQp keeps only what the
// core does not know: the QPC's static fields the engine acts on (context,
// PD, CQs, SRQ number, rings and their limits), the ring cursors, the map
// from the core's send-queue sequence numbers to ring indices, the timers'
// deadlines, the QPC's error cause and the retransmit count's high mark. The
// QPC entry is where both are published (writeback()), never a third copy
// read back: what the firmware decides reaches the engine through
// reload_qp(). Each port of the core is defined with its concern: memory in
// host_memory.cc and mpt.cc, the receive queue in recv_queue.cc,
// completions and events in cq_eq.cc, the wire in net.cc, timers in
// timers.cc.
struct EngineQp final : tp::MemoryPort, tp::RecvQueuePort, tp::CompletionPort, tp::WirePort,
                        tp::TimerPort, tp::EventPort, tp::CounterPort {
    EngineQp(SoftEngine::Impl& e, uint32_t n) : eng(e), qpn(n) {}
    SoftEngine::Impl& eng;
    uint32_t qpn;
    // The transport core. Every QP the engine holds has one (reload_qp()
    // builds it on the first transition out of RESET and again at INIT and
    // RTR, whose attributes it is built from).
    std::unique_ptr<tp::Qp> core;
    hw::QpState state() const { return core ? core->state() : hw::QpState::Reset; }
    hw::QpType type() const { return core->context().cfg.type; }
    bool is_ud() const { return type() == hw::QpType::Ud; }
    bool on_srq() const { return core->context().cfg.srq; }

    // QPC fields (static between two firmware commands; load_static()).
    uint16_t ctx = 0;
    HostDom qdom;  // queue memory domain
    uint32_t pdn = 0, send_cqn = 0, recv_cqn = 0, srqn = 0;
    uint64_t sq_base = 0, rq_base = 0;
    uint8_t log_sq_size = 0, log_sq_stride = 6, log_rq_size = 0, log_rq_stride = 4;
    uint32_t max_send_sge = 0, max_recv_sge = 0, max_inline = 0;
    // Ring cursors (free-running).
    uint32_t sq_pi = 0, sq_fetch = 0, rq_pi = 0, rq_ci = 0;
    // Transport SQ sequence -> ring index, oldest first.
    std::deque<std::pair<uint64_t, uint32_t>> seqmap;
    std::optional<uint32_t> posting_index;
    std::deque<uint32_t> recv_idx;  // ring index of each receive WQE taken, oldest first
    std::optional<tp::RecvWqe> peeked;
    uint64_t timer_deadline[tp::kNumQpTimers] = {};
    uint32_t hi_psn = 0;  // next new request PSN (for counting retransmits)
    hw::ErrorCause fault = hw::ErrorCause::None;  // a fault to act on after the core returns
    hw::ErrorCause cause = hw::ErrorCause::None;  // QPC.error_cause

    // MemoryPort
    tp::MemStatus check(tp::KeyKind kind, uint32_t key, uint64_t addr, uint64_t len, uint32_t access) override;
    tp::MemStatus check_whole_mr(tp::KeyKind kind, uint32_t key, uint64_t addr, uint32_t access) override;
    tp::MemStatus read(tp::KeyKind kind, uint32_t key, uint64_t addr, void* dst, size_t len, uint32_t access) override;
    tp::MemStatus gather(uint32_t lkey, uint64_t addr, void* dst, size_t len, uint64_t sge_left,
                         uint64_t wqe_seq) override;
    tp::MemStatus read_reply(uint32_t rkey, uint64_t addr, void* dst, size_t len, uint64_t left,
                             uint64_t serve) override;
    tp::MemStatus gather_view(uint32_t lkey, uint64_t addr, size_t len, uint64_t sge_left, uint64_t wqe_seq,
                              const uint8_t*& view) override;
    tp::MemStatus read_reply_view(uint32_t rkey, uint64_t addr, size_t len, uint64_t left, uint64_t serve,
                                  const uint8_t*& view) override;
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
    void transmit_request(roce::Packet& pkt, const tp::SegWqe& wqe, const tp::SegPacket& seg) override;
    bool can_transmit() override;
    // TimerPort
    uint64_t now_ns() override;
    void arm(tp::QpTimer t, uint64_t deadline_ns) override;
    void cancel(tp::QpTimer t) override;
    // EventPort
    void async_event(hw::EventType ev) override;
    // CounterPort
    void count(tp::Counter c) override;

    tp::TransportEnv env();  // qp.cc
};

struct SoftEngine::Impl final : Datapath, PortSink {
    explicit Impl(const EngineConfig& c)
        : cfg(c),
          tables(*c.tables),
          mu(c.group ? c.group->mu : own_mu),
          fence_waiters(c.group ? c.group->fence_waiters : own_fence_waiters) {}
    ~Impl();

    // ---- the device (engine.cc, loop.cc) ----
    EngineConfig cfg;
    hw::TableStore& tables;
    // The device lock: the engine's own, or its fabric's (EngineGroup).
    std::recursive_mutex own_mu;
    std::atomic<int> own_fence_waiters{0};
    std::recursive_mutex& mu;
    std::atomic<int>& fence_waiters;
    // The end of a batch (loop.cc): posted writes out, frames sent,
    // sleeping drivers woken, EQEs and their interrupts last.
    void end_batch();
    std::atomic<bool> stop{false};
    std::thread thread;
    int epfd = -1, wake_fd = -1, timer_fd = -1;
    void wake();  // the engine thread, if it sleeps
    void loop();
    // One pass of loop() under the device lock: doorbells, the port's
    // frames, the timers due at `now`, the end of the batch. True if it did
    // anything; `simulating`: a model device's pipeline has work left.
    bool pass(uint64_t now, bool& simulating);

    // Statistics (hw-spec 2.6; congestion control's: 2.6.1; MAC TX's: 2.6.2).
    void stat(hw::Field f, uint64_t n = 1, uint32_t block = hw::kBar0StatsBlock) {
        if (!cfg.bar) return;
        __atomic_fetch_add(reinterpret_cast<uint64_t*>(cfg.bar + block + f.offset), n, __ATOMIC_RELAXED);
    }
    void cc_stat(hw::Field f) { stat(f, 1, hw::kBar0CcStatsBlock); }

    // Congestion control: the device's notification point, in every QP's
    // transport env while cfg.congestion.on (qp.cc).
    congestion::NotificationPoint np{cfg.congestion.np};

    // Tables.
    uint8_t* entry(Table t, uint32_t i) { return tables.entry(t, i); }
    // Inline with hw::get and hw::set (field.h): at a call with a constant
    // table and field the entry's size and the field's checks fold away.
    SIMNIC_HW_INLINE static uint64_t g(const uint8_t* e, Table t, hw::Field f) {
        return hw::get(e, hw::entry_size(t), f);
    }
    SIMNIC_HW_INLINE static void s(uint8_t* e, Table t, hw::Field f, uint64_t v) {
        hw::set(e, hw::entry_size(t), f, v & hw::mask_of(f.width));
    }

    // Model devices: the timing model (timing.h), and the record of the step
    // it is executing (null outside one; always null on a soft device).
    std::unique_ptr<TimingModel> pipe;
    OpRecord* rec = nullptr;
    // Protocol time (timing.h, TimingModel::simulated_protocol_time): the
    // QPs' timers and DCQCN run on the model's simulated time (a fabric's
    // device), not on the host's monotonic clock; the model keeps their
    // deadlines (timers.cc).
    bool sim_time = false;
    uint64_t protocol_now() const { return sim_time ? pipe->now_ns() : mono_ns(); }
    // The model raises the applications' completion events at its interrupt
    // (TimingModel::delivers_cq_events; cq_eq.cc, "Completion events on a
    // model device").
    bool model_cq_events = false;

    // ---- contexts and their doorbell FIFOs (doorbell.cc) ----
    struct CtxState {
        uint8_t* page = nullptr;
        int engine_fd = -1;
        uint32_t fifo_ci = 0;
        bool cqe_written = false;  // since the last wake_cq_waiters(); listed in cqe_ctxs
        // The context's process has exited (a DMA into it failed with ESRCH)
        // and the daemon has not yet destroyed what it owned: its QPs send
        // nothing and take nothing from the wire, as rxe's QPs are gone once
        // the process that owned them has exited (host_memory.cc).
        bool gone = false;
    };
    std::map<uint16_t, CtxState> ctxs;
    EngineQp* qp_of_ctx(uint16_t ctx, uint32_t qpn);
    // After a failed DMA into context `ctx`'s memory: if its process no
    // longer exists (errno ESRCH), the context is gone (CtxState::gone).
    void note_dma_failure(uint16_t ctx);
    bool ctx_gone(uint16_t ctx) const {
        auto it = ctxs.find(ctx);
        return it != ctxs.end() && it->second.gone;
    }
    void doorbell(uint16_t ctx, hw::DbKind kind, uint32_t num, uint32_t index, uint32_t cq_cmd, uint32_t cq_seen);
    bool drain_fifos();
    bool drain_group_fifos();  // this device's, and in a fabric every member's
    bool fifos_pending();
    void set_sleeping(uint32_t v);

    // ---- host memory (host_memory.cc) ----
    std::unordered_map<uint64_t, std::pair<uint8_t*, uint64_t>> shm_views;  // (ctx, handle) -> mapping
    bool host_dom(uint32_t dom, HostDom& h);
    // `ahead_left`: for a requester's gather (lkey), the bytes of its SGE
    // left from `va`; for a READ response (rkey), the bytes of the READ left
    // from `va` (the most read-ahead may fetch); 0 for every other access.
    // `ahead_for` names what a read-ahead copy serves: the gather's WQE (its
    // send queue sequence) or the READ's serving (RespResource::serve).
    tp::MemStatus mem_io(const EngineQp& q, tp::KeyKind kind, uint32_t key, uint64_t va, void* buf, size_t len,
                         uint32_t access, bool wr, uint64_t ahead_left = 0, uint64_t ahead_for = 0);
    std::vector<iovec> iov;  // mem_io's translation
    // A model device's stage is charged one packet's own DMA, whichever way
    // its bytes crossed (mem_io, mem_view).
    void charge_dma(bool wr, size_t len, uint32_t access) {
        if (rec)
            rec->add(wr ? Op::Kind::DmaWrite : Op::Kind::DmaRead, 0, uint32_t(len), 0,
                     access == hw::access::kRemoteAtomic ? DmaPurpose::Atomic : DmaPurpose::Payload);
    }
    // mem_io's read served from the read-ahead copy in place: the same
    // checks and charges, `view` pointing into the copy; `view` null and
    // nothing done when the copy does not hold the bytes.
    tp::MemStatus mem_view(const EngineQp& q, tp::KeyKind kind, uint32_t key, uint64_t va, size_t len,
                           uint32_t access, uint64_t ahead_left, uint64_t ahead_for, const uint8_t*& view);
    // Read-ahead of a requester's gather and of a READ's response data (see
    // host_memory.cc): a copy per slot, each for one QP's one WQE or READ
    // serving.
    static constexpr size_t kReadAhead = 64 * 1024;
    static constexpr size_t kReadAheadSlots = 8;
    struct ReadAhead {
        tp::KeyKind kind = tp::KeyKind::Lkey;  // lkey: a gather's; rkey: a READ response's
        uint16_t ctx = 0;
        uint32_t key = 0;
        uint64_t va = 0;
        size_t len = 0;
        std::vector<uint8_t> buf;
        pid_t pid = 0;  // whose memory iov is
        uint32_t qpn = 0;
        uint64_t serves = 0;          // the WQE (gather) or the READ serving it was read for
        uint64_t used = 0;            // when it last served a packet (ra_clock), for eviction
        std::vector<iovec> iov;       // the host ranges the copy was read from
        // Whether it was read for QP `q`'s gathers (lkey) or READ responses
        // (rkey).
        bool of(const EngineQp& q, tp::KeyKind k) const { return kind == k && ctx == q.ctx && qpn == q.qpn; }
    };
    std::array<ReadAhead, kReadAheadSlots> ra;
    // Bit i: slot i holds a copy. A mask, so that a device with none (every
    // SHM domain, every packet of a model device's bench) looks at no slot.
    uint32_t ra_held = 0;
    static_assert(kReadAheadSlots <= 32, "ra_held has a bit per slot");
    uint64_t ra_clock = 0;
    size_t ra_last = 0;  // the slot that served last: looked at first
    void drop_read_ahead() { ra_held = 0; }
    // Drops every copy that a write of `pid`'s ranges `w` may land on.
    void write_hits_read_ahead(pid_t pid, const std::vector<iovec>& w);
    // Serves `len` bytes at `va` from a copy read for this very access (see
    // host_memory.cc).
    bool read_ahead_hit(const EngineQp& q, tp::KeyKind kind, uint32_t key, uint64_t va, void* dst, size_t len,
                        uint64_t serves);
    // Where a copy holds those bytes, or null.
    const uint8_t* read_ahead_at(const EngineQp& q, tp::KeyKind kind, uint32_t key, uint64_t va, size_t len,
                                 uint64_t serves);
    size_t read_ahead_slot(const EngineQp& q, tp::KeyKind kind) const;
    // Which memory of the processes the device writes is private to them
    // (write_hits_read_ahead). Cleared at every firmware fence and context
    // removal.
    MapSpans map_spans;
    void forget_mappings() { map_spans.clear(); }
    // After read_ahead_hit missed (and the combined writes were flushed):
    // reads a new copy starting at `va` and serves `len` bytes from it.
    bool read_ahead(const EngineQp& q, tp::KeyKind kind, uint32_t key, uint32_t access, uint64_t va, void* dst,
                    size_t len, uint64_t room, uint64_t serves);
    // Write combining (see host_memory.cc): the payload writes to one
    // process since the last flush, in the order they came, as one
    // process_vm_writev of many remote ranges.
    static constexpr size_t kCombineMax = 256 * 1024;
    static constexpr size_t kCombineRanges = 64;
    static constexpr size_t kCombinePieces = 512;  // local iovecs: at most IOV_MAX (1024)
    struct WriteCombine {
        bool active = false;
        pid_t pid = 0;
        std::vector<iovec> to;      // remote ranges, in order
        std::vector<uint32_t> qpn;  // the QP that wrote each range
        // Their bytes back to back: each piece either still in the
        // loopback frame it came in (`at`, a buffer kept in `pinned` until
        // the flush) or copied into `data` (`at` null, from `off`).
        struct Piece {
            const uint8_t* at;
            size_t off, len;
        };
        std::vector<Piece> from;
        std::vector<uint8_t> data;
        std::vector<std::vector<uint8_t>> pinned;
        std::vector<iovec> local;  // `from` as iovecs, at the flush
        size_t bytes = 0;          // in `from`
        uint64_t gen = 0;          // flushes so far
    } wc;
    // The loopback frame rx_batch is delivering: wc_add borrows a payload
    // that lies in it instead of copying it, and notes the flush
    // generation it borrowed in (kNotLent: none since the frame came).
    static constexpr uint64_t kNotLent = ~uint64_t{0};
    const uint8_t* lend_begin = nullptr;
    const uint8_t* lend_end = nullptr;
    uint64_t lent_gen = kNotLent;
    void wc_flush() {
        if (wc.active) wc_write();
    }
    // DMA_STATS_BLOCK (hw-spec 2.6.3), counted here per packet and
    // published to the BAR at each CQE and EQE (so that what a completion
    // follows is counted when it is seen) and at the end of each batch: an
    // atomic add to the BAR per packet was 0.2% of a model device's
    // simulation.
    struct DmaCounts {
        uint64_t reads = 0, writes = 0, ahead_hits = 0, combined = 0;
    } dma_n, dma_published;
    // One host transfer of the transport's data (a system call, or a copy
    // into an SHM domain).
    void host_transfer(bool wr) { ++(wr ? dma_n.writes : dma_n.reads); }
    void publish_dma_stats() {
        namespace f = hw::dma_stats_block;
        const auto put = [&](hw::Field fl, uint64_t now, uint64_t& was) {
            if (now != was) stat(fl, now - was, hw::kBar0DmaStatsBlock);
            was = now;
        };
        put(f::host_reads, dma_n.reads, dma_published.reads);
        put(f::host_writes, dma_n.writes, dma_published.writes);
        put(f::read_ahead_hits, dma_n.ahead_hits, dma_published.ahead_hits);
        put(f::writes_combined, dma_n.combined, dma_published.combined);
    }
    void wc_write();
    bool wc_add(const EngineQp& q, pid_t pid, const iovec& dst, const void* src, size_t len);

    // ---- keys and memory windows (mpt.cc) ----
    // An MPT entry in use, decoded once (see mpt.cc).
    struct MptView {
        bool valid = false, zero_based = false, mtt_mode = false;
        bool mw = false;  // a memory window: resolved through its MR (mw.h)
        bool on_demand = false;  // MPT_ENTRY.on_demand: pages looked up at each access
        uint32_t key = 0, ctx = 0, pdn = 0, rights = 0, domain = 0, log_page = 0, mtt_base = 0, mtt_count = 0;
        uint64_t iova = 0, length = 0, host_addr = 0;
        HostDom mem;  // of `domain`: its process, or its SHM object mapped here; neither if it has none
    };
    std::unordered_map<uint32_t, MptView> mpt_views;
    const MptView* mpt_view(uint32_t idx);
    // `quiet`: a read-ahead's look, which counts nothing. `on_demand`: set
    // when the MR reached (through a window or not) is an on-demand one.
    // `whole_mr`: a FLUSH of the whole MR, which checks no range of the MR.
    tp::MemStatus translate(const EngineQp& q, tp::KeyKind kind, uint32_t key, uint64_t va, uint64_t len,
                            uint32_t access, pid_t* pid, std::vector<iovec>* out, bool quiet = false,
                            uint64_t* room = nullptr, bool* on_demand = nullptr, bool whole_mr = false);
    bool mapped_here(const MptView& m, std::vector<iovec>& out);
    uint8_t* mpt_of(const EngineQp& q, uint32_t key);
    void count_mw(const EngineQp& q, uint32_t key, int delta);
    tp::MemStatus bind_mw(const EngineQp& q, const tp::MwBind& b);
    tp::MemStatus invalidate(const EngineQp& q, uint32_t rkey);

    // ---- CQs and EQs (cq_eq.cc) ----
    struct CqState {
        bool notable = false;  // a solicited or error CQE at notable_idx
        uint32_t notable_idx = 0;
    };
    std::unordered_map<uint32_t, CqState> cqs;
    std::vector<uint16_t> cqe_ctxs;  // contexts with cqe_written set
    void post_event(uint16_t ctx, hw::EventType type, uint32_t obj, uint32_t aux = 0);
    void post_eqe(uint16_t ctx, hw::EventType type, uint32_t obj, uint32_t aux);
    // A model device's completion events, raised by the datapath and held
    // until the model's interrupt for their CQ (Datapath::cq_event): per
    // CQ, oldest first, each event's context and the wall-clock time it was
    // raised. A CQ's are dropped when it is destroyed.
    std::unordered_map<uint32_t, std::deque<std::pair<uint16_t, uint64_t>>> held_cq_events;
    // Events the model sent after their CQ's moderation period whose period
    // has not yet passed in wall-clock time since they were raised: posted
    // when it has (run_timers), each with its own due time.
    // An event whose count is met by CQEs written meanwhile (the real
    // peer's later acknowledgements, in later passes) goes then, as a NIC
    // sends it at the count (count_due_cqe).
    struct DueCqEvent {
        uint64_t due_ns;
        uint32_t cqn;
        uint16_t ctx;
        uint32_t cqes_left;  // CQEs still to count; 0: no count, the period only
    };
    std::vector<DueCqEvent> due_cq_events;
    bool post_due_cq_events(uint64_t now);
    void count_due_cqe(uint32_t cqn);
    void post_cq_event(uint32_t cqn, uint16_t ctx);  // an event the model sent, if its CQ is still there
    // The EQEs of the engine thread's pass (loop.cc), posted at its end,
    // after the pass's frames are sent: an EQE may raise an interrupt, whose
    // woken application thread, on a machine with fewer cores than busy
    // threads, takes the engine's core at once (wake-up preemption) and
    // would hold back the rest of the pass, such as the frame the peer
    // waits for. Outside a pass (commands, destroys) EQEs go out at once.
    bool defer_eqes = false;
    std::vector<std::pair<uint16_t, std::array<uint8_t, hw::eqe::kSize>>> deferred_eqes;
    void post_deferred_eqes();
    void cq_error(uint8_t* e, uint32_t cqn);
    // What became of a CQE (hw-spec 7.2): written; lost to a full CQ, which
    // stays usable; or lost to a fault writing it, which puts the CQ in error.
    enum class CqeWrite { Written, Overrun, Fault };
    CqeWrite write_cqe(uint32_t cqn, const tp::Completion& c, uint32_t wqe_index, bool is_send, bool solicited);
    void wake_cq_waiters();
    // `seen`: the producer index the driver saw when it armed (hw-spec 7.3).
    void cq_doorbell(uint16_t ctx, uint32_t cqn, uint32_t ci, uint32_t cmd, uint32_t seen);
    bool cq_copy_entries(const uint8_t* cqc, uint16_t new_domain, uint64_t new_base, uint8_t new_log_size);

    // ---- QPs (qp.cc) ----
    std::unordered_map<uint32_t, std::unique_ptr<EngineQp>> qps;
    void build_av(const hw::AddressVector& a, tp::AddressVector& av);
    tp::QpConfig qp_config(uint32_t qpn, const uint8_t* e);
    void load_static(EngineQp& q, const uint8_t* e);
    void reload_qp(uint32_t qpn);
    // The QP is gone (RESET, destroyed): its state, its notification
    // point's memory of it (a new QP of this number asks for its first CNP
    // at once), and its reaction point's record, which ends now.
    void drop_qp(uint32_t qpn);
    // Runs `f` on the QP's core, then acts on what it left behind.
    template <typename F>
    void run(EngineQp& q, F&& f) {
        const bool was_err = q.state() == hw::QpState::Err;
        f();
        after(q, was_err);
    }
    // `was_err`: the QP was in ERR before the step (the timing model is told
    // once, when it enters ERR).
    void after(EngineQp& q, bool was_err);
    void after(EngineQp& q) { after(q, q.state() == hw::QpState::Err); }
    void writeback(EngineQp& q);

    // ---- send queues (send_queue.cc) ----
    std::vector<uint8_t> sq_wqe;  // the send WQE being decoded
    void sq_doorbell(uint16_t ctx, uint32_t qpn, uint32_t index);
    // The ring index of the core's SQ entry `seq` (entries before it are done).
    static uint32_t ring_index_of(EngineQp& q, uint64_t seq) {
        while (!q.seqmap.empty() && q.seqmap.front().first < seq) q.seqmap.pop_front();
        if (q.seqmap.empty() || q.seqmap.front().first != seq) return q.sq_fetch;
        return q.seqmap.front().second;
    }
    hw::WcStatus decode_send(EngineQp& q, tp::SendWqe& w);
    void fail_wqe(EngineQp& q, uint32_t idx, const tp::SendWqe& w, hw::WcStatus st);
    void fetch_sq(EngineQp& q);

    // ---- receive queues and SRQs (recv_queue.cc) ----
    struct SrqState {
        std::optional<tp::RecvWqe> peeked;
    };
    std::unordered_map<uint32_t, SrqState> srqs;
    std::vector<uint8_t> rq_wqe;  // the receive WQE being parsed
    void rq_doorbell(uint16_t ctx, uint32_t qpn, uint32_t index);
    void srq_doorbell(uint16_t ctx, uint32_t srqn, uint32_t index);
    bool parse_recv(const HostDom& dom, uint64_t addr, uint32_t stride, uint32_t max_sge, tp::RecvWqe& w);
    const tp::RecvWqe* srq_peek(EngineQp& q);
    uint32_t srq_pop(EngineQp& q);

    // ---- the wire (net.cc; the port behind it: port.h, udp_port.cc, wire_port.cc) ----
    std::unique_ptr<Port> port;
    std::vector<int> port_fds;  // what the sleeping thread waits on for the port
    std::unique_ptr<roce::PcapWriter> pcap;
    std::vector<uint8_t> txbuf;  // the frame being encoded
    uint8_t port_mac[6] = {};
    // Loopback shortcut (EngineConfig::loopback): self-addressed IP packets
    // waiting for this device's RX (each at `off` in its buffer, `len`
    // bytes), and spare buffers for them.
    struct LoopFrame {
        std::vector<uint8_t> buf;
        size_t off = 0, len = 0;
    };
    std::deque<LoopFrame> loop_q;
    std::vector<std::vector<uint8_t>> loop_spare;
    uint32_t port_quiet = 0, port_skip = 0;  // receive passes that found nothing
    bool rx_doorbells_taken = false;  // this pass's FIFOs looked at after a frame was read
    bool rx_doorbells_found = false;  // ... and they held doorbells
    std::vector<std::vector<uint8_t>> rx_held;  // a model device's frames of this pass
    void doorbells_before_rx();
    // `wqe`, `seg`: a request packet's segmentation step, kept in the
    // frame's record for a timing model (null for other packets).
    void transmit(EngineQp& q, roce::Packet& pkt, const tp::SegWqe* wqe = nullptr, const tp::SegPacket* seg = nullptr);
    // A packet that only this engine's receive path will see (net.cc).
    bool loop_unseen(const roce::Packet& pkt) const;
    // Back-pressure from the device's own receive path (net.cc): while
    // rx_lags(), a requester stops at its next packet (tx_room, the core's
    // WirePort::can_transmit) and its QP waits in tx_held; each pass, once
    // the receive path has caught up, resume_held() lets them go on.
    // A device that sends to itself outruns what it receives otherwise (a
    // deep queue of large UC or UD SENDs: no window holds them back).
    std::vector<uint32_t> tx_held;
    // The loopback shortcut's queue is bounded the same way: 32 MiB of
    // 4 KiB frames.
    static constexpr size_t kLoopHoldFrames = 8192;
    bool rx_lags() const;
    bool tx_room(EngineQp& q);
    bool resume_held();
    // `posted_writes_first`: write the posted payload writes now, before
    // the frame is queued (see send_frame). A model device's MAC TX passes
    // false and counts the frame in `tx_unflushed` instead: tx_flush writes
    // them before it hands the queue to the kernel.
    void send_frame(const uint8_t* frame, size_t len, bool posted_writes_first = true);
    // Frames queued at the port since its last flush (tx_flush).
    // Kept below the ports' own batch (TxQueue::kBatch), at which a port
    // would send without asking: wire_tx flushes at kWireTxRun. As long as
    // one UDP GSO send can be (64 segments, 65,507 bytes: 62 frames at MTU
    // 1024), so that a 64 KiB message at MTU 1024 leaves in two sends, not
    // the four a run of 16 made.
    static constexpr uint32_t kWireTxRun = 60;
    uint32_t tx_unflushed = 0;
    // Whether one of them is not a request (an ACK, a NAK, a READ response,
    // an atomic ACK: each tells the peer that what came before it is in
    // memory), so that the posted writes must land before the queue goes.
    // Requests alone tell the peer nothing about this host's memory: the
    // payload a responder is combining keeps combining while its device's
    // requester sends.
    bool tx_owes_writes = false;
    void tx_flush() {
        if (tx_owes_writes) wc_flush();
        tx_unflushed = 0;
        tx_owes_writes = false;
        if (port) port->flush();
        if (!ack_hold.holding()) {
            ack_hold.sent(0);  // the time matters only to a hold (a clock read per step saved)
            return;
        }
        ack_hold.sent(hold_now());
        // Every count moves while an ACK is held: published as the hold ends.
        const AckHold::Counters& c = ack_hold.counters();
        stat(hw::tx_stats_block::acks_held, c.held - ack_hold_published.held, hw::kBar0TxStatsBlock);
        stat(hw::tx_stats_block::acks_joined, c.joined - ack_hold_published.joined, hw::kBar0TxStatsBlock);
        stat(hw::tx_stats_block::ack_holds_expired, c.expired - ack_hold_published.expired, hw::kBar0TxStatsBlock);
        ack_hold_published = c;
    }
    // The end of a step or of a pass: the port's queue leaves, unless it
    // holds only ACKs that may wait for their flow's reply (ack_hold.h).
    // The engine spins while one waits (a pass ends each time) and sends
    // before it sleeps.
    AckHold ack_hold;
    // The hold's clock: the host's, or on an engine driven by poll() the
    // time poll() was given, so that a test decides when a hold runs out
    // (testbench/fuzz/test_port_ack_hold.cpp) instead of the scheduler.
    bool driven = false;
    uint64_t driven_now = 0;
    uint64_t hold_now() const { return driven ? driven_now : mono_ns(); }
    AckHold::Counters ack_hold_published;  // what TX_STATS_BLOCK has of ack_hold's counters (hw-spec 2.6.2)
    void tx_step_end() {
        if (!ack_hold.holding() || !ack_hold.may_wait(hold_now())) tx_flush();
    }
    bool rx_batch();
    // What RX_STATS_BLOCK has of the port's rx_overflow_drops (hw-spec 2.6.4).
    uint64_t rx_overflow_published = 0;
    // What a received packet's sender vouches for, so that rx_deliver need
    // not check it: nothing (the port's), its ICRC (a model device's ICRC
    // check passed it), or all of it (built by this engine a moment ago:
    // the loopback shortcut). `decoded`: the packet as a model device's
    // parser decoded it from the frame at `eth` (offsets from there).
    enum class RxTrust : uint8_t { None, Icrc, Built };
    void rx_deliver(const uint8_t* ip_packet, size_t len, RxTrust trust = RxTrust::None,
                    const uint8_t* eth = nullptr, const roce::Packet* decoded = nullptr);
    // PortSink
    void rx_ip(const uint8_t* ip, size_t len) override;
    void rx_frame(const uint8_t* frame, size_t len) override;

    // ---- multicast (mcast.cc) ----
    // The MCG table's valid entries (hw-spec 9.10) by MGID, each with its
    // QPNs in slot order, as the firmware last released them; and each MCG
    // number's MGID, to find what a freed entry was.
    using Gid = std::array<uint8_t, 16>;
    std::map<Gid, std::vector<uint32_t>> mcgs;
    std::unordered_map<uint32_t, Gid> mcg_gids;
    void reload_mcg(uint32_t index);
    // The port joins or leaves the IP group of `mgid`; the engine's sleep
    // then waits on the port's descriptors as they now are.
    void port_group(const Gid& mgid, bool join);
    // A packet to DestQP 0xFFFFFF: one copy to every QP attached to the
    // group its destination address names (rxe_rcv_mcast_pkt).
    void rx_multicast(const roce::Packet& pkt);

    // ---- QP1 (gsi.cc) ----
    // Its MADs come from and go to the daemon's CM agent (EngineConfig::gsi_rx,
    // SoftEngine::gsi_send).
    static constexpr uint32_t kGsiQpn = 1, kGsiQkey = 0x80010000;
    uint32_t gsi_psn = 0;  // QP1's next PSN
    // A MAD went into the timing model's TX path (a fabric's device, whose
    // wire is the fabric): the engine's next pass simulates it.
    bool gsi_pending = false;
    // A command simulated part of the model's work (TimingModel::
    // take_doorbells) and left the rest: the next pass simulates on.
    bool resume_sim = false;
    std::vector<uint8_t> gsi_buf;
    void gsi_receive(const roce::Packet& pkt);
    bool gsi_send(const std::array<uint8_t, 16>& sgid, const std::array<uint8_t, 16>& dgid,
                  const std::array<uint8_t, 6>& dmac, const uint8_t* mad, size_t len, uint8_t traffic_class);

    // ---- timers (timers.cc) ----
    bool run_timers(uint64_t now);
    void fire_timer(EngineQp& q, int t);
    uint64_t next_deadline();
    // A fabric's pass with nothing new: whether the model may simulate on
    // now (busy, or its quiet gap has lasted as long in wall time: pacing
    // in EngineGroup). Anything new ends the gap (pass).
    bool quiet_gap_due(uint64_t now);

    // ---- Datapath: a timing model's stages execute here (datapath.cc) ----
    void exec_doorbell(const Doorbell& db, OpRecord& r) override;
    void exec_rx(const uint8_t* frame, size_t len, bool icrc_checked, OpRecord& r,
                 const roce::Packet* decoded) override;
    void rx_dropped(bool bad_icrc) override;
    uint32_t probe_placement(const uint8_t* frame, size_t len, OpRecord& rec) override;
    void exec_timer(uint32_t qpn, uint8_t t, OpRecord& r) override;
    void wire_tx(const uint8_t* frame, size_t len) override;
    void cq_event(uint32_t cqn, uint64_t period_ns, uint32_t cqes_to_count) override;
};

}  // namespace simnic::soft_engine
