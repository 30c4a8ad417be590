// Loss, duplication, reordering and missing receive WQEs: the retry paths.
#include <catch2/catch.hpp>

#include "harness.h"

using namespace tb;
namespace op = simnic::roce::op;

namespace {

bool is_from_a(const roce::Packet& p) { return p.hdr.bth.dqpn == 0x12; }

// A fault hook that applies `what` to the n-th (0-based) packet matching `pred`.
std::function<Fault(const roce::Packet&, size_t)> nth(
    std::function<bool(const roce::Packet&)> pred, int n, Fault what) {
    auto count = std::make_shared<int>(0);
    return [=](const roce::Packet& p, size_t) {
        if (!pred(p)) return Fault::Pass;
        return (*count)++ == n ? what : Fault::Pass;
    };
}
auto opcode_is(uint8_t o) {
    return [o](const roce::Packet& p) { return p.hdr.bth.opcode == o; };
}
size_t count_log(Fabric& f, std::function<bool(const roce::Packet&)> pred) {
    size_t n = 0;
    for (auto& p : f.decoded_log()) n += pred(p);
    return n;
}
bool is_nak(const roce::Packet& p, roce::AethType t) {
    return p.hdr.bth.opcode == op::RC_ACKNOWLEDGE && roce::aeth_type(p.hdr.aeth.syndrome) == t;
}

}  // namespace

TEST_CASE("faults: no receive WQE, RNR NAK, then success once one is posted", "[transport]") {
    Fabric f;
    Buf src = make_buf(f.a(), 3000, kAllAccess, 2);
    Buf dst = make_buf(f.b(), 3000, kAllAccess);
    REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 1, {src.sge()})) == PostStatus::Ok);
    f.deliver();
    // The FIRST packet met no WQE: RNR NAK with our min_rnr_timer (code 1).
    auto rnr = [](const roce::Packet& p) { return is_nak(p, roce::AethType::RnrNak); };
    REQUIRE(count_log(f, rnr) == 1);
    for (auto& p : f.decoded_log())
        if (rnr(p)) CHECK(roce::aeth_value(p.hdr.aeth.syndrome) == 1);
    REQUIRE(f.a().timers.armed.count(QpTimer::Rnr) == 1);
    CHECK(f.a().timers.armed[QpTimer::Rnr] == f.clock.now + 10'000);  // code 1: 10 us
    CHECK(f.a().cq.all.empty());
    // Let it retry a few times, then post the receive.
    for (int i = 0; i < 3; ++i) {
        f.clock.now = f.a().timers.armed[QpTimer::Rnr];
        f.a().timers.armed.erase(QpTimer::Rnr);
        f.a().qp->on_timer(QpTimer::Rnr);
        f.deliver();
    }
    CHECK(count_log(f, rnr) == 4);
    f.b().post_recv(8, {dst.sge()});
    f.run();
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 1);
    CHECK(s[0].wc.status == hw::WcStatus::Success);
    auto r = f.b().cq.side(CqSide::Recv);
    REQUIRE(r.size() == 1);
    CHECK(r[0].wc.byte_len == 3000);
    CHECK(bytes(f.b(), dst.addr, 3000) == bytes(f.a(), src.addr, 3000));
}

TEST_CASE("faults: rnr_retry exhausted gives RNR_RETRY_EXC_ERR", "[transport]") {
    Fabric f(hw::QpType::Rc, roce::IbMtu::Mtu1024, [](QpConfig& c, int) { c.rnr_retry = 2; });
    Buf src = make_buf(f.a(), 100, kAllAccess, 2);
    REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 1, {src.sge()})) == PostStatus::Ok);
    f.run();
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 1);
    CHECK(s[0].wc.status == hw::WcStatus::RnrRetryExcErr);
    CHECK(f.a().qp->state() == hw::QpState::Err);
    // The first try and two retries, each RNR NAK'd.
    CHECK(count_log(f, [](const roce::Packet& p) { return is_nak(p, roce::AethType::RnrNak); }) ==
          3);
}

TEST_CASE("faults: a lost request is resent when the retransmit timer expires", "[transport]") {
    Fabric f;
    Buf src = make_buf(f.a(), 100, kAllAccess, 2);
    Buf dst = make_buf(f.b(), 100, kAllAccess);
    f.b().post_recv(1, {dst.sge()});
    f.fault = nth(is_from_a, 0, Fault::Drop);
    const uint64_t t0 = f.clock.now;
    REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 1, {src.sge()})) == PostStatus::Ok);
    REQUIRE(f.a().timers.armed.count(QpTimer::Retransmit) == 1);
    CHECK(f.a().timers.armed[QpTimer::Retransmit] == t0 + (4096ull << 14));
    f.run();
    CHECK(f.timer_fires == 1);
    CHECK(f.clock.now == t0 + (4096ull << 14));
    REQUIRE(f.a().cq.side(CqSide::Send).size() == 1);
    CHECK(f.a().cq.side(CqSide::Send)[0].wc.status == hw::WcStatus::Success);
    CHECK(bytes(f.b(), dst.addr, 100) == bytes(f.a(), src.addr, 100));
    CHECK(f.a().timers.armed.empty());
}

