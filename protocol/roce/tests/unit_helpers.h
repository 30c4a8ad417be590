// Helpers shared by the packet-core unit tests: turning a reference packet
// into simnic's Packet (for encoding) and checking a decoded Packet against
// the fields a reference packet was built from.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>

#include "ref_frame.h"
#include "simnic/roce/packet.h"

namespace simnic::tb::unit {

namespace roce = simnic::roce;
using ref::RefFrame;
using ref::RefPacket;

// The Packet an engine would hand to encode_frame(): every header field set,
// lengths, checksums, pad and ICRC left zero for the encoder to fill.
inline roce::Packet to_packet(const RefPacket& s) {
    roce::Packet p;
    std::copy(s.dmac.begin(), s.dmac.end(), p.eth.dst.begin());
    std::copy(s.smac.begin(), s.smac.end(), p.eth.src.begin());
    p.eth.has_vlan = s.vlan;
    p.eth.vlan_tci = s.vlan_tci;
    p.eth.ethertype = s.ipv6 ? roce::kEtherTypeIpv6 : roce::kEtherTypeIpv4;
    p.ip_version = s.ipv6 ? roce::IpVersion::V6 : roce::IpVersion::V4;
    p.ip4.ihl = static_cast<uint8_t>(5 + s.ip4_options.size() / 4);
    p.ip4.tos = s.tos;
    p.ip4.total_len = 0;
    p.ip4.id = s.ip_id;
    p.ip4.frag = s.frag;
    p.ip4.ttl = s.ttl;
    p.ip4.protocol = s.ip_proto;
    p.ip4.checksum = 0;
    p.ip4.src = s.src4;
    p.ip4.dst = s.dst4;
    std::copy(s.ip4_options.begin(), s.ip4_options.end(), p.ip4.options.begin());
    p.ip6.traffic_class = s.tclass;
    p.ip6.flow_label = s.flow;
    p.ip6.payload_len = 0;
    p.ip6.next_header = s.ip_proto;
    p.ip6.hop_limit = s.hop;
    p.ip6.src = s.src6;
    p.ip6.dst = s.dst6;
    p.udp.sport = s.sport;
    p.udp.dport = s.dport;
    p.udp.length = 0;
    p.udp.checksum = s.udp_csum;
    roce::Bth& b = p.hdr.bth;
    b.opcode = s.opcode;
    b.se = s.se;
    b.mig = s.mig;
    b.pad = 0;
    b.tver = s.tver;
    b.pkey = s.pkey;
    b.fecn = s.fecn;
    b.becn = s.becn;
    b.resv6 = s.resv6;
    b.dqpn = s.dqpn;
    b.ack_req = s.ack_req;
    b.resv7 = s.resv7;
    b.psn = s.psn;
    p.hdr.deth = {s.qkey, s.resv8, s.src_qp};
    p.hdr.feth = {static_cast<uint8_t>(s.feth & 0xf), static_cast<uint8_t>((s.feth >> 4) & 3), s.feth >> 6};
    p.hdr.reth = {s.reth_va, s.reth_rkey, s.reth_len};
    p.hdr.atomic = {s.atomic_va, s.atomic_rkey, s.swap_add, s.compare};
    p.hdr.aeth = {s.syndrome, s.msn};
    p.hdr.atomic_ack = {s.orig};
    p.hdr.imm = s.imm;
    p.hdr.ieth_rkey = s.ieth;
    p.payload = s.payload.empty() ? nullptr : s.payload.data();
    p.payload_len = s.payload.size();
    return p;
}

// Check every field of a decoded Packet against the reference packet and
// the frame it was built into. `l2` is the size of the Ethernet header (0
// when the frame was decoded from the IP header on).
inline void check_fields(const roce::Packet& p, const RefPacket& s, const RefFrame& f,
                         const uint8_t* frame_start, bool from_ip = false) {
    size_t shift = from_ip ? f.l3 : 0;
    if (!from_ip) {
        CHECK(std::equal(s.dmac.begin(), s.dmac.end(), p.eth.dst.begin()));
        CHECK(std::equal(s.smac.begin(), s.smac.end(), p.eth.src.begin()));
        CHECK(p.eth.has_vlan == s.vlan);
        if (s.vlan) CHECK(p.eth.vlan_tci == s.vlan_tci);
        CHECK(p.eth.ethertype == (s.ipv6 ? 0x86dd : 0x0800));
    }
    CHECK(p.ip_version == (s.ipv6 ? roce::IpVersion::V6 : roce::IpVersion::V4));
    if (!s.ipv6) {
        CHECK(unsigned(p.ip4.ihl) == 5 + s.ip4_options.size() / 4);
        CHECK(unsigned(p.ip4.tos) == s.tos);
        CHECK(p.ip4.total_len == f.ip_len);
        CHECK(p.ip4.id == s.ip_id);
        CHECK(p.ip4.frag == s.frag);
        CHECK(unsigned(p.ip4.ttl) == s.ttl);
        CHECK(unsigned(p.ip4.protocol) == 17);
        CHECK(p.ip4.checksum == ref::peek16(&f.bytes[f.l3 + 10]));
        CHECK(p.ip4.src == s.src4);
        CHECK(p.ip4.dst == s.dst4);
        CHECK(std::equal(s.ip4_options.begin(), s.ip4_options.end(), p.ip4.options.begin()));
    } else {
        CHECK(unsigned(p.ip6.traffic_class) == s.tclass);
        CHECK(p.ip6.flow_label == s.flow);
        CHECK(p.ip6.payload_len == f.ip_len);
        CHECK(unsigned(p.ip6.next_header) == 17);
        CHECK(unsigned(p.ip6.hop_limit) == s.hop);
        CHECK(p.ip6.src == s.src6);
        CHECK(p.ip6.dst == s.dst6);
    }
    CHECK(p.udp.sport == s.sport);
    CHECK(p.udp.dport == 4791);
    CHECK(p.udp.length == f.udp_len);
    CHECK(p.udp.checksum == s.udp_csum);

    const roce::Bth& b = p.hdr.bth;
    CHECK(unsigned(b.opcode) == s.opcode);
    CHECK(b.se == s.se);
    CHECK(b.mig == s.mig);
    CHECK(unsigned(b.pad) == s.pad);
    CHECK(unsigned(b.tver) == 0);
    CHECK(b.pkey == s.pkey);
    CHECK(b.fecn == s.fecn);
    CHECK(b.becn == s.becn);
    CHECK(unsigned(b.resv6) == s.resv6);
    CHECK(b.dqpn == s.dqpn);
    CHECK(b.ack_req == s.ack_req);
    CHECK(unsigned(b.resv7) == s.resv7);
    CHECK(b.psn == s.psn);

    const ref::RefOpcode* ro = ref::ref_opcode(s.opcode);
    REQUIRE(ro != nullptr);
    if (ro->exts & ref::kDeth) {
        CHECK(p.hdr.deth.qkey == s.qkey);
        CHECK(unsigned(p.hdr.deth.resv8) == s.resv8);
        CHECK(p.hdr.deth.src_qp == s.src_qp);
    }
    if (ro->exts & ref::kFeth) {
        CHECK(unsigned(p.hdr.feth.placement) == (s.feth & 0xf));
        CHECK(unsigned(p.hdr.feth.selectivity) == ((s.feth >> 4) & 3));
        CHECK(p.hdr.feth.resv == s.feth >> 6);
    }
    if (ro->exts & ref::kReth) {
        CHECK(p.hdr.reth.va == s.reth_va);
        CHECK(p.hdr.reth.rkey == s.reth_rkey);
        CHECK(p.hdr.reth.dma_len == s.reth_len);
    }
    if (ro->exts & ref::kAtomicEth) {
        CHECK(p.hdr.atomic.va == s.atomic_va);
        CHECK(p.hdr.atomic.rkey == s.atomic_rkey);
        CHECK(p.hdr.atomic.swap_add == s.swap_add);
        CHECK(p.hdr.atomic.compare == s.compare);
    }
    if (ro->exts & ref::kAeth) {
        CHECK(unsigned(p.hdr.aeth.syndrome) == s.syndrome);
        CHECK(p.hdr.aeth.msn == s.msn);
    }
    if (ro->exts & ref::kAtomicAck) CHECK(p.hdr.atomic_ack.orig == s.orig);
    if (ro->exts & ref::kImm) CHECK(p.hdr.imm == s.imm);
    if (ro->exts & ref::kIeth) CHECK(p.hdr.ieth_rkey == s.ieth);

    CHECK(p.payload_len == s.payload.size());
    if (p.payload_len == s.payload.size() && !s.payload.empty()) {
        CHECK(p.payload == frame_start + (f.payload_off - shift));
        CHECK(std::memcmp(p.payload, s.payload.data(), s.payload.size()) == 0);
    }
    CHECK(p.icrc == f.wire_icrc);
    CHECK(p.l3_off == f.l3 - shift);
    CHECK(p.l4_off == f.l4 - shift);
    CHECK(p.bth_off == f.bth - shift);
    CHECK(p.payload_off == f.payload_off - shift);
    CHECK(p.frame_len == f.bytes.size() - shift);
}

}  // namespace simnic::tb::unit
