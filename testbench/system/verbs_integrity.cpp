// simnic's own verbs test program: an ordinary libibverbs application (linked
// to the system libibverbs only, no simnic library) that checks data integrity
// byte for byte on a simnic device. Run it under `simnic exec` with
// SIMNIC_TEST_DEVICE naming the device (run_verbs_integrity.sh does).
//
// Within one process, QPs on the same device are connected to each other
// (GID index 1, the IPv4-mapped GID; RoCE v2 AVs with is_global=1). Every
// buffer lives inside a larger allocation filled with a canary pattern, and
// after every operation the whole allocation, canaries and gaps between SGEs
// included, is compared with the expected image: the device must write the
// bytes it was asked to and nothing else.
#include <endian.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "verbs_app.h"

namespace {

using namespace simnic::tb;  // verbs_app.h: the device, QPs, WRs, completions
using Clock = std::chrono::steady_clock;
constexpr int kGidIndex = kVerbsGidIndex;
constexpr int kAllAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                           IBV_ACCESS_REMOTE_ATOMIC;
constexpr std::uint32_t kQkey = 0x11111111;

// ---- the device ----

using Device = VerbsDevice;

// ---- buffers with canaries ----

// An allocation of kGuard + len + kGuard bytes, filled with a canary pattern,
// whose middle `len` bytes are registered. `expect` is what every byte of the
// allocation must hold; verify() compares all of it.
struct Buffer {
    static constexpr std::size_t kGuard = 256;
    std::vector<std::uint8_t> mem, expect;
    std::size_t len;
    ibv_mr* mr = nullptr;

    Buffer(Device& d, std::size_t n, int access = kAllAccess, std::uint8_t salt = 0)
        : mem(kGuard + n + kGuard), len(n) {
        for (std::size_t i = 0; i < mem.size(); ++i)
            mem[i] = static_cast<std::uint8_t>(0xA5 ^ (i * 131 + (i >> 8) * 7 + salt));
        expect = mem;
        mr = ibv_reg_mr(d.pd, data(), n, access);
        INFO("ibv_reg_mr(" << n << ") errno " << errno);
        REQUIRE(mr != nullptr);
    }
    ~Buffer() {
        if (mr) CHECK(ibv_dereg_mr(mr) == 0);
    }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;

    std::uint8_t* data() { return mem.data() + kGuard; }
    std::uint64_t addr(std::size_t off = 0) { return reinterpret_cast<std::uintptr_t>(data() + off); }
    std::uint8_t* exp(std::size_t off = 0) { return expect.data() + kGuard + off; }
    // Puts `n` random bytes at `off`, both in memory and in the expected image.
    void fill(std::size_t off, std::size_t n, std::mt19937& rng) {
        for (std::size_t i = 0; i < n; ++i) data()[off + i] = static_cast<std::uint8_t>(rng());
        std::memcpy(exp(off), data() + off, n);
    }
    ibv_sge sge(std::size_t off, std::size_t n) {
        return ibv_sge{addr(off), static_cast<std::uint32_t>(n), mr->lkey};
    }
    // Fails with the first differing byte and its place (guard or data).
    void verify(const char* what) {
        if (mem == expect) return;
        std::size_t i = 0;
        while (mem[i] == expect[i]) ++i;
        std::size_t bad = 0;
        for (std::size_t j = 0; j < mem.size(); ++j) bad += mem[j] != expect[j];
        const long rel = static_cast<long>(i) - static_cast<long>(kGuard);
        FAIL(what << ": " << bad << " bytes differ; first at data offset " << rel
                  << (rel < 0 || rel >= static_cast<long>(len) ? " (outside the MR: canary)" : "")
                  << ": got 0x" << std::hex << int(mem[i]) << " expected 0x" << int(expect[i]));
    }
};

// ---- completions ----

// No further completion shows up within `ms`.
void expect_no_completion(ibv_cq* cq, const char* what, int ms = 20) {
    const auto end = Clock::now() + std::chrono::milliseconds(ms);
    ibv_wc wc{};
    do {
        const int n = ibv_poll_cq(cq, 1, &wc);
        REQUIRE(n >= 0);
        if (n == 1) FAIL(what << ": unexpected completion " << wc_str(wc));
        std::this_thread::yield();
    } while (Clock::now() < end);
}

// ---- QPs ----

// A QP with a CQ of its own (and, if given, a completion channel for it or
// an SRQ), room for 64 send WRs of 16 SGEs and 64 receive WRs of 4.
struct Qp {
    Device& d;
    ibv_cq* cq = nullptr;
    ibv_qp* qp = nullptr;
    ibv_qp_type type;
    std::uint32_t max_inline = 0;

    Qp(Device& dev, ibv_qp_type t, ibv_comp_channel* ch = nullptr, std::uint32_t inline_req = 0,
       ibv_srq* srq = nullptr)
        : d(dev), type(t) {
        cq = ibv_create_cq(d.ctx, 256, nullptr, ch, 0);
        REQUIRE(cq != nullptr);
        ibv_qp_cap cap{64, srq ? 0u : 64u, 16, srq ? 0u : 4u, inline_req};
        qp = create_qp(d.pd, t, cq, cap, srq);
        max_inline = cap.max_inline_data;
        CHECK(max_inline >= inline_req);
    }
    ~Qp() {
        if (qp) CHECK(ibv_destroy_qp(qp) == 0);
        if (cq) CHECK(ibv_destroy_cq(cq) == 0);
    }
    Qp(const Qp&) = delete;
    Qp& operator=(const Qp&) = delete;

    std::uint32_t qpn() const { return qp->qp_num; }

    ibv_qp_state state() {
        ibv_qp_attr a{};
        ibv_qp_init_attr ia{};
        REQUIRE(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) == 0);
        return a.qp_state;
    }

    // RC: remote write, read and atomics allowed, as many READs/atomics in
    // flight as the device takes (up to 16); UD: Q_Key kQkey.
    QpPath path(std::uint32_t rq_psn = 0, std::uint32_t sq_psn = 0, std::uint8_t rnr_retry = 7) const {
        QpPath p;
        p.rq_psn = rq_psn;
        p.sq_psn = sq_psn;
        p.rnr_retry = rnr_retry;
        p.rd_atomic = static_cast<std::uint8_t>(std::min(16, d.attr.max_qp_rd_atom));
        p.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
        p.qkey = kQkey;
        return p;
    }
    void to_init() { qp_to_init(qp, type, path()); }
    void to_rtr(std::uint32_t dest_qpn, std::uint32_t rq_psn) {
        qp_to_rtr(d, qp, type, dest_qpn, path(rq_psn));
    }
    void to_rts(std::uint32_t sq_psn, std::uint8_t rnr_retry) {
        qp_to_rts(qp, type, path(0, sq_psn, rnr_retry));
    }
    ibv_ah_attr av() const { return gid_av(d); }
};

// Connects x and y to each other: x receives from PSN y_psn and sends from
// x_psn, y the other way round.
void connect(Qp& x, Qp& y, std::uint32_t x_psn, std::uint32_t y_psn, std::uint8_t rnr_retry = 7) {
    x.to_init();
    y.to_init();
    x.to_rtr(y.qpn(), y_psn);
    y.to_rtr(x.qpn(), x_psn);
    x.to_rts(x_psn, rnr_retry);
    y.to_rts(y_psn, rnr_retry);
}

// Two QPs of one type on the device, connected to each other.
struct Pair {
    Qp a, b;
    Pair(Device& d, ibv_qp_type t, std::uint8_t rnr_retry = 7, std::uint32_t inline_req = 0)
        : a(d, t, nullptr, inline_req), b(d, t, nullptr, inline_req) {
        connect(a, b, 0xabc000, 0x1000, rnr_retry);
        CHECK(a.state() == IBV_QPS_RTS);
        CHECK(b.state() == IBV_QPS_RTS);
    }
};

// Splits [0, size) into n pieces of unequal lengths (some empty when size < n),
// each placed at its own offset with a gap of `gap` canary bytes in between.
struct Layout {
    std::vector<std::size_t> off, len;
    std::size_t span = 0;
};
Layout split(std::size_t size, int n, std::size_t gap, std::size_t start) {
    Layout l;
    std::size_t at = start, done = 0;
    for (int i = 0; i < n; ++i) {
        // Boundaries at size*(i+1)^2/n^2: lengths grow along the list.
        const std::size_t end = i + 1 == n ? size : size * (i + 1) * (i + 1) / (std::size_t(n) * n);
        l.off.push_back(at);
        l.len.push_back(end - done);
        at += end - done + gap;
        done = end;
    }
    l.span = at;
    return l;
}

std::vector<ibv_sge> sges(Buffer& b, const Layout& l) {
    std::vector<ibv_sge> v;
    for (std::size_t i = 0; i < l.off.size(); ++i) v.push_back(b.sge(l.off[i], l.len[i]));
    return v;
}

std::vector<std::size_t> test_sizes(const Device& d) {
    const std::size_t m = d.mtu;
    std::vector<std::size_t> v{0, 1, 3, 4095, 4096, m - 1, m, m + 1, 3 * m + 7, 65536, 1u << 20};
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
}

enum class Op { Send, SendImm, Write, WriteImm, Read };
const char* op_name(Op o) {
    switch (o) {
        case Op::Send: return "SEND";
        case Op::SendImm: return "SEND_WITH_IMM";
        case Op::Write: return "RDMA_WRITE";
        case Op::WriteImm: return "RDMA_WRITE_WITH_IMM";
        case Op::Read: return "RDMA_READ";
    }
    return "?";
}

// One RC operation of `size` bytes from a (requester) to b, with `nsge`
// SGEs on a's side and 2 on b's receive WQE.
void rc_transfer(Device& d, Pair& p, Op op, std::size_t size, int nsge, std::uint32_t seq) {
    std::mt19937 rng(seq * 7919 + static_cast<std::uint32_t>(size));
    constexpr std::size_t kGap = 13, kStart = 5, kSlack = 29;
    const int n = size == 0 ? 0 : nsge;  // a zero-length message carries no SGE
    const Layout ll = split(size, n, kGap, kStart);
    // b's receive WQE: two SGEs, the second one larger than needed.
    const Layout rl = split(size, 2, kGap, kStart);
    Buffer local(d, ll.span + kGap, kAllAccess, 1);
    Buffer remote(d, kStart + size + kGap, kAllAccess, 2);  // WRITE target, READ source
    Buffer rcv(d, rl.span + kSlack + kGap, kAllAccess, 3);   // b's receive WQE
    const bool reads = op == Op::Read;
    if (reads) {
        remote.fill(kStart, size, rng);
    } else {
        for (std::size_t i = 0; i < ll.off.size(); ++i) local.fill(ll.off[i], ll.len[i], rng);
    }
    // The message bytes, in order.
    std::vector<std::uint8_t> msg;
    if (reads) {
        msg.assign(remote.exp(kStart), remote.exp(kStart) + size);
    } else {
        for (std::size_t i = 0; i < ll.off.size(); ++i)
            msg.insert(msg.end(), local.exp(ll.off[i]), local.exp(ll.off[i]) + ll.len[i]);
    }
    REQUIRE(msg.size() == size);

    const bool recv = op == Op::Send || op == Op::SendImm || op == Op::WriteImm;
    const std::uint64_t rid = 0x5000 + seq, sid = 0x9000 + seq;
    if (recv) {
        std::vector<ibv_sge> rs{rcv.sge(rl.off[0], rl.len[0]), rcv.sge(rl.off[1], rl.len[1] + kSlack)};
        ibv_recv_wr rwr = recv_wr(rid, rs.data(), 2);
        post_recv(p.b.qp, rwr);
    }
    std::vector<ibv_sge> ls = sges(local, ll);
    ibv_send_wr wr{};
    wr.wr_id = sid;
    wr.sg_list = ls.data();
    wr.num_sge = n;
    wr.send_flags = IBV_SEND_SIGNALED;
    const std::uint32_t imm = htobe32(0xC0DE0000u + seq);
    switch (op) {
        case Op::Send: wr.opcode = IBV_WR_SEND; break;
        case Op::SendImm: wr.opcode = IBV_WR_SEND_WITH_IMM; wr.imm_data = imm; break;
        case Op::Write: wr.opcode = IBV_WR_RDMA_WRITE; break;
        case Op::WriteImm: wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM; wr.imm_data = imm; break;
        case Op::Read: wr.opcode = IBV_WR_RDMA_READ; break;
    }
    if (op == Op::Write || op == Op::WriteImm || op == Op::Read) {
        wr.wr.rdma.remote_addr = remote.addr(kStart);
        wr.wr.rdma.rkey = remote.mr->rkey;
    }
    post_send(p.a.qp, wr);

    // Where the bytes must have landed.
    if (op == Op::Send || op == Op::SendImm) {
        std::size_t at = 0;
        for (int i = 0; i < 2; ++i) {
            std::memcpy(rcv.exp(rl.off[i]), msg.data() + at, rl.len[i]);
            at += rl.len[i];
        }
    } else if (op == Op::Write || op == Op::WriteImm) {
        std::memcpy(remote.exp(kStart), msg.data(), size);
    } else {
        std::size_t at = 0;
        for (std::size_t i = 0; i < ll.off.size(); ++i) {
            std::memcpy(local.exp(ll.off[i]), msg.data() + at, ll.len[i]);
            at += ll.len[i];
        }
    }

    static const ibv_wc_opcode send_op[] = {IBV_WC_SEND, IBV_WC_SEND, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_WRITE,
                                            IBV_WC_RDMA_READ};
    const ibv_wc swc = expect_wc(p.a.cq, "requester", sid, IBV_WC_SUCCESS, send_op[int(op)]);
    CHECK(swc.qp_num == p.a.qpn());
    if (op == Op::Read) CHECK(swc.byte_len == size);  // rxe reports the READ's length
    if (recv) {
        const ibv_wc rwc = expect_wc(p.b.cq, "responder", rid, IBV_WC_SUCCESS,
                                     op == Op::WriteImm ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV);
        INFO(wc_str(rwc));
        CHECK(rwc.byte_len == size);
        CHECK(rwc.qp_num == p.b.qpn());
        if (op == Op::Send) {
            CHECK((rwc.wc_flags & IBV_WC_WITH_IMM) == 0);
        } else {
            CHECK((rwc.wc_flags & IBV_WC_WITH_IMM) != 0);
            CHECK(rwc.imm_data == imm);
        }
    }
    local.verify("requester buffer");
    remote.verify("responder buffer");
    rcv.verify("responder receive buffer");
    expect_no_completion(p.a.cq, "requester CQ", 0);
    expect_no_completion(p.b.cq, "responder CQ", 0);
}

// Reads the async events that come within `ms` (acknowledged), stopping
// early after one of `stop_at`; returns them, that one last.
std::vector<ibv_async_event> read_async(ibv_context* ctx, int ms, std::optional<ibv_event_type> stop_at) {
    std::vector<ibv_async_event> out;
    const auto end = Clock::now() + std::chrono::milliseconds(ms);
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
        pollfd pfd{ctx->async_fd, POLLIN, 0};
        const int r = poll(&pfd, 1, static_cast<int>(std::max<long long>(left, 0)));
        REQUIRE(r >= 0);
        if (r == 0) break;
        ibv_async_event ev{};
        REQUIRE(ibv_get_async_event(ctx, &ev) == 0);
        out.push_back(ev);
        ibv_ack_async_event(&ev);
        if (ev.event_type == stop_at) break;
    }
    return out;
}

// Drains the async events queued within `ms`; returns them (acknowledged).
std::vector<ibv_async_event> drain_async(ibv_context* ctx, int ms) {
    return read_async(ctx, ms, std::nullopt);
}

// Waits up to `ms` for an async event of `type`; returns the events read
// (acknowledged), the one of `type` last. Empty-handed, the last is another.
std::vector<ibv_async_event> wait_async(ibv_context* ctx, ibv_event_type type, int ms) {
    return read_async(ctx, ms, type);
}

