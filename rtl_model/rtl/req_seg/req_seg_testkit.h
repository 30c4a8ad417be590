// The request frame the datapath's requester builds of a segmentation
// descriptor, for the tests that splice the segmentation RTL's fields into
// frames: the stage's testbench (tb/test_req_seg.cpp) and the requester
// block's (rtl_model/model/pipeline/tests/tb_requester.cpp).
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "simnic/roce/packet.h"
#include "simnic/transport/segmentation.h"

namespace simnic::rtl::testkit {

// A request frame as the datapath's requester builds it from `s`
// (transport Requester::send_packet): the packet core's encoding, IPv4 with
// an identification, DF and ECT(0), or IPv6 with a flow label, optionally
// VLAN-tagged; payload bytes counting from `s.payload_off`. `pad`: padded
// to the Ethernet minimum as a MAC sends it (the engines' records are not).
inline std::vector<uint8_t> request_frame(const transport::SegPacket& s, bool v6 = false, bool vlan = false,
                                          bool pad = true) {
    roce::Packet p;
    p.eth.src = {2, 0, 0, 0, 0, 1};
    p.eth.dst = {2, 0, 0, 0, 0, 2};
    p.eth.has_vlan = vlan;
    p.eth.vlan_tci = 0x2005;
    p.ip_version = v6 ? roce::IpVersion::V6 : roce::IpVersion::V4;
    p.ip4.src = 0x0a000001;
    p.ip4.dst = 0x0a000002;
    p.ip4.id = 0x1234;
    p.ip4.frag = 0x4000;
    p.ip4.tos = 0x02;
    p.ip6.src[15] = 1;
    p.ip6.dst[15] = 2;
    p.ip6.flow_label = 0xabcde;
    p.udp.sport = 0xc123;
    p.hdr.bth.pkey = 0xffff;
    p.hdr.bth.dqpn = 0x11;
    p.hdr.bth.opcode = s.opcode;
    p.hdr.bth.psn = s.psn;
    p.hdr.bth.ack_req = s.ack_req;
    p.hdr.bth.se = s.se;
    p.hdr.reth = {s.reth_va, s.reth_rkey, s.reth_dma_len};
    std::vector<uint8_t> payload(s.payload_len);
    for (size_t i = 0; i < payload.size(); ++i) payload[i] = uint8_t(s.payload_off + i);
    p.payload = payload.data();
    p.payload_len = payload.size();
    std::vector<uint8_t> f;
    roce::EncodeOptions opt;
    opt.pad_to_eth_min = pad;
    REQUIRE(roce::encode_frame(p, f, opt));
    return f;
}

}  // namespace simnic::rtl::testkit
