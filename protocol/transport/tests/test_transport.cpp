// Data integrity through the transport core, operation by operation.
#include <catch2/catch.hpp>

#include <string>

#include "harness.h"

using namespace tb;

namespace {

const std::vector<uint32_t> kSizes = {0, 1, 5, 1023, 1024, 1025, 3000, 4096, 10000};

// Split [0, len) of `b` into three SGEs of unequal sizes (some may be empty
// when len is small; empty ones are left out).
std::vector<Sge> three_sges(const Buf& b, uint32_t len) {
    uint32_t a = len / 3, c = len / 2;
    std::vector<Sge> v;
    if (a) v.push_back(b.sge(0, a));
    if (c - a) v.push_back(b.sge(a, c - a));
    if (len - c) v.push_back(b.sge(c, len - c));
    return v;
}

}  // namespace

TEST_CASE("transport: RC SEND across MTU boundaries and SGEs", "[transport]") {
    for (uint32_t len : kSizes) {
        DYNAMIC_SECTION("len " << len) {
            Fabric f;
            Buf src = make_buf(f.a(), len, kAllAccess, 3);
            Buf dst = make_buf(f.b(), len + 100, kAllAccess);
            // Receive into two SGEs, the first ending at an odd offset.
            uint32_t split = std::min<uint32_t>(len, 777);
            f.b().post_recv(42, {dst.sge(0, split), dst.sge(split)});
            REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 7, three_sges(src, len))) ==
                    PostStatus::Ok);
            f.run();
            auto s = f.a().cq.side(CqSide::Send);
            REQUIRE(s.size() == 1);
            CHECK(s[0].wc.status == hw::WcStatus::Success);
            CHECK(s[0].wc.wr_id == 7);
            CHECK(s[0].wc.opcode == hw::WcOpcode::Send);
            auto r = f.b().cq.side(CqSide::Recv);
            REQUIRE(r.size() == 1);
            CHECK(r[0].wc.status == hw::WcStatus::Success);
            CHECK(r[0].wc.wr_id == 42);
            CHECK(r[0].wc.opcode == hw::WcOpcode::Recv);
            CHECK(r[0].wc.byte_len == len);
            CHECK((r[0].wc.wc_flags & hw::wc_flags::kWithImm) == 0);
            CHECK(bytes(f.b(), dst.addr, len) == bytes(f.a(), src.addr, len));
            CHECK(f.timer_fires == 0);
            CHECK(f.a().timers.armed.count(QpTimer::Retransmit) == 0);
        }
    }
}

// What a port may fetch ahead of a packet is bounded by what the core says is
// left of the SGE (MemoryPort::gather): past it lies memory the WQE does not
// own. Three packets at MTU 1024 from SGEs of 1500 and 1000 bytes.
TEST_CASE("transport: a gather names the bytes left of its SGE", "[transport]") {
    Fabric f;
    Buf src = make_buf(f.a(), 2500, kAllAccess, 5);
    Buf dst = make_buf(f.b(), 2500, kAllAccess);
    f.b().post_recv(1, {dst.sge()});
    REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 7, {src.sge(0, 1500), src.sge(1500, 1000)})) ==
            PostStatus::Ok);
    f.run();
    const auto& g = f.a().mem.gathers;
    REQUIRE(g.size() == 4);
    const uint64_t a = src.addr;
    CHECK((g[0].addr == a && g[0].len == 1024 && g[0].sge_left == 1500));
    CHECK((g[1].addr == a + 1024 && g[1].len == 476 && g[1].sge_left == 476));
    CHECK((g[2].addr == a + 1500 && g[2].len == 548 && g[2].sge_left == 1000));
    CHECK((g[3].addr == a + 2048 && g[3].len == 452 && g[3].sge_left == 452));
    CHECK(bytes(f.b(), dst.addr, 2500) == bytes(f.a(), src.addr, 2500));
}

