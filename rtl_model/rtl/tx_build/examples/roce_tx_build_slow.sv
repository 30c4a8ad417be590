// A worked example of a slower TX header builder (docs/model.md, Your own
// RTL): roce_tx_build behind two kinds of backpressure the model must
// honour. A descriptor is taken only after it has been offered for two
// cycles (as an arbiter in front of the block would), and every header beat
// passes a one-entry register that takes a beat only when empty, so the
// header leaves one edge later, with a bubble between its beats. Named in the
// config as one's own design (tx_build.rtl_sources), the stage takes these
// cycles as its timing: per frame 2 more busy cycles for the descriptor, 1
// per extra header beat, and a latency of 2 (tested). Every header equals
// the reference's.
module roce_tx_build_slow
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
  // ---- The descriptor: offered two cycles before it is taken --------------
  logic       ref_s_ready, ref_s_valid;
  logic [1:0] offered_q;  // cycles the current descriptor has waited, up to 2
  assign s_ready_o   = ref_s_ready && offered_q == 2'd2;
  assign ref_s_valid = s_valid_i && offered_q == 2'd2;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) offered_q <= '0;
    else if (!s_valid_i || s_ready_o) offered_q <= '0;
    else if (offered_q != 2'd2) offered_q <= offered_q + 2'd1;
  end

  // ---- The reference ----------------------------------------------------------
  logic [DataWidth-1:0]   ref_tdata;
  logic [DataWidth/8-1:0] ref_tkeep;
  logic                   ref_tvalid, ref_tlast, ref_tready;
  roce_tx_build #(.DataWidth(DataWidth)) u_ref (
    .clk_i,
    .rst_ni,
    .s_valid_i(ref_s_valid),
    .s_ready_o(ref_s_ready),
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
    .m_axis_tdata_o(ref_tdata),
    .m_axis_tkeep_o(ref_tkeep),
    .m_axis_tvalid_o(ref_tvalid),
    .m_axis_tlast_o(ref_tlast),
    .m_axis_tready_i(ref_tready)
  );

  // ---- One-entry output register: takes a beat only when empty ------------
  logic                   full_q, last_q;
  logic [DataWidth-1:0]   data_q;
  logic [DataWidth/8-1:0] keep_q;
  assign ref_tready = !full_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) full_q <= 1'b0;
    else if (!full_q && ref_tvalid) full_q <= 1'b1;
    else if (full_q && m_axis_tready_i) full_q <= 1'b0;
  end
  always_ff @(posedge clk_i) begin
    if (!full_q && ref_tvalid) begin
      data_q <= ref_tdata;
      keep_q <= ref_tkeep;
      last_q <= ref_tlast;
    end
  end
  assign m_axis_tvalid_o = full_q;
  assign m_axis_tdata_o  = data_q;
  assign m_axis_tkeep_o  = full_q ? keep_q : '0;
  assign m_axis_tlast_o  = full_q && last_q;

endmodule
