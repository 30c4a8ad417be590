// The TX build stage's RTL: the reference (roce_tx_build.sv) against
// roce::encode_frame() byte for byte on every opcode, both IP versions, with
// and without a VLAN tag, every pad count, random field values, with its
// cycles; the descriptor's reach; and, before anything is built (Verilator's
// XML pass only), the port checker against the stage's interface
// (tx_build_interface.cc), the template and the worked example passing it,
// clear errors for a wrong design, and docs/model.md's table. The run-time
// build, the cache and the designs in the pipeline are tb_tx_build.cpp's
// (rtl_model/model/pipeline/tests).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "own_rtl.h"
#include "own_rtl_testkit.h"
#include "own_tx_build.h"
#include "simnic/roce/packet.h"
#include "tx_build_interface.h"
#include "tx_build_rtl.h"

using namespace simnic;
using namespace simnic::rtl;
namespace fs = std::filesystem;

namespace {

const std::string kDir = SIMNIC_TX_BUILD_SRC_DIR;
const std::string kWork = SIMNIC_OWN_TX_BUILD_TEST_DIR;

using testkit::read;
using testkit::replaced;

// A variant of a design, in this test's work directory.
std::string write(const std::string& name, const std::string& text) { return testkit::write_in(kWork, name, text); }

// A packet of `opcode` with every header field random, as a sender fills it.
roce::Packet random_packet(std::mt19937_64& rng, uint8_t opcode, bool v6, bool vlan, size_t payload,
                           std::vector<uint8_t>& data) {
    auto r = [&](uint64_t bits) { return bits >= 64 ? rng() : rng() & ((uint64_t(1) << bits) - 1); };
    roce::Packet p;
    for (auto& b : p.eth.dst) b = uint8_t(r(8));
    for (auto& b : p.eth.src) b = uint8_t(r(8));
    p.eth.has_vlan = vlan;
    p.eth.vlan_tci = uint16_t(r(16));
    p.ip_version = v6 ? roce::IpVersion::V6 : roce::IpVersion::V4;
    p.ip4.tos = uint8_t(r(8));
    p.ip4.ttl = uint8_t(r(8));
    p.ip4.id = uint16_t(r(16));
    p.ip4.frag = r(1) ? 0x4000 : 0;
    p.ip4.src = uint32_t(r(32));
    p.ip4.dst = uint32_t(r(32));
    p.ip6.traffic_class = uint8_t(r(8));
    p.ip6.flow_label = uint32_t(r(20));
    p.ip6.hop_limit = uint8_t(r(8));
    for (auto& b : p.ip6.src) b = uint8_t(r(8));
    for (auto& b : p.ip6.dst) b = uint8_t(r(8));
    p.udp.sport = uint16_t(r(16));
    roce::TransportHdrs& h = p.hdr;
    h.bth.opcode = opcode;
    h.bth.se = r(1);
    h.bth.mig = r(1);
    h.bth.pkey = uint16_t(r(16));
    h.bth.fecn = r(1);
    h.bth.becn = r(1);
    h.bth.dqpn = uint32_t(r(24));
    h.bth.ack_req = r(1);
    h.bth.psn = uint32_t(r(24));
    h.deth.qkey = uint32_t(r(32));
    h.deth.src_qp = uint32_t(r(24));
    h.feth.placement = uint8_t(r(4));
    h.feth.selectivity = uint8_t(r(2));
    h.reth.va = r(64);
    h.reth.rkey = uint32_t(r(32));
    h.reth.dma_len = uint32_t(r(32));
    h.atomic.va = r(64);
    h.atomic.rkey = uint32_t(r(32));
    h.atomic.swap_add = r(64);
    h.atomic.compare = r(64);
    h.aeth.syndrome = uint8_t(r(8));
    h.aeth.msn = uint32_t(r(24));
    h.atomic_ack.orig = r(64);
    h.imm = uint32_t(r(32));
    h.ieth_rkey = uint32_t(r(32));
    data.assign(payload, 0xA5);
    p.payload = data.data();
    p.payload_len = payload;
    return p;
}

std::string load_error(const OwnRtl& own) { return testkit::load_error(own_tx_build_stage(), own, kWork); }

}  // namespace