TEST_CASE("transport: bytes a port holds are sent in place, not copied", "[transport]") {
    // Both nodes lend their bytes (a read-ahead copy in the engines): a
    // packet within one SGE takes them in place, one across two SGEs is
    // gathered as before, and a READ response takes the responder's.
    Fabric f;
    f.a().mem.views = f.b().mem.views = true;
    Buf src = make_buf(f.a(), 2500, kAllAccess, 5);
    Buf dst = make_buf(f.b(), 2500, kAllAccess);
    auto w = wqe(hw::WrOpcode::RdmaWrite, 1, {src.sge(0, 1500), src.sge(1500, 1000)});
    w.remote_addr = dst.addr;
    w.rkey = dst.mr->rkey;
    REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    f.run();
    // Packets [0, 1024) and [2048, 2500) lie in one SGE; [1024, 2048) spans both.
    CHECK(f.a().mem.views_lent == 2);
    REQUIRE(f.a().mem.gathers.size() == 2);
    CHECK((f.a().mem.gathers[0].addr == src.addr + 1024 && f.a().mem.gathers[0].len == 476));
    CHECK(bytes(f.b(), dst.addr, 2500) == bytes(f.a(), src.addr, 2500));

    Buf remote = make_buf(f.b(), 3000, kAllAccess, 9);
    Buf local = make_buf(f.a(), 3000, kAllAccess);
    auto r = wqe(hw::WrOpcode::RdmaRead, 2, {local.sge()});
    r.remote_addr = remote.addr;
    r.rkey = remote.mr->rkey;
    REQUIRE(f.a().qp->post_send(r) == PostStatus::Ok);
    f.run();
    CHECK(f.b().mem.views_lent == 3);  // three response packets
    CHECK(bytes(f.a(), local.addr, 3000) == bytes(f.b(), remote.addr, 3000));
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 2);
    CHECK((s[0].wc.status == hw::WcStatus::Success && s[1].wc.status == hw::WcStatus::Success));

    // A key the port refuses while lending fails the WQE as a refused gather does.
    Fabric g;
    g.a().mem.views = true;
    Buf b = make_buf(g.a(), 100, kAllAccess, 1);
    Sge bad = b.sge();
    bad.lkey = 0x777;
    REQUIRE(g.a().qp->post_send(wqe(hw::WrOpcode::Send, 3, {bad})) == PostStatus::Ok);
    g.run();
    REQUIRE(g.a().cq.side(CqSide::Send).size() == 1);
    CHECK(g.a().cq.side(CqSide::Send)[0].wc.status == hw::WcStatus::LocProtErr);
    CHECK(g.transmitted == 0);
    CHECK(g.a().mem.gathers.empty());
}

TEST_CASE("transport: SEND with immediate, solicited, unsignaled", "[transport]") {
    Fabric f;
    Buf src = make_buf(f.a(), 2000, kAllAccess, 9);
    Buf dst = make_buf(f.b(), 4096, kAllAccess);
    f.b().post_recv(1, {dst.sge()});
    f.b().post_recv(2, {dst.sge()});
    auto w = wqe(hw::WrOpcode::SendWithImm, 5, {src.sge()}, hw::send_flags::kSignaled | hw::send_flags::kSolicited);
    w.imm_data = 0xdeadbeef;
    REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 6, {src.sge(0, 10)}, 0)) == PostStatus::Ok);
    f.run();
    auto r = f.b().cq.side(CqSide::Recv);
    REQUIRE(r.size() == 2);
    CHECK(r[0].wc.imm_data == 0xdeadbeef);
    CHECK((r[0].wc.wc_flags & hw::wc_flags::kWithImm));
    CHECK(r[0].solicited);
    CHECK(r[0].wc.byte_len == 2000);
    CHECK(!r[1].solicited);
    // The unsignaled SEND completes silently.
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 1);
    CHECK(s[0].wc.wr_id == 5);
    CHECK(f.a().qp->snapshot().sq_outstanding == 0);
}

TEST_CASE("transport: RDMA WRITE across MTU boundaries and SGEs", "[transport]") {
    for (uint32_t len : kSizes) {
        DYNAMIC_SECTION("len " << len) {
            Fabric f;
            Buf src = make_buf(f.a(), len, kAllAccess, 5);
            Buf dst = make_buf(f.b(), len + 64, kAllAccess);
            auto w = wqe(hw::WrOpcode::RdmaWrite, 11, three_sges(src, len));
            w.remote_addr = dst.addr + 3;  // unaligned target
            w.rkey = dst.mr->rkey;
            REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
            f.run();
            auto s = f.a().cq.side(CqSide::Send);
            REQUIRE(s.size() == 1);
            CHECK(s[0].wc.status == hw::WcStatus::Success);
            CHECK(s[0].wc.opcode == hw::WcOpcode::RdmaWrite);
            CHECK(f.b().cq.all.empty());  // a WRITE without immediate is silent
            CHECK(bytes(f.b(), dst.addr + 3, len) == bytes(f.a(), src.addr, len));
            CHECK(bytes(f.b(), dst.addr, 3) == std::vector<uint8_t>(3, 0));
        }
    }
}