TEST_CASE("faults: retry_cnt exhausted gives RETRY_EXC_ERR", "[transport]") {
    Fabric f(hw::QpType::Rc, roce::IbMtu::Mtu1024, [](QpConfig& c, int) { c.retry_cnt = 2; });
    Buf src = make_buf(f.a(), 100, kAllAccess, 2);
    f.b().post_recv(1, {make_buf(f.b(), 100, kAllAccess).sge()});
    f.fault = [](const roce::Packet& p, size_t) { return is_from_a(p) ? Fault::Drop : Fault::Pass; };
    REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 1, {src.sge()})) == PostStatus::Ok);
    REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 2, {src.sge()}, 0)) == PostStatus::Ok);
    f.run();
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 2);
    CHECK(s[0].wc.status == hw::WcStatus::RetryExcErr);
    CHECK(s[1].wc.status == hw::WcStatus::WrFlushErr);
    CHECK(f.timer_fires == 3);
    CHECK(f.transmitted == 6);  // 2 packets, sent 3 times
}

TEST_CASE("faults: timeout 0 disables the retransmit timer", "[transport]") {
    Fabric f(hw::QpType::Rc, roce::IbMtu::Mtu1024, [](QpConfig& c, int) { c.timeout = 0; });
    Buf src = make_buf(f.a(), 100, kAllAccess, 2);
    f.fault = nth(is_from_a, 0, Fault::Drop);
    REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 1, {src.sge()})) == PostStatus::Ok);
    CHECK(f.a().timers.armed.empty());
    f.run();
    CHECK(f.a().cq.all.empty());
}

TEST_CASE("faults: a gap draws a PSN sequence NAK and a resend from the gap", "[transport]") {
    Fabric f;
    Buf src = make_buf(f.a(), 5000, kAllAccess, 2);
    Buf dst = make_buf(f.b(), 5000, kAllAccess);
    auto w = wqe(hw::WrOpcode::RdmaWrite, 1, {src.sge()});
    w.remote_addr = dst.addr;
    w.rkey = dst.mr->rkey;
    bool dropped = false;
    SECTION("drop") {
        dropped = true;
        f.fault = nth(opcode_is(op::RC_RDMA_WRITE_MIDDLE), 1, Fault::Drop);
    }
    SECTION("reorder") { f.fault = nth(opcode_is(op::RC_RDMA_WRITE_MIDDLE), 1, Fault::Delay); }
    REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    f.run();
    CHECK(f.timer_fires == 0);  // no timer involved: the NAK triggers the resend
    auto log = f.decoded_log();
    std::vector<uint32_t> naks;
    for (auto& p : log)
        if (is_nak(p, roce::AethType::Nak)) {
            CHECK(roce::aeth_value(p.hdr.aeth.syndrome) == 0);
            naks.push_back(p.hdr.bth.psn);
        }
    // One NAK per gap, carrying the PSN the responder expected, whatever
    // follows it. Reordered (100 101 103 102 104), 102 fills the first gap and
    // 104 then opens a second one at 103.
    if (dropped) CHECK(naks == std::vector<uint32_t>{0x102});
    else CHECK(naks == std::vector<uint32_t>{0x102, 0x103});
    // Each NAK'd gap counted once (the device's out_of_seq_requests).
    CHECK(f.b().counters.n[Counter::OutOfSeqRequest] == int(naks.size()));
    // The resend starts mid-message with a MIDDLE (no RETH) at the NAK'd PSN.
    bool resent = false;
    for (size_t i = 1; i < log.size() && !resent; ++i)
        if (is_nak(log[i - 1], roce::AethType::Nak) && log[i].hdr.bth.dqpn == 0x12) {
            CHECK(log[i].hdr.bth.psn == 0x102);
            CHECK(log[i].hdr.bth.opcode == op::RC_RDMA_WRITE_MIDDLE);
            resent = true;
        }
    CHECK(resent);
    REQUIRE(f.a().cq.side(CqSide::Send).size() == 1);
    CHECK(f.a().cq.side(CqSide::Send)[0].wc.status == hw::WcStatus::Success);
    CHECK(bytes(f.b(), dst.addr, 5000) == bytes(f.a(), src.addr, 5000));
}

TEST_CASE("faults: a lost READ response is fetched again from its middle", "[transport]") {
    Fabric f;
    Buf remote = make_buf(f.b(), 5000, kAllAccess, 7);
    Buf local = make_buf(f.a(), 5000, kAllAccess);
    f.fault = nth(opcode_is(op::RC_RDMA_READ_RESPONSE_MIDDLE), 1, Fault::Drop);
    auto w = wqe(hw::WrOpcode::RdmaRead, 1, {local.sge(0, 1500), local.sge(1500)});
    w.remote_addr = remote.addr;
    w.rkey = remote.mr->rkey;
    REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    f.run();
    CHECK(f.timer_fires == 1);
    // The second READ request asks for the rest, from the lost packet on.
    std::vector<roce::Packet> reqs;
    for (auto& p : f.decoded_log())
        if (p.hdr.bth.opcode == op::RC_RDMA_READ_REQUEST) reqs.push_back(p);
    REQUIRE(reqs.size() == 2);
    CHECK(reqs[1].hdr.bth.psn == roce::psn_add(reqs[0].hdr.bth.psn, 2));
    CHECK(reqs[1].hdr.reth.va == remote.addr + 2048);
    CHECK(reqs[1].hdr.reth.dma_len == 5000 - 2048);
    REQUIRE(f.a().cq.side(CqSide::Send).size() == 1);
    CHECK(f.a().cq.side(CqSide::Send)[0].wc.status == hw::WcStatus::Success);
    CHECK(bytes(f.a(), local.addr, 5000) == bytes(f.b(), remote.addr, 5000));
}

