// A starting point for one's own requester segmentation block (docs/model.md,
// Your own RTL): exactly the segmentation stage's ports, lint-clean, a
// descriptor register and the packet descriptor's valid/ready handshake. It
// makes the right number of packets with the right PSNs, and nothing else
// yet (every opcode 0, no payload, no RETH, no AckReq): every WQE is a
// mismatch in the model until the marked parts are written. Copy it, rename
// the module, and replace them. Name it in the device's config:
//
//   [req_seg]
//   impl = "rtl"
//   rtl_sources = ["my_req_seg.sv"]
//   rtl_top = "my_req_seg"
//
// simnic supplies roce_parser_gen_pkg (the opcode table, generated from the
// C++ packet core) and finds roce_req_seg (the reference) if you
// instantiate it; don't list them.
module my_req_seg (
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
  logic        busy_q;
  logic [23:0] psn_q, left_q;

  logic take, out;
  assign out       = busy_q && m_ready_i;
  assign s_ready_o = !busy_q || (m_ready_i && left_q == 24'd1);
  assign take      = s_valid_i && s_ready_o;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      busy_q <= 1'b0;
      psn_q  <= '0;
      left_q <= '0;
    end else if (take) begin
      busy_q <= s_count_i != '0;
      psn_q  <= s_first_psn_i + s_start_pkt_i;
      left_q <= s_count_i;
    end else if (out) begin
      psn_q  <= psn_q + 24'd1;
      left_q <= left_q - 24'd1;
      if (left_q == 24'd1) busy_q <= 1'b0;
    end
  end

  assign m_valid_o = busy_q;
  assign m_last_o  = busy_q && left_q == 24'd1;
  assign m_psn_o   = psn_q;

  // ---- Replace: the packet's opcode, payload slice, RETH, AckReq and SE ----
  // (roce_parser_gen_pkg::opcode_info() of the opcode table says which opcodes carry a RETH or
  // a payload and which end a message.)
  assign m_opcode_o       = '0;
  assign m_payload_off_o  = '0;
  assign m_payload_len_o  = '0;
  assign m_reth_o         = 1'b0;
  assign m_reth_va_o      = '0;
  assign m_reth_rkey_o    = '0;
  assign m_reth_dma_len_o = '0;
  assign m_ack_req_o      = 1'b0;
  assign m_se_o           = 1'b0;

  logic unused;
  assign unused = ^{s_qp_type_i, s_wr_opcode_i, s_length_i, s_pmtu_i, s_remote_addr_i, s_rkey_i, s_solicited_i,
                    s_noack_i};

endmodule
