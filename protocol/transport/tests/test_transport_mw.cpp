// Memory windows through the transport core: BIND_MW and LOCAL_INV executed
// by the requester in SQ order, remote access through a window at the
// responder, SEND_WITH_INV, and the checks of hw-spec 6.5 / 11.2 (mw.h).
#include "harness.h"

using namespace tb;

namespace {

constexpr uint32_t kMrMw = kAllAccess | hw::access::kMwBind;

SendWqe bind_wqe(uint64_t wr_id, uint32_t mw_rkey, const Buf& b, uint64_t off, uint64_t len,
                 uint32_t access, uint32_t new_rkey = 0) {
    SendWqe w = wqe(hw::WrOpcode::BindMw, wr_id, {});
    w.bind.mw_rkey = mw_rkey;
    w.bind.new_rkey = new_rkey ? new_rkey : ((mw_rkey & ~0xFFu) | ((mw_rkey + 1) & 0xFFu));
    w.bind.mr_lkey = b.mr->lkey;
    w.bind.addr = b.addr + off;
    w.bind.length = len;
    w.bind.access = access;
    return w;
}

SendWqe rdma(hw::WrOpcode op, uint64_t wr_id, const Buf& local, uint64_t va, uint32_t rkey,
             uint32_t len) {
    SendWqe w = wqe(op, wr_id, {local.sge(0, len)});
    w.remote_addr = va;
    w.rkey = rkey;
    return w;
}

// Node b binds a window over its buffer with a bind WQE on its own QP and
// checks the bind's completion. Returns the window's new rkey.
uint32_t bind_on_b(Fabric& f, uint32_t mw, const Buf& target, uint64_t off, uint64_t len,
                   uint32_t access) {
    SendWqe w = bind_wqe(77, mw, target, off, len, access);
    REQUIRE(f.b().qp->post_send(w) == PostStatus::Ok);
    f.run();
    auto s = f.b().cq.side(CqSide::Send);
    REQUIRE(!s.empty());
    CHECK(s.back().wc.wr_id == 77);
    CHECK(s.back().wc.opcode == hw::WcOpcode::BindMw);
    CHECK(s.back().wc.status == hw::WcStatus::Success);
    CHECK(s.back().wc.byte_len == 0);
    return w.bind.new_rkey;
}

// Node a's RDMA op against node b; the status of a's completion.
hw::WcStatus a_does(Fabric& f, hw::WrOpcode op, const Buf& local, uint64_t va, uint32_t rkey,
                uint32_t len) {
    const size_t before = f.a().cq.side(CqSide::Send).size();
    REQUIRE(f.a().qp->post_send(rdma(op, 9, local, va, rkey, len)) == PostStatus::Ok);
    f.run();
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == before + 1);
    return s.back().wc.status;
}

// A failed bind on b: MW_BIND_ERR, b's QP in ERR, the window unchanged.
void expect_bind_fails(Fabric& f, const SendWqe& w) {
    MwRecord before = *f.b().mem.mw(w.bind.mw_rkey);
    REQUIRE(f.b().qp->post_send(w) == PostStatus::Ok);
    f.run();
    auto s = f.b().cq.side(CqSide::Send);
    REQUIRE(s.size() == 1);
    CHECK(s[0].wc.opcode == hw::WcOpcode::BindMw);
    CHECK(s[0].wc.status == hw::WcStatus::MwBindErr);
    CHECK(f.b().qp->state() == hw::QpState::Err);
    const MwRecord* after = f.b().mem.mw(w.bind.mw_rkey);
    REQUIRE(after != nullptr);
    CHECK(after->state == before.state);
    CHECK(after->length == before.length);
}

}  // namespace