TEST_CASE("faults: a duplicate READ request is executed again", "[transport]") {
    Fabric f;
    Buf remote = make_buf(f.b(), 3000, kAllAccess, 7);
    Buf local = make_buf(f.a(), 3000, kAllAccess);
    f.fault = nth(opcode_is(op::RC_RDMA_READ_REQUEST), 0, Fault::Duplicate);
    auto w = wqe(hw::WrOpcode::RdmaRead, 1, {local.sge()});
    w.remote_addr = remote.addr;
    w.rkey = remote.mr->rkey;
    REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    f.run();
    // Two full responses (3 packets each); the copy is ignored by the completer.
    CHECK(count_log(f, opcode_is(op::RC_RDMA_READ_RESPONSE_FIRST)) == 2);
    CHECK(count_log(f, opcode_is(op::RC_RDMA_READ_RESPONSE_LAST)) == 2);
    REQUIRE(f.a().cq.side(CqSide::Send).size() == 1);
    CHECK(bytes(f.a(), local.addr, 3000) == bytes(f.b(), remote.addr, 3000));
    CHECK(f.a().qp->state() == hw::QpState::Rts);
}

TEST_CASE("faults: a duplicate atomic is answered from the saved result", "[transport]") {
    for (int variant = 0; variant < 2; ++variant) {
        DYNAMIC_SECTION((variant == 0 ? "duplicated request" : "lost ATOMIC ACK")) {
            Fabric f;
            Buf target = make_buf(f.b(), 8, kAllAccess);
            Buf result = make_buf(f.a(), 8, kAllAccess);
            uint64_t v = 40;
            std::memcpy(f.b().mem.ptr(target.addr), &v, 8);
            f.fault = variant == 0 ? nth(opcode_is(op::RC_FETCH_ADD), 0, Fault::Duplicate)
                                   : nth(opcode_is(op::RC_ATOMIC_ACKNOWLEDGE), 0, Fault::Drop);
            auto w = wqe(hw::WrOpcode::AtomicFetchAndAdd, 1, {result.sge()});
            w.remote_addr = target.addr;
            w.rkey = target.mr->rkey;
            w.compare_add = 2;
            REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
            f.run();
            CHECK(f.b().mem.atomics_applied == 1);
            uint64_t now, orig;
            std::memcpy(&now, f.b().mem.ptr(target.addr), 8);
            std::memcpy(&orig, f.a().mem.ptr(result.addr), 8);
            CHECK(now == 42);
            CHECK(orig == 40);
            CHECK(count_log(f, opcode_is(op::RC_ATOMIC_ACKNOWLEDGE)) == 2);
            REQUIRE(f.a().cq.side(CqSide::Send).size() == 1);
            CHECK(f.a().cq.side(CqSide::Send)[0].wc.status == hw::WcStatus::Success);
        }
    }
}

// Found by testbench/system/faults_app.cpp on a wire that corrupted 5% of the
// frames (a CMP_SWAP completed with its result buffer never written). A
// WRITE and an atomic both executed, both their acknowledgements lost: the
// requester resends the WRITE and the atomic. The responder answers the
// duplicate WRITE with a plain ACK carrying the last PSN it executed, the
// atomic's (IBA C9-105), and the atomic's saved result after it. A plain ACK
// cannot complete an atomic or a READ, which wait for their data (IBA
// o9-28: they are never implicitly acknowledged): the completer must wait
// for the ATOMIC ACKNOWLEDGE and place its value.
TEST_CASE("faults: a plain ACK covering an atomic's PSN does not complete it without its value",
          "[transport]") {
    for (const bool cas : {false, true}) {
        DYNAMIC_SECTION((cas ? "CMP_SWAP" : "FETCH_ADD")) {
            Fabric f;
            Buf src = make_buf(f.a(), 64, kAllAccess, 5);
            Buf dst = make_buf(f.b(), 64, kAllAccess);
            Buf target = make_buf(f.b(), 8, kAllAccess);
            Buf result = make_buf(f.a(), 8, kAllAccess);
            uint64_t v = 40, junk = 0xEEEEEEEEEEEEEEEEull;
            std::memcpy(f.b().mem.ptr(target.addr), &v, 8);
            std::memcpy(f.a().mem.ptr(result.addr), &junk, 8);
            auto drop_ack = nth(opcode_is(op::RC_ACKNOWLEDGE), 0, Fault::Drop);
            auto drop_atomic_ack = nth(opcode_is(op::RC_ATOMIC_ACKNOWLEDGE), 0, Fault::Drop);
            f.fault = [=](const roce::Packet& p, size_t i) {
                return drop_ack(p, i) == Fault::Drop || drop_atomic_ack(p, i) == Fault::Drop ? Fault::Drop
                                                                                            : Fault::Pass;
            };
            auto w = wqe(hw::WrOpcode::RdmaWrite, 1, {src.sge()});
            w.remote_addr = dst.addr;
            w.rkey = dst.mr->rkey;
            REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
            auto a = wqe(cas ? hw::WrOpcode::AtomicCmpAndSwp : hw::WrOpcode::AtomicFetchAndAdd, 2, {result.sge()});
            a.remote_addr = target.addr;
            a.rkey = target.mr->rkey;
            a.compare_add = cas ? 40 : 2;
            a.swap = 42;
            REQUIRE(f.a().qp->post_send(a) == PostStatus::Ok);
            f.run();
            CHECK(f.b().mem.atomics_applied == 1);
            uint64_t now, orig;
            std::memcpy(&now, f.b().mem.ptr(target.addr), 8);
            std::memcpy(&orig, f.a().mem.ptr(result.addr), 8);
            CHECK(now == 42);
            CHECK(orig == 40);
            auto sc = f.a().cq.side(CqSide::Send);
            REQUIRE(sc.size() == 2);
            CHECK(sc[0].wc.status == hw::WcStatus::Success);
            CHECK(sc[1].wc.status == hw::WcStatus::Success);
            CHECK(f.a().qp->state() == hw::QpState::Rts);
        }
    }
}

