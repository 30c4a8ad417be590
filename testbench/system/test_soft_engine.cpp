// The soft engine through a real daemon, without the verbs provider: this
// process opens a context, creates objects with firmware commands, writes
// WQEs in hw-spec 6's format into its own memory, rings doorbells (3.4) and
// polls CQEs (7). Two RC QPs on one device bound to lo talk over UDP 4791.
#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "simnic/control/client.h"
#include "simnic/host/context.h"
#include "simnic/hw/cqe.h"
#include "simnic/hw/layout.h"
#include "simnic/hw/wqe.h"
#include "simnic/roce/opcode.h"
#include "private_daemon.h"

using namespace simnic;

namespace {

// Page-aligned zeroed memory of this process: private, or (`shared`) a
// memfd sealed at its size, mapped shared, which a context can hand the
// device as an SHM domain's object (hw-spec 1.3).
struct Mem {
    size_t len;
    uint8_t* p;
    int fd = -1;
    explicit Mem(size_t n, bool shared = false) : len(n) {
        if (shared) {
            fd = memfd_create("se-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
            REQUIRE(fd >= 0);
            REQUIRE(ftruncate(fd, off_t(n)) == 0);
            REQUIRE(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0);
        }
        void* m = mmap(nullptr, n, PROT_READ | PROT_WRITE, shared ? MAP_SHARED : MAP_PRIVATE | MAP_ANONYMOUS, fd, 0);
        REQUIRE(m != MAP_FAILED);
        p = static_cast<uint8_t*>(m);
    }
    ~Mem() {
        munmap(p, len);
        if (fd >= 0) close(fd);
    }
    uint64_t addr(size_t off = 0) const { return reinterpret_cast<uint64_t>(p + off); }
};

template <size_t N>
uint32_t cmd(host::Context& c, hw::CmdOpcode op, const uint8_t (&in)[N], size_t out_cap = hw::cmd_handle::kSize) {
    host::CmdOutcome o;
    REQUIRE(c.command(op, in, N, out_cap, o) == 0);
    INFO("opcode " << int(op) << " syndrome " << o.syndrome);
    REQUIRE(o.status == hw::CmdStatus::Ok);
    return o.out.size() >= 4 ? uint32_t(hw::get(o.out.data(), o.out.size(), hw::cmd_handle::handle)) : 0;
}

constexpr uint8_t kLogSqStride = 8, kLogRqStride = 7, kLogQ = 6, kLogCq = 7;

struct Cq {
    Mem ring{(1u << kLogCq) * hw::cqe::kSize};
    uint32_t cqn = 0, ci = 0;
};

struct Qp {
    Mem sq{(1u << kLogQ) << kLogSqStride};
    Mem rq{(1u << kLogQ) << kLogRqStride};
    uint32_t qpn = 0, sq_pi = 0, rq_pi = 0;
    Cq cq;
};

enum class BufIn { Process, Shm };

struct Rig {
    test::PrivateDaemon d;
    std::unique_ptr<host::Context> ctx;
    uint32_t pdn = 0, lkey = 0, rkey = 0;
    Mem buf;
    uint32_t buf_domain = 0;                    // the MR's domain
    size_t mr_off = 4096, mr_len = 512 * 1024;  // the MR: [buf + 4096, buf + 4096 + 512K)
    Qp a, b;
    hw::QpType type;
    static constexpr uint32_t kQkey = 0x11111111;

    // `engine`: the device's (soft, or the cycle-level model).
    // `extra`: more link add words (" config FILE").
    // `in`: the MR's memory in the context's bootstrap (PROCESS) domain, or
    // in an SHM domain of its own, which the device reaches without system
    // calls.
    explicit Rig(hw::QpType t = hw::QpType::Rc, const char* engine = "soft", const std::string& extra = "",
                 BufIn in = BufIn::Process)
        : d{"setest", "se-test", engine, extra}, buf(1 << 20, in == BufIn::Shm), type(t) {
        int err = 0;
        ctx = host::open_context("setest", err);
        REQUIRE(ctx);
        buf_domain = ctx->boot_domain();
        if (in == BufIn::Shm) buf_domain = attach_shm(buf);
        uint8_t none[4] = {};
        pdn = cmd(*ctx, hw::CmdOpcode::AllocPd, none);
        uint8_t mr[hw::cmd_reg_mr_in::kSize] = {};
        hw::set(mr, hw::cmd_reg_mr_in::pdn, pdn);
        hw::set(mr, hw::cmd_reg_mr_in::access, hw::access::kAll);
        hw::set(mr, hw::cmd_reg_mr_in::domain_id, buf_domain);
        hw::set(mr, hw::cmd_reg_mr_in::iova, buf.addr(mr_off));
        hw::set(mr, hw::cmd_reg_mr_in::length, mr_len);
        hw::set(mr, hw::cmd_reg_mr_in::host_addr, buf.addr(mr_off));
        host::CmdOutcome o;
        REQUIRE(ctx->command(hw::CmdOpcode::RegMr, mr, sizeof mr, hw::cmd_reg_mr_out::kSize, o) == 0);
        REQUIRE(o.status == hw::CmdStatus::Ok);
        lkey = uint32_t(hw::get(o.out.data(), o.out.size(), hw::cmd_reg_mr_out::lkey));
        rkey = uint32_t(hw::get(o.out.data(), o.out.size(), hw::cmd_reg_mr_out::rkey));
        for (Qp* q : {&a, &b}) create(*q);
        connect(a, b);
        connect(b, a);
    }

    // Shares `m` (Mem's shared form) with the device and attaches all of
    // it as an SHM domain; its id.
    uint32_t attach_shm(const Mem& m) {
        uint16_t domain = 0;
        REQUIRE(host::attach_shm_domain(*ctx, m.fd, m.addr(), m.len, domain) == 0);
        return domain;
    }

    void create(Qp& q) {
        uint8_t cq[hw::cmd_create_cq_in::kSize] = {};
        hw::set(cq, hw::cmd_create_cq_in::log_size, kLogCq);
        hw::set(cq, hw::cmd_create_cq_in::domain_id, ctx->boot_domain());
        hw::set(cq, hw::cmd_create_cq_in::base, q.cq.ring.addr());
        q.cq.cqn = cmd(*ctx, hw::CmdOpcode::CreateCq, cq);
        uint8_t in[hw::cmd_create_qp_in::kSize] = {};
        namespace c = hw::cmd_create_qp_in;
        hw::set(in, c::qp_type, uint8_t(type));
        hw::set(in, c::pdn, pdn);
        hw::set(in, c::send_cqn, q.cq.cqn);
        hw::set(in, c::recv_cqn, q.cq.cqn);
        hw::set(in, c::domain_id, ctx->boot_domain());
        hw::set(in, c::sq_base, q.sq.addr());
        hw::set(in, c::rq_base, q.rq.addr());
        hw::set(in, c::log_sq_size, kLogQ);
        hw::set(in, c::log_sq_stride, kLogSqStride);
        hw::set(in, c::log_rq_size, kLogQ);
        hw::set(in, c::log_rq_stride, kLogRqStride);
        hw::set(in, c::max_send_sge, 4);
        hw::set(in, c::max_recv_sge, 4);
        hw::set(in, c::max_inline, 64);
        q.qpn = cmd(*ctx, hw::CmdOpcode::CreateQp, in);
    }

    void modify(uint32_t qpn, uint32_t mask, hw::QpState st, uint8_t* attr) {
        hw::set(attr, hw::qp_attr::kSize, hw::qp_attr::qpn, qpn);
        hw::set(attr, hw::qp_attr::kSize, hw::qp_attr::attr_mask, mask | hw::qp_attr_mask::kState);
        hw::set(attr, hw::qp_attr::kSize, hw::qp_attr::qp_state, uint8_t(st));
        host::CmdOutcome o;
        REQUIRE(ctx->command(hw::CmdOpcode::ModifyQp, attr, hw::qp_attr::kSize, 0, o) == 0);
        INFO("modify to " << int(st) << " syndrome " << o.syndrome);
        REQUIRE(o.status == hw::CmdStatus::Ok);
    }