TEST_CASE("mw: type 1 window: WRITE and READ through it, then out of range", "[transport][mw]") {
    Fabric f;
    Buf target = make_buf(f.b(), 4096, kMrMw);
    Buf src = make_buf(f.a(), 256, kAllAccess, 3);
    Buf back = make_buf(f.a(), 256, kAllAccess);
    const uint32_t mw = f.b().mem.alloc_mw(hw::MwType::Type1);
    const uint32_t rkey = bind_on_b(f, mw, target, 1024, 512, hw::access::kRemoteWrite | hw::access::kRemoteRead);
    CHECK(rkey != mw);
    CHECK(f.b().mem.mr_by_lkey(target.mr->lkey)->mw_count == 1);

    CHECK(a_does(f, hw::WrOpcode::RdmaWrite, src, target.addr + 1024 + 100, rkey, 256) == hw::WcStatus::Success);
    CHECK(bytes(f.b(), target.addr + 1124, 256) == bytes(f.a(), src.addr, 256));
    CHECK(bytes(f.b(), target.addr + 1024, 100) == std::vector<uint8_t>(100, 0));
    CHECK(a_does(f, hw::WrOpcode::RdmaRead, back, target.addr + 1124, rkey, 256) == hw::WcStatus::Success);
    CHECK(bytes(f.a(), back.addr, 256) == bytes(f.a(), src.addr, 256));

    // One byte past the window, though still inside the MR: refused, and
    // nothing of it is written.
    const auto before = bytes(f.b(), target.addr, 4096);
    CHECK(a_does(f, hw::WrOpcode::RdmaWrite, src, target.addr + 1024 + 512 - 255, rkey, 256) ==
          hw::WcStatus::RemAccessErr);
    CHECK(bytes(f.b(), target.addr, 4096) == before);
    CHECK(f.b().qp->state() == hw::QpState::Err);
}

TEST_CASE("mw: missing right, and the key of an earlier binding", "[transport][mw]") {
    SECTION("READ-only window refuses a WRITE") {
        Fabric f;
        Buf target = make_buf(f.b(), 1024, kMrMw);
        Buf src = make_buf(f.a(), 64, kAllAccess, 1);
        const uint32_t rkey = bind_on_b(f, f.b().mem.alloc_mw(hw::MwType::Type1), target, 0, 1024,
                                        hw::access::kRemoteRead);
        CHECK(a_does(f, hw::WrOpcode::RdmaWrite, src, target.addr, rkey, 64) == hw::WcStatus::RemAccessErr);
    }
    SECTION("rebinding a type 1 window retires its old rkey") {
        Fabric f;
        Buf target = make_buf(f.b(), 1024, kMrMw);
        Buf src = make_buf(f.a(), 64, kAllAccess, 1);
        const uint32_t mw = f.b().mem.alloc_mw(hw::MwType::Type1);
        const uint32_t k1 = bind_on_b(f, mw, target, 0, 512, hw::access::kRemoteWrite);
        const uint32_t k2 = bind_on_b(f, k1, target, 512, 512, hw::access::kRemoteWrite);
        CHECK((k1 >> 8) == (k2 >> 8));
        CHECK(k1 != k2);
        CHECK(a_does(f, hw::WrOpcode::RdmaWrite, src, target.addr + 512, k2, 64) == hw::WcStatus::Success);
        CHECK(a_does(f, hw::WrOpcode::RdmaWrite, src, target.addr + 512, k1, 64) == hw::WcStatus::RemAccessErr);
    }
    SECTION("an unbound type 1 window grants nothing") {
        Fabric f;
        Buf target = make_buf(f.b(), 1024, kMrMw);
        Buf src = make_buf(f.a(), 64, kAllAccess, 1);
        const uint32_t mw = f.b().mem.alloc_mw(hw::MwType::Type1);
        const uint32_t k1 = bind_on_b(f, mw, target, 0, 1024, hw::access::kRemoteWrite);
        SendWqe unbind = bind_wqe(78, k1, target, 0, 0, 0);
        REQUIRE(f.b().qp->post_send(unbind) == PostStatus::Ok);
        f.run();
        CHECK(f.b().cq.side(CqSide::Send).back().wc.status == hw::WcStatus::Success);
        CHECK(f.b().mem.mr_by_lkey(target.mr->lkey)->mw_count == 0);
        CHECK(a_does(f, hw::WrOpcode::RdmaWrite, src, target.addr, unbind.bind.new_rkey, 64) ==
              hw::WcStatus::RemAccessErr);
    }
}