TEST_CASE("faults: a plain ACK for an atomic's PSN does not complete it", "[transport]") {
    // The responder answers a duplicate SEND with an ACK for the last PSN it
    // executed (C9-105): here the FETCH_ADD after the SEND, whose ATOMIC
    // ACKNOWLEDGE was lost. That ACK must not complete the atomic without its
    // result; the retransmit timer fetches the saved one.
    Fabric f;
    Buf src = make_buf(f.a(), 64, kAllAccess, 3);
    Buf dst = make_buf(f.b(), 64, kAllAccess);
    Buf target = make_buf(f.b(), 8, kAllAccess);
    Buf result = make_buf(f.a(), 8, kAllAccess);
    uint64_t v = 40;
    std::memcpy(f.b().mem.ptr(target.addr), &v, 8);
    f.b().post_recv(1, {dst.sge()});
    f.fault = nth(opcode_is(op::RC_ATOMIC_ACKNOWLEDGE), 0, Fault::Drop);
    REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 10, {src.sge()})) == PostStatus::Ok);
    auto w = wqe(hw::WrOpcode::AtomicFetchAndAdd, 11, {result.sge()});
    w.remote_addr = target.addr;
    w.rkey = target.mr->rkey;
    w.compare_add = 2;
    REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    f.deliver();
    REQUIRE(f.b().mem.atomics_applied == 1);
    // A stale copy of the SEND arrives (a resend that crossed its ACK).
    Frame send_frame = f.log.front();
    REQUIRE(send_frame.from == 0);
    f.in_flight.push_back(send_frame);
    f.deliver();
    const auto plain_ack_for_atomic = [](const roce::Packet& p) {
        return is_nak(p, roce::AethType::Ack) && p.hdr.bth.psn == 0x101;
    };
    REQUIRE(count_log(f, plain_ack_for_atomic) == 1);
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 1);  // the SEND only: the atomic waits for its result
    CHECK(s[0].wc.wr_id == 10);
    f.run();
    s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 2);
    CHECK(s[1].wc.wr_id == 11);
    CHECK(s[1].wc.status == hw::WcStatus::Success);
    uint64_t orig;
    std::memcpy(&orig, f.a().mem.ptr(result.addr), 8);
    CHECK(orig == 40);
    CHECK(f.b().mem.atomics_applied == 1);
}

TEST_CASE("faults: one resend at a time: each ACK past a waiting atomic does not resend again",
          "[transport]") {
    // A FETCH_ADD whose ATOMIC ACKNOWLEDGE is lost, then 40 SENDs: each
    // SEND's ACK passes the atomic still waiting for its data, and asks for
    // a resend. One resend answers them all (rxe's comp.started_retry);
    // before, each started another, resending the window 40 times.
    Fabric f;
    Buf src = make_buf(f.a(), 64, kAllAccess, 3);
    Buf dst = make_buf(f.b(), 64 * 40, kAllAccess);
    Buf target = make_buf(f.b(), 8, kAllAccess);
    Buf result = make_buf(f.a(), 8, kAllAccess);
    uint64_t v = 7;
    std::memcpy(f.b().mem.ptr(target.addr), &v, 8);
    for (uint32_t i = 0; i < 40; ++i) f.b().post_recv(i, {dst.sge(64 * i, 64)});
    f.fault = nth(opcode_is(op::RC_ATOMIC_ACKNOWLEDGE), 0, Fault::Drop);
    auto w = wqe(hw::WrOpcode::AtomicFetchAndAdd, 1, {result.sge()});
    w.remote_addr = target.addr;
    w.rkey = target.mr->rkey;
    w.compare_add = 1;
    REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    for (int i = 0; i < 40; ++i)
        REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 100 + i, {src.sge()})) == PostStatus::Ok);
    f.run();
    CHECK(count_log(f, opcode_is(op::RC_FETCH_ADD)) == 2);
    CHECK(count_log(f, opcode_is(op::RC_SEND_ONLY)) <= 80);  // the window once more, at most
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 41);
    for (auto& c : s) CHECK(c.wc.status == hw::WcStatus::Success);
    uint64_t orig;
    std::memcpy(&orig, f.a().mem.ptr(result.addr), 8);
    CHECK(orig == 7);
    CHECK(f.b().mem.atomics_applied == 1);
    CHECK(f.b().cq.side(CqSide::Recv).size() == 40);
}