int count_events(const std::vector<ibv_async_event>& evs, ibv_event_type type) {
    return static_cast<int>(
        std::count_if(evs.begin(), evs.end(), [&](const ibv_async_event& e) { return e.event_type == type; }));
}

ibv_qp_attr query_qp(ibv_qp* qp) {
    ibv_qp_attr a{};
    ibv_qp_init_attr ia{};
    REQUIRE(ibv_query_qp(qp, &a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY, &ia) == 0);
    return a;
}

bool is_qp_event(ibv_event_type t) {
    return t == IBV_EVENT_QP_FATAL || t == IBV_EVENT_QP_REQ_ERR || t == IBV_EVENT_QP_ACCESS_ERR ||
           t == IBV_EVENT_COMM_EST || t == IBV_EVENT_SQ_DRAINED || t == IBV_EVENT_QP_LAST_WQE_REACHED;
}

}  // namespace

// ---------------------------------------------------------------------------

TEST_CASE("device: port, MTU and GID as rxe has them", "[verbs]") {
    Device d;
    INFO("active_mtu " << d.port.active_mtu << " = " << d.mtu << " bytes");
    CHECK(d.port.active_mtu >= IBV_MTU_1024);
    CHECK(d.port.gid_tbl_len > kGidIndex);
    CHECK(d.attr.max_sge >= 16);
    CHECK(d.attr.max_qp_rd_atom >= 1);
    CHECK(d.attr.atomic_cap != IBV_ATOMIC_NONE);
}

TEST_CASE("RC: SEND, WRITE and READ, byte for byte, across sizes and SGE counts", "[verbs][rc]") {
    Device d;
    Pair p(d, IBV_QPT_RC);
    std::uint32_t seq = 0;
    for (Op op : {Op::Send, Op::SendImm, Op::Write, Op::WriteImm, Op::Read})
        for (std::size_t size : test_sizes(d))
            for (int nsge : {1, 3, 16}) {
                if (size == 0 && nsge != 1) continue;
                INFO(op_name(op) << " size " << size << " with " << nsge << " SGEs (mtu " << d.mtu << ")");
                rc_transfer(d, p, op, size, nsge, ++seq);
            }
    CHECK(p.a.state() == IBV_QPS_RTS);
    CHECK(p.b.state() == IBV_QPS_RTS);
}

TEST_CASE("RC: both directions, several WRs in flight, one post_send call", "[verbs][rc]") {
    Device d;
    Pair p(d, IBV_QPT_RC);
    std::mt19937 rng(42);
    constexpr int kN = 8;
    const std::size_t size = 3 * d.mtu + 7;
    Buffer src(d, kN * size), dst(d, kN * size), back(d, kN * size);
    src.fill(0, kN * size, rng);
    // a writes kN chunks to b in one call, b reads them back in another.
    std::vector<ibv_sge> sg(kN);
    std::vector<ibv_send_wr> w(kN);
    for (int i = 0; i < kN; ++i) {
        sg[i] = src.sge(i * size, size);
        w[i] = {};
        w[i].wr_id = i;
        w[i].sg_list = &sg[i];
        w[i].num_sge = 1;
        w[i].opcode = IBV_WR_RDMA_WRITE;
        w[i].send_flags = i == kN - 1 ? IBV_SEND_SIGNALED : 0;
        w[i].wr.rdma.remote_addr = dst.addr(i * size);
        w[i].wr.rdma.rkey = dst.mr->rkey;
        w[i].next = i + 1 < kN ? &w[i + 1] : nullptr;
    }
    post_send(p.a.qp, w[0]);
    expect_wc(p.a.cq, "last WRITE (only one signaled)", kN - 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
    std::memcpy(dst.exp(), src.exp(), kN * size);
    dst.verify("written");
    for (int i = 0; i < kN; ++i) {
        sg[i] = back.sge(i * size, size);
        w[i].opcode = IBV_WR_RDMA_READ;
        w[i].send_flags = IBV_SEND_SIGNALED;
        w[i].wr.rdma.remote_addr = dst.addr(i * size);
        w[i].wr.rdma.rkey = dst.mr->rkey;
    }
    post_send(p.b.qp, w[0]);
    for (int i = 0; i < kN; ++i) expect_wc(p.b.cq, "READ back", i, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
    std::memcpy(back.exp(), src.exp(), kN * size);
    back.verify("read back");
    src.verify("source");
    expect_no_completion(p.a.cq, "a");
}

TEST_CASE("RC: atomics return the original value and update the remote one", "[verbs][rc][atomic]") {
    Device d;
    Pair p(d, IBV_QPT_RC);
    Buffer remote(d, 64), result(d, 64);
    auto remote_u64 = [&](std::size_t off) {
        std::uint64_t v;
        std::memcpy(&v, remote.data() + off, 8);
        return v;
    };
    auto set_remote = [&](std::size_t off, std::uint64_t v) {
        std::memcpy(remote.data() + off, &v, 8);
        std::memcpy(remote.exp(off), &v, 8);
    };
    auto atomic = [&](ibv_wr_opcode op, std::size_t roff, std::size_t loff, std::uint64_t cmp_add,
                      std::uint64_t swap, std::uint64_t id) {
        ibv_sge sg = result.sge(loff, 8);
        ibv_send_wr wr = send_wr(id, op, &sg);
        wr.wr.atomic.remote_addr = remote.addr(roff);
        wr.wr.atomic.rkey = remote.mr->rkey;
        wr.wr.atomic.compare_add = cmp_add;
        wr.wr.atomic.swap = swap;
        post_send(p.a.qp, wr);
        const ibv_wc wc = expect_wc(p.a.cq, "atomic", id, IBV_WC_SUCCESS,
                                    op == IBV_WR_ATOMIC_FETCH_AND_ADD ? IBV_WC_FETCH_ADD : IBV_WC_COMP_SWAP);
        CHECK(wc.qp_num == p.a.qpn());
    };
    auto returned = [&](std::size_t loff, std::uint64_t v) {
        std::memcpy(result.exp(loff), &v, 8);
        result.verify("atomic result buffer");
    };

    const std::uint64_t v0 = 0x0123456789abcdefULL;
    set_remote(8, v0);
    SECTION("FETCH_AND_ADD") {
        atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, 8, 16, 0x1111111111111111ULL, 0, 1);
        returned(16, v0);
        CHECK(remote_u64(8) == v0 + 0x1111111111111111ULL);
        std::uint64_t v1 = v0 + 0x1111111111111111ULL;
        std::memcpy(remote.exp(8), &v1, 8);
        // A carry across the whole word: wraps modulo 2^64.
        atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, 8, 24, ~0ULL, 0, 2);
        returned(24, v1);
        std::uint64_t v2 = v1 - 1;
        std::memcpy(remote.exp(8), &v2, 8);
        CHECK(remote_u64(8) == v2);
        remote.verify("remote after FETCH_AND_ADD");
    }
    SECTION("CMP_AND_SWAP hit and miss") {
        const std::uint64_t s = 0xfeedfacecafebeefULL;
        atomic(IBV_WR_ATOMIC_CMP_AND_SWP, 8, 32, v0, s, 3);  // hit
        returned(32, v0);
        std::memcpy(remote.exp(8), &s, 8);
        CHECK(remote_u64(8) == s);
        atomic(IBV_WR_ATOMIC_CMP_AND_SWP, 8, 40, v0, 0x42, 4);  // miss: the value is s now
        returned(40, s);
        CHECK(remote_u64(8) == s);
        remote.verify("remote after CMP_AND_SWAP");
    }
    SECTION("misaligned or short: EINVAL at posting, as rxe's validate_send_wr; the QP goes on") {
        for (const ibv_wr_opcode op : {IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_CMP_AND_SWP}) {
            for (const std::size_t roff : {9, 12, 15}) {
                CAPTURE(op, roff);
                ibv_sge sg = result.sge(16, 8);
                ibv_send_wr wr = send_wr(5, op, &sg);
                wr.wr.atomic.remote_addr = remote.addr(roff);
                wr.wr.atomic.rkey = remote.mr->rkey;
                ibv_send_wr* bad = nullptr;
                CHECK(ibv_post_send(p.a.qp, &wr, &bad) == EINVAL);
                CHECK(bad == &wr);
            }
            ibv_sge short_sg = result.sge(16, 4);
            ibv_send_wr wr = send_wr(6, op, &short_sg);
            wr.wr.atomic.remote_addr = remote.addr(8);
            wr.wr.atomic.rkey = remote.mr->rkey;
            ibv_send_wr* bad = nullptr;
            CHECK(ibv_post_send(p.a.qp, &wr, &bad) == EINVAL);
            CHECK(bad == &wr);
        }
        expect_no_completion(p.a.cq, "refused atomics");
        remote.verify("remote untouched by refused atomics");
        result.verify("result buffer untouched by refused atomics");
        // Nothing was posted, so the QP is still in RTS and executes the next.
        atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, 8, 16, 1, 0, 7);
        returned(16, v0);
        CHECK(remote_u64(8) == v0 + 1);
    }
    expect_no_completion(p.b.cq, "responder CQ");
}

// ATOMIC_WRITE (IBA 1.5's memory placement extensions; kernel rxe from 6.2,
// rdma-core 44's ibv_wr_atomic_write): 8 bytes placed at an 8-byte aligned
// address at once, completed as IBV_WC_ATOMIC_WRITE. FLUSH has no verb in
// rdma-core 44; the device offers its rights as rxe 6.12 does (hw-spec 6.3).
TEST_CASE("RC: ATOMIC_WRITE places 8 bytes, in order, through both posting APIs", "[verbs][rc][atomic_write]") {
    Device d;
    ibv_device_attr_ex ex{};
    REQUIRE(ibv_query_device_ex(d.ctx, nullptr, &ex) == 0);
    CHECK((ex.device_cap_flags_ex & (1ull << 40)) != 0);  // ATOMIC_WRITE
    CHECK((ex.device_cap_flags_ex & (3ull << 38)) == (3ull << 38));  // FLUSH_GLOBAL/PERSISTENT
    Pair p(d, IBV_QPT_RC);
    Buffer remote(d, 64), local(d, 64);
    std::mt19937 rng(40);
    remote.fill(0, 64, rng);
    auto put = [&](std::size_t off, std::uint64_t v) { std::memcpy(remote.exp(off), &v, 8); };

    // ibv_wr_atomic_write: the value is copied at the call.
    ibv_qp_ex* qx = ibv_qp_to_qp_ex(p.a.qp);
    REQUIRE(qx != nullptr);
    std::uint64_t v1 = 0x1122334455667788ULL;
    ibv_wr_start(qx);
    qx->wr_id = 1;
    qx->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_atomic_write(qx, remote.mr->rkey, remote.addr(8), &v1);
    v1 = 0;  // too late to change what goes out
    REQUIRE(ibv_wr_complete(qx) == 0);
    const ibv_wc wc = expect_wc(p.a.cq, "ibv_wr_atomic_write", 1, IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE);
    CHECK(wc.qp_num == p.a.qpn());
    put(8, 0x1122334455667788ULL);
    remote.verify("remote after ATOMIC_WRITE");

    // ibv_post_send with IBV_WR_ATOMIC_WRITE: the 8 bytes of its one SGE.
    const std::uint64_t v2 = 0xfeedfacecafebeefULL;
    std::memcpy(local.data(), &v2, 8);
    std::memcpy(local.exp(), &v2, 8);
    ibv_sge sg = local.sge(0, 8);
    ibv_send_wr wr = rdma_wr(2, IBV_WR_ATOMIC_WRITE, &sg, remote.addr(16), remote.mr->rkey);
    post_send(p.a.qp, wr);
    expect_wc(p.a.cq, "post_send ATOMIC_WRITE", 2, IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE);
    put(16, v2);
    remote.verify("remote after post_send ATOMIC_WRITE");

    // In order with the other operations of the QP: a WRITE, an
    // ATOMIC_WRITE over part of it, a FETCH_ADD that must see the
    // ATOMIC_WRITE's value, and a READ of the whole.
    std::uint8_t pattern[32];
    for (auto& b : pattern) b = static_cast<std::uint8_t>(rng());
    std::memcpy(local.data() + 32, pattern, 32);
    std::memcpy(local.exp(32), pattern, 32);
    const std::uint64_t v3 = 1000;
    ibv_wr_start(qx);
    qx->wr_id = 4;
    qx->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_rdma_write(qx, remote.mr->rkey, remote.addr(32));
    ibv_wr_set_sge(qx, local.mr->lkey, local.addr(32), 32);
    qx->wr_id = 5;
    ibv_wr_atomic_write(qx, remote.mr->rkey, remote.addr(40), &v3);
    qx->wr_id = 6;
    ibv_wr_atomic_fetch_add(qx, remote.mr->rkey, remote.addr(40), 5);
    ibv_wr_set_sge(qx, local.mr->lkey, local.addr(8), 8);
    REQUIRE(ibv_wr_complete(qx) == 0);
    expect_wc(p.a.cq, "WRITE", 4, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
    expect_wc(p.a.cq, "ATOMIC_WRITE after the WRITE", 5, IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE);
    expect_wc(p.a.cq, "FETCH_ADD after the ATOMIC_WRITE", 6, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD);
    std::memcpy(remote.exp(32), pattern, 32);
    put(40, v3 + 5);
    remote.verify("remote after WRITE, ATOMIC_WRITE, FETCH_ADD");
    std::memcpy(local.exp(8), &v3, 8);  // FETCH_ADD returned the ATOMIC_WRITE's value
    local.verify("FETCH_ADD result");
    expect_no_completion(p.b.cq, "responder CQ");
}

TEST_CASE("RC: ATOMIC_WRITE errors: misaligned, bad rkey, no remote write, bad length, not RC",
          "[verbs][rc][atomic_write][error]") {
    Device d;
    const std::uint64_t v = 0x0102030405060708ULL;
    auto one = [&](Pair& p, std::uint32_t rkey, std::uint64_t va) {
        ibv_qp_ex* qx = ibv_qp_to_qp_ex(p.a.qp);
        REQUIRE(qx != nullptr);
        ibv_wr_start(qx);
        qx->wr_id = 9;
        qx->wr_flags = IBV_SEND_SIGNALED;
        ibv_wr_atomic_write(qx, rkey, va, &v);
        REQUIRE(ibv_wr_complete(qx) == 0);
    };
    SECTION("misaligned address: remote invalid request, memory unchanged") {
        Pair p(d, IBV_QPT_RC);
        Buffer remote(d, 64);
        one(p, remote.mr->rkey, remote.addr(4));
        expect_wc(p.a.cq, "misaligned ATOMIC_WRITE", 9, IBV_WC_REM_INV_REQ_ERR, IBV_WC_ATOMIC_WRITE);
        remote.verify("remote after a misaligned ATOMIC_WRITE");
    }
    SECTION("bad rkey: remote access error") {
        Pair p(d, IBV_QPT_RC);
        Buffer remote(d, 64);
        one(p, remote.mr->rkey ^ 0x5a5a00, remote.addr(8));
        expect_wc(p.a.cq, "ATOMIC_WRITE with a bad rkey", 9, IBV_WC_REM_ACCESS_ERR, IBV_WC_ATOMIC_WRITE);
        remote.verify("remote after a bad rkey");
    }
    SECTION("MR without REMOTE_WRITE: remote access error") {
        Pair p(d, IBV_QPT_RC);
        Buffer remote(d, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
        one(p, remote.mr->rkey, remote.addr(8));
        expect_wc(p.a.cq, "ATOMIC_WRITE without REMOTE_WRITE", 9, IBV_WC_REM_ACCESS_ERR, IBV_WC_ATOMIC_WRITE);
        remote.verify("remote without REMOTE_WRITE");
    }
    SECTION("not 8 bytes: ibv_post_send refuses it") {
        Pair p(d, IBV_QPT_RC);
        Buffer remote(d, 64), local(d, 64);
        ibv_sge sg = local.sge(0, 4);
        ibv_send_wr wr = rdma_wr(9, IBV_WR_ATOMIC_WRITE, &sg, remote.addr(8), remote.mr->rkey);
        ibv_send_wr* bad = nullptr;
        CHECK(ibv_post_send(p.a.qp, &wr, &bad) == EINVAL);
        CHECK(bad == &wr);
        expect_no_completion(p.a.cq, "a refused WR");
    }
    SECTION("UD QP: refused at posting (RC only, as rxe's opcode table)") {
        Pair p(d, IBV_QPT_UD);  // in RTS: a SEND would be accepted
        ibv_qp_ex* qx = ibv_qp_to_qp_ex(p.a.qp);
        REQUIRE(qx != nullptr);
        ibv_wr_start(qx);
        qx->wr_id = 9;
        ibv_wr_atomic_write(qx, 0x1234, 0x1000, &v);
        CHECK(ibv_wr_complete(qx) == EINVAL);
        expect_no_completion(p.a.cq, "a refused WR");
    }
    SECTION("FLUSH rights: FLUSH_GLOBAL granted, FLUSH_PERSISTENT only by rereg") {
        std::vector<std::uint8_t> m(64);
        // IBV_ACCESS_FLUSH_GLOBAL / _PERSISTENT (1 << 8 / 1 << 9) in later
        // rdma-core releases; libibverbs 44 passes them through.
        ibv_mr* mr = ibv_reg_mr(d.pd, m.data(), m.size(), IBV_ACCESS_LOCAL_WRITE | (1 << 8));
        REQUIRE(mr != nullptr);
        // rxe_mr_init_user: persistence only over pmem pages, else EINVAL.
        errno = 0;
        ibv_mr* p = ibv_reg_mr(d.pd, m.data(), m.size(), IBV_ACCESS_LOCAL_WRITE | (1 << 9));
        CHECK(p == nullptr);
        CHECK(errno == EINVAL);
        if (p) ibv_dereg_mr(p);
        // rxe_rereg_user_mr stores the rights without that look.
        CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
                           IBV_ACCESS_LOCAL_WRITE | (1 << 8) | (1 << 9)) == 0);
        CHECK(ibv_dereg_mr(mr) == 0);
    }
}

