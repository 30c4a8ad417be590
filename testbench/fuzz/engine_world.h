// A soft engine device in-process, for the receive-path fuzzer
// (fuzz_engine_rx.cc) and the QPC reuse test (test_qpc_release.cpp): the
// firmware over its tables, the engine on a port this harness plays
// (FakePort: frames in through the same PortSink calls the UDP and wire
// ports make, frames out recorded), driven one pass at a time
// (SoftEngine::create_driven, poll). One context of this process (its
// bootstrap domain a PROCESS domain, reached through process_vm_*, which
// dma_guard.cc checks), QPs of every type in several states with receive
// WQEs posted, and MRs of several access mixes in an arena whose gaps are
// filled with a canary.
#pragma once

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "dma_guard.h"
#include "engine_internal.h"
#include "port.h"
#include "simnic/base/clock.h"
#include "simnic/fw/firmware.h"
#include "simnic/fw/table_store.h"
#include "simnic/hw/field.h"
#include "simnic/hw/layout.h"
#include "simnic/hw/wqe.h"
#include "simnic/soft_engine/engine.h"

namespace simnic::fuzz {

namespace se = simnic::soft_engine;

inline constexpr std::array<std::uint8_t, 4> kLocalIp = {10, 0, 0, 1};
inline constexpr std::array<std::uint8_t, 4> kPeerIp = {10, 0, 0, 2};
inline constexpr fw::Mac kLocalMac = {0x52, 0x54, 0x00, 0x00, 0x00, 0x01};
inline constexpr fw::Mac kPeerMac = {0x52, 0x54, 0x00, 0x00, 0x00, 0x02};
inline constexpr std::uint8_t kCanary = 0xA5;

inline fw::Gid v4_gid(const std::array<std::uint8_t, 4>& ip) {
    fw::Gid g{};
    g[10] = g[11] = 0xff;
    std::memcpy(g.data() + 12, ip.data(), 4);
    return g;
}
inline fw::Gid v6_gid(std::uint8_t last) {
    fw::Gid g{};
    g[0] = 0xfd;
    g[15] = last;
    return g;
}

class FakeNetdev final : public fw::NetdevInfo {
public:
    std::optional<fw::NetdevSnapshot> query() override {
        fw::NetdevSnapshot s;
        s.name = "fz";
        s.ifindex = 7;
        s.mac = kLocalMac;
        s.mtu = 1500;
        s.up = s.running = true;
        s.ipv4 = {kLocalIp};
        s.ipv6 = {v6_gid(1)};
        return s;
    }
    std::optional<fw::Mac> resolve_neighbor(const fw::Gid&) override { return kPeerMac; }
};

class CountingSink final : public hw::EventSink {
public:
    void post_eqe(std::uint16_t, const std::uint8_t*, std::size_t) override { ++eqes; }
    std::size_t eqes = 0;
};

// The port: what the harness queues is handed to the engine as a whole
// Ethernet frame (rx_frame, as the wire port does) or as its IP packet
// (rx_ip, as the UDP port does); what the engine sends is kept.
class FakePort final : public se::Port {
public:
    struct In {
        std::vector<std::uint8_t> frame;  // Ethernet frame
        bool as_ip = false;
    };
    std::deque<In> rx;
    // What the engine queued (send) leaves when it flushes the queue, as
    // from the UDP and wire ports: the moment the port's ACK hold moves.
    std::vector<std::vector<std::uint8_t>> queued;
    std::vector<std::vector<std::uint8_t>> sent;  // the first kKeep frames sent
    std::size_t sent_total = 0;
    std::size_t delivered = 0;  // frames handed to the engine
    static constexpr std::size_t kKeep = 256;

