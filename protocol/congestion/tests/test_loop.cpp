// The pieces together, as an engine will chain them: the sender marks its
// frame ECT(0), a switch marks it CE, the receiver's notification point asks
// for a CNP, the CNP crosses the wire, and the sender's reaction point cuts
// the QP's rate. Real frames through the packet core at every step.
#include <catch2/catch.hpp>

#include <vector>

#include "simnic/congestion/dcqcn.h"
#include "simnic/congestion/notification_point.h"
#include "simnic/roce/ecn.h"
#include "simnic/roce/packet.h"

using namespace simnic;

namespace {

constexpr uint32_t kSenderQpn = 0x000123;    // the requester's QP
constexpr uint32_t kReceiverQpn = 0x000456;  // the responder's QP (its remote is kSenderQpn)

std::vector<uint8_t> data_frame(uint32_t psn) {
    static const std::vector<uint8_t> payload(1024, 0xab);
    roce::Packet p;
    p.eth.src = {0x02, 0, 0, 0, 0, 0x01};
    p.eth.dst = {0x02, 0, 0, 0, 0, 0x02};
    p.ip4.src = 0xc0a80001;
    p.ip4.dst = 0xc0a80002;
    p.udp.sport = 0xd001;
    p.hdr.bth.opcode = roce::op::RC_RDMA_WRITE_MIDDLE;
    p.hdr.bth.dqpn = kReceiverQpn;
    p.hdr.bth.psn = psn;
    p.payload = payload.data();
    p.payload_len = payload.size();
    roce::set_ecn(p, roce::Ecn::Ect0);  // the sender takes part in ECN
    std::vector<uint8_t> f;
    REQUIRE(roce::encode_frame(p, f));
    return f;
}

}  // namespace

TEST_CASE("loop: a CE mark becomes one CNP per N and one rate cut at the sender", "[np][dcqcn]") {
    congestion::NotificationPoint np;  // N = 50 us
    congestion::DcqcnRp rp;            // 100 Gb/s, alpha 1
    int cnps = 0;
    // Ten frames 1 us apart, each marked CE by the switch.
    for (uint32_t i = 0; i < 10; ++i) {
        const uint64_t now = 1'000 * uint64_t(i);
        std::vector<uint8_t> f = data_frame(i);
        REQUIRE(roce::write_frame_ecn(f.data(), f.size(), roce::Ecn::Ce));  // congested egress

        // The receiver: the frame is intact (ICRC and IPv4 checksum), CE.
        roce::Packet rx;
        REQUIRE(roce::decode_frame(f.data(), f.size(), rx).ok());
        REQUIRE(roce::ecn_of(rx) == roce::Ecn::Ce);
        if (!np.on_ce(rx.hdr.bth.dqpn, now)) continue;

        // Its CNP, to the QP that sent the frame.
        std::vector<uint8_t> cnp;
        roce::Packet c = roce::make_cnp(rx, kSenderQpn);
        REQUIRE(roce::encode_frame(c, cnp));
        ++cnps;

        // The sender: a valid CNP for its QP.
        roce::Packet back;
        REQUIRE(roce::decode_frame(cnp.data(), cnp.size(), back).ok());
        REQUIRE(roce::is_cnp(back));
        CHECK(back.hdr.bth.dqpn == kSenderQpn);
        CHECK(back.ip4.dst == 0xc0a80001);
        rp.on_cnp(now + 500);
    }
    CHECK(cnps == 1);  // all ten within N of the first
    CHECK(np.counters().cnps_suppressed == 9);
    CHECK(rp.counters().cnps_received == 1);
    CHECK(rp.rate_bps() == 50e9);
    CHECK(rp.target_rate_bps() == 100e9);
}
