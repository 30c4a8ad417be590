// Memory windows and ibv_rereg_mr on a simnic device, from an ordinary
// libibverbs application (linked to the system libibverbs only; the device is
// reached through LD_PRELOAD under `simnic exec`, SIMNIC_TEST_DEVICE names it).
//
// Two RC QPs of the one device talk to each other through GID index 1. QP
// `b` owns the memory and binds windows on it; QP `a` is the remote peer that
// reads and writes through the windows' rkeys. A remote access error moves
// both QPs to ERR, so every case that expects one builds a fresh pair.
#include <endian.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <catch2/catch.hpp>

#include "verbs_app.h"

namespace {

constexpr int kMrAccess =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND;

using simnic::tb::rdma_wr;
using simnic::tb::send_wr;
using simnic::tb::wc_str;

using Device = simnic::tb::VerbsDevice;
using Mem = simnic::tb::Mr;

// An RC QP in PD `pd` with a CQ of its own, room for 16 WRs of one SGE
// each way.
struct Qp {
    Device& d;
    ibv_cq* cq = nullptr;
    ibv_qp* qp = nullptr;
    Qp(Device& dev, ibv_pd* pd) : d(dev) {
        cq = ibv_create_cq(d.ctx, 64, nullptr, nullptr, 0);
        REQUIRE(cq != nullptr);
        ibv_qp_cap cap{16, 16, 1, 1, 0};
        qp = simnic::tb::create_qp(pd, IBV_QPT_RC, cq, cap);
    }
    ~Qp() {
        CHECK(ibv_destroy_qp(qp) == 0);
        CHECK(ibv_destroy_cq(cq) == 0);
    }
    Qp(const Qp&) = delete;
    Qp& operator=(const Qp&) = delete;

    void connect(std::uint32_t dest) { simnic::tb::connect_qp(d, qp, IBV_QPT_RC, dest); }

    // The next completion (up to 5 s).
    ibv_wc wait() { return simnic::tb::poll_one(cq, "completion"); }
    ibv_wc expect(std::uint64_t wr_id, ibv_wc_status st, ibv_wc_opcode op) {
        return simnic::tb::expect_wc(cq, "completion", wr_id, st, op);
    }
    void post(ibv_send_wr& wr) { simnic::tb::post_send(qp, wr); }
};

// `a` and `b` connected to each other; `b` in PD `pd_b` (default: the device's).
struct Pair {
    Qp a, b;
    explicit Pair(Device& d, ibv_pd* pd_b = nullptr) : a(d, d.pd), b(d, pd_b ? pd_b : d.pd) {
        a.connect(b.qp->qp_num);
        b.connect(a.qp->qp_num);
    }
};

// QP `q` does an RDMA WRITE or READ of `n` bytes of `local` at remote `va`
// with `rkey`; the status of its completion.
ibv_wc_status rdma(Qp& q, ibv_wr_opcode op, Mem& local, std::uint64_t va, std::uint32_t rkey, std::size_t n) {
    ibv_sge s = local.sge(0, n);
    ibv_send_wr wr = rdma_wr(500, op, &s, va, rkey);
    q.post(wr);
    const ibv_wc wc = q.wait();
    INFO(wc_str(wc));
    CHECK(wc.wr_id == 500);
    return wc.status;
}

// A type 2 bind on QP `q`, as an IBV_WR_BIND_MW work request. The window
// has the new rkey once it completes (the application keeps it).
void bind_type2(Qp& q, ibv_mw* mw, Mem& m, std::size_t off, std::size_t len, unsigned access,
                ibv_wc_status want = IBV_WC_SUCCESS) {
    ibv_send_wr wr{};
    wr.wr_id = 600;
    wr.opcode = IBV_WR_BIND_MW;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.bind_mw.mw = mw;
    wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
    wr.bind_mw.bind_info.mr = m.mr;
    wr.bind_mw.bind_info.addr = m.va(off);
    wr.bind_mw.bind_info.length = len;
    wr.bind_mw.bind_info.mw_access_flags = access;
    q.post(wr);
    q.expect(600, want, IBV_WC_BIND_MW);
    if (want == IBV_WC_SUCCESS) mw->rkey = wr.bind_mw.rkey;
}

// A type 1 bind on QP `q` through ibv_bind_mw, signaled as `wr_id`; its
// completion has status `want`. The window has the new rkey once the call
// returns, whatever the completion says.
void bind_type1(Qp& q, ibv_mw* mw, Mem& m, std::size_t off, std::size_t len, unsigned access,
                std::uint64_t wr_id, ibv_wc_status want = IBV_WC_SUCCESS) {
    ibv_mw_bind b{};
    b.wr_id = wr_id;
    b.send_flags = IBV_SEND_SIGNALED;
    b.bind_info.mr = m.mr;
    b.bind_info.addr = m.va(off);
    b.bind_info.length = len;
    b.bind_info.mw_access_flags = access;
    REQUIRE(ibv_bind_mw(q.qp, mw, &b) == 0);
    q.expect(wr_id, want, IBV_WC_BIND_MW);
}

void local_inv(Qp& q, std::uint32_t rkey, ibv_wc_status want = IBV_WC_SUCCESS) {
    ibv_send_wr wr{};
    wr.wr_id = 700;
    wr.opcode = IBV_WR_LOCAL_INV;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.invalidate_rkey = rkey;
    q.post(wr);
    q.expect(700, want, IBV_WC_LOCAL_INV);
}

std::vector<std::uint8_t> pattern(std::size_t n, int seed) {
    std::vector<std::uint8_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(i * 13 + seed + (i >> 8));
    return v;
}

}  // namespace

