// The QP async events that follow the QP state machine: SQ_DRAINED after
// RTS->SQD (hw-spec 5.7; rxe_req.c req_check_sq_drain_done(), rxe_comp.c
// comp_check_sq_drain_done()) and QP_LAST_WQE_REACHED when a QP on an SRQ
// enters ERR (rxe_resp.c flush_recv_queue()).
#include <catch2/catch.hpp>

#include "harness.h"

using namespace tb;

namespace {

using Evs = std::vector<hw::EventType>;

// Frames node `from` has transmitted so far, faults included.
size_t sent_by(const Fabric& f, int from) {
    size_t n = 0;
    for (const Frame& fr : f.log) n += fr.from == from;
    return n;
}

// Deliver only the oldest frame on the wire.
void deliver_one(Fabric& f) {
    REQUIRE(!f.in_flight.empty());
    Frame fr = std::move(f.in_flight.front());
    f.in_flight.pop_front();
    roce::Packet p;
    REQUIRE(roce::decode_frame(fr.bytes.data(), fr.bytes.size(), p).ok());
    f.nodes[1 - fr.from]->qp->on_packet(p);
}

auto notify_on_a(bool on) {
    return [on](QpConfig& c, int i) {
        if (i == 0) c.en_sqd_async_notify = on;
    };
}

auto srq_on_b() {
    return [](QpConfig& c, int i) {
        if (i == 1) c.srq = true;
    };
}

}  // namespace

TEST_CASE("events: SQ_DRAINED waits for every started WQE to be acknowledged", "[transport][events]") {
    Fabric f(hw::QpType::Rc, roce::IbMtu::Mtu1024, notify_on_a(true));
    Buf src = make_buf(f.a(), 3000, kAllAccess, 1);
    Buf dst = make_buf(f.b(), 4 * 3000, kAllAccess);
    for (uint32_t i = 0; i < 4; ++i) f.b().post_recv(100 + i, {dst.sge(i * 3000, 3000)});
    size_t cqes_at_event = SIZE_MAX;
    f.a().events.hook = [&](hw::EventType) { cqes_at_event = f.a().cq.all.size(); };

    for (uint64_t id = 1; id <= 3; ++id)
        REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, id, {src.sge()})) == PostStatus::Ok);
    REQUIRE(sent_by(f, 0) == 9);  // 3 x 3 packets on the wire, no ACK yet
    f.a().qp->set_state(hw::QpState::Sqd);
    CHECK(f.a().qp->snapshot().sq_draining);
    CHECK(f.a().events.got.empty());
    // Posted in SQD: queued, not started.
    REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 4, {src.sge()})) == PostStatus::Ok);
    CHECK(sent_by(f, 0) == 9);

    // The ACK of the first SEND leaves two outstanding: still draining.
    while (f.a().cq.all.empty()) deliver_one(f);
    CHECK(f.a().events.got.empty());
    CHECK(f.a().qp->snapshot().sq_draining);

    f.run();
    CHECK(f.a().events.got == Evs{hw::EventType::SqDrained});
    CHECK(cqes_at_event == 3);  // raised after the last drained WQE completed
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 3);
    for (uint64_t i = 0; i < 3; ++i) {
        CHECK(s[i].wc.wr_id == i + 1);
        CHECK(s[i].wc.status == hw::WcStatus::Success);
    }
    CHECK(f.b().cq.side(CqSide::Recv).size() == 3);
    CHECK(f.a().qp->state() == hw::QpState::Sqd);
    CHECK(!f.a().qp->snapshot().sq_draining);
    CHECK(f.a().qp->snapshot().sq_outstanding == 1);  // WQE 4 waits for RTS
    CHECK(sent_by(f, 0) == 9);

    // Back to RTS: WQE 4 goes, and no event comes with it.
    f.a().qp->set_state(hw::QpState::Rts);
    f.run();
    REQUIRE(f.a().cq.side(CqSide::Send).size() == 4);
    CHECK(f.a().cq.side(CqSide::Send)[3].wc.wr_id == 4);
    CHECK(f.b().cq.side(CqSide::Recv).size() == 4);
    CHECK(f.a().events.got.size() == 1);

    // A second RTS->SQD is a new drain: with nothing outstanding it is over
    // at once. SQD->SQD (a modify with attributes) is no new drain.
    f.a().qp->set_state(hw::QpState::Sqd);
    CHECK(f.a().events.got == Evs{hw::EventType::SqDrained, hw::EventType::SqDrained});
    f.a().qp->set_state(hw::QpState::Sqd);
    f.run();
    CHECK(f.a().events.got.size() == 2);
    CHECK(f.b().events.got.empty());
}