TEST_CASE("mw: type 2 window belongs to the QP it was bound on", "[transport][mw]") {
    Fabric f;
    Buf target = make_buf(f.b(), 1024, kMrMw);
    Buf src = make_buf(f.a(), 64, kAllAccess, 5);
    const uint32_t mw = f.b().mem.alloc_mw(hw::MwType::Type2);
    CHECK(f.b().mem.mw(mw)->state == hw::MwState::Free);
    const uint32_t rkey = bind_on_b(f, mw, target, 0, 1024, hw::access::kRemoteWrite | hw::access::kRemoteAtomic);
    CHECK(f.b().mem.mw(rkey)->qpn == 0x12);
    CHECK(a_does(f, hw::WrOpcode::RdmaWrite, src, target.addr, rkey, 64) == hw::WcStatus::Success);

    SECTION("another QP's requests are refused") {
        // Rebind it as if on QP 0x77 (same PD): now b's QP 0x12 may not use it.
        f.b().mem.invalidate(rkey);
        MwBind b{rkey, rkey + 1, target.mr->lkey, target.addr, 1024, hw::access::kRemoteWrite};
        REQUIRE(f.b().mem.bind_as(MwQp{0x77, MemTable::kPdn}, b) == MemStatus::Ok);
        CHECK(a_does(f, hw::WrOpcode::RdmaWrite, src, target.addr, rkey + 1, 64) == hw::WcStatus::RemAccessErr);
    }
    SECTION("LOCAL_INV frees it: the key stops working, the window can be bound again") {
        SendWqe inv = wqe(hw::WrOpcode::LocalInv, 90, {});
        inv.invalidate_rkey = rkey;
        REQUIRE(f.b().qp->post_send(inv) == PostStatus::Ok);
        f.run();
        auto s = f.b().cq.side(CqSide::Send);
        CHECK(s.back().wc.opcode == hw::WcOpcode::LocalInv);
        CHECK(s.back().wc.status == hw::WcStatus::Success);
        CHECK(f.b().mem.mw(rkey)->state == hw::MwState::Free);
        CHECK(f.b().mem.mr_by_lkey(target.mr->lkey)->mw_count == 0);
        CHECK(a_does(f, hw::WrOpcode::RdmaWrite, src, target.addr, rkey, 64) == hw::WcStatus::RemAccessErr);
    }
    SECTION("an atomic through the window") {
        uint64_t v = 40;
        std::memcpy(f.b().mem.ptr(target.addr + 64), &v, 8);
        Buf res = make_buf(f.a(), 8, kAllAccess);
        SendWqe w = wqe(hw::WrOpcode::AtomicFetchAndAdd, 11, {res.sge()});
        w.remote_addr = target.addr + 64;
        w.rkey = rkey;
        w.compare_add = 2;
        REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
        f.run();
        CHECK(f.a().cq.side(CqSide::Send).back().wc.status == hw::WcStatus::Success);
        std::memcpy(&v, f.b().mem.ptr(target.addr + 64), 8);
        CHECK(v == 42);
    }
}

TEST_CASE("mw: SEND_WITH_INV invalidates a type 2 window", "[transport][mw]") {
    Fabric f;
    Buf target = make_buf(f.b(), 1024, kMrMw);
    Buf dst = make_buf(f.b(), 64, kAllAccess);
    Buf src = make_buf(f.a(), 64, kAllAccess, 2);
    const uint32_t rkey =
        bind_on_b(f, f.b().mem.alloc_mw(hw::MwType::Type2), target, 0, 1024, hw::access::kRemoteWrite);
    f.b().post_recv(1, {dst.sge()});
    SendWqe w = wqe(hw::WrOpcode::SendWithInv, 4, {src.sge()});
    w.invalidate_rkey = rkey;
    REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    f.run();
    auto r = f.b().cq.side(CqSide::Recv);
    REQUIRE(r.size() == 1);
    CHECK(r[0].wc.status == hw::WcStatus::Success);
    CHECK((r[0].wc.wc_flags & hw::wc_flags::kWithInv));
    CHECK(r[0].wc.imm_data == rkey);
    CHECK(f.b().mem.mw(rkey)->state == hw::MwState::Free);
    CHECK(a_does(f, hw::WrOpcode::RdmaWrite, src, target.addr, rkey, 64) == hw::WcStatus::RemAccessErr);
}