TEST_CASE("faults: duplicate SEND packets are acknowledged, not delivered twice",
          "[transport]") {
    Fabric f;
    Buf src = make_buf(f.a(), 3000, kAllAccess, 3);
    Buf dst = make_buf(f.b(), 3000, kAllAccess);
    f.b().post_recv(1, {dst.sge()});
    f.b().post_recv(2, {dst.sge()});
    SECTION("a copy of one packet") { f.fault = nth(is_from_a, 1, Fault::Duplicate); }
    SECTION("the ACK lost: the whole message resent") {
        f.fault = nth(opcode_is(op::RC_ACKNOWLEDGE), 0, Fault::Drop);
    }
    REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 1, {src.sge()})) == PostStatus::Ok);
    f.run();
    CHECK(f.b().cq.side(CqSide::Recv).size() == 1);
    REQUIRE(f.a().cq.side(CqSide::Send).size() == 1);
    CHECK(f.a().cq.side(CqSide::Send)[0].wc.status == hw::WcStatus::Success);
    CHECK(bytes(f.b(), dst.addr, 3000) == bytes(f.a(), src.addr, 3000));
    // The responder counts each duplicate (the device's duplicate_requests;
    // before, nothing did and the counter stayed 0 whatever the wire did).
    CHECK(f.b().counters.n[Counter::DuplicateRequest] >= 1);
    CHECK(f.b().counters.n[Counter::OutOfSeqRequest] == 0);
}

TEST_CASE("faults: UC drops a message that lost a packet, and never resends",
          "[transport]") {
    Fabric f(hw::QpType::Uc);
    Buf src = make_buf(f.a(), 3000, kAllAccess, 3);
    Buf src2 = make_buf(f.a(), 2500, kAllAccess, 9);
    Buf dst = make_buf(f.b(), 3000, kAllAccess);
    f.b().post_recv(1, {dst.sge()});
    f.fault = nth(opcode_is(op::UC_SEND_MIDDLE), 0, Fault::Drop);
    REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 1, {src.sge()})) == PostStatus::Ok);
    REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 2, {src2.sge()})) == PostStatus::Ok);
    f.run();
    CHECK(f.transmitted == 6);
    CHECK(f.timer_fires == 0);
    CHECK(f.a().cq.side(CqSide::Send).size() == 2);  // the sender never knows
    auto r = f.b().cq.side(CqSide::Recv);
    REQUIRE(r.size() == 1);  // only the second message, into the first WQE
    CHECK(r[0].wc.wr_id == 1);
    CHECK(r[0].wc.byte_len == 2500);
    CHECK(bytes(f.b(), dst.addr, 2500) == bytes(f.a(), src2.addr, 2500));
}

TEST_CASE("faults: max_rd_atomic bounds outstanding READs, fence waits", "[transport]") {
    Fabric f(hw::QpType::Rc, roce::IbMtu::Mtu1024, [](QpConfig& c, int) { c.max_rd_atomic = 1; });
    Buf remote = make_buf(f.b(), 3000, kAllAccess, 7);
    Buf local = make_buf(f.a(), 9000, kAllAccess);
    Buf dst = make_buf(f.b(), 100, kAllAccess);
    f.b().post_recv(1, {dst.sge()});
    for (int i = 0; i < 3; ++i) {
        auto w = wqe(hw::WrOpcode::RdmaRead, i, {local.sge(3000 * i, 3000)});
        w.remote_addr = remote.addr;
        w.rkey = remote.mr->rkey;
        REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    }
    REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 9, {local.sge(0, 10)},
                                    hw::send_flags::kSignaled | hw::send_flags::kFence)) == PostStatus::Ok);
    // Only the first READ may be on the wire before its response.
    CHECK(f.in_flight.size() == 1);
    f.run();
    // In the log: each request follows the previous READ's LAST response.
    auto log = f.decoded_log();
    int outstanding = 0;
    for (auto& p : log) {
        if (p.hdr.bth.opcode == op::RC_RDMA_READ_REQUEST || p.hdr.bth.opcode == op::RC_SEND_ONLY) {
            CHECK(outstanding == 0);
            ++outstanding;
        }
        if (p.hdr.bth.opcode == op::RC_RDMA_READ_RESPONSE_LAST ||
            p.hdr.bth.opcode == op::RC_ACKNOWLEDGE)
            --outstanding;
    }
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 4);
    for (int i = 0; i < 3; ++i)
        CHECK(bytes(f.a(), local.addr + 3000 * i, 3000) == bytes(f.b(), remote.addr, 3000));
}