    std::uint32_t ipv4() const override {
        return std::uint32_t(kLocalIp[0]) << 24 | kLocalIp[1] << 16 | kLocalIp[2] << 8 | kLocalIp[3];
    }
    bool is_local(const se::IpAddr&) const override { return false; }
    std::optional<roce::MacAddr> neighbour(const se::IpAddr&) override { return std::nullopt; }
    void prepare(roce::Packet&) override {}
    bool send(const se::OutFrame& f) override {
        std::lock_guard<std::mutex> lk(mu);
        queued.emplace_back(f.data, f.data + f.len);
        return true;
    }
    void flush() override {
        std::lock_guard<std::mutex> lk(mu);
        for (auto& f : queued) {
            ++sent_total;
            if (sent.size() < kKeep) sent.push_back(std::move(f));
        }
        queued.clear();
    }
    // Queues a frame to arrive (any thread: a test may poll the engine from
    // another, as the engine thread runs beside the control thread).
    void arrive(std::vector<std::uint8_t> frame, bool as_ip = false) {
        std::lock_guard<std::mutex> lk(mu);
        rx.push_back({std::move(frame), as_ip});
    }
    bool receive(se::PortSink& sink) override {
        bool any = false;
        // A bounded batch, as the real ports hand over.
        for (int k = 0; k < 16; ++k) {
            In in;
            {
                std::lock_guard<std::mutex> lk(mu);
                if (rx.empty()) break;
                in = std::move(rx.front());
                rx.pop_front();
            }
            any = true;
            if (in.as_ip) {
                if (in.frame.size() < roce::kEthHdrBytes) continue;
                ++delivered;
                sink.rx_ip(in.frame.data() + roce::kEthHdrBytes, in.frame.size() - roce::kEthHdrBytes);
            } else {
                ++delivered;
                sink.rx_frame(in.frame.data(), in.frame.size());
            }
        }
        return any;
    }
    bool rx_pending() const override {
        std::lock_guard<std::mutex> lk(mu);
        return !rx.empty();
    }
    std::vector<int> fds() const override { return {}; }
    mutable std::mutex mu;
};

// Host memory for the device: one arena, regions carved with canary-filled
// gaps between them. Mapped once per process (the fuzzer reuses it).
struct Arena {
    static constexpr std::size_t kBytes = 1 << 20;
    static constexpr std::size_t kGap = 256;
    std::uint8_t* base = nullptr;
    std::size_t used = 0;
    std::vector<std::pair<std::size_t, std::size_t>> regions;  // offset, size

    static Arena& get() {
        static Arena a;
        if (!a.base) {
            void* p = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED) std::abort();
            a.base = static_cast<std::uint8_t*>(p);
        }
        return a;
    }
    void reset() {
        std::memset(base, kCanary, kBytes);
        used = kGap;
        regions.clear();
    }
    std::uint8_t* carve(std::size_t n) {
        used = (used + 255) & ~std::size_t{255};  // the largest ring stride
        if (used + n + kGap > kBytes) std::abort();  // a test asked for more than the arena holds
        std::uint8_t* p = base + used;
        std::memset(p, 0, n);
        regions.push_back({used, n});
        used += n + kGap;
        return p;
    }
    // Whether [p, p + n) holds only `v` (memcmp against a block of it: a
    // loop of byte compares costs a fuzzer's instrumentation per byte).
    static bool all(const std::uint8_t* p, std::size_t n, std::uint8_t v) {
        static std::uint8_t block[2][4096];
        static bool init = false;
        if (!init) {
            std::memset(block[0], 0, sizeof block[0]);
            std::memset(block[1], kCanary, sizeof block[1]);
            init = true;
        }
        const std::uint8_t* ref = block[v == kCanary ? 1 : 0];
        if (v != 0 && v != kCanary) std::abort();
        for (std::size_t i = 0; i < n; i += sizeof block[0])
            if (std::memcmp(p + i, ref, std::min(n - i, sizeof block[0])) != 0) return false;
        return true;
    }
    // Whether a byte outside every region is not the canary; its gap's offset.
    std::optional<std::size_t> canary_broken() const {
        std::size_t at = 0;
        for (const auto& [off, n] : regions) {
            if (!all(base + at, off - at, kCanary)) return at;
            at = off + n;
        }
        if (!all(base + at, kBytes - at, kCanary)) return at;
        return std::nullopt;
    }
};