    void connect(Qp& q, const Qp& peer) {
        namespace m = hw::qp_attr_mask;
        namespace f = hw::qp_attr;
        uint8_t at[f::kSize] = {};
        hw::set(at, f::port_num, 1);
        if (type == hw::QpType::Ud) {
            hw::set(at, f::qkey, kQkey);
            modify(q.qpn, m::kPkeyIndex | m::kPort | m::kQkey, hw::QpState::Init, at);
            std::memset(at, 0, sizeof at);
            modify(q.qpn, 0, hw::QpState::Rtr, at);
            hw::set(at, f::sq_psn, 0x100);
            modify(q.qpn, m::kSqPsn, hw::QpState::Rts, at);
            return;
        }
        hw::set(at, f::qp_access_flags, hw::access::kRemoteWrite | hw::access::kRemoteRead | hw::access::kRemoteAtomic);
        modify(q.qpn, m::kPkeyIndex | m::kPort | m::kAccessFlags, hw::QpState::Init, at);
        std::memset(at, 0, sizeof at);
        const uint8_t dgid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
        hw::set_bytes(at, f::kSize, f::av_dgid, dgid, 16);
        hw::set(at, f::av_sgid_index, 1);
        hw::set(at, f::av_hop_limit, 64);
        hw::set(at, f::av_grh, 1);
        hw::set(at, f::path_mtu, uint8_t(hw::Mtu::M1024));
        hw::set(at, f::dest_qp_num, peer.qpn);
        hw::set(at, f::rq_psn, 0x100);
        hw::set(at, f::max_dest_rd_atomic, 16);
        hw::set(at, f::min_rnr_timer, 1);
        modify(q.qpn, m::kAv | m::kPathMtu | m::kDestQpn | m::kRqPsn | m::kMaxDestRdAtomic | m::kMinRnrTimer,
               hw::QpState::Rtr, at);
        std::memset(at, 0, sizeof at);
        hw::set(at, f::sq_psn, 0x100);
        hw::set(at, f::timeout, 14);
        hw::set(at, f::retry_cnt, 7);
        hw::set(at, f::rnr_retry, 7);
        hw::set(at, f::max_rd_atomic, 16);
        modify(q.qpn, m::kSqPsn | m::kTimeout | m::kRetryCnt | m::kRnrRetry | m::kMaxQpRdAtomic, hw::QpState::Rts, at);
    }

    uint64_t va(size_t off) const { return buf.addr(mr_off + off); }
    uint8_t* ptr(size_t off) { return buf.p + mr_off + off; }

    void post_recv(Qp& q, uint64_t wr_id, uint64_t addr, uint32_t len) {
        hw::RecvWqe w;
        w.wr_id = wr_id;
        w.num_sge = 1;
        w.sge[0] = {addr, len, lkey};
        uint8_t* slot = q.rq.p + hw::ring_slot(q.rq_pi, kLogQ) * (size_t(1) << kLogRqStride);
        REQUIRE(hw::encode_recv(w, slot, 1u << kLogRqStride) == hw::WqeFault::None);
        ++q.rq_pi;
        ctx->ring_doorbell(hw::DbKind::Rq, q.qpn, q.rq_pi);
    }

    struct Wr {
        hw::WrOpcode op = hw::WrOpcode::Send;
        uint64_t wr_id = 0;
        uint64_t laddr = 0;
        uint32_t len = 0;
        uint64_t raddr = 0;
        uint32_t rkey = 0;
        uint64_t cmp_add = 0, swap = 0;
        uint32_t imm = 0;
        uint32_t dest_qpn = 0;  // UD
        bool signaled = true;
        const uint8_t* dgid = nullptr;  // UD: 16 bytes; null: ::ffff:127.0.0.1
    };
    void post_send(Qp& q, const Wr& r) {
        hw::SendWqe w;
        w.opcode = r.op;
        w.signaled = r.signaled;
        w.imm_inv = r.imm;
        w.wr_id = r.wr_id;
        w.raddr = {r.raddr, r.rkey};
        w.atomic = {r.cmp_add, r.swap};
        if (type == hw::QpType::Ud) {  // UD_SEG with ah_num 0 and an inline AV to 127.0.0.1
            w.ud = {0, r.dest_qpn, kQkey};
            w.av.dgid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
            if (r.dgid) std::memcpy(w.av.dgid.data(), r.dgid, 16);
            w.av.sgid_index = 1;
            w.av.hop_limit = 64;
            w.av.grh = true;
        }
        w.num_sge = 1;
        w.sge[0] = {r.laddr, hw::is_atomic(r.op) ? 8u : r.len, lkey};
        uint8_t* slot = q.sq.p + hw::ring_slot(q.sq_pi, kLogQ) * (size_t(1) << kLogSqStride);
        REQUIRE(hw::encode_send(w, type, slot, 1u << kLogSqStride) == hw::WqeFault::None);
        ++q.sq_pi;
        ctx->ring_doorbell(hw::DbKind::Sq, q.qpn, q.sq_pi);
    }

    struct Cqe {
        uint64_t wr_id;
        uint32_t status, opcode, byte_len, imm, qpn, is_send, wqe_index, flags;
    };
    // The next CQE of `cq`, if one is there.
    bool try_poll(Cq& cq, Cqe& out) {
        const uint8_t* e = hw::cqe_peek(cq.ring.p, cq.ci, kLogCq);
        if (!e) return false;
        out = poll(cq);
        return true;
    }
    Cqe poll(Cq& cq) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        for (;;) {
            if (const uint8_t* e = hw::cqe_peek(cq.ring.p, cq.ci, kLogCq)) {
                const hw::Cqe v = hw::decode_cqe(e);
                Cqe r{};
                r.wr_id = v.wr_id;
                r.status = uint32_t(v.status);
                r.opcode = uint32_t(v.opcode);
                r.byte_len = v.byte_len;
                r.imm = v.imm_inv;
                r.qpn = v.qp_num;
                r.is_send = v.is_send ? 1 : 0;
                r.wqe_index = v.wqe_index;
                r.flags = v.wc_flags;
                ++cq.ci;
                ctx->ring_doorbell(hw::DbKind::Cq, cq.cqn, cq.ci, 0);
                return r;
            }
            REQUIRE(std::chrono::steady_clock::now() < deadline);
            std::this_thread::yield();
        }
    }
};

uint64_t device_stat(const Rig& rig, const char* name) {
    const control::Json r = rig.d.request(control::Json{{"op", "stats"}, {"device", rig.d.device()}});
    REQUIRE(r.contains("stats"));
    return r["stats"].value(name, uint64_t{0});
}

void fill(uint8_t* p, size_t n, uint8_t seed) {
    for (size_t i = 0; i < n; ++i) p[i] = uint8_t(seed + i * 7 + (i >> 8));
}

}  // namespace

TEST_CASE("two RC QPs exchange SEND, WRITE, READ and atomics over lo", "[soft_engine]") {
    // hw-spec 1.3: an MR names its domain, a process or an SHM object; the
    // data path moves the same bytes either way.
    const BufIn in = GENERATE(BufIn::Process, BufIn::Shm);
    INFO((in == BufIn::Shm ? "MR in an SHM domain" : "MR in the process's domain"));
    Rig r(hw::QpType::Rc, "soft", "", in);
    // SEND of 3000 bytes: three packets at MTU 1024, with immediate.
    fill(r.ptr(0), 3000, 1);
    r.post_recv(r.b, 77, r.va(100000), 4000);
    r.post_send(r.a, {hw::WrOpcode::SendWithImm, 11, r.va(0), 3000, 0, 0, 0, 0, 0x12345678});
    Rig::Cqe s = r.poll(r.a.cq);
    CHECK(s.status == 0);
    CHECK(s.wr_id == 11);
    CHECK(s.is_send == 1);
    CHECK(s.wqe_index == 0);
    Rig::Cqe v = r.poll(r.b.cq);
    CHECK(v.status == 0);
    CHECK(v.wr_id == 77);
    CHECK(v.byte_len == 3000);
    CHECK(v.opcode == uint32_t(hw::WcOpcode::Recv));
    CHECK(v.imm == 0x12345678);
    CHECK(v.qpn == r.b.qpn);
    CHECK(std::memcmp(r.ptr(0), r.ptr(100000), 3000) == 0);

    // RDMA WRITE of 5000 bytes into B's part of the MR.
    fill(r.ptr(10000), 5000, 3);
    r.post_send(r.a, {hw::WrOpcode::RdmaWrite, 12, r.va(10000), 5000, r.va(200000), r.rkey});
    s = r.poll(r.a.cq);
    CHECK(s.status == 0);
    CHECK(s.opcode == uint32_t(hw::WcOpcode::RdmaWrite));
    CHECK(std::memcmp(r.ptr(10000), r.ptr(200000), 5000) == 0);

    // RDMA READ of 4000 bytes.
    fill(r.ptr(300000), 4000, 9);
    r.post_send(r.a, {hw::WrOpcode::RdmaRead, 13, r.va(20000), 4000, r.va(300000), r.rkey});
    s = r.poll(r.a.cq);
    CHECK(s.status == 0);
    CHECK(s.opcode == uint32_t(hw::WcOpcode::RdmaRead));
    CHECK(std::memcmp(r.ptr(20000), r.ptr(300000), 4000) == 0);

    // Atomics: fetch-add and compare-swap return the original value.
    uint64_t target = 1000;
    std::memcpy(r.ptr(400000), &target, 8);
    r.post_send(r.a, {hw::WrOpcode::AtomicFetchAndAdd, 14, r.va(30000), 8, r.va(400000), r.rkey, 5});
    s = r.poll(r.a.cq);
    CHECK(s.status == 0);
    uint64_t got = 0;
    std::memcpy(&got, r.ptr(30000), 8);
    CHECK(got == 1000);
    std::memcpy(&got, r.ptr(400000), 8);
    CHECK(got == 1005);
    r.post_send(r.a, {hw::WrOpcode::AtomicCmpAndSwp, 15, r.va(30008), 8, r.va(400000), r.rkey, 1005, 42});
    s = r.poll(r.a.cq);
    CHECK(s.status == 0);
    std::memcpy(&got, r.ptr(30008), 8);
    CHECK(got == 1005);
    std::memcpy(&got, r.ptr(400000), 8);
    CHECK(got == 42);

    // B sends back to A, many small messages in a row.
    for (int i = 0; i < 20; ++i) r.post_recv(r.a, 1000 + i, r.va(50000 + 64 * i), 64);
    for (int i = 0; i < 20; ++i) {
        fill(r.ptr(60000 + 64 * i), 64, uint8_t(i));
        r.post_send(r.b, {hw::WrOpcode::Send, uint64_t(2000 + i), r.va(60000 + 64 * i), 64});
    }
    for (int i = 0; i < 20; ++i) {
        Rig::Cqe c1 = r.poll(r.b.cq);
        CHECK(c1.status == 0);
        CHECK(c1.wr_id == uint64_t(2000 + i));
    }
    for (int i = 0; i < 20; ++i) {
        Rig::Cqe c1 = r.poll(r.a.cq);
        CHECK(c1.status == 0);
        CHECK(c1.wr_id == uint64_t(1000 + i));
        CHECK(c1.wqe_index == uint32_t(i));
    }
    CHECK(std::memcmp(r.ptr(50000), r.ptr(60000), 64 * 20) == 0);
}

