// The requester segmentation stage's RTL: the reference (roce_req_seg.sv)
// against transport::segment(), the C++ the requester builds its packets
// from, on every operation each QP type allows, every PMTU, lengths from 0
// to several PMTUs, resumes mid-message, partial grants and the AckReq
// count crossing its limit, with its cycles; and, before anything is built
// (Verilator's XML pass only), the port checker against the stage's
// interface (req_seg_interface.cc), the template and the worked example
// passing it, clear errors for a wrong design, and docs/model.md's table.
// And splice_seg_packet (req_seg_frame.h), how the cycle model's requester
// makes a frame the datapath built carry the RTL's descriptor.
// The run-time build and the designs in the requester are tb_requester.cpp's
// and the bench's (rtl_model/model/pipeline/tests, cli/bench/tests).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>

#include "own_req_seg.h"
#include "own_rtl.h"
#include "own_rtl_testkit.h"
#include "req_seg_frame.h"
#include "req_seg_interface.h"
#include "req_seg_rtl.h"
#include "req_seg_testkit.h"
#include "simnic/roce/icrc.h"
#include "simnic/roce/opcode.h"
#include "simnic/roce/packet.h"

using namespace simnic;
using namespace simnic::rtl;
using transport::SegPacket;
using transport::SegWqe;
using testkit::request_frame;
namespace fs = std::filesystem;

namespace {

const std::string kDir = SIMNIC_REQ_SEG_SRC_DIR;
const std::string kWork = SIMNIC_OWN_REQ_SEG_TEST_DIR;

using testkit::read;
using testkit::replaced;

std::string write(const std::string& name, const std::string& text) { return testkit::write_in(kWork, name, text); }

std::string show(const SegPacket& p) {
    std::ostringstream s;
    s << std::hex << "op " << unsigned(p.opcode) << " psn " << p.psn << " off " << p.payload_off << " len "
      << p.payload_len << " reth " << p.reth << " va " << p.reth_va << " rkey " << p.reth_rkey << " dma "
      << p.reth_dma_len << " ack " << p.ack_req << " se " << p.se;
    return s.str();
}

std::string show(const SegWqe& w) {
    std::ostringstream s;
    s << "qp type " << unsigned(w.qp_type) << " wr " << unsigned(w.opcode) << " len " << w.length << " pmtu "
      << roce::ib_mtu_bytes(w.pmtu) << " psn " << w.first_psn << " start " << w.start_pkt << " count " << w.count
      << " noack " << w.noack << " solicited " << w.solicited;
    return s.str();
}

// The operations a QP type allows that make packets (requester.cc's table).
std::vector<hw::WrOpcode> ops_of(hw::QpType t) {
    using O = hw::WrOpcode;
    if (t == hw::QpType::Ud) return {O::Send, O::SendWithImm};
    if (t == hw::QpType::Uc) return {O::Send, O::SendWithImm, O::RdmaWrite, O::RdmaWriteWithImm};
    return {O::Send,    O::SendWithImm,      O::SendWithInv,       O::RdmaWrite, O::RdmaWriteWithImm,
            O::RdmaRead, O::AtomicCmpAndSwp, O::AtomicFetchAndAdd, O::Flush,     O::AtomicWrite};
}

// The lengths each operation takes at PMTU `mtu` (UD: one packet).
std::vector<uint32_t> lengths_of(hw::QpType t, hw::WrOpcode o, uint32_t mtu) {
    if (hw::is_atomic(o) || o == hw::WrOpcode::AtomicWrite) return {8};
    if (o == hw::WrOpcode::Flush) return {0, 1, 1u << 20};
    if (t == hw::QpType::Ud) return {0, 1, 2, mtu - 1, mtu};
    return {0, 1, 3, mtu - 1, mtu, mtu + 1, 2 * mtu, 3 * mtu + 7, 70 * mtu + 1, 1u << 31};
}

}  // namespace