TEST_CASE("mw: invalidating a type 1 window or an unknown key fails", "[transport][mw]") {
    SECTION("SEND_WITH_INV of a type 1 window: invalid request") {
        Fabric f;
        Buf target = make_buf(f.b(), 1024, kMrMw);
        Buf dst = make_buf(f.b(), 64, kAllAccess);
        Buf src = make_buf(f.a(), 64, kAllAccess, 2);
        const uint32_t rkey =
            bind_on_b(f, f.b().mem.alloc_mw(hw::MwType::Type1), target, 0, 1024, hw::access::kRemoteWrite);
        f.b().post_recv(1, {dst.sge()});
        SendWqe w = wqe(hw::WrOpcode::SendWithInv, 4, {src.sge()});
        w.invalidate_rkey = rkey;
        REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
        f.run();
        CHECK(f.a().cq.side(CqSide::Send).back().wc.status == hw::WcStatus::RemInvReqErr);
        CHECK(f.b().mem.mw(rkey)->state == hw::MwState::Valid);
    }
    SECTION("LOCAL_INV of a stale key: LOC_QP_OP_ERR, QP to ERR, later WQEs flushed") {
        Fabric f;
        const uint32_t mw = f.b().mem.alloc_mw(hw::MwType::Type2);
        SendWqe inv = wqe(hw::WrOpcode::LocalInv, 90, {});
        inv.invalidate_rkey = mw + 1;
        REQUIRE(f.b().qp->post_send(inv) == PostStatus::Ok);
        Buf s = make_buf(f.b(), 8, kAllAccess);
        // The requester failed it at once: the QP is in ERR, later WQEs flush.
        CHECK(f.b().qp->post_send(wqe(hw::WrOpcode::Send, 91, {s.sge()})) == PostStatus::Flushed);
        f.run();
        auto c = f.b().cq.side(CqSide::Send);
        REQUIRE(c.size() == 2);
        CHECK(c[0].wc.wr_id == 90);
        CHECK(c[0].wc.opcode == hw::WcOpcode::LocalInv);
        CHECK(c[0].wc.status == hw::WcStatus::LocQpOpErr);
        CHECK(c[1].wc.wr_id == 91);
        CHECK(c[1].wc.status == hw::WcStatus::WrFlushErr);
        CHECK(f.b().qp->state() == hw::QpState::Err);
    }
    SECTION("LOCAL_INV of a type 1 window") {
        Fabric f;
        const uint32_t mw = f.b().mem.alloc_mw(hw::MwType::Type1);
        SendWqe inv = wqe(hw::WrOpcode::LocalInv, 90, {});
        inv.invalidate_rkey = mw;
        REQUIRE(f.b().qp->post_send(inv) == PostStatus::Ok);
        f.run();
        CHECK(f.b().cq.side(CqSide::Send).back().wc.status == hw::WcStatus::LocQpOpErr);
    }
}