// The way UCX sends (its bounce buffers): consecutive buffers of one MR, most
// SENDs unsignaled, each buffer filled just before its WQE is posted while
// the earlier ones are still being sent. The engine may fetch a posted WQE's
// data ahead of time, but never the bytes past its SGE: those belong to a
// buffer the application may still be filling. Fetching to the end of the MR
// sent stale bytes (Open MPI over UCX saw them at the 64 KiB ping-pong).
TEST_CASE("a SEND carries its buffer as it was when posted, not as the engine read it ahead", "[soft_engine]") {
    Rig r;
    constexpr uint32_t kMsg = 8192, kSlots = 16, kRecvBase = 256 * 1024, kRecvSlots = 24;
    constexpr int kMessages = 20000;
    for (uint32_t i = 0; i < kRecvSlots; ++i) r.post_recv(r.b, i, r.va(kRecvBase + i * kMsg), kMsg);
    int posted = 0, sent_done = 0, received = 0, bad = 0;
    std::vector<uint8_t> want(kMsg);
    while (received < kMessages) {
        // A buffer is the application's again once a later signaled SEND completed.
        while (posted < kMessages && posted - sent_done < int(kSlots)) {
            const uint32_t slot = uint32_t(posted) % kSlots;
            fill(r.ptr(slot * kMsg), kMsg, uint8_t(posted * 37 + 1));
            const bool signaled = posted % 4 == 3 || posted == kMessages - 1;
            r.post_send(r.a, {hw::WrOpcode::Send, uint64_t(posted), r.va(slot * kMsg), kMsg, 0, 0, 0, 0, 0, 0,
                              signaled});
            ++posted;
        }
        Rig::Cqe c{};
        while (r.try_poll(r.a.cq, c)) {
            REQUIRE(c.status == 0);
            sent_done = int(c.wr_id) + 1;
        }
        while (r.try_poll(r.b.cq, c)) {
            REQUIRE(c.status == 0);
            REQUIRE(c.byte_len == kMsg);
            fill(want.data(), kMsg, uint8_t(received * 37 + 1));
            if (std::memcmp(r.ptr(kRecvBase + uint32_t(c.wr_id) * kMsg), want.data(), kMsg) != 0) ++bad;
            ++received;
            r.post_recv(r.b, c.wr_id, r.va(kRecvBase + uint32_t(c.wr_id) * kMsg), kMsg);
        }
    }
    INFO(bad << " of " << kMessages << " messages arrived with bytes other than those posted");
    CHECK(bad == 0);
}

// The other edge of the read-ahead: what the engine fetched for one WQE
// serves that WQE only. Here every message goes from the same buffer, which
// the application refills once the previous message has completed; the
// copy of the previous message's bytes, still held by the engine, must not
// be sent for the next (it was, when the copy was kept across completions
// and named only by key and address).
TEST_CASE("a buffer refilled after its completion is sent as refilled, not from the copy read ahead for the last WQE",
          "[soft_engine]") {
    Rig r;
    constexpr uint32_t kMsg = 16384, kDst = 128 * 1024;
    for (int i = 0; i < 200; ++i) {
        const auto pattern = uint8_t(i * 53 + 7);
        fill(r.ptr(0), kMsg, pattern);
        const bool send = i % 2 == 1;
        if (send) {
            r.post_recv(r.b, uint64_t(i), r.va(kDst), kMsg);
            r.post_send(r.a, {hw::WrOpcode::Send, uint64_t(i), r.va(0), kMsg});
        } else {
            r.post_send(r.a, {hw::WrOpcode::RdmaWrite, uint64_t(i), r.va(0), kMsg, r.va(kDst), r.rkey});
        }
        Rig::Cqe c = r.poll(r.a.cq);
        REQUIRE(c.status == 0);
        REQUIRE(c.wr_id == uint64_t(i));
        if (send) REQUIRE(r.poll(r.b.cq).status == 0);
        std::vector<uint8_t> want(kMsg);
        fill(want.data(), kMsg, pattern);
        INFO("message " << i << (send ? " (SEND)" : " (WRITE)"));
        REQUIRE(std::memcmp(r.ptr(kDst), want.data(), kMsg) == 0);
    }
}

// The responder fetches a READ's data ahead of its response packets (one
// process_vm_readv for up to 64 KiB), for that serving of that READ only.
// The source is refilled after each READ completes, and the next READ
// (another length, starting inside the last one's range, so that the old
// copy covers its bytes) must return the refilled bytes, not the copy.
// Between READs the device itself also WRITEs into the source: its write
// must be what the next READ sees.
TEST_CASE("a READ returns its source as it is when served, not a copy fetched ahead for an earlier READ",
          "[soft_engine]") {
    Rig r;
    constexpr uint32_t kSrc = 64 * 1024, kDst = 160 * 1024, kPatch = 256 * 1024;
    for (int i = 0; i < 120; ++i) {
        const auto pattern = uint8_t(i * 29 + 3);
        const uint32_t off = uint32_t(i % 5) * 1024;        // inside the last READ's range
        const uint32_t len = 4096 + uint32_t(i % 7) * 2048;  // 4 to 16 KiB: 4 to 16 packets at MTU 1024
        fill(r.ptr(kSrc), 32 * 1024, pattern);
        std::vector<uint8_t> want(r.ptr(kSrc), r.ptr(kSrc) + 32 * 1024);
        if (i % 3 == 2) {
            // The device writes 2 KiB into the middle of the source first.
            fill(r.ptr(kPatch), 2048, uint8_t(pattern ^ 0xff));
            r.post_send(r.a, {hw::WrOpcode::RdmaWrite, uint64_t(10000 + i), r.va(kPatch), 2048,
                              r.va(kSrc + off + 1024), r.rkey});
            REQUIRE(r.poll(r.a.cq).status == 0);
            std::memcpy(want.data() + off + 1024, r.ptr(kPatch), 2048);
        }
        std::memset(r.ptr(kDst), 0, 32 * 1024);
        r.post_send(r.a, {hw::WrOpcode::RdmaRead, uint64_t(i), r.va(kDst), len, r.va(kSrc + off), r.rkey});
        const Rig::Cqe c = r.poll(r.a.cq);
        REQUIRE(c.status == 0);
        REQUIRE(c.wr_id == uint64_t(i));
        INFO("READ " << i << ": " << len << " bytes at +" << off);
        REQUIRE(std::memcmp(r.ptr(kDst), want.data() + off, len) == 0);
    }
}

