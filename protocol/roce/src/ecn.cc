#include "simnic/roce/ecn.h"

#include "simnic/roce/bytes.h"

namespace simnic::roce {

const char* to_string(Ecn e) {
    switch (e) {
        case Ecn::NotEct: return "Not-ECT";
        case Ecn::Ect1: return "ECT(1)";
        case Ecn::Ect0: return "ECT(0)";
        case Ecn::Ce: return "CE";
    }
    return "?";
}

namespace {

// The byte holding the ECN bits in its low two bits: the IPv4 TOS (byte 1);
// for IPv6 the traffic class straddles bytes 0 and 1, its low nibble being
// the high nibble of byte 1, so ECN sits in bits 5..4 of byte 1.
constexpr unsigned kEcnShift4 = 0;
constexpr unsigned kEcnShift6 = 4;

bool header_ok(const uint8_t* ip, size_t len, unsigned& version) {
    if (len < 1) return false;
    version = ip[0] >> 4;
    if (version == 4) return len >= kIpv4HdrBytes;
    if (version == 6) return len >= kIpv6HdrBytes;
    return false;
}

}  // namespace

std::optional<Ecn> read_ecn(const uint8_t* ip, size_t len) {
    unsigned v = 0;
    if (!header_ok(ip, len, v)) return std::nullopt;
    const unsigned shift = v == 4 ? kEcnShift4 : kEcnShift6;
    return static_cast<Ecn>((ip[1] >> shift) & 3);
}

bool write_ecn(uint8_t* ip, size_t len, Ecn e) {
    unsigned v = 0;
    if (!header_ok(ip, len, v)) return false;
    const unsigned shift = v == 4 ? kEcnShift4 : kEcnShift6;
    const uint16_t old_word = load_be16(ip);
    ip[1] = static_cast<uint8_t>((ip[1] & ~(3u << shift)) | (static_cast<unsigned>(e) << shift));
    if (v == 4) {
        // RFC 1624: HC' = ~(~HC + ~m + m'), m the 16-bit word that changed
        // (version/IHL and TOS), in one's complement arithmetic.
        const uint16_t new_word = load_be16(ip);
        uint32_t sum = uint32_t(uint16_t(~load_be16(ip + 10))) + uint16_t(~old_word) + new_word;
        while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
        store_be16(ip + 10, static_cast<uint16_t>(~sum));
    }
    return true;
}

bool mark_ce(uint8_t* ip, size_t len) {
    const std::optional<Ecn> e = read_ecn(ip, len);
    if (!e || *e == Ecn::NotEct) return false;
    if (*e == Ecn::Ce) return true;
    return write_ecn(ip, len, Ecn::Ce);
}

size_t ip_header_offset(const uint8_t* frame, size_t len) {
    if (len < kEthHdrBytes) return 0;
    size_t et_off = 12;
    uint16_t et = load_be16(frame + et_off);
    if (et == kEtherTypeVlan) {
        if (len < kEthHdrBytes + kVlanTagBytes) return 0;
        et_off = 16;
        et = load_be16(frame + et_off);
    }
    if (et != kEtherTypeIpv4 && et != kEtherTypeIpv6) return 0;
    return et_off + 2;
}

bool is_roce_v2_frame(const uint8_t* frame, size_t len) {
    const size_t l3 = ip_header_offset(frame, len);
    if (l3 == 0 || len <= l3) return false;
    const uint8_t* ip = frame + l3;
    size_t l4 = 0;
    if ((ip[0] >> 4) == 4) {
        if (len < l3 + kIpv4HdrBytes) return false;
        const size_t ihl = size_t(ip[0] & 0x0F) * 4;
        const bool later_fragment = (load_be16(ip + 6) & 0x1FFF) != 0;  // no UDP header in it
        if (ihl < kIpv4HdrBytes || ip[9] != kIpProtoUdp || later_fragment) return false;
        l4 = l3 + ihl;
    } else if ((ip[0] >> 4) == 6) {
        if (len < l3 + kIpv6HdrBytes || ip[6] != kIpProtoUdp) return false;
        l4 = l3 + kIpv6HdrBytes;
    } else {
        return false;
    }
    return len >= l4 + kUdpHdrBytes && load_be16(frame + l4 + 2) == kRoceV2Port;
}

std::optional<Ecn> read_frame_ecn(const uint8_t* frame, size_t len) {
    const size_t l3 = ip_header_offset(frame, len);
    if (l3 == 0) return std::nullopt;
    return read_ecn(frame + l3, len - l3);
}

bool write_frame_ecn(uint8_t* frame, size_t len, Ecn e) {
    const size_t l3 = ip_header_offset(frame, len);
    return l3 != 0 && write_ecn(frame + l3, len - l3, e);
}

Ecn ecn_of(const Packet& p) {
    const uint8_t b = p.ip_version == IpVersion::V4 ? p.ip4.tos : p.ip6.traffic_class;
    return static_cast<Ecn>(b & 3);
}

void set_ecn(Packet& p, Ecn e) {
    uint8_t& b = p.ip_version == IpVersion::V4 ? p.ip4.tos : p.ip6.traffic_class;
    b = static_cast<uint8_t>((b & ~3u) | static_cast<unsigned>(e));
}

Packet make_cnp(const Packet& marked, uint32_t sender_qpn, uint8_t dscp) {
    const uint8_t tos = static_cast<uint8_t>((dscp & 0x3f) << 2);  // ECN bits 00: Not-ECT
    Packet c;
    c.eth.dst = marked.eth.src;
    c.eth.src = marked.eth.dst;
    c.eth.has_vlan = marked.eth.has_vlan;
    c.eth.vlan_tci = marked.eth.vlan_tci;
    c.ip_version = marked.ip_version;
    if (marked.ip_version == IpVersion::V4) {
        c.ip4.src = marked.ip4.dst;
        c.ip4.dst = marked.ip4.src;
        c.ip4.ttl = 64;
        c.ip4.tos = tos;
    } else {
        c.ip6.src = marked.ip6.dst;
        c.ip6.dst = marked.ip6.src;
        c.ip6.hop_limit = 64;
        c.ip6.traffic_class = tos;
    }
    c.udp.sport = marked.udp.sport;
    c.udp.dport = kRoceV2Port;
    Bth& b = c.hdr.bth;
    b.opcode = op::CNP;
    b.pkey = marked.hdr.bth.pkey;
    b.becn = true;
    b.dqpn = sender_qpn & 0xffffff;
    b.psn = 0;
    return c;
}

bool is_cnp(const Packet& p) { return p.hdr.bth.opcode == op::CNP && p.hdr.bth.becn; }

}  // namespace simnic::roce
