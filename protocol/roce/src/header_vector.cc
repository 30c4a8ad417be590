#include "simnic/roce/header_vector.h"

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "simnic/roce/bytes.h"

namespace simnic::roce {

const char* to_string(ParseVerdict v) {
    switch (v) {
        case ParseVerdict::Accept: return "accept";
        case ParseVerdict::TooShort: return "frame ends inside the Ethernet, IP, UDP or BTH header";
        case ParseVerdict::NotIp: return "ethertype is not IPv4 or IPv6";
        case ParseVerdict::BadIpHeader: return "bad IP version, IPv4 IHL or IPv4 header checksum";
        case ParseVerdict::IpLengthMismatch: return "IP length disagrees with the frame length";
        case ParseVerdict::IpFragment: return "IP fragment";
        case ParseVerdict::NotUdp: return "IP payload is not UDP";
        case ParseVerdict::UdpLengthMismatch: return "UDP length disagrees with the IP length";
        case ParseVerdict::NotRoceV2: return "UDP destination port is not 4791";
        case ParseVerdict::BadBth: return "unknown BTH opcode or TVer != 0";
        case ParseVerdict::TruncatedHeaders: return "too short for the opcode's headers and ICRC";
        case ParseVerdict::BadLength: return "pad count or payload length not allowed for the opcode";
    }
    return "unknown verdict";
}

ParseVerdict verdict_of(DecodeError e) {
    switch (e) {
        case DecodeError::Ok:
        case DecodeError::BadIcrc: return ParseVerdict::Accept;
        case DecodeError::TruncatedEthernet:
        case DecodeError::TruncatedIp:
        case DecodeError::TruncatedUdp:
        case DecodeError::TruncatedBth: return ParseVerdict::TooShort;
        case DecodeError::UnsupportedEthertype: return ParseVerdict::NotIp;
        case DecodeError::BadIpVersion:
        case DecodeError::BadIpHeader: return ParseVerdict::BadIpHeader;
        case DecodeError::IpLengthMismatch: return ParseVerdict::IpLengthMismatch;
        case DecodeError::IpFragment: return ParseVerdict::IpFragment;
        case DecodeError::NotUdp: return ParseVerdict::NotUdp;
        case DecodeError::UdpLengthMismatch: return ParseVerdict::UdpLengthMismatch;
        case DecodeError::NotRoceV2: return ParseVerdict::NotRoceV2;
        case DecodeError::UnknownOpcode:
        case DecodeError::BadTver: return ParseVerdict::BadBth;
        case DecodeError::TruncatedExtHeader: return ParseVerdict::TruncatedHeaders;
        case DecodeError::BadPadCount:
        case DecodeError::LengthMismatch: return ParseVerdict::BadLength;
    }
    return ParseVerdict::BadLength;  // unreachable: every DecodeError is listed
}

uint32_t HeaderVector::src_ip4() const { return load_be32(src_ip.data() + 12); }
uint32_t HeaderVector::dst_ip4() const { return load_be32(dst_ip.data() + 12); }

namespace {

// Every field of the record, once, for comparing and printing.
template <typename F> void for_each_field(const HeaderVector& h, F&& f) {
    f("verdict", static_cast<uint64_t>(h.verdict));
    f("has_vlan", h.has_vlan);
    f("vlan_tci", h.vlan_tci);
    f("ip_version", h.ip_version);
    f("src_ip.hi", load_be64(h.src_ip.data()));
    f("src_ip.lo", load_be64(h.src_ip.data() + 8));
    f("dst_ip.hi", load_be64(h.dst_ip.data()));
    f("dst_ip.lo", load_be64(h.dst_ip.data() + 8));
    f("udp_sport", h.udp_sport);
    f("opcode", h.opcode);
    f("se", h.se);
    f("mig", h.mig);
    f("pad", h.pad);
    f("pkey", h.pkey);
    f("fecn", h.fecn);
    f("becn", h.becn);
    f("dqpn", h.dqpn);
    f("ack_req", h.ack_req);
    f("psn", h.psn);
    f("op_mask", h.op_mask);
    f("deth_qkey", h.deth_qkey);
    f("deth_src_qp", h.deth_src_qp);
    f("reth_va", h.reth_va);
    f("reth_rkey", h.reth_rkey);
    f("reth_dma_len", h.reth_dma_len);
    f("atomic_va", h.atomic_va);
    f("atomic_rkey", h.atomic_rkey);
    f("atomic_swap_add", h.atomic_swap_add);
    f("atomic_compare", h.atomic_compare);
    f("aeth_syndrome", h.aeth_syndrome);
    f("aeth_msn", h.aeth_msn);
    f("atomic_ack_orig", h.atomic_ack_orig);
    f("imm", h.imm);
    f("ieth_rkey", h.ieth_rkey);
    f("l3_off", h.l3_off);
    f("l4_off", h.l4_off);
    f("bth_off", h.bth_off);
    f("payload_off", h.payload_off);
    f("payload_len", h.payload_len);
}

std::vector<uint64_t> values(const HeaderVector& h) {
    std::vector<uint64_t> v;
    for_each_field(h, [&v](const char*, uint64_t x) { v.push_back(x); });
    return v;
}

}  // namespace

bool operator==(const HeaderVector& a, const HeaderVector& b) { return values(a) == values(b); }

std::string diff(const HeaderVector& a, const HeaderVector& b) {
    const std::vector<uint64_t> vb = values(b);
    std::string out;
    size_t i = 0;
    for_each_field(a, [&](const char* name, uint64_t x) {
        const uint64_t y = vb[i++];
        if (x == y) return;
        char line[128];
        std::snprintf(line, sizeof line, "%s: 0x%" PRIx64 " != 0x%" PRIx64 "\n", name, x, y);
        out += line;
    });
    return out;
}

std::string describe(const HeaderVector& hv) {
    std::string out;
    for_each_field(hv, [&out](const char* name, uint64_t x) {
        char line[128];
        std::snprintf(line, sizeof line, "%s=0x%" PRIx64 "\n", name, x);
        out += line;
    });
    return out;
}

HeaderVector parse_header_vector(const uint8_t* frame, size_t len, Packet* decoded) {
    HeaderVector hv;
    Packet local;
    Packet& p = decoded ? *decoded : local;
    DecodeOptions opt;
    opt.check_icrc = false;  // the ICRC engine's job
    opt.check_ip_checksum = true;
    const DecodeResult r = decode_frame(frame, len, p, opt);
    hv.verdict = verdict_of(r.error);
    if (!hv.accepted()) return hv;

    hv.has_vlan = p.eth.has_vlan;
    hv.vlan_tci = p.eth.has_vlan ? p.eth.vlan_tci : 0;
    if (p.ip_version == IpVersion::V4) {
        hv.ip_version = 4;
        store_be32(hv.src_ip.data() + 12, p.ip4.src);
        store_be32(hv.dst_ip.data() + 12, p.ip4.dst);
    } else {
        hv.ip_version = 6;
        hv.src_ip = p.ip6.src;
        hv.dst_ip = p.ip6.dst;
    }
    hv.udp_sport = p.udp.sport;

    const Bth& b = p.hdr.bth;
    hv.opcode = b.opcode;
    hv.se = b.se;
    hv.mig = b.mig;
    hv.pad = b.pad;
    hv.pkey = b.pkey;
    hv.fecn = b.fecn;
    hv.becn = b.becn;
    hv.dqpn = b.dqpn;
    hv.ack_req = b.ack_req;
    hv.psn = b.psn;

    const OpcodeInfo& info = p.opinfo();
    hv.op_mask = info.mask;
    const TransportHdrs& h = p.hdr;
    if (info.has(Ext::DETH)) {
        hv.deth_qkey = h.deth.qkey;
        hv.deth_src_qp = h.deth.src_qp;
    }
    if (info.has(Ext::RETH)) {
        hv.reth_va = h.reth.va;
        hv.reth_rkey = h.reth.rkey;
        hv.reth_dma_len = h.reth.dma_len;
    }
    if (info.has(Ext::AtomicETH)) {
        hv.atomic_va = h.atomic.va;
        hv.atomic_rkey = h.atomic.rkey;
        hv.atomic_swap_add = h.atomic.swap_add;
        hv.atomic_compare = h.atomic.compare;
    }
    if (info.has(Ext::AETH)) {
        hv.aeth_syndrome = h.aeth.syndrome;
        hv.aeth_msn = h.aeth.msn;
    }
    if (info.has(Ext::AtomicAckETH)) hv.atomic_ack_orig = h.atomic_ack.orig;
    if (info.has(Ext::ImmDt)) hv.imm = h.imm;
    if (info.has(Ext::IETH)) hv.ieth_rkey = h.ieth_rkey;

    hv.l3_off = static_cast<uint16_t>(p.l3_off);
    hv.l4_off = static_cast<uint16_t>(p.l4_off);
    hv.bth_off = static_cast<uint16_t>(p.bth_off);
    hv.payload_off = static_cast<uint16_t>(p.payload_off);
    hv.payload_len = static_cast<uint16_t>(p.payload_len);
    return hv;
}

}  // namespace simnic::roce