// Several QPs sending at once. A 48-packet WRITE at MTU 1024 does not fit
// rxe's window of 128 unacknowledged PSNs a third time: each QP's third
// message stops after 32 packets while the other QPs send, and the rest
// goes when its ACK comes. The read-ahead copy of that message must still
// be there then (with one copy for the device it was another QP's, and the
// rest of the message was read again), and the responder's writes, from
// four QPs into one process, combine without losing or misplacing a byte.
// The loopback shortcut loses no frame, so the counts are exact. A model
// device moves the bytes the same way (its pipeline charges each packet's
// DMA in simulated time, whichever way they crossed).
TEST_CASE("four QPs sending at once read each message from memory once, and every byte lands", "[soft_engine][dma]") {
    const char* engine = GENERATE("soft", "model");
    INFO(engine << " device");
    Rig r(hw::QpType::Rc, engine, " loopback on");
    constexpr int kQps = 4, kPerQp = 6;
    constexpr uint32_t kMsg = 48 * 1024, kPackets = kMsg / 1024, kDst = 256 * 1024;
    Qp snd[kQps], rcv[kQps];
    for (int i = 0; i < kQps; ++i) {
        r.create(snd[i]);
        r.create(rcv[i]);
        r.connect(snd[i], rcv[i]);
        r.connect(rcv[i], snd[i]);
        fill(r.ptr(uint32_t(i) * kMsg), kMsg, uint8_t(i * 71 + 5));
    }
    for (int m = 0; m < kPerQp; ++m)
        for (int i = 0; i < kQps; ++i)
            r.post_send(snd[i], {hw::WrOpcode::RdmaWrite, uint64_t(m), r.va(uint32_t(i) * kMsg), kMsg,
                                 r.va(kDst + uint32_t(i) * kMsg), r.rkey});
    for (int i = 0; i < kQps; ++i)
        for (int m = 0; m < kPerQp; ++m) {
            const Rig::Cqe c = r.poll(snd[i].cq);
            REQUIRE(c.status == 0);
            REQUIRE(c.wr_id == uint64_t(m));
        }
    for (int i = 0; i < kQps; ++i) {
        INFO("QP " << i << "'s destination");
        CHECK(std::memcmp(r.ptr(kDst + uint32_t(i) * kMsg), r.ptr(uint32_t(i) * kMsg), kMsg) == 0);
    }
    const uint64_t messages = kQps * kPerQp;
    CHECK(device_stat(r, "retransmits") == 0);
    CHECK(device_stat(r, "host_reads") == messages);
    CHECK(device_stat(r, "read_ahead_hits") == messages * (kPackets - 1));
    CHECK(device_stat(r, "writes_combined") == messages * kPackets);
    const uint64_t writes = device_stat(r, "host_writes");
    INFO(writes << " process_vm_writev for " << messages * kPackets << " packets");
    CHECK(writes < messages * kPackets / 4);
}

TEST_CASE("a bad rkey gives a remote access error and touches nothing", "[soft_engine]") {
    // In an SHM domain the canaries lie inside the object the device maps:
    // only the MR's check keeps it off them.
    const BufIn in = GENERATE(BufIn::Process, BufIn::Shm);
    INFO((in == BufIn::Shm ? "MR in an SHM domain" : "MR in the process's domain"));
    Rig r(hw::QpType::Rc, "soft", "", in);
    // Canaries just outside the MR on both sides.
    std::memset(r.buf.p, 0xA5, r.mr_off);
    std::memset(r.buf.p + r.mr_off + r.mr_len, 0x5A, 4096);
    fill(r.ptr(0), 8192, 5);
    SECTION("wrong key byte") {
        r.post_send(r.a, {hw::WrOpcode::RdmaWrite, 21, r.va(0), 4096, r.va(8192), r.rkey ^ 0x1});
    }
    SECTION("beyond the end of the MR") {
        r.post_send(r.a, {hw::WrOpcode::RdmaWrite, 21, r.va(0), 8192, r.va(r.mr_len - 4096), r.rkey});
    }
    SECTION("before the start of the MR") {
        r.post_send(r.a, {hw::WrOpcode::RdmaWrite, 21, r.va(0), 4096, r.va(0) - 2048, r.rkey});
    }
    Rig::Cqe s = r.poll(r.a.cq);
    CHECK(s.wr_id == 21);
    CHECK(s.status == uint32_t(hw::WcStatus::RemAccessErr));
    for (size_t i = 0; i < r.mr_off; ++i) REQUIRE(r.buf.p[i] == 0xA5);
    for (size_t i = 0; i < 4096; ++i) REQUIRE(r.buf.p[r.mr_off + r.mr_len + i] == 0x5A);
    for (size_t i = 8192; i < 8192 + 4096; ++i) REQUIRE(r.ptr(0)[i] == 0);
}

// FLUSH (hw-spec 6.3) through the device's tables: the rights of each
// placement type it asks for come from QPC.qp_access_flags and
// MPT_ENTRY.access, put there by MODIFY_QP, REG_MR and REREG_MR.
namespace {

// REG_MR of the Rig's MR range again, with `access`: its rkey.
uint32_t reg_mr(Rig& r, uint32_t access) {
    uint8_t in[hw::cmd_reg_mr_in::kSize] = {};
    namespace m = hw::cmd_reg_mr_in;
    hw::set(in, m::pdn, r.pdn);
    hw::set(in, m::access, access);
    hw::set(in, m::domain_id, r.ctx->boot_domain());
    hw::set(in, m::iova, r.va(0));
    hw::set(in, m::length, 4096);
    hw::set(in, m::host_addr, r.va(0));
    host::CmdOutcome o;
    REQUIRE(r.ctx->command(hw::CmdOpcode::RegMr, in, sizeof in, hw::cmd_reg_mr_out::kSize, o) == 0);
    INFO("REG_MR syndrome " << o.syndrome);
    REQUIRE(o.status == hw::CmdStatus::Ok);
    return uint32_t(hw::get(o.out.data(), o.out.size(), hw::cmd_reg_mr_out::rkey));
}

// REREG_MR of the MR `key` with CHANGE_ACCESS to `access`.
void rereg_access(Rig& r, uint32_t key, uint32_t access) {
    uint8_t re[hw::cmd_rereg_mr_in::kSize] = {};
    hw::set(re, hw::cmd_rereg_mr_in::lkey, key);
    hw::set(re, hw::cmd_rereg_mr_in::flags, hw::rereg_flags::kChangeAccess);
    hw::set(re, hw::cmd_rereg_mr_in::access, access);
    cmd(*r.ctx, hw::CmdOpcode::ReregMr, re, hw::cmd_reg_mr_out::kSize);
}

// B's QP, in RTS, grants `access` from now on (RTS -> RTS with ACCESS_FLAGS).
void grant(Rig& r, uint32_t access) {
    uint8_t at[hw::qp_attr::kSize] = {};
    hw::set(at, hw::qp_attr::qp_access_flags, access);
    r.modify(r.b.qpn, hw::qp_attr_mask::kAccessFlags, hw::QpState::Rts, at);
}

// A FLUSH WQE from A to B: no data, FETH in imm_inv, the range in RADDR_SEG.
void post_flush(Rig& r, uint64_t wr_id, uint32_t rkey, uint64_t va, uint32_t len, uint8_t placement,
                uint8_t selectivity = roce::feth::kSelectRange) {
    hw::SendWqe w;
    w.opcode = hw::WrOpcode::Flush;
    w.signaled = true;
    w.wr_id = wr_id;
    w.imm_inv = hw::wqe_flush_feth(placement, selectivity);
    w.raddr = {va, rkey, len};
    w.num_sge = 0;
    uint8_t* slot = r.a.sq.p + hw::ring_slot(r.a.sq_pi, kLogQ) * (size_t(1) << kLogSqStride);
    REQUIRE(hw::encode_send(w, r.type, slot, 1u << kLogSqStride) == hw::WqeFault::None);
    ++r.a.sq_pi;
    r.ctx->ring_doorbell(hw::DbKind::Sq, r.a.qpn, r.a.sq_pi);
}

}  // namespace

TEST_CASE("FLUSH needs the right of each placement type in the QP and the MR", "[soft_engine][flush]") {
    namespace acc = hw::access;
    constexpr uint8_t kGlobal = roce::feth::kPlacementGlobal, kPersistent = roce::feth::kPlacementPersistent;
    constexpr uint32_t kQpRights = acc::kRemoteWrite | acc::kRemoteRead | acc::kRemoteAtomic;
    // Both engines: the rights are the device tables', the checks the
    // shared transport core's.
    const char* engine = GENERATE("soft", "model");
    INFO("engine " << engine);
    Rig r(hw::QpType::Rc, engine);
    auto expect = [&](uint64_t wr_id, hw::WcStatus st) {
        const Rig::Cqe c = r.poll(r.a.cq);
        CHECK(c.wr_id == wr_id);
        CHECK(c.status == uint32_t(st));
        CHECK(c.opcode == uint32_t(hw::WcOpcode::Flush));
    };
    SECTION("QP and MR with FLUSH_GLOBAL: a range and the whole MR are acknowledged") {
        grant(r, kQpRights | acc::kFlushGlobal);
        const uint32_t rkey = reg_mr(r, acc::kLocalWrite | acc::kFlushGlobal);
        post_flush(r, 1, rkey, r.va(64), 128, kGlobal);
        expect(1, hw::WcStatus::Success);
        // The whole MR: address and length mean nothing, only key and rights.
        post_flush(r, 2, rkey, r.va(0) + (1u << 20), 1u << 20, kGlobal, roce::feth::kSelectMr);
        expect(2, hw::WcStatus::Success);
        CHECK(device_stat(r, "remote_access_err") == 0);  // nothing was refused
        // A range FLUSH past the MR's end is refused.
        post_flush(r, 3, rkey, r.va(4096 - 64), 128, kGlobal);
        expect(3, hw::WcStatus::RemAccessErr);
        CHECK(device_stat(r, "remote_access_err") == 1);
    }
    SECTION("QP without FLUSH_GLOBAL: NAK invalid request") {
        const uint32_t rkey = reg_mr(r, acc::kLocalWrite | acc::kFlushGlobal);
        post_flush(r, 4, rkey, r.va(0), 64, kGlobal);
        expect(4, hw::WcStatus::RemInvReqErr);
    }
    SECTION("QP without FLUSH_PERSISTENT, MR with it: NAK invalid request") {
        grant(r, kQpRights | acc::kFlushGlobal);
        const uint32_t rkey = reg_mr(r, acc::kLocalWrite | acc::kFlushGlobal);
        rereg_access(r, rkey, acc::kLocalWrite | acc::kFlushGlobal | acc::kFlushPersistent);
        post_flush(r, 5, rkey, r.va(0), 64, kGlobal | kPersistent);
        expect(5, hw::WcStatus::RemInvReqErr);
    }
    SECTION("MR without FLUSH_PERSISTENT: NAK remote access error, also for the whole MR") {
        grant(r, kQpRights | acc::kFlushGlobal | acc::kFlushPersistent);
        const uint32_t rkey = reg_mr(r, acc::kLocalWrite | acc::kFlushGlobal);
        post_flush(r, 6, rkey, r.va(0), 0, kPersistent, roce::feth::kSelectMr);
        expect(6, hw::WcStatus::RemAccessErr);
    }
    SECTION("MR granted FLUSH_PERSISTENT by REREG_MR: acknowledged") {
        grant(r, kQpRights | acc::kFlushGlobal | acc::kFlushPersistent);
        const uint32_t rkey = reg_mr(r, acc::kLocalWrite | acc::kFlushGlobal);
        rereg_access(r, rkey, acc::kLocalWrite | acc::kFlushGlobal | acc::kFlushPersistent);
        post_flush(r, 7, rkey, r.va(0), 64, kGlobal | kPersistent);
        expect(7, hw::WcStatus::Success);
    }
}