TEST_CASE("tx_build RTL: the reference builds encode_frame's header, byte for byte, in its own cycles",
          "[rtl][tx_build]") {
    std::mt19937_64 rng(17);
    TxBuildRtl rtl;
    size_t checked = 0, two_beats = 0;
    for (unsigned op = 0; op < 256; ++op) {
        const roce::OpcodeInfo& info = roce::opcode_info(uint8_t(op));
        if (!info.valid()) continue;
        for (int variant = 0; variant < 4; ++variant) {
            const bool v6 = variant & 1, vlan = variant & 2;
            // Payloads the opcode allows: none, or every pad count (a
            // FIRST/MIDDLE packet carries whole words only).
            std::vector<size_t> sizes = {0};
            if (info.has(roce::kPayload))
                sizes = info.has(roce::kLast) ? std::vector<size_t>{0, 1, 2, 3, 4, 1021, 4096}
                                              : std::vector<size_t>{4, 1024};
            for (size_t payload : sizes) {
                std::vector<uint8_t> data, frame;
                roce::Packet p = random_packet(rng, uint8_t(op), v6, vlan, payload, data);
                REQUIRE(roce::encode_frame(p, frame));
                const std::vector<uint8_t> want(frame.begin(), frame.begin() + long(p.payload_off));
                TxHeaderDesc d;
                REQUIRE(tx_header_desc(p, d));
                const TxBuildResult r = rtl.build(d);
                INFO(info.name << (v6 ? " IPv6" : " IPv4") << (vlan ? " VLAN" : "") << ", payload " << payload);
                CHECK(r.header == want);
                // Read back from the frame, the descriptor is the same one.
                TxHeaderDesc back;
                size_t hdr_len = 0;
                REQUIRE(tx_header_desc_of_frame(frame.data(), frame.size(), back, &hdr_len));
                CHECK(hdr_len == want.size());
                CHECK(rtl.build(back).header == want);
                // Taken at once, the first beat one edge later, then one per edge.
                const uint64_t beats = (want.size() + TxBuildRtl::kBeatBytes - 1) / TxBuildRtl::kBeatBytes;
                CHECK(r.desc_cycles == 1);
                CHECK(r.latency == TxBuildRtl::kLatency);
                CHECK(r.beats == beats);
                CHECK(r.out_cycles == beats);
                two_beats += beats == 2;
                ++checked;
            }
        }
    }
    CHECK(checked > 400);
    CHECK(two_beats > 50);  // IPv6 headers with the longer transport headers span two beats
}

TEST_CASE("tx_build RTL: with m_axis_tready_i low on its first beat the reference holds it, and the header and "
          "the following transactions are unchanged",
          "[rtl][tx_build][backpressure]") {
    // Every opcode, IPv4 and IPv6, with and without a VLAN tag, every
    // third header held 1..20 edges as the stage after TX build would hold it:
    // the hold function is asked once, on the first beat's edge (2: the
    // descriptor's, then latency 1), the beat stays on the port unchanged
    // on every held edge, and the header, latency and beats are those of
    // an unheld build; the next transaction is as if nothing happened.
    std::mt19937_64 rng(23);
    TxBuildRtl rtl;
    size_t checked = 0;
    uint64_t held = 0;
    for (unsigned op = 0; op < 256; ++op) {
        const roce::OpcodeInfo& info = roce::opcode_info(uint8_t(op));
        if (!info.valid()) continue;
        for (int variant = 0; variant < 4; ++variant) {
            std::vector<uint8_t> data, frame;
            roce::Packet p =
                random_packet(rng, uint8_t(op), variant & 1, variant & 2, info.has(roce::kPayload) ? 8 : 0, data);
            REQUIRE(roce::encode_frame(p, frame));
            const std::vector<uint8_t> want(frame.begin(), frame.begin() + long(p.payload_off));
            TxHeaderDesc d;
            REQUIRE(tx_header_desc(p, d));
            const uint64_t edges = checked % 3 == 0 ? 1 + rng() % 20 : 0;
            std::vector<uint64_t> asked;
            const uint64_t before = rtl.cycles();
            const TxBuildResult r = rtl.build(d, [&](uint64_t first_edge) {
                asked.push_back(first_edge);
                return edges;
            });
            INFO(info.name << ", held " << edges);
            REQUIRE(asked.size() == 1);
            CHECK(asked[0] == 1 + TxBuildRtl::kLatency);
            CHECK(r.header == want);
            CHECK(r.held == edges);
            CHECK(r.held_valid == edges);
            CHECK(r.desc_cycles == 1);
            CHECK(r.latency == TxBuildRtl::kLatency);
            CHECK(r.out_cycles == r.beats);
            CHECK(rtl.cycles() - before == r.desc_cycles + r.latency + edges + r.out_cycles - 1);
            held += edges;
            ++checked;
        }
    }
    CHECK(checked > 100);
    CHECK(held > 100);
}

TEST_CASE("tx_build RTL: a packet the descriptor cannot carry is refused, not built wrong", "[rtl][tx_build]") {
    std::mt19937_64 rng(3);
    std::vector<uint8_t> data;
    const roce::Packet good = random_packet(rng, roce::op::RC_SEND_ONLY, false, false, 8, data);
    TxHeaderDesc d;
    CHECK(tx_header_desc(good, d));
    for (int k = 0; k < 5; ++k) {
        roce::Packet p = good;
        if (k == 0) p.ip4.ihl = 6;  // IPv4 options
        if (k == 1) p.udp.checksum = 0x1234;
        if (k == 2) p.hdr.bth.resv7 = 1;
        if (k == 3) p.hdr.bth.opcode = 0x1f;  // not in the table
        if (k == 4) p.hdr.cnp_resv[3] = 1;
        INFO("case " << k);
        CHECK_FALSE(tx_header_desc(p, d));
    }
    const std::vector<uint8_t> junk(80, 0x11);
    CHECK_FALSE(tx_header_desc_of_frame(junk.data(), junk.size(), d, nullptr));
}

