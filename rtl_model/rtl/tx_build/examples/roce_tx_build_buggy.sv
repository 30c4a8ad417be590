// A worked example of a TX header builder with a planted bug (docs/model.md,
// Your own RTL): roce_tx_build, but the BTH pad count of a padded packet
// (a payload that is not a multiple of 4 bytes) goes out as 0. Named in the
// config as one's own design (tx_build.rtl_sources), the model counts every
// such header as a mismatch with the frame the datapath built
// (rtl.tx_build_mismatches) and dumps the first ones with their frame
// (tested). Timing: roce_tx_build's.
module roce_tx_build_buggy
#(
  parameter int unsigned DataWidth = 512
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,

  // Header descriptor (docs/model.md, Your own RTL: what each field is).
  input  logic                   s_valid_i,
  output logic                   s_ready_o,
  input  logic [47:0]            s_dmac_i,
  input  logic [47:0]            s_smac_i,
  input  logic                   s_has_vlan_i,
  input  logic [15:0]            s_vlan_tci_i,
  input  logic [3:0]             s_ip_version_i,
  input  logic [7:0]             s_ip_tos_i,
  input  logic [7:0]             s_ip_ttl_i,
  input  logic [15:0]            s_ip_id_i,
  input  logic [15:0]            s_ip_frag_i,
  input  logic [19:0]            s_ip_flow_label_i,
  input  logic [127:0]           s_src_ip_i,
  input  logic [127:0]           s_dst_ip_i,
  input  logic [15:0]            s_udp_sport_i,
  input  logic [15:0]            s_udp_dport_i,
  input  logic [7:0]             s_opcode_i,
  input  logic                   s_se_i,
  input  logic                   s_mig_i,
  input  logic [15:0]            s_pkey_i,
  input  logic                   s_fecn_i,
  input  logic                   s_becn_i,
  input  logic [23:0]            s_dqpn_i,
  input  logic                   s_ack_req_i,
  input  logic [23:0]            s_psn_i,
  input  logic [31:0]            s_deth_qkey_i,
  input  logic [23:0]            s_deth_src_qp_i,
  input  logic [3:0]             s_feth_placement_i,
  input  logic [1:0]             s_feth_selectivity_i,
  input  logic [63:0]            s_reth_va_i,
  input  logic [31:0]            s_reth_rkey_i,
  input  logic [31:0]            s_reth_dma_len_i,
  input  logic [63:0]            s_atomic_va_i,
  input  logic [31:0]            s_atomic_rkey_i,
  input  logic [63:0]            s_atomic_swap_add_i,
  input  logic [63:0]            s_atomic_compare_i,
  input  logic [7:0]             s_aeth_syndrome_i,
  input  logic [23:0]            s_aeth_msn_i,
  input  logic [63:0]            s_atomic_ack_orig_i,
  input  logic [31:0]            s_imm_i,
  input  logic [31:0]            s_ieth_rkey_i,
  input  logic [15:0]            s_payload_len_i,

  // Header beats.
  output logic [DataWidth-1:0]   m_axis_tdata_o,
  output logic [DataWidth/8-1:0] m_axis_tkeep_o,
  output logic                   m_axis_tvalid_o,
  output logic                   m_axis_tlast_o,
  input  logic                   m_axis_tready_i
);
  localparam int unsigned BeatBytes = DataWidth / 8;

  logic [DataWidth-1:0] data;
  roce_tx_build #(.DataWidth(DataWidth)) u_ref (
    .clk_i,
    .rst_ni,
    .s_valid_i,
    .s_ready_o,
    .s_dmac_i,
    .s_smac_i,
    .s_has_vlan_i,
    .s_vlan_tci_i,
    .s_ip_version_i,
    .s_ip_tos_i,
    .s_ip_ttl_i,
    .s_ip_id_i,
    .s_ip_frag_i,
    .s_ip_flow_label_i,
    .s_src_ip_i,
    .s_dst_ip_i,
    .s_udp_sport_i,
    .s_udp_dport_i,
    .s_opcode_i,
    .s_se_i,
    .s_mig_i,
    .s_pkey_i,
    .s_fecn_i,
    .s_becn_i,
    .s_dqpn_i,
    .s_ack_req_i,
    .s_psn_i,
    .s_deth_qkey_i,
    .s_deth_src_qp_i,
    .s_feth_placement_i,
    .s_feth_selectivity_i,
    .s_reth_va_i,
    .s_reth_rkey_i,
    .s_reth_dma_len_i,
    .s_atomic_va_i,
    .s_atomic_rkey_i,
    .s_atomic_swap_add_i,
    .s_atomic_compare_i,
    .s_aeth_syndrome_i,
    .s_aeth_msn_i,
    .s_atomic_ack_orig_i,
    .s_imm_i,
    .s_ieth_rkey_i,
    .s_payload_len_i,
    .m_axis_tdata_o(data),
    .m_axis_tkeep_o,
    .m_axis_tvalid_o,
    .m_axis_tlast_o,
    .m_axis_tready_i
  );

  // Where the BTH's second byte (SE, M, PadCnt, TVer) is, and whether the
  // packet is padded: taken with the descriptor.
  logic       take, padded_q;
  logic [7:0] pad_byte_q;
  logic [1:0] beat_q;
  assign take = s_valid_i && s_ready_o;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      padded_q   <= 1'b0;
      pad_byte_q <= '0;
      beat_q     <= '0;
    end else if (take) begin
      padded_q   <= s_payload_len_i[1:0] != 2'd0;
      pad_byte_q <= (s_has_vlan_i ? 8'd18 : 8'd14) + (s_ip_version_i == 4'd6 ? 8'd40 : 8'd20) + 8'd8 + 8'd1;
      beat_q     <= '0;
    end else if (m_axis_tvalid_o && m_axis_tready_i) begin
      beat_q <= beat_q + 2'd1;
    end
  end

  // The bug: PadCnt (bits 5:4 of that byte) cleared.
  always_comb begin
    m_axis_tdata_o = data;
    for (int i = 0; i < BeatBytes; i++)
      if (padded_q && 32'(beat_q) * BeatBytes + 32'(i) == 32'(pad_byte_q))
        m_axis_tdata_o[8*i+4 +: 2] = 2'b00;
  end

endmodule