// A frame from the peer (10.0.0.2) to the device: `opcode` to `dqpn` at
// `psn`, `payload` bytes of `fill`, an AETH of `syndrome` where the opcode
// has one, a valid ICRC.
inline std::vector<std::uint8_t> peer_frame(std::uint32_t dqpn, std::uint8_t opcode, std::uint32_t psn,
                                            std::size_t payload = 0, std::uint8_t syndrome = 0x1f,
                                            std::uint8_t fill = 0x5e) {
    roce::Packet p;
    std::memcpy(p.eth.dst.data(), kLocalMac.data(), 6);
    std::memcpy(p.eth.src.data(), kPeerMac.data(), 6);
    p.ip4.src = 0x0a000002u;
    p.ip4.dst = 0x0a000001u;
    p.udp.sport = static_cast<std::uint16_t>(0xC000 | (dqpn & 0x3FFF));
    p.hdr.bth.opcode = opcode;
    p.hdr.bth.dqpn = dqpn;
    p.hdr.bth.psn = psn & 0xFFFFFF;
    p.hdr.bth.ack_req = true;
    p.hdr.aeth.syndrome = syndrome;
    p.hdr.deth.qkey = 0x11111111;
    std::vector<std::uint8_t> data(payload, fill);
    p.payload = data.data();
    p.payload_len = payload;
    std::vector<std::uint8_t> out;
    if (!roce::encode_frame(p, out)) std::abort();
    return out;
}

struct Mr {
    std::uint8_t* p = nullptr;
    std::size_t len = 0;
    std::uint32_t key = 0;
    std::uint8_t access = 0;
};

struct QpInfo {
    std::uint32_t qpn = 0;
    hw::QpType type = hw::QpType::Rc;
    hw::QpState target = hw::QpState::Rts;
    bool srq = false;
    std::uint8_t* sq = nullptr;
    std::uint8_t* rq = nullptr;
    std::uint32_t sq_pi = 0, rq_pi = 0;
    std::uint32_t remote_qpn = 0;
    std::uint32_t rq_psn = 0, sq_psn = 0;
    bool destroyed = false;
};

class Mbox {
public:
    explicit Mbox(std::size_t n) : b_(n) {}
    Mbox& set(hw::Field f, std::uint64_t v) {
        if (!hw::set(b_.data(), b_.size(), f, v)) std::abort();
        return *this;
    }
    Mbox& bytes(hw::Field f, const std::uint8_t* p, std::size_t n) {
        if (!hw::set_bytes(b_.data(), b_.size(), f, p, n)) std::abort();
        return *this;
    }
    const std::vector<std::uint8_t>& b() const { return b_; }

private:
    std::vector<std::uint8_t> b_;
};

struct EngineWorld {
    static constexpr std::uint16_t kCtx = 1;
    static constexpr std::uint8_t kLogSq = 4, kLogSqStride = 8, kLogRq = 4, kLogRqStride = 6;
    static constexpr std::uint8_t kLogCq = 6;

