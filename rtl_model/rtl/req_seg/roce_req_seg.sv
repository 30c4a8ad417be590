// RoCE v2 requester segmentation: one WQE descriptor in, one descriptor per
// request packet out (BTH opcode FIRST/MIDDLE/LAST/ONLY, PSN, the payload's
// slice of the message, the RETH, AckReq and SE). Its C++ twin is
// transport::segment() (protocol/transport/include/simnic/transport/
// segmentation.h), which the requester of both engines builds every
// request packet from; the stage's testbench and the cycle model compare
// this block with it.
//
// One transaction: a descriptor taken on the edge where s_valid_i and
// s_ready_o are high, then s_count_i packet descriptors, packets
// s_start_pkt_i on, one per edge where m_valid_o and m_ready_i are high,
// the first one the edge after the descriptor (Latency 1), m_last_o on the
// last. The next descriptor may be taken on the edge of the last packet, so
// back-to-back WQEs have no bubble.
//
// Which opcode carries a RETH, a payload or ends a message is
// roce_parser_gen_pkg's opcode table, generated from the C++ packet core.
module roce_req_seg (
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
  localparam logic [31:0] OpPayload = roce_parser_gen_pkg::OP_PAYLOAD;
  localparam logic [31:0] OpHasReth = roce_parser_gen_pkg::OP_HAS_RETH;
  localparam logic [31:0] OpLast    = roce_parser_gen_pkg::OP_LAST;
  // hw::QpType and hw::WrOpcode (hwspec/include/simnic/hw/verbs.h).
  localparam logic [2:0] QpRc = 3'd2, QpUc = 3'd3, QpUd = 3'd4;
  localparam logic [3:0] WrRdmaWrite = 4'd0, WrRdmaWriteImm = 4'd1, WrSend = 4'd2, WrSendImm = 4'd3,
                         WrRdmaRead = 4'd4, WrCmpSwap = 4'd5, WrFetchAdd = 4'd6, WrSendInv = 4'd9,
                         WrFlush = 4'd14, WrAtomicWrite = 4'd15;
  // rxe's RXE_MAX_PKT_PER_ACK (transport::kMaxPktsPerAck).
  localparam int unsigned MaxPktsPerAck = 64;

  // ---- The WQE, held for its packets -----------------------------------------
  logic        busy_q;
  logic [2:0]  qp_type_q, pmtu_q;
  logic [3:0]  wr_q;
  logic [31:0] len_q, rkey_q;
  logic [23:0] first_psn_q, k_q, n_q, left_q;
  logic [63:0] raddr_q;
  logic        sol_q;
  logic [6:0]  noack_q;

  // Packets of the message: one per PMTU (at least one); one for an atomic,
  // ATOMIC_WRITE or FLUSH. A READ's are its response packets.
  logic [23:0] npkts_d;
  logic [32:0] round_up;
  always_comb begin
    round_up = {1'b0, s_length_i} + ((33'd128 << s_pmtu_i) - 33'd1);
    npkts_d  = 24'(round_up >> (32'd7 + 32'(s_pmtu_i)));
    if (npkts_d == '0) npkts_d = 24'd1;
    if (s_wr_opcode_i inside {WrCmpSwap, WrFetchAdd, WrFlush, WrAtomicWrite}) npkts_d = 24'd1;
  end

  // ---- Packet k_q of the WQE ---------------------------------------------------
  logic        first, lastp, only, rd;
  logic [7:0]  rc_op, opcode;
  roce_parser_gen_pkg::opcode_info_t info;
  logic [31:0] mtu, off, rest;
  always_comb begin
    rd    = wr_q == WrRdmaRead;
    first = k_q == '0;
    lastp = k_q + 24'd1 == n_q;
    only  = first && lastp;
    unique case (wr_q)
      WrSend:         rc_op = only ? 8'h04 : first ? 8'h00 : lastp ? 8'h02 : 8'h01;
      WrSendImm:      rc_op = only ? 8'h05 : first ? 8'h00 : lastp ? 8'h03 : 8'h01;
      WrSendInv:      rc_op = only ? 8'h17 : first ? 8'h00 : lastp ? 8'h16 : 8'h01;
      WrRdmaWrite:    rc_op = only ? 8'h0a : first ? 8'h06 : lastp ? 8'h08 : 8'h07;
      WrRdmaWriteImm: rc_op = only ? 8'h0b : first ? 8'h06 : lastp ? 8'h09 : 8'h07;
      default:        rc_op = 8'h00;
    endcase
    // READ, the atomics and the placement operations are RC's only; local
    // operations make no packet.
    unique case (wr_q)
      WrRdmaRead:    opcode = 8'h0c;
      WrCmpSwap:     opcode = 8'h13;
      WrFetchAdd:    opcode = 8'h14;
      WrFlush:       opcode = 8'h1c;
      WrAtomicWrite: opcode = 8'h1d;
      default:
        if (qp_type_q == QpUc)      opcode = rc_op | 8'h20;
        else if (qp_type_q == QpUd) opcode = wr_q == WrSendImm ? 8'h65 : 8'h64;
        else                        opcode = rc_op;
    endcase
    info = roce_parser_gen_pkg::opcode_info(opcode);
    mtu  = 32'd128 << pmtu_q;
    off  = 32'(k_q) << (32'd7 + 32'(pmtu_q));
    rest = len_q - off;
  end

  assign m_valid_o        = busy_q;
  assign m_last_o         = busy_q && left_q == 24'd1;
  assign m_opcode_o       = opcode;
  assign m_psn_o          = first_psn_q + k_q;
  assign m_payload_off_o  = off;
  assign m_payload_len_o  = ((info.mask & OpPayload) != 0 && !rd) ? 13'(rest < mtu ? rest : mtu) : '0;
  assign m_reth_o         = (info.mask & OpHasReth) != 0;
  assign m_reth_va_o      = m_reth_o ? raddr_q + 64'(off) : '0;
  assign m_reth_rkey_o    = m_reth_o ? rkey_q : '0;
  assign m_reth_dma_len_o = m_reth_o ? (rd ? rest : len_q) : '0;
  assign m_se_o           = (info.mask & OpLast) != 0 && sol_q;
  // AckReq: an RC request's last packet, and one after every MaxPktsPerAck
  // without it inside a long message.
  assign m_ack_req_o      = qp_type_q == QpRc && ((info.mask & OpLast) != 0 || 32'(noack_q) > MaxPktsPerAck);

  logic take, out;
  assign out       = busy_q && m_ready_i;
  assign s_ready_o = !busy_q || (m_ready_i && left_q == 24'd1);
  assign take      = s_valid_i && s_ready_o;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      busy_q  <= 1'b0;
      k_q     <= '0;
      left_q  <= '0;
      noack_q <= '0;
    end else if (take) begin
      busy_q  <= s_count_i != '0;
      k_q     <= s_start_pkt_i;
      left_q  <= s_count_i;
      noack_q <= s_noack_i;
    end else if (out) begin
      k_q    <= k_q + 24'd1;
      left_q <= left_q - 24'd1;
      if (left_q == 24'd1) busy_q <= 1'b0;
      if (qp_type_q == QpRc) noack_q <= m_ack_req_o ? '0 : noack_q + 7'd1;
    end
  end

  always_ff @(posedge clk_i) begin
    if (take) begin
      qp_type_q   <= s_qp_type_i;
      wr_q        <= s_wr_opcode_i;
      len_q       <= s_length_i;
      first_psn_q <= s_first_psn_i;
      pmtu_q      <= s_pmtu_i;
      raddr_q     <= s_remote_addr_i;
      rkey_q      <= s_rkey_i;
      sol_q       <= s_solicited_i;
      n_q         <= npkts_d;
    end
  end

  // Every opcode it makes is in the table; `valid`, the header offsets and
  // the longest header are the parser's and TX build's.
  logic unused;
  assign unused = ^{info, round_up[32], 32'(roce_parser_gen_pkg::MAX_HDR_BYTES)};

endmodule
