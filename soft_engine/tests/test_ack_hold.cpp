// Which ACKs wait at the port for their flow's reply (ack_hold.h): the
// frames it recognises, the ping-pong mode a flow enters and leaves, and
// what ends a wait, on a clock driven by hand.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "ack_hold.h"
#include "port.h"
#include "simnic/roce/headers.h"
#include "simnic/roce/opcode.h"

using namespace simnic;
using namespace simnic::soft_engine;

namespace {

constexpr uint64_t kUs = 1000;
constexpr uint64_t kHold = 50 * kUs;

// An Ethernet frame of IP version `v6` to `dst` (4 or 16 bytes) carrying a
// BTH with `opcode` and `dqpn`, and `ext` bytes after it (an AETH's syndrome
// first). Only the fields the hold reads are filled in.
struct Frame {
    std::vector<uint8_t> bytes;
    OutFrame out;
    Frame(uint8_t opcode, uint32_t dqpn, std::vector<uint8_t> dst, std::vector<uint8_t> ext = {}, bool v6 = false) {
        const size_t ip = roce::kEthHdrBytes;
        const size_t l3 = v6 ? roce::kIpv6HdrBytes : roce::kIpv4HdrBytes;
        const size_t bth = ip + l3 + roce::kUdpHdrBytes;
        bytes.assign(bth + roce::kBthBytes + ext.size() + 4, 0);  // + ICRC
        std::memcpy(bytes.data() + ip + (v6 ? 24 : 16), dst.data(), dst.size());
        bytes[bth] = opcode;
        bytes[bth + 5] = uint8_t(dqpn >> 16);
        bytes[bth + 6] = uint8_t(dqpn >> 8);
        bytes[bth + 7] = uint8_t(dqpn);
        if (!ext.empty()) std::memcpy(bytes.data() + bth + roce::kBthBytes, ext.data(), ext.size());
        out.data = bytes.data();
        out.len = out.ip_end = bytes.size();
        out.v6 = v6;
    }
};

const std::vector<uint8_t> kPeer = {10, 0, 0, 2}, kOther = {10, 0, 0, 3};
const uint8_t kAckSyndrome = roce::make_syndrome(roce::AethType::Ack, 31);
const uint8_t kNakSyndrome = roce::make_syndrome(roce::AethType::Nak, 0);

Frame ack(uint32_t dqpn, const std::vector<uint8_t>& dst = kPeer) {
    return Frame(roce::op::RC_ACKNOWLEDGE, dqpn, dst, {kAckSyndrome, 0, 0, 1});
}
Frame send(uint32_t dqpn, const std::vector<uint8_t>& dst = kPeer) {
    return Frame(roce::op::RC_SEND_ONLY, dqpn, dst, {0xAB, 0xCD});
}

// Queues `f` as the engine does (classify, then queued).
void queue(AckHold& h, const Frame& f, uint64_t now) {
    AckHold::Flow flow;
    const AckHold::Kind k = AckHold::classify(f.out, flow);
    h.queued(k, flow, now);
}

AckHold::Flow flow_of(const Frame& f) {
    AckHold::Flow flow;
    AckHold::classify(f.out, flow);
    return flow;
}

// Puts flow (kPeer, qpn) in the ping-pong mode: an ACK at `t`, sent at
// once, and the flow's own SEND 10 us later.
void enter_pingpong(AckHold& h, uint32_t qpn, uint64_t t) {
    queue(h, ack(qpn), t);
    REQUIRE_FALSE(h.may_wait(t));
    h.sent(t);
    queue(h, send(qpn), t + 10 * kUs);
    REQUIRE_FALSE(h.may_wait(t + 10 * kUs));
    h.sent(t + 10 * kUs);
    REQUIRE(h.in_pingpong(flow_of(ack(qpn))));
}

}  // namespace

