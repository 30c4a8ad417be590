#include "roce_parser_interface.h"

namespace simnic::rtl {

const std::vector<PortSpec>& roce_parser_ports() {
    constexpr PortDir In = PortDir::In, Out = PortDir::Out;
    static const std::vector<PortSpec> ports = {
        {"clk_i", In, 1, 0, "the pipeline clock (`clock.freq_mhz`)"},
        {"rst_ni", In, 1, 0, "active-low reset: held low 3 cycles, then high for 1, before the first beat"},
        {"s_axis_tdata_i", In, 0, 1,
         "a beat of the frame; byte lane 0 (bits 7:0) is the first byte on the wire; Ethernet frame without FCS"},
        {"s_axis_tkeep_i", In, 0, 8, "valid lanes, contiguous from lane 0; all ones but on the last beat"},
        {"s_axis_tvalid_i", In, 1, 0, "the beat is valid"},
        {"s_axis_tlast_i", In, 1, 0, "the frame's last beat"},
        {"s_axis_tready_o", Out, 1, 0,
         "the block takes the beat on this edge (low: the stage stalls, and the model counts it as busy)"},
        {"m_valid_o", Out, 1, 0, "the frame's header vector is on the `m_*` ports (one per frame, in frame order)"},
        {"m_ready_i", In, 1, 0, "the stage takes the header vector; low while the queue to the ICRC check is full (the header vector "
                                  "must stay on the port unchanged; the low edges are the parser's stall)"},
        {"m_verdict_o", Out, 4, 0, "`roce::ParseVerdict`: 0 accept, else the drop reason (`VERDICT_*`)"},
        {"m_has_vlan_o", Out, 1, 0, "one 802.1Q tag precedes the ethertype"},
        {"m_vlan_tci_o", Out, 16, 0, "its TCI (0 without a tag)"},
        {"m_ip_version_o", Out, 4, 0, "4 or 6"},
        {"m_src_ip_o", Out, 128, 0, "source address, IPv4 as IPv4-mapped (low 32 bits)"},
        {"m_dst_ip_o", Out, 128, 0, "destination address, as `m_src_ip_o`"},
        {"m_udp_sport_o", Out, 16, 0, "UDP source port"},
        {"m_opcode_o", Out, 8, 0, "BTH opcode"},
        {"m_se_o", Out, 1, 0, "BTH solicited event"},
        {"m_mig_o", Out, 1, 0, "BTH migration state"},
        {"m_pad_o", Out, 2, 0, "BTH pad count"},
        {"m_pkey_o", Out, 16, 0, "BTH partition key"},
        {"m_fecn_o", Out, 1, 0, "BTH FECN"},
        {"m_becn_o", Out, 1, 0, "BTH BECN"},
        {"m_dqpn_o", Out, 24, 0, "BTH destination QP"},
        {"m_ack_req_o", Out, 1, 0, "BTH acknowledge request"},
        {"m_psn_o", Out, 24, 0, "BTH PSN"},
        {"m_op_mask_o", Out, 32, 0, "the opcode's entry in the opcode table (`OpcodeInfo::mask`)"},
        {"m_deth_qkey_o", Out, 32, 0, "DETH Q_Key"},
        {"m_deth_src_qp_o", Out, 24, 0, "DETH source QP"},
        {"m_reth_va_o", Out, 64, 0, "RETH virtual address"},
        {"m_reth_rkey_o", Out, 32, 0, "RETH R_Key"},
        {"m_reth_dma_len_o", Out, 32, 0, "RETH DMA length"},
        {"m_atomic_va_o", Out, 64, 0, "AtomicETH virtual address"},
        {"m_atomic_rkey_o", Out, 32, 0, "AtomicETH R_Key"},
        {"m_atomic_swap_add_o", Out, 64, 0, "AtomicETH swap or add data"},
        {"m_atomic_compare_o", Out, 64, 0, "AtomicETH compare data"},
        {"m_aeth_syndrome_o", Out, 8, 0, "AETH syndrome"},
        {"m_aeth_msn_o", Out, 24, 0, "AETH MSN"},
        {"m_atomic_ack_orig_o", Out, 64, 0, "AtomicAckETH original remote data"},
        {"m_imm_o", Out, 32, 0, "ImmDt"},
        {"m_ieth_rkey_o", Out, 32, 0, "IETH R_Key to invalidate"},
        {"m_l3_off_o", Out, 8, 0, "offset of the IP header in the frame, bytes"},
        {"m_l4_off_o", Out, 8, 0, "offset of the UDP header"},
        {"m_bth_off_o", Out, 8, 0, "offset of the BTH"},
        {"m_payload_off_o", Out, 8, 0, "offset of the payload"},
        {"m_payload_len_o", Out, 16, 0, "payload bytes (pad and ICRC excluded)"},
    };
    return ports;
}

}  // namespace simnic::rtl