TEST_CASE("req_seg RTL: the reference makes transport::segment()'s packets, one per edge after the descriptor's",
          "[rtl][req_seg]") {
    std::mt19937_64 rng(17);
    ReqSegRtl rtl;
    size_t wqes = 0, packets = 0, mid_acks = 0;
    for (hw::QpType t : {hw::QpType::Rc, hw::QpType::Uc, hw::QpType::Ud})
        for (hw::WrOpcode o : ops_of(t))
            for (int m = 1; m <= 5; ++m) {
                const auto pmtu = roce::IbMtu(m);
                const uint32_t mtu = roce::ib_mtu_bytes(pmtu);
                for (uint32_t len : lengths_of(t, o, mtu)) {
                    SegWqe w;
                    w.qp_type = t;
                    w.opcode = o;
                    w.length = len;
                    w.pmtu = pmtu;
                    w.first_psn = uint32_t(rng()) & 0xffffff;  // crossing 2^24 now and then
                    if (rng() % 4 == 0) w.first_psn = 0xffffff - uint32_t(rng() % 4);
                    w.remote_addr = rng();
                    w.rkey = uint32_t(rng());
                    w.solicited = rng() & 1;
                    w.noack = uint32_t(rng() % 66);
                    const uint32_t n = transport::seg_npkts(o, len, mtu);
                    const bool read = o == hw::WrOpcode::RdmaRead;
                    // The whole message; resumed in its middle; a partial
                    // grant (the window closed after a few packets).
                    for (int variant = 0; variant < 3; ++variant) {
                        w.start_pkt = variant == 1 ? n / 2 : 0;
                        w.count = read ? 1 : n - w.start_pkt;
                        if (variant == 2 && !read) w.count = std::min<uint32_t>(w.count, 1 + uint32_t(rng() % 3));
                        if (w.count > 200) w.count = 200;  // enough for the AckReq count; keeps the test quick
                        INFO(show(w));
                        const std::vector<SegPacket> want = transport::segment(w);
                        const ReqSegResult r = rtl.run(w);
                        REQUIRE(r.packets.size() == want.size());
                        for (size_t i = 0; i < want.size(); ++i) {
                            INFO("packet " << i << ": RTL " << show(r.packets[i]) << "; C++ " << show(want[i]));
                            CHECK(r.packets[i] == want[i]);
                            mid_acks += want[i].ack_req && !(roce::opcode_info(want[i].opcode).mask & roce::kLast);
                        }
                        // Taken at once, the first packet one edge later,
                        // then one per edge.
                        CHECK(r.desc_cycles == 1);
                        REQUIRE(r.gaps.size() == want.size());
                        CHECK(r.gaps[0] == 1 + ReqSegRtl::kLatency);
                        for (size_t i = 1; i < r.gaps.size(); ++i) CHECK(r.gaps[i] == 1);
                        ++wqes;
                        packets += want.size();
                    }
                }
            }
    CHECK(wqes > 500);
    CHECK(packets > 5000);
    CHECK(mid_acks > 10);  // AckReq inside long messages, from the QP's count
}