TEST_CASE("transport: RDMA WRITE with immediate consumes a receive WQE", "[transport]") {
    for (uint32_t len : {0u, 64u, 5000u}) {
        DYNAMIC_SECTION("len " << len) {
            Fabric f;
            Buf src = make_buf(f.a(), len, kAllAccess, 1);
            Buf dst = make_buf(f.b(), len + 8, kAllAccess);
            f.b().post_recv(77, {});
            auto w = wqe(hw::WrOpcode::RdmaWriteWithImm, 12, len ? std::vector<Sge>{src.sge()}
                                                             : std::vector<Sge>{});
            w.remote_addr = dst.addr;
            w.rkey = dst.mr->rkey;
            w.imm_data = 0x12345678;
            REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
            f.run();
            auto r = f.b().cq.side(CqSide::Recv);
            REQUIRE(r.size() == 1);
            CHECK(r[0].wc.status == hw::WcStatus::Success);
            CHECK(r[0].wc.wr_id == 77);
            CHECK(r[0].wc.opcode == hw::WcOpcode::RecvRdmaWithImm);
            CHECK(r[0].wc.byte_len == len);
            CHECK(r[0].wc.imm_data == 0x12345678);
            CHECK(bytes(f.b(), dst.addr, len) == bytes(f.a(), src.addr, len));
            REQUIRE(f.a().cq.side(CqSide::Send).size() == 1);
            CHECK(f.a().cq.side(CqSide::Send)[0].wc.status == hw::WcStatus::Success);
        }
    }
}

TEST_CASE("transport: RDMA READ across MTU boundaries into several SGEs", "[transport]") {
    for (uint32_t len : kSizes) {
        DYNAMIC_SECTION("len " << len) {
            Fabric f;
            Buf remote = make_buf(f.b(), len + 16, kAllAccess, 8);
            Buf local = make_buf(f.a(), len, kAllAccess);
            auto w = wqe(hw::WrOpcode::RdmaRead, 21, three_sges(local, len));
            w.remote_addr = remote.addr + 16;
            w.rkey = remote.mr->rkey;
            REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
            f.run();
            auto s = f.a().cq.side(CqSide::Send);
            REQUIRE(s.size() == 1);
            CHECK(s[0].wc.status == hw::WcStatus::Success);
            CHECK(s[0].wc.opcode == hw::WcOpcode::RdmaRead);
            CHECK(s[0].wc.byte_len == len);
            CHECK(bytes(f.a(), local.addr, len) == bytes(f.b(), remote.addr + 16, len));
        }
    }
}

TEST_CASE("transport: atomics return the original value", "[transport]") {
    Fabric f;
    Buf target = make_buf(f.b(), 16, kAllAccess);
    Buf result = make_buf(f.a(), 24, kAllAccess);
    uint64_t v = 1000;
    std::memcpy(f.b().mem.ptr(target.addr), &v, 8);

    auto faa = wqe(hw::WrOpcode::AtomicFetchAndAdd, 1, {result.sge(0, 8)});
    faa.remote_addr = target.addr;
    faa.rkey = target.mr->rkey;
    faa.compare_add = 5;
    auto cas_ok = wqe(hw::WrOpcode::AtomicCmpAndSwp, 2, {result.sge(8, 8)});
    cas_ok.remote_addr = target.addr;
    cas_ok.rkey = target.mr->rkey;
    cas_ok.compare_add = 1005;
    cas_ok.swap = 0xabcdef0123456789ull;
    auto cas_fail = cas_ok;
    cas_fail.wr_id = 3;
    cas_fail.sg = {};
    cas_fail.sg.push(result.sge(16, 8));
    cas_fail.compare_add = 1;
    cas_fail.swap = 7;
    REQUIRE(f.a().qp->post_send(faa) == PostStatus::Ok);
    REQUIRE(f.a().qp->post_send(cas_ok) == PostStatus::Ok);
    REQUIRE(f.a().qp->post_send(cas_fail) == PostStatus::Ok);
    f.run();
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 3);
    CHECK(s[0].wc.opcode == hw::WcOpcode::FetchAdd);
    CHECK(s[1].wc.opcode == hw::WcOpcode::CompSwap);
    for (auto& c : s) CHECK(c.wc.status == hw::WcStatus::Success);
    uint64_t r[3], now;
    std::memcpy(r, f.a().mem.ptr(result.addr), 24);
    std::memcpy(&now, f.b().mem.ptr(target.addr), 8);
    CHECK(r[0] == 1000);
    CHECK(r[1] == 1005);
    CHECK(r[2] == 0xabcdef0123456789ull);
    CHECK(now == 0xabcdef0123456789ull);
    CHECK(f.b().mem.atomics_applied == 3);
}