TEST_CASE("ack hold: frames are told apart by opcode and AETH syndrome, flows by peer address and QP", "[ack_hold]") {
    AckHold::Flow f;
    CHECK(AckHold::classify(ack(0x123456).out, f) == AckHold::Kind::PureAck);
    CHECK(f.dqpn == 0x123456);
    CHECK(std::equal(kPeer.begin(), kPeer.end(), f.dst.begin()));
    CHECK(f.dst[4] == 0);

    // A NAK, a READ response, an atomic ACK and a request belong to the flow
    // but never wait; only a request is a reply that a held ACK waits for.
    CHECK(AckHold::classify(Frame(roce::op::RC_ACKNOWLEDGE, 7, kPeer, {kNakSyndrome, 0, 0, 1}).out, f) ==
          AckHold::Kind::Flow);
    CHECK(AckHold::classify(Frame(roce::op::RC_ACKNOWLEDGE, 7, kPeer,
                                  {roce::make_syndrome(roce::AethType::RnrNak, 4), 0, 0, 1}).out, f) ==
          AckHold::Kind::Flow);
    CHECK(AckHold::classify(Frame(roce::op::RC_RDMA_READ_RESPONSE_ONLY, 7, kPeer, {kAckSyndrome, 0, 0, 1}).out, f) ==
          AckHold::Kind::Flow);
    CHECK(AckHold::classify(Frame(roce::op::RC_ATOMIC_ACKNOWLEDGE, 7, kPeer, {kAckSyndrome, 0, 0, 1}).out, f) ==
          AckHold::Kind::Flow);
    CHECK(AckHold::classify(send(7).out, f) == AckHold::Kind::Request);
    CHECK(f.dqpn == 7);
    CHECK(AckHold::classify(Frame(roce::op::RC_RDMA_READ_REQUEST, 7, kPeer).out, f) == AckHold::Kind::Request);
    CHECK(AckHold::classify(Frame(roce::op::RC_RDMA_WRITE_MIDDLE, 7, kPeer).out, f) == AckHold::Kind::Request);

    // Of no RC flow.
    CHECK(AckHold::classify(Frame(roce::op::UD_SEND_ONLY, 7, kPeer).out, f) == AckHold::Kind::Other);
    CHECK(AckHold::classify(Frame(roce::op::UC_SEND_ONLY, 7, kPeer).out, f) == AckHold::Kind::Other);
    CHECK(AckHold::classify(Frame(roce::op::CNP, 7, kPeer).out, f) == AckHold::Kind::Other);

    // An ACK cut short before its AETH is no pure ACK; a frame without a
    // whole BTH is of no flow.
    Frame cut = ack(7);
    cut.out.ip_end = cut.out.bth() + roce::kBthBytes + 2;
    CHECK(AckHold::classify(cut.out, f) == AckHold::Kind::Flow);
    cut.out.ip_end = cut.out.bth() + 4;
    CHECK(AckHold::classify(cut.out, f) == AckHold::Kind::Other);

    // IPv6: the whole 16-byte destination.
    std::vector<uint8_t> v6(16, 0);
    v6[0] = 0xfe;
    v6[1] = 0x80;
    v6[15] = 9;
    CHECK(AckHold::classify(Frame(roce::op::RC_ACKNOWLEDGE, 5, v6, {kAckSyndrome, 0, 0, 1}, true).out, f) ==
          AckHold::Kind::PureAck);
    CHECK(std::equal(v6.begin(), v6.end(), f.dst.begin()));
}

TEST_CASE("ack hold: a flow whose reply follows its ACK holds the next ACK until the reply", "[ack_hold]") {
    AckHold h(kHold);
    // Not yet known to reply: the ACK leaves at once.
    queue(h, ack(9), 0);
    CHECK_FALSE(h.may_wait(0));
    h.sent(0);
    CHECK_FALSE(h.in_pingpong(flow_of(ack(9))));
    // Its SEND within the hold time: the mode.
    queue(h, send(9), 30 * kUs);
    CHECK_FALSE(h.may_wait(30 * kUs));
    h.sent(30 * kUs);
    CHECK(h.in_pingpong(flow_of(ack(9))));

    // Now its ACK waits, up to the hold time...
    const uint64_t t = 1000 * kUs;
    queue(h, ack(9), t);
    CHECK(h.holding());
    CHECK(h.may_wait(t));
    CHECK(h.may_wait(t + kHold - 1));
    // ...and the reply ends the wait: both leave together.
    queue(h, send(9), t + 12 * kUs);
    CHECK_FALSE(h.may_wait(t + 12 * kUs));
    h.sent(t + 12 * kUs);
    CHECK_FALSE(h.holding());
    CHECK(h.in_pingpong(flow_of(ack(9))));
    CHECK(h.counters().held == 1);
    CHECK(h.counters().joined == 1);
    CHECK(h.counters().expired == 0);
}

TEST_CASE("ack hold: a hold that runs out ends the mode, and a late reply does not start it", "[ack_hold]") {
    AckHold h(kHold);
    enter_pingpong(h, 9, 0);
    const uint64_t t = 1000 * kUs;
    queue(h, ack(9), t);
    CHECK(h.may_wait(t + kHold - 1));
    CHECK_FALSE(h.may_wait(t + kHold));
    h.sent(t + kHold);
    CHECK(h.counters().expired == 1);
    CHECK_FALSE(h.in_pingpong(flow_of(ack(9))));
    // The next ACK leaves at once; a reply later than the hold time does
    // not bring the mode back.
    queue(h, ack(9), 2000 * kUs);
    CHECK_FALSE(h.may_wait(2000 * kUs));
    h.sent(2000 * kUs);
    queue(h, send(9), 2000 * kUs + kHold + 1);
    h.sent(2000 * kUs + kHold + 1);
    CHECK_FALSE(h.in_pingpong(flow_of(ack(9))));
    // A receiver that never replies never holds an ACK.
    for (uint64_t i = 0; i < 100; ++i) {
        queue(h, ack(9), 3000 * kUs + i * kUs);
        CHECK_FALSE(h.may_wait(3000 * kUs + i * kUs));
        h.sent(3000 * kUs + i * kUs);
    }
    CHECK(h.counters().held == 1);
}