    FakeNetdev netdev;
    CountingSink sink;
    std::vector<std::uint8_t> bar = std::vector<std::uint8_t>(0x1000, 0);
    std::unique_ptr<fw::MemTableStore> store;
    std::unique_ptr<se::SoftEngine> engine;
    FakePort* port = nullptr;
    std::unique_ptr<fw::Firmware> fw;
    std::uint8_t* page = nullptr;
    int efd = -1;
    std::uint16_t boot = 0;
    std::uint32_t pd = 0, cq = 0, tiny_cq = 0, srqn = 0;
    std::uint8_t* cq_ring = nullptr;
    std::uint8_t* tiny_ring = nullptr;
    std::uint8_t* srq_ring = nullptr;
    std::uint32_t srq_pi = 0;
    std::vector<QpInfo> qps;
    // A: every right. B: REMOTE_READ only (never written). C: LOCAL_WRITE
    // only, the receive buffers (never read: no REMOTE_READ, no send
    // gathers from it). E: LOCAL and REMOTE_WRITE (never read). R: LOCAL_WRITE,
    // used by no WQE (never touched). D: registered, then deregistered (never
    // touched).
    Mr a, b, c, e, r, d;
    std::string error;  // what failed to set up
    // The port's ACK hold (EngineConfig::ack_hold_ns), set before open(): on
    // a driven engine it runs on poll()'s clock. 0: every ACK leaves at once.
    std::uint64_t ack_hold_ns = 0;

    ~EngineWorld() {
        // The engine goes before the firmware that calls into it; contexts first.
        if (fw && fw->has_context(kCtx)) fw->destroy_context(kCtx);
        if (engine) engine->remove_context(kCtx);
        fw.reset();
        engine.reset();
        if (efd >= 0) close(efd);
        std::free(page);
    }

    fw::CmdResult cmd(hw::CmdOpcode op, const Mbox& in, std::size_t out_len = 256) {
        return fw->execute(kCtx, static_cast<std::uint16_t>(op), in.b().data(), in.b().size(), out_len);
    }
    std::uint32_t handle_of(const fw::CmdResult& r) {
        return static_cast<std::uint32_t>(hw::get(r.out.data(), r.out_bytes, hw::cmd_handle::handle));
    }
    std::uint64_t stat(hw::Field f) const {
        std::uint64_t v;
        std::memcpy(&v, bar.data() + hw::kBar0StatsBlock + f.offset, 8);
        return v;
    }
    std::uint8_t* qpc(std::uint32_t qpn) { return store->entry(hw::Table::Qpc, qpn); }
    std::uint64_t qpc_get(std::uint32_t qpn, hw::Field f) { return hw::get(qpc(qpn), hw::qpc::kSize, f); }

    // One engine pass, with the timers due at `now` (default: now).
    bool poll(std::uint64_t now = 0) { return engine->poll(now ? now : base::mono_ns()); }
    // Passes until the engine has nothing to do; false if it never stops.
    bool settle(int max_passes = 256) {
        for (int i = 0; i < max_passes; ++i)
            if (!poll()) return true;
        return false;
    }
    void ring(hw::DbKind kind, std::uint32_t num, std::uint32_t index) {
        engine->exclusive([&] { engine->impl().doorbell(kCtx, kind, num, index, 0, 0); });
    }

    Mr reg_mr(std::size_t len, std::uint8_t access) {
        Mr m;
        m.p = Arena::get().carve(len);
        m.len = len;
        m.access = access;
        namespace mi = hw::cmd_reg_mr_in;
        const auto addr = reinterpret_cast<std::uint64_t>(m.p);
        const fw::CmdResult res = cmd(hw::CmdOpcode::RegMr, Mbox(mi::kSize)
                                                              .set(mi::pdn, pd)
                                                              .set(mi::access, access)
                                                              .set(mi::domain_id, boot)
                                                              .set(mi::iova, addr)
                                                              .set(mi::length, len)
                                                              .set(mi::host_addr, addr));
        if (!res.ok()) error = "REG_MR";
        m.key = static_cast<std::uint32_t>(hw::get(res.out.data(), res.out_bytes, hw::cmd_reg_mr_out::lkey));
        return m;
    }

