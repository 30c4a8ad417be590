// ARP (RFC 826) and IPv6 neighbour discovery (RFC 4861: neighbour
// solicitation and advertisement) frames, as a NIC with its own addresses on
// an Ethernet segment sends and answers them: a device whose port is on a
// wire of whole frames resolves its peers' MACs and answers for its own
// addresses with these, where a netdev-bound device leaves both to the
// kernel.
//
// The codec is shaped like the RoCE one (packet.h): plain values, each
// layout written in exactly one reader and one writer, reads bounded by the
// buffer, and a typed error for the first thing a decoder refuses. The
// decoders check what Linux checks before it acts on such a frame (arp_rcv,
// ndisc_rcv): the hardware and protocol types of ARP, and for ND the hop
// limit of 255, code 0, the ICMPv6 checksum, a unicast target and
// well-formed options.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "simnic/roce/headers.h"

namespace simnic::roce {

inline constexpr uint16_t kEtherTypeArp = 0x0806;
inline constexpr uint8_t kIpProtoIcmpv6 = 58;
inline constexpr size_t kArpBytes = 28;      // Ethernet/IPv4 ARP, after the Ethernet header
inline constexpr size_t kNdMsgBytes = 24;    // NS/NA: type, code, checksum, flags, target
inline constexpr size_t kNdOptLlBytes = 8;   // a link-layer address option for Ethernet
inline constexpr uint8_t kNdHopLimit = 255;  // RFC 4861 7.1.1: anything else is off-link
inline constexpr MacAddr kBroadcastMac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

enum class ArpOp : uint16_t { Request = 1, Reply = 2 };

// An Ethernet/IPv4 ARP frame. Addresses in host order (IPv4), as the rest of
// the packet core keeps them.
struct ArpPacket {
    MacAddr eth_dst{};
    MacAddr eth_src{};
    ArpOp op = ArpOp::Request;
    MacAddr sha{};      // sender hardware address
    uint32_t spa = 0;   // sender protocol address
    MacAddr tha{};      // target hardware address (zero in a request, as Linux sends it)
    uint32_t tpa = 0;   // target protocol address
};

enum class NdType : uint8_t { Solicitation = 135, Advertisement = 136 };

// A neighbour solicitation or advertisement in its IPv6 packet.
struct NdPacket {
    MacAddr eth_dst{};
    MacAddr eth_src{};
    Ipv6Addr src{};  // :: for duplicate address detection
    Ipv6Addr dst{};
    uint8_t hop_limit = kNdHopLimit;
    NdType type = NdType::Solicitation;
    // Advertisement flags (RFC 4861 4.4): router, solicited, override.
    bool router = false;
    bool solicited = false;
    bool override_flag = false;
    Ipv6Addr target{};
    // The source link-layer address option of a solicitation, or the target
    // link-layer address option of an advertisement.
    bool has_lladdr = false;
    MacAddr lladdr{};
};

enum class NeighError : uint8_t {
    Ok = 0,
    Truncated,        // shorter than the headers it claims
    NotArp,           // not ethertype 0x0806
    BadArpFormat,     // not Ethernet (1) / IPv4 (0x0800) with lengths 6 and 4
    BadArpOp,         // neither request nor reply
    NotNd,            // not IPv6 carrying ICMPv6 type 135 or 136
    BadIpv6Length,    // payload length disagrees with the frame
    BadHopLimit,      // not 255: the frame crossed a router
    BadCode,          // ICMPv6 code not 0
    BadChecksum,      // ICMPv6 checksum mismatch
    BadTarget,        // a multicast target
    BadOption,        // an option of length 0 or running past the message
    BadSource,        // an unspecified source with a link-layer address option
};

const char* to_string(NeighError e);

// Decodes an ARP frame (Ethernet header first; Ethernet padding ignored).
NeighError decode_arp(const uint8_t* frame, size_t len, ArpPacket& out);
// Encodes it, padded with zeros to the Ethernet minimum (60 bytes without
// the FCS), as a sending MAC does.
void encode_arp(const ArpPacket& p, std::vector<uint8_t>& out);

// Decodes a neighbour solicitation or advertisement frame; options other
// than the link-layer address ones are skipped, as RFC 4861 asks.
NeighError decode_nd(const uint8_t* frame, size_t len, NdPacket& out);
// Encodes it with the ICMPv6 checksum (and the IPv6 payload length) filled.
void encode_nd(const NdPacket& p, std::vector<uint8_t>& out);

// The ICMPv6 checksum (RFC 4443 2.3) of `msg` (its checksum field zero)
// between src and dst: the one's complement sum over the IPv6 pseudo-header
// (addresses, upper-layer length, next header 58) and the message.
uint16_t icmpv6_checksum(const Ipv6Addr& src, const Ipv6Addr& dst, const uint8_t* msg, size_t len);

// ---- addresses ----
// fe80::/64 with the modified EUI-64 of `mac` (RFC 4291 appendix A): the
// link-local address the kernel gives an Ethernet netdev, and RoCE's GID 0.
Ipv6Addr ipv6_link_local(const MacAddr& mac);
// ff02::1:ffXX:XXXX, the solicited-node multicast address of `a` (RFC 4291
// 2.7.1), where solicitations for `a` are sent.
Ipv6Addr solicited_node(const Ipv6Addr& a);
// 33:33 and the low 32 bits of an IPv6 multicast address (RFC 2464 7).
MacAddr ipv6_multicast_mac(const Ipv6Addr& a);
// 01:00:5e and the low 23 bits of an IPv4 multicast address `group` (host
// order; RFC 1112 6.4).
MacAddr ipv4_multicast_mac(uint32_t group);
inline bool is_ipv6_multicast(const Ipv6Addr& a) { return a[0] == 0xff; }
inline bool is_ipv6_unspecified(const Ipv6Addr& a) {
    for (uint8_t b : a)
        if (b) return false;
    return true;
}
inline bool is_ipv6_link_local(const Ipv6Addr& a) { return a[0] == 0xfe && (a[1] & 0xc0) == 0x80; }
// ff02::1, all nodes on the link.
inline constexpr Ipv6Addr kIpv6AllNodes{0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

}  // namespace simnic::roce