// ibv_ud_pingpong sends 2048 bytes by default. A UD QP has no path MTU (no
// PATH_MTU in its modify_qp); its messages are bounded by the port's active MTU
// (4096 on lo), as rxe's get_mtu() does, not by the QPC's initial 256.
TEST_CASE("a UD SEND up to the port's active MTU lands behind the 40-byte GRH", "[soft_engine]") {
    Rig r(hw::QpType::Ud);
    constexpr uint32_t kLen = 2048, kGrh = 40;
    fill(r.ptr(0), kLen, 7);
    std::memset(r.ptr(100000), 0xEE, kLen + kGrh + 64);
    r.post_recv(r.b, 5, r.va(100000), kLen + kGrh);
    Rig::Wr w;
    w.wr_id = 6;
    w.laddr = r.va(0);
    w.len = kLen;
    w.dest_qpn = r.b.qpn;
    r.post_send(r.a, w);
    Rig::Cqe s = r.poll(r.a.cq);
    CHECK(s.status == 0);
    CHECK(s.wr_id == 6);
    Rig::Cqe v = r.poll(r.b.cq);
    CHECK(v.status == 0);
    CHECK(v.wr_id == 5);
    CHECK(v.byte_len == kLen + kGrh);
    CHECK(std::memcmp(r.ptr(0), r.ptr(100000 + kGrh), kLen) == 0);
    CHECK(r.ptr(100000)[kLen + kGrh] == 0xEE);

    // Above the active MTU (lo: 4096) the send fails with LOC_LEN_ERR (hw-spec 6.2).
    // The QP goes to ERR and its posted receives are flushed.
    for (int i = 0; i < 3; ++i) r.post_recv(r.a, 90 + i, r.va(200000 + 8192 * i), kLen + kGrh);
    w.wr_id = 8;
    w.len = 4097;
    r.post_send(r.a, w);
    s = r.poll(r.a.cq);
    CHECK(s.wr_id == 8);
    CHECK(s.status == uint32_t(hw::WcStatus::LocLenErr));
    for (int i = 0; i < 3; ++i) {
        const Rig::Cqe f = r.poll(r.a.cq);
        CHECK(f.wr_id == uint64_t(90 + i));
        CHECK(f.status == uint32_t(hw::WcStatus::WrFlushErr));
    }
    CHECK(device_stat(r, "dma_faults") == 0);
}