TEST_CASE("ack hold: a response after an ACK is no reply, and starts no mode", "[ack_hold]") {
    // ib_write_bw's responder under loss: an ACK, then a NAK (or an RNR
    // NAK) of the same flow at once. Its next ACK must not wait for a
    // request that never comes.
    AckHold h(kHold);
    const Frame responses[] = {
        Frame(roce::op::RC_ACKNOWLEDGE, 9, kPeer, {kNakSyndrome, 0, 0, 2}),
        Frame(roce::op::RC_ACKNOWLEDGE, 9, kPeer, {roce::make_syndrome(roce::AethType::RnrNak, 4), 0, 0, 2}),
        Frame(roce::op::RC_RDMA_READ_RESPONSE_ONLY, 9, kPeer, {kAckSyndrome, 0, 0, 2}),
        Frame(roce::op::RC_ATOMIC_ACKNOWLEDGE, 9, kPeer, {kAckSyndrome, 0, 0, 2}),
    };
    uint64_t t = 0;
    for (const Frame& r : responses) {
        queue(h, ack(9), t);
        CHECK_FALSE(h.may_wait(t));
        h.sent(t);
        queue(h, r, t + kUs);
        h.sent(t + kUs);
        CHECK_FALSE(h.in_pingpong(flow_of(ack(9))));
        t += 1000 * kUs;
    }
    queue(h, ack(9), t);
    CHECK_FALSE(h.may_wait(t));
    CHECK(h.counters().held == 0);
}

TEST_CASE("ack hold: any frame that may not wait sends the held ACKs with it, keeping their mode", "[ack_hold]") {
    AckHold h(kHold);
    enter_pingpong(h, 9, 0);
    const uint64_t t = 1000 * kUs;
    SECTION("another flow's request") {
        queue(h, ack(9), t);
        REQUIRE(h.may_wait(t));
        queue(h, send(9, kOther), t + kUs);
    }
    SECTION("a frame of no RC flow") {
        queue(h, ack(9), t);
        REQUIRE(h.may_wait(t));
        queue(h, Frame(roce::op::UD_SEND_ONLY, 1, kPeer), t + kUs);
    }
    SECTION("another flow's ACK, that flow not in the mode") {
        queue(h, ack(9), t);
        REQUIRE(h.may_wait(t));
        queue(h, ack(10), t + kUs);
    }
    SECTION("the held flow's own NAK") {
        queue(h, ack(9), t);
        REQUIRE(h.may_wait(t));
        queue(h, Frame(roce::op::RC_ACKNOWLEDGE, 9, kPeer, {kNakSyndrome, 0, 0, 2}), t + kUs);
    }
    CHECK_FALSE(h.may_wait(t + kUs));
    h.sent(t + kUs);
    CHECK_FALSE(h.holding());
    CHECK(h.counters().expired == 0);
    CHECK(h.in_pingpong(flow_of(ack(9))));
}

TEST_CASE("ack hold: several held ACKs wait no longer than the oldest may", "[ack_hold]") {
    AckHold h(kHold);
    enter_pingpong(h, 9, 0);
    enter_pingpong(h, 11, 100 * kUs);
    const uint64_t t = 1000 * kUs;
    queue(h, ack(9), t);
    queue(h, ack(11), t + 30 * kUs);
    queue(h, ack(9), t + 40 * kUs);  // the same flow again: still one hold
    CHECK(h.may_wait(t + kHold - 1));
    CHECK_FALSE(h.may_wait(t + kHold));
    h.sent(t + kHold);
    CHECK(h.counters().held == 2);
    CHECK(h.counters().expired == 1);
    CHECK_FALSE(h.in_pingpong(flow_of(ack(9))));
    CHECK_FALSE(h.in_pingpong(flow_of(ack(11))));
}

TEST_CASE("ack hold: a hold of 0 never waits", "[ack_hold]") {
    AckHold h(0);
    for (uint64_t t = 0; t < 10; ++t) {
        queue(h, ack(9), t * kUs);
        CHECK_FALSE(h.may_wait(t * kUs));
        h.sent(t * kUs);
        queue(h, send(9), t * kUs + 1);
        h.sent(t * kUs + 1);
    }
    CHECK_FALSE(h.in_pingpong(flow_of(ack(9))));
    CHECK(h.counters().held == 0);
}
