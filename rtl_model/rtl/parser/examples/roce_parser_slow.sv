// A worked example of bringing one's own parser (docs/model.md, Your own
// RTL): roce_parser with ExtraStages more register slices on its output, so
// each header vector comes out ExtraStages edges later (5 instead of 3 at
// the default 2) at the same throughput. Swapped in with
// `parser.impl = "rtl_example_slow"`, the model's parser stage takes 5
// cycles of latency from the RTL itself, not from parser.latency_cycles,
// and every header vector still equals the C++ twin's (tested).
//
// The slices are the usual valid/ready pipeline register: a slice takes a
// record when it is empty or its record leaves in the same cycle, so
// bubbles close and nothing is lost under backpressure.
module roce_parser_slow
#(
  parameter int unsigned DataWidth   = 512,
  parameter int unsigned ExtraStages = 2
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
  // Every output field, in roce_parser's port order, as one vector.
  localparam int unsigned HvBits = 1024;

  // ---- The reference parser -------------------------------------------------

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

  // ---- ExtraStages register slices ------------------------------------------
  logic              v [ExtraStages+1];
  // Each slice's ready depends on the next one's: split, so that Verilator
  // sees no loop through the one array.
  logic              r [ExtraStages+1] /* verilator split_var */;
  logic [HvBits-1:0] d [ExtraStages+1];
  assign v[0]    = p_valid;
  assign p_ready = r[0];
  assign d[0]    = {p_verdict, p_has_vlan, p_vlan_tci, p_ip_version, p_src_ip, p_dst_ip,
                    p_udp_sport, p_opcode, p_se, p_mig, p_pad, p_pkey, p_fecn, p_becn, p_dqpn,
                    p_ack_req, p_psn, p_op_mask, p_deth_qkey, p_deth_src_qp, p_reth_va,
                    p_reth_rkey, p_reth_dma_len, p_atomic_va, p_atomic_rkey, p_atomic_swap_add,
                    p_atomic_compare, p_aeth_syndrome, p_aeth_msn, p_atomic_ack_orig, p_imm,
                    p_ieth_rkey, p_l3_off, p_l4_off, p_bth_off, p_payload_off, p_payload_len};

  for (genvar i = 0; i < ExtraStages; i++) begin : g_slice
    logic              valid_q;
    logic [HvBits-1:0] data_q;
    assign r[i] = !valid_q || r[i+1];
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) valid_q <= 1'b0;
      else if (r[i]) valid_q <= v[i];
    end
    always_ff @(posedge clk_i) begin
      if (r[i] && v[i]) data_q <= d[i];
    end
    assign v[i+1] = valid_q;
    assign d[i+1] = data_q;
  end

  assign m_valid_o        = v[ExtraStages];
  assign r[ExtraStages]   = m_ready_i;
  assign {m_verdict_o, m_has_vlan_o, m_vlan_tci_o, m_ip_version_o, m_src_ip_o, m_dst_ip_o,
          m_udp_sport_o, m_opcode_o, m_se_o, m_mig_o, m_pad_o, m_pkey_o, m_fecn_o, m_becn_o,
          m_dqpn_o, m_ack_req_o, m_psn_o, m_op_mask_o, m_deth_qkey_o, m_deth_src_qp_o, m_reth_va_o,
          m_reth_rkey_o, m_reth_dma_len_o, m_atomic_va_o, m_atomic_rkey_o, m_atomic_swap_add_o,
          m_atomic_compare_o, m_aeth_syndrome_o, m_aeth_msn_o, m_atomic_ack_orig_o, m_imm_o,
          m_ieth_rkey_o, m_l3_off_o, m_l4_off_o, m_bth_off_o, m_payload_off_o, m_payload_len_o} = d[ExtraStages];

endmodule