TEST_CASE("mw: bind checks (rxe_check_bind_mw)", "[transport][mw]") {
    Fabric f;
    Buf target = make_buf(f.b(), 1024, kMrMw);
    SECTION("MR without MW_BIND (C10-73)") {
        Buf plain = make_buf(f.b(), 1024, kAllAccess);
        expect_bind_fails(f, bind_wqe(1, f.b().mem.alloc_mw(hw::MwType::Type1), plain, 0, 64,
                                      hw::access::kRemoteRead));
    }
    SECTION("writable window on an MR without LOCAL_WRITE (C10-74)") {
        Buf ro = make_buf(f.b(), 1024, hw::access::kRemoteRead | hw::access::kMwBind);
        expect_bind_fails(f, bind_wqe(1, f.b().mem.alloc_mw(hw::MwType::Type1), ro, 0, 64,
                                      hw::access::kRemoteWrite));
    }
    SECTION("range past the MR (C10-75)") {
        expect_bind_fails(f, bind_wqe(1, f.b().mem.alloc_mw(hw::MwType::Type2), target, 1000, 64,
                                      hw::access::kRemoteRead));
    }
    SECTION("zero-based type 1 window (o10-36.2.2)") {
        expect_bind_fails(f, bind_wqe(1, f.b().mem.alloc_mw(hw::MwType::Type1), target, 0, 64,
                                      hw::access::kRemoteRead | hw::access::kZeroBased));
    }
    SECTION("type 2 with length 0 (o10-37.2.40)") {
        expect_bind_fails(f, bind_wqe(1, f.b().mem.alloc_mw(hw::MwType::Type2), target, 0, 0,
                                      hw::access::kRemoteRead));
    }
    SECTION("type 2 of another PD (C10-72)") {
        expect_bind_fails(f, bind_wqe(1, f.b().mem.alloc_mw(hw::MwType::Type2, 7), target, 0, 64,
                                      hw::access::kRemoteRead));
    }
    SECTION("type 2 not FREE: bound already (o10-37.2.30)") {
        const uint32_t mw = f.b().mem.alloc_mw(hw::MwType::Type2);
        MwBind b{mw, mw + 1, target.mr->lkey, target.addr, 64, hw::access::kRemoteRead};
        REQUIRE(f.b().mem.bind_as(MwQp{0x12, MemTable::kPdn}, b) == MemStatus::Ok);
        expect_bind_fails(f, bind_wqe(1, mw + 1, target, 0, 64, hw::access::kRemoteRead));
    }
    SECTION("the window's key is not the current one") {
        const uint32_t mw = f.b().mem.alloc_mw(hw::MwType::Type1);
        SendWqe w = bind_wqe(1, mw, target, 0, 64, hw::access::kRemoteRead);
        w.bind.mw_rkey = mw ^ 0x3;
        REQUIRE(f.b().qp->post_send(w) == PostStatus::Ok);
        f.run();
        CHECK(f.b().cq.side(CqSide::Send).back().wc.status == hw::WcStatus::MwBindErr);
        CHECK(f.b().mem.mw(mw)->length == 0);
    }
    SECTION("unsupported access bit") {
        expect_bind_fails(f, bind_wqe(1, f.b().mem.alloc_mw(hw::MwType::Type1), target, 0, 64,
                                      hw::access::kRemoteRead | (1u << 6)));
    }
}

TEST_CASE("mw: zero-based type 2 window", "[transport][mw]") {
    Fabric f;
    Buf target = make_buf(f.b(), 4096, kMrMw);
    Buf src = make_buf(f.a(), 128, kAllAccess, 9);
    const uint32_t rkey = bind_on_b(f, f.b().mem.alloc_mw(hw::MwType::Type2), target, 2048, 256,
                                    hw::access::kRemoteWrite | hw::access::kZeroBased);
    CHECK(a_does(f, hw::WrOpcode::RdmaWrite, src, 16, rkey, 128) == hw::WcStatus::Success);
    CHECK(bytes(f.b(), target.addr + 2048 + 16, 128) == bytes(f.a(), src.addr, 128));
    CHECK(a_does(f, hw::WrOpcode::RdmaWrite, src, 200, rkey, 128) == hw::WcStatus::RemAccessErr);
}