TEST_CASE("device attributes: memory windows as rxe reports them", "[mw]") {
    Device d;
    ibv_device_attr a{};
    REQUIRE(ibv_query_device(d.ctx, &a) == 0);
    CHECK(a.max_mw == 524287);
    CHECK((a.device_cap_flags & IBV_DEVICE_MEM_WINDOW) != 0);
    CHECK((a.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) != 0);
}

TEST_CASE("type 1 window: ibv_bind_mw, WRITE and READ through it, its edges, rebind, dealloc", "[mw]") {
    Device d;
    Mem target(d.pd, 8192, kMrAccess, 0x5A);
    Mem src(d.pd, 512, kMrAccess, 0);
    Mem back(d.pd, 512, kMrAccess, 0);
    const auto data = pattern(512, 7);
    std::memcpy(src.buf.data(), data.data(), data.size());

    ibv_mw* mw = ibv_alloc_mw(d.pd, IBV_MW_TYPE_1);
    INFO("ibv_alloc_mw errno " << errno);
    REQUIRE(mw != nullptr);
    CHECK(mw->type == IBV_MW_TYPE_1);
    const std::uint32_t first = mw->rkey;
    {
        Pair p(d);
        bind_type1(p.b, mw, target, 1024, 2048, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, 10);
        CHECK(mw->rkey == ibv_inc_rkey(first));  // as rdma-core's rxe provider

        CHECK(rdma(p.a, IBV_WR_RDMA_WRITE, src, target.va(1024 + 100), mw->rkey, 512) == IBV_WC_SUCCESS);
        CHECK(std::memcmp(target.buf.data() + 1124, data.data(), 512) == 0);
        CHECK(target.buf[1123] == 0x5A);
        CHECK(target.buf[1124 + 512] == 0x5A);
        CHECK(rdma(p.a, IBV_WR_RDMA_READ, back, target.va(1124), mw->rkey, 512) == IBV_WC_SUCCESS);
        CHECK(back.buf == src.buf);
        // The window's last bytes are in it; its first is too.
        CHECK(rdma(p.a, IBV_WR_RDMA_WRITE, src, target.va(1024 + 2048 - 16), mw->rkey, 16) == IBV_WC_SUCCESS);
        CHECK(rdma(p.a, IBV_WR_RDMA_READ, back, target.va(1024), mw->rkey, 1) == IBV_WC_SUCCESS);

        // The MR cannot be deregistered while the window is bound (rxe: EINVAL).
        CHECK(ibv_dereg_mr(target.mr) == EINVAL);
    }
    {   // One byte past the window, still inside the MR: remote access error.
        Pair p(d);
        const auto before = target.buf;
        CHECK(rdma(p.a, IBV_WR_RDMA_WRITE, src, target.va(1024 + 2048 - 15), mw->rkey, 16) ==
              IBV_WC_REM_ACCESS_ERR);
        CHECK(target.buf == before);
    }
    {   // Below the window.
        Pair p(d);
        CHECK(rdma(p.a, IBV_WR_RDMA_READ, back, target.va(1000), mw->rkey, 64) == IBV_WC_REM_ACCESS_ERR);
    }
    const std::uint32_t bound = mw->rkey;
    {   // Rebind to a READ-only window elsewhere: the old rkey is stale, WRITE is refused.
        Pair p(d);
        bind_type1(p.b, mw, target, 4096, 4096, IBV_ACCESS_REMOTE_READ, 11);
        CHECK(rdma(p.a, IBV_WR_RDMA_READ, back, target.va(4096), mw->rkey, 256) == IBV_WC_SUCCESS);
        CHECK(rdma(p.a, IBV_WR_RDMA_READ, back, target.va(4096), bound, 256) == IBV_WC_REM_ACCESS_ERR);
    }
    {
        Pair p(d);
        CHECK(rdma(p.a, IBV_WR_RDMA_WRITE, src, target.va(4096), mw->rkey, 64) == IBV_WC_REM_ACCESS_ERR);
    }
    // Type 1 windows cannot be invalidated (o10-37.2.26).
    {
        Pair p(d);
        local_inv(p.b, mw->rkey, IBV_WC_LOC_QP_OP_ERR);
    }
    // Deallocated: the key is dead, and the MR may go.
    const std::uint32_t last = mw->rkey;
    REQUIRE(ibv_dealloc_mw(mw) == 0);
    {
        Pair p(d);
        CHECK(rdma(p.a, IBV_WR_RDMA_READ, back, target.va(4096), last, 64) == IBV_WC_REM_ACCESS_ERR);
    }
}