TEST_CASE("req_seg RTL: with m_ready_i low the block holds its packet descriptor, each low edge costs one, nothing "
          "lost or reordered",
          "[rtl][req_seg][backpressure]") {
    // A 6-packet WRITE. With m_ready_i high: the descriptor taken on edge
    // 0, packet k on edge k + 1. Low on edges 1, 3, 4, 5 and 9 (the
    // consumer full): the reference has a packet on m_valid_o on each of
    // them and must hold it, so packet k comes on edge k + 1 plus the low
    // edges before it: 2, 6, 7, 8, 10, 11.
    SegWqe w;
    w.opcode = hw::WrOpcode::RdmaWrite;
    w.length = 6 * 256 - 5;
    w.pmtu = roce::IbMtu::Mtu256;
    w.first_psn = 0xfffffd;
    w.remote_addr = 0x1000;
    w.rkey = 0x42;
    w.count = 6;
    const std::vector<SegPacket> want = transport::segment(w);
    REQUIRE(want.size() == 6);
    ReqSegRtl rtl;
    const ReqSegResult free_run = rtl.run(w);
    const uint64_t low0 = rtl.ready_low_edges(), held0 = rtl.held_edges();
    const std::vector<uint64_t> low = {1, 3, 4, 5, 9};
    auto ready = [&](uint64_t e) { return std::find(low.begin(), low.end(), e) == low.end(); };
    const ReqSegResult r = rtl.run(w, ready);
    CHECK(r.ready_low == 5);
    CHECK(r.held == 5);  // the block had a packet on its outputs on every low edge
    CHECK(rtl.ready_low_edges() - low0 == 5);
    CHECK(rtl.held_edges() - held0 == 5);
    REQUIRE(r.packets.size() == 6);
    REQUIRE(free_run.packets.size() == 6);
    for (size_t i = 0; i < 6; ++i) {
        INFO("packet " << i);
        CHECK(r.packets[i] == want[i]);  // identical and in order
        CHECK(free_run.packets[i] == want[i]);
    }
    CHECK(r.desc_cycles == 1);
    CHECK(free_run.gaps == std::vector<uint64_t>{2, 1, 1, 1, 1, 1});
    CHECK(r.gaps == std::vector<uint64_t>{3, 4, 1, 1, 2, 1});
    // Each packet later than with m_ready_i high by exactly the low edges
    // before it.
    uint64_t at_free = 0, at = 0;
    const uint64_t low_before[] = {1, 4, 4, 4, 5, 5};
    for (size_t i = 0; i < 6; ++i) {
        at_free += free_run.gaps[i];
        at += r.gaps[i];
        INFO("packet " << i);
        CHECK(at == at_free + low_before[i]);
    }

    // Any pattern: the same packets, later by the low edges the block held
    // one on (m_ready_i low while it is idle, before the descriptor, costs
    // nothing: edge 0 takes the descriptor either way).
    std::mt19937_64 rng(5);
    for (int round = 0; round < 200; ++round) {
        SegWqe v = w;
        v.length = 1 + uint32_t(rng() % (20 * 256));
        v.count = transport::seg_npkts(v.opcode, v.length, 256);
        const ReqSegResult base = rtl.run(v);
        const uint64_t pattern = rng();
        const ReqSegResult got = rtl.run(v, [&](uint64_t e) { return e == 0 || ((pattern >> (e % 64)) & 1); });
        INFO("round " << round << ": " << show(v));
        REQUIRE(got.packets == base.packets);
        CHECK(got.held == got.ready_low);
        uint64_t sum = 0, sum_base = 0;
        for (uint64_t g : got.gaps) sum += g;
        for (uint64_t g : base.gaps) sum_base += g;
        CHECK(sum == sum_base + got.ready_low);
    }
}

TEST_CASE("own req_seg: the template, the worked example and the reference have exactly the stage's ports",
          "[rtl][own_rtl][req_seg]") {
    CHECK(check_own_rtl_ports(own_req_seg_stage(), {{kDir + "/template/my_req_seg.sv"}, "my_req_seg"}).empty());
    CHECK(check_own_rtl_ports(own_req_seg_stage(), {{kDir + "/examples/roce_req_seg_buggy.sv"}, "roce_req_seg_buggy"})
              .empty());
    CHECK(check_own_rtl_ports(own_req_seg_stage(), {{kDir + "/roce_req_seg.sv"}, "roce_req_seg"}).empty());
}

TEST_CASE("own req_seg: every port difference in one error, before anything is built", "[rtl][own_rtl][req_seg]") {
    // The template with s_noack_i gone, m_psn_o 16 bits wide, s_ready_o an
    // input and a port the stage lacks.
    std::string t = read(kDir + "/template/my_req_seg.sv");
    t = replaced(t, "  input  logic [6:0]  s_noack_i,\n", "");
    t = replaced(t, "s_solicited_i,\n                    s_noack_i}", "s_solicited_i}");
    t = replaced(t, "output logic [23:0] m_psn_o", "output logic [15:0] m_psn_o");
    t = replaced(t, "assign m_psn_o   = psn_q;", "assign m_psn_o   = psn_q[15:0];");
    t = replaced(t, "output logic        s_ready_o,", "input  logic        s_ready_o,");
    t = replaced(t, "  assign s_ready_o = !busy_q || (m_ready_i && left_q == 24'd1);\n", "");
    t = replaced(t, "  input  logic        rst_ni,\n", "  input  logic        rst_ni,\n  output logic        debug_o,\n");
    t = replaced(t, "  logic unused;\n", "  assign debug_o = busy_q;\n  logic unused;\n");
    const OwnRtl bad{{write("bad_ports.sv", t)}, "my_req_seg"};
    const auto d = check_own_rtl_ports(own_req_seg_stage(), bad);
    CHECK(d == std::vector<std::string>{
                   "port s_ready_o is in, expected out",
                   "missing port s_noack_i (in, 7 = 7 bits)",
                   "port m_psn_o is 16 bits, expected 24",
                   "extra port debug_o (out, 1 bits): the stage does not drive or read it",
               });
    // Building it stops there, all of them in one error.
    const std::string e = testkit::load_error(own_req_seg_stage(), bad, kWork);
    CHECK(e.rfind("req_seg: my_req_seg does not have the req_seg's ports (docs/model.md, Your own RTL), 4 "
                  "differences:\n  port s_ready_o is in, expected out",
                  0) == 0);
}