TEST_CASE("events: no SQ_DRAINED without en_sqd_async_notify", "[transport][events]") {
    Fabric f(hw::QpType::Rc, roce::IbMtu::Mtu1024, notify_on_a(false));
    Buf src = make_buf(f.a(), 3000, kAllAccess, 2);
    Buf dst = make_buf(f.b(), 3000, kAllAccess);
    auto w = wqe(hw::WrOpcode::RdmaWrite, 1, {src.sge()});
    w.remote_addr = dst.addr;
    w.rkey = dst.mr->rkey;
    REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    f.a().qp->set_state(hw::QpState::Sqd);
    CHECK(f.a().qp->snapshot().sq_draining);
    f.run();
    // The drain ends (QPC.sq_draining returns to 0) without an event.
    CHECK(!f.a().qp->snapshot().sq_draining);
    CHECK(f.a().cq.side(CqSide::Send).size() == 1);
    CHECK(f.a().events.got.empty());
    // Nor when the SQ is already empty.
    f.a().qp->set_state(hw::QpState::Rts);
    f.a().qp->set_state(hw::QpState::Sqd);
    CHECK(!f.a().qp->snapshot().sq_draining);
    CHECK(f.a().events.got.empty());
}

TEST_CASE("events: an SQD drain finishes a message the window had cut", "[transport][events]") {
    // 200 packets: the requester stops at 128 PSNs beyond the oldest
    // unacknowledged one, so the WRITE is half sent when SQD comes. It was
    // started, so its remaining packets still go; the WQE behind it does not.
    Fabric f(hw::QpType::Rc, roce::IbMtu::Mtu1024, notify_on_a(true));
    const uint32_t len = 200 * 1024;
    Buf src = make_buf(f.a(), len, kAllAccess, 3);
    Buf dst = make_buf(f.b(), len, kAllAccess);
    auto w = wqe(hw::WrOpcode::RdmaWrite, 1, {src.sge()});
    w.remote_addr = dst.addr;
    w.rkey = dst.mr->rkey;
    REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    w.wr_id = 2;
    REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    const size_t first = sent_by(f, 0);
    CHECK(first < 200);
    f.a().qp->set_state(hw::QpState::Sqd);
    f.run();
    CHECK(sent_by(f, 0) == 200);
    CHECK(bytes(f.b(), dst.addr, len) == bytes(f.a(), src.addr, len));
    CHECK(f.a().events.got == Evs{hw::EventType::SqDrained});
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 1);
    CHECK(s[0].wc.wr_id == 1);
    CHECK(f.a().qp->snapshot().sq_outstanding == 1);
    f.a().qp->set_state(hw::QpState::Rts);
    f.run();
    CHECK(f.a().cq.side(CqSide::Send).size() == 2);
    CHECK(f.a().events.got.size() == 1);
}

TEST_CASE("events: an SQD drain resends what was lost before SQ_DRAINED", "[transport][events]") {
    Fabric f(hw::QpType::Rc, roce::IbMtu::Mtu1024, notify_on_a(true));
    Buf src = make_buf(f.a(), 3000, kAllAccess, 4);
    Buf dst = make_buf(f.b(), 2 * 3000, kAllAccess);
    f.b().post_recv(1, {dst.sge(0, 3000)});
    f.b().post_recv(2, {dst.sge(3000, 3000)});
    size_t drop_index = 0;
    SECTION("a lost middle packet: PSN sequence NAK") { drop_index = 1; }
    SECTION("the last packet lost: retransmit timer") { drop_index = 5; }
    bool dropped = false;
    f.fault = [&](const roce::Packet&, size_t i) {
        if (i != drop_index || dropped) return Fault::Pass;
        dropped = true;
        return Fault::Drop;
    };
    for (uint64_t id = 1; id <= 2; ++id)
        REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, id, {src.sge()})) == PostStatus::Ok);
    REQUIRE(dropped);
    f.a().qp->set_state(hw::QpState::Sqd);
    f.run();
    CHECK(sent_by(f, 0) > 6);  // something was resent in SQD
    CHECK(f.a().events.got == Evs{hw::EventType::SqDrained});
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 2);
    CHECK(s[0].wc.status == hw::WcStatus::Success);
    CHECK(s[1].wc.status == hw::WcStatus::Success);
    auto r = f.b().cq.side(CqSide::Recv);
    REQUIRE(r.size() == 2);
    CHECK(bytes(f.b(), dst.addr + 3000, 3000) == bytes(f.a(), src.addr, 3000));
    if (drop_index == 5) CHECK(f.timer_fires > 0);
}

TEST_CASE("events: UC and UD drain as soon as their WQEs are sent", "[transport][events]") {
    Fabric f(hw::QpType::Uc, roce::IbMtu::Mtu1024, notify_on_a(true));
    Buf src = make_buf(f.a(), 3000, kAllAccess, 5);
    Buf dst = make_buf(f.b(), 3000, kAllAccess);
    f.b().post_recv(1, {dst.sge()});
    REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 1, {src.sge()})) == PostStatus::Ok);
    f.a().qp->set_state(hw::QpState::Sqd);
    CHECK(f.a().events.got == Evs{hw::EventType::SqDrained});
    f.run();
    CHECK(f.a().events.got.size() == 1);
}