TEST_CASE("type 2 window: IBV_WR_BIND_MW, the bound QP only, LOCAL_INV, SEND_WITH_INV", "[mw]") {
    Device d;
    Mem target(d.pd, 4096, kMrAccess, 0);
    Mem src(d.pd, 256, kMrAccess, 0);
    const auto data = pattern(256, 3);
    std::memcpy(src.buf.data(), data.data(), data.size());
    ibv_mw* mw = ibv_alloc_mw(d.pd, IBV_MW_TYPE_2);
    REQUIRE(mw != nullptr);
    CHECK(mw->type == IBV_MW_TYPE_2);

    {   // Bound on p.b: p.a reaches it; a zero-based window addresses from 0.
        Pair p(d);
        bind_type2(p.b, mw, target, 512, 1024, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ZERO_BASED);
        CHECK(rdma(p.a, IBV_WR_RDMA_WRITE, src, 64, mw->rkey, 256) == IBV_WC_SUCCESS);
        CHECK(std::memcmp(target.buf.data() + 512 + 64, data.data(), 256) == 0);
        // Another QP of the same PD may not use it (rxe_lookup_mw: mw->qp).
        Pair other(d);
        CHECK(rdma(other.a, IBV_WR_RDMA_WRITE, src, 64, mw->rkey, 256) == IBV_WC_REM_ACCESS_ERR);
        // Past the zero-based window's length.
        CHECK(rdma(p.a, IBV_WR_RDMA_WRITE, src, 1024 - 128, mw->rkey, 256) == IBV_WC_REM_ACCESS_ERR);
    }
    {   // A bound type 2 window is not bound again (o10-37.2.30): MW_BIND_ERR.
        Pair p(d);
        bind_type2(p.b, mw, target, 0, 64, IBV_ACCESS_REMOTE_READ, IBV_WC_MW_BIND_ERR);
    }
    {   // LOCAL_INV frees it; the key stops working; it can be bound again.
        Pair p(d);
        local_inv(p.b, mw->rkey);
        CHECK(rdma(p.a, IBV_WR_RDMA_WRITE, src, 0, mw->rkey, 16) == IBV_WC_REM_ACCESS_ERR);
    }
    {   // SEND_WITH_INV from the peer invalidates it at the receiver.
        Pair p(d);
        bind_type2(p.b, mw, target, 0, 4096, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
        CHECK(rdma(p.a, IBV_WR_RDMA_WRITE, src, target.va(0), mw->rkey, 256) == IBV_WC_SUCCESS);
        Mem rbuf(d.pd, 64, kMrAccess, 0);
        ibv_sge rs = rbuf.sge(0, 64);
        simnic::tb::post_recv(p.b.qp, rs, 800);
        ibv_sge ss = src.sge(0, 32);
        ibv_send_wr sw = send_wr(801, IBV_WR_SEND_WITH_INV, &ss);
        sw.invalidate_rkey = mw->rkey;
        p.a.post(sw);
        p.a.expect(801, IBV_WC_SUCCESS, IBV_WC_SEND);
        const ibv_wc rc = p.b.expect(800, IBV_WC_SUCCESS, IBV_WC_RECV);
        CHECK((rc.wc_flags & IBV_WC_WITH_INV) != 0);
        CHECK(rc.invalidated_rkey == mw->rkey);
        CHECK(rc.byte_len == 32);
        CHECK(rdma(p.a, IBV_WR_RDMA_WRITE, src, target.va(0), mw->rkey, 16) == IBV_WC_REM_ACCESS_ERR);
    }
    {   // SEND_WITH_INV of an rkey that names no window: the receiver refuses it.
        Pair p(d);
        Mem rbuf(d.pd, 64, kMrAccess, 0);
        ibv_sge rs = rbuf.sge(0, 64);
        simnic::tb::post_recv(p.b.qp, rs, 810);
        ibv_sge ss = src.sge(0, 8);
        ibv_send_wr sw = send_wr(811, IBV_WR_SEND_WITH_INV, &ss);
        sw.invalidate_rkey = target.mr->rkey;  // a user MR: rxe does not invalidate those
        p.a.post(sw);
        p.a.expect(811, IBV_WC_REM_INV_REQ_ERR, IBV_WC_SEND);
    }
    REQUIRE(ibv_dealloc_mw(mw) == 0);
}

TEST_CASE("bind errors complete with IBV_WC_MW_BIND_ERR and flush the QP", "[mw]") {
    Device d;
    Mem plain(d.pd, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, 0);  // no MW_BIND
    Mem ok(d.pd, 4096, kMrAccess, 0);
    ibv_mw* mw = ibv_alloc_mw(d.pd, IBV_MW_TYPE_1);
    REQUIRE(mw != nullptr);
    const std::uint32_t key = mw->rkey;
    {
        Pair p(d);
        bind_type1(p.b, mw, plain, 0, 64, IBV_ACCESS_REMOTE_READ, 20, IBV_WC_MW_BIND_ERR);
        ibv_qp_attr qa{};
        ibv_qp_init_attr qi{};
        REQUIRE(ibv_query_qp(p.b.qp, &qa, IBV_QP_STATE, &qi) == 0);
        CHECK(qa.qp_state == IBV_QPS_ERR);
        mw->rkey = key;  // a failed bind changed nothing: undo, as rdma-core's rxe asks
    }
    {   // Outside the MR (C10-75).
        Pair p(d);
        bind_type1(p.b, mw, ok, 4000, 200, IBV_ACCESS_REMOTE_READ, 21, IBV_WC_MW_BIND_ERR);
        mw->rkey = key;
    }
    // Zero-based type 1 windows are refused by the provider, as rxe's.
    {
        Pair p(d);
        ibv_mw_bind b{};
        b.bind_info.mr = ok.mr;
        b.bind_info.addr = ok.va(0);
        b.bind_info.length = 64;
        b.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ZERO_BASED;
        CHECK(ibv_bind_mw(p.b.qp, mw, &b) == EINVAL);
    }
    REQUIRE(ibv_dealloc_mw(mw) == 0);
    // A type 2 window with ibv_bind_mw: libibverbs refuses it.
    ibv_mw* mw2 = ibv_alloc_mw(d.pd, IBV_MW_TYPE_2);
    REQUIRE(mw2 != nullptr);
    {
        Pair p(d);
        ibv_mw_bind b{};
        b.bind_info.mr = ok.mr;
        b.bind_info.length = 64;
        b.bind_info.addr = ok.va(0);
        CHECK(ibv_bind_mw(p.b.qp, mw2, &b) == EINVAL);
    }
    REQUIRE(ibv_dealloc_mw(mw2) == 0);
}

TEST_CASE("ibv_rereg_mr: CHANGE_ACCESS and CHANGE_PD work, CHANGE_TRANSLATION is EOPNOTSUPP", "[rereg]") {
    Device d;
    Mem target(d.pd, 4096, IBV_ACCESS_LOCAL_WRITE, 0);
    Mem src(d.pd, 64, kMrAccess, 0x77);
    {   // No REMOTE_WRITE yet.
        Pair p(d);
        CHECK(rdma(p.a, IBV_WR_RDMA_WRITE, src, target.va(0), target.mr->rkey, 64) == IBV_WC_REM_ACCESS_ERR);
    }
    const std::uint32_t lkey = target.mr->lkey;
    REQUIRE(ibv_rereg_mr(target.mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
                         IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) == 0);
    CHECK(target.mr->lkey == lkey);  // rxe keeps the keys
    {
        Pair p(d);
        CHECK(rdma(p.a, IBV_WR_RDMA_WRITE, src, target.va(128), target.mr->rkey, 64) == IBV_WC_SUCCESS);
        CHECK(target.buf[128] == 0x77);
        CHECK(target.buf[191] == 0x77);
        CHECK(target.buf[192] == 0);
    }
    // Another PD: the responder QP (in the device's PD) no longer matches.
    ibv_pd* pd2 = ibv_alloc_pd(d.ctx);
    REQUIRE(pd2 != nullptr);
    REQUIRE(ibv_rereg_mr(target.mr, IBV_REREG_MR_CHANGE_PD, pd2, nullptr, 0, 0) == 0);
    CHECK(target.mr->pd == pd2);
    CHECK(ibv_dealloc_pd(pd2) == EBUSY);  // the MR is in it now
    {
        Pair p(d);
        CHECK(rdma(p.a, IBV_WR_RDMA_WRITE, src, target.va(0), target.mr->rkey, 64) == IBV_WC_REM_ACCESS_ERR);
    }
    {   // A responder QP in pd2 reaches it.
        Pair p(d, pd2);
        CHECK(rdma(p.a, IBV_WR_RDMA_WRITE, src, target.va(256), target.mr->rkey, 64) == IBV_WC_SUCCESS);
        CHECK(target.buf[256] == 0x77);
    }
    REQUIRE(ibv_rereg_mr(target.mr, IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS, d.pd, nullptr, 0,
                         IBV_ACCESS_LOCAL_WRITE) == 0);
    CHECK(target.mr->pd == d.pd);
    CHECK(ibv_dealloc_pd(pd2) == 0);

    errno = 0;
    std::vector<std::uint8_t> other(4096);
    CHECK(ibv_rereg_mr(target.mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, other.data(), other.size(), 0) ==
          IBV_REREG_MR_ERR_CMD);
    CHECK(errno == EOPNOTSUPP);
    CHECK(target.mr->addr == target.buf.data());  // unchanged
    errno = 0;
    CHECK(ibv_rereg_mr(target.mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0, IBV_ACCESS_REMOTE_WRITE) ==
          IBV_REREG_MR_ERR_CMD);  // remote write needs local write
    CHECK(errno == EINVAL);
    CHECK(ibv_rereg_mr(target.mr, 1 << 5, nullptr, nullptr, 0, 0) == IBV_REREG_MR_ERR_INPUT);
    {   // Still LOCAL_WRITE only.
        Pair p(d);
        CHECK(rdma(p.a, IBV_WR_RDMA_WRITE, src, target.va(0), target.mr->rkey, 64) == IBV_WC_REM_ACCESS_ERR);
    }
}

TEST_CASE("windows left allocated and bound are freed with the context", "[mw]") {
    Device* d = new Device;
    Mem* target = new Mem(d->pd, 4096, kMrAccess, 0);
    ibv_mw* mw = ibv_alloc_mw(d->pd, IBV_MW_TYPE_2);
    REQUIRE(mw != nullptr);
    ibv_mw* mw1 = ibv_alloc_mw(d->pd, IBV_MW_TYPE_1);
    REQUIRE(mw1 != nullptr);
    {
        Pair p(*d);
        bind_type2(p.b, mw, *target, 0, 4096, IBV_ACCESS_REMOTE_READ);
    }
    // Closing the device without deallocating anything: the firmware frees
    // the windows before the MR (checked by the runner: no object is left).
    CHECK(ibv_close_device(d->ctx) == 0);
    d->ctx = nullptr;
    (void)mw1;
    // The Mem and Device objects are not destroyed: their verbs would name a
    // closed context. Leaking them in a test process is harmless.
    (void)target;
}