TEST_CASE("own req_seg: docs/model.md's port table is the interface's", "[rtl][own_rtl][req_seg]") {
    const std::string table = ports_markdown(req_seg_ports());
    const std::string doc = read(std::string(SIMNIC_SOURCE_DIR) + "/docs/model.md");
    INFO("docs/model.md, Your own RTL, should hold this table:\n" << table);
    CHECK(doc.find(table) != std::string::npos);
}

namespace {

// `f` decoded, its ICRC checked by the packet core (the carried one equal
// to compute_icrc over the frame).
roce::Packet decoded(const std::vector<uint8_t>& f) {
    roce::Packet p;
    const roce::DecodeResult r = roce::decode_frame(f.data(), f.size(), p);
    INFO(roce::to_string(r.error));
    REQUIRE(r.ok());
    CHECK(p.icrc == roce::compute_icrc(f.data(), f.size(), p.l3_off, p.l4_off, p.ip_version));
    return p;
}

}  // namespace

TEST_CASE("req_seg frame: a frame re-encoded with its own descriptor is byte for byte the datapath's",
          "[rtl][req_seg][splice]") {
    // Every packet of a WRITE (RETH, payload, the padded LAST with AckReq),
    // a READ request (no payload), a SEND of nothing (a frame short of the
    // Ethernet minimum, padded or not), a solicited SEND, on IPv4, IPv6 and
    // VLAN.
    std::vector<SegPacket> packets;
    SegWqe w;
    w.opcode = hw::WrOpcode::RdmaWrite;
    w.length = 2 * 1024 + 101;
    w.pmtu = roce::IbMtu::Mtu1024;
    w.first_psn = 0xfffffe;
    w.remote_addr = 0x7f0000001000;
    w.rkey = 0x1234;
    w.count = 3;
    for (const SegPacket& s : transport::segment(w)) packets.push_back(s);
    w.opcode = hw::WrOpcode::RdmaRead;
    w.count = 1;
    packets.push_back(transport::segment(w)[0]);
    w.opcode = hw::WrOpcode::Send;
    w.length = 0;
    w.solicited = true;
    packets.push_back(transport::segment(w)[0]);
    w.length = 77;
    packets.push_back(transport::segment(w)[0]);
    for (const bool v6 : {false, true})
        for (const bool vlan : {false, true})
            for (const bool pad : {false, true})
                for (const SegPacket& s : packets) {
                    INFO("opcode " << int(s.opcode) << " v6 " << v6 << " vlan " << vlan << " pad " << pad);
                    const std::vector<uint8_t> built = request_frame(s, v6, vlan, pad);
                    std::vector<uint8_t> f = built;
                    CHECK(splice_seg_packet(f, s, s) == SegSplice::Spliced);
                    CHECK(f == built);
                }
    CHECK(request_frame(packets[4]).size() == roce::kEthMinFrameBytes);  // the short one, padded
    CHECK(request_frame(packets[4], false, false, false).size() < roce::kEthMinFrameBytes);
}

