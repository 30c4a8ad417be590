// RoCE v2 TX header builder: the headers of one frame (Ethernet with an
// optional 802.1Q tag, IPv4 without options or IPv6, UDP, BTH and the
// extension headers the opcode table names) from a header descriptor, out
// as AXI-stream beats, byte lane 0 first on the wire. The bytes equal
// roce::encode_frame()'s for the same packet (tb/test_own_tx_build.cpp):
// lengths from the payload length, the BTH pad count, the IPv4 header
// checksum; the UDP checksum zero and reserved bits zero, as a sender
// leaves them. The payload, pad and ICRC follow in the datapath, not here.
//
// One transaction: a descriptor taken on the edge where s_valid_i and
// s_ready_o are high, then its header's beats, the first one the edge
// after (Latency). A descriptor may be taken on the edge of the previous
// header's last beat, so back-to-back headers have no bubble.
//
// The opcode table is roce_parser_gen_pkg's, generated from the C++ packet
// core (one table for the parser, this block and the C++).
module roce_tx_build
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
  // The longest header: Ethernet and a VLAN tag, IPv6, UDP, the longest
  // BTH and extension headers.
  localparam int unsigned MaxHdrBytes = 14 + 4 + 40 + 8 + MAX_HDR_BYTES;
  localparam int unsigned MaxBeats = (MaxHdrBytes + BeatBytes - 1) / BeatBytes;
  localparam int unsigned BufBytes = MaxBeats * BeatBytes;
  localparam int unsigned BeatW = $clog2(MaxBeats + 1);

  // ---- The header, from the descriptor (combinational) ---------------------
  // Byte i of the header is hdr_d[8*i +: 8], as the beats carry it.
  logic [8*BufBytes-1:0] hdr_d;
  logic [7:0]            len_d;
  opcode_info_t          info;

  always_comb begin
    logic        v6;
    int unsigned l3, l4, bth;
    logic [1:0]  pad;
    logic [15:0] l4_len, ip_len;
    logic [19:0] sum;
    logic [15:0] csum;
    logic [15:0] ethertype;

    info = opcode_info(s_opcode_i);
    v6   = s_ip_version_i == 4'd6;
    l3   = s_has_vlan_i ? 18 : 14;
    l4   = l3 + (v6 ? 40 : 20);
    bth  = l4 + 8;
    len_d = 8'(bth + 32'(info.hdr_bytes));
    // The pad makes payload + pad a multiple of 4 (IBA 9.2).
    pad    = 2'(~s_payload_len_i[1:0] + 2'd1);
    // UDP: its header, the transport headers, the payload, the pad, the ICRC.
    l4_len = 16'd8 + {10'd0, info.hdr_bytes} + s_payload_len_i + {14'd0, pad} + 16'd4;
    ip_len = l4_len + 16'd20;
    ethertype = v6 ? 16'h86dd : 16'h0800;

    hdr_d = '0;
    sum   = '0;
    csum  = '0;
    // Ethernet.
    for (int k = 0; k < 6; k++) begin
      hdr_d[8*k +: 8]       = s_dmac_i[8*(5-k) +: 8];
      hdr_d[8*(6+k) +: 8]   = s_smac_i[8*(5-k) +: 8];
    end
    if (s_has_vlan_i) begin
      hdr_d[8*12 +: 8] = 8'h81;
      hdr_d[8*13 +: 8] = 8'h00;
      hdr_d[8*14 +: 8] = s_vlan_tci_i[15:8];
      hdr_d[8*15 +: 8] = s_vlan_tci_i[7:0];
    end
    hdr_d[8*(l3-2) +: 8] = ethertype[15:8];
    hdr_d[8*(l3-1) +: 8] = ethertype[7:0];

    // IP.
    if (v6) begin
      hdr_d[8*l3 +: 8]     = {4'h6, s_ip_tos_i[7:4]};
      hdr_d[8*(l3+1) +: 8] = {s_ip_tos_i[3:0], s_ip_flow_label_i[19:16]};
      hdr_d[8*(l3+2) +: 8] = s_ip_flow_label_i[15:8];
      hdr_d[8*(l3+3) +: 8] = s_ip_flow_label_i[7:0];
      hdr_d[8*(l3+4) +: 8] = l4_len[15:8];
      hdr_d[8*(l3+5) +: 8] = l4_len[7:0];
      hdr_d[8*(l3+6) +: 8] = 8'd17;  // UDP
      hdr_d[8*(l3+7) +: 8] = s_ip_ttl_i;
      for (int k = 0; k < 16; k++) begin
        hdr_d[8*(l3+8+k) +: 8]  = s_src_ip_i[8*(15-k) +: 8];
        hdr_d[8*(l3+24+k) +: 8] = s_dst_ip_i[8*(15-k) +: 8];
      end
    end else begin
      // RFC 791: the one's complement of the one's complement sum of the
      // header's 16-bit words, the checksum field counted as zero.
      sum = 20'h4500 + {12'd0, s_ip_tos_i} + {4'd0, ip_len} + {4'd0, s_ip_id_i} + {4'd0, s_ip_frag_i} +
            {4'd0, s_ip_ttl_i, 8'd17} +
            {4'd0, s_src_ip_i[31:16]} + {4'd0, s_src_ip_i[15:0]} +
            {4'd0, s_dst_ip_i[31:16]} + {4'd0, s_dst_ip_i[15:0]};
      sum  = {4'd0, sum[15:0]} + {16'd0, sum[19:16]};
      sum  = {4'd0, sum[15:0]} + {16'd0, sum[19:16]};
      csum = ~sum[15:0];
      hdr_d[8*l3 +: 8]      = 8'h45;
      hdr_d[8*(l3+1) +: 8]  = s_ip_tos_i;
      hdr_d[8*(l3+2) +: 8]  = ip_len[15:8];
      hdr_d[8*(l3+3) +: 8]  = ip_len[7:0];
      hdr_d[8*(l3+4) +: 8]  = s_ip_id_i[15:8];
      hdr_d[8*(l3+5) +: 8]  = s_ip_id_i[7:0];
      hdr_d[8*(l3+6) +: 8]  = s_ip_frag_i[15:8];
      hdr_d[8*(l3+7) +: 8]  = s_ip_frag_i[7:0];
      hdr_d[8*(l3+8) +: 8]  = s_ip_ttl_i;
      hdr_d[8*(l3+9) +: 8]  = 8'd17;  // UDP
      hdr_d[8*(l3+10) +: 8] = csum[15:8];
      hdr_d[8*(l3+11) +: 8] = csum[7:0];
      for (int k = 0; k < 4; k++) begin
        hdr_d[8*(l3+12+k) +: 8] = s_src_ip_i[8*(3-k) +: 8];
        hdr_d[8*(l3+16+k) +: 8] = s_dst_ip_i[8*(3-k) +: 8];
      end
    end

    // UDP; the checksum stays 0 (RoCE v2 allows it; rxe sends 0).
    hdr_d[8*l4 +: 8]     = s_udp_sport_i[15:8];
    hdr_d[8*(l4+1) +: 8] = s_udp_sport_i[7:0];
    hdr_d[8*(l4+2) +: 8] = s_udp_dport_i[15:8];
    hdr_d[8*(l4+3) +: 8] = s_udp_dport_i[7:0];
    hdr_d[8*(l4+4) +: 8] = l4_len[15:8];
    hdr_d[8*(l4+5) +: 8] = l4_len[7:0];

    // BTH (IBA 9.2); TVer and the reserved bits 0.
    hdr_d[8*bth +: 8]      = s_opcode_i;
    hdr_d[8*(bth+1) +: 8]  = {s_se_i, s_mig_i, pad, 4'h0};
    hdr_d[8*(bth+2) +: 8]  = s_pkey_i[15:8];
    hdr_d[8*(bth+3) +: 8]  = s_pkey_i[7:0];
    hdr_d[8*(bth+4) +: 8]  = {s_fecn_i, s_becn_i, 6'd0};
    for (int k = 0; k < 3; k++) begin
      hdr_d[8*(bth+5+k) +: 8] = s_dqpn_i[8*(2-k) +: 8];
      hdr_d[8*(bth+9+k) +: 8] = s_psn_i[8*(2-k) +: 8];
    end
    hdr_d[8*(bth+8) +: 8]  = {s_ack_req_i, 7'd0};

    // The extension headers the opcode names, where the table puts them.
    if ((info.mask & OP_HAS_DETH) != 0)
      for (int k = 0; k < 4; k++) begin
        hdr_d[8*(bth+32'(info.deth_off)+k) +: 8] = s_deth_qkey_i[8*(3-k) +: 8];
        if (k < 3) hdr_d[8*(bth+32'(info.deth_off)+5+k) +: 8] = s_deth_src_qp_i[8*(2-k) +: 8];
      end
    if ((info.mask & OP_HAS_FETH) != 0)
      hdr_d[8*(bth+32'(info.feth_off)+3) +: 8] = {2'b00, s_feth_selectivity_i, s_feth_placement_i};
    if ((info.mask & OP_HAS_RETH) != 0)
      for (int k = 0; k < 8; k++) begin
        hdr_d[8*(bth+32'(info.reth_off)+k) +: 8] = s_reth_va_i[8*(7-k) +: 8];
        if (k < 4) begin
          hdr_d[8*(bth+32'(info.reth_off)+8+k) +: 8]  = s_reth_rkey_i[8*(3-k) +: 8];
          hdr_d[8*(bth+32'(info.reth_off)+12+k) +: 8] = s_reth_dma_len_i[8*(3-k) +: 8];
        end
      end
    if ((info.mask & OP_HAS_ATOMIC_ETH) != 0)
      for (int k = 0; k < 8; k++) begin
        hdr_d[8*(bth+32'(info.atomic_eth_off)+k) +: 8]    = s_atomic_va_i[8*(7-k) +: 8];
        if (k < 4) hdr_d[8*(bth+32'(info.atomic_eth_off)+8+k) +: 8] = s_atomic_rkey_i[8*(3-k) +: 8];
        hdr_d[8*(bth+32'(info.atomic_eth_off)+12+k) +: 8] = s_atomic_swap_add_i[8*(7-k) +: 8];
        hdr_d[8*(bth+32'(info.atomic_eth_off)+20+k) +: 8] = s_atomic_compare_i[8*(7-k) +: 8];
      end
    if ((info.mask & OP_HAS_AETH) != 0) begin
      hdr_d[8*(bth+32'(info.aeth_off)) +: 8] = s_aeth_syndrome_i;
      for (int k = 0; k < 3; k++) hdr_d[8*(bth+32'(info.aeth_off)+1+k) +: 8] = s_aeth_msn_i[8*(2-k) +: 8];
    end
    if ((info.mask & OP_HAS_ATOMIC_ACK_ETH) != 0)
      for (int k = 0; k < 8; k++)
        hdr_d[8*(bth+32'(info.atomic_ack_eth_off)+k) +: 8] = s_atomic_ack_orig_i[8*(7-k) +: 8];
    if ((info.mask & OP_HAS_IMM_DT) != 0)
      for (int k = 0; k < 4; k++) hdr_d[8*(bth+32'(info.imm_dt_off)+k) +: 8] = s_imm_i[8*(3-k) +: 8];
    if ((info.mask & OP_HAS_IETH) != 0)
      for (int k = 0; k < 4; k++) hdr_d[8*(bth+32'(info.ieth_off)+k) +: 8] = s_ieth_rkey_i[8*(3-k) +: 8];
    // A CNP's 16 reserved bytes after the BTH stay 0.
  end

  // ---- Out: the header held, one beat per cycle ----------------------------
  logic [8*BufBytes-1:0] hdr_q;
  logic [7:0]            len_q;
  logic                  busy_q;
  logic [BeatW-1:0]      beat_q;
  logic                  take, last;

  assign last            = (32'(beat_q) + 1) * BeatBytes >= 32'(len_q);
  assign m_axis_tvalid_o = busy_q;
  assign m_axis_tlast_o  = busy_q && last;
  assign s_ready_o       = !busy_q || (m_axis_tready_i && last);
  assign take            = s_valid_i && s_ready_o;
  assign m_axis_tdata_o  = hdr_q[DataWidth*beat_q +: DataWidth];
  always_comb
    for (int i = 0; i < BeatBytes; i++)
      m_axis_tkeep_o[i] = busy_q && 32'(beat_q) * BeatBytes + 32'(i) < 32'(len_q);

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      busy_q <= 1'b0;
      beat_q <= '0;
      len_q  <= '0;
    end else if (take) begin
      busy_q <= 1'b1;
      beat_q <= '0;
      len_q  <= len_d;
    end else if (busy_q && m_axis_tready_i) begin
      if (last) busy_q <= 1'b0;
      else beat_q <= beat_q + 1'b1;
    end
  end
  always_ff @(posedge clk_i) if (take) hdr_q <= hdr_d;

  // Every opcode the datapath sends is in the table; `valid` is the parser's.
  logic unused;
  assign unused = info.valid;

endmodule