TEST_CASE("mw: local operations complete in SQ order and honour the fence", "[transport][mw]") {
    Fabric f;
    Buf target = make_buf(f.b(), 1024, kMrMw);
    Buf src = make_buf(f.a(), 64, kAllAccess, 4);
    Buf their = make_buf(f.b(), 64, kAllAccess);
    Buf local = make_buf(f.a(), 1024, kMrMw);
    const uint32_t mw = f.a().mem.alloc_mw(hw::MwType::Type1);
    // WRITE (needs an ACK), then a bind: the bind acts at once, but its
    // completion waits for the WRITE's.
    REQUIRE(f.a().qp->post_send(rdma(hw::WrOpcode::RdmaWrite, 1, src, their.addr, their.mr->rkey, 64)) ==
            PostStatus::Ok);
    SendWqe b = bind_wqe(2, mw, local, 0, 64, hw::access::kRemoteRead);
    REQUIRE(f.a().qp->post_send(b) == PostStatus::Ok);
    CHECK(f.a().mem.mw(mw)->state == hw::MwState::Valid);
    CHECK(f.a().mem.mw(mw)->length == 64);  // acted before the WRITE's ACK
    CHECK(f.a().cq.side(CqSide::Send).empty());
    // A fenced LOCAL_INV-free rebind waits for everything before it.
    SendWqe fenced = bind_wqe(3, b.bind.new_rkey, local, 64, 64, hw::access::kRemoteRead);
    fenced.send_flags |= hw::send_flags::kFence;
    REQUIRE(f.a().qp->post_send(fenced) == PostStatus::Ok);
    CHECK(f.a().mem.mw(mw)->addr == local.addr);  // not yet
    f.run();
    CHECK(f.a().mem.mw(mw)->addr == local.addr + 64);
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 3);
    CHECK(s[0].wc.wr_id == 1);
    CHECK(s[1].wc.wr_id == 2);
    CHECK(s[1].wc.opcode == hw::WcOpcode::BindMw);
    CHECK(s[2].wc.wr_id == 3);
    (void)target;
}

TEST_CASE("mw: QP types (rxe's opcode table)", "[transport][mw]") {
    SECTION("UC binds, but has no LOCAL_INV") {
        Fabric f(hw::QpType::Uc);
        Buf target = make_buf(f.b(), 1024, kMrMw);
        const uint32_t rkey =
            bind_on_b(f, f.b().mem.alloc_mw(hw::MwType::Type1), target, 0, 64, hw::access::kRemoteWrite);
        SendWqe inv = wqe(hw::WrOpcode::LocalInv, 1, {});
        inv.invalidate_rkey = rkey;
        CHECK(f.b().qp->post_send(inv) == PostStatus::InvalidOpcode);
    }
    SECTION("UD has neither") {
        Fabric f(hw::QpType::Ud);
        Buf target = make_buf(f.b(), 1024, kMrMw);
        CHECK(f.b().qp->post_send(bind_wqe(1, f.b().mem.alloc_mw(hw::MwType::Type1), target, 0, 64, 0)) ==
              PostStatus::InvalidOpcode);
    }
    SECTION("a bind carries no data") {
        Fabric f;
        Buf target = make_buf(f.b(), 1024, kMrMw);
        SendWqe w = bind_wqe(1, f.b().mem.alloc_mw(hw::MwType::Type1), target, 0, 64, 0);
        w.sg.push(target.sge(0, 8));
        CHECK(f.b().qp->post_send(w) == PostStatus::InvalidOpcode);
    }
}

TEST_CASE("mw: an MR with windows bound is not invalidated", "[transport][mw]") {
    Fabric f;
    Buf target = make_buf(f.b(), 1024, kMrMw);
    const uint32_t rkey =
        bind_on_b(f, f.b().mem.alloc_mw(hw::MwType::Type2), target, 0, 64, hw::access::kRemoteWrite);
    CHECK(f.b().mem.invalidate(target.mr->rkey) == MemStatus::BadKey);
    f.b().mem.dealloc_mw(rkey);
    CHECK(f.b().mem.mr_by_lkey(target.mr->lkey)->mw_count == 0);
    CHECK(f.b().mem.invalidate(target.mr->rkey) == MemStatus::Ok);
}
