// The ARP and IPv6 neighbour-discovery codec (neighbour.h) against frames
// written out by hand: their bytes as RFC 826 and RFC 4861 lay them out,
// the ICMPv6 checksums (0x73a0, 0x975e) those tshark reports as good; every
// refusal; the address helpers; and the IPv4 identification rule of
// ip_ident.h.
#include <catch2/catch.hpp>

#include <vector>

#include "simnic/roce/ip_ident.h"
#include "simnic/roce/neighbour.h"

using namespace simnic::roce;

namespace {

// ARP request: who has 10.0.0.2? tell 10.0.0.1 (52:54:00:12:34:56),
// broadcast, padded to 60 bytes.
const std::vector<uint8_t> kArpRequest = {
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x08, 0x06,  // Ethernet
    0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01,                                      // Ethernet/IPv4, request
    0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x0a, 0x00, 0x00, 0x01,                          // sender
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x02,                          // target
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};                              // padding

// Its reply: 10.0.0.2 is at 02:00:00:00:00:02, to the asker.
const std::vector<uint8_t> kArpReply = {
    0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x08, 0x06,
    0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x02,
    0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x0a, 0x00, 0x00, 0x02,
    0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x0a, 0x00, 0x00, 0x01,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};

// Neighbour solicitation for fd00::2 from fe80::5054:ff:fe12:3456 to the
// solicited-node group ff02::1:ff00:2, with a source link-layer option.
const std::vector<uint8_t> kNs = {
    0x33, 0x33, 0xff, 0x00, 0x00, 0x02, 0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x86, 0xdd,
    0x60, 0x00, 0x00, 0x00, 0x00, 0x20, 0x3a, 0xff,                                      // IPv6: 32 bytes, ICMPv6, hop 255
    0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0x00, 0xff, 0xfe, 0x12, 0x34, 0x56,        // source
    0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff, 0x00, 0x00, 0x02,                // destination
    0x87, 0x00, 0x73, 0xa0, 0x00, 0x00, 0x00, 0x00,                                      // type 135, checksum
    0xfd, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02,                             // target
    0x01, 0x01, 0x52, 0x54, 0x00, 0x12, 0x34, 0x56};                                     // source link-layer address

// The solicited advertisement: fd00::2 is at 02:00:00:00:00:02 (S and O set).
const std::vector<uint8_t> kNa = {
    0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x86, 0xdd,
    0x60, 0x00, 0x00, 0x00, 0x00, 0x20, 0x3a, 0xff,
    0xfd, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02,
    0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0x00, 0xff, 0xfe, 0x12, 0x34, 0x56,
    0x88, 0x00, 0x97, 0x5e, 0x60, 0x00, 0x00, 0x00,                                      // type 136, S|O
    0xfd, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02,
    0x02, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02};                                     // target link-layer address

const MacAddr kAsker{0x52, 0x54, 0x00, 0x12, 0x34, 0x56};
const MacAddr kOwner{0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
const Ipv6Addr kAskerLl{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0x00, 0xff, 0xfe, 0x12, 0x34, 0x56};
const Ipv6Addr kTarget{0xfd, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02};

}  // namespace

TEST_CASE("ARP request and reply: decode, and encode to the same bytes", "[neighbour][arp]") {
    ArpPacket a;
    REQUIRE(decode_arp(kArpRequest.data(), kArpRequest.size(), a) == NeighError::Ok);
    CHECK(a.eth_dst == kBroadcastMac);
    CHECK(a.eth_src == kAsker);
    CHECK(a.op == ArpOp::Request);
    CHECK(a.sha == kAsker);
    CHECK(a.spa == 0x0a000001u);
    CHECK(a.tha == MacAddr{});
    CHECK(a.tpa == 0x0a000002u);
    std::vector<uint8_t> out;
    encode_arp(a, out);
    CHECK(out == kArpRequest);

    REQUIRE(decode_arp(kArpReply.data(), kArpReply.size(), a) == NeighError::Ok);
    CHECK(a.op == ArpOp::Reply);
    CHECK(a.sha == kOwner);
    CHECK(a.spa == 0x0a000002u);
    CHECK(a.tha == kAsker);
    CHECK(a.tpa == 0x0a000001u);
    encode_arp(a, out);
    CHECK(out == kArpReply);
    // Without the Ethernet padding (as a capture at the sender has it).
    CHECK(decode_arp(kArpReply.data(), 42, a) == NeighError::Ok);
}

TEST_CASE("ARP refusals", "[neighbour][arp]") {
    ArpPacket a;
    CHECK(decode_arp(kArpRequest.data(), 10, a) == NeighError::Truncated);
    CHECK(decode_arp(kArpRequest.data(), 41, a) == NeighError::Truncated);
    std::vector<uint8_t> f = kArpRequest;
    f[13] = 0x00;  // ethertype 0x0800
    CHECK(decode_arp(f.data(), f.size(), a) == NeighError::NotArp);
    f = kArpRequest;
    f[15] = 6;  // hardware type IEEE 802
    CHECK(decode_arp(f.data(), f.size(), a) == NeighError::BadArpFormat);
    f = kArpRequest;
    f[19] = 16;  // protocol address length
    CHECK(decode_arp(f.data(), f.size(), a) == NeighError::BadArpFormat);
    f = kArpRequest;
    f[21] = 3;  // RARP request
    CHECK(decode_arp(f.data(), f.size(), a) == NeighError::BadArpOp);
}

TEST_CASE("Neighbour solicitation and advertisement: decode, encode, checksum", "[neighbour][nd]") {
    NdPacket n;
    REQUIRE(decode_nd(kNs.data(), kNs.size(), n) == NeighError::Ok);
    CHECK(n.type == NdType::Solicitation);
    CHECK(n.eth_dst == ipv6_multicast_mac(solicited_node(kTarget)));
    CHECK(n.eth_src == kAsker);
    CHECK(n.src == kAskerLl);
    CHECK(n.dst == solicited_node(kTarget));
    CHECK(n.hop_limit == 255);
    CHECK(n.target == kTarget);
    CHECK(n.has_lladdr);
    CHECK(n.lladdr == kAsker);
    std::vector<uint8_t> out;
    encode_nd(n, out);
    CHECK(out == kNs);

    REQUIRE(decode_nd(kNa.data(), kNa.size(), n) == NeighError::Ok);
    CHECK(n.type == NdType::Advertisement);
    CHECK(n.src == kTarget);
    CHECK(n.dst == kAskerLl);
    CHECK_FALSE(n.router);
    CHECK(n.solicited);
    CHECK(n.override_flag);
    CHECK(n.has_lladdr);
    CHECK(n.lladdr == kOwner);
    encode_nd(n, out);
    CHECK(out == kNa);

    // The checksum alone: over the message with its field zeroed.
    std::vector<uint8_t> msg(kNs.begin() + 54, kNs.end());
    msg[2] = msg[3] = 0;
    CHECK(icmpv6_checksum(kAskerLl, solicited_node(kTarget), msg.data(), msg.size()) == 0x73a0);

    // No link-layer option: a probe's unicast solicitation.
    NdPacket p;
    p.type = NdType::Solicitation;
    p.src = kAskerLl;
    p.dst = kTarget;
    p.target = kTarget;
    encode_nd(p, out);
    CHECK(out.size() == 14 + 40 + 24);
    REQUIRE(decode_nd(out.data(), out.size(), n) == NeighError::Ok);
    CHECK_FALSE(n.has_lladdr);
    // Options other than the link-layer ones are skipped (a nonce, type 14).
    std::vector<uint8_t> f = kNs;
    f[19] = 0x28;  // payload 40
    f.insert(f.end(), {14, 1, 1, 2, 3, 4, 5, 6});
    f[56] = f[57] = 0;
    std::vector<uint8_t> m2(f.begin() + 54, f.end());
    const uint16_t c = icmpv6_checksum(kAskerLl, solicited_node(kTarget), m2.data(), m2.size());
    f[56] = uint8_t(c >> 8);
    f[57] = uint8_t(c);
    REQUIRE(decode_nd(f.data(), f.size(), n) == NeighError::Ok);
    CHECK(n.lladdr == kAsker);
}

TEST_CASE("Neighbour discovery refusals, as ndisc_rcv checks", "[neighbour][nd]") {
    NdPacket n;
    CHECK(decode_nd(kNs.data(), 20, n) == NeighError::Truncated);
    CHECK(decode_nd(kArpRequest.data(), kArpRequest.size(), n) == NeighError::NotNd);
    std::vector<uint8_t> f = kNs;
    f[20] = 17;  // next header UDP
    CHECK(decode_nd(f.data(), f.size(), n) == NeighError::NotNd);
    f = kNs;
    f[54] = 128;  // echo request
    CHECK(decode_nd(f.data(), f.size(), n) == NeighError::NotNd);
    f = kNs;
    f[21] = 64;  // hop limit: it crossed a router
    CHECK(decode_nd(f.data(), f.size(), n) == NeighError::BadHopLimit);
    f = kNs;
    f[55] = 1;  // code
    CHECK(decode_nd(f.data(), f.size(), n) == NeighError::BadCode);
    f = kNs;
    f[70] ^= 0x01;  // a target byte: the checksum no longer holds
    CHECK(decode_nd(f.data(), f.size(), n) == NeighError::BadChecksum);
    f = kNs;
    f[19] = 0x40;  // payload length beyond the frame
    CHECK(decode_nd(f.data(), f.size(), n) == NeighError::BadIpv6Length);

    // Re-encoded variants (checksums right) that break other rules.
    NdPacket p;
    REQUIRE(decode_nd(kNs.data(), kNs.size(), p) == NeighError::Ok);
    std::vector<uint8_t> out;
    NdPacket bad = p;
    bad.target = solicited_node(kTarget);  // multicast target
    encode_nd(bad, out);
    CHECK(decode_nd(out.data(), out.size(), n) == NeighError::BadTarget);
    bad = p;
    bad.src = Ipv6Addr{};  // duplicate address detection with a link-layer option
    encode_nd(bad, out);
    CHECK(decode_nd(out.data(), out.size(), n) == NeighError::BadSource);
    bad.has_lladdr = false;  // ... without one it is fine
    encode_nd(bad, out);
    CHECK(decode_nd(out.data(), out.size(), n) == NeighError::Ok);
    // An option of length 0.
    encode_nd(p, out);
    out[out.size() - 7] = 0;
    out[56] = out[57] = 0;
    std::vector<uint8_t> m(out.begin() + 54, out.end());
    const uint16_t c = icmpv6_checksum(p.src, p.dst, m.data(), m.size());
    out[56] = uint8_t(c >> 8);
    out[57] = uint8_t(c);
    CHECK(decode_nd(out.data(), out.size(), n) == NeighError::BadOption);
}

TEST_CASE("IPv6 address helpers: EUI-64 link-local, solicited-node group, multicast MAC", "[neighbour]") {
    // RFC 4291 appendix A: the universal/local bit flipped, ff:fe inserted.
    CHECK(ipv6_link_local(kAsker) == kAskerLl);
    CHECK(ipv6_link_local(MacAddr{0x02, 0, 0, 0, 0, 0x01}) ==
          Ipv6Addr{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0, 0, 0xff, 0xfe, 0, 0, 0x01});
    CHECK(solicited_node(kAskerLl) == Ipv6Addr{0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff, 0x12, 0x34, 0x56});
    CHECK(ipv6_multicast_mac(solicited_node(kAskerLl)) == MacAddr{0x33, 0x33, 0xff, 0x12, 0x34, 0x56});
    CHECK(ipv6_multicast_mac(kIpv6AllNodes) == MacAddr{0x33, 0x33, 0, 0, 0, 0x01});
    // A RoCE group of global scope, ff0e::1:2:3: its low 32 bits, whatever
    // the scope and the upper 96 bits (ib_resolve_eth_dmac, ipv6_eth_mc_map).
    const Ipv6Addr group{0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0, 0x02, 0, 0x03};
    CHECK(ipv6_multicast_mac(group) == MacAddr{0x33, 0x33, 0, 0x02, 0, 0x03});
    Ipv6Addr other_scope = group;
    other_scope[1] = 0x05;
    other_scope[11] = 0x07;
    CHECK(ipv6_multicast_mac(other_scope) == ipv6_multicast_mac(group));
    CHECK(is_ipv6_multicast(group));
    CHECK(is_ipv6_link_local(kAskerLl));
    CHECK_FALSE(is_ipv6_link_local(kTarget));
    CHECK(is_ipv6_multicast(kIpv6AllNodes));
    CHECK(is_ipv6_unspecified(Ipv6Addr{}));
}

TEST_CASE("IPv4 identification as Linux 6.1 picks it for rxe", "[neighbour][ip_ident]") {
    constexpr uint64_t J = IpIdentGenerator::kJiffyNs;
    IpIdentGenerator g(7);
    const uint32_t a = 0x0a00000a, b = 0x0a00000b, c = 0x0a00000c;
    const uint64_t t0 = 1000 * J + 1;
    // Within one jiffy: one more per packet, per destination.
    const uint16_t ab0 = g.next(a, b, t0);
    const uint16_t ac0 = g.next(a, c, t0);
    for (uint16_t i = 1; i < 50; ++i) {
        CHECK(g.next(a, b, t0 + i) == uint16_t(ab0 + i));
        CHECK(g.next(a, c, t0 + i) == uint16_t(ac0 + i));
    }
    // After a pause of k jiffies the counter jumps by less than k first.
    uint16_t last = uint16_t(ab0 + 49);
    uint64_t t = t0;
    int jumped = 0;
    for (int round = 0; round < 200; ++round) {
        const uint64_t k = 1 + round % 9;
        t += k * J;
        const uint16_t id = g.next(a, b, t);
        const uint16_t step = uint16_t(id - last);
        CHECK(step >= 1);
        CHECK(step <= k);
        jumped += step > 1;
        last = id;
    }
    CHECK(jumped > 50);  // the perturbation is there
    // The same seed replays the same IDs.
    IpIdentGenerator g1(7), g2(7);
    for (int i = 0; i < 20; ++i) CHECK(g1.next(a, b, t0 + uint64_t(i) * J) == g2.next(a, b, t0 + uint64_t(i) * J));
}
