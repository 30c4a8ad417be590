#include "req_seg_interface.h"

namespace simnic::rtl {

const std::vector<PortSpec>& req_seg_ports() {
    constexpr PortDir In = PortDir::In, Out = PortDir::Out;
    static const std::vector<PortSpec> ports = {
        {"clk_i", In, 1, 0, "the pipeline clock (`clock.freq_mhz`)"},
        {"rst_ni", In, 1, 0, "active-low reset: held low 3 cycles, then high for 1, before the first descriptor"},
        {"s_valid_i", In, 1, 0, "a WQE descriptor is on the `s_*` ports (held until taken)"},
        {"s_ready_o", Out, 1, 0,
         "the block takes the descriptor on this edge (low: the requester waits, and the model counts it)"},
        {"s_qp_type_i", In, 3, 0, "QP type as `hw::QpType`: 2 RC, 3 UC, 4 UD"},
        {"s_wr_opcode_i", In, 4, 0,
         "work request opcode as `hw::WrOpcode`: 0 WRITE, 1 WRITE_WITH_IMM, 2 SEND, 3 SEND_WITH_IMM, 4 READ, "
         "5 CMP_AND_SWP, 6 FETCH_AND_ADD, 9 SEND_WITH_INV, 14 FLUSH, 15 ATOMIC_WRITE"},
        {"s_length_i", In, 32, 0, "message bytes (at most 2^31); FLUSH: its flush length (the RETH's DMA length)"},
        {"s_first_psn_i", In, 24, 0, "the WQE's first PSN"},
        {"s_pmtu_i", In, 3, 0, "path MTU as IBA encodes it: 1 = 256, 2 = 512, 3 = 1024, 4 = 2048, 5 = 4096 bytes"},
        {"s_remote_addr_i", In, 64, 0, "remote virtual address of the message's first byte"},
        {"s_rkey_i", In, 32, 0, "remote key"},
        {"s_solicited_i", In, 1, 0, "IBV_SEND_SOLICITED: SE on the message's last packet"},
        {"s_start_pkt_i", In, 24, 0, "the first packet to make (0; a retry resumes mid-message)"},
        {"s_count_i", In, 24, 0,
         "packets to make from it (at least 1; the window and the rate limiter may grant fewer than the "
         "message's; a READ makes one)"},
        {"s_noack_i", In, 7, 0, "the QP's request packets sent without AckReq since the last one with it (RC)"},
        {"m_valid_o", Out, 1, 0, "a packet descriptor is on the `m_*` ports"},
        {"m_ready_i", In, 1, 0, "the requester takes it on this edge; low while the requester's queue to TX build is full (the block "
         "must hold its descriptor; the low edges are the requester's stall)"},
        {"m_opcode_o", Out, 8, 0, "BTH opcode (FIRST/MIDDLE/LAST/ONLY of the WQE's operation, in the QP type's range)"},
        {"m_psn_o", Out, 24, 0, "BTH PSN: the WQE's first PSN plus the packet's index"},
        {"m_payload_off_o", Out, 32, 0, "where the packet's payload starts in the message: index * PMTU"},
        {"m_payload_len_o", Out, 13, 0, "its payload bytes, at most the PMTU (0: none, as a READ request)"},
        {"m_reth_o", Out, 1, 0, "the opcode carries a RETH"},
        {"m_reth_va_o", Out, 64, 0, "RETH virtual address: the remote address plus the payload offset (0 without)"},
        {"m_reth_rkey_o", Out, 32, 0, "RETH R_Key (0 without)"},
        {"m_reth_dma_len_o", Out, 32, 0,
         "RETH DMA length: the message's bytes, a READ's from the packet's offset on (0 without)"},
        {"m_ack_req_o", Out, 1, 0, "BTH AckReq: an RC request's last packet, and the 66th without one"},
        {"m_se_o", Out, 1, 0, "BTH solicited event"},
        {"m_last_o", Out, 1, 0, "the transaction's last packet descriptor (the `s_count_i`th)"},
    };
    return ports;
}

}  // namespace simnic::rtl