// UD multicast (hw-spec 5.6.12, 9.10): a SEND to DestQP 0xFFFFFF at the IPv4
// group 239.1.2.3 reaches, through the host's IP multicast on lo, every QP
// attached to the group's MGID, one copy each, byte for byte behind the GRH
// (whose destination is the group); a QP that is not attached, or no longer
// is, gets nothing; the last detach leaves the group.
TEST_CASE("a multicast UD SEND reaches every attached QP once, and only those", "[soft_engine][mcast]") {
    Rig r(hw::QpType::Ud);
    Qp c;
    r.create(c);
    r.connect(c, c);  // UD: INIT, RTR, RTS
    const uint8_t mgid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 1, 2, 3};
    auto mcast = [&](hw::CmdOpcode op, uint32_t qpn) {
        uint8_t in[hw::cmd_mcast_in::kSize] = {};
        hw::set(in, hw::cmd_mcast_in::qpn, qpn);
        hw::set_bytes(in, sizeof in, hw::cmd_mcast_in::mgid, mgid, 16);
        host::CmdOutcome o;
        REQUIRE(r.ctx->command(op, in, sizeof in, 0, o) == 0);
        return o.status;
    };
    REQUIRE(mcast(hw::CmdOpcode::AttachMcast, r.b.qpn) == hw::CmdStatus::Ok);
    REQUIRE(mcast(hw::CmdOpcode::AttachMcast, c.qpn) == hw::CmdStatus::Ok);
    constexpr uint32_t kLen = 1000, kGrh = 40, kSlot = 8192;
    fill(r.ptr(0), kLen, 11);
    // Two receives on each QP: a second copy would land in the second one.
    for (uint32_t i = 0; i < 2; ++i) {
        std::memset(r.ptr(100000 + i * kSlot), 0xEE, kSlot);
        std::memset(r.ptr(200000 + i * kSlot), 0xEE, kSlot);
        std::memset(r.ptr(300000 + i * kSlot), 0xEE, kSlot);
        r.post_recv(r.b, 10 + i, r.va(100000 + i * kSlot), kLen + kGrh);
        r.post_recv(c, 20 + i, r.va(200000 + i * kSlot), kLen + kGrh);
        r.post_recv(r.a, 30 + i, r.va(300000 + i * kSlot), kLen + kGrh);
    }
    Rig::Wr w;
    w.wr_id = 1;
    w.laddr = r.va(0);
    w.len = kLen;
    w.dest_qpn = hw::kMulticastQpn;
    w.dgid = mgid;
    r.post_send(r.a, w);
    CHECK(r.poll(r.a.cq).status == 0);
    for (auto [qp, base, id] : {std::tuple<Qp*, size_t, uint64_t>{&r.b, 100000, 10}, {&c, 200000, 20}}) {
        const Rig::Cqe v = r.poll(qp->cq);
        CHECK(v.status == 0);
        CHECK(v.wr_id == id);
        CHECK(v.byte_len == kLen + kGrh);
        CHECK(v.qpn == qp->qpn);
        CHECK(std::memcmp(r.ptr(0), r.ptr(base + kGrh), kLen) == 0);
        // The GRH (an IPv4 header in its last 20 bytes) names the group as
        // the destination.
        CHECK(std::memcmp(r.ptr(base + 20 + 16), mgid + 12, 4) == 0);
        CHECK(r.ptr(base + kSlot)[0] == 0xEE);  // no second copy
    }
    // The sender is not attached: its own receives stay posted.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    Rig::Cqe none;
    CHECK_FALSE(r.try_poll(r.a.cq, none));
    CHECK_FALSE(r.try_poll(r.b.cq, none));
    CHECK_FALSE(r.try_poll(c.cq, none));

    // c detached: the next SEND reaches b alone.
    REQUIRE(mcast(hw::CmdOpcode::DetachMcast, c.qpn) == hw::CmdStatus::Ok);
    CHECK(mcast(hw::CmdOpcode::DetachMcast, c.qpn) == hw::CmdStatus::BadParam);
    w.wr_id = 2;
    r.post_send(r.a, w);
    CHECK(r.poll(r.a.cq).status == 0);
    const Rig::Cqe v = r.poll(r.b.cq);
    CHECK(v.wr_id == 11);
    CHECK(std::memcmp(r.ptr(0), r.ptr(100000 + kSlot + kGrh), kLen) == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK_FALSE(r.try_poll(c.cq, none));
    CHECK(r.ptr(200000 + kSlot)[0] == 0xEE);

    // The last detach: the group is gone, a SEND to it reaches nobody.
    REQUIRE(mcast(hw::CmdOpcode::DetachMcast, r.b.qpn) == hw::CmdStatus::Ok);
    r.post_recv(r.b, 12, r.va(100000), kLen + kGrh);
    w.wr_id = 3;
    r.post_send(r.a, w);
    CHECK(r.poll(r.a.cq).status == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK_FALSE(r.try_poll(r.b.cq, none));
    CHECK_FALSE(r.try_poll(c.cq, none));
    CHECK(device_stat(r, "dma_faults") == 0);
}

// The members of /proc/net/igmp6 on `dev`: each line is "index name group
// users flags timer", the group as 32 hex digits.
std::vector<std::string> ipv6_groups(const std::string& dev) {
    std::vector<std::string> out;
    std::FILE* f = std::fopen("/proc/net/igmp6", "r");
    if (!f) return out;
    char name[64], group[64];
    int idx = 0;
    while (std::fscanf(f, "%d %63s %63s %*[^\n]", &idx, name, group) == 3)
        if (dev == name) out.push_back(group);
    std::fclose(f);
    return out;
}

// An IPv6 group (hw-spec 5.6.12): the port of a device on a netdev (lo
// here) has the netdev join it (MLD, so /proc/net/igmp6 and `ip -6 maddr`
// list it) with the group's first attached QP, keeps it while any QP is
// attached, and leaves with the last one's detach, as for an IPv4 group.
// (IPv6 multicast does not loop through lo: the delivery of the group's
// packets is netns.two_devices', over a veth pair.)
TEST_CASE("an IPv6 group is joined on the netdev with its first QP and left with its last", "[soft_engine][mcast]") {
    Rig r(hw::QpType::Ud);
    const uint8_t mgid[16] = {0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x5e, 0x11, 0, 0x06};
    const std::string group = "ff0e000000000000000000015e110006";  // as /proc/net/igmp6 writes it
    auto mcast = [&](hw::CmdOpcode op, uint32_t qpn) {
        uint8_t in[hw::cmd_mcast_in::kSize] = {};
        hw::set(in, hw::cmd_mcast_in::qpn, qpn);
        hw::set_bytes(in, sizeof in, hw::cmd_mcast_in::mgid, mgid, 16);
        host::CmdOutcome o;
        REQUIRE(r.ctx->command(op, in, sizeof in, 0, o) == 0);
        return o.status;
    };
    auto joined = [&] {
        const std::vector<std::string> g = ipv6_groups("lo");
        return std::find(g.begin(), g.end(), group) != g.end();
    };
    // The port follows the MCG table when the firmware releases its fence on
    // the entry; a context's end reaches the daemon through its closed
    // connection, later: up to 5 s for the membership to be as `want`.
    auto settle = [&](bool want) {
        for (int i = 0; i < 500 && joined() != want; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return joined();
    };
    REQUIRE_FALSE(joined());
    REQUIRE(mcast(hw::CmdOpcode::AttachMcast, r.a.qpn) == hw::CmdStatus::Ok);
    CHECK(settle(true));
    REQUIRE(mcast(hw::CmdOpcode::AttachMcast, r.b.qpn) == hw::CmdStatus::Ok);
    CHECK(settle(true));
    // One membership for the group, whatever the number of its QPs.
    const std::vector<std::string> g = ipv6_groups("lo");
    CHECK(std::count(g.begin(), g.end(), group) == 1);
    REQUIRE(mcast(hw::CmdOpcode::DetachMcast, r.a.qpn) == hw::CmdStatus::Ok);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK(joined());  // b is still attached
    REQUIRE(mcast(hw::CmdOpcode::DetachMcast, r.b.qpn) == hw::CmdStatus::Ok);
    CHECK_FALSE(settle(false));
    // Attached again, then the QP destroyed with the context: left again.
    REQUIRE(mcast(hw::CmdOpcode::AttachMcast, r.b.qpn) == hw::CmdStatus::Ok);
    CHECK(settle(true));
    r.ctx.reset();
    CHECK_FALSE(settle(false));
}

// A CQ doorbell whose consumer index is past the CQ's producer index (one
// rung for an earlier CQ of the same number, still queued when that CQ was
// destroyed) is ignored (hw-spec 3.2): taken, it would overflow the CQ.
TEST_CASE("a CQ doorbell past the producer index is ignored", "[soft_engine]") {
    Rig r;
    r.ctx->ring_doorbell(hw::DbKind::Cq, r.a.cq.cqn, 40, 0);
    fill(r.ptr(0), 4096, 3);
    r.post_send(r.a, {hw::WrOpcode::RdmaWrite, 31, r.va(0), 4096, r.va(8192), r.rkey});
    Rig::Cqe s = r.poll(r.a.cq);
    CHECK(s.wr_id == 31);
    CHECK(s.status == uint32_t(hw::WcStatus::Success));
    CHECK(std::memcmp(r.ptr(0), r.ptr(8192), 4096) == 0);
}

// A hostile application (issue 12, section 2), with the host driver's own
// interface: a second context on the device rings doorbells for the first
// one's QPs and CQs (and for numbers nobody has) by the hundred thousand,
// creates a QP whose rings lie in memory it has not mapped, writes garbage
// WQEs and rings them, registers memory it does not own, and shares a memfd
// of the wrong size. Each is refused or contained to that context; the first
// context's traffic goes on byte for byte and its CQs see nothing of it.
TEST_CASE("a hostile context is refused or contained, and the other context works on", "[soft_engine][hostile]") {
    Rig r;
    int err = 0;
    auto evil = host::open_context("setest", err);
    REQUIRE(evil);
    uint8_t none[4] = {};
    const uint32_t pdn = cmd(*evil, hw::CmdOpcode::AllocPd, none);

    // Doorbells for another context's QPs and CQs, and for no object at all.
    for (uint32_t i = 0; i < 100000; ++i) {
        const uint32_t n = i % 4;
        const uint32_t num = n == 0 ? r.a.qpn : n == 1 ? r.b.qpn : n == 2 ? r.a.cq.cqn : 0xFFFFFF - i % 977;
        const hw::DbKind kind = n == 2 ? hw::DbKind::Cq : (i & 8) ? hw::DbKind::Rq : hw::DbKind::Sq;
        evil->ring_doorbell(kind, num, i * 2654435761u, 0);
    }

    // A QP whose rings lie in memory this process does not have: refused, or
    // a QP whose first WQE fetch fails and which goes to ERROR alone.
    uint8_t cqin[hw::cmd_create_cq_in::kSize] = {};
    Mem evil_cq_ring{(1u << kLogCq) * hw::cqe::kSize};
    hw::set(cqin, hw::cmd_create_cq_in::log_size, kLogCq);
    hw::set(cqin, hw::cmd_create_cq_in::domain_id, evil->boot_domain());
    hw::set(cqin, hw::cmd_create_cq_in::base, evil_cq_ring.addr());
    const uint32_t evil_cqn = cmd(*evil, hw::CmdOpcode::CreateCq, cqin);
    auto create_qp = [&](uint64_t sq, uint64_t rq, host::CmdOutcome& o) {
        namespace c = hw::cmd_create_qp_in;
        uint8_t in[c::kSize] = {};
        hw::set(in, c::qp_type, uint8_t(hw::QpType::Rc));
        hw::set(in, c::pdn, pdn);
        hw::set(in, c::send_cqn, evil_cqn);
        hw::set(in, c::recv_cqn, evil_cqn);
        hw::set(in, c::domain_id, evil->boot_domain());
        hw::set(in, c::sq_base, sq);
        hw::set(in, c::rq_base, rq);
        hw::set(in, c::log_sq_size, kLogQ);
        hw::set(in, c::log_sq_stride, kLogSqStride);
        hw::set(in, c::log_rq_size, kLogQ);
        hw::set(in, c::log_rq_stride, kLogRqStride);
        hw::set(in, c::max_send_sge, 4);
        hw::set(in, c::max_recv_sge, 4);
        REQUIRE(evil->command(hw::CmdOpcode::CreateQp, in, sizeof in, hw::cmd_handle::kSize, o) == 0);
    };
    host::CmdOutcome o;
    create_qp(0x1000, 0x2000, o);  // page 1: never mapped in a process
    if (o.status == hw::CmdStatus::Ok) {
        const uint32_t qpn = uint32_t(hw::get(o.out.data(), o.out.size(), hw::cmd_handle::handle));
        evil->ring_doorbell(hw::DbKind::Sq, qpn, 1);
        evil->ring_doorbell(hw::DbKind::Rq, qpn, 1);
    }
    // The other context's SQ as this one's rings: its memory is in another
    // process, so this names the address in the hostile process, which holds
    // nothing there (or something of its own): never the other's queue.
    create_qp(r.a.sq.addr(), r.a.rq.addr(), o);

    // Garbage WQEs in its own SQ, rung: completions with errors on its own
    // CQ (or none), never on the other context's.
    Mem sq{(1u << kLogQ) << kLogSqStride}, rq{(1u << kLogQ) << kLogRqStride};
    create_qp(sq.addr(), rq.addr(), o);
    REQUIRE(o.status == hw::CmdStatus::Ok);
    const uint32_t gqpn = uint32_t(hw::get(o.out.data(), o.out.size(), hw::cmd_handle::handle));
    const Qp* peer = &r.b;
    {
        namespace m = hw::qp_attr_mask;
        namespace f = hw::qp_attr;
        uint8_t at[f::kSize] = {};
        hw::set(at, f::qpn, gqpn);
        hw::set(at, f::port_num, 1);
        hw::set(at, f::qp_access_flags, hw::access::kRemoteWrite);
        hw::set(at, f::attr_mask, m::kState | m::kPkeyIndex | m::kPort | m::kAccessFlags);
        hw::set(at, f::qp_state, uint8_t(hw::QpState::Init));
        REQUIRE(evil->command(hw::CmdOpcode::ModifyQp, at, f::kSize, 0, o) == 0);
        REQUIRE(o.status == hw::CmdStatus::Ok);
        std::memset(at, 0, sizeof at);
        const uint8_t dgid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
        hw::set(at, f::qpn, gqpn);
        hw::set_bytes(at, f::kSize, f::av_dgid, dgid, 16);
        hw::set(at, f::av_sgid_index, 1);
        hw::set(at, f::av_hop_limit, 64);
        hw::set(at, f::av_grh, 1);
        hw::set(at, f::path_mtu, uint8_t(hw::Mtu::M1024));
        hw::set(at, f::dest_qp_num, peer->qpn);  // aims at the other context's QP
        hw::set(at, f::rq_psn, 0x100);
        hw::set(at, f::max_dest_rd_atomic, 1);
        hw::set(at, f::min_rnr_timer, 1);
        hw::set(at, f::attr_mask, m::kState | m::kAv | m::kPathMtu | m::kDestQpn | m::kRqPsn | m::kMaxDestRdAtomic |
                                      m::kMinRnrTimer);
        hw::set(at, f::qp_state, uint8_t(hw::QpState::Rtr));
        REQUIRE(evil->command(hw::CmdOpcode::ModifyQp, at, f::kSize, 0, o) == 0);
        REQUIRE(o.status == hw::CmdStatus::Ok);
        std::memset(at, 0, sizeof at);
        hw::set(at, f::qpn, gqpn);
        hw::set(at, f::sq_psn, 0x5000);
        hw::set(at, f::timeout, 10);
        hw::set(at, f::retry_cnt, 1);
        hw::set(at, f::rnr_retry, 1);
        hw::set(at, f::max_rd_atomic, 1);
        hw::set(at, f::attr_mask,
                m::kState | m::kSqPsn | m::kTimeout | m::kRetryCnt | m::kRnrRetry | m::kMaxQpRdAtomic);
        hw::set(at, f::qp_state, uint8_t(hw::QpState::Rts));
        REQUIRE(evil->command(hw::CmdOpcode::ModifyQp, at, f::kSize, 0, o) == 0);
        REQUIRE(o.status == hw::CmdStatus::Ok);
    }
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < sq.len; ++i) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        sq.p[i] = uint8_t(x);
    }
    evil->ring_doorbell(hw::DbKind::Sq, gqpn, 1u << kLogQ);

    // Memory it does not own, registered: refused, or a key whose use fails.
    {
        uint8_t mr[hw::cmd_reg_mr_in::kSize] = {};
        hw::set(mr, hw::cmd_reg_mr_in::pdn, pdn);
        hw::set(mr, hw::cmd_reg_mr_in::access, hw::access::kAll);
        hw::set(mr, hw::cmd_reg_mr_in::domain_id, evil->boot_domain());
        hw::set(mr, hw::cmd_reg_mr_in::iova, 0x1000);
        hw::set(mr, hw::cmd_reg_mr_in::length, 1 << 20);
        hw::set(mr, hw::cmd_reg_mr_in::host_addr, 0x1000);
        REQUIRE(evil->command(hw::CmdOpcode::RegMr, mr, sizeof mr, hw::cmd_reg_mr_out::kSize, o) == 0);
    }
    // A memfd of the wrong size to share: refused.
    {
        const int fd = memfd_create("simnic-hostile", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        REQUIRE(fd >= 0);
        REQUIRE(ftruncate(fd, 4096) == 0);
        uint32_t handle = 0;
        CHECK(evil->share_memory(fd, 1 << 20, handle) != 0);
        close(fd);
    }

    // The other context: SEND, WRITE and READ as before, and its CQs hold
    // its own completions only.
    for (int round = 0; round < 20; ++round) {
        fill(r.ptr(0), 3000, uint8_t(round));
        r.post_recv(r.b, 100 + round, r.va(100000), 4000);
        r.post_send(r.a, {hw::WrOpcode::Send, 200u + round, r.va(0), 3000});
        Rig::Cqe s = r.poll(r.a.cq);
        CHECK(s.wr_id == 200u + round);
        CHECK(s.status == 0);
        Rig::Cqe v = r.poll(r.b.cq);
        CHECK(v.wr_id == 100u + round);
        CHECK(v.status == 0);
        CHECK(v.byte_len == 3000);
        CHECK(std::memcmp(r.ptr(0), r.ptr(100000), 3000) == 0);
        r.post_send(r.a, {hw::WrOpcode::RdmaWrite, 300u + round, r.va(0), 3000, r.va(200000), r.rkey});
        s = r.poll(r.a.cq);
        CHECK(s.status == 0);
        CHECK(std::memcmp(r.ptr(0), r.ptr(200000), 3000) == 0);
    }
    CHECK(hw::cqe_peek(r.a.cq.ring.p, r.a.cq.ci, kLogCq) == nullptr);
    CHECK(hw::cqe_peek(r.b.cq.ring.p, r.b.cq.ci, kLogCq) == nullptr);
    // Its objects go with it; the other context's two QPs stay.
    evil.reset();
    uint32_t qps = 0;
    for (int i = 0; i < 50; ++i) {
        const control::Json c = r.d.request(control::Json{{"op", "resource_counts"}, {"device", r.d.device()}});
        REQUIRE(c.value("ok", false));
        qps = c["qps"].get<uint32_t>();
        if (qps == 2) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    CHECK(qps == 2);
}

// hw-spec 7.3, rxe's rxe_req_notify_cq: an arm asks for an event for the
// next CQE after the driver armed. The arm reaches the engine through the
// doorbell FIFO with cq_seen, the producer index the driver saw: a CQE in
// [ci, cq_seen) raises nothing (the application polls it), one written
// after raises the event, at once if it is already there when the arm
// arrives.
TEST_CASE("a CQ arm fires for CQEs the driver had not seen when it armed, not for those it had", "[soft_engine]") {
    Rig r;
    // Completion events for A's CQ (other EQEs are not this test's).
    auto completions = [&r] {
        int n = 0;
        hw::Eqe e;
        while (r.ctx->next_event(e))
            if (e.event_type == hw::EventType::Completion && e.obj_num == r.a.cq.cqn) ++n;
        return n;
    };
    auto write = [&r](uint64_t wr_id) {
        INFO("WRITE " << wr_id);
        uint32_t i = r.a.cq.ci;
        while (hw::cqe_peek(r.a.cq.ring.p, i, kLogCq)) ++i;  // the CQEs already there
        r.post_send(r.a, {hw::WrOpcode::RdmaWrite, wr_id, r.va(0), 64, r.va(8192), r.rkey});
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!hw::cqe_peek(r.a.cq.ring.p, i, kLogCq)) {  // and this one's
            REQUIRE(std::chrono::steady_clock::now() < deadline);
            std::this_thread::yield();
        }
    };
    // Events drain as the engine writes them; give it time to write one.
    auto settle = [] { std::this_thread::sleep_for(std::chrono::milliseconds(100)); };
    const uint8_t next = uint8_t(hw::CqArm::Next);

    // A CQE the driver saw when it armed: no event.
    write(41);
    settle();
    completions();
    r.ctx->ring_doorbell(hw::DbKind::Cq, r.a.cq.cqn, r.a.cq.ci, next, r.a.cq.ci + 1);
    settle();
    CHECK(completions() == 0);
    // The next CQE fires the arm, once.
    write(42);
    settle();
    CHECK(completions() == 1);
    write(43);
    settle();
    CHECK(completions() == 0);  // disarmed
    // Two CQEs wait, the driver saw one: the other was written after it
    // armed, as far as the driver knows, so the arm fires at once.
    r.ctx->ring_doorbell(hw::DbKind::Cq, r.a.cq.cqn, r.a.cq.ci, next, r.a.cq.ci + 1);
    settle();
    CHECK(completions() == 1);
    // The CQEs are all there to poll.
    for (uint64_t id : {41, 42, 43}) CHECK(r.poll(r.a.cq).wr_id == id);
}

// hw-spec 7.2, as rxe's rxe_cq_post and queue_full: a ring of 2^n slots
// holds 2^n - 1 CQEs. A CQE that finds the CQ full is lost with a CQ_ERR
// event of its own; the CQ is not put in error, so it takes CQEs again once
// the driver returns entries.
namespace {

struct Overrun {
    explicit Overrun(Rig& rig) : r(rig) {}
    Rig& r;
    // The events that came in, by kind and object.
    std::vector<hw::Eqe> events;
    void drain() {
        hw::Eqe e;
        while (r.ctx->next_event(e)) events.push_back(e);
    }
    int count(hw::EventType t, uint32_t obj) const {
        return int(std::count_if(events.begin(), events.end(),
                                 [&](const hw::Eqe& e) { return e.event_type == t && e.obj_num == obj; }));
    }
    // Until `n` events of the kind have come for `obj` (10 s at most).
    void wait(hw::EventType t, uint32_t obj, int n) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        for (drain(); count(t, obj) < n; drain()) {
            INFO("event " << int(t) << " for " << obj << ": " << count(t, obj) << " of " << n);
            REQUIRE(std::chrono::steady_clock::now() < deadline);
            std::this_thread::yield();
        }
    }
    // Until CQE number `i` (free-running) of `cq` is there, not polled.
    static void wait_cqe(const Cq& cq, uint32_t i) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!hw::cqe_peek(cq.ring.p, i, kLogCq)) {
            INFO("CQE " << i);
            REQUIRE(std::chrono::steady_clock::now() < deadline);
            std::this_thread::yield();
        }
    }
};

