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
