// The port's ACK hold (soft_engine/src/ack_hold.h, hw-spec 2.6.2) inside the
// engine, on the in-process device (engine_world.h) whose clock the test
// drives: when an ACK waits, what ends the wait, and what TX_STATS_BLOCK
// counts. ack_hold.h's own tests cover the rules on a bare AckHold; these
// cover the engine's use of it (which frames it is told of, the end of each
// step and pass, the counters published).
//
// On a real device the same behaviour depends on how fast the application
// replies, which a loaded machine decides: there, a system test can only
// check that the counters agree with each other (test_ibv_apps.sh).
#include <catch2/catch.hpp>

#include <cstring>

#include "engine_world.h"
#include "simnic/base/clock.h"
#include "simnic/roce/opcode.h"

using namespace simnic;
using namespace simnic::fuzz;
namespace op = simnic::roce::op;

namespace {

constexpr std::uint64_t kUs = 1000;
constexpr std::uint64_t kHold = 50 * kUs;

std::uint64_t tx_stat(const EngineWorld& w, hw::Field f) {
    std::uint64_t v;
    std::memcpy(&v, w.bar.data() + hw::kBar0TxStatsBlock + f.offset, 8);
    return v;
}

// The device's frames on the wire, in order: opcode and PSN of each.
struct Sent {
    std::uint8_t opcode = 0;
    std::uint32_t psn = 0;
    std::uint8_t syndrome = 0;
};
Sent sent(const EngineWorld& w, std::size_t i) {
    REQUIRE(i < w.port->sent.size());
    roce::Packet p;
    REQUIRE(roce::decode_frame(w.port->sent[i].data(), w.port->sent[i].size(), p).ok());
    return {p.hdr.bth.opcode, p.hdr.bth.psn, p.hdr.aeth.syndrome};
}

// A pure ACK (hw-spec 2.6.2): ACKNOWLEDGE with an ACK syndrome (bits 7:5 zero).
bool pure_ack(const Sent& s) { return s.opcode == op::RC_ACKNOWLEDGE && (s.syndrome >> 5) == 0; }

// An RC QP in RTS and a peer that SENDs to it and to which it replies with
// SENDs of its own, at times the test chooses.
struct PingPong {
    EngineWorld w;
    QpInfo* q = nullptr;
    std::uint64_t t0 = 0, now = 0;
    std::uint32_t peer_psn = 0;

    explicit PingPong(std::uint64_t hold_ns) {
        w.ack_hold_ns = hold_ns;
        REQUIRE(w.open());
        q = &w.add_qp(hw::QpType::Rc, hw::QpState::Rts);
        REQUIRE(w.error.empty());
        peer_psn = q->rq_psn;
        // The QPs' retransmit timers are set on the host's clock, 67 ms out
        // (timeout 14); the test's clock stays well short of them.
        t0 = now = base::mono_ns();
        at(0);
    }
    // Passes at t0 + `ns` until the engine has nothing left to do.
    void at_ns(std::uint64_t ns) {
        now = t0 + ns;
        for (int i = 0; i < 64 && w.poll(now); ++i) {
        }
    }
    void at(std::uint64_t us) { at_ns(us * kUs); }
    // The peer's SEND arrives (the device ACKs it); the device's reply.
    std::uint32_t peer_sends() {
        const std::uint32_t psn = peer_psn++;
        w.port->arrive(peer_frame(q->qpn, op::RC_SEND_ONLY, psn, 16));
        return psn;
    }
    void reply() { w.post_send(*q, hw::WrOpcode::Send, 16); }
};

}  // namespace

TEST_CASE("a held ACK leaves with its flow's reply, or alone when the hold runs out", "[fuzz][ack_hold]") {
    PingPong pp(kHold);
    EngineWorld& w = pp.w;

    // Not yet in ping-pong mode: the first ACK leaves at the end of its pass.
    const std::uint32_t psn1 = pp.peer_sends();
    pp.at(10);
    REQUIRE(w.port->sent_total == 1);
    CHECK(pure_ack(sent(w, 0)));
    CHECK(sent(w, 0).psn == psn1);

    // The reply follows within the hold time: the flow enters the mode.
    pp.at(20);
    pp.reply();
    pp.at(20);
    REQUIRE(w.port->sent_total == 2);
    CHECK(sent(w, 1).opcode == op::RC_SEND_ONLY);

    // The next SEND's ACK waits, up to the hold time...
    const std::uint32_t psn2 = pp.peer_sends();
    pp.at(100);
    CHECK(w.port->sent_total == 2);
    pp.at(140);
    CHECK(w.port->sent_total == 2);
    CHECK(tx_stat(w, hw::tx_stats_block::acks_held) == 0);  // published as the hold ends

    // ...and leaves with the reply, first, as queued.
    pp.at(145);
    pp.reply();
    pp.at(145);
    REQUIRE(w.port->sent_total == 4);
    CHECK(pure_ack(sent(w, 2)));
    CHECK(sent(w, 2).psn == psn2);
    CHECK(sent(w, 3).opcode == op::RC_SEND_ONLY);
    CHECK(tx_stat(w, hw::tx_stats_block::acks_held) == 1);
    CHECK(tx_stat(w, hw::tx_stats_block::acks_joined) == 1);
    CHECK(tx_stat(w, hw::tx_stats_block::ack_holds_expired) == 0);

    // An ACK whose reply does not come leaves when the hold runs out, not
    // a nanosecond before.
    const std::uint32_t psn3 = pp.peer_sends();
    pp.at(300);
    CHECK(w.port->sent_total == 4);
    pp.at_ns(350 * kUs - 1);
    CHECK(w.port->sent_total == 4);
    pp.at(350);
    REQUIRE(w.port->sent_total == 5);
    CHECK(pure_ack(sent(w, 4)));
    CHECK(sent(w, 4).psn == psn3);
    CHECK(tx_stat(w, hw::tx_stats_block::acks_held) == 2);
    CHECK(tx_stat(w, hw::tx_stats_block::acks_joined) == 1);
    CHECK(tx_stat(w, hw::tx_stats_block::ack_holds_expired) == 1);

    // The flow left the mode: its next ACK leaves at once, uncounted.
    pp.peer_sends();
    pp.at(400);
    REQUIRE(w.port->sent_total == 6);
    CHECK(pure_ack(sent(w, 5)));
    CHECK(tx_stat(w, hw::tx_stats_block::acks_held) == 2);

    // Nothing was lost on the way: the device received every SEND in order.
    CHECK(w.stat(hw::stats_block::rx_packets) == 4);
    CHECK(w.qpc_get(pp.q->qpn, hw::qpc::rq_psn) == ((psn1 + 4) & 0xFFFFFF));
}

TEST_CASE("with ack_hold_us 0 no ACK waits, and TX_STATS_BLOCK stays zero", "[fuzz][ack_hold]") {
    PingPong pp(0);
    EngineWorld& w = pp.w;
    // The same exchange as above: each ACK leaves in the pass of its SEND.
    for (std::uint64_t t = 10; t <= 60; t += 10) {
        pp.peer_sends();
        pp.at(t);
        REQUIRE(w.port->sent_total == t / 10 * 2 - 1);
        CHECK(pure_ack(sent(w, w.port->sent_total - 1)));
        pp.reply();
        pp.at(t + 1);
        REQUIRE(w.port->sent_total == t / 10 * 2);
    }
    CHECK(tx_stat(w, hw::tx_stats_block::acks_held) == 0);
    CHECK(tx_stat(w, hw::tx_stats_block::acks_joined) == 0);
    CHECK(tx_stat(w, hw::tx_stats_block::ack_holds_expired) == 0);
}
