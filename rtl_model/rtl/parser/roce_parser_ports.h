// Reading a Verilated roce_parser's m_* ports into a HeaderVector, for the
// testbench (any DataWidth) and the simnic_rtl_parser wrapper (512). The
// port list is roce_parser.sv's; what each field means is header_vector.h's.
#pragma once

#include <cstddef>
#include <cstdint>

#include "axis_top.h"
#include "simnic/roce/header_vector.h"

namespace simnic::rtl {

// Clock edges from the edge that accepts a frame's last beat to the edge
// after which m_valid_o is high for it, with m_ready_i high (roce_parser.sv,
// localparam Latency).
inline constexpr uint64_t kRoceParserLatency = 3;

// A 128-bit port (Verilator: four 32-bit words, word 0 = bits 31:0) as 16
// bytes, most significant first.
template <typename Wide> roce::Ipv6Addr wide128_to_bytes(const Wide& w) {
    roce::Ipv6Addr a{};
    for (size_t i = 0; i < 16; ++i) {
        const size_t bit = 8 * (15 - i);
        a[i] = static_cast<uint8_t>(w[bit / 32] >> (bit % 32));
    }
    return a;
}

// The record on the output ports (meaningful while m_valid_o is high).
template <typename V> roce::HeaderVector read_header_vector(const V& top) {
    roce::HeaderVector h;
    h.verdict = static_cast<roce::ParseVerdict>(top.m_verdict_o);
    h.has_vlan = top.m_has_vlan_o;
    h.vlan_tci = static_cast<uint16_t>(top.m_vlan_tci_o);
    h.ip_version = static_cast<uint8_t>(top.m_ip_version_o);
    h.src_ip = wide128_to_bytes(top.m_src_ip_o);
    h.dst_ip = wide128_to_bytes(top.m_dst_ip_o);
    h.udp_sport = static_cast<uint16_t>(top.m_udp_sport_o);
    h.opcode = static_cast<uint8_t>(top.m_opcode_o);
    h.se = top.m_se_o;
    h.mig = top.m_mig_o;
    h.pad = static_cast<uint8_t>(top.m_pad_o);
    h.pkey = static_cast<uint16_t>(top.m_pkey_o);
    h.fecn = top.m_fecn_o;
    h.becn = top.m_becn_o;
    h.dqpn = static_cast<uint32_t>(top.m_dqpn_o);
    h.ack_req = top.m_ack_req_o;
    h.psn = static_cast<uint32_t>(top.m_psn_o);
    h.op_mask = static_cast<uint32_t>(top.m_op_mask_o);
    h.deth_qkey = static_cast<uint32_t>(top.m_deth_qkey_o);
    h.deth_src_qp = static_cast<uint32_t>(top.m_deth_src_qp_o);
    h.reth_va = static_cast<uint64_t>(top.m_reth_va_o);
    h.reth_rkey = static_cast<uint32_t>(top.m_reth_rkey_o);
    h.reth_dma_len = static_cast<uint32_t>(top.m_reth_dma_len_o);
    h.atomic_va = static_cast<uint64_t>(top.m_atomic_va_o);
    h.atomic_rkey = static_cast<uint32_t>(top.m_atomic_rkey_o);
    h.atomic_swap_add = static_cast<uint64_t>(top.m_atomic_swap_add_o);
    h.atomic_compare = static_cast<uint64_t>(top.m_atomic_compare_o);
    h.aeth_syndrome = static_cast<uint8_t>(top.m_aeth_syndrome_o);
    h.aeth_msn = static_cast<uint32_t>(top.m_aeth_msn_o);
    h.atomic_ack_orig = static_cast<uint64_t>(top.m_atomic_ack_orig_o);
    h.imm = static_cast<uint32_t>(top.m_imm_o);
    h.ieth_rkey = static_cast<uint32_t>(top.m_ieth_rkey_o);
    h.l3_off = static_cast<uint16_t>(top.m_l3_off_o);
    h.l4_off = static_cast<uint16_t>(top.m_l4_off_o);
    h.bth_off = static_cast<uint16_t>(top.m_bth_off_o);
    h.payload_off = static_cast<uint16_t>(top.m_payload_off_o);
    h.payload_len = static_cast<uint16_t>(top.m_payload_len_o);
    return h;
}

}  // namespace simnic::rtl