    bool modify(std::uint32_t qpn, std::uint32_t mask, hw::QpState to, const QpInfo* q = nullptr,
                std::uint8_t sgid_index = 0) {
        namespace qa = hw::qp_attr;
        const fw::Gid dgid = v4_gid(kPeerIp);
        Mbox m(qa::kSize);
        m.set(qa::qpn, qpn)
            .set(qa::attr_mask, mask)
            .set(qa::qp_state, static_cast<std::uint8_t>(to))
            .set(qa::path_mtu, 3)
            .set(qa::qkey, 0x11111111)
            .set(qa::rq_psn, q ? q->rq_psn : 0)
            .set(qa::sq_psn, q ? q->sq_psn : 0)
            .set(qa::dest_qp_num, q ? q->remote_qpn : 0)
            .set(qa::qp_access_flags, hw::access::kRemoteWrite | hw::access::kRemoteRead | hw::access::kRemoteAtomic)
            .set(qa::port_num, 1)
            .set(qa::pkey_index, 0)
            .set(qa::timeout, 14)
            .set(qa::retry_cnt, 7)
            .set(qa::rnr_retry, 7)
            .set(qa::min_rnr_timer, 12)
            .set(qa::max_rd_atomic, 4)
            .set(qa::max_dest_rd_atomic, 4)
            .bytes(qa::av_dgid, dgid.data(), dgid.size())
            .set(qa::av_sgid_index, sgid_index)
            .set(qa::av_hop_limit, 64)
            .set(qa::av_grh, 1);
        return cmd(hw::CmdOpcode::ModifyQp, m).ok();
    }

    // Walks a QP from RESET to its target state, as rdma_cm and perftest do.
    bool walk(QpInfo& q) {
        namespace am = hw::qp_attr_mask;
        using S = hw::QpState;
        const bool ud = q.type == hw::QpType::Ud, rc = q.type == hw::QpType::Rc;
        if (q.target == S::Reset) return true;
        if (!modify(q.qpn, am::kState | am::kPkeyIndex | am::kPort | (ud ? am::kQkey : am::kAccessFlags), S::Init))
            return false;
        if (q.target == S::Init) return true;
        const std::uint32_t rtr = ud ? am::kState
                                     : am::kState | am::kAv | am::kPathMtu | am::kDestQpn | am::kRqPsn |
                                           (rc ? am::kMaxDestRdAtomic | am::kMinRnrTimer : 0);
        // The source GID of 10.0.0.1 is one of the first entries of the table.
        bool ok = false;
        for (std::uint8_t sgid = 0; sgid < 8 && !ok; ++sgid) ok = modify(q.qpn, rtr, S::Rtr, &q, sgid);
        if (!ok) return false;
        if (q.target == S::Rtr) return true;
        const std::uint32_t rts = rc ? am::kState | am::kSqPsn | am::kTimeout | am::kRetryCnt | am::kRnrRetry |
                                           am::kMaxQpRdAtomic
                                     : am::kState | am::kSqPsn;
        if (!modify(q.qpn, rts, S::Rts, &q)) return false;
        if (q.target == S::Rts) return true;
        if (q.target == S::Sqd) return modify(q.qpn, am::kState, S::Sqd);
        return modify(q.qpn, am::kState, S::Err);
    }