constexpr uint32_t kCqHolds = (1u << kLogCq) - 1;
constexpr uint32_t kSqSlots = 1u << kLogQ;

}  // namespace

// rxe's completer ignores rxe_cq_post's EBUSY: a lost send CQE leaves the
// requester's QP as it was.
TEST_CASE("a full CQ loses the send CQE with CQ_ERR, the QP goes on and the CQ takes CQEs once polled",
          "[soft_engine][cq]") {
    Rig r;
    Overrun o(r);
    o.drain();
    o.events.clear();
    const uint64_t overflows = device_stat(r, "cq_overflows");
    fill(r.ptr(0), 64, 9);
    // kCqHolds + 2 signaled WRITEs, no CQE polled: in batches the SQ holds,
    // each posted once the one before has completed (its CQEs are there).
    uint64_t id = 0;
    while (id < kCqHolds) {
        const uint64_t end = std::min<uint64_t>(id + kSqSlots, kCqHolds);
        for (; id < end; ++id) r.post_send(r.a, {hw::WrOpcode::RdmaWrite, id, r.va(0), 64, r.va(8192), r.rkey});
        Overrun::wait_cqe(r.a.cq, uint32_t(id - 1));
    }
    // The CQ holds kCqHolds: the next two CQEs are lost, a CQ_ERR each.
    for (; id < kCqHolds + 2; ++id)
        r.post_send(r.a, {hw::WrOpcode::RdmaWrite, id, r.va(0), 64, r.va(8192), r.rkey});
    o.wait(hw::EventType::CqErr, r.a.cq.cqn, 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // anything more would be here by now
    o.drain();
    CHECK(o.count(hw::EventType::CqErr, r.a.cq.cqn) == 2);
    CHECK(o.count(hw::EventType::QpFatal, r.a.qpn) == 0);
    CHECK(device_stat(r, "cq_overflows") == overflows + 2);
    CHECK_FALSE(hw::cqe_peek(r.a.cq.ring.p, r.a.cq.ci + kCqHolds, kLogCq));  // the slot kept empty
    for (uint64_t i = 0; i < kCqHolds; ++i) {
        const Rig::Cqe c = r.poll(r.a.cq);
        INFO("CQE " << i);
        CHECK(c.wr_id == i);
        CHECK(c.status == uint32_t(hw::WcStatus::Success));
        CHECK(c.is_send == 1);
    }
    Rig::Cqe none{};
    CHECK_FALSE(r.try_poll(r.a.cq, none));
    // Room made: the QP, still in RTS, completes the next WRITE to the CQ.
    fill(r.ptr(0), 64, 77);
    r.post_send(r.a, {hw::WrOpcode::RdmaWrite, 500, r.va(0), 64, r.va(8192), r.rkey});
    const Rig::Cqe after = r.poll(r.a.cq);
    CHECK(after.wr_id == 500);
    CHECK(after.status == uint32_t(hw::WcStatus::Success));
    CHECK(std::memcmp(r.ptr(0), r.ptr(8192), 64) == 0);
    o.drain();
    CHECK(o.count(hw::EventType::CqErr, r.a.cq.cqn) == 2);
    CHECK(o.count(hw::EventType::QpFatal, r.a.qpn) == 0);
}

// rxe's responder moves its QP to ERR when a receive CQE is lost
// (RESPST_ERR_CQ_OVERFLOW): QP_FATAL with cause CqOverflow.
TEST_CASE("a full CQ loses the receive CQE with CQ_ERR and the responder's QP goes to ERR", "[soft_engine][cq]") {
    Rig r;
    Overrun o(r);
    o.drain();
    o.events.clear();
    fill(r.ptr(0), 64, 5);
    // Unsignaled SENDs, so that only b's receive CQEs fill b's CQ.
    auto send = [&](uint64_t n, uint64_t& id) {
        for (uint64_t k = 0; k < n; ++k, ++id) r.post_recv(r.b, 1000 + id, r.va(16384 + 64 * (id % kSqSlots)), 64);
        for (uint64_t k = 0; k < n; ++k) {
            Rig::Wr w{hw::WrOpcode::Send, k, r.va(0), 64};
            w.signaled = false;
            r.post_send(r.a, w);
        }
    };
    uint64_t id = 0;
    while (id < kCqHolds) {
        send(std::min<uint64_t>(kSqSlots, kCqHolds - id), id);
        Overrun::wait_cqe(r.b.cq, uint32_t(id - 1));
    }
    send(1, id);
    o.wait(hw::EventType::QpFatal, r.b.qpn, 1);
    o.drain();
    CHECK(o.count(hw::EventType::CqErr, r.b.cq.cqn) >= 1);
    for (const hw::Eqe& e : o.events)
        if (e.event_type == hw::EventType::QpFatal && e.obj_num == r.b.qpn)
            CHECK(e.aux == uint32_t(hw::ErrorCause::CqOverflow));
    CHECK(o.count(hw::EventType::CqErr, r.a.cq.cqn) == 0);
    for (uint64_t i = 0; i < kCqHolds; ++i) {
        const Rig::Cqe c = r.poll(r.b.cq);
        INFO("CQE " << i);
        CHECK(c.wr_id == 1000 + i);
        CHECK(c.status == uint32_t(hw::WcStatus::Success));
        CHECK(c.is_send == 0);
    }
}

// Congestion control on a device (docs/model.md, "Congestion control"): on
// lo nothing marks CE, so no CNP is sent and no rate moves; what is checked
// is that every QP gets a reaction point at the config's line rate, that
// the traffic is unchanged, and that the counters and the stats say so.
// Off (the default), no QP has one.
TEST_CASE("congestion control on a device: every QP has a reaction point, traffic unchanged", "[soft_engine][congestion]") {
    const char* engine = GENERATE("soft", "model");
    const bool on = GENERATE(false, true);
    INFO("engine " << engine << ", congestion control " << (on ? "on" : "off"));
    char path[] = "/tmp/simnic-cc-XXXXXX";
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    const std::string toml = std::string("[congestion]\nenable = ") + (on ? "1" : "0") + "\nline_rate_gbps = 40\n";
    REQUIRE(write(fd, toml.data(), toml.size()) == ssize_t(toml.size()));
    close(fd);
    Rig r(hw::QpType::Rc, engine, std::string(" config ") + path);
    unlink(path);
    fill(r.ptr(0), 20000, 5);
    r.post_send(r.a, {hw::WrOpcode::RdmaWrite, 1, r.va(0), 20000, r.va(200000), r.rkey});
    CHECK(r.poll(r.a.cq).status == 0);
    CHECK(std::memcmp(r.ptr(0), r.ptr(200000), 20000) == 0);
    const control::Json st = r.d.request(control::Json{{"op", "stats"}, {"device", r.d.device()}});
    REQUIRE(st.contains("congestion"));
    CHECK(st["congestion"]["enabled"].get<bool>() == on);
    const control::Json& qps = st["congestion"]["qps"];
    if (!on) {
        CHECK(qps.empty());
    } else {
        REQUIRE(qps.size() == 2);
        for (const control::Json& q : qps) {
            CHECK((q["qpn"] == r.a.qpn || q["qpn"] == r.b.qpn));
            CHECK(q["rate_gbps"].get<double>() == 40);
            CHECK(q["target_rate_gbps"].get<double>() == 40);
            CHECK(q["alpha"].get<double>() <= 1);
            CHECK_FALSE(q["rate_limited"].get<bool>());
            CHECK(q["cnps_received"] == 0);
        }
    }
    // Nothing marked CE on lo: no CNP either way.
    for (const char* k : {"ce_packets", "cnp_sent", "cnp_received", "cnp_suppressed", "rate_limit_holds"}) {
        INFO(k);
        REQUIRE(st["stats"].contains(k));
        CHECK(st["stats"][k] == 0);
    }
}
