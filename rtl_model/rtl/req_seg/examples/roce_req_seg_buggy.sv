// A worked example of a segmentation block with a planted bug (docs/model.md,
// Your own RTL): roce_req_seg, but a message that fills its last packet
// exactly (a length that is a multiple of the PMTU) is segmented as if it
// were one byte longer, as a packet count of `length / PMTU + 1` would make
// it: its last packet goes out as a MIDDLE and its RETH's DMA length is one
// too many. Named in the config as one's own design (req_seg.rtl_sources),
// the model counts every such WQE as a mismatch with the packets the
// datapath made (rtl.req_seg_mismatches), dumps the first ones and sends
// its packets' fields on the frames (tested).
// Timing: roce_req_seg's.
module roce_req_seg_buggy (
  input  logic        clk_i,
  input  logic        rst_ni,

  // WQE descriptor (docs/model.md, the requester segmentation stage).
  input  logic        s_valid_i,
  output logic        s_ready_o,
  input  logic [2:0]  s_qp_type_i,
  input  logic [3:0]  s_wr_opcode_i,
  input  logic [31:0] s_length_i,
  input  logic [23:0] s_first_psn_i,
  input  logic [2:0]  s_pmtu_i,
  input  logic [63:0] s_remote_addr_i,
  input  logic [31:0] s_rkey_i,
  input  logic        s_solicited_i,
  input  logic [23:0] s_start_pkt_i,
  input  logic [23:0] s_count_i,
  input  logic [6:0]  s_noack_i,

  // Packet descriptors.
  output logic        m_valid_o,
  input  logic        m_ready_i,
  output logic [7:0]  m_opcode_o,
  output logic [23:0] m_psn_o,
  output logic [31:0] m_payload_off_o,
  output logic [12:0] m_payload_len_o,
  output logic        m_reth_o,
  output logic [63:0] m_reth_va_o,
  output logic [31:0] m_reth_rkey_o,
  output logic [31:0] m_reth_dma_len_o,
  output logic        m_ack_req_o,
  output logic        m_se_o,
  output logic        m_last_o
);
  // The bug: a whole number of PMTUs counts as one byte more.
  logic [31:0] mtu_mask, length;
  assign mtu_mask = (32'd128 << s_pmtu_i) - 32'd1;
  assign length   = (s_length_i != '0 && (s_length_i & mtu_mask) == '0) ? s_length_i + 32'd1 : s_length_i;

  roce_req_seg u_seg (
    .clk_i, .rst_ni,
    .s_valid_i, .s_ready_o, .s_qp_type_i, .s_wr_opcode_i, .s_length_i(length), .s_first_psn_i, .s_pmtu_i,
    .s_remote_addr_i, .s_rkey_i, .s_solicited_i, .s_start_pkt_i, .s_count_i, .s_noack_i,
    .m_valid_o, .m_ready_i, .m_opcode_o, .m_psn_o, .m_payload_off_o, .m_payload_len_o, .m_reth_o, .m_reth_va_o,
    .m_reth_rkey_o, .m_reth_dma_len_o, .m_ack_req_o, .m_se_o, .m_last_o
  );

endmodule