TEST_CASE("faults: random loss, duplication and reordering keep data intact",
          "[transport]") {
    for (uint32_t seed = 1; seed <= 200; ++seed) {
        DYNAMIC_SECTION("seed " << seed) {
            Fabric f;
            uint32_t x = seed * 2654435761u;
            auto rnd = [&x] {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                return x;
            };
            f.fault = [&rnd](const roce::Packet&, size_t) {
                uint32_t r = rnd() % 100;
                return r < 8 ? Fault::Drop : r < 12 ? Fault::Duplicate
                       : r < 16 ? Fault::Delay : Fault::Pass;
            };
            Buf src = make_buf(f.a(), 20000, kAllAccess, 5);
            Buf rdst = make_buf(f.b(), 20000, kAllAccess);
            Buf wdst = make_buf(f.b(), 20000, kAllAccess);
            Buf rsrc = make_buf(f.b(), 20000, kAllAccess, 11);
            Buf rlocal = make_buf(f.a(), 20000, kAllAccess);
            Buf target = make_buf(f.b(), 8, kAllAccess);
            Buf aresult = make_buf(f.a(), 8 * 4, kAllAccess);
            for (int i = 0; i < 4; ++i) f.b().post_recv(i, {rdst.sge(5000 * i, 5000)});
            for (int i = 0; i < 4; ++i) {
                REQUIRE(f.a().qp->post_send(
                            wqe(hw::WrOpcode::Send, 100 + i, {src.sge(5000 * i, 4000 + 250 * i)})) ==
                        PostStatus::Ok);
                auto w = wqe(hw::WrOpcode::RdmaWrite, 200 + i, {src.sge(5000 * i, 5000)});
                w.remote_addr = wdst.addr + 5000 * i;
                w.rkey = wdst.mr->rkey;
                REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
                auto r = wqe(hw::WrOpcode::RdmaRead, 300 + i, {rlocal.sge(5000 * i, 5000)});
                r.remote_addr = rsrc.addr + 5000 * i;
                r.rkey = rsrc.mr->rkey;
                REQUIRE(f.a().qp->post_send(r) == PostStatus::Ok);
                auto a = wqe(hw::WrOpcode::AtomicFetchAndAdd, 400 + i, {aresult.sge(8 * i, 8)});
                a.remote_addr = target.addr;
                a.rkey = target.mr->rkey;
                a.compare_add = 1;
                REQUIRE(f.a().qp->post_send(a) == PostStatus::Ok);
            }
            f.run();
            auto s = f.a().cq.side(CqSide::Send);
            REQUIRE(s.size() == 16);
            for (auto& c : s) CHECK(c.wc.status == hw::WcStatus::Success);
            auto r = f.b().cq.side(CqSide::Recv);
            REQUIRE(r.size() == 4);
            for (int i = 0; i < 4; ++i) {
                CHECK(r[i].wc.byte_len == 4000u + 250 * i);
                CHECK(bytes(f.b(), rdst.addr + 5000 * i, 4000 + 250 * i) ==
                      bytes(f.a(), src.addr + 5000 * i, 4000 + 250 * i));
            }
            CHECK(bytes(f.b(), wdst.addr, 20000) == bytes(f.a(), src.addr, 20000));
            CHECK(bytes(f.a(), rlocal.addr, 20000) == bytes(f.b(), rsrc.addr, 20000));
            uint64_t total;
            std::memcpy(&total, f.b().mem.ptr(target.addr), 8);
            CHECK(total == 4);  // each add applied once
            CHECK(f.b().mem.atomics_applied == 4);
            // Each add returned the value before it, also when its ACK was
            // lost and the answer came from the responder's saved result.
            for (uint64_t i = 0; i < 4; ++i) {
                uint64_t orig;
                std::memcpy(&orig, f.a().mem.ptr(aresult.addr + 8 * i), 8);
                CHECK(orig == i);
            }
        }
    }
}

TEST_CASE("faults: PSNs wrap at 2^24 through loss and retry", "[transport]") {
    Fabric f(hw::QpType::Rc, roce::IbMtu::Mtu1024, [](QpConfig& c, int i) {
        if (i == 0) c.sq_psn = 0xfffffd;
        else c.rq_psn = 0xfffffd;
    });
    Buf src = make_buf(f.a(), 6000, kAllAccess, 3);
    Buf wdst = make_buf(f.b(), 6000, kAllAccess);
    Buf local = make_buf(f.a(), 6000, kAllAccess);
    f.fault = nth(is_from_a, 3, Fault::Drop);  // PSN 0x000000
    auto w = wqe(hw::WrOpcode::RdmaWrite, 1, {src.sge()});
    w.remote_addr = wdst.addr;
    w.rkey = wdst.mr->rkey;
    REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    auto r = wqe(hw::WrOpcode::RdmaRead, 2, {local.sge()});
    r.remote_addr = wdst.addr;
    r.rkey = wdst.mr->rkey;
    REQUIRE(f.a().qp->post_send(r) == PostStatus::Ok);
    f.run();
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 2);
    CHECK(s[0].wc.status == hw::WcStatus::Success);
    CHECK(s[1].wc.status == hw::WcStatus::Success);
    CHECK(bytes(f.b(), wdst.addr, 6000) == bytes(f.a(), src.addr, 6000));
    CHECK(bytes(f.a(), local.addr, 6000) == bytes(f.a(), src.addr, 6000));
    CHECK(f.a().qp->snapshot().sq_psn == 0x000009);  // 0xfffffd + 6 + 6, wrapped
    CHECK(f.b().qp->snapshot().rq_psn == 0x000009);
}