TEST_CASE("RC: inline SEND is copied at post time", "[verbs][rc][inline]") {
    Device d;
    Pair p(d, IBV_QPT_RC, 7, 64);
    REQUIRE(p.a.max_inline >= 64);
    std::mt19937 rng(7);
    for (std::size_t size : {std::size_t(1), std::size_t(17), std::size_t(p.a.max_inline)}) {
        INFO("inline size " << size << " (max_inline_data " << p.a.max_inline << ")");
        Buffer dst(d, size + 16);
        ibv_sge rs = dst.sge(3, size + 13);
        post_recv(p.b.qp, rs, 77);
        // Not registered: the lkey is not used for inline data.
        std::vector<std::uint8_t> src(size);
        for (auto& c : src) c = static_cast<std::uint8_t>(rng());
        const std::vector<std::uint8_t> sent = src;
        ibv_sge sg{reinterpret_cast<std::uintptr_t>(src.data()), static_cast<std::uint32_t>(size), 0};
        ibv_send_wr wr{};
        wr.wr_id = 78;
        wr.sg_list = &sg;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
        post_send(p.a.qp, wr);
        std::fill(src.begin(), src.end(), 0xEE);  // the WR owns nothing once posted
        expect_wc(p.a.cq, "inline SEND", 78, IBV_WC_SUCCESS, IBV_WC_SEND);
        const ibv_wc rwc = expect_wc(p.b.cq, "inline RECV", 77, IBV_WC_SUCCESS, IBV_WC_RECV);
        CHECK(rwc.byte_len == size);
        std::memcpy(dst.exp(3), sent.data(), size);
        dst.verify("inline destination");
    }
    // Beyond max_inline_data, post_send refuses the WR.
    std::vector<std::uint8_t> big(p.a.max_inline + 1);
    ibv_sge sg{reinterpret_cast<std::uintptr_t>(big.data()), static_cast<std::uint32_t>(big.size()), 0};
    ibv_send_wr wr{};
    wr.sg_list = &sg;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
    ibv_send_wr* bad = nullptr;
    CHECK(ibv_post_send(p.a.qp, &wr, &bad) != 0);
    CHECK(bad == &wr);
    expect_no_completion(p.a.cq, "refused inline WR");
}

TEST_CASE("UD: SEND with and without immediate, GRH, src_qp", "[verbs][ud]") {
    Device d;
    Pair p(d, IBV_QPT_UD);
    ibv_ah_attr aa = p.a.av();
    ibv_ah* ah = ibv_create_ah(d.pd, &aa);
    REQUIRE(ah != nullptr);
    std::uint32_t seq = 0;
    for (bool with_imm : {false, true})
        for (std::size_t size : {std::size_t(0), std::size_t(1), std::size_t(3), std::size_t(d.mtu - 1),
                                 std::size_t(d.mtu)})
            for (int nsge : {1, 3}) {
                if (size == 0 && nsge != 1) continue;
                ++seq;
                INFO("UD " << (with_imm ? "SEND_WITH_IMM" : "SEND") << " size " << size << " with " << nsge
                           << " SGEs");
                std::mt19937 rng(seq);
                const int n = size == 0 ? 0 : nsge;
                const Layout ll = split(size, n, 11, 3);
                Buffer src(d, ll.span + 11);
                for (std::size_t i = 0; i < ll.off.size(); ++i) src.fill(ll.off[i], ll.len[i], rng);
                std::vector<std::uint8_t> msg;
                for (std::size_t i = 0; i < ll.off.size(); ++i)
                    msg.insert(msg.end(), src.exp(ll.off[i]), src.exp(ll.off[i]) + ll.len[i]);
                // Receive: the 40-byte GRH plus the payload over two SGEs.
                const std::size_t total = 40 + size;
                const Layout rl = split(total, 2, 9, 1);
                Buffer dst(d, rl.span + 21);
                ibv_sge rs[2] = {dst.sge(rl.off[0], rl.len[0]), dst.sge(rl.off[1], rl.len[1] + 12)};
                ibv_recv_wr rwr = recv_wr(1000 + seq, rs, 2);
                post_recv(p.b.qp, rwr);

                std::vector<ibv_sge> ls = sges(src, ll);
                ibv_send_wr wr = send_wr(2000 + seq, with_imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, ls.data(), n);
                wr.imm_data = htobe32(0xD00D0000u + seq);
                wr.wr.ud.ah = ah;
                wr.wr.ud.remote_qpn = p.b.qpn();
                wr.wr.ud.remote_qkey = 0x11111111;
                post_send(p.a.qp, wr);
                expect_wc(p.a.cq, "UD send", 2000 + seq, IBV_WC_SUCCESS, IBV_WC_SEND);
                const ibv_wc rwc = expect_wc(p.b.cq, "UD recv", 1000 + seq, IBV_WC_SUCCESS, IBV_WC_RECV);
                INFO(wc_str(rwc));
                CHECK(rwc.byte_len == total);
                CHECK(rwc.qp_num == p.b.qpn());
                CHECK(rwc.src_qp == p.a.qpn());
                CHECK((rwc.wc_flags & IBV_WC_GRH) != 0);
                if (with_imm) {
                    CHECK((rwc.wc_flags & IBV_WC_WITH_IMM) != 0);
                    CHECK(rwc.imm_data == wr.imm_data);
                } else {
                    CHECK((rwc.wc_flags & IBV_WC_WITH_IMM) == 0);
                }
                // The GRH area: for RoCE v2 over IPv4, 20 zero bytes then the
                // IPv4 header (as rxe writes it); its bytes are taken as read.
                std::vector<std::uint8_t> grh(40);
                std::vector<std::uint8_t> got;
                for (int i = 0; i < 2; ++i)
                    got.insert(got.end(), dst.data() + rl.off[i], dst.data() + rl.off[i] + rl.len[i]);
                std::copy(got.begin(), got.begin() + 40, grh.begin());
                CHECK((grh[20] >> 4) == 4);                              // IPv4 version
                CHECK(std::memcmp(grh.data() + 20 + 12, d.gid.raw + 12, 4) == 0);  // src address
                CHECK(std::memcmp(grh.data() + 20 + 16, d.gid.raw + 12, 4) == 0);  // dst address
                std::vector<std::uint8_t> image = grh;
                image.insert(image.end(), msg.begin(), msg.end());
                std::size_t at = 0;
                for (int i = 0; i < 2; ++i) {
                    std::memcpy(dst.exp(rl.off[i]), image.data() + at, rl.len[i]);
                    at += rl.len[i];
                }
                dst.verify("UD destination");
                src.verify("UD source");
            }
    expect_no_completion(p.a.cq, "a");
    expect_no_completion(p.b.cq, "b");
    CHECK(ibv_destroy_ah(ah) == 0);
}