    // A receive WQE of two SGEs: a slice of C, then one of A.
    void post_recv(QpInfo& q) {
        if (q.srq || q.destroyed || q.rq_pi - static_cast<std::uint32_t>(qpc_get(q.qpn, hw::qpc::rq_ci)) >= (1u << kLogRq))
            return;
        hw::RecvWqe w;
        w.wr_id = 0x5200000000ull | q.qpn << 8 | (q.rq_pi & 0xff);
        w.num_sge = 2;
        w.sge[0] = {reinterpret_cast<std::uint64_t>(c.p) + (q.rq_pi * 256u) % c.len, 256, c.key};
        w.sge[1] = {reinterpret_cast<std::uint64_t>(a.p) + 4096, 1024, a.key};
        const std::uint32_t stride = 1u << kLogRqStride;
        hw::encode_recv(w, q.rq + (q.rq_pi & ((1u << kLogRq) - 1)) * stride, stride);
        ++q.rq_pi;
        ring(hw::DbKind::Rq, q.qpn, q.rq_pi);
    }
    void post_srq_recv() {
        hw::RecvWqe w;
        w.wr_id = 0x5300000000ull | srq_pi;
        w.num_sge = 1;
        w.sge[0] = {reinterpret_cast<std::uint64_t>(c.p) + 2048 + (srq_pi * 128u) % 2048, 128, c.key};
        const std::uint32_t stride = 1u << kLogRqStride;
        hw::encode_recv(w, srq_ring + (srq_pi & ((1u << kLogRq) - 1)) * stride, stride);
        ++srq_pi;
        ring(hw::DbKind::Srq, srqn, srq_pi);
    }
    // Send WQEs whose requests stay outstanding (the peer never answers):
    // what ACKs, NAKs, READ responses and atomic ACKs from the wire meet.
    void post_send(QpInfo& q, hw::WrOpcode op, std::uint32_t len, std::uint64_t remote_va = 0x10000,
                   std::uint32_t rkey = 0x77) {
        hw::SendWqe w;
        w.opcode = op;
        w.signaled = true;
        w.wr_id = 0x5500000000ull | q.qpn << 8 | (q.sq_pi & 0xff);
        w.raddr.remote_va = remote_va;
        w.raddr.rkey = rkey;
        w.atomic.compare_add = 1;
        w.atomic.swap = 2;
        w.num_sge = 1;
        // READs and atomics land in A; SENDs and WRITEs gather from A.
        w.sge[0] = {reinterpret_cast<std::uint64_t>(a.p) + 512 * (q.sq_pi % 4), len, a.key};
        if (q.type == hw::QpType::Ud) {
            w.ud.dest_qpn = q.remote_qpn;
            w.ud.qkey = 0x11111111;
            const fw::Gid dgid = v4_gid(kPeerIp);
            std::memcpy(w.av.dgid.data(), dgid.data(), 16);
            w.av.grh = true;
            w.av.hop_limit = 64;
            std::memcpy(w.av.dmac.data(), kPeerMac.data(), 6);
        }
        const std::uint32_t stride = 1u << kLogSqStride;
        if (hw::encode_send(w, q.type, q.sq + (q.sq_pi & ((1u << kLogSq) - 1)) * stride, stride) !=
            hw::WqeFault::None) {
            error = "encode_send";
            return;
        }
        ++q.sq_pi;
        ring(hw::DbKind::Sq, q.qpn, q.sq_pi);
    }

    std::uint32_t create_qp(hw::QpType type, bool on_srq, std::uint8_t** sq, std::uint8_t** rq) {
        namespace qi = hw::cmd_create_qp_in;
        *sq = Arena::get().carve((1u << kLogSq) << kLogSqStride);
        *rq = on_srq ? nullptr : Arena::get().carve((1u << kLogRq) << kLogRqStride);
        DmaGuard& g = DmaGuard::get();
        g.allow(*sq, (1u << kLogSq) << kLogSqStride, true, false, "an SQ ring");
        if (*rq) g.allow(*rq, (1u << kLogRq) << kLogRqStride, true, false, "an RQ ring");
        const fw::CmdResult res =
            cmd(hw::CmdOpcode::CreateQp, Mbox(qi::kSize)
                                             .set(qi::qp_type, static_cast<std::uint8_t>(type))
                                             .set(qi::srq_en, on_srq)
                                             .set(qi::pdn, pd)
                                             .set(qi::send_cqn, cq)
                                             .set(qi::recv_cqn, on_srq ? tiny_cq : cq)
                                             .set(qi::srqn, on_srq ? srqn : 0)
                                             .set(qi::domain_id, boot)
                                             .set(qi::sq_base, reinterpret_cast<std::uint64_t>(*sq))
                                             .set(qi::rq_base, reinterpret_cast<std::uint64_t>(*rq))
                                             .set(qi::log_sq_size, kLogSq)
                                             .set(qi::log_sq_stride, kLogSqStride)
                                             .set(qi::log_rq_size, kLogRq)
                                             .set(qi::log_rq_stride, kLogRqStride)
                                             .set(qi::max_send_sge, 2)
                                             .set(qi::max_recv_sge, 2)
                                             .set(qi::max_inline, 16));
        if (!res.ok()) {
            error = "CREATE_QP: status " + std::to_string(int(res.status)) + " syndrome " + std::to_string(res.syndrome);
            return 0;
        }
        return handle_of(res);
    }