TEST_CASE("faults: RNR NAK on the last packet of a WRITE with immediate", "[transport]") {
    Fabric f;
    Buf src = make_buf(f.a(), 3000, kAllAccess, 3);
    Buf wdst = make_buf(f.b(), 3000, kAllAccess);
    auto w = wqe(hw::WrOpcode::RdmaWriteWithImm, 1, {src.sge()});
    w.remote_addr = wdst.addr;
    w.rkey = wdst.mr->rkey;
    w.imm_data = 9;
    REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    f.deliver();
    CHECK(f.a().timers.armed.count(QpTimer::Rnr) == 1);
    f.b().post_recv(5, {});
    f.run();
    REQUIRE(f.a().cq.side(CqSide::Send).size() == 1);
    CHECK(f.a().cq.side(CqSide::Send)[0].wc.status == hw::WcStatus::Success);
    auto rc = f.b().cq.side(CqSide::Recv);
    REQUIRE(rc.size() == 1);
    CHECK(rc[0].wc.byte_len == 3000);
    CHECK(rc[0].wc.imm_data == 9);
    CHECK(bytes(f.b(), wdst.addr, 3000) == bytes(f.a(), src.addr, 3000));
}

// Found by the rig (rig.interop_faults): under 5% loss, a simnic requester
// of ib_read_bw sent 5987 frames where kernel rxe in the same role sent 65.
// Every response past a READ whose answer was lost started a new go-back-N
// sequence, each resending the whole window. rxe starts one retry sequence
// and ignores further triggers until a response moves the QP forward or the
// retransmit timer fires (rxe_comp.c: comp.started_retry, comp.timeout_retry).
TEST_CASE("faults: responses past a lost READ response start one retry, not one each",
          "[transport]") {
    Fabric f;
    Buf remote = make_buf(f.b(), 4 * 512, kAllAccess, 7);
    Buf local = make_buf(f.a(), 4 * 512, kAllAccess);
    // The first READ's only response is lost; the other three arrive, each
    // with a PSN past the first READ's.
    f.fault = nth(opcode_is(op::RC_RDMA_READ_RESPONSE_ONLY), 0, Fault::Drop);
    for (int i = 0; i < 4; ++i) {
        auto w = wqe(hw::WrOpcode::RdmaRead, i, {local.sge(512 * i, 512)});
        w.remote_addr = remote.addr + 512 * i;
        w.rkey = remote.mr->rkey;
        REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    }
    f.run();
    CHECK(f.timer_fires == 0);  // the first response past the loss triggers the retry
    // The four READs, then the four again from the lost one: one sequence.
    CHECK(count_log(f, opcode_is(op::RC_RDMA_READ_REQUEST)) == 8);
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 4);
    for (auto& c : s) CHECK(c.wc.status == hw::WcStatus::Success);
    CHECK(bytes(f.a(), local.addr, 4 * 512) == bytes(f.b(), remote.addr, 4 * 512));
}

TEST_CASE("faults: a duplicated PSN sequence NAK starts one retry", "[transport]") {
    Fabric f;
    Buf src = make_buf(f.a(), 5000, kAllAccess, 2);
    Buf dst = make_buf(f.b(), 5000, kAllAccess);
    auto w = wqe(hw::WrOpcode::RdmaWrite, 1, {src.sge()});
    w.remote_addr = dst.addr;
    w.rkey = dst.mr->rkey;
    // A MIDDLE is lost, and the wire doubles the NAK it draws.
    auto drop = nth(opcode_is(op::RC_RDMA_WRITE_MIDDLE), 1, Fault::Drop);
    auto dup = nth([](const roce::Packet& p) { return is_nak(p, roce::AethType::Nak); }, 0,
                   Fault::Duplicate);
    f.fault = [=](const roce::Packet& p, size_t n) {
        Fault d = drop(p, n);
        return d != Fault::Pass ? d : dup(p, n);
    };
    REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    f.run();
    // 5 packets, then 3 resent from the NAK'd PSN, once.
    CHECK(count_log(f, [](const roce::Packet& p) { return p.hdr.bth.dqpn == 0x12; }) == 5 + 3);
    REQUIRE(f.a().cq.side(CqSide::Send).size() == 1);
    CHECK(f.a().cq.side(CqSide::Send)[0].wc.status == hw::WcStatus::Success);
    CHECK(bytes(f.b(), dst.addr, 5000) == bytes(f.a(), src.addr, 5000));
}