TEST_CASE("RC: WRITE with a bad rkey: remote access error, then flush", "[verbs][rc][error]") {
    Device d;
    Pair p(d, IBV_QPT_RC);
    drain_async(d.ctx, 50);  // COMM_EST and the like from the connection
    Buffer src(d, 4096), dst(d, 4096);
    std::mt19937 rng(5);
    src.fill(0, 4096, rng);
    ibv_sge sg = src.sge(0, 4096);
    ibv_send_wr wr = rdma_wr(1, IBV_WR_RDMA_WRITE, &sg, dst.addr(), dst.mr->rkey ^ 0x5a5a00);
    post_send(p.a.qp, wr);
    expect_wc(p.a.cq, "bad rkey WRITE", 1, IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE);
    dst.verify("WRITE target with a bad rkey");
    // The requester is in ERR: later WRs flush.
    const auto end = Clock::now() + kCompletionDeadline;
    while (p.a.state() != IBV_QPS_ERR && Clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    CHECK(p.a.state() == IBV_QPS_ERR);
    wr.wr.rdma.rkey = dst.mr->rkey;
    for (std::uint64_t id : {2, 3}) {
        wr.wr_id = id;
        post_send(p.a.qp, wr);
        expect_wc(p.a.cq, "WR after the error", id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RDMA_WRITE);
    }
    // A receive posted to a QP in ERR flushes too.
    ibv_sge rs = dst.sge(0, 16);
    post_recv(p.a.qp, rs, 4);
    expect_wc(p.a.cq, "RECV in ERR", 4, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV);
    dst.verify("WRITE target after flushed WRs");
    src.verify("source");
    // An async event, if the device raises one, names one of our QPs.
    for (const ibv_async_event& ev : drain_async(d.ctx, 300)) {
        INFO("async event " << ibv_event_type_str(ev.event_type));
        REQUIRE(is_qp_event(ev.event_type));
        CHECK((ev.element.qp == p.a.qp || ev.element.qp == p.b.qp));
        // The responder detected the access violation: IB's "local access
        // violation work queue error" is the one event it may raise.
        if (ev.element.qp == p.b.qp) CHECK(ev.event_type == IBV_EVENT_QP_ACCESS_ERR);
        WARN("async event after the remote access error: " << ibv_event_type_str(ev.event_type)
                                                           << (ev.element.qp == p.a.qp ? " (requester)" : " (responder)"));
    }
}

TEST_CASE("RC: READ outside the remote MR: remote access error", "[verbs][rc][error]") {
    Device d;
    Pair p(d, IBV_QPT_RC);
    Buffer local(d, 64), remote(d, 4096);
    std::mt19937 rng(6);
    remote.fill(0, 4096, rng);
    ibv_sge sg = local.sge(0, 32);
    // 16 bytes in, 16 beyond the end.
    ibv_send_wr wr = rdma_wr(9, IBV_WR_RDMA_READ, &sg, remote.addr(4096 - 16), remote.mr->rkey);
    post_send(p.a.qp, wr);
    expect_wc(p.a.cq, "READ across the MR's end", 9, IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_READ);
    local.verify("READ destination");
    remote.verify("READ source");
}

TEST_CASE("RC: SEND with no receive posted and rnr_retry 0: RNR_RETRY_EXC", "[verbs][rc][rnr]") {
    Device d;
    Pair p(d, IBV_QPT_RC, 0);
    Buffer src(d, 100), dst(d, 100);
    std::mt19937 rng(8);
    src.fill(0, 100, rng);
    ibv_sge sg = src.sge(0, 100);
    ibv_send_wr wr = send_wr(5, IBV_WR_SEND, &sg);
    post_send(p.a.qp, wr);
    expect_wc(p.a.cq, "SEND without a receive", 5, IBV_WC_RNR_RETRY_EXC_ERR, IBV_WC_SEND);
    expect_no_completion(p.b.cq, "responder");
    dst.verify("no receive buffer was touched");
}

TEST_CASE("RC: SEND with rnr_retry 7 succeeds once a receive is posted 50 ms later", "[verbs][rc][rnr]") {
    Device d;
    Pair p(d, IBV_QPT_RC, 7);
    const std::size_t size = 2 * d.mtu + 1;
    Buffer src(d, size), dst(d, size + 8);
    std::mt19937 rng(9);
    src.fill(0, size, rng);
    ibv_sge sg = src.sge(0, size);
    ibv_send_wr wr = send_wr(6, IBV_WR_SEND_WITH_IMM, &sg);
    wr.imm_data = htobe32(0x12345678);
    post_send(p.a.qp, wr);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ibv_wc wc{};
    REQUIRE(ibv_poll_cq(p.a.cq, 1, &wc) == 0);  // still retrying
    ibv_sge rs = dst.sge(4, size + 4);
    post_recv(p.b.qp, rs, 7);
    expect_wc(p.a.cq, "SEND after RNR", 6, IBV_WC_SUCCESS, IBV_WC_SEND);
    const ibv_wc rwc = expect_wc(p.b.cq, "RECV after RNR", 7, IBV_WC_SUCCESS, IBV_WC_RECV);
    CHECK(rwc.byte_len == size);
    CHECK((rwc.wc_flags & IBV_WC_WITH_IMM) != 0);
    CHECK(rwc.imm_data == wr.imm_data);
    std::memcpy(dst.exp(4), src.exp(), size);
    dst.verify("destination after RNR retries");
    CHECK(p.a.state() == IBV_QPS_RTS);
}

// CPU time of the calling thread.
double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// While it lives, the calling thread may run on one CPU only, and another
// thread spins: more threads are runnable than the caller has CPUs, which
// is how the driver tells that its spinning would take a core from someone
// (/proc/loadavg). The spinner runs on another CPU where there is one, so
// that the caller's own spinning, were it to spin, would cost it a whole
// CPU (on the same CPU its yields would hand most of it to the spinner).
class CpusTaken {
public:
    CpusTaken() {
        REQUIRE(pthread_getaffinity_np(pthread_self(), sizeof saved_, &saved_) == 0);
        const int cpu = sched_getcpu();
        REQUIRE(cpu >= 0);
        CPU_ZERO(&mine_);
        CPU_SET(cpu, &mine_);
        CPU_ZERO(&spin_);
        for (int c = 0; c < CPU_SETSIZE && CPU_COUNT(&spin_) == 0; ++c)
            if (c != cpu && CPU_ISSET(c, &saved_)) CPU_SET(c, &spin_);
        if (CPU_COUNT(&spin_) == 0) CPU_SET(cpu, &spin_);
        REQUIRE(pthread_setaffinity_np(pthread_self(), sizeof mine_, &mine_) == 0);
        spinner_ = std::thread([this] {
            pthread_setaffinity_np(pthread_self(), sizeof spin_, &spin_);
            while (!stop_.load(std::memory_order_relaxed)) {
            }
        });
    }
    ~CpusTaken() {
        stop_ = true;
        spinner_.join();
        pthread_setaffinity_np(pthread_self(), sizeof saved_, &saved_);
    }

private:
    cpu_set_t saved_{}, mine_{}, spin_{};
    std::atomic<bool> stop_{false};
    std::thread spinner_;
};

namespace {

// A receive whose SEND another thread posts 50 ms after this one starts
// polling: the CQE must be seen, and the polling must have cost far less
// CPU than the wait took (the driver may spin for up to 10 ms at first,
// while its last look at the CPUs' load is that old).
void napping_poll_sees_late_completion(Device& d) {
    Pair p(d, IBV_QPT_RC, 7);
    const std::size_t size = 1000;
    Buffer src(d, size), dst(d, size);
    std::mt19937 rng(11);
    src.fill(0, size, rng);
    ibv_sge rs = dst.sge(0, size);
    post_recv(p.b.qp, rs, 21);
    ibv_sge sg = src.sge(0, size);
    ibv_send_wr wr = send_wr(20, IBV_WR_SEND, &sg);
    std::thread sender([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        ibv_send_wr* bad = nullptr;
        (void)ibv_post_send(p.a.qp, &wr, &bad);
    });
    const double cpu0 = thread_cpu_seconds();
    const auto t0 = Clock::now();
    ibv_wc wc{};
    int n = 0;
    while (n == 0 && Clock::now() - t0 < kCompletionDeadline) n = ibv_poll_cq(p.b.cq, 1, &wc);
    const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    const double cpu = thread_cpu_seconds() - cpu0;
    sender.join();
    REQUIRE(n == 1);
    CHECK(wc.wr_id == 21);
    CHECK(wc.status == IBV_WC_SUCCESS);
    CHECK(wc.byte_len == size);
    std::memcpy(dst.exp(0), src.exp(), size);
    dst.verify("destination after a napping poll");
    expect_wc(p.a.cq, "SEND", 20, IBV_WC_SUCCESS, IBV_WC_SEND);
    INFO("polled " << wall * 1e3 << " ms for " << cpu * 1e3 << " ms of CPU");
    CHECK(wall >= 0.04);
    CHECK(cpu < 0.2 * wall);
}

}  // namespace

TEST_CASE("poll_cq waiting long for a completion naps instead of spinning, and still sees it", "[verbs][poll]") {
    // The driver sleeps once its context's CQs have been empty for 100 us
    // while every CPU it may run on is taken (hw-spec 3.5), and is woken by
    // the CQE. Here it may run on one CPU while another thread spins.
    Device d;
    CpusTaken taken;
    napping_poll_sees_late_completion(d);
}

// SIMNIC_POLL_NAP=1 (app.poll_nap_always runs this, hidden from the other
// runs): the driver naps whatever the load, with cores to spare too. Without
// the variable it would spin here on a quiet machine, and fail.
TEST_CASE("SIMNIC_POLL_NAP=1: poll_cq naps with a core to spare too, and still sees the completion",
          "[.][nap_always]") {
    const char* v = std::getenv("SIMNIC_POLL_NAP");
    REQUIRE(v != nullptr);
    REQUIRE(std::string(v) == "1");
    Device d;
    napping_poll_sees_late_completion(d);
}

TEST_CASE("QP state errors", "[verbs][qp]") {
    Device d;
    Qp q(d, IBV_QPT_RC);
    REQUIRE(q.state() == IBV_QPS_RESET);
    SECTION("RESET to RTS is not a legal transition") {
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_RTS;
        a.sq_psn = 0;
        a.timeout = 14;
        a.retry_cnt = 7;
        a.rnr_retry = 7;
        a.max_rd_atomic = 1;
        CHECK(ibv_modify_qp(q.qp, &a,
                            IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                IBV_QP_MAX_QP_RD_ATOMIC) == EINVAL);
        CHECK(q.state() == IBV_QPS_RESET);
    }
    SECTION("INIT to RTR without the required attributes") {
        q.to_init();
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_RTR;
        CHECK(ibv_modify_qp(q.qp, &a, IBV_QP_STATE) == EINVAL);
        // All but one required attribute (the AV) is still not enough.
        a.path_mtu = d.port.active_mtu;
        a.dest_qp_num = q.qpn();
        a.rq_psn = 0;
        a.max_dest_rd_atomic = 1;
        a.min_rnr_timer = 1;
        CHECK(ibv_modify_qp(q.qp, &a,
                            IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) == EINVAL);
        CHECK(q.state() == IBV_QPS_INIT);
        // A CUR_STATE that is not the current state.
        a.qp_state = IBV_QPS_INIT;
        a.cur_qp_state = IBV_QPS_RTS;
        CHECK(ibv_modify_qp(q.qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE) == EINVAL);
        CHECK(q.state() == IBV_QPS_INIT);
    }
    SECTION("post_send on a QP in RESET is an immediate error") {
        // IB spec (QP states, Reset): WRs posted to the send queue are an
        // immediate error; rxe's post_send returns EINVAL below RTS.
        Buffer b(d, 64);
        ibv_sge sg = b.sge(0, 64);
        ibv_send_wr wr = send_wr(11, IBV_WR_SEND, &sg);
        ibv_send_wr* bad = nullptr;
        CHECK(ibv_post_send(q.qp, &wr, &bad) == EINVAL);
        CHECK(bad == &wr);
        expect_no_completion(q.cq, "post_send in RESET");
        b.verify("buffer");
    }
}

TEST_CASE("modify_qp and post_recv answer as rxe: no STATE, wide values, RESET", "[verbs][qp]") {
    Device d;
    Qp q(d, IBV_QPT_RC);
    SECTION("post_recv on a QP in RESET is an immediate error") {
        // rdma-core's rxe_post_recv (IBA C10-97.2.1): EINVAL, nothing queued.
        Buffer b(d, 64);
        ibv_sge sg = b.sge(0, 64);
        ibv_recv_wr wr{};
        wr.wr_id = 12;
        wr.sg_list = &sg;
        wr.num_sge = 1;
        ibv_recv_wr* bad = nullptr;
        CHECK(ibv_post_recv(q.qp, &wr, &bad) == EINVAL);
        q.to_init();
        CHECK(ibv_post_recv(q.qp, &wr, &bad) == 0);
    }
    SECTION("no IBV_QP_STATE in the mask: the current state to itself") {
        // ib_modify_qp_is_ok: INIT->INIT takes ACCESS_FLAGS; RTR->RTR is not
        // in IBA's table.
        q.to_init();
        ibv_qp_attr a{};
        a.qp_access_flags = IBV_ACCESS_REMOTE_READ;
        CHECK(ibv_modify_qp(q.qp, &a, IBV_QP_ACCESS_FLAGS) == 0);
        ibv_qp_attr qa{};
        ibv_qp_init_attr ia{};
        REQUIRE(ibv_query_qp(q.qp, &qa, IBV_QP_ACCESS_FLAGS, &ia) == 0);
        CHECK(qa.qp_state == IBV_QPS_INIT);
        CHECK(qa.qp_access_flags == IBV_ACCESS_REMOTE_READ);
        q.to_rtr(q.qpn(), 0);
        a.min_rnr_timer = 3;
        CHECK(ibv_modify_qp(q.qp, &a, IBV_QP_MIN_RNR_TIMER) == EINVAL);
        CHECK(q.state() == IBV_QPS_RTR);
    }
    SECTION("timeout above 31 is EINVAL; PSNs keep their low 24 bits") {
        q.to_init();
        q.to_rtr(q.qpn(), 0x1000042);  // rxe: rq_psn & BTH_PSN_MASK
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_RTS;
        a.sq_psn = 0xff000123;
        a.timeout = 32;
        a.retry_cnt = 7;
        a.rnr_retry = 7;
        a.max_rd_atomic = 1;
        const int mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                         IBV_QP_MAX_QP_RD_ATOMIC;
        CHECK(ibv_modify_qp(q.qp, &a, mask) == EINVAL);
        CHECK(q.state() == IBV_QPS_RTR);
        a.timeout = 31;
        REQUIRE(ibv_modify_qp(q.qp, &a, mask) == 0);
        ibv_qp_attr qa{};
        ibv_qp_init_attr ia{};
        REQUIRE(ibv_query_qp(q.qp, &qa, IBV_QP_SQ_PSN | IBV_QP_RQ_PSN | IBV_QP_TIMEOUT, &ia) == 0);
        CHECK(qa.qp_state == IBV_QPS_RTS);
        CHECK(qa.timeout == 31);
        CHECK(qa.sq_psn == 0x123);
        CHECK(qa.rq_psn == 0x42);
    }
    SECTION("reg_mr_iova: the IOVA at another page offset than the address is EINVAL") {
        // ib_uverbs_reg_mr's rule, before any driver.
        const auto page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
        std::vector<std::uint8_t> m(3 * page);
        const std::uint64_t off = reinterpret_cast<std::uintptr_t>(m.data()) % page;
        errno = 0;
        CHECK(ibv_reg_mr_iova(d.pd, m.data(), 64, (std::uint64_t{1} << 40) + (off + 8) % page,
                              IBV_ACCESS_LOCAL_WRITE) == nullptr);
        CHECK(errno == EINVAL);
        ibv_mr* mr = ibv_reg_mr_iova(d.pd, m.data(), 64, (std::uint64_t{1} << 40) + off,
                                     IBV_ACCESS_LOCAL_WRITE);
        REQUIRE(mr != nullptr);
        CHECK(ibv_dereg_mr(mr) == 0);
    }
}

TEST_CASE("QP in RESET then connected: no stale WQE is executed", "[verbs][qp]") {
    // Whatever post_send in RESET did, once the QP is connected a new WR
    // completes alone, with its own wr_id.
    Device d;
    Qp a(d, IBV_QPT_RC), b(d, IBV_QPT_RC);
    Buffer src(d, 64), dst(d, 64);
    std::mt19937 rng(12);
    src.fill(0, 64, rng);
    ibv_sge sg = src.sge(0, 64);
    ibv_send_wr wr = rdma_wr(1, IBV_WR_RDMA_WRITE, &sg, dst.addr(), dst.mr->rkey);
    ibv_send_wr* bad = nullptr;
    (void)ibv_post_send(a.qp, &wr, &bad);  // in RESET
    connect(a, b, 0, 0);
    wr.wr_id = 2;
    sg.length = 32;
    post_send(a.qp, wr);
    expect_wc(a.cq, "first WR after connecting", 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
    expect_no_completion(a.cq, "a");
    std::memcpy(dst.exp(), src.exp(), 32);
    dst.verify("destination");
}

TEST_CASE("completion channel wakes up for a SEND completion", "[verbs][events]") {
    Device d;
    ibv_comp_channel* ch = ibv_create_comp_channel(d.ctx);
    REQUIRE(ch != nullptr);
    {
        Qp a(d, IBV_QPT_RC, ch), b(d, IBV_QPT_RC);
        connect(a, b, 0, 0);
        REQUIRE(ibv_req_notify_cq(a.cq, 0) == 0);
        pollfd pfd{ch->fd, POLLIN, 0};
        CHECK(poll(&pfd, 1, 0) == 0);  // nothing yet
        Buffer src(d, 1000), dst(d, 1000);
        std::mt19937 rng(10);
        src.fill(0, 1000, rng);
        ibv_sge rs = dst.sge(0, 1000);
        post_recv(b.qp, rs, 1);
        ibv_sge sg = src.sge(0, 1000);
        ibv_send_wr wr = send_wr(2, IBV_WR_SEND, &sg);
        post_send(a.qp, wr);
        CHECK(wait_cq_event(ch) == a.cq);
        expect_wc(a.cq, "SEND after the event", 2, IBV_WC_SUCCESS, IBV_WC_SEND);
        expect_wc(b.cq, "RECV", 1, IBV_WC_SUCCESS, IBV_WC_RECV);
        std::memcpy(dst.exp(), src.exp(), 1000);
        dst.verify("destination");
        // Not re-armed: a second completion raises no event.
        post_recv(b.qp, rs, 1);
        post_send(a.qp, wr);
        expect_wc(a.cq, "second SEND", 2, IBV_WC_SUCCESS, IBV_WC_SEND);
        expect_wc(b.cq, "second RECV", 1, IBV_WC_SUCCESS, IBV_WC_RECV);
        CHECK(poll(&pfd, 1, 50) == 0);
    }
    CHECK(ibv_destroy_comp_channel(ch) == 0);
}

TEST_CASE("async event when a QP is moved to ERR", "[verbs][events]") {
    Device d;
    Pair p(d, IBV_QPT_RC);
    drain_async(d.ctx, 50);
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_ERR;
    REQUIRE(ibv_modify_qp(p.a.qp, &a, IBV_QP_STATE) == 0);
    CHECK(p.a.state() == IBV_QPS_ERR);
    // A modify to ERR by the consumer raises no affiliated error event (the
    // spec's events are for errors the device detects); whatever the device
    // does raise must name our QP and be acknowledgeable.
    for (const ibv_async_event& ev : drain_async(d.ctx, 200)) {
        INFO("async event " << ibv_event_type_str(ev.event_type));
        CHECK(is_qp_event(ev.event_type));
        WARN("async event after modify to ERR: " << ibv_event_type_str(ev.event_type));
    }
    // Posting now flushes.
    Buffer b(d, 16);
    ibv_sge sg = b.sge(0, 16);
    ibv_send_wr wr = send_wr(3, IBV_WR_SEND, &sg);
    post_send(p.a.qp, wr);
    expect_wc(p.a.cq, "SEND in ERR", 3, IBV_WC_WR_FLUSH_ERR, IBV_WC_SEND);
}

TEST_CASE("SQ_DRAINED after RTS->SQD with en_sqd_async_notify, once the outstanding SEND is acknowledged",
          "[verbs][events][sqd]") {
    Device d;
    Pair p(d, IBV_QPT_RC, 7);  // rnr_retry 7: a SEND without a receive waits for one
    drain_async(d.ctx, 50);
    const std::size_t size = 2 * d.mtu + 5;
    Buffer src(d, 2 * size), dst(d, 2 * size);
    std::mt19937 rng(21);
    src.fill(0, 2 * size, rng);
    ibv_sge sg1 = src.sge(0, size), sg2 = src.sge(size, size);
    ibv_send_wr wr1 = send_wr(1, IBV_WR_SEND, &sg1), wr2 = send_wr(2, IBV_WR_SEND, &sg2);
    // No receive yet: the SEND draws RNR NAKs and stays unacknowledged.
    post_send(p.a.qp, wr1);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    expect_no_completion(p.a.cq, "SEND waiting for a receive", 0);

    ibv_qp_attr sqd{};
    sqd.qp_state = IBV_QPS_SQD;
    sqd.en_sqd_async_notify = 1;
    REQUIRE(ibv_modify_qp(p.a.qp, &sqd, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY) == 0);
    ibv_qp_attr q = query_qp(p.a.qp);
    CHECK(q.qp_state == IBV_QPS_SQD);
    CHECK(q.en_sqd_async_notify == 1);
    CHECK(q.sq_draining == 1);
    // Leaving SQD is refused while the drain runs.
    ibv_qp_attr rts{};
    rts.qp_state = IBV_QPS_RTS;
    CHECK(ibv_modify_qp(p.a.qp, &rts, IBV_QP_STATE) == EINVAL);
    // A WR posted in SQD is queued, not started.
    post_send(p.a.qp, wr2);
    for (const ibv_async_event& ev : drain_async(d.ctx, 100)) {
        INFO("async event " << ibv_event_type_str(ev.event_type));
        CHECK(ev.event_type != IBV_EVENT_SQ_DRAINED);  // the SEND is still outstanding
    }
    CHECK(query_qp(p.a.qp).sq_draining == 1);

    // The receive arrives: the SEND is acknowledged, and the drain is over.
    ibv_sge rs1 = dst.sge(0, size), rs2 = dst.sge(size, size);
    post_recv(p.b.qp, rs1, 11);
    post_recv(p.b.qp, rs2, 12);
    const auto evs = wait_async(d.ctx, IBV_EVENT_SQ_DRAINED, 5000);
    REQUIRE(!evs.empty());
    REQUIRE(evs.back().event_type == IBV_EVENT_SQ_DRAINED);
    CHECK(evs.back().element.qp == p.a.qp);
    // The drained SEND's completion is there when the event is.
    ibv_wc wc{};
    REQUIRE(ibv_poll_cq(p.a.cq, 1, &wc) == 1);
    INFO(wc_str(wc));
    CHECK(wc.wr_id == 1);
    CHECK(wc.status == IBV_WC_SUCCESS);
    // Once.
    for (const ibv_async_event& ev : drain_async(d.ctx, 100)) CHECK(ev.event_type != IBV_EVENT_SQ_DRAINED);
    q = query_qp(p.a.qp);
    CHECK(q.qp_state == IBV_QPS_SQD);
    CHECK(q.sq_draining == 0);
    expect_wc(p.b.cq, "RECV of the drained SEND", 11, IBV_WC_SUCCESS, IBV_WC_RECV);
    expect_no_completion(p.a.cq, "WR posted in SQD", 50);
    expect_no_completion(p.b.cq, "nothing sent in SQD", 0);

    // Back to RTS: the queued WR goes, and raises no event.
    REQUIRE(ibv_modify_qp(p.a.qp, &rts, IBV_QP_STATE) == 0);
    expect_wc(p.a.cq, "WR posted in SQD, after RTS", 2, IBV_WC_SUCCESS, IBV_WC_SEND);
    expect_wc(p.b.cq, "its RECV", 12, IBV_WC_SUCCESS, IBV_WC_RECV);
    std::memcpy(dst.exp(), src.exp(), 2 * size);
    dst.verify("received");
    src.verify("source");
    CHECK(p.a.state() == IBV_QPS_RTS);
    CHECK(count_events(drain_async(d.ctx, 50), IBV_EVENT_SQ_DRAINED) == 0);
}

TEST_CASE("no SQ_DRAINED after RTS->SQD without en_sqd_async_notify", "[verbs][events][sqd]") {
    Device d;
    Pair p(d, IBV_QPT_RC);
    drain_async(d.ctx, 50);
    const std::size_t size = 8 * d.mtu;
    Buffer src(d, size), dst(d, size);
    std::mt19937 rng(22);
    src.fill(0, size, rng);
    ibv_sge sg = src.sge(0, size);
    ibv_send_wr wr = rdma_wr(1, IBV_WR_RDMA_WRITE, &sg, dst.addr(), dst.mr->rkey);
    post_send(p.a.qp, wr);
    // The modify may find the WRITE started (it drains) or not yet fetched
    // (it waits in the SQ for RTS): either way the drain ends, silently.
    ibv_qp_attr sqd{};
    sqd.qp_state = IBV_QPS_SQD;
    REQUIRE(ibv_modify_qp(p.a.qp, &sqd, IBV_QP_STATE) == 0);
    const auto end = Clock::now() + kCompletionDeadline;
    while (query_qp(p.a.qp).sq_draining && Clock::now() < end)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const ibv_qp_attr q = query_qp(p.a.qp);
    CHECK(q.qp_state == IBV_QPS_SQD);
    CHECK(q.sq_draining == 0);
    CHECK(q.en_sqd_async_notify == 0);
    for (const ibv_async_event& ev : drain_async(d.ctx, 200)) {
        INFO("async event " << ibv_event_type_str(ev.event_type));
        CHECK(ev.event_type != IBV_EVENT_SQ_DRAINED);
    }
    ibv_qp_attr rts{};
    rts.qp_state = IBV_QPS_RTS;
    REQUIRE(ibv_modify_qp(p.a.qp, &rts, IBV_QP_STATE) == 0);
    CHECK(p.a.state() == IBV_QPS_RTS);
    expect_wc(p.a.cq, "WRITE", 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
    std::memcpy(dst.exp(), src.exp(), size);
    dst.verify("written");
    CHECK(count_events(drain_async(d.ctx, 50), IBV_EVENT_SQ_DRAINED) == 0);
}

TEST_CASE("QP_LAST_WQE_REACHED when a QP on an SRQ is moved to ERR", "[verbs][events][srq]") {
    Device d;
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = 16;
    sa.attr.max_sge = 1;
    ibv_srq* srq = ibv_create_srq(d.pd, &sa);
    REQUIRE(srq != nullptr);
    {
        Buffer src(d, 256), dst(d, 4 * 256);
        std::mt19937 rng(23);
        src.fill(0, 256, rng);
        ibv_sge rs[4];
        for (int i = 0; i < 4; ++i) {
            rs[i] = dst.sge(static_cast<std::size_t>(i) * 256, 256);
            ibv_recv_wr r = recv_wr(20 + static_cast<std::uint64_t>(i), &rs[i]);
            ibv_recv_wr* bad = nullptr;
            REQUIRE(ibv_post_srq_recv(srq, &r, &bad) == 0);
        }
        ibv_sge sg = src.sge(0, 100);
        ibv_send_wr wr = send_wr(1, IBV_WR_SEND, &sg);

        Qp a(d, IBV_QPT_RC), b(d, IBV_QPT_RC, nullptr, 0, srq);
        connect(a, b, 0x200, 0x100);
        post_send(a.qp, wr);
        expect_wc(a.cq, "SEND to the SRQ QP", 1, IBV_WC_SUCCESS, IBV_WC_SEND);
        expect_wc(b.cq, "RECV from the SRQ", 20, IBV_WC_SUCCESS, IBV_WC_RECV);
        drain_async(d.ctx, 50);

        ibv_qp_attr err{};
        err.qp_state = IBV_QPS_ERR;
        REQUIRE(ibv_modify_qp(b.qp, &err, IBV_QP_STATE) == 0);
        const auto evs = wait_async(d.ctx, IBV_EVENT_QP_LAST_WQE_REACHED, 5000);
        REQUIRE(!evs.empty());
        REQUIRE(evs.back().event_type == IBV_EVENT_QP_LAST_WQE_REACHED);
        CHECK(evs.back().element.qp == b.qp);
        // Once; and the SRQ's WQEs are not flushed: they belong to the SRQ.
        CHECK(count_events(drain_async(d.ctx, 100), IBV_EVENT_QP_LAST_WQE_REACHED) == 0);
        expect_no_completion(b.cq, "SRQ WQEs after the QP went to ERR", 50);

        // A QP without an SRQ raises no such event.
        REQUIRE(ibv_modify_qp(a.qp, &err, IBV_QP_STATE) == 0);
        CHECK(a.state() == IBV_QPS_ERR);
        CHECK(count_events(drain_async(d.ctx, 100), IBV_EVENT_QP_LAST_WQE_REACHED) == 0);

        // The SRQ's next WQE serves another QP.
        Qp a2(d, IBV_QPT_RC), c(d, IBV_QPT_RC, nullptr, 0, srq);
        connect(a2, c, 0x200, 0x100);
        wr.wr_id = 2;
        post_send(a2.qp, wr);
        expect_wc(a2.cq, "SEND to the second SRQ QP", 2, IBV_WC_SUCCESS, IBV_WC_SEND);
        const ibv_wc rwc = expect_wc(c.cq, "RECV from the SRQ, next WQE", 21, IBV_WC_SUCCESS, IBV_WC_RECV);
        CHECK(rwc.byte_len == 100);
        std::memcpy(dst.exp(0), src.exp(), 100);
        std::memcpy(dst.exp(256), src.exp(), 100);
        dst.verify("SRQ buffers");
        drain_async(d.ctx, 20);
    }
    CHECK(ibv_destroy_srq(srq) == 0);
}

// IBV_EVENT_SRQ_LIMIT_REACHED (IBA 10.2.9.2; rxe's responder after it takes an
// SRQ WQE): armed by ibv_modify_srq(IBV_SRQ_LIMIT), raised once when a WQE is
// taken and fewer than srq_limit are left, which disarms the limit
// (ibv_query_srq reads 0 from then on).
TEST_CASE("SRQ_LIMIT_REACHED once fewer WQEs than srq_limit are left, then disarmed", "[verbs][events][srq]") {
    Device d;
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = 16;
    sa.attr.max_sge = 1;
    ibv_srq* srq = ibv_create_srq(d.pd, &sa);
    REQUIRE(srq != nullptr);
    {
        Buffer src(d, 64), dst(d, 4 * 64);
        std::mt19937 rng(29);
        src.fill(0, 64, rng);
        ibv_sge rs[4];
        for (int i = 0; i < 4; ++i) {
            rs[i] = dst.sge(static_cast<std::size_t>(i) * 64, 64);
            ibv_recv_wr r = recv_wr(40 + static_cast<std::uint64_t>(i), &rs[i]);
            ibv_recv_wr* bad = nullptr;
            REQUIRE(ibv_post_srq_recv(srq, &r, &bad) == 0);
        }
        ibv_srq_attr lim{};
        lim.srq_limit = 3;
        REQUIRE(ibv_modify_srq(srq, &lim, IBV_SRQ_LIMIT) == 0);
        ibv_srq_attr q{};
        REQUIRE(ibv_query_srq(srq, &q) == 0);
        CHECK(q.srq_limit == 3);

        Qp a(d, IBV_QPT_RC), b(d, IBV_QPT_RC, nullptr, 0, srq);
        connect(a, b, 0x300, 0x400);
        drain_async(d.ctx, 20);
        ibv_sge sg = src.sge(0, 64);
        auto send_one = [&](std::uint64_t id, std::uint64_t recv_id) {
            ibv_send_wr wr = send_wr(id, IBV_WR_SEND, &sg);
            post_send(a.qp, wr);
            expect_wc(a.cq, "SEND to the SRQ QP", id, IBV_WC_SUCCESS, IBV_WC_SEND);
            expect_wc(b.cq, "RECV from the SRQ", recv_id, IBV_WC_SUCCESS, IBV_WC_RECV);
        };
        // 4 WQEs, one taken: 3 left, not fewer than the limit.
        send_one(1, 40);
        CHECK(count_events(drain_async(d.ctx, 100), IBV_EVENT_SRQ_LIMIT_REACHED) == 0);
        // 2 left: the event, naming this SRQ, and the limit disarmed.
        send_one(2, 41);
        const auto evs = wait_async(d.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, 5000);
        REQUIRE(!evs.empty());
        REQUIRE(evs.back().event_type == IBV_EVENT_SRQ_LIMIT_REACHED);
        CHECK(evs.back().element.srq == srq);
        REQUIRE(ibv_query_srq(srq, &q) == 0);
        CHECK(q.srq_limit == 0);
        // Disarmed: 1 left raises nothing.
        send_one(3, 42);
        CHECK(count_events(drain_async(d.ctx, 100), IBV_EVENT_SRQ_LIMIT_REACHED) == 0);
        for (std::size_t i = 0; i < 3; ++i) std::memcpy(dst.exp(i * 64), src.exp(), 64);
        dst.verify("SRQ buffers");
    }
    CHECK(ibv_destroy_srq(srq) == 0);
}

// ibv_modify_srq with IBV_SRQ_MAX_WR resizes the SRQ as rxe does: the WQEs
// posted before the resize and not yet used stay and are used in order,
// the new size takes more at once, and the messages sent before and after
// the resize all land in their buffers. rxe_srq_chk_attr: above
// max_srq_wr EINVAL; resize_finish: fewer entries than the WQEs queued
// EINVAL. (simnic answered EOPNOTSUPP before.)
TEST_CASE("ibv_modify_srq MAX_WR resizes the SRQ: WQEs posted before and after all used, in order",
          "[verbs][srq]") {
    Device d;
    ibv_device_attr da{};
    REQUIRE(ibv_query_device(d.ctx, &da) == 0);
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = 4;
    sa.attr.max_sge = 1;
    ibv_srq* srq = ibv_create_srq(d.pd, &sa);
    REQUIRE(srq != nullptr);
    {
        constexpr std::size_t kMsgs = 14, kLen = 64;
        Buffer src(d, kMsgs * kLen), dst(d, kMsgs * kLen);
        std::mt19937 rng(37);
        src.fill(0, kMsgs * kLen, rng);
        std::vector<ibv_sge> rs(kMsgs);
        auto post_srq = [&](std::size_t i) {
            rs[i] = dst.sge(i * kLen, kLen);
            ibv_recv_wr r = recv_wr(60 + i, &rs[i]);
            ibv_recv_wr* bad = nullptr;
            return ibv_post_srq_recv(srq, &r, &bad);
        };
        for (std::size_t i = 0; i < 4; ++i) REQUIRE(post_srq(i) == 0);
        CHECK(post_srq(4) == ENOMEM);  // 4 entries

        Qp a(d, IBV_QPT_RC), b(d, IBV_QPT_RC, nullptr, 0, srq);
        connect(a, b, 0x500, 0x600);
        std::size_t sent = 0;
        auto send_next = [&] {
            ibv_sge sg = src.sge(sent * kLen, kLen);
            ibv_send_wr wr = send_wr(1 + sent, IBV_WR_SEND, &sg);
            post_send(a.qp, wr);
            expect_wc(a.cq, "SEND to the SRQ QP", 1 + sent, IBV_WC_SUCCESS, IBV_WC_SEND);
            const ibv_wc wc = expect_wc(b.cq, "RECV from the SRQ, in posting order", 60 + sent, IBV_WC_SUCCESS,
                                        IBV_WC_RECV);
            CHECK(wc.byte_len == kLen);
            std::memcpy(dst.exp(sent * kLen), src.exp(sent * kLen), kLen);
            ++sent;
        };
        send_next();  // WQE 0 used, 1..3 queued

        ibv_srq_attr at{};
        at.max_wr = static_cast<std::uint32_t>(da.max_srq_wr) + 1;
        CHECK(ibv_modify_srq(srq, &at, IBV_SRQ_MAX_WR) == EINVAL);
        at.max_wr = 2;  // three WQEs queued
        CHECK(ibv_modify_srq(srq, &at, IBV_SRQ_MAX_WR) == EINVAL);
        at.max_wr = 12;
        REQUIRE(ibv_modify_srq(srq, &at, IBV_SRQ_MAX_WR) == 0);
        ibv_srq_attr q{};
        REQUIRE(ibv_query_srq(srq, &q) == 0);
        CHECK(q.max_wr >= 12);
        // Eight posted after the resize: more than the old ring held.
        for (std::size_t i = 4; i < 12; ++i) REQUIRE(post_srq(i) == 0);
        while (sent < 12) send_next();  // 1..3 from before the resize, then 4..11

        // Shrink: two queued, two entries.
        REQUIRE(post_srq(12) == 0);
        REQUIRE(post_srq(13) == 0);
        at.max_wr = 1;
        CHECK(ibv_modify_srq(srq, &at, IBV_SRQ_MAX_WR) == EINVAL);
        at.max_wr = 2;
        REQUIRE(ibv_modify_srq(srq, &at, IBV_SRQ_MAX_WR) == 0);
        REQUIRE(ibv_query_srq(srq, &q) == 0);
        CHECK(q.max_wr >= 2);
        CHECK(q.max_wr < 12);
        while (sent < kMsgs) send_next();
        dst.verify("SRQ buffers across resizes");
        drain_async(d.ctx, 20);
    }
    CHECK(ibv_destroy_srq(srq) == 0);
}

// ibv_create_srq_ex naming a CQ for a basic SRQ: verbs.h hands it to the
// provider's create_srq_ex (rdma-core 44's rxe: ibv_cmd_create_srq_ex),
// which makes the basic SRQ (the CQ is not used by it); XRC without an
// XRCD is EINVAL in libibverbs. (simnic answered EOPNOTSUPP before.)
TEST_CASE("ibv_create_srq_ex: a basic SRQ with IBV_SRQ_INIT_ATTR_CQ takes receives", "[verbs][srq]") {
    Device d;
    ibv_cq* scq = ibv_create_cq(d.ctx, 4, nullptr, nullptr, 0);
    REQUIRE(scq != nullptr);
    ibv_srq_init_attr_ex x{};
    x.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_CQ;
    x.srq_type = IBV_SRQT_BASIC;
    x.pd = d.pd;
    x.cq = scq;
    x.attr.max_wr = 4;
    x.attr.max_sge = 1;
    ibv_srq* srq = ibv_create_srq_ex(d.ctx, &x);
    REQUIRE(srq != nullptr);
    CHECK(x.attr.max_wr >= 4);
    ibv_srq_init_attr_ex xrc = x;
    xrc.srq_type = IBV_SRQT_XRC;
    errno = 0;
    CHECK(ibv_create_srq_ex(d.ctx, &xrc) == nullptr);
    CHECK(errno == EINVAL);
    {
        Buffer src(d, 64), dst(d, 64);
        std::mt19937 rng(41);
        src.fill(0, 64, rng);
        ibv_sge rs = dst.sge(0, 64);
        ibv_recv_wr r = recv_wr(90, &rs);
        ibv_recv_wr* bad = nullptr;
        REQUIRE(ibv_post_srq_recv(srq, &r, &bad) == 0);
        Qp a(d, IBV_QPT_RC), b(d, IBV_QPT_RC, nullptr, 0, srq);
        connect(a, b, 0x700, 0x800);
        ibv_sge sg = src.sge(0, 64);
        ibv_send_wr wr = send_wr(1, IBV_WR_SEND, &sg);
        post_send(a.qp, wr);
        expect_wc(a.cq, "SEND to the QP on the SRQ made by ibv_create_srq_ex", 1, IBV_WC_SUCCESS, IBV_WC_SEND);
        expect_wc(b.cq, "RECV from that SRQ", 90, IBV_WC_SUCCESS, IBV_WC_RECV);
        std::memcpy(dst.exp(0), src.exp(), 64);
        dst.verify("SRQ buffer");
    }
    CHECK(ibv_destroy_srq(srq) == 0);
    CHECK(ibv_destroy_cq(scq) == 0);
}

// What rdma-core 44's rxe provider checks before anything is queued
// (validate_send_wr, rxe_post_one_recv): more SGEs than the QP's caps and
// inline data beyond max_inline_data are EINVAL. The WRs chained before the
// refused one are posted; *bad_wr names the refused one; nothing of it runs.
TEST_CASE("post_send and post_recv refuse more SGEs than the caps, inline data beyond max_inline_data",
          "[verbs][qp]") {
    Device d;
    Pair p(d, IBV_QPT_RC, 7, 64);
    ibv_qp_attr qa{};
    ibv_qp_init_attr qi{};
    REQUIRE(ibv_query_qp(p.a.qp, &qa, IBV_QP_CAP, &qi) == 0);
    const ibv_qp_cap cap = qi.cap;
    REQUIRE(cap.max_inline_data >= 64);
    const std::size_t n = cap.max_inline_data + 64;
    Buffer src(d, n), dst(d, n);
    std::mt19937 rng(31);
    src.fill(0, n, rng);

    // SEND with one SGE too many, chained after a good one.
    ibv_sge rsg = dst.sge(0, 64);
    post_recv(p.b.qp, rsg, 70);
    ibv_sge good_sg = src.sge(0, 64);
    std::vector<ibv_sge> many(cap.max_send_sge + 1, src.sge(64, 1));
    ibv_send_wr first = send_wr(1, IBV_WR_SEND, &good_sg);
    ibv_send_wr second = send_wr(2, IBV_WR_SEND, many.data(), static_cast<int>(many.size()));
    first.next = &second;
    ibv_send_wr* bad = nullptr;
    CHECK(ibv_post_send(p.a.qp, &first, &bad) == EINVAL);
    CHECK(bad == &second);
    expect_wc(p.a.cq, "the SEND chained before the refused one", 1, IBV_WC_SUCCESS, IBV_WC_SEND);
    expect_wc(p.b.cq, "its RECV", 70, IBV_WC_SUCCESS, IBV_WC_RECV);
    std::memcpy(dst.exp(0), src.exp(0), 64);

    // Inline data: max_inline_data bytes go, one more is refused.
    ibv_sge big = src.sge(0, cap.max_inline_data + 1);
    ibv_send_wr over = send_wr(3, IBV_WR_SEND, &big);
    over.send_flags |= IBV_SEND_INLINE;
    bad = nullptr;
    CHECK(ibv_post_send(p.a.qp, &over, &bad) == EINVAL);
    CHECK(bad == &over);
    expect_no_completion(p.a.cq, "refused SEND WRs");
    ibv_sge rall = dst.sge(0, n);
    post_recv(p.b.qp, rall, 71);
    ibv_sge fits = src.sge(0, cap.max_inline_data);
    ibv_send_wr exact = send_wr(4, IBV_WR_SEND, &fits);
    exact.send_flags |= IBV_SEND_INLINE;
    post_send(p.a.qp, exact);
    expect_wc(p.a.cq, "inline SEND of max_inline_data bytes", 4, IBV_WC_SUCCESS, IBV_WC_SEND);
    const ibv_wc wc = expect_wc(p.b.cq, "its RECV", 71, IBV_WC_SUCCESS, IBV_WC_RECV);
    CHECK(wc.byte_len == cap.max_inline_data);
    std::memcpy(dst.exp(0), src.exp(0), cap.max_inline_data);

    // A receive WR with one SGE too many.
    std::vector<ibv_sge> rmany(cap.max_recv_sge + 1, dst.sge(0, 1));
    ibv_recv_wr rover = recv_wr(72, rmany.data(), static_cast<int>(rmany.size()));
    ibv_recv_wr* rbad = nullptr;
    CHECK(ibv_post_recv(p.b.qp, &rover, &rbad) == EINVAL);
    CHECK(rbad == &rover);
    expect_no_completion(p.b.cq, "the refused receive WR");
    src.verify("source");
    dst.verify("destination");
}

// What neither rxe offers (rdma-core 44's provider has no op and libibverbs'
// dummy ops answer, or verbs.h finds no op) nor a simnic device fails with
// EOPNOTSUPP, and the context stays usable.
// ---- on-demand paging ----

// A range of pages of this process, none of them memory to begin with;
// map() and unmap() change one page at a time. An unmapped page is a
// PROT_NONE one whose contents are dropped: to pinning and to the device
// (process_vm_*) it is as absent as a hole, and unlike a hole no allocation
// of another thread can take its place meanwhile.
struct PageRange {
    std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    std::size_t n;
    std::uint8_t* base = nullptr;
    explicit PageRange(std::size_t pages) : n(pages) {
        void* m = mmap(nullptr, n * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        REQUIRE(m != MAP_FAILED);
        base = static_cast<std::uint8_t*>(m);
    }
    ~PageRange() { munmap(base, n * page); }
    std::uint8_t* at(std::size_t i, std::size_t off = 0) { return base + i * page + off; }
    std::uint64_t addr(std::size_t i, std::size_t off = 0) { return reinterpret_cast<std::uintptr_t>(at(i, off)); }
    void map(std::size_t i) { REQUIRE(mprotect(at(i), page, PROT_READ | PROT_WRITE) == 0); }
    void unmap(std::size_t i) {
        REQUIRE(madvise(at(i), page, MADV_DONTNEED) == 0);
        REQUIRE(mprotect(at(i), page, PROT_NONE) == 0);
    }
};

TEST_CASE("ODP: capabilities, pages mapped after registration are reached, unmapped ones are errors",
          "[verbs][odp]") {
    Device d;
    ibv_device_attr_ex ax{};
    REQUIRE(ibv_query_device_ex(d.ctx, nullptr, &ax) == 0);
    CHECK((ax.odp_caps.general_caps & IBV_ODP_SUPPORT) != 0);
    CHECK((ax.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT) != 0);
    const std::uint32_t rc_need =
        IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC;
    CHECK((ax.odp_caps.per_transport_caps.rc_odp_caps & rc_need) == rc_need);

    PageRange pr(4);
    const std::size_t page = pr.page;
    // Pinned, the range is refused (ib_umem_get: EFAULT); on demand it is not.
    errno = 0;
    CHECK(ibv_reg_mr(d.pd, pr.at(0), 4 * page, kAllAccess) == nullptr);
    CHECK(errno == EFAULT);
    // So is a true hole (0x1000 is below vm.mmap_min_addr, never mapped).
    errno = 0;
    CHECK(ibv_reg_mr(d.pd, reinterpret_cast<void*>(std::uintptr_t{0x1000}), 8, 0) == nullptr);
    CHECK(errno == EFAULT);
    ibv_mr* odp = ibv_reg_mr(d.pd, pr.at(0), 4 * page, kAllAccess | IBV_ACCESS_ON_DEMAND);
    INFO("ibv_reg_mr(ON_DEMAND) errno " << errno);
    REQUIRE(odp != nullptr);

    // Pages 0 and 1 appear after the registration: WRITE, READ, SEND and an
    // atomic reach them.
    pr.map(0);
    pr.map(1);
    std::mt19937 rng(71);
    Buffer src(d, 2 * page), back(d, 2 * page);
    src.fill(0, 2 * page, rng);
    {
        Pair p(d, IBV_QPT_RC);
        ibv_sge sg = src.sge(0, 2 * page);
        ibv_send_wr w = rdma_wr(1, IBV_WR_RDMA_WRITE, &sg, pr.addr(0), odp->rkey);
        post_send(p.a.qp, w);
        expect_wc(p.a.cq, "WRITE into pages mapped after registration", 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
        CHECK(std::memcmp(pr.at(0), src.data(), 2 * page) == 0);
        ibv_sge bs = back.sge(0, 1000);
        std::memcpy(back.exp(0), pr.at(0, 100), 1000);
        ibv_send_wr r = rdma_wr(2, IBV_WR_RDMA_READ, &bs, pr.addr(0, 100), odp->rkey);
        post_send(p.a.qp, r);
        expect_wc(p.a.cq, "READ from the ODP MR", 2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
        back.verify("READ from the ODP MR");
        // A receive into the ODP MR (its lkey), and a SEND gathered from it.
        ibv_sge rs{pr.addr(1, 8), 300, odp->lkey};
        post_recv(p.b.qp, rs, 3);
        ibv_sge ss = src.sge(500, 300);
        ibv_send_wr sw = send_wr(4, IBV_WR_SEND, &ss);
        post_send(p.a.qp, sw);
        expect_wc(p.a.cq, "SEND to an ODP receive", 4, IBV_WC_SUCCESS, IBV_WC_SEND);
        expect_wc(p.b.cq, "ODP receive", 3, IBV_WC_SUCCESS, IBV_WC_RECV);
        CHECK(std::memcmp(pr.at(1, 8), src.data() + 500, 300) == 0);
        // Fetch-and-add on the ODP MR.
        std::uint64_t before = 40, after = 0;
        std::memcpy(pr.at(1, 512), &before, 8);
        ibv_sge as = back.sge(0, 8);
        ibv_send_wr aw = send_wr(5, IBV_WR_ATOMIC_FETCH_AND_ADD, &as);
        aw.wr.atomic.remote_addr = pr.addr(1, 512);
        aw.wr.atomic.rkey = odp->rkey;
        aw.wr.atomic.compare_add = 2;
        post_send(p.a.qp, aw);
        expect_wc(p.a.cq, "atomic on the ODP MR", 5, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD);
        std::memcpy(&after, pr.at(1, 512), 8);
        CHECK(after == 42);
        std::uint64_t orig = 0;
        std::memcpy(&orig, back.data(), 8);
        CHECK(orig == 40);
        std::memcpy(back.exp(0), back.data(), 8);
    }

    // ibv_advise_mr: prefetch of a mapped page; of a hole, EFAULT when
    // synchronous and best effort (0) when not.
    ibv_sge mapped{pr.addr(0), static_cast<std::uint32_t>(page), odp->lkey};
    ibv_sge hole{pr.addr(2), static_cast<std::uint32_t>(page), odp->lkey};
    CHECK(ibv_advise_mr(d.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH, &mapped, 1) == 0);
    CHECK(ibv_advise_mr(d.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, &hole, 1) == EFAULT);
    CHECK(ibv_advise_mr(d.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &hole, 1) == 0);

    // Page 1 unmapped while registered: a WRITE into it is a remote access
    // error (the device cannot fault it in), and nothing else is written.
    pr.unmap(1);
    {
        Pair p(d, IBV_QPT_RC);
        drain_async(d.ctx, 50);
        ibv_sge sg = src.sge(0, 64);
        ibv_send_wr w = rdma_wr(6, IBV_WR_RDMA_WRITE, &sg, pr.addr(1), odp->rkey);
        post_send(p.a.qp, w);
        expect_wc(p.a.cq, "WRITE into an unmapped ODP page", 6, IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE);
    }
    {
        // A SEND gathered from the unmapped page: a local protection error.
        Pair p(d, IBV_QPT_RC);
        drain_async(d.ctx, 50);
        ibv_sge sg{pr.addr(1), 64, odp->lkey};
        ibv_send_wr w = send_wr(7, IBV_WR_SEND, &sg);
        post_send(p.a.qp, w);
        expect_wc(p.a.cq, "SEND from an unmapped ODP page", 7, IBV_WC_LOC_PROT_ERR, IBV_WC_SEND);
    }
    drain_async(d.ctx, 100);  // the QP errors of the two pairs above
    // Mapped again, the page is reached again: the MR did not change.
    pr.map(1);
    {
        Pair p(d, IBV_QPT_RC);
        ibv_sge sg = src.sge(0, page);
        ibv_send_wr w = rdma_wr(8, IBV_WR_RDMA_WRITE, &sg, pr.addr(1), odp->rkey);
        post_send(p.a.qp, w);
        expect_wc(p.a.cq, "WRITE into the page mapped again", 8, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
        CHECK(std::memcmp(pr.at(1), src.data(), page) == 0);
    }
    CHECK(ibv_dereg_mr(odp) == 0);

    // The implicit MR: one key for the whole address space, here used to
    // write into an ordinary heap buffer and to read from the stack.
    ibv_mr* im = ibv_reg_mr(d.pd, nullptr, SIZE_MAX,
                            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                IBV_ACCESS_ON_DEMAND);
    INFO("implicit ODP MR errno " << errno);
    REQUIRE(im != nullptr);
    {
        Pair p(d, IBV_QPT_RC);
        std::vector<std::uint8_t> heap(3000, 0x5C);
        ibv_sge sg = src.sge(0, 2000);
        ibv_send_wr w = rdma_wr(9, IBV_WR_RDMA_WRITE, &sg, reinterpret_cast<std::uintptr_t>(heap.data() + 500), im->rkey);
        post_send(p.a.qp, w);
        expect_wc(p.a.cq, "WRITE through the implicit MR", 9, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
        CHECK(std::memcmp(heap.data() + 500, src.data(), 2000) == 0);
        CHECK(heap[499] == 0x5C);
        CHECK(heap[2500] == 0x5C);
        const std::uint64_t word = 0x0123456789abcdefull;
        ibv_sge bs = back.sge(0, 8);
        std::memcpy(back.exp(0), &word, 8);
        ibv_send_wr r = rdma_wr(10, IBV_WR_RDMA_READ, &bs, reinterpret_cast<std::uintptr_t>(&word), im->rkey);
        post_send(p.a.qp, r);
        expect_wc(p.a.cq, "READ through the implicit MR", 10, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
        back.verify("READ through the implicit MR");
    }
    CHECK(ibv_dereg_mr(im) == 0);
    src.verify("source of the ODP transfers");
}

TEST_CASE("verbs rxe does not offer fail with EOPNOTSUPP", "[verbs][unsupported]") {
    Device d;
    Buffer b(d, 4096);
    errno = 0;
    CHECK(ibv_import_pd(d.ctx, d.pd->handle) == nullptr);
    CHECK(errno == EOPNOTSUPP);
    errno = 0;
    CHECK(ibv_import_mr(d.pd, b.mr->handle) == nullptr);
    CHECK(errno == EOPNOTSUPP);
    errno = 0;
    CHECK(ibv_reg_dmabuf_mr(d.pd, 0, 4096, 0, -1, IBV_ACCESS_LOCAL_WRITE) == nullptr);
    CHECK(errno == EOPNOTSUPP);
    ibv_alloc_dm_attr dma{};
    dma.length = 64;
    errno = 0;
    CHECK(ibv_alloc_dm(d.ctx, &dma) == nullptr);
    CHECK(errno == EOPNOTSUPP);
    ibv_td_init_attr tda{};
    errno = 0;
    CHECK(ibv_alloc_td(d.ctx, &tda) == nullptr);
    CHECK(errno == EOPNOTSUPP);
    ibv_parent_domain_init_attr pda{};
    pda.pd = d.pd;
    errno = 0;
    CHECK(ibv_alloc_parent_domain(d.ctx, &pda) == nullptr);
    CHECK(errno == EOPNOTSUPP);
    ibv_xrcd_init_attr xa{};
    xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
    xa.fd = -1;
    xa.oflags = O_CREAT;
    errno = 0;
    CHECK(ibv_open_xrcd(d.ctx, &xa) == nullptr);
    CHECK(errno == EOPNOTSUPP);
    ibv_counters_init_attr ca{};
    errno = 0;
    CHECK(ibv_create_counters(d.ctx, &ca) == nullptr);
    CHECK(errno == EOPNOTSUPP);
    {
        Qp q(d, IBV_QPT_UD);
        ibv_wq_init_attr wa{};
        wa.wq_type = IBV_WQT_RQ;
        wa.max_wr = 1;
        wa.max_sge = 1;
        wa.pd = d.pd;
        wa.cq = q.cq;
        errno = 0;
        CHECK(ibv_create_wq(d.ctx, &wa) == nullptr);
        CHECK(errno == EOPNOTSUPP);
        ibv_flow_attr fa{};
        fa.size = sizeof fa;
        fa.type = IBV_FLOW_ATTR_NORMAL;
        fa.port = 1;
        errno = 0;
        CHECK(ibv_create_flow(q.qp, &fa) == nullptr);
        CHECK(errno == EOPNOTSUPP);
        ibv_ece ece{};
        CHECK(ibv_query_ece(q.qp, &ece) == EOPNOTSUPP);
    }
    ibv_pd* pd = ibv_alloc_pd(d.ctx);
    REQUIRE(pd != nullptr);
    CHECK(ibv_dealloc_pd(pd) == 0);
}

// The rest of what rxe offers nothing for, on a QP or an SRQ: libibverbs'
// dummy ops answer for rxe (EOPNOTSUPP; data-in-order 0), simnic the same.
// Raw packet and XRC QPs, and TSO asked in send_ops_flags, are refused at
// creation (rxe_qp_chk_init, the provider's send_ops_flags check); the
// ibv_wr_* operations rxe does not install (TSO, XRC) fail the batch on
// simnic, which installs them so that a call does not jump through NULL.
TEST_CASE("QP and SRQ verbs rxe does not offer: EOPNOTSUPP, data-in-order 0", "[verbs][unsupported]") {
    Device d;
    errno = 0;
    CHECK(ibv_import_dm(d.ctx, 1) == nullptr);
    CHECK(errno == EOPNOTSUPP);
    Qp q(d, IBV_QPT_RC);
    ibv_ece ece{};
    ece.vendor_id = 0x15b3;
    CHECK(ibv_set_ece(q.qp, &ece) == EOPNOTSUPP);
    CHECK(ibv_query_qp_data_in_order(q.qp, IBV_WR_SEND, 0) == 0);
    CHECK(ibv_query_qp_data_in_order(q.qp, IBV_WR_RDMA_WRITE, 0) == 0);

    ibv_ah_attr av = gid_av(d);
    std::uint8_t mac[ETHERNET_LL_SIZE] = {};
    std::uint16_t vid = 0;
    CHECK(ibv_resolve_eth_l2_from_gid(d.ctx, &av, mac, &vid) == EOPNOTSUPP);

    ibv_srq_init_attr sa{};
    sa.attr.max_wr = 4;
    sa.attr.max_sge = 1;
    ibv_srq* srq = ibv_create_srq(d.pd, &sa);
    REQUIRE(srq != nullptr);
    std::uint32_t srqn = 0;
    CHECK(ibv_get_srq_num(srq, &srqn) == EOPNOTSUPP);
    ibv_ops_wr op{};
    op.opcode = IBV_WR_TAG_ADD;
    ibv_ops_wr* bad_op = nullptr;
    CHECK(ibv_post_srq_ops(srq, &op, &bad_op) == EOPNOTSUPP);
    CHECK(ibv_destroy_srq(srq) == 0);

    for (ibv_qp_type t : {IBV_QPT_RAW_PACKET, IBV_QPT_XRC_SEND}) {
        INFO("qp_type " << t);
        ibv_qp_init_attr ia{};
        ia.send_cq = q.cq;
        ia.recv_cq = q.cq;
        ia.qp_type = t;
        ia.cap = {4, 4, 1, 1, 0};
        errno = 0;
        CHECK(ibv_create_qp(d.pd, &ia) == nullptr);
        CHECK(errno == EOPNOTSUPP);
    }

    ibv_qp_init_attr_ex xa{};
    xa.send_cq = q.cq;
    xa.recv_cq = q.cq;
    xa.qp_type = IBV_QPT_RC;
    xa.cap = {4, 4, 1, 1, 0};
    xa.pd = d.pd;
    xa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    xa.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_TSO;
    errno = 0;
    CHECK(ibv_create_qp_ex(d.ctx, &xa) == nullptr);
    CHECK(errno == EOPNOTSUPP);

    xa.send_ops_flags = IBV_QP_EX_WITH_SEND;
    ibv_qp* xq = ibv_create_qp_ex(d.ctx, &xa);
    REQUIRE(xq != nullptr);
    qp_to_init(xq, IBV_QPT_RC, q.path());
    qp_to_rtr(d, xq, IBV_QPT_RC, q.qpn(), q.path());
    qp_to_rts(xq, IBV_QPT_RC, q.path());
    ibv_qp_ex* x = ibv_qp_to_qp_ex(xq);
    REQUIRE(x != nullptr);
    REQUIRE(x->wr_send_tso != nullptr);
    REQUIRE(x->wr_set_xrc_srqn != nullptr);
    Buffer b(d, 64);
    std::uint8_t hdr[14] = {};
    ibv_wr_start(x);
    x->wr_id = 1;
    ibv_wr_send_tso(x, hdr, sizeof hdr, 1400);
    ibv_wr_set_sge(x, b.mr->lkey, b.addr(), 64);
    CHECK(ibv_wr_complete(x) == EOPNOTSUPP);
    ibv_wr_start(x);
    x->wr_id = 2;
    ibv_wr_send(x);
    ibv_wr_set_xrc_srqn(x, 1);
    ibv_wr_set_sge(x, b.mr->lkey, b.addr(), 64);
    CHECK(ibv_wr_complete(x) == EOPNOTSUPP);
    expect_no_completion(q.cq, "the refused TSO and XRC batches");
    CHECK(ibv_destroy_qp(xq) == 0);
    b.verify("untouched buffer");
}

// rdma-core 44's validate_send_wr lets IBV_SEND_INLINE through on READ and
// atomics; simnic refuses it at posting ("Differences found" 15: inline
// data has nowhere to go on an operation that brings data back). *bad_wr
// names the refused WR, nothing of it runs, and the QP goes on.
TEST_CASE("ibv_post_send: inline data on RDMA_READ and atomics is EINVAL, the QP goes on", "[verbs][qp][inline]") {
    Device d;
    Pair p(d, IBV_QPT_RC, 7, 64);
    Buffer local(d, 64), remote(d, 64);
    std::mt19937 rng(41);
    remote.fill(0, 64, rng);
    ibv_sge sg = local.sge(0, 8);
    for (ibv_wr_opcode op : {IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD}) {
        INFO("opcode " << op);
        ibv_send_wr wr = send_wr(5, op, &sg);
        wr.send_flags |= IBV_SEND_INLINE;
        if (op == IBV_WR_RDMA_READ) {
            wr.wr.rdma.remote_addr = remote.addr(8);
            wr.wr.rdma.rkey = remote.mr->rkey;
        } else {
            wr.wr.atomic.remote_addr = remote.addr(8);
            wr.wr.atomic.rkey = remote.mr->rkey;
            wr.wr.atomic.compare_add = 1;
        }
        ibv_send_wr* bad = nullptr;
        CHECK(ibv_post_send(p.a.qp, &wr, &bad) == EINVAL);
        CHECK(bad == &wr);
    }
    expect_no_completion(p.a.cq, "the refused WRs");
    local.verify("local buffer after the refused WRs");
    remote.verify("remote buffer after the refused WRs");
    // The same READ without IBV_SEND_INLINE.
    ibv_send_wr rd = rdma_wr(6, IBV_WR_RDMA_READ, &sg, remote.addr(8), remote.mr->rkey);
    post_send(p.a.qp, rd);
    expect_wc(p.a.cq, "READ", 6, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
    std::memcpy(local.exp(0), remote.exp(8), 8);
    local.verify("READ's destination");
}

namespace {
// A UD QP on d's own CQ in RTS, made through ibv_create_qp_ex with SEND in
// its send_ops_flags so that ibv_qp_to_qp_ex gives its ibv_wr_* operations.
ibv_qp* ud_qp_ex(Device& d, ibv_cq* cq) {
    ibv_qp_init_attr_ex xa{};
    xa.send_cq = cq;
    xa.recv_cq = cq;
    xa.qp_type = IBV_QPT_UD;
    xa.cap = {4, 4, 1, 1, 0};
    xa.pd = d.pd;
    xa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    xa.send_ops_flags = IBV_QP_EX_WITH_SEND;
    ibv_qp* qp = ibv_create_qp_ex(d.ctx, &xa);
    INFO("ibv_create_qp_ex errno " << errno);
    REQUIRE(qp != nullptr);
    connect_qp(d, qp, IBV_QPT_UD, 0, kQkey);
    return qp;
}
}  // namespace

// rxe's provider copies any AH into the WQE (no check); the kernel's
// rxe_get_av then finds an AH of another PD (another context's) and the
// requester completes the WQE with IBV_WC_LOC_QP_OP_ERR. simnic's engine
// checks the AH's context and PD (hw-spec 6.2) and completes it the same
// way, through both posting APIs. An AH that is no simnic object at all
// (another provider's) has no AH number: EINVAL at posting.
TEST_CASE("UD: an AH of another context completes with LOC_QP_OP_ERR, a foreign one is EINVAL", "[verbs][ud]") {
    Device d, other;
    ibv_ah_attr aa = gid_av(other);
    ibv_ah* ah = ibv_create_ah(other.pd, &aa);
    REQUIRE(ah != nullptr);
    Qp peer(d, IBV_QPT_UD);
    peer.to_init();
    peer.to_rtr(0, 0);
    peer.to_rts(0, 7);
    Buffer b(d, 64);
    ibv_sge sg = b.sge(0, 64);
    ibv_sge rsg = b.sge(0, 64);
    post_recv(peer.qp, rsg, 99);

    SECTION("ibv_post_send") {
        Qp u(d, IBV_QPT_UD);
        u.to_init();
        u.to_rtr(0, 0);
        u.to_rts(0, 7);
        ibv_send_wr wr = send_wr(1, IBV_WR_SEND, &sg);
        wr.wr.ud.ah = ah;
        wr.wr.ud.remote_qpn = peer.qpn();
        wr.wr.ud.remote_qkey = kQkey;
        post_send(u.qp, wr);
        expect_wc(u.cq, "SEND through another context's AH", 1, IBV_WC_LOC_QP_OP_ERR, IBV_WC_SEND);
        CHECK(u.state() == IBV_QPS_ERR);

        Qp v(d, IBV_QPT_UD);
        v.to_init();
        v.to_rtr(0, 0);
        v.to_rts(0, 7);
        ibv_context not_simnic{};
        ibv_ah foreign{};
        foreign.context = &not_simnic;
        foreign.pd = d.pd;
        wr.wr.ud.ah = &foreign;
        ibv_send_wr* bad = nullptr;
        CHECK(ibv_post_send(v.qp, &wr, &bad) == EINVAL);
        CHECK(bad == &wr);
        expect_no_completion(v.cq, "the refused SEND");
        CHECK(v.state() == IBV_QPS_RTS);
    }
    SECTION("ibv_wr_set_ud_addr") {
        ibv_cq* cq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
        REQUIRE(cq != nullptr);
        ibv_qp* qp = ud_qp_ex(d, cq);
        ibv_qp_ex* x = ibv_qp_to_qp_ex(qp);
        REQUIRE(x != nullptr);
        ibv_wr_start(x);
        x->wr_id = 2;
        x->wr_flags = IBV_SEND_SIGNALED;
        ibv_wr_send(x);
        ibv_wr_set_ud_addr(x, ah, peer.qpn(), kQkey);
        ibv_wr_set_sge(x, b.mr->lkey, b.addr(), 64);
        CHECK(ibv_wr_complete(x) == 0);
        expect_wc(cq, "ibv_wr_send through another context's AH", 2, IBV_WC_LOC_QP_OP_ERR, IBV_WC_SEND);
        CHECK(ibv_destroy_qp(qp) == 0);

        qp = ud_qp_ex(d, cq);
        x = ibv_qp_to_qp_ex(qp);
        REQUIRE(x != nullptr);
        ibv_context not_simnic{};
        ibv_ah foreign{};
        foreign.context = &not_simnic;
        foreign.pd = d.pd;
        ibv_wr_start(x);
        x->wr_id = 3;
        x->wr_flags = IBV_SEND_SIGNALED;
        ibv_wr_send(x);
        ibv_wr_set_ud_addr(x, &foreign, peer.qpn(), kQkey);
        ibv_wr_set_sge(x, b.mr->lkey, b.addr(), 64);
        CHECK(ibv_wr_complete(x) == EINVAL);
        expect_no_completion(cq, "the refused batch");
        CHECK(ibv_destroy_qp(qp) == 0);
        CHECK(ibv_destroy_cq(cq) == 0);
    }
    expect_no_completion(peer.cq, "the peer, which nothing reached");
    CHECK(ibv_destroy_ah(ah) == 0);
}

// rxe_qp_to_attr reads sq_psn and rq_psn from the requester's and the
// responder's live state (req.psn: the next PSN to send, a READ counting
// its response packets; resp.psn: the next PSN expected), not from what
// modify_qp stored. a's PSNs start two below 2^24 so that they wrap.
TEST_CASE("ibv_query_qp: sq_psn and rq_psn follow the traffic, as rxe's req.psn and resp.psn", "[verbs][qp]") {
    Device d;
    Qp a(d, IBV_QPT_RC), b(d, IBV_QPT_RC);
    constexpr std::uint32_t kA = 0xfffffe, kB = 0x1000;
    connect(a, b, kA, kB);
    const auto psns = [](ibv_qp* qp) {
        ibv_qp_attr at{};
        ibv_qp_init_attr ia{};
        REQUIRE(ibv_query_qp(qp, &at, IBV_QP_SQ_PSN | IBV_QP_RQ_PSN, &ia) == 0);
        return std::pair<std::uint32_t, std::uint32_t>{at.sq_psn, at.rq_psn};
    };
    using Psns = std::pair<std::uint32_t, std::uint32_t>;
    CHECK(psns(a.qp) == Psns{kA, kB});
    CHECK(psns(b.qp) == Psns{kB, kA});

    const std::size_t m = d.mtu;
    Buffer src(d, 3 * m), dst(d, 3 * m), remote(d, 2 * m);
    std::mt19937 rng(43);
    src.fill(0, 3 * m, rng);
    remote.fill(0, 2 * m, rng);
    // A SEND of one packet, one of three, a READ of two response packets
    // and a zero-length WRITE: 1 + 3 + 2 + 1 PSNs.
    ibv_sge r1 = dst.sge(0, 3 * m);
    post_recv(b.qp, r1, 11);
    ibv_sge s1 = src.sge(0, 100);
    ibv_send_wr w1 = send_wr(1, IBV_WR_SEND, &s1);
    post_send(a.qp, w1);
    expect_wc(a.cq, "SEND of one packet", 1, IBV_WC_SUCCESS, IBV_WC_SEND);
    expect_wc(b.cq, "its RECV", 11, IBV_WC_SUCCESS, IBV_WC_RECV);
    CHECK(psns(a.qp) == Psns{(kA + 1) & 0xffffff, kB});
    CHECK(psns(b.qp) == Psns{kB, (kA + 1) & 0xffffff});

    post_recv(b.qp, r1, 12);
    ibv_sge s2 = src.sge(0, 2 * m + 1);
    ibv_send_wr w2 = send_wr(2, IBV_WR_SEND, &s2);
    post_send(a.qp, w2);
    expect_wc(a.cq, "SEND of three packets", 2, IBV_WC_SUCCESS, IBV_WC_SEND);
    expect_wc(b.cq, "its RECV", 12, IBV_WC_SUCCESS, IBV_WC_RECV);
    std::memcpy(dst.exp(0), src.exp(0), 2 * m + 1);

    ibv_sge s3 = src.sge(m, 2 * m);
    ibv_send_wr w3 = rdma_wr(3, IBV_WR_RDMA_READ, &s3, remote.addr(0), remote.mr->rkey);
    post_send(a.qp, w3);
    expect_wc(a.cq, "READ of two packets", 3, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
    std::memcpy(src.exp(m), remote.exp(0), 2 * m);
    ibv_send_wr w4 = rdma_wr(4, IBV_WR_RDMA_WRITE, nullptr, remote.addr(0), remote.mr->rkey, 0);
    post_send(a.qp, w4);
    expect_wc(a.cq, "zero-length WRITE", 4, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
    const std::uint32_t a_sent = (kA + 7) & 0xffffff;
    CHECK(a_sent == 5);
    CHECK(psns(a.qp) == Psns{a_sent, kB});
    CHECK(psns(b.qp) == Psns{kB, a_sent});

    // The other direction: b's requester and a's responder.
    ibv_sge r2 = src.sge(0, 64);
    post_recv(a.qp, r2, 13);
    ibv_sge s5 = dst.sge(0, 64);
    ibv_send_wr w5 = send_wr(5, IBV_WR_SEND, &s5);
    post_send(b.qp, w5);
    expect_wc(b.cq, "b's SEND", 5, IBV_WC_SUCCESS, IBV_WC_SEND);
    expect_wc(a.cq, "its RECV", 13, IBV_WC_SUCCESS, IBV_WC_RECV);
    std::memcpy(src.exp(0), dst.exp(0), 64);
    CHECK(psns(a.qp) == Psns{a_sent, kB + 1});
    CHECK(psns(b.qp) == Psns{kB + 1, a_sent});
    src.verify("a's buffer");
    dst.verify("b's buffer");
    remote.verify("the READ's source");
}

// rxe_cq_post (6.1 and 6.12 alike): a CQE that finds its CQ full is lost
// and IBV_EVENT_CQ_ERR is raised; the responder whose receive CQE was lost
// moves its QP to ERR (RESPST_ERR_CQ_OVERFLOW). The CQ is not marked: once
// the application has polled, it takes CQEs again. Its queue (rxe_queue_init,
// queue_full) holds exactly the `cqe` it reports. simnic's engine (hw-spec
// 7.2) does the same. b's receive CQ asks for one entry and gets more
// receive completions than it holds, none polled.
TEST_CASE("CQ overrun: IBV_EVENT_CQ_ERR, the CQE lost, the responder's QP to ERR", "[verbs][events][cq]") {
    Device d;
    Qp a(d, IBV_QPT_RC);
    ibv_cq* scq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
    ibv_cq* rcq = ibv_create_cq(d.ctx, 1, nullptr, nullptr, 0);
    REQUIRE(scq != nullptr);
    REQUIRE(rcq != nullptr);
    const int held = rcq->cqe;  // what the CQ promises to hold
    REQUIRE(held >= 1);
    const int n = held + 3;
    ibv_qp_init_attr ia{};
    ia.send_cq = scq;
    ia.recv_cq = rcq;
    ia.qp_type = IBV_QPT_RC;
    ia.cap = {16, 16, 1, 1, 0};
    ibv_qp* b = ibv_create_qp(d.pd, &ia);
    REQUIRE(b != nullptr);
    const QpPath pb = a.path(0x2000, 0x3000);
    a.to_init();
    qp_to_init(b, IBV_QPT_RC, pb);
    a.to_rtr(b->qp_num, 0x3000);
    qp_to_rtr(d, b, IBV_QPT_RC, a.qpn(), pb);
    a.to_rts(0x2000, 7);
    qp_to_rts(b, IBV_QPT_RC, pb);
    drain_async(d.ctx, 20);

    Buffer src(d, 64), dst(d, 64 * std::size_t(n + 1));
    ibv_sge sg = src.sge(0, 64);
    for (int i = 0; i < n; ++i) {
        ibv_sge r = dst.sge(64 * std::size_t(i), 64);
        post_recv(b, r, 100 + i);
    }
    // n SENDs in one post: the responder completes them in order until b's
    // CQ is full, loses the next CQE and goes to ERR (the SENDs after that
    // one are not answered; a's completions are not looked at).
    std::vector<ibv_send_wr> ws;
    for (int i = 0; i < n; ++i) ws.push_back(send_wr(std::uint64_t(i), IBV_WR_SEND, &sg));
    for (int i = 0; i + 1 < n; ++i) ws[std::size_t(i)].next = &ws[std::size_t(i) + 1];
    post_send(a.qp, ws[0]);
    const std::vector<ibv_async_event> evs = wait_async(d.ctx, IBV_EVENT_CQ_ERR, 2000);
    REQUIRE(count_events(evs, IBV_EVENT_CQ_ERR) >= 1);
    for (const ibv_async_event& ev : evs) {
        INFO("async event " << ibv_event_type_str(ev.event_type));
        if (ev.event_type == IBV_EVENT_CQ_ERR) CHECK(ev.element.cq == rcq);
        if (is_qp_event(ev.event_type)) CHECK(ev.element.qp == b);
    }
    const auto end = Clock::now() + std::chrono::seconds(1);
    ibv_qp_attr qa{};
    do {
        qa = query_qp(b);
    } while (qa.qp_state != IBV_QPS_ERR && Clock::now() < end);
    CHECK(qa.qp_state == IBV_QPS_ERR);
    // The receives left flush on the way to ERR: into the full CQ, lost too.
    drain_async(d.ctx, 100);
    // In order, all successes, exactly the cqe entries the CQ promised; the
    // lost one and those after it are not there.
    int polled = 0;
    ibv_wc wc{};
    while (ibv_poll_cq(rcq, 1, &wc) == 1) {
        INFO(wc_str(wc));
        CHECK(wc.wr_id == std::uint64_t(100 + polled));
        CHECK(wc.status == IBV_WC_SUCCESS);
        ++polled;
    }
    INFO("cqe " << held << ", receive CQEs polled " << polled);
    CHECK(polled == held);
    // Room made, the CQ takes CQEs again: a receive posted to b, in ERR,
    // flushes into it.
    ibv_sge r = dst.sge(64 * std::size_t(n), 64);
    post_recv(b, r, 999);
    expect_wc(rcq, "a receive posted in ERR", 999, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV);
    CHECK(ibv_poll_cq(rcq, 1, &wc) == 0);
    CHECK(ibv_destroy_qp(b) == 0);
    drain_async(d.ctx, 20);
    CHECK(ibv_destroy_cq(rcq) == 0);
    CHECK(ibv_destroy_cq(scq) == 0);
}

// rxe's completer ignores rxe_cq_post's EBUSY (do_complete, both eras): a
// send CQE that finds its CQ full is lost with IBV_EVENT_CQ_ERR and the
// requester's QP goes on; once polled, the CQ takes its next CQE. simnic's
// engine (hw-spec 7.2) does the same. b's send CQ asks for one entry and
// gets two more signaled completions than it holds.
TEST_CASE("CQ overrun of send CQEs: IBV_EVENT_CQ_ERR, the CQE lost, the requester goes on", "[verbs][events][cq]") {
    Device d;
    Qp a(d, IBV_QPT_RC);
    ibv_cq* scq = ibv_create_cq(d.ctx, 1, nullptr, nullptr, 0);
    ibv_cq* rcq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
    REQUIRE(scq != nullptr);
    REQUIRE(rcq != nullptr);
    const int held = scq->cqe;
    REQUIRE(held >= 1);
    const int n = held + 2;
    ibv_qp_init_attr ia{};
    ia.send_cq = scq;
    ia.recv_cq = rcq;
    ia.qp_type = IBV_QPT_RC;
    ia.cap = {16, 16, 1, 1, 0};
    ibv_qp* b = ibv_create_qp(d.pd, &ia);
    REQUIRE(b != nullptr);
    const QpPath pb = a.path(0x2000, 0x3000);
    a.to_init();
    qp_to_init(b, IBV_QPT_RC, pb);
    a.to_rtr(b->qp_num, 0x3000);
    qp_to_rtr(d, b, IBV_QPT_RC, a.qpn(), pb);
    a.to_rts(0x2000, 7);
    qp_to_rts(b, IBV_QPT_RC, pb);
    drain_async(d.ctx, 20);

    Buffer src(d, 64 * std::size_t(n + 1)), remote(d, 64 * std::size_t(n + 1));
    std::mt19937 rng(20);
    src.fill(0, 64 * std::size_t(n + 1), rng);
    std::vector<ibv_sge> sgs;
    for (int i = 0; i < n; ++i) sgs.push_back(src.sge(64 * std::size_t(i), 64));
    std::vector<ibv_send_wr> ws;
    for (int i = 0; i < n; ++i)
        ws.push_back(rdma_wr(std::uint64_t(i), IBV_WR_RDMA_WRITE, &sgs[std::size_t(i)],
                             remote.addr(64 * std::size_t(i)), remote.mr->rkey));
    for (int i = 0; i + 1 < n; ++i) ws[std::size_t(i)].next = &ws[std::size_t(i) + 1];
    post_send(b, ws[0]);
    // One CQ_ERR for each CQE lost.
    std::vector<ibv_async_event> evs = wait_async(d.ctx, IBV_EVENT_CQ_ERR, 2000);
    for (const ibv_async_event& ev : drain_async(d.ctx, 200)) evs.push_back(ev);
    CHECK(count_events(evs, IBV_EVENT_CQ_ERR) == n - held);
    for (const ibv_async_event& ev : evs) {
        INFO("async event " << ibv_event_type_str(ev.event_type));
        CHECK(ev.event_type == IBV_EVENT_CQ_ERR);
        if (ev.event_type == IBV_EVENT_CQ_ERR) CHECK(ev.element.cq == scq);
    }
    // Every WRITE was done; the CQ holds the first cqe completions.
    std::memcpy(remote.exp(0), src.exp(0), 64 * std::size_t(n));
    int polled = 0;
    ibv_wc wc{};
    while (ibv_poll_cq(scq, 1, &wc) == 1) {
        INFO(wc_str(wc));
        CHECK(wc.wr_id == std::uint64_t(polled));
        CHECK(wc.status == IBV_WC_SUCCESS);
        ++polled;
    }
    INFO("cqe " << held << ", send CQEs polled " << polled);
    CHECK(polled == held);
    CHECK(query_qp(b).qp_state == IBV_QPS_RTS);
    // Room made: the next WRITE completes into the CQ.
    ibv_sge last = src.sge(64 * std::size_t(n), 64);
    ibv_send_wr w = rdma_wr(500, IBV_WR_RDMA_WRITE, &last, remote.addr(64 * std::size_t(n)), remote.mr->rkey);
    post_send(b, w);
    expect_wc(scq, "a WRITE after the overrun", 500, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
    std::memcpy(remote.exp(64 * std::size_t(n)), src.exp(64 * std::size_t(n)), 64);
    CHECK(query_qp(b).qp_state == IBV_QPS_RTS);
    remote.verify("the WRITEs' target");
    src.verify("the WRITEs' source");
    CHECK(drain_async(d.ctx, 20).empty());
    CHECK(ibv_destroy_qp(b) == 0);
    CHECK(ibv_destroy_cq(rcq) == 0);
    CHECK(ibv_destroy_cq(scq) == 0);
}

// rxe_cq_post(cq, cqe, solicited) wakes a solicited-only arm for a
// receive CQE of a message with SE, and for the responder's flush CQEs
// (posted as solicited); a "next" arm is kept when a solicited one follows
// it (6.1 keeps it, later kernels OR the flags). simnic's engine applies the
// same rule (hw-spec 7.3).
TEST_CASE("ibv_req_notify_cq(cq, 1): a SEND without SE does not wake, one with SE does, so does a flushed receive",
          "[verbs][events]") {
    Device d;
    ibv_comp_channel* ch = ibv_create_comp_channel(d.ctx);
    REQUIRE(ch != nullptr);
    {
        Qp a(d, IBV_QPT_RC), b(d, IBV_QPT_RC, ch);
        connect(a, b, 0x10, 0x20);
        Buffer src(d, 64), dst(d, 4 * 64);
        std::mt19937 rng(53);
        src.fill(0, 64, rng);
        ibv_sge sg = src.sge(0, 64);
        pollfd pfd{ch->fd, POLLIN, 0};
        const auto send = [&](std::uint64_t id, bool se) {
            ibv_sge r = dst.sge(64 * (id - 1), 64);
            post_recv(b.qp, r, 100 + id);
            ibv_send_wr w = send_wr(id, IBV_WR_SEND, &sg);
            if (se) w.send_flags |= IBV_SEND_SOLICITED;
            post_send(a.qp, w);
            expect_wc(a.cq, "SEND", id, IBV_WC_SUCCESS, IBV_WC_SEND);
            std::memcpy(dst.exp(64 * (id - 1)), src.exp(0), 64);
        };

        REQUIRE(ibv_req_notify_cq(b.cq, 1) == 0);
        send(1, false);
        expect_wc(b.cq, "RECV of a SEND without SE", 101, IBV_WC_SUCCESS, IBV_WC_RECV);
        CHECK(poll(&pfd, 1, 50) == 0);

        // Still armed: the SEND with SE wakes it.
        send(2, true);
        CHECK(wait_cq_event(ch) == b.cq);
        expect_wc(b.cq, "RECV of a SEND with SE", 102, IBV_WC_SUCCESS, IBV_WC_RECV);

        // A solicited arm after a "next" one leaves "next".
        REQUIRE(ibv_req_notify_cq(b.cq, 0) == 0);
        REQUIRE(ibv_req_notify_cq(b.cq, 1) == 0);
        send(3, false);
        CHECK(wait_cq_event(ch) == b.cq);
        expect_wc(b.cq, "RECV under a next arm", 103, IBV_WC_SUCCESS, IBV_WC_RECV);
        CHECK(poll(&pfd, 1, 0) == 0);

        // An error CQE: a receive flushed when b moves to ERR.
        REQUIRE(ibv_req_notify_cq(b.cq, 1) == 0);
        ibv_sge r4 = dst.sge(3 * 64, 64);
        post_recv(b.qp, r4, 104);
        ibv_qp_attr at{};
        at.qp_state = IBV_QPS_ERR;
        REQUIRE(ibv_modify_qp(b.qp, &at, IBV_QP_STATE) == 0);
        CHECK(wait_cq_event(ch) == b.cq);
        expect_wc(b.cq, "flushed RECV", 104, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV);
        dst.verify("b's receive buffers");
    }
    CHECK(ibv_destroy_comp_channel(ch) == 0);
}
