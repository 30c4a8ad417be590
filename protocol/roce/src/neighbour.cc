// ARP and IPv6 neighbour discovery frames (neighbour.h): one reader and one
// writer per layout.
#include "simnic/roce/neighbour.h"

#include <cstring>

#include "simnic/roce/bytes.h"

namespace simnic::roce {

const char* to_string(NeighError e) {
    switch (e) {
        case NeighError::Ok: return "ok";
        case NeighError::Truncated: return "truncated";
        case NeighError::NotArp: return "not an ARP frame";
        case NeighError::BadArpFormat: return "ARP not for Ethernet and IPv4";
        case NeighError::BadArpOp: return "ARP operation is neither request nor reply";
        case NeighError::NotNd: return "not a neighbour solicitation or advertisement";
        case NeighError::BadIpv6Length: return "IPv6 payload length disagrees with the frame";
        case NeighError::BadHopLimit: return "hop limit is not 255";
        case NeighError::BadCode: return "ICMPv6 code is not 0";
        case NeighError::BadChecksum: return "ICMPv6 checksum mismatch";
        case NeighError::BadTarget: return "multicast target address";
        case NeighError::BadOption: return "malformed option";
        case NeighError::BadSource: return "unspecified source with a link-layer address option";
    }
    return "unknown error";
}

namespace {

constexpr uint16_t kArpHtypeEthernet = 1;
constexpr uint8_t kOptSourceLl = 1;  // RFC 4861 4.6.1
constexpr uint8_t kOptTargetLl = 2;
constexpr uint8_t kNaRouter = 0x80, kNaSolicited = 0x40, kNaOverride = 0x20;

void put_eth(uint8_t* f, const MacAddr& dst, const MacAddr& src, uint16_t ethertype) {
    std::memcpy(f, dst.data(), 6);
    std::memcpy(f + 6, src.data(), 6);
    store_be16(f + 12, ethertype);
}

void get_eth(const uint8_t* f, MacAddr& dst, MacAddr& src) {
    std::memcpy(dst.data(), f, 6);
    std::memcpy(src.data(), f + 6, 6);
}

}  // namespace

// ---- ARP ----

NeighError decode_arp(const uint8_t* f, size_t len, ArpPacket& out) {
    out = ArpPacket{};
    if (len < kEthHdrBytes) return NeighError::Truncated;
    if (load_be16(f + 12) != kEtherTypeArp) return NeighError::NotArp;
    if (len < kEthHdrBytes + kArpBytes) return NeighError::Truncated;
    get_eth(f, out.eth_dst, out.eth_src);
    const uint8_t* a = f + kEthHdrBytes;
    if (load_be16(a) != kArpHtypeEthernet || load_be16(a + 2) != kEtherTypeIpv4 || a[4] != 6 || a[5] != 4)
        return NeighError::BadArpFormat;
    const uint16_t op = load_be16(a + 6);
    if (op != uint16_t(ArpOp::Request) && op != uint16_t(ArpOp::Reply)) return NeighError::BadArpOp;
    out.op = ArpOp(op);
    std::memcpy(out.sha.data(), a + 8, 6);
    out.spa = load_be32(a + 14);
    std::memcpy(out.tha.data(), a + 18, 6);
    out.tpa = load_be32(a + 24);
    return NeighError::Ok;
}

void encode_arp(const ArpPacket& p, std::vector<uint8_t>& out) {
    out.assign(kEthMinFrameBytes, 0);
    uint8_t* f = out.data();
    put_eth(f, p.eth_dst, p.eth_src, kEtherTypeArp);
    uint8_t* a = f + kEthHdrBytes;
    store_be16(a, kArpHtypeEthernet);
    store_be16(a + 2, kEtherTypeIpv4);
    a[4] = 6;
    a[5] = 4;
    store_be16(a + 6, uint16_t(p.op));
    std::memcpy(a + 8, p.sha.data(), 6);
    store_be32(a + 14, p.spa);
    std::memcpy(a + 18, p.tha.data(), 6);
    store_be32(a + 24, p.tpa);
}

// ---- ICMPv6 neighbour discovery ----

uint16_t icmpv6_checksum(const Ipv6Addr& src, const Ipv6Addr& dst, const uint8_t* msg, size_t len) {
    uint32_t sum = 0;
    for (size_t i = 0; i < 16; i += 2) sum += load_be16(src.data() + i) + load_be16(dst.data() + i);
    sum += uint32_t(len >> 16) + uint32_t(len & 0xffff);  // the 32-bit upper-layer length
    sum += kIpProtoIcmpv6;                                // three zero bytes, then next header
    for (size_t i = 0; i + 1 < len; i += 2) sum += load_be16(msg + i);
    if (len & 1) sum += uint32_t{msg[len - 1]} << 8;
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<uint16_t>(~sum);
}

NeighError decode_nd(const uint8_t* f, size_t len, NdPacket& out) {
    out = NdPacket{};
    if (len < kEthHdrBytes) return NeighError::Truncated;
    if (load_be16(f + 12) != kEtherTypeIpv6) return NeighError::NotNd;
    if (len < kEthHdrBytes + kIpv6HdrBytes) return NeighError::Truncated;
    get_eth(f, out.eth_dst, out.eth_src);
    const uint8_t* ip = f + kEthHdrBytes;
    if ((ip[0] >> 4) != 6 || ip[6] != kIpProtoIcmpv6) return NeighError::NotNd;
    const size_t plen = load_be16(ip + 4);
    if (plen > len - kEthHdrBytes - kIpv6HdrBytes) return NeighError::BadIpv6Length;
    if (plen < 1) return NeighError::Truncated;
    const uint8_t* m = ip + kIpv6HdrBytes;
    if (m[0] != uint8_t(NdType::Solicitation) && m[0] != uint8_t(NdType::Advertisement)) return NeighError::NotNd;
    if (plen < kNdMsgBytes) return NeighError::Truncated;
    out.hop_limit = ip[7];
    std::memcpy(out.src.data(), ip + 8, 16);
    std::memcpy(out.dst.data(), ip + 24, 16);
    out.type = NdType(m[0]);
    if (out.hop_limit != kNdHopLimit) return NeighError::BadHopLimit;
    if (m[1] != 0) return NeighError::BadCode;
    if (icmpv6_checksum(out.src, out.dst, m, plen) != 0) return NeighError::BadChecksum;
    if (out.type == NdType::Advertisement) {
        out.router = m[4] & kNaRouter;
        out.solicited = m[4] & kNaSolicited;
        out.override_flag = m[4] & kNaOverride;
    }
    std::memcpy(out.target.data(), m + 8, 16);
    if (is_ipv6_multicast(out.target)) return NeighError::BadTarget;
    // Options: type, length in units of 8 bytes (never 0), contents.
    const uint8_t want = out.type == NdType::Solicitation ? kOptSourceLl : kOptTargetLl;
    for (size_t off = kNdMsgBytes; off < plen;) {
        if (plen - off < 2 || m[off + 1] == 0 || size_t(m[off + 1]) * 8 > plen - off) return NeighError::BadOption;
        const size_t olen = size_t(m[off + 1]) * 8;
        if (m[off] == want) {
            if (olen != kNdOptLlBytes) return NeighError::BadOption;  // Ethernet: 6 bytes in one unit
            out.has_lladdr = true;
            std::memcpy(out.lladdr.data(), m + off + 2, 6);
        }
        off += olen;
    }
    if (out.type == NdType::Solicitation && out.has_lladdr && is_ipv6_unspecified(out.src))
        return NeighError::BadSource;
    return NeighError::Ok;
}

void encode_nd(const NdPacket& p, std::vector<uint8_t>& out) {
    const size_t mlen = kNdMsgBytes + (p.has_lladdr ? kNdOptLlBytes : 0);
    out.assign(kEthHdrBytes + kIpv6HdrBytes + mlen, 0);
    uint8_t* f = out.data();
    put_eth(f, p.eth_dst, p.eth_src, kEtherTypeIpv6);
    uint8_t* ip = f + kEthHdrBytes;
    store_be32(ip, 6u << 28);  // traffic class and flow label 0, as ndisc sends
    store_be16(ip + 4, uint16_t(mlen));
    ip[6] = kIpProtoIcmpv6;
    ip[7] = p.hop_limit;
    std::memcpy(ip + 8, p.src.data(), 16);
    std::memcpy(ip + 24, p.dst.data(), 16);
    uint8_t* m = ip + kIpv6HdrBytes;
    m[0] = uint8_t(p.type);
    m[1] = 0;
    if (p.type == NdType::Advertisement)
        m[4] = uint8_t((p.router ? kNaRouter : 0) | (p.solicited ? kNaSolicited : 0) |
                       (p.override_flag ? kNaOverride : 0));
    std::memcpy(m + 8, p.target.data(), 16);
    if (p.has_lladdr) {
        m[kNdMsgBytes] = p.type == NdType::Solicitation ? kOptSourceLl : kOptTargetLl;
        m[kNdMsgBytes + 1] = 1;
        std::memcpy(m + kNdMsgBytes + 2, p.lladdr.data(), 6);
    }
    store_be16(m + 2, icmpv6_checksum(p.src, p.dst, m, mlen));
}

// ---- addresses ----

Ipv6Addr ipv6_link_local(const MacAddr& mac) {
    return Ipv6Addr{0xfe, 0x80, 0, 0, 0, 0, 0, 0, uint8_t(mac[0] ^ 0x02), mac[1], mac[2], 0xff, 0xfe,
                    mac[3], mac[4], mac[5]};
}

Ipv6Addr solicited_node(const Ipv6Addr& a) {
    return Ipv6Addr{0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff, a[13], a[14], a[15]};
}

MacAddr ipv6_multicast_mac(const Ipv6Addr& a) { return MacAddr{0x33, 0x33, a[12], a[13], a[14], a[15]}; }
MacAddr ipv4_multicast_mac(uint32_t group) {
    return MacAddr{0x01, 0x00, 0x5e, uint8_t((group >> 16) & 0x7F), uint8_t(group >> 8), uint8_t(group)};
}

}  // namespace simnic::roce