namespace {

// Delivers what is on the wire, but a request frame of A's that `bad` picks
// arrives with a bad ICRC at a NIC that places a payload as it streams in,
// before the ICRC verdict (the model's pipeline.place_before_verdict): the
// bytes its responder places (Responder::placement) are recorded, then the
// packet is dropped at the verdict. The probe changes nothing: B's expected
// PSN is the same after it.
void deliver_bad_icrc(Fabric& f, std::function<bool(const roce::Packet&)> bad, std::vector<uint32_t>& placed) {
    while (!f.in_flight.empty()) {
        Frame fr = std::move(f.in_flight.front());
        f.in_flight.pop_front();
        roce::Packet p;
        REQUIRE(roce::decode_frame(fr.bytes.data(), fr.bytes.size(), p).ok());
        if (fr.from == 0 && bad(p)) {
            const Responder& r = f.b().qp->responder();
            const uint32_t psn = r.expected_psn(), msn = r.msn();
            placed.push_back(r.placement(p));
            CHECK(r.expected_psn() == psn);
            CHECK(r.msn() == msn);
            continue;
        }
        f.nodes[1 - fr.from]->qp->on_packet(p);
    }
}

}  // namespace

TEST_CASE("faults: a payload placed before a bad ICRC verdict stays where the responder validated, the "
          "retransmission completes",
          "[transport][place_before_verdict]") {
    Fabric f;  // MTU 1024
    std::vector<uint32_t> placed;
    SECTION("a WRITE's MIDDLE: its 1024 bytes at the RETH's address plus the FIRST's, then the LAST is out of "
            "sequence") {
        Buf src = make_buf(f.a(), 3000, kAllAccess, 2);
        Buf dst = make_buf(f.b(), 3000, kAllAccess);
        SendWqe w = wqe(hw::WrOpcode::RdmaWrite, 1, {src.sge()});
        w.remote_addr = dst.addr;
        w.rkey = dst.mr->rkey;
        REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
        auto once = std::make_shared<int>(0);
        deliver_bad_icrc(
            f, [&](const roce::Packet& p) { return p.hdr.bth.opcode == op::RC_RDMA_WRITE_MIDDLE && (*once)++ == 0; },
            placed);
        REQUIRE(placed == std::vector<uint32_t>{1024});
        // The LAST after the dropped MIDDLE: a PSN the responder does not
        // expect, so nothing of it would be placed.
        f.run();
        auto s = f.a().cq.side(CqSide::Send);
        REQUIRE(s.size() == 1);
        CHECK(s[0].wc.status == hw::WcStatus::Success);
        CHECK(bytes(f.b(), dst.addr, 3000) == bytes(f.a(), src.addr, 3000));
        CHECK(f.timer_fires + count_log(f, [](const roce::Packet& p) {
                  return is_nak(p, roce::AethType::Nak);
              }) > 0);  // recovered by the requester's retry (NAK or timeout)
    }
    SECTION("a WRITE past its MR: nothing is placed, and the good copy gets its access error") {
        Buf src = make_buf(f.a(), 1000, kAllAccess, 2);
        Buf dst = make_buf(f.b(), 600, kAllAccess);
        Buf guard = make_buf(f.b(), 1000, kAllAccess);  // registered memory right behind, not the rkey's
        const auto guard_before = bytes(f.b(), guard.addr, 1000);
        SendWqe w = wqe(hw::WrOpcode::RdmaWrite, 1, {src.sge()});
        w.remote_addr = dst.addr;
        w.rkey = dst.mr->rkey;
        REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
        auto once = std::make_shared<int>(0);
        deliver_bad_icrc(f, [&](const roce::Packet&) { return (*once)++ == 0; }, placed);
        CHECK(placed == std::vector<uint32_t>{0});
        f.run();
        auto s = f.a().cq.side(CqSide::Send);
        REQUIRE(s.size() == 1);
        CHECK(s[0].wc.status == hw::WcStatus::RemAccessErr);
        CHECK(bytes(f.b(), guard.addr, 1000) == guard_before);
    }
    SECTION("a SEND's FIRST into the receive WQE's SGEs; one too big for its buffer places nothing") {
        Buf src = make_buf(f.a(), 1500, kAllAccess, 2);
        Buf dst = make_buf(f.b(), 1500, kAllAccess);
        f.b().post_recv(9, {dst.sge(0, 700), dst.sge(700, 800)});
        REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 1, {src.sge()})) == PostStatus::Ok);
        auto once = std::make_shared<int>(0);
        deliver_bad_icrc(
            f, [&](const roce::Packet& p) { return p.hdr.bth.opcode == op::RC_SEND_FIRST && (*once)++ == 0; }, placed);
        REQUIRE(placed == std::vector<uint32_t>{1024});
        f.run();
        auto r = f.b().cq.side(CqSide::Recv);
        REQUIRE(r.size() == 1);
        CHECK(r[0].wc.status == hw::WcStatus::Success);
        CHECK(r[0].wc.byte_len == 1500);
        CHECK(bytes(f.b(), dst.addr, 1500) == bytes(f.a(), src.addr, 1500));

        // A second SEND, larger than the next receive buffer.
        Buf small = make_buf(f.b(), 100, kAllAccess);
        f.b().post_recv(10, {small.sge()});
        REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 2, {src.sge(0, 500)})) == PostStatus::Ok);
        auto first = std::make_shared<int>(0);
        deliver_bad_icrc(f, [&](const roce::Packet&) { return (*first)++ == 0; }, placed);
        CHECK(placed == std::vector<uint32_t>{1024, 0});
    }
}
