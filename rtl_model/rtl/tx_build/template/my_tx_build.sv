// A starting point for one's own TX header builder (docs/model.md, Your
// own RTL): exactly the TX build stage's ports, lint-clean, a descriptor
// register and the header's output beat with its valid/ready handshake. It
// builds only the Ethernet header yet (the MACs and the ethertype, no VLAN
// tag): every frame's header is a mismatch in the model until the rest is
// written. Copy it, rename the module, and replace the marked parts. Name it
// in the device's config:
//
//   [tx_build]
//   impl = "rtl"
//   rtl_sources = ["my_tx_build.sv"]
//   rtl_top = "my_tx_build"
//
// simnic supplies roce_parser_gen_pkg (the opcode table, generated from the
// C++ packet core) and finds roce_tx_build (the reference) if you
// instantiate it; don't list them.
module my_tx_build
  import roce_parser_gen_pkg::*;
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

  // ---- Input: take a descriptor when no header is being sent -------------
  logic busy_q, take;
  assign s_ready_o = !busy_q || m_axis_tready_i;  // this skeleton's header is one beat
  assign take      = s_valid_i && s_ready_o;

  // ---- Replace: your header (byte i of it at hdr_q[8*i +: 8]) --------------
  // The longest header is 14 + 4 + 40 + 8 + MAX_HDR_BYTES bytes: two beats
  // at DataWidth 512, so a full design sends one or two beats (m_axis_tlast_o
  // on the last, m_axis_tkeep_o its bytes).
  localparam int unsigned HdrBytes = 14;
  logic [8*HdrBytes-1:0] hdr_q;
  logic [8*HdrBytes-1:0] hdr_d;
  always_comb begin
    for (int k = 0; k < 6; k++) begin
      hdr_d[8*k +: 8]     = s_dmac_i[8*(5-k) +: 8];
      hdr_d[8*(6+k) +: 8] = s_smac_i[8*(5-k) +: 8];
    end
    hdr_d[8*12 +: 8] = s_ip_version_i == 4'd6 ? 8'h86 : 8'h08;
    hdr_d[8*13 +: 8] = s_ip_version_i == 4'd6 ? 8'hdd : 8'h00;
  end
  always_ff @(posedge clk_i) if (take) hdr_q <= hdr_d;
  // Unused until you build the rest: keeps lint quiet about the skeleton.
  logic unused;
  assign unused = ^{s_has_vlan_i, s_vlan_tci_i, s_ip_tos_i, s_ip_ttl_i, s_ip_id_i, s_ip_frag_i,
                    s_ip_flow_label_i, s_src_ip_i, s_dst_ip_i, s_udp_sport_i, s_udp_dport_i, s_opcode_i,
                    s_se_i, s_mig_i, s_pkey_i, s_fecn_i, s_becn_i, s_dqpn_i, s_ack_req_i, s_psn_i,
                    s_deth_qkey_i, s_deth_src_qp_i, s_feth_placement_i, s_feth_selectivity_i, s_reth_va_i,
                    s_reth_rkey_i, s_reth_dma_len_i, s_atomic_va_i, s_atomic_rkey_i, s_atomic_swap_add_i,
                    s_atomic_compare_i, s_aeth_syndrome_i, s_aeth_msn_i, s_atomic_ack_orig_i, s_imm_i,
                    s_ieth_rkey_i, s_payload_len_i, MAX_HDR_BYTES[0]};

  // ---- Output: one beat per descriptor, the edge after it was taken -------
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) busy_q <= 1'b0;
    else if (take) busy_q <= 1'b1;
    else if (m_axis_tready_i) busy_q <= 1'b0;
  end
  assign m_axis_tvalid_o = busy_q;
  assign m_axis_tlast_o  = busy_q;
  assign m_axis_tdata_o  = {{(DataWidth - 8*HdrBytes){1'b0}}, hdr_q};
  always_comb
    for (int i = 0; i < BeatBytes; i++) m_axis_tkeep_o[i] = busy_q && i < int'(HdrBytes);

endmodule