TEST_CASE("own tx_build: the template, the worked examples and the reference have exactly the stage's ports",
          "[rtl][own_rtl][tx_build]") {
    CHECK(check_own_rtl_ports(own_tx_build_stage(), {{kDir + "/template/my_tx_build.sv"}, "my_tx_build"}).empty());
    CHECK(check_own_rtl_ports(own_tx_build_stage(),
                              {{kDir + "/examples/roce_tx_build_buggy.sv"}, "roce_tx_build_buggy"})
              .empty());
    CHECK(check_own_rtl_ports(own_tx_build_stage(),
                              {{kDir + "/examples/roce_tx_build_slow.sv"}, "roce_tx_build_slow"})
              .empty());
    CHECK(check_own_rtl_ports(own_tx_build_stage(), {{kDir + "/roce_tx_build.sv"}, "roce_tx_build"}).empty());
}

TEST_CASE("own tx_build: every port difference in one error, before anything is built", "[rtl][own_rtl][tx_build]") {
    // The template with s_psn_i gone, s_dqpn_i 16 bits wide, m_axis_tkeep_o
    // DataWidth/16 wide, s_ready_o an input and a port the stage lacks.
    std::string t = read(kDir + "/template/my_tx_build.sv");
    t = replaced(t, "  input  logic [23:0]            s_psn_i,\n", "");
    t = replaced(t, "s_ack_req_i, s_psn_i,", "s_ack_req_i,");
    t = replaced(t, "input  logic [23:0]            s_dqpn_i", "input  logic [15:0]            s_dqpn_i");
    t = replaced(t, "output logic [DataWidth/8-1:0] m_axis_tkeep_o", "output logic [DataWidth/16-1:0] m_axis_tkeep_o");
    t = replaced(t, "for (int i = 0; i < BeatBytes; i++) m_axis_tkeep_o", "for (int i = 0; i < BeatBytes/2; i++) m_axis_tkeep_o");
    t = replaced(t, "output logic                   s_ready_o,", "input  logic                   s_ready_o,");
    t = replaced(t, "  assign s_ready_o = !busy_q || m_axis_tready_i;", "");
    t = replaced(t, "  input  logic                   rst_ni,\n",
                 "  input  logic                   rst_ni,\n  output logic                   debug_o,\n");
    t = replaced(t, "  logic unused;\n", "  assign debug_o = busy_q;\n  logic unused;\n");
    const OwnRtl bad{{write("bad_ports.sv", t)}, "my_tx_build"};
    const auto d = check_own_rtl_ports(own_tx_build_stage(), bad);
    CHECK(d == std::vector<std::string>{
                   "port s_ready_o is in, expected out",
                   "port s_dqpn_i is 16 bits, expected 24",
                   "missing port s_psn_i (in, 24 = 24 bits)",
                   "port m_axis_tkeep_o is 32 bits, expected 64 (DataWidth/8)",
                   "extra port debug_o (out, 1 bits): the stage does not drive or read it",
               });
    // Building it stops there, all of them in one error, nothing in the cache.
    const uint64_t runs = verilator_runs();
    const std::string e = load_error(bad);
    CHECK(verilator_runs() == runs + 1);
    CHECK(e.rfind("tx_build: my_tx_build does not have the tx_build's ports (DataWidth 512; docs/model.md, Your own "
                  "RTL), 5 differences:\n  port s_ready_o is in, expected out",
                  0) == 0);
    CHECK(e.find("\n  missing port s_psn_i") != std::string::npos);
    for (const auto& entry : fs::directory_iterator(kWork + "/cache/simnic/rtl"))
        CHECK(entry.path().filename().string().rfind(".build-", 0) != 0);
    // Missing files (all at once, before Verilator) and a missing top.
    const uint64_t before = verilator_runs();
    CHECK(load_error({{kWork + "/nope.sv"}, "my_tx_build"}) ==
          "tx_build: one's own RTL:\n  tx_build.rtl_sources: no such file: " + kWork + "/nope.sv");
    CHECK(verilator_runs() == before);
    CHECK(load_error({{kDir + "/template/my_tx_build.sv"}, "their_tx_build"})
              .rfind("tx_build.rtl_top = \"their_tx_build\": no module of that name in tx_build.rtl_sources", 0) == 0);
}

TEST_CASE("own tx_build: docs/model.md's port table is the interface's", "[rtl][own_rtl][tx_build]") {
    const std::string table = ports_markdown(tx_build_ports());
    const std::string doc = read(std::string(SIMNIC_SOURCE_DIR) + "/docs/model.md");
    INFO("docs/model.md, Your own RTL, should hold this table:\n" << table);
    CHECK(doc.find(table) != std::string::npos);
}
