#include "simnic/roce/describe.h"

#include <arpa/inet.h>

#include <cinttypes>
#include <cstdarg>
#include <cstdio>

namespace simnic::roce {
namespace {

void appendf(std::string& s, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void appendf(std::string& s, const char* fmt, ...) {
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0) s.append(buf, static_cast<size_t>(n) < sizeof buf ? static_cast<size_t>(n) : sizeof buf - 1);
}

std::string ip_str(const Packet& p, bool src) {
    char buf[INET6_ADDRSTRLEN] = {};
    if (p.ip_version == IpVersion::V4) {
        uint32_t a = htonl(src ? p.ip4.src : p.ip4.dst);
        inet_ntop(AF_INET, &a, buf, sizeof buf);
    } else {
        inet_ntop(AF_INET6, (src ? p.ip6.src : p.ip6.dst).data(), buf, sizeof buf);
    }
    return buf;
}

std::string mac_str(const MacAddr& m) {
    std::string s;
    appendf(s, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
    return s;
}

const char* nak_name(uint8_t code) {
    switch (static_cast<NakCode>(code)) {
        case NakCode::PsnSequenceError: return "PSN sequence error";
        case NakCode::InvalidRequest: return "invalid request";
        case NakCode::RemoteAccessError: return "remote access error";
        case NakCode::RemoteOperationalError: return "remote operational error";
        case NakCode::InvalidRdRequest: return "invalid RD request";
    }
    return "reserved";
}

std::string icrc_verdict(const Packet& p, const DecodeResult& r) {
    std::string s;
    if (r.error == DecodeError::BadIcrc)
        appendf(s, "ICRC BAD (carried 0x%08x, computed 0x%08x)", p.icrc, r.computed_icrc);
    else
        appendf(s, "ICRC ok 0x%08x", p.icrc);
    return s;
}

}  // namespace

std::string describe_syndrome(uint8_t syn) {
    std::string s;
    switch (aeth_type(syn)) {
        case AethType::Ack: appendf(s, "ACK credits %u", aeth_value(syn)); break;
        case AethType::RnrNak: appendf(s, "RNR NAK timer %u", aeth_value(syn)); break;
        case AethType::Nak: appendf(s, "NAK %s", nak_name(aeth_value(syn))); break;
        case AethType::Reserved: appendf(s, "reserved syndrome 0x%02x", syn); break;
    }
    return s;
}

std::string describe_brief(const Packet& p, const DecodeResult& r) {
    std::string s;
    if (!r.ok() && r.error != DecodeError::BadIcrc) {
        appendf(s, "malformed: %s at byte %zu", to_string(r.error), r.offset);
        return s;
    }
    const OpcodeInfo& info = p.opinfo();
    const Bth& b = p.hdr.bth;
    appendf(s, "%s:%u > %s:%u %s QP=0x%06x PSN=%u", ip_str(p, true).c_str(), p.udp.sport,
            ip_str(p, false).c_str(), p.udp.dport, info.name, b.dqpn, b.psn);
    if (b.ack_req) s += " A";
    if (b.se) s += " SE";
    if (info.has(Ext::DETH)) appendf(s, " DETH qkey=0x%x srcqp=0x%06x", p.hdr.deth.qkey, p.hdr.deth.src_qp);
    if (info.has(Ext::FETH))
        appendf(s, " FETH sel=%u plt=%u", unsigned{p.hdr.feth.selectivity}, unsigned{p.hdr.feth.placement});
    if (info.has(Ext::RETH))
        appendf(s, " RETH va=0x%" PRIx64 " rkey=0x%x len=%u", p.hdr.reth.va, p.hdr.reth.rkey,
                p.hdr.reth.dma_len);
    if (info.has(Ext::AtomicETH))
        appendf(s, " AtomicETH va=0x%" PRIx64 " rkey=0x%x swap_add=0x%" PRIx64 " cmp=0x%" PRIx64,
                p.hdr.atomic.va, p.hdr.atomic.rkey, p.hdr.atomic.swap_add, p.hdr.atomic.compare);
    if (info.has(Ext::AETH))
        appendf(s, " AETH %s MSN=%u", describe_syndrome(p.hdr.aeth.syndrome).c_str(), p.hdr.aeth.msn);
    if (info.has(Ext::AtomicAckETH)) appendf(s, " orig=0x%" PRIx64, p.hdr.atomic_ack.orig);
    if (info.has(Ext::ImmDt)) appendf(s, " imm=0x%08x", p.hdr.imm);
    if (info.has(Ext::IETH)) appendf(s, " inv_rkey=0x%x", p.hdr.ieth_rkey);
    if (info.has(kPayload)) appendf(s, " payload=%zu", p.payload_len);
    s += " " + icrc_verdict(p, r);
    return s;
}

std::string describe_verbose(const Packet& p, const DecodeResult& r) {
    std::string s = describe_brief(p, r);
    if (!r.ok() && r.error != DecodeError::BadIcrc) return s;
    s += "\n";
    appendf(s, "  Ethernet: dst %s src %s", mac_str(p.eth.dst).c_str(), mac_str(p.eth.src).c_str());
    if (p.eth.has_vlan)
        appendf(s, " 802.1Q pcp %u dei %u vid %u", p.eth.vlan_tci >> 13, (p.eth.vlan_tci >> 12) & 1,
                p.eth.vlan_tci & 0xfff);
    appendf(s, " type 0x%04x\n", p.eth.ethertype);
    if (p.ip_version == IpVersion::V4) {
        const Ipv4Hdr& h = p.ip4;
        appendf(s, "  IPv4: %s > %s ihl %u tos 0x%02x len %u id 0x%04x flags%s%s off %u ttl %u proto %u csum 0x%04x\n",
                ip_str(p, true).c_str(), ip_str(p, false).c_str(), h.ihl, h.tos, h.total_len, h.id,
                (h.frag & 0x4000) ? " DF" : "", (h.frag & 0x2000) ? " MF" : "", h.frag & 0x1fff, h.ttl,
                h.protocol, h.checksum);
    } else {
        const Ipv6Hdr& h = p.ip6;
        appendf(s, "  IPv6: %s > %s tclass 0x%02x flow 0x%05x plen %u nh %u hlim %u\n",
                ip_str(p, true).c_str(), ip_str(p, false).c_str(), h.traffic_class, h.flow_label,
                h.payload_len, h.next_header, h.hop_limit);
    }
    appendf(s, "  UDP: sport %u dport %u len %u csum 0x%04x\n", p.udp.sport, p.udp.dport, p.udp.length,
            p.udp.checksum);
    const Bth& b = p.hdr.bth;
    const OpcodeInfo& info = p.opinfo();
    appendf(s, "  BTH: opcode 0x%02x (%s) se %d m %d pad %u tver %u pkey 0x%04x fecn %d becn %d resv6 0x%02x dqpn 0x%06x a %d resv7 0x%02x psn %u\n",
            b.opcode, info.name, b.se, b.mig, b.pad, b.tver, b.pkey, b.fecn, b.becn, b.resv6, b.dqpn,
            b.ack_req, b.resv7, b.psn);
    const TransportHdrs& h = p.hdr;
    if (info.has(Ext::DETH))
        appendf(s, "  DETH: qkey 0x%08x resv 0x%02x srcqp 0x%06x\n", h.deth.qkey, h.deth.resv8, h.deth.src_qp);
    if (info.has(Ext::FETH))
        appendf(s, "  FETH: resv 0x%07x selectivity %u placement %u\n", h.feth.resv,
                unsigned{h.feth.selectivity}, unsigned{h.feth.placement});
    if (info.has(Ext::RETH))
        appendf(s, "  RETH: va 0x%016" PRIx64 " rkey 0x%08x dmalen %u\n", h.reth.va, h.reth.rkey, h.reth.dma_len);
    if (info.has(Ext::AtomicETH))
        appendf(s, "  AtomicETH: va 0x%016" PRIx64 " rkey 0x%08x swap_add 0x%016" PRIx64 " compare 0x%016" PRIx64 "\n",
                h.atomic.va, h.atomic.rkey, h.atomic.swap_add, h.atomic.compare);
    if (info.has(Ext::AETH))
        appendf(s, "  AETH: syndrome 0x%02x (%s) msn %u\n", h.aeth.syndrome,
                describe_syndrome(h.aeth.syndrome).c_str(), h.aeth.msn);
    if (info.has(Ext::AtomicAckETH)) appendf(s, "  AtomicAckETH: orig 0x%016" PRIx64 "\n", h.atomic_ack.orig);
    if (info.has(Ext::ImmDt)) appendf(s, "  ImmDt: 0x%08x\n", h.imm);
    if (info.has(Ext::IETH)) appendf(s, "  IETH: rkey 0x%08x\n", h.ieth_rkey);
    appendf(s, "  Payload: %zu bytes at offset %zu, pad %u\n", p.payload_len, p.payload_off, b.pad);
    s += "  " + icrc_verdict(p, r);
    return s;
}

}  // namespace simnic::roce
