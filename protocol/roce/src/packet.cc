#include "simnic/roce/packet.h"

#include <cstring>

#include "simnic/roce/bytes.h"
#include "simnic/roce/icrc.h"

namespace simnic::roce {

const char* to_string(DecodeError e) {
    switch (e) {
        case DecodeError::Ok: return "ok";
        case DecodeError::TruncatedEthernet: return "truncated Ethernet header";
        case DecodeError::UnsupportedEthertype: return "ethertype is not IPv4 or IPv6";
        case DecodeError::TruncatedIp: return "truncated IP header";
        case DecodeError::BadIpVersion: return "IP version disagrees with the ethertype";
        case DecodeError::BadIpHeader: return "bad IPv4 header length or checksum";
        case DecodeError::IpLengthMismatch: return "IP length disagrees with the frame length";
        case DecodeError::IpFragment: return "IP fragment";
        case DecodeError::NotUdp: return "IP payload is not UDP";
        case DecodeError::TruncatedUdp: return "truncated UDP header";
        case DecodeError::UdpLengthMismatch: return "UDP length disagrees with the IP length";
        case DecodeError::NotRoceV2: return "UDP destination port is not 4791";
        case DecodeError::TruncatedBth: return "truncated BTH";
        case DecodeError::UnknownOpcode: return "unknown or unsupported BTH opcode";
        case DecodeError::BadTver: return "BTH transport version is not 0";
        case DecodeError::TruncatedExtHeader: return "truncated extension header or missing ICRC";
        case DecodeError::BadPadCount: return "bad pad count";
        case DecodeError::LengthMismatch: return "payload length not allowed for the opcode";
        case DecodeError::BadIcrc: return "ICRC mismatch";
    }
    return "unknown error";
}

uint16_t ipv4_checksum(const uint8_t* hdr, size_t len) {
    uint32_t sum = 0;
    for (size_t i = 0; i + 1 < len; i += 2) sum += load_be16(hdr + i);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<uint16_t>(~sum);
}

namespace {

// ---- Transport header codecs: the only place their layouts are written ----

void read_bth(const uint8_t* p, Bth& b) {
    b.opcode = p[0];
    b.se = p[1] & 0x80;
    b.mig = p[1] & 0x40;
    b.pad = (p[1] >> 4) & 3;
    b.tver = p[1] & 0x0f;
    b.pkey = load_be16(p + 2);
    b.fecn = p[4] & 0x80;
    b.becn = p[4] & 0x40;
    b.resv6 = p[4] & 0x3f;
    b.dqpn = load_be24(p + 5);
    b.ack_req = p[8] & 0x80;
    b.resv7 = p[8] & 0x7f;
    b.psn = load_be24(p + 9);
}

void write_bth(uint8_t* p, const Bth& b) {
    p[0] = b.opcode;
    p[1] = static_cast<uint8_t>((b.se ? 0x80 : 0) | (b.mig ? 0x40 : 0) | ((b.pad & 3) << 4) |
                                (b.tver & 0x0f));
    store_be16(p + 2, b.pkey);
    p[4] = static_cast<uint8_t>((b.fecn ? 0x80 : 0) | (b.becn ? 0x40 : 0) | (b.resv6 & 0x3f));
    store_be24(p + 5, b.dqpn);
    p[8] = static_cast<uint8_t>((b.ack_req ? 0x80 : 0) | (b.resv7 & 0x7f));
    store_be24(p + 9, b.psn);
}

void read_ext(const OpcodeInfo& info, const uint8_t* bth, TransportHdrs& h) {
    if (info.has(Ext::DETH)) {
        const uint8_t* p = bth + info.offset(Ext::DETH);
        h.deth.qkey = load_be32(p);
        h.deth.resv8 = p[4];
        h.deth.src_qp = load_be24(p + 5);
    }
    if (info.has(Ext::FETH)) {
        const uint32_t v = load_be32(bth + info.offset(Ext::FETH));
        h.feth.placement = static_cast<uint8_t>(v & 0xf);
        h.feth.selectivity = static_cast<uint8_t>((v >> 4) & 3);
        h.feth.resv = v >> 6;
    }
    if (info.has(Ext::RETH)) {
        const uint8_t* p = bth + info.offset(Ext::RETH);
        h.reth.va = load_be64(p);
        h.reth.rkey = load_be32(p + 8);
        h.reth.dma_len = load_be32(p + 12);
    }
    if (info.has(Ext::AtomicETH)) {
        const uint8_t* p = bth + info.offset(Ext::AtomicETH);
        h.atomic.va = load_be64(p);
        h.atomic.rkey = load_be32(p + 8);
        h.atomic.swap_add = load_be64(p + 12);
        h.atomic.compare = load_be64(p + 20);
    }
    if (info.has(Ext::AETH)) {
        const uint8_t* p = bth + info.offset(Ext::AETH);
        h.aeth.syndrome = p[0];
        h.aeth.msn = load_be24(p + 1);
    }
    if (info.has(Ext::AtomicAckETH)) h.atomic_ack.orig = load_be64(bth + info.offset(Ext::AtomicAckETH));
    if (info.has(Ext::ImmDt)) h.imm = load_be32(bth + info.offset(Ext::ImmDt));
    if (info.has(Ext::IETH)) h.ieth_rkey = load_be32(bth + info.offset(Ext::IETH));
    if (info.has(kCnp)) std::memcpy(h.cnp_resv.data(), bth + info.hdr_bytes - kCnpResvBytes, kCnpResvBytes);
}

void write_ext(const OpcodeInfo& info, uint8_t* bth, const TransportHdrs& h) {
    if (info.has(Ext::DETH)) {
        uint8_t* p = bth + info.offset(Ext::DETH);
        store_be32(p, h.deth.qkey);
        p[4] = h.deth.resv8;
        store_be24(p + 5, h.deth.src_qp);
    }
    if (info.has(Ext::FETH))
        store_be32(bth + info.offset(Ext::FETH),
                   (h.feth.resv << 6) | (uint32_t{h.feth.selectivity & 3u} << 4) | (h.feth.placement & 0xfu));
    if (info.has(Ext::RETH)) {
        uint8_t* p = bth + info.offset(Ext::RETH);
        store_be64(p, h.reth.va);
        store_be32(p + 8, h.reth.rkey);
        store_be32(p + 12, h.reth.dma_len);
    }
    if (info.has(Ext::AtomicETH)) {
        uint8_t* p = bth + info.offset(Ext::AtomicETH);
        store_be64(p, h.atomic.va);
        store_be32(p + 8, h.atomic.rkey);
        store_be64(p + 12, h.atomic.swap_add);
        store_be64(p + 20, h.atomic.compare);
    }
    if (info.has(Ext::AETH)) {
        uint8_t* p = bth + info.offset(Ext::AETH);
        p[0] = h.aeth.syndrome;
        store_be24(p + 1, h.aeth.msn);
    }
    if (info.has(Ext::AtomicAckETH)) store_be64(bth + info.offset(Ext::AtomicAckETH), h.atomic_ack.orig);
    if (info.has(Ext::ImmDt)) store_be32(bth + info.offset(Ext::ImmDt), h.imm);
    if (info.has(Ext::IETH)) store_be32(bth + info.offset(Ext::IETH), h.ieth_rkey);
    if (info.has(kCnp)) std::memcpy(bth + info.hdr_bytes - kCnpResvBytes, h.cnp_resv.data(), kCnpResvBytes);
}

DecodeResult fail(DecodeError e, size_t off) {
    DecodeResult r;
    r.error = e;
    r.offset = off;
    return r;
}

// The ICRC check of a packet whose IP header starts at `l3` and which ends
// (ICRC included) at `len`: `carried` against the ICRC computed.
DecodeResult icrc_verdict(const uint8_t* f, size_t len, size_t l3, size_t l4, IpVersion ver, uint32_t carried) {
    DecodeResult r;
    r.computed_icrc = compute_icrc(f, len, l3, l4, ver);
    if (r.computed_icrc != carried) {
        r.error = DecodeError::BadIcrc;
        r.offset = len - kIcrcBytes;
    }
    return r;
}

// Everything from the IP header on. `f` is the buffer the offsets count from;
// `len` bounds every read.
// `trailer_ok`: the frame is no longer than the Ethernet minimum, so bytes
// past the IP packet are the sender's MAC padding (IEEE 802.3 pads frames to
// 60 bytes plus FCS) and are ignored, as Linux's ip_rcv trims them.
DecodeResult decode_l3(const uint8_t* f, size_t len, size_t l3, IpVersion ver, Packet& out,
                       const DecodeOptions& opt, bool trailer_ok) {
    out.ip_version = ver;
    out.l3_off = l3;
    out.frame_len = len;
    size_t l4 = 0;
    if (ver == IpVersion::V4) {
        if (len - l3 < kIpv4HdrBytes) return fail(DecodeError::TruncatedIp, l3);
        const uint8_t* p = f + l3;
        if ((p[0] >> 4) != 4) return fail(DecodeError::BadIpVersion, l3);
        Ipv4Hdr& h = out.ip4;
        h.ihl = p[0] & 0x0f;
        if (h.ihl < 5) return fail(DecodeError::BadIpHeader, l3);
        const size_t hl = size_t{h.ihl} * 4;
        if (len - l3 < hl) return fail(DecodeError::TruncatedIp, l3);
        h.tos = p[1];
        h.total_len = load_be16(p + 2);
        h.id = load_be16(p + 4);
        h.frag = load_be16(p + 6);
        h.ttl = p[8];
        h.protocol = p[9];
        h.checksum = load_be16(p + 10);
        h.src = load_be32(p + 12);
        h.dst = load_be32(p + 16);
        std::memcpy(h.options.data(), p + kIpv4HdrBytes, hl - kIpv4HdrBytes);
        if (opt.check_ip_checksum && ipv4_checksum(p, hl) != 0)
            return fail(DecodeError::BadIpHeader, l3 + 10);
        if (h.total_len > len - l3 || h.total_len < hl ||
            (h.total_len < len - l3 && !trailer_ok))
            return fail(DecodeError::IpLengthMismatch, l3 + 2);
        len = l3 + h.total_len;
        if (h.frag & 0x3fff) return fail(DecodeError::IpFragment, l3 + 6);
        if (h.protocol != kIpProtoUdp) return fail(DecodeError::NotUdp, l3 + 9);
        l4 = l3 + hl;
    } else {
        if (len - l3 < kIpv6HdrBytes) return fail(DecodeError::TruncatedIp, l3);
        const uint8_t* p = f + l3;
        if ((p[0] >> 4) != 6) return fail(DecodeError::BadIpVersion, l3);
        Ipv6Hdr& h = out.ip6;
        const uint32_t w0 = load_be32(p);
        h.traffic_class = static_cast<uint8_t>(w0 >> 20);
        h.flow_label = w0 & 0xfffff;
        h.payload_len = load_be16(p + 4);
        h.next_header = p[6];
        h.hop_limit = p[7];
        std::memcpy(h.src.data(), p + 8, 16);
        std::memcpy(h.dst.data(), p + 24, 16);
        if (h.payload_len > len - l3 - kIpv6HdrBytes ||
            (h.payload_len < len - l3 - kIpv6HdrBytes && !trailer_ok))
            return fail(DecodeError::IpLengthMismatch, l3 + 4);
        len = l3 + kIpv6HdrBytes + h.payload_len;
        if (h.next_header != kIpProtoUdp) return fail(DecodeError::NotUdp, l3 + 6);
        l4 = l3 + kIpv6HdrBytes;
    }
    out.l4_off = l4;

    if (len - l4 < kUdpHdrBytes) return fail(DecodeError::TruncatedUdp, l4);
    UdpHdr& u = out.udp;
    u.sport = load_be16(f + l4);
    u.dport = load_be16(f + l4 + 2);
    u.length = load_be16(f + l4 + 4);
    u.checksum = load_be16(f + l4 + 6);
    if (u.length != len - l4) return fail(DecodeError::UdpLengthMismatch, l4 + 4);
    if (u.dport != kRoceV2Port) return fail(DecodeError::NotRoceV2, l4 + 2);

    const size_t bth = l4 + kUdpHdrBytes;
    out.bth_off = bth;
    if (len - bth < kBthBytes) return fail(DecodeError::TruncatedBth, bth);
    read_bth(f + bth, out.hdr.bth);
    const OpcodeInfo& info = opcode_info(out.hdr.bth.opcode);
    if (!info.valid()) return fail(DecodeError::UnknownOpcode, bth);
    if (out.hdr.bth.tver != 0) return fail(DecodeError::BadTver, bth + 1);
    if (len - bth < size_t{info.hdr_bytes} + kIcrcBytes)
        return fail(DecodeError::TruncatedExtHeader, bth + kBthBytes);
    read_ext(info, f + bth, out.hdr);

    // Payload and pad: IBA requires payload + pad to be a whole number of
    // 4-byte words, and only the last packet of a message may be padded.
    const size_t pay = bth + info.hdr_bytes;
    const size_t avail = len - kIcrcBytes - pay;
    const uint8_t pad = out.hdr.bth.pad;
    out.payload_off = pay;
    out.payload = f + pay;
    if (pad > avail || avail % 4 != 0) return fail(DecodeError::BadPadCount, bth + 1);
    if (!info.has(kPayload)) {
        if (avail != 0) return fail(DecodeError::LengthMismatch, pay);
    } else if (!info.has(kLast)) {
        // FIRST and MIDDLE packets carry a whole path MTU of data.
        if (pad != 0) return fail(DecodeError::BadPadCount, bth + 1);
        if (avail == 0) return fail(DecodeError::LengthMismatch, pay);
    }
    out.payload_len = avail - pad;
    out.icrc = load_le32(f + len - kIcrcBytes);

    DecodeResult r;
    if (opt.check_icrc) r = icrc_verdict(f, len, l3, l4, ver, out.icrc);
    return r;
}

}  // namespace

DecodeResult decode_frame(const uint8_t* frame, size_t len, Packet& out, const DecodeOptions& opt) {
    out = Packet{};
    if (len < kEthHdrBytes) return fail(DecodeError::TruncatedEthernet, 0);
    std::memcpy(out.eth.dst.data(), frame, 6);
    std::memcpy(out.eth.src.data(), frame + 6, 6);
    size_t et_off = 12;
    uint16_t et = load_be16(frame + et_off);
    if (et == kEtherTypeVlan) {
        if (len < kEthHdrBytes + kVlanTagBytes) return fail(DecodeError::TruncatedEthernet, 12);
        out.eth.has_vlan = true;
        out.eth.vlan_tci = load_be16(frame + 14);
        et_off = 16;
        et = load_be16(frame + et_off);
    }
    out.eth.ethertype = et;
    IpVersion ver;
    if (et == kEtherTypeIpv4)
        ver = IpVersion::V4;
    else if (et == kEtherTypeIpv6)
        ver = IpVersion::V6;
    else
        return fail(DecodeError::UnsupportedEthertype, et_off);
    return decode_l3(frame, len, et_off + 2, ver, out, opt, len <= kEthMinFrameBytes);
}

DecodeResult check_icrc(const uint8_t* buf, const Packet& p) {
    // Where decode_l3 found the packet's end: its payload, pad and ICRC
    // after the payload's offset (any Ethernet padding already left out).
    const size_t end = p.payload_off + p.payload_len + p.hdr.bth.pad + kIcrcBytes;
    return icrc_verdict(buf, end, p.l3_off, p.l4_off, p.ip_version, p.icrc);
}

DecodeResult decode_ip_packet(const uint8_t* pkt, size_t len, Packet& out, const DecodeOptions& opt) {
    out = Packet{};
    if (len < 1) return fail(DecodeError::TruncatedIp, 0);
    const unsigned v = pkt[0] >> 4;
    if (v != 4 && v != 6) return fail(DecodeError::BadIpVersion, 0);
    const IpVersion ver = v == 4 ? IpVersion::V4 : IpVersion::V6;
    out.eth.ethertype = ver == IpVersion::V4 ? kEtherTypeIpv4 : kEtherTypeIpv6;
    return decode_l3(pkt, len, 0, ver, out, opt, false);
}

// ---- Encoding ----

namespace {

size_t l2_bytes(const Packet& p) { return kEthHdrBytes + (p.eth.has_vlan ? kVlanTagBytes : 0); }
size_t l3_bytes(const Packet& p) {
    return p.ip_version == IpVersion::V4 ? size_t{p.ip4.ihl} * 4 : kIpv6HdrBytes;
}
uint8_t pad_for(size_t payload_len) { return static_cast<uint8_t>((4 - payload_len % 4) % 4); }

uint16_t udp_checksum(const Packet& p, const uint8_t* udp, size_t udp_len) {
    uint32_t sum = 0;
    auto add16 = [&sum](uint32_t v) { sum += v & 0xffff; };
    if (p.ip_version == IpVersion::V4) {
        add16(p.ip4.src >> 16); add16(p.ip4.src);
        add16(p.ip4.dst >> 16); add16(p.ip4.dst);
    } else {
        for (size_t i = 0; i < 16; i += 2) {
            add16(load_be16(p.ip6.src.data() + i));
            add16(load_be16(p.ip6.dst.data() + i));
        }
    }
    add16(kIpProtoUdp);
    add16(static_cast<uint32_t>(udp_len));
    for (size_t i = 0; i + 1 < udp_len; i += 2) sum += load_be16(udp + i);
    if (udp_len & 1) sum += uint32_t{udp[udp_len - 1]} << 8;
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    const uint16_t c = static_cast<uint16_t>(~sum);
    return c == 0 ? 0xffff : c;  // 0 means "no checksum" in UDP
}

}  // namespace

size_t encoded_frame_len(const Packet& p, const EncodeOptions& opt) {
    const OpcodeInfo& info = p.opinfo();
    const size_t pad = opt.fill_lengths ? pad_for(p.payload_len) : p.hdr.bth.pad;
    const size_t len =
        l2_bytes(p) + l3_bytes(p) + kUdpHdrBytes + info.hdr_bytes + p.payload_len + pad + kIcrcBytes;
    return opt.pad_to_eth_min && len < kEthMinFrameBytes ? kEthMinFrameBytes : len;
}

bool encode_frame(Packet& p, std::vector<uint8_t>& out, const EncodeOptions& opt) {
    const OpcodeInfo& info = p.opinfo();
    if (!info.valid()) return false;
    if (!info.has(kPayload) && p.payload_len != 0) return false;
    if (p.payload_len != 0 && p.payload == nullptr) return false;
    if (p.ip_version == IpVersion::V4 && (p.ip4.ihl < 5 || p.ip4.ihl > 15)) return false;
    // Only the last packet of a message may be padded, and FIRST/MIDDLE
    // packets carry a whole path MTU: never write what decode would refuse.
    if (info.has(kPayload) && !info.has(kLast) && (p.payload_len == 0 || p.payload_len % 4 != 0))
        return false;
    if (opt.fill_lengths) p.hdr.bth.pad = pad_for(p.payload_len);
    if (p.hdr.bth.pad > 3) return false;

    const size_t l3 = l2_bytes(p);
    const size_t l4 = l3 + l3_bytes(p);
    const size_t bth = l4 + kUdpHdrBytes;
    const size_t pay = bth + info.hdr_bytes;
    const size_t len = pay + p.payload_len + p.hdr.bth.pad + kIcrcBytes;
    if (len - l3 > 0xffff) return false;
    const size_t wire_len = opt.pad_to_eth_min && len < kEthMinFrameBytes ? kEthMinFrameBytes : len;
    // Every byte is zero unless written below (reserved fields, the pad,
    // the Ethernet padding). The payload is left out of the zeroing, as its
    // copy overwrites it: zeroing a 4 KiB payload first was a tenth of
    // `simnic bench`'s instructions (callgrind).
    out.resize(wire_len);
    uint8_t* f = out.data();
    std::memset(f, 0, pay);
    std::memset(f + pay + p.payload_len, 0, wire_len - pay - p.payload_len);

    // Ethernet; the ethertype follows the IP version so the frame decodes.
    p.eth.ethertype = p.ip_version == IpVersion::V4 ? kEtherTypeIpv4 : kEtherTypeIpv6;
    std::memcpy(f, p.eth.dst.data(), 6);
    std::memcpy(f + 6, p.eth.src.data(), 6);
    if (p.eth.has_vlan) {
        store_be16(f + 12, kEtherTypeVlan);
        store_be16(f + 14, p.eth.vlan_tci);
    }
    store_be16(f + l3 - 2, p.eth.ethertype);

    if (p.ip_version == IpVersion::V4) {
        Ipv4Hdr& h = p.ip4;
        uint8_t* q = f + l3;
        const size_t hl = size_t{h.ihl} * 4;
        if (opt.fill_lengths) h.total_len = static_cast<uint16_t>(len - l3);
        h.protocol = kIpProtoUdp;
        q[0] = static_cast<uint8_t>(0x40 | h.ihl);
        q[1] = h.tos;
        store_be16(q + 2, h.total_len);
        store_be16(q + 4, h.id);
        store_be16(q + 6, h.frag);
        q[8] = h.ttl;
        q[9] = h.protocol;
        store_be32(q + 12, h.src);
        store_be32(q + 16, h.dst);
        std::memcpy(q + kIpv4HdrBytes, h.options.data(), hl - kIpv4HdrBytes);
        if (opt.fill_ip_checksum) h.checksum = ipv4_checksum(q, hl);  // field still 0 here
        store_be16(q + 10, h.checksum);
    } else {
        Ipv6Hdr& h = p.ip6;
        uint8_t* q = f + l3;
        if (opt.fill_lengths) h.payload_len = static_cast<uint16_t>(len - l4);
        h.next_header = kIpProtoUdp;
        store_be32(q, (6u << 28) | (uint32_t{h.traffic_class} << 20) | (h.flow_label & 0xfffff));
        store_be16(q + 4, h.payload_len);
        q[6] = h.next_header;
        q[7] = h.hop_limit;
        std::memcpy(q + 8, h.src.data(), 16);
        std::memcpy(q + 24, h.dst.data(), 16);
    }

    if (opt.fill_lengths) p.udp.length = static_cast<uint16_t>(len - l4);
    store_be16(f + l4, p.udp.sport);
    store_be16(f + l4 + 2, p.udp.dport);
    store_be16(f + l4 + 4, p.udp.length);

    write_bth(f + bth, p.hdr.bth);
    write_ext(info, f + bth, p.hdr);
    if (p.payload_len) std::memcpy(f + pay, p.payload, p.payload_len);

    if (opt.fill_icrc) p.icrc = compute_icrc(f, len, l3, l4, p.ip_version);
    store_le32(f + len - kIcrcBytes, p.icrc);

    // The UDP checksum covers the ICRC, so it comes last.
    if (opt.udp_checksum == UdpChecksum::Zero) p.udp.checksum = 0;
    if (opt.udp_checksum == UdpChecksum::Compute) p.udp.checksum = udp_checksum(p, f + l4, len - l4);
    store_be16(f + l4 + 6, p.udp.checksum);

    p.l3_off = l3;
    p.l4_off = l4;
    p.bth_off = bth;
    p.payload_off = pay;
    p.frame_len = wire_len;
    return true;
}

}  // namespace simnic::roce