TEST_CASE("transport: misaligned atomic is an invalid request", "[transport]") {
    Fabric f;
    Buf target = make_buf(f.b(), 16, kAllAccess);
    Buf result = make_buf(f.a(), 8, kAllAccess);
    auto faa = wqe(hw::WrOpcode::AtomicFetchAndAdd, 1, {result.sge()});
    faa.remote_addr = target.addr + 4;
    faa.rkey = target.mr->rkey;
    REQUIRE(f.a().qp->post_send(faa) == PostStatus::Ok);
    f.run();
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 1);
    CHECK(s[0].wc.status == hw::WcStatus::RemInvReqErr);
    CHECK(f.a().qp->state() == hw::QpState::Err);
    CHECK(f.b().qp->state() == hw::QpState::Err);
}

TEST_CASE("transport: SEND with invalidate", "[transport]") {
    Fabric f;
    Buf src = make_buf(f.a(), 100, kAllAccess, 2);
    Buf dst = make_buf(f.b(), 100, kAllAccess);
    Buf victim = make_buf(f.b(), 64, kAllAccess);
    f.b().post_recv(1, {dst.sge()});
    auto w = wqe(hw::WrOpcode::SendWithInv, 4, {src.sge()});
    w.invalidate_rkey = victim.mr->rkey;
    REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    f.run();
    auto r = f.b().cq.side(CqSide::Recv);
    REQUIRE(r.size() == 1);
    CHECK(r[0].wc.status == hw::WcStatus::Success);
    CHECK((r[0].wc.wc_flags & hw::wc_flags::kWithInv));
    CHECK(r[0].wc.imm_data == victim.mr->rkey);
    CHECK(!victim.mr->valid);
    CHECK(bytes(f.b(), dst.addr, 100) == bytes(f.a(), src.addr, 100));
}

TEST_CASE("transport: inline SEND", "[transport]") {
    Fabric f;
    Buf dst = make_buf(f.b(), 64, kAllAccess);
    f.b().post_recv(1, {dst.sge()});
    SendWqe w = wqe(hw::WrOpcode::Send, 3, {}, hw::send_flags::kSignaled | hw::send_flags::kInline);
    w.inline_data = {'h', 'e', 'l', 'l', 'o'};
    REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    f.run();
    REQUIRE(f.b().cq.side(CqSide::Recv).size() == 1);
    CHECK(f.b().cq.side(CqSide::Recv)[0].wc.byte_len == 5);
    CHECK(bytes(f.b(), dst.addr, 5) == w.inline_data);
}

