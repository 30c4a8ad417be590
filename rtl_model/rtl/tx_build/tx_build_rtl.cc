#include "tx_build_rtl.h"

#include <algorithm>

#include "Vroce_tx_build.h"
#include "Vroce_tx_build___024root.h"
#include "own_tx_build.h"
#include "simnic/roce/packet.h"
#include "tx_build_driver.h"

namespace simnic::rtl {

bool tx_header_desc(const roce::Packet& p, TxHeaderDesc& d) {
    const roce::OpcodeInfo& info = p.opinfo();
    const roce::TransportHdrs& h = p.hdr;
    // What the interface has no port for must be what the RTL writes: 0.
    if (!info.valid() || p.payload_len > 0xffff || p.udp.checksum != 0 || h.bth.tver != 0 || h.bth.resv6 != 0 ||
        h.bth.resv7 != 0 || h.deth.resv8 != 0 || h.feth.resv != 0 ||
        std::any_of(h.cnp_resv.begin(), h.cnp_resv.end(), [](uint8_t b) { return b != 0; }))
        return false;
    d = TxHeaderDesc{};
    d.dmac = p.eth.dst;
    d.smac = p.eth.src;
    d.has_vlan = p.eth.has_vlan;
    d.vlan_tci = p.eth.vlan_tci;
    if (p.ip_version == roce::IpVersion::V4) {
        if (p.ip4.ihl != 5) return false;
        d.ip_version = 4;
        d.ip_tos = p.ip4.tos;
        d.ip_ttl = p.ip4.ttl;
        d.ip_id = p.ip4.id;
        d.ip_frag = p.ip4.frag;
        d.src_ip[10] = d.src_ip[11] = d.dst_ip[10] = d.dst_ip[11] = 0xff;  // IPv4-mapped
        for (int k = 0; k < 4; ++k) {
            d.src_ip[size_t(12 + k)] = uint8_t(p.ip4.src >> (24 - 8 * k));
            d.dst_ip[size_t(12 + k)] = uint8_t(p.ip4.dst >> (24 - 8 * k));
        }
    } else {
        d.ip_version = 6;
        d.ip_tos = p.ip6.traffic_class;
        d.ip_ttl = p.ip6.hop_limit;
        d.ip_flow_label = p.ip6.flow_label & 0xfffff;
        d.src_ip = p.ip6.src;
        d.dst_ip = p.ip6.dst;
    }
    d.udp_sport = p.udp.sport;
    d.udp_dport = p.udp.dport;
    d.opcode = h.bth.opcode;
    d.se = h.bth.se;
    d.mig = h.bth.mig;
    d.pkey = h.bth.pkey;
    d.fecn = h.bth.fecn;
    d.becn = h.bth.becn;
    d.dqpn = h.bth.dqpn;
    d.ack_req = h.bth.ack_req;
    d.psn = h.bth.psn;
    d.deth_qkey = h.deth.qkey;
    d.deth_src_qp = h.deth.src_qp;
    d.feth_placement = h.feth.placement;
    d.feth_selectivity = h.feth.selectivity;
    d.reth_va = h.reth.va;
    d.reth_rkey = h.reth.rkey;
    d.reth_dma_len = h.reth.dma_len;
    d.atomic_va = h.atomic.va;
    d.atomic_rkey = h.atomic.rkey;
    d.atomic_swap_add = h.atomic.swap_add;
    d.atomic_compare = h.atomic.compare;
    d.aeth_syndrome = h.aeth.syndrome;
    d.aeth_msn = h.aeth.msn;
    d.atomic_ack_orig = h.atomic_ack.orig;
    d.imm = h.imm;
    d.ieth_rkey = h.ieth_rkey;
    d.payload_len = uint16_t(p.payload_len);
    return true;
}

bool tx_header_desc_of_frame(const uint8_t* frame, size_t len, TxHeaderDesc& d, size_t* hdr_len) {
    roce::Packet p;
    roce::DecodeOptions o;
    o.check_icrc = false;
    o.check_ip_checksum = false;  // the RTL computes it: a wrong one is a mismatch, not a skip
    if (!roce::decode_frame(frame, len, p, o) || !tx_header_desc(p, d)) return false;
    if (hdr_len) *hdr_len = p.payload_off;
    return true;
}

// The built-in design is verilated at kBeatBytes (CMakeLists.txt, DataWidth=512).
static_assert(TxBuildDriver<Vroce_tx_build, true>::kBeatBytes == TxBuildRtl::kBeatBytes);

TxBuildRtl::TxBuildRtl() : impl_(std::make_unique<TxBuildDriver<Vroce_tx_build, true>>()) {}
TxBuildRtl::TxBuildRtl(const OwnRtl& own, OwnRtlBuildInfo* info) : impl_(load_own_tx_build(own, info)) {}
TxBuildRtl::~TxBuildRtl() = default;

TxBuildResult TxBuildRtl::build(const TxHeaderDesc& d, const HoldFn& hold) { return impl_->build(d, hold); }
uint64_t TxBuildRtl::cycles() const { return impl_->cycles(); }
size_t TxBuildRtl::beat_bytes() const { return impl_->beat_bytes(); }

}  // namespace simnic::rtl