TEST_CASE("events: ERR during an SQD drain ends it without SQ_DRAINED", "[transport][events]") {
    Fabric f(hw::QpType::Rc, roce::IbMtu::Mtu1024, notify_on_a(true));
    Buf src = make_buf(f.a(), 100, kAllAccess, 6);
    Buf dst = make_buf(f.b(), 100, kAllAccess);
    f.b().post_recv(1, {dst.sge()});
    REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 1, {src.sge()})) == PostStatus::Ok);
    f.a().qp->set_state(hw::QpState::Sqd);
    f.a().qp->set_state(hw::QpState::Err);
    CHECK(!f.a().qp->snapshot().sq_draining);
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 1);
    CHECK(s[0].wc.status == hw::WcStatus::WrFlushErr);
    f.run();
    CHECK(f.a().events.got.empty());  // A has no SRQ either
}

TEST_CASE("events: QP_LAST_WQE_REACHED when a QP on an SRQ is moved to ERR", "[transport][events]") {
    Fabric f(hw::QpType::Rc, roce::IbMtu::Mtu1024, srq_on_b());
    Buf src = make_buf(f.a(), 3000, kAllAccess, 7);
    Buf dst = make_buf(f.b(), 3 * 3000, kAllAccess);
    // b's receive queue port stands for its SRQ here.
    for (uint32_t i = 0; i < 3; ++i) f.b().post_recv(10 + i, {dst.sge(i * 3000, 3000)});
    REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 1, {src.sge()})) == PostStatus::Ok);
    deliver_one(f);  // SEND_FIRST: b takes receive WQE 10
    CHECK(f.b().rq.q.size() == 2);
    CHECK(f.b().events.got.empty());

    f.b().qp->set_state(hw::QpState::Err);
    CHECK(f.b().events.got == Evs{hw::EventType::QpLastWqeReached});
    // The WQE in use is flushed; the SRQ's own WQEs are left for its other QPs.
    auto r = f.b().cq.side(CqSide::Recv);
    REQUIRE(r.size() == 1);
    CHECK(r[0].wc.wr_id == 10);
    CHECK(r[0].wc.status == hw::WcStatus::WrFlushErr);
    CHECK(f.b().rq.q.size() == 2);
    // Once per entry into ERR.
    f.b().qp->set_state(hw::QpState::Err);
    CHECK(f.b().events.got.size() == 1);

    // A QP without an SRQ raises nothing when it goes to ERR.
    f.a().qp->set_state(hw::QpState::Err);
    CHECK(f.a().events.got.empty());
    f.run();  // the rest of the SEND reaches a QP in ERR: dropped
    CHECK(f.b().events.got.size() == 1);
    CHECK(f.b().cq.side(CqSide::Recv).size() == 1);
}

TEST_CASE("events: QP_LAST_WQE_REACHED follows the error event of a responder error", "[transport][events]") {
    Fabric f(hw::QpType::Rc, roce::IbMtu::Mtu1024, srq_on_b());
    Buf src = make_buf(f.a(), 100, kAllAccess, 8);
    Buf dst = make_buf(f.b(), 100, kAllAccess);
    f.b().post_recv(1, {dst.sge()});
    auto w = wqe(hw::WrOpcode::RdmaWrite, 1, {src.sge()});
    w.remote_addr = dst.addr;
    w.rkey = dst.mr->rkey ^ 0x5a00;  // bad rkey
    REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    f.run();
    CHECK(f.b().qp->state() == hw::QpState::Err);
    CHECK(f.b().events.got == Evs{hw::EventType::QpAccessErr, hw::EventType::QpLastWqeReached});
    CHECK(f.b().rq.q.size() == 1);  // the SRQ's WQE stays
    // The requester went to ERR on the NAK; it has no SRQ.
    CHECK(f.a().qp->state() == hw::QpState::Err);
    CHECK(f.a().events.got.empty());
}

TEST_CASE("events: a QP on an SRQ raises QP_LAST_WQE_REACHED, one without does not, for each ERR", "[transport][events]") {
    for (bool srq : {false, true}) {
        DYNAMIC_SECTION((srq ? "SRQ" : "RQ")) {
            QpConfig c;
            c.qpn = 0x20;
            c.dest_qpn = 0x21;
            c.srq = srq;
            c.av = make_av(0);
            Fabric f;  // for its ports
            Node& n = f.a();
            for (int round = 1; round <= 2; ++round) {
                // A new QP object per connection, as the engine makes one on
                // RESET->INIT; ERR straight from INIT counts too.
                n.qp = std::make_unique<Qp>(c, n.env());
                n.qp->set_state(hw::QpState::Init);
                n.qp->set_state(hw::QpState::Err);
                n.qp->set_state(hw::QpState::Err);
                CHECK(n.events.got.size() == (srq ? size_t(round) : 0));
            }
            if (srq) CHECK(n.events.got == Evs{hw::EventType::QpLastWqeReached, hw::EventType::QpLastWqeReached});
        }
    }
}