TEST_CASE("transport: bad rkey gives a remote access error and flushes", "[transport]") {
    Fabric f;
    Buf src = make_buf(f.a(), 3000, kAllAccess, 1);
    Buf dst = make_buf(f.b(), 3000, hw::access::kLocalWrite | hw::access::kRemoteRead);  // no remote write
    SECTION("wrong key") {
        auto w = wqe(hw::WrOpcode::RdmaWrite, 1, {src.sge()});
        w.remote_addr = dst.addr;
        w.rkey = 0xbad;
        REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    }
    SECTION("no remote write right") {
        auto w = wqe(hw::WrOpcode::RdmaWrite, 1, {src.sge()});
        w.remote_addr = dst.addr;
        w.rkey = dst.mr->rkey;
        REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    }
    SECTION("out of bounds READ") {
        auto w = wqe(hw::WrOpcode::RdmaRead, 1, {src.sge()});
        w.remote_addr = dst.addr + 1;
        w.rkey = dst.mr->rkey;
        REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    }
    // Two more WQEs behind it are flushed, signaled or not.
    REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 2, {src.sge(0, 10)}, 0)) == PostStatus::Ok);
    REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 3, {src.sge(0, 10)})) == PostStatus::Ok);
    f.run();
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 3);
    CHECK(s[0].wc.status == hw::WcStatus::RemAccessErr);
    CHECK(s[0].wc.wr_id == 1);
    CHECK(s[1].wc.status == hw::WcStatus::WrFlushErr);
    CHECK(s[2].wc.status == hw::WcStatus::WrFlushErr);
    CHECK(f.a().qp->state() == hw::QpState::Err);
    CHECK(f.b().qp->state() == hw::QpState::Err);
    CHECK(f.b().events.got == std::vector<hw::EventType>{hw::EventType::QpAccessErr});
    // Nothing was written.
    CHECK(bytes(f.b(), dst.addr, 3000) == std::vector<uint8_t>(3000, 0));
    // Posting on a QP in ERR completes at once with a flush error.
    CHECK(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 4, {src.sge(0, 1)})) == PostStatus::Flushed);
    CHECK(f.a().cq.side(CqSide::Send).back().wc.status == hw::WcStatus::WrFlushErr);
}

TEST_CASE("transport: SEND longer than the receive WQE", "[transport]") {
    Fabric f;
    Buf src = make_buf(f.a(), 2000, kAllAccess, 1);
    Buf dst = make_buf(f.b(), 1500, kAllAccess);
    f.b().post_recv(1, {dst.sge()});
    f.b().post_recv(2, {dst.sge()});
    REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 1, {src.sge()})) == PostStatus::Ok);
    f.run();
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 1);
    CHECK(s[0].wc.status == hw::WcStatus::RemInvReqErr);
    auto r = f.b().cq.side(CqSide::Recv);
    REQUIRE(r.size() == 2);
    CHECK(r[0].wc.status == hw::WcStatus::LocLenErr);
    CHECK(r[1].wc.status == hw::WcStatus::WrFlushErr);
}

TEST_CASE("transport: UC SEND and WRITE", "[transport]") {
    Fabric f(hw::QpType::Uc);
    Buf src = make_buf(f.a(), 5000, kAllAccess, 4);
    Buf dst = make_buf(f.b(), 5000, kAllAccess);
    Buf wdst = make_buf(f.b(), 5000, kAllAccess);
    f.b().post_recv(1, {dst.sge()});
    REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 1, {src.sge()})) == PostStatus::Ok);
    auto w = wqe(hw::WrOpcode::RdmaWrite, 2, {src.sge()});
    w.remote_addr = wdst.addr;
    w.rkey = wdst.mr->rkey;
    REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    // UC carries neither READs nor atomics.
    CHECK(f.a().qp->post_send(wqe(hw::WrOpcode::RdmaRead, 3, {src.sge()})) ==
          PostStatus::InvalidOpcode);
    f.run();
    CHECK(f.a().cq.side(CqSide::Send).size() == 2);
    REQUIRE(f.b().cq.side(CqSide::Recv).size() == 1);
    CHECK(bytes(f.b(), dst.addr, 5000) == bytes(f.a(), src.addr, 5000));
    CHECK(bytes(f.b(), wdst.addr, 5000) == bytes(f.a(), src.addr, 5000));
    for (auto& p : f.decoded_log()) {
        CHECK(roce::opcode_transport(p.hdr.bth.opcode) == roce::Transport::UC);
        CHECK(!p.hdr.bth.ack_req);
    }
}

