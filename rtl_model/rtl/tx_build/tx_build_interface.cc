#include "tx_build_interface.h"

namespace simnic::rtl {

const std::vector<PortSpec>& tx_build_ports() {
    constexpr PortDir In = PortDir::In, Out = PortDir::Out;
    static const std::vector<PortSpec> ports = {
        {"clk_i", In, 1, 0, "the pipeline clock (`clock.freq_mhz`)"},
        {"rst_ni", In, 1, 0, "active-low reset: held low 3 cycles, then high for 1, before the first descriptor"},
        {"s_valid_i", In, 1, 0, "a frame's header descriptor is on the `s_*` ports (held until taken)"},
        {"s_ready_o", Out, 1, 0,
         "the block takes the descriptor on this edge (low: the stage stalls, and the model counts it as busy)"},
        {"s_dmac_i", In, 48, 0, "Ethernet destination MAC, its first byte on the wire in bits 47:40"},
        {"s_smac_i", In, 48, 0, "Ethernet source MAC, as `s_dmac_i`"},
        {"s_has_vlan_i", In, 1, 0, "an 802.1Q tag (TPID 0x8100) follows the MACs"},
        {"s_vlan_tci_i", In, 16, 0, "its TCI"},
        {"s_ip_version_i", In, 4, 0, "4 or 6 (the ethertype follows it)"},
        {"s_ip_tos_i", In, 8, 0, "IPv4 TOS, IPv6 traffic class (DSCP and ECN)"},
        {"s_ip_ttl_i", In, 8, 0, "IPv4 TTL, IPv6 hop limit"},
        {"s_ip_id_i", In, 16, 0, "IPv4 identification"},
        {"s_ip_frag_i", In, 16, 0, "IPv4 flags and fragment offset (0x4000: DF)"},
        {"s_ip_flow_label_i", In, 20, 0, "IPv6 flow label"},
        {"s_src_ip_i", In, 128, 0, "source address, IPv4 in the low 32 bits"},
        {"s_dst_ip_i", In, 128, 0, "destination address, as `s_src_ip_i`"},
        {"s_udp_sport_i", In, 16, 0, "UDP source port"},
        {"s_udp_dport_i", In, 16, 0, "UDP destination port (4791)"},
        {"s_opcode_i", In, 8, 0, "BTH opcode: which extension headers follow (the opcode table)"},
        {"s_se_i", In, 1, 0, "BTH solicited event"},
        {"s_mig_i", In, 1, 0, "BTH migration state"},
        {"s_pkey_i", In, 16, 0, "BTH partition key"},
        {"s_fecn_i", In, 1, 0, "BTH FECN"},
        {"s_becn_i", In, 1, 0, "BTH BECN"},
        {"s_dqpn_i", In, 24, 0, "BTH destination QP"},
        {"s_ack_req_i", In, 1, 0, "BTH acknowledge request"},
        {"s_psn_i", In, 24, 0, "BTH PSN"},
        {"s_deth_qkey_i", In, 32, 0, "DETH Q_Key"},
        {"s_deth_src_qp_i", In, 24, 0, "DETH source QP"},
        {"s_feth_placement_i", In, 4, 0, "FETH placement type"},
        {"s_feth_selectivity_i", In, 2, 0, "FETH selectivity level"},
        {"s_reth_va_i", In, 64, 0, "RETH virtual address"},
        {"s_reth_rkey_i", In, 32, 0, "RETH R_Key"},
        {"s_reth_dma_len_i", In, 32, 0, "RETH DMA length"},
        {"s_atomic_va_i", In, 64, 0, "AtomicETH virtual address"},
        {"s_atomic_rkey_i", In, 32, 0, "AtomicETH R_Key"},
        {"s_atomic_swap_add_i", In, 64, 0, "AtomicETH swap or add data"},
        {"s_atomic_compare_i", In, 64, 0, "AtomicETH compare data"},
        {"s_aeth_syndrome_i", In, 8, 0, "AETH syndrome"},
        {"s_aeth_msn_i", In, 24, 0, "AETH MSN"},
        {"s_atomic_ack_orig_i", In, 64, 0, "AtomicAckETH original remote data"},
        {"s_imm_i", In, 32, 0, "ImmDt"},
        {"s_ieth_rkey_i", In, 32, 0, "IETH R_Key to invalidate"},
        {"s_payload_len_i", In, 16, 0,
         "payload bytes (pad and ICRC excluded): the IP and UDP lengths and the BTH pad count follow from it"},
        {"m_axis_tdata_o", Out, 0, 1,
         "a beat of the header; byte lane 0 (bits 7:0) is the first byte on the wire, the frame's first byte on "
         "the first beat"},
        {"m_axis_tkeep_o", Out, 0, 8, "valid lanes, contiguous from lane 0; all ones but on the last beat"},
        {"m_axis_tvalid_o", Out, 1, 0, "the beat is valid"},
        {"m_axis_tlast_o", Out, 1, 0, "the header's last beat (its last byte is the last extension header's)"},
        {"m_axis_tready_i", In, 1, 0,
         "the stage takes the beat on this edge; low on the first beat while the queue to MAC TX is full (the beat "
         "must stay on the port unchanged; the low edges are TX build's stall)"},
    };
    return ports;
}

}  // namespace simnic::rtl