TEST_CASE("req_seg frame: the RTL's BTH and RETH fields go on the frame, the ICRC recomputed over them",
          "[rtl][req_seg][splice]") {
    SegWqe w;
    w.opcode = hw::WrOpcode::RdmaWrite;
    w.length = 2 * 1024;
    w.pmtu = roce::IbMtu::Mtu1024;
    w.first_psn = 100;
    w.remote_addr = 0x7f0000001000;
    w.rkey = 0x1234;
    w.count = 2;
    const std::vector<SegPacket> want = transport::segment(w);
    for (const bool v6 : {false, true}) {
        INFO("v6 " << v6);
        // The worked example's bug: the RETH asks for a byte too many, the
        // last packet a MIDDLE without AckReq. Then every field at once.
        SegPacket first = want[0], last = want[1];
        first.reth_dma_len = 2 * 1024 + 1;
        last.opcode = roce::op::RC_RDMA_WRITE_MIDDLE;
        last.ack_req = false;
        SegPacket other = want[0];
        other.opcode = roce::op::UC_RDMA_WRITE_FIRST;  // the same headers
        other.psn = 0xabcdef;
        other.ack_req = other.se = true;
        other.reth_va = 0x1122334455667788;
        other.reth_rkey = 0x99aabbcc;
        other.reth_dma_len = 7;
        for (const auto& [k, got] : {std::pair<size_t, SegPacket>{0, first}, {1, last}, {0, other}}) {
            const std::vector<uint8_t> built = request_frame(want[k], v6);
            std::vector<uint8_t> f = built;
            REQUIRE(splice_seg_packet(f, want[k], got) == SegSplice::Spliced);
            REQUIRE(f.size() == built.size());
            const roce::Packet p = decoded(f), b = decoded(built);
            CHECK(p.hdr.bth.opcode == got.opcode);
            CHECK(p.hdr.bth.psn == got.psn);
            CHECK(p.hdr.bth.ack_req == got.ack_req);
            CHECK(p.hdr.bth.se == got.se);
            CHECK(p.hdr.reth.va == got.reth_va);
            CHECK(p.hdr.reth.rkey == got.reth_rkey);
            CHECK(p.hdr.reth.dma_len == got.reth_dma_len);
            // Nothing else changed: the headers before the BTH (lengths,
            // checksums), the BTH's other fields, the payload and pad.
            CHECK(std::equal(f.begin(), f.begin() + long(p.bth_off), built.begin()));
            CHECK(p.hdr.bth.dqpn == b.hdr.bth.dqpn);
            CHECK(p.hdr.bth.pkey == b.hdr.bth.pkey);
            CHECK(p.hdr.bth.pad == b.hdr.bth.pad);
            CHECK(std::equal(f.begin() + long(p.payload_off), f.end() - 4, built.begin() + long(p.payload_off)));
            CHECK(p.icrc != b.icrc);
        }
    }
}

TEST_CASE("req_seg frame: a descriptor the frame cannot carry leaves it as built, saying why",
          "[rtl][req_seg][splice]") {
    SegWqe w;
    w.opcode = hw::WrOpcode::RdmaWrite;
    w.length = 2 * 1024 + 101;
    w.pmtu = roce::IbMtu::Mtu1024;
    w.remote_addr = 0x1000;
    w.rkey = 9;
    w.count = 3;
    const std::vector<SegPacket> want = transport::segment(w);
    // A MIDDLE made a FIRST: a RETH where the frame has none.
    SegPacket reth = want[1];
    reth.opcode = roce::op::RC_RDMA_WRITE_FIRST;
    reth.reth = true;
    // m_reth_o on an opcode without one.
    SegPacket flag = want[1];
    flag.reth = true;
    // A READ request for a WRITE packet: no payload where it has one.
    SegPacket read = want[0];
    read.opcode = roce::op::RC_RDMA_READ_REQUEST;
    read.payload_len = 0;
    // Another payload: its length, or where it starts.
    SegPacket len = want[1], off = want[1];
    len.payload_len = 1000;
    off.payload_off = 0;
    // The padded LAST (101 bytes) as a MIDDLE: a MIDDLE carries whole words.
    SegPacket middle = want[2];
    middle.opcode = roce::op::RC_RDMA_WRITE_MIDDLE;
    const std::pair<size_t, SegPacket> cases[] = {{1, reth}, {1, flag}, {0, read}, {1, len}, {1, off}, {2, middle}};
    const SegSplice why[] = {SegSplice::Layout,  SegSplice::Layout,  SegSplice::Layout,
                             SegSplice::Payload, SegSplice::Payload, SegSplice::Encode};
    for (size_t i = 0; i < std::size(cases); ++i) {
        INFO("case " << i);
        const auto& [k, got] = cases[i];
        const std::vector<uint8_t> built = request_frame(want[k]);
        std::vector<uint8_t> f = built;
        CHECK(splice_seg_packet(f, want[k], got) == why[i]);
        CHECK(f == built);
    }
    // Not a frame the packet core decodes.
    std::vector<uint8_t> junk(100, 0x5a);
    CHECK(splice_seg_packet(junk, want[0], want[1]) == SegSplice::NotAFrame);
    CHECK(junk == std::vector<uint8_t>(100, 0x5a));
}