TEST_CASE("transport: a port that holds the requester back loses nothing", "[transport]") {
    // WirePort::can_transmit: the requester stops before the packet the port
    // refuses and sends nothing more, whatever is posted meanwhile, until
    // Qp::resume(); then it goes on where it stopped. UC has no window and no
    // retransmission: every message must still arrive whole and in order.
    Fabric f(hw::QpType::Uc);
    Node& a = f.a();
    Buf src = make_buf(a, 3 * 5000, kAllAccess, 7);
    Buf dst = make_buf(f.b(), 3 * 5000, kAllAccess);
    for (uint32_t i = 0; i < 3; ++i) f.b().post_recv(10 + i, {dst.sge(i * 5000, 5000)});
    a.wire.room = 4;  // 5 packets a message at MTU 1024
    for (uint32_t i = 0; i < 3; ++i)
        REQUIRE(a.qp->post_send(wqe(hw::WrOpcode::Send, 1 + i, {src.sge(i * 5000, 5000)})) == PostStatus::Ok);
    CHECK(f.log.size() == 4);
    a.qp->resume();  // still no room: nothing moves
    CHECK(f.log.size() == 4);
    f.deliver();
    CHECK(f.b().cq.side(CqSide::Recv).empty());
    a.wire.room = 7;
    a.qp->resume();
    CHECK(f.log.size() == 11);
    CHECK(a.cq.side(CqSide::Send).size() == 2);  // UC completes as its last packet leaves
    a.wire.room = SIZE_MAX;
    a.qp->resume();
    CHECK(f.log.size() == 15);
    f.run();
    CHECK(a.cq.side(CqSide::Send).size() == 3);
    REQUIRE(f.b().cq.side(CqSide::Recv).size() == 3);
    for (const auto& c : f.b().cq.side(CqSide::Recv)) CHECK(c.wc.status == hw::WcStatus::Success);
    CHECK(bytes(f.b(), dst.addr, 3 * 5000) == bytes(a, src.addr, 3 * 5000));
    // One PSN after another: nothing skipped while held.
    const std::vector<roce::Packet> sent = f.decoded_log();
    for (size_t i = 1; i < sent.size(); ++i)
        CHECK(sent[i].hdr.bth.psn == roce::psn_add(sent[0].hdr.bth.psn, uint32_t(i)));
}

TEST_CASE("transport: UD SEND delivers the GRH then the data", "[transport]") {
    Fabric f(hw::QpType::Ud);
    Buf src = make_buf(f.a(), 1024, kAllAccess, 6);
    Buf dst = make_buf(f.b(), 40 + 1024, kAllAccess);
    f.b().post_recv(9, {dst.sge()});
    auto w = wqe(hw::WrOpcode::SendWithImm, 1, {src.sge()});
    w.imm_data = 0x55;
    w.ud.remote_qpn = 0x12;
    w.ud.remote_qkey = 0x11111111;
    w.ud.av = make_av(0);
    REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    // One more, to a wrong Q_Key: dropped by the receiver.
    auto bad = w;
    bad.ud.remote_qkey = 0x1;
    REQUIRE(f.a().qp->post_send(bad) == PostStatus::Ok);
    // Longer than the MTU: refused at post.
    Buf big = make_buf(f.a(), 1025, kAllAccess);
    CHECK(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 2, {big.sge()})) == PostStatus::BadLength);
    f.run();
    CHECK(f.a().cq.side(CqSide::Send).size() == 2);
    auto r = f.b().cq.side(CqSide::Recv);
    REQUIRE(r.size() == 1);
    CHECK(r[0].wc.byte_len == 40 + 1024);
    CHECK(r[0].wc.src_qp == 0x11);
    CHECK(r[0].wc.imm_data == 0x55);
    CHECK(bytes(f.b(), dst.addr + 40, 1024) == bytes(f.a(), src.addr, 1024));
    // The GRH of an IPv4 packet: 20 zero bytes, then the IPv4 header.
    CHECK(bytes(f.b(), dst.addr, 20) == std::vector<uint8_t>(20, 0));
    CHECK(f.b().mem.ptr(dst.addr)[20] == 0x45);
    auto log = f.decoded_log();
    REQUIRE(log.size() == 2);
    CHECK(log[0].hdr.bth.opcode == roce::op::UD_SEND_ONLY_WITH_IMMEDIATE);
    CHECK(log[0].hdr.deth.src_qp == 0x11);
    CHECK(log[0].udp.sport == roce::roce_udp_sport_unconnected(0x11));
    CHECK(!log[0].hdr.bth.ack_req);
}

