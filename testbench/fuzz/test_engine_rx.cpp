// The receive path's counters on the in-process soft engine device
// (engine_world.h): every frame the port hands over is counted once.
#include <catch2/catch.hpp>

#include "engine_world.h"
#include "simnic/roce/opcode.h"

using namespace simnic;
using namespace simnic::fuzz;

// Found by fuzz_engine_rx against fuzz_model_rx: a frame no longer than an
// Ethernet header was dropped by the soft engine without being counted,
// while a model device's MAC RX counted it as a bad header.
TEST_CASE("runt frames are counted as bad headers", "[fuzz][engine]") {
    EngineWorld w;
    REQUIRE(w.open());
    for (std::size_t n : {0, 1, 13, 14}) w.port->arrive(std::vector<std::uint8_t>(n, 0x45));
    w.port->arrive(peer_frame(0x123456, roce::op::RC_SEND_ONLY, 0, 8));
    REQUIRE(w.settle());
    CHECK(w.port->delivered == 5);
    CHECK(w.stat(hw::stats_block::rx_drops_bad_hdr) == 4);
    CHECK(w.stat(hw::stats_block::rx_packets) == 1);
    CHECK(w.stat(hw::stats_block::rx_drops_no_qp) == 1);
}

namespace {

// An RC ATOMIC WRITE from the peer to `q` at the QP's expected PSN: RETH
// (va, A's key, dma_len) and `payload` bytes of 0x77.
std::vector<std::uint8_t> atomic_write(EngineWorld& w, const QpInfo& q, std::uint64_t va, std::uint32_t dma_len,
                                       std::size_t payload) {
    roce::Packet p;
    std::memcpy(p.eth.dst.data(), kLocalMac.data(), 6);
    std::memcpy(p.eth.src.data(), kPeerMac.data(), 6);
    p.ip4.src = 0x0a000002u;
    p.ip4.dst = 0x0a000001u;
    p.udp.sport = 0xC000;
    p.hdr.bth.opcode = roce::op::RC_ATOMIC_WRITE;
    p.hdr.bth.dqpn = q.qpn;
    p.hdr.bth.psn = static_cast<std::uint32_t>(w.qpc_get(q.qpn, hw::qpc::rq_psn));
    p.hdr.bth.ack_req = true;
    p.hdr.reth.va = va;
    p.hdr.reth.rkey = w.a.key;
    p.hdr.reth.dma_len = dma_len;
    std::vector<std::uint8_t> data(payload, 0x77);
    p.payload = data.data();
    p.payload_len = payload;
    std::vector<std::uint8_t> out;
    REQUIRE(roce::encode_frame(p, out));
    return out;
}

// The AETH syndrome of the last frame the device sent.
std::uint8_t last_syndrome(EngineWorld& w) {
    REQUIRE(!w.port->sent.empty());
    roce::Packet p;
    REQUIRE(roce::decode_frame(w.port->sent.back().data(), w.port->sent.back().size(), p).ok());
    REQUIRE(p.opinfo().has(roce::kHasAeth));
    return p.hdr.aeth.syndrome;
}

}  // namespace

// Found by fuzz_engine_rx (ASan: a read past the frame): an ATOMIC WRITE
// whose RETH and payload said 2 bytes had 8 bytes written from its 2-byte
// payload, with the key checked for 2.
TEST_CASE("an ATOMIC WRITE of other than 8 bytes is an invalid request, one of 8 is placed", "[fuzz][engine]") {
    EngineWorld w;
    REQUIRE(w.open());
    QpInfo& q = w.add_qp(hw::QpType::Rc, hw::QpState::Rts);
    QpInfo& q2 = w.add_qp(hw::QpType::Rc, hw::QpState::Rts);
    REQUIRE(w.error.empty());
    const auto va = reinterpret_cast<std::uint64_t>(w.a.p) + 8184;
    for (std::uint32_t n : {2u, 0u, 16u}) {
        INFO("dma_len and payload " << n);
        QpInfo& t = n == 2 ? q : q2;
        if (n == 16) {
            // 8 bytes announced, 16 carried.
            w.port->arrive(atomic_write(w, t, va, 8, 16));
        } else {
            w.port->arrive(atomic_write(w, t, va, n, n));
        }
        REQUIRE(w.settle());
        CHECK(last_syndrome(w) == 0x61);  // NAK: invalid request
        CHECK(Arena::all(w.a.p + 8184, 8, 0));
        if (n == 0) break;  // q2 is in ERR now
    }
    QpInfo& ok = w.add_qp(hw::QpType::Rc, hw::QpState::Rts);
    w.port->arrive(atomic_write(w, ok, va, 8, 8));
    REQUIRE(w.settle());
    CHECK(roce::aeth_type(last_syndrome(w)) == roce::AethType::Ack);
    const std::uint8_t placed[8] = {0x77, 0x77, 0x77, 0x77, 0x77, 0x77, 0x77, 0x77};
    CHECK(std::memcmp(w.a.p + 8184, placed, 8) == 0);
    CHECK(DmaGuard::get().violations == 0);
}
