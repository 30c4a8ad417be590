// A worked example of a parser with a planted bug (docs/model.md, Your own
// RTL): roce_parser, but on an RC SEND Only packet (opcode 0x04) the PSN
// comes out with bit 0 inverted. Swapped in with
// `parser.impl = "rtl_example_buggy"`, the model counts every such header
// vector as a mismatch with the C++ twin (rtl.parser_mismatches) and dumps
// the first ones with their frame (tested). Timing: roce_parser's.
module roce_parser_buggy
#(
  parameter int unsigned DataWidth = 512
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,

  // Frame stream: as roce_parser's.
  input  logic [DataWidth-1:0]   s_axis_tdata_i,
  input  logic [DataWidth/8-1:0] s_axis_tkeep_i,
  input  logic                   s_axis_tvalid_i,
  input  logic                   s_axis_tlast_i,
  output logic                   s_axis_tready_o,

  // Header vector, one per frame: as roce_parser's.
  output logic                   m_valid_o,
  input  logic                   m_ready_i,
  output logic [3:0]            m_verdict_o,
  output logic                  m_has_vlan_o,
  output logic [15:0]           m_vlan_tci_o,
  output logic [3:0]            m_ip_version_o,
  output logic [127:0]          m_src_ip_o,
  output logic [127:0]          m_dst_ip_o,
  output logic [15:0]           m_udp_sport_o,
  output logic [7:0]            m_opcode_o,
  output logic                  m_se_o,
  output logic                  m_mig_o,
  output logic [1:0]            m_pad_o,
  output logic [15:0]           m_pkey_o,
  output logic                  m_fecn_o,
  output logic                  m_becn_o,
  output logic [23:0]           m_dqpn_o,
  output logic                  m_ack_req_o,
  output logic [23:0]           m_psn_o,
  output logic [31:0]           m_op_mask_o,
  output logic [31:0]           m_deth_qkey_o,
  output logic [23:0]           m_deth_src_qp_o,
  output logic [63:0]           m_reth_va_o,
  output logic [31:0]           m_reth_rkey_o,
  output logic [31:0]           m_reth_dma_len_o,
  output logic [63:0]           m_atomic_va_o,
  output logic [31:0]           m_atomic_rkey_o,
  output logic [63:0]           m_atomic_swap_add_o,
  output logic [63:0]           m_atomic_compare_o,
  output logic [7:0]            m_aeth_syndrome_o,
  output logic [23:0]           m_aeth_msn_o,
  output logic [63:0]           m_atomic_ack_orig_o,
  output logic [31:0]           m_imm_o,
  output logic [31:0]           m_ieth_rkey_o,
  output logic [7:0]            m_l3_off_o,
  output logic [7:0]            m_l4_off_o,
  output logic [7:0]            m_bth_off_o,
  output logic [7:0]            m_payload_off_o,
  output logic [15:0]           m_payload_len_o
);
  localparam logic [7:0] RcSendOnly = 8'h04;


  logic p_valid, p_ready;
  logic [3:0]     p_verdict;
  logic           p_has_vlan;
  logic [15:0]    p_vlan_tci;
  logic [3:0]     p_ip_version;
  logic [127:0]   p_src_ip;
  logic [127:0]   p_dst_ip;
  logic [15:0]    p_udp_sport;
  logic [7:0]     p_opcode;
  logic           p_se;
  logic           p_mig;
  logic [1:0]     p_pad;
  logic [15:0]    p_pkey;
  logic           p_fecn;
  logic           p_becn;
  logic [23:0]    p_dqpn;
  logic           p_ack_req;
  logic [23:0]    p_psn;
  logic [31:0]    p_op_mask;
  logic [31:0]    p_deth_qkey;
  logic [23:0]    p_deth_src_qp;
  logic [63:0]    p_reth_va;
  logic [31:0]    p_reth_rkey;
  logic [31:0]    p_reth_dma_len;
  logic [63:0]    p_atomic_va;
  logic [31:0]    p_atomic_rkey;
  logic [63:0]    p_atomic_swap_add;
  logic [63:0]    p_atomic_compare;
  logic [7:0]     p_aeth_syndrome;
  logic [23:0]    p_aeth_msn;
  logic [63:0]    p_atomic_ack_orig;
  logic [31:0]    p_imm;
  logic [31:0]    p_ieth_rkey;
  logic [7:0]     p_l3_off;
  logic [7:0]     p_l4_off;
  logic [7:0]     p_bth_off;
  logic [7:0]     p_payload_off;
  logic [15:0]    p_payload_len;

  roce_parser #(.DataWidth(DataWidth)) u_parser (
    .clk_i, .rst_ni,
    .s_axis_tdata_i, .s_axis_tkeep_i, .s_axis_tvalid_i, .s_axis_tlast_i, .s_axis_tready_o,
    .m_valid_o(p_valid), .m_ready_i(p_ready),
    .m_verdict_o(p_verdict),
    .m_has_vlan_o(p_has_vlan),
    .m_vlan_tci_o(p_vlan_tci),
    .m_ip_version_o(p_ip_version),
    .m_src_ip_o(p_src_ip),
    .m_dst_ip_o(p_dst_ip),
    .m_udp_sport_o(p_udp_sport),
    .m_opcode_o(p_opcode),
    .m_se_o(p_se),
    .m_mig_o(p_mig),
    .m_pad_o(p_pad),
    .m_pkey_o(p_pkey),
    .m_fecn_o(p_fecn),
    .m_becn_o(p_becn),
    .m_dqpn_o(p_dqpn),
    .m_ack_req_o(p_ack_req),
    .m_psn_o(p_psn),
    .m_op_mask_o(p_op_mask),
    .m_deth_qkey_o(p_deth_qkey),
    .m_deth_src_qp_o(p_deth_src_qp),
    .m_reth_va_o(p_reth_va),
    .m_reth_rkey_o(p_reth_rkey),
    .m_reth_dma_len_o(p_reth_dma_len),
    .m_atomic_va_o(p_atomic_va),
    .m_atomic_rkey_o(p_atomic_rkey),
    .m_atomic_swap_add_o(p_atomic_swap_add),
    .m_atomic_compare_o(p_atomic_compare),
    .m_aeth_syndrome_o(p_aeth_syndrome),
    .m_aeth_msn_o(p_aeth_msn),
    .m_atomic_ack_orig_o(p_atomic_ack_orig),
    .m_imm_o(p_imm),
    .m_ieth_rkey_o(p_ieth_rkey),
    .m_l3_off_o(p_l3_off),
    .m_l4_off_o(p_l4_off),
    .m_bth_off_o(p_bth_off),
    .m_payload_off_o(p_payload_off),
    .m_payload_len_o(p_payload_len)
  );

  assign m_valid_o = p_valid;
  assign p_ready   = m_ready_i;
  // The planted bug.
  assign m_psn_o   = p_opcode == RcSendOnly ? p_psn ^ 24'h1 : p_psn;

  assign m_verdict_o = p_verdict;
  assign m_has_vlan_o = p_has_vlan;
  assign m_vlan_tci_o = p_vlan_tci;
  assign m_ip_version_o = p_ip_version;
  assign m_src_ip_o = p_src_ip;
  assign m_dst_ip_o = p_dst_ip;
  assign m_udp_sport_o = p_udp_sport;
  assign m_opcode_o = p_opcode;
  assign m_se_o = p_se;
  assign m_mig_o = p_mig;
  assign m_pad_o = p_pad;
  assign m_pkey_o = p_pkey;
  assign m_fecn_o = p_fecn;
  assign m_becn_o = p_becn;
  assign m_dqpn_o = p_dqpn;
  assign m_ack_req_o = p_ack_req;
  assign m_op_mask_o = p_op_mask;
  assign m_deth_qkey_o = p_deth_qkey;
  assign m_deth_src_qp_o = p_deth_src_qp;
  assign m_reth_va_o = p_reth_va;
  assign m_reth_rkey_o = p_reth_rkey;
  assign m_reth_dma_len_o = p_reth_dma_len;
  assign m_atomic_va_o = p_atomic_va;
  assign m_atomic_rkey_o = p_atomic_rkey;
  assign m_atomic_swap_add_o = p_atomic_swap_add;
  assign m_atomic_compare_o = p_atomic_compare;
  assign m_aeth_syndrome_o = p_aeth_syndrome;
  assign m_aeth_msn_o = p_aeth_msn;
  assign m_atomic_ack_orig_o = p_atomic_ack_orig;
  assign m_imm_o = p_imm;
  assign m_ieth_rkey_o = p_ieth_rkey;
  assign m_l3_off_o = p_l3_off;
  assign m_l4_off_o = p_l4_off;
  assign m_bth_off_o = p_bth_off;
  assign m_payload_off_o = p_payload_off;
  assign m_payload_len_o = p_payload_len;

endmodule