namespace {
struct Trace : TracePort {
    void state(Unit u, const char* name) override {
        if (u == Unit::Responder) resp.push_back(name);
        if (u == Unit::Completer) comp.push_back(name);
    }
    std::vector<std::string> resp, comp;
};
}  // namespace

TEST_CASE("transport: state machines walk rxe's states, by name", "[transport]") {
    Fabric f;
    Trace ta, tb;
    // The ports are fixed at construction: rebuild the QPs with a trace port.
    for (int i = 0; i < 2; ++i) {
        TransportEnv e = f.nodes[i]->env();
        e.trace = i == 0 ? &ta : &tb;
        QpConfig c = f.nodes[i]->qp->context().cfg;
        f.nodes[i]->qp = std::make_unique<Qp>(c, e);
        f.nodes[i]->qp->set_state(hw::QpState::Rts);
    }
    Buf src = make_buf(f.a(), 10, kAllAccess, 1);
    Buf dst = make_buf(f.b(), 10, kAllAccess);
    f.b().post_recv(1, {dst.sge()});
    REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 1, {src.sge()})) == PostStatus::Ok);
    f.run();
    CHECK(tb.resp == std::vector<std::string>{"GET_REQ", "CHK_PSN", "CHK_OP_SEQ", "CHK_OP_VALID",
                                              "CHK_RESOURCE", "CHK_LENGTH", "CHK_RKEY", "EXECUTE",
                                              "COMPLETE", "ACKNOWLEDGE", "CLEANUP"});
    // The ACK: checked, matched to the WQE, completed; then a sweep finds nothing.
    std::vector<std::string> want = {"GET_ACK", "GET_WQE", "CHECK_PSN", "CHECK_ACK", "WRITE_SEND",
                                     "COMP_ACK", "UPDATE_COMP", "DONE", "GET_ACK", "GET_WQE"};
    REQUIRE(ta.comp.size() >= want.size());
    // The requester's own sweep (after sending) comes first; find the ACK's run.
    auto it = std::search(ta.comp.begin(), ta.comp.end(), want.begin(), want.end());
    CHECK(it != ta.comp.end());
    CHECK(std::string(iba_error_class(RespState::ErrRkeyViolation)) == "C");
    CHECK(std::string(iba_error_class(RespState::ErrPsnOutOfSeq)) == "B");
    CHECK(std::string(iba_error_class(RespState::ErrMalformedWqe)) == "A");
    CHECK(std::string(to_string(RespState::ErrMissingOpcodeLastD1E)) == "ERR_MISSING_OPCODE_LAST_D1E");
}

TEST_CASE("transport: timer values", "[transport]") {
    CHECK(retransmit_timeout_ns(0) == 0);
    CHECK(retransmit_timeout_ns(14) == 4096ull << 14);  // ~67 ms
    CHECK(rnr_timeout_ns(0) == 655'360'000);
    CHECK(rnr_timeout_ns(1) == 10'000);
    CHECK(rnr_timeout_ns(12) == 640'000);
    CHECK(rnr_timeout_ns(31) == 491'520'000);
}

TEST_CASE("transport: a bad local key fails the WQE with a local protection error",
          "[transport]") {
    Fabric f;
    Buf src = make_buf(f.a(), 100, kAllAccess, 1);
    Sge bad = src.sge();
    bad.lkey = 0x777;
    REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 1, {bad})) == PostStatus::Ok);
    // The requester found it at once: the QP is already in ERR.
    CHECK(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 2, {src.sge()})) == PostStatus::Flushed);
    f.run();
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 2);
    CHECK(s[0].wc.status == hw::WcStatus::LocProtErr);
    CHECK(s[1].wc.status == hw::WcStatus::WrFlushErr);
    CHECK(f.transmitted == 0);
    CHECK(f.a().qp->state() == hw::QpState::Err);
    // Atomics need exactly 8 local bytes.
    Fabric g;
    Buf r = make_buf(g.a(), 16, kAllAccess);
    CHECK(g.a().qp->post_send(wqe(hw::WrOpcode::AtomicFetchAndAdd, 1, {r.sge()})) ==
          PostStatus::BadLength);
}