    // A QP of `type` walked to `target`, with receive WQEs posted. The
    // reference stays valid while the world has at most kMaxQps QPs.
    static constexpr std::size_t kMaxQps = 256;
    QpInfo& add_qp(hw::QpType type, hw::QpState target, bool on_srq = false) {
        if (qps.capacity() < kMaxQps) qps.reserve(kMaxQps);
        if (qps.size() == kMaxQps) std::abort();
        QpInfo q;
        q.type = type;
        q.target = target;
        q.srq = on_srq;
        q.qpn = create_qp(type, on_srq, &q.sq, &q.rq);
        q.remote_qpn = 0x100 + static_cast<std::uint32_t>(qps.size());
        q.rq_psn = 0x1000 * (static_cast<std::uint32_t>(qps.size()) + 1);
        q.sq_psn = 0x800000 + q.rq_psn;
        if (q.qpn && !walk(q)) error = "MODIFY_QP walking a QP to its state";
        qps.push_back(q);
        QpInfo& r = qps.back();
        if (r.qpn && target != hw::QpState::Reset)
            for (int i = 0; i < 8; ++i) post_recv(r);
        return r;
    }

    bool destroy_qp(QpInfo& q) {
        if (q.destroyed) return false;
        q.destroyed = true;
        return cmd(hw::CmdOpcode::DestroyQp, Mbox(hw::cmd_handle::kSize).set(hw::cmd_handle::handle, q.qpn)).ok();
    }

    // The device and its context, PD, CQs, SRQ and MRs; no QP yet. `max_qp`:
    // the device's limit, which QP numbers cycle over (0: rxe's).
    // `timing`: a model device's pipeline (its factory), or none (soft).
    bool open(std::uint32_t max_qp = 0, se::TimingFactory timing = {}) {
        Arena::get().reset();
        DmaGuard::get().clear();
        fw::FwConfig cfg;
        fw::DeviceLimits lim;
        lim.max_ctx = 4;
        lim.max_domain = 8;
        lim.max_mtt = 1024;
        cfg.cap = fw::default_cap_block(lim);
        if (max_qp) hw::set(cfg.cap.data(), cfg.cap.size(), hw::cap_block::max_qp, max_qp);
        store = std::make_unique<fw::MemTableStore>(fw::table_capacities(cfg.cap.data(), cfg.gid_tbl_len));
        se::EngineConfig ec;
        ec.device = "fz";
        ec.tables = store.get();
        ec.events = &sink;
        ec.bar = bar.data();
        ec.timing = std::move(timing);
        ec.ack_hold_ns = ack_hold_ns;
        // The port's MAC, which a model device's MAC RX filters on.
        hw::set_bytes(bar.data() + hw::kBar0PortBlock, hw::port_block::kSize, hw::port_block::mac, kLocalMac.data(), 6);
        auto p = std::make_unique<FakePort>();
        port = p.get();
        std::string err;
        engine = se::SoftEngine::create_driven(ec, std::move(p), err);
        if (!engine) {
            error = err;
            return false;
        }
        fw = std::make_unique<fw::Firmware>(cfg, *store, netdev, sink, engine.get());
        if (fw->open_context(kCtx, static_cast<std::uint32_t>(getpid()), &boot) != hw::CmdStatus::Ok) {
            error = "open_context";
            return false;
        }
        page = static_cast<std::uint8_t*>(std::aligned_alloc(4096, hw::kCtxPageSize));
        std::memset(page, 0, hw::kCtxPageSize);
        efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        engine->add_context(kCtx, page, efd);

        pd = handle_of(cmd(hw::CmdOpcode::AllocPd, Mbox(0)));
        namespace ci = hw::cmd_create_cq_in;
        cq_ring = Arena::get().carve(std::size_t{64} << kLogCq);
        std::uint8_t* tiny = tiny_ring = Arena::get().carve(64 * 2);
        DmaGuard::get().allow(cq_ring, std::size_t{64} << kLogCq, true, true, "the CQ ring");
        DmaGuard::get().allow(tiny, 64 * 2, true, true, "the small CQ's ring");
        cq = handle_of(cmd(hw::CmdOpcode::CreateCq, Mbox(ci::kSize)
                                                        .set(ci::log_size, kLogCq)
                                                        .set(ci::domain_id, boot)
                                                        .set(ci::base, reinterpret_cast<std::uint64_t>(cq_ring))));
        // Two entries: the SRQ's QPs overrun it (a CQ overrun, the QPs to ERR).
        tiny_cq = handle_of(cmd(hw::CmdOpcode::CreateCq, Mbox(ci::kSize)
                                                             .set(ci::log_size, 1)
                                                             .set(ci::domain_id, boot)
                                                             .set(ci::base, reinterpret_cast<std::uint64_t>(tiny))));
        namespace si = hw::cmd_create_srq_in;
        srq_ring = Arena::get().carve((1u << kLogRq) << kLogRqStride);
        DmaGuard::get().allow(srq_ring, (1u << kLogRq) << kLogRqStride, true, false, "the SRQ ring");
        const fw::CmdResult s = cmd(hw::CmdOpcode::CreateSrq, Mbox(si::kSize)
                                                                  .set(si::pdn, pd)
                                                                  .set(si::domain_id, boot)
                                                                  .set(si::base, reinterpret_cast<std::uint64_t>(srq_ring))
                                                                  .set(si::log_size, kLogRq)
                                                                  .set(si::log_stride, kLogRqStride)
                                                                  .set(si::max_sge, 1));
        if (!pd || !cq || !tiny_cq || !s.ok()) {
            error = "PD, CQ or SRQ";
            return false;
        }
        srqn = handle_of(s);
        namespace ac = hw::access;
        a = reg_mr(8192, ac::kLocalWrite | ac::kRemoteWrite | ac::kRemoteRead | ac::kRemoteAtomic);
        b = reg_mr(4096, ac::kRemoteRead);
        c = reg_mr(4096, ac::kLocalWrite);
        // E is an on-demand MR (hw-spec 5.6.5): its writes are not combined,
        // and the guard holds it to the same range and rights.
        e = reg_mr(4096, ac::kLocalWrite | ac::kRemoteWrite | ac::kOnDemand);
        r = reg_mr(4096, ac::kLocalWrite);
        d = reg_mr(4096, ac::kLocalWrite | ac::kRemoteWrite | ac::kRemoteRead);
        if (!cmd(hw::CmdOpcode::DeregMr, Mbox(hw::cmd_handle::kSize).set(hw::cmd_handle::handle, d.key)).ok())
            error = "DEREG_MR";
        DmaGuard& g = DmaGuard::get();
        g.allow(a.p, a.len, true, true, "MR A (every right)");
        g.allow(b.p, b.len, true, false, "MR B (REMOTE_READ only)");
        g.allow(c.p, c.len, false, true, "MR C (LOCAL_WRITE, the receive buffers)");
        g.allow(e.p, e.len, false, true, "MR E (LOCAL_WRITE and REMOTE_WRITE, on demand)");
        // R and D: no range at all.
        for (int i = 0; i < 8; ++i) post_srq_recv();
        return error.empty();
    }
};

}  // namespace simnic::fuzz
