// RoCE v2 receive header parser.
//
// Takes Ethernet frames (no FCS) on an AXI4-Stream-like input and emits one
// header vector per frame: a verdict (accept, or the drop reason) and every
// header field the pipeline needs, with the offsets of each layer. What the
// fields and verdicts mean, and which check wins when several fail, is
// defined by the C++ twin simnic::roce::parse_header_vector(), which is
// decode_frame() of the packet core with the ICRC check off; the testbench in
// tb/ checks the two equal field by field. The opcode table and the verdict
// codes come from roce_parser_gen_pkg, generated from the C++ tables.
//
// Timing
//   - One beat per cycle, frames back to back, any frame length (frames of a
//     single beat included, down to 0 bytes: one beat with tkeep all zero).
//   - The record of a frame is on m_* Latency = 3 clock edges after the edge
//     that accepts the frame's last beat (when the output is not held by
//     m_ready_i low): the last beat loads stage 1, then stages 2, 3 and the
//     output register load on the next three edges. The latency is counted
//     from the last beat because length checks need the frame's length.
//   - Records leave in frame order under a valid/ready handshake. Each stage
//     advances when the one after it is empty or advancing, so bubbles are
//     squeezed out; s_axis_tready_o is low only while all three stages and
//     the output register are full and m_ready_i is low. s_axis_tready_o
//     depends combinationally on m_ready_i (through that chain).
//
// How it works
//   Capture. The first HdrBytes bytes of each frame (every header byte lies
//     in the first HDR_SPAN_BYTES = 126 bytes) are collected into a buffer,
//     beat by beat, while a saturating counter adds up the frame's length.
//     Later beats only count. On the last beat, buffer and length (this
//     beat's bytes merged in) load stage 1, and the buffer is free for the
//     next frame at once.
//   Stage 1 (L2, L3). 802.1Q tag, ethertype, the IP header realigned from
//     byte 14 or 18 (a 2:1 choice), its fields, the sum of the IPv4 header's
//     IHL*2 16-bit words, the UDP offset, where the IP packet ends, and the
//     verdicts of the checks up to the IP header checksum and after it.
//   Stage 2 (L4, BTH). The UDP header, BTH and extension headers realigned
//     from the UDP offset (always 2 mod 4 between 34 and 78: a 12:1 choice),
//     UDP and BTH fields, the opcode table lookup, the checksum folded, and
//     the checks through the BTH.
//   Stage 3 (extension headers). Each extension header read at the offset
//     the table gives, the opcode's length rules, the payload length, and
//     the fields zeroed as the record requires.
//
// Reset: asynchronous assertion, active low, on control state only (valid
// bits, the in-frame flag). Datapath registers are not reset.
module roce_parser
  import roce_parser_pkg::*;
  import roce_parser_gen_pkg::*;
#(
  // Stream width in bits: a power of two of at least 64.
  parameter int unsigned DataWidth = 512
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,

  // Frame stream. Byte lane 0 (bits 7:0) is the first byte on the wire.
  // tkeep is contiguous from lane 0 and only read on the last beat (all
  // zero there: no byte in that beat). No FCS.
  input  logic [DataWidth-1:0]   s_axis_tdata_i,
  input  logic [DataWidth/8-1:0] s_axis_tkeep_i,
  input  logic                   s_axis_tvalid_i,
  input  logic                   s_axis_tlast_i,
  output logic                   s_axis_tready_o,

  // Header vector, one per frame (see roce_parser_pkg::header_vector_t and
  // simnic::roce::HeaderVector for each field's meaning).
  output logic                   m_valid_o,
  input  logic                   m_ready_i,
  output logic [3:0]             m_verdict_o,
  output logic                   m_has_vlan_o,
  output logic [15:0]            m_vlan_tci_o,
  output logic [3:0]             m_ip_version_o,
  output logic [127:0]           m_src_ip_o,
  output logic [127:0]           m_dst_ip_o,
  output logic [15:0]            m_udp_sport_o,
  output logic [7:0]             m_opcode_o,
  output logic                   m_se_o,
  output logic                   m_mig_o,
  output logic [1:0]             m_pad_o,
  output logic [15:0]            m_pkey_o,
  output logic                   m_fecn_o,
  output logic                   m_becn_o,
  output logic [23:0]            m_dqpn_o,
  output logic                   m_ack_req_o,
  output logic [23:0]            m_psn_o,
  output logic [31:0]            m_op_mask_o,
  output logic [31:0]            m_deth_qkey_o,
  output logic [23:0]            m_deth_src_qp_o,
  output logic [63:0]            m_reth_va_o,
  output logic [31:0]            m_reth_rkey_o,
  output logic [31:0]            m_reth_dma_len_o,
  output logic [63:0]            m_atomic_va_o,
  output logic [31:0]            m_atomic_rkey_o,
  output logic [63:0]            m_atomic_swap_add_o,
  output logic [63:0]            m_atomic_compare_o,
  output logic [7:0]             m_aeth_syndrome_o,
  output logic [23:0]            m_aeth_msn_o,
  output logic [63:0]            m_atomic_ack_orig_o,
  output logic [31:0]            m_imm_o,
  output logic [31:0]            m_ieth_rkey_o,
  output logic [7:0]             m_l3_off_o,
  output logic [7:0]             m_l4_off_o,
  output logic [7:0]             m_bth_off_o,
  output logic [7:0]             m_payload_off_o,
  output logic [15:0]            m_payload_len_o
);
  localparam int unsigned DataBytes  = DataWidth / 8;
  // Beats that hold header bytes, and the buffer they fill.
  localparam int unsigned HdrBeats   = (HDR_SPAN_BYTES + DataBytes - 1) / DataBytes;
  localparam int unsigned HdrBytes   = HdrBeats * DataBytes;
  // Index of the next beat of a frame, saturating at HdrBeats.
  localparam int unsigned BeatWidth  = $clog2(HdrBeats + 1);
  // Valid bytes in a beat, 0 .. DataBytes.
  localparam int unsigned CountWidth = $clog2(DataBytes) + 1;
  // The bytes stage 2 may need: from the lowest UDP offset to the end of the
  // longest headers behind the highest one.
  localparam int unsigned HiBytes    = L4_MAX_OFF + L4_WIN_BYTES - L4_MIN_OFF;
  // Clock edges from the one that accepts a frame's last beat to the one
  // after which m_valid_o is high for it (no backpressure): stages 2 and 3
  // and the output register. The testbench and roce_parser_rtl check it.
  /* verilator lint_off UNUSEDPARAM */
  localparam int unsigned Latency    = 3;
  /* verilator lint_on UNUSEDPARAM */
  localparam int unsigned LW         = LEN_WIDTH;
  localparam int unsigned CsumWidth  = 21;  // 30 words of 16 bits

  if (DataWidth < 64 || (DataWidth & (DataWidth - 1)) != 0) begin : g_bad_width
    $error("roce_parser: DataWidth must be a power of two >= 64, got %0d", DataWidth);
  end
  if (HdrBytes < L4_MAX_OFF + L4_WIN_BYTES) begin : g_bad_span
    $error("roce_parser: header buffer too small");
  end

  // ---------------------------------------------------------------------------
  // Pipeline control
  // ---------------------------------------------------------------------------
  logic s1_valid_q, s2_valid_q, s3_valid_q, out_valid_q;
  logic s1_ready, s2_ready, s3_ready, out_ready;

  assign out_ready       = !out_valid_q || m_ready_i;
  assign s3_ready        = !s3_valid_q || out_ready;
  assign s2_ready        = !s2_valid_q || s3_ready;
  assign s1_ready        = !s1_valid_q || s2_ready;
  assign s_axis_tready_o = s1_ready;
  assign m_valid_o       = out_valid_q;

  // ---------------------------------------------------------------------------
  // Capture: header bytes and frame length
  // ---------------------------------------------------------------------------
  logic                 in_frame_q;  // the next beat continues a frame
  logic [BeatWidth-1:0] beat_q;      // index of the next beat, saturating
  logic [LW-1:0]        len_q;       // bytes in the frame's earlier beats
  logic [8*HdrBytes-1:0] buf_q;      // the frame's first HdrBytes bytes so far

  logic                  beat;        // a beat is accepted this cycle
  logic                  last_beat;   // ... and it ends its frame
  logic [BeatWidth-1:0]  beat_idx;    // its index in the frame (saturating)
  logic [CountWidth-1:0] beat_bytes;  // its byte count
  logic [LW-1:0]         len_base;
  logic [LW-1:0]         len_d;       // the frame's length through this beat
  logic [8*HdrBytes-1:0] buf_d;       // the buffer with this beat written

  assign beat      = s_axis_tvalid_i && s_axis_tready_o;
  assign last_beat = beat && s_axis_tlast_i;
  assign beat_idx  = in_frame_q ? beat_q : '0;
  assign len_base  = in_frame_q ? len_q : '0;

  // tkeep is contiguous from lane 0: the count is the highest set lane + 1.
  always_comb begin
    beat_bytes = CountWidth'(DataBytes);
    if (s_axis_tlast_i) begin
      beat_bytes = '0;
      for (int unsigned i = 0; i < DataBytes; i++) begin
        if (s_axis_tkeep_i[i]) beat_bytes = CountWidth'(i + 1);
      end
    end
  end

  always_comb begin
    logic [LW:0] sum;
    sum   = {1'b0, len_base} + (LW + 1)'(beat_bytes);
    len_d = sum[LW] ? '1 : sum[LW-1:0];
  end

  always_comb begin
    buf_d = buf_q;
    for (int unsigned b = 0; b < HdrBeats; b++) begin
      if (beat_idx == BeatWidth'(b)) buf_d[b*DataWidth +: DataWidth] = s_axis_tdata_i;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      in_frame_q <= 1'b0;
    end else if (beat) begin
      in_frame_q <= !s_axis_tlast_i;
    end
  end

  always_ff @(posedge clk_i) begin
    if (beat) begin
      beat_q <= (beat_idx == BeatWidth'(HdrBeats)) ? beat_idx : beat_idx + 1'b1;
      len_q  <= len_d;
      buf_q  <= buf_d;
    end
  end

  // ---------------------------------------------------------------------------
  // Stage 1: Ethernet, 802.1Q, IPv4/IPv6
  // ---------------------------------------------------------------------------
  logic [8*HdrBytes-1:0] s1_buf_q;
  logic [LW-1:0]         s1_len_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      s1_valid_q <= 1'b0;
    end else if (s1_ready) begin
      s1_valid_q <= last_beat;
    end
  end

  always_ff @(posedge clk_i) begin
    if (last_beat) begin
      s1_buf_q <= buf_d;
      s1_len_q <= len_d;
    end
  end

  // What stage 1 hands stage 2.
  typedef struct packed {
    verdict_e               pre_csum;   // first failing check before the IPv4 checksum
    logic                   check_csum; // IPv4: the checksum comes next
    logic [CsumWidth-1:0]   csum;       // sum of the IPv4 header's 16-bit words
    verdict_e               post_csum;  // first failing IP check after the checksum
    logic                   vlan;
    logic [15:0]            vlan_tci;
    logic                   ipv6;
    logic [6:0]             l3;         // IP header offset
    logic [6:0]             l4;         // UDP header offset
    logic [LW-1:0]          ip_end;     // where the IP packet ends
    logic [127:0]           src_ip;
    logic [127:0]           dst_ip;
    logic [8*HiBytes-1:0]   hi;         // frame bytes [L4_MIN_OFF, L4_MIN_OFF + HiBytes)
  } s2_t;

  s2_t s2_d, s2_q;

  always_comb begin
    logic [15:0]                     outer_type;
    logic [15:0]                     ether_type;
    logic                            is_v4;
    logic                            is_v6;
    logic [8*IPV4_MAX_HDR_BYTES-1:0] ip;
    logic [3:0]                      ip_ver;
    logic [3:0]                      ihl;
    logic [LW-1:0]                   len;
    logic [LW-1:0]                   l3;
    logic [LW-1:0]                   hl;
    logic [LW-1:0]                   rem;       // frame bytes from the IP header on
    logic [LW-1:0]                   rem6;      // ... after the IPv6 header
    logic [LW-1:0]                   ip_len;    // IPv4 total length or IPv6 payload length
    logic [13:0]                     frag;      // IPv4 MF flag and fragment offset
    logic [7:0]                      proto;
    logic                            trailer_ok;

    len        = s1_len_q;
    outer_type = be16(s1_buf_q[8*12 +: 16]);
    s2_d.vlan  = (outer_type == ETHERTYPE_VLAN);
    ether_type = s2_d.vlan ? be16(s1_buf_q[8*16 +: 16]) : outer_type;
    is_v4      = (ether_type == ETHERTYPE_IPV4);
    is_v6      = (ether_type == ETHERTYPE_IPV6);
    s2_d.ipv6  = is_v6;
    s2_d.vlan_tci = s2_d.vlan ? be16(s1_buf_q[8*14 +: 16]) : 16'h0;
    if (s2_d.vlan) begin
      ip = s1_buf_q[8*(ETH_HDR_BYTES + VLAN_TAG_BYTES) +: 8*IPV4_MAX_HDR_BYTES];
      l3 = LW'(ETH_HDR_BYTES + VLAN_TAG_BYTES);
    end else begin
      ip = s1_buf_q[8*ETH_HDR_BYTES +: 8*IPV4_MAX_HDR_BYTES];
      l3 = LW'(ETH_HDR_BYTES);
    end
    ip_ver     = ip[7:4];
    ihl        = ip[3:0];
    hl         = LW'({ihl, 2'b00});
    rem        = len - l3;
    rem6       = rem - LW'(IPV6_HDR_BYTES);
    ip_len     = is_v6 ? LW'(be16(ip[8*4 +: 16])) : LW'(be16(ip[8*2 +: 16]));
    frag       = {ip[8*6 +: 6], ip[8*7 +: 8]};  // bits 13:0 of the big-endian word at byte 6
    proto      = is_v6 ? ip[8*6 +: 8] : ip[8*9 +: 8];
    trailer_ok = (len <= LW'(ETH_MIN_FRAME_BYTES));

    // Checks up to the IPv4 header checksum, in decode_frame()'s order.
    if (len < LW'(ETH_HDR_BYTES)) begin
      s2_d.pre_csum = VERDICT_TOO_SHORT;
    end else if (s2_d.vlan && len < LW'(ETH_HDR_BYTES + VLAN_TAG_BYTES)) begin
      s2_d.pre_csum = VERDICT_TOO_SHORT;
    end else if (!is_v4 && !is_v6) begin
      s2_d.pre_csum = VERDICT_NOT_IP;
    end else if (is_v6) begin
      if (rem < LW'(IPV6_HDR_BYTES)) begin
        s2_d.pre_csum = VERDICT_TOO_SHORT;
      end else if (ip_ver != 4'd6) begin
        s2_d.pre_csum = VERDICT_BAD_IP_HEADER;
      end else begin
        s2_d.pre_csum = VERDICT_ACCEPT;
      end
    end else begin
      if (rem < LW'(IPV4_HDR_BYTES)) begin
        s2_d.pre_csum = VERDICT_TOO_SHORT;
      end else if (ip_ver != 4'd4 || ihl < 4'd5) begin
        s2_d.pre_csum = VERDICT_BAD_IP_HEADER;
      end else if (rem < hl) begin
        s2_d.pre_csum = VERDICT_TOO_SHORT;
      end else begin
        s2_d.pre_csum = VERDICT_ACCEPT;
      end
    end
    s2_d.check_csum = is_v4;

    // Checks after the checksum.
    if (is_v6) begin
      if (ip_len > rem6 || (ip_len < rem6 && !trailer_ok)) begin
        s2_d.post_csum = VERDICT_IP_LENGTH;
      end else if (proto != IP_PROTO_UDP) begin
        s2_d.post_csum = VERDICT_NOT_UDP;
      end else begin
        s2_d.post_csum = VERDICT_ACCEPT;
      end
    end else begin
      if (ip_len > rem || ip_len < hl || (ip_len < rem && !trailer_ok)) begin
        s2_d.post_csum = VERDICT_IP_LENGTH;
      end else if (frag != 14'h0) begin
        s2_d.post_csum = VERDICT_IP_FRAGMENT;
      end else if (proto != IP_PROTO_UDP) begin
        s2_d.post_csum = VERDICT_NOT_UDP;
      end else begin
        s2_d.post_csum = VERDICT_ACCEPT;
      end
    end

    // IPv4 header checksum: the one's-complement sum of the IHL*2 words.
    s2_d.csum = '0;
    for (int unsigned j = 0; j < IPV4_MAX_HDR_BYTES / 2; j++) begin
      if (5'(j) < {ihl, 1'b0}) s2_d.csum = s2_d.csum + CsumWidth'(be16(ip[16*j +: 16]));
    end

    s2_d.l3     = l3[6:0];
    s2_d.l4     = is_v6 ? l3[6:0] + 7'(IPV6_HDR_BYTES) : l3[6:0] + hl[6:0];
    s2_d.ip_end = is_v6 ? l3 + LW'(IPV6_HDR_BYTES) + ip_len : l3 + ip_len;
    if (is_v6) begin
      s2_d.src_ip = be128(ip[8*8 +: 128]);
      s2_d.dst_ip = be128(ip[8*24 +: 128]);
    end else begin
      s2_d.src_ip = {96'h0, be32(ip[8*12 +: 32])};
      s2_d.dst_ip = {96'h0, be32(ip[8*16 +: 32])};
    end
    s2_d.hi = s1_buf_q[8*L4_MIN_OFF +: 8*HiBytes];
  end

  // The MAC addresses and the bytes past the last header are never read.
  logic unused_s1_buf;
  assign unused_s1_buf = ^{s1_buf_q[8*12-1:0], s1_buf_q[8*HdrBytes-1:8*(L4_MIN_OFF + HiBytes)]};

  // ---------------------------------------------------------------------------
  // Stage 2: UDP, BTH, opcode table
  // ---------------------------------------------------------------------------
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      s2_valid_q <= 1'b0;
    end else if (s2_ready) begin
      s2_valid_q <= s1_valid_q;
    end
  end

  always_ff @(posedge clk_i) begin
    if (s2_ready && s1_valid_q) s2_q <= s2_d;
  end

  // What stage 2 hands stage 3.
  typedef struct packed {
    verdict_e                 verdict;  // first failing check so far
    logic                     vlan;
    logic [15:0]              vlan_tci;
    logic                     ipv6;
    logic [127:0]             src_ip;
    logic [127:0]             dst_ip;
    logic [6:0]               l3;
    logic [6:0]               l4;
    logic [LW-1:0]            ip_end;
    logic [15:0]              udp_sport;
    opcode_info_t             info;
    logic [8*BTH_WIN_BYTES-1:0] bth;    // BTH and extension headers, from the BTH on
  } s3_t;

  s3_t s3_d, s3_q;

  logic [8*HiBytes-1:0] l4_shifted;
  logic [6:0]           l4_rel;

  assign l4_rel     = s2_q.l4 - 7'(L4_MIN_OFF);
  assign l4_shifted = s2_q.hi >> {l4_rel, 3'b000};

  // Past the longest headers, and the UDP checksum: not read.
  logic unused_l4_shifted;
  assign unused_l4_shifted = ^{l4_shifted[8*HiBytes-1:8*L4_WIN_BYTES], l4_shifted[8*6 +: 16]};

  always_comb begin
    logic [16:0]               fold1;
    logic [15:0]               fold2;
    logic [15:0]               udp_dport;
    logic [LW-1:0]             udp_len;
    logic [LW-1:0]             l4;
    logic [3:0]                tver;
    verdict_e                  v;

    // l4_shifted starts at the UDP header.
    l4             = LW'(s2_q.l4);
    s3_d.udp_sport = be16(l4_shifted[0 +: 16]);
    udp_dport      = be16(l4_shifted[8*2 +: 16]);
    udp_len        = LW'(be16(l4_shifted[8*4 +: 16]));
    s3_d.bth       = l4_shifted[8*UDP_HDR_BYTES +: 8*BTH_WIN_BYTES];
    tver        = s3_d.bth[8*1 +: 4];
    s3_d.info   = opcode_info(s3_d.bth[7:0]);

    // Fold the checksum sum; a good header sums to all ones.
    fold1 = 17'(s2_q.csum[15:0]) + 17'(s2_q.csum[CsumWidth-1:16]);
    fold2 = fold1[15:0] + 16'(fold1[16]);

    v = s2_q.pre_csum;
    if (v == VERDICT_ACCEPT && s2_q.check_csum && fold2 != 16'hFFFF) v = VERDICT_BAD_IP_HEADER;
    if (v == VERDICT_ACCEPT) v = s2_q.post_csum;
    if (v == VERDICT_ACCEPT) begin
      if (s2_q.ip_end < l4 + LW'(UDP_HDR_BYTES)) begin
        v = VERDICT_TOO_SHORT;
      end else if (udp_len != s2_q.ip_end - l4) begin
        v = VERDICT_UDP_LENGTH;
      end else if (udp_dport != ROCE_V2_PORT) begin
        v = VERDICT_NOT_ROCE_V2;
      end else if (s2_q.ip_end < l4 + LW'(UDP_HDR_BYTES + BTH_BYTES)) begin
        v = VERDICT_TOO_SHORT;
      end else if (!s3_d.info.valid || tver != 4'd0) begin
        v = VERDICT_BAD_BTH;
      end
    end
    s3_d.verdict  = v;
    s3_d.vlan     = s2_q.vlan;
    s3_d.vlan_tci = s2_q.vlan_tci;
    s3_d.ipv6     = s2_q.ipv6;
    s3_d.src_ip   = s2_q.src_ip;
    s3_d.dst_ip   = s2_q.dst_ip;
    s3_d.l3       = s2_q.l3;
    s3_d.l4       = s2_q.l4;
    s3_d.ip_end   = s2_q.ip_end;
  end

  // ---------------------------------------------------------------------------
  // Stage 3: extension headers, lengths, the record
  // ---------------------------------------------------------------------------
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      s3_valid_q <= 1'b0;
    end else if (s3_ready) begin
      s3_valid_q <= s2_valid_q;
    end
  end

  always_ff @(posedge clk_i) begin
    if (s3_ready && s2_valid_q) s3_q <= s3_d;
  end

  // Each extension header, realigned from the offset the opcode table gives.
  localparam int unsigned BW = 8 * BTH_WIN_BYTES;
  logic [BW-1:0] deth, reth, atomic, aeth, atomic_ack, imm, ieth;

  assign deth       = s3_q.bth >> {s3_q.info.deth_off, 3'b000};
  assign reth       = s3_q.bth >> {s3_q.info.reth_off, 3'b000};
  assign atomic     = s3_q.bth >> {s3_q.info.atomic_eth_off, 3'b000};
  assign aeth       = s3_q.bth >> {s3_q.info.aeth_off, 3'b000};
  assign atomic_ack = s3_q.bth >> {s3_q.info.atomic_ack_eth_off, 3'b000};
  assign imm        = s3_q.bth >> {s3_q.info.imm_dt_off, 3'b000};
  assign ieth       = s3_q.bth >> {s3_q.info.ieth_off, 3'b000};

  // Bytes past each header, the DETH's reserved byte, and the table's valid
  // bit (stage 2 has acted on it).
  logic unused_ext;
  assign unused_ext = ^{s3_q.info.valid,
                        deth[BW-1:8*DETH_BYTES], deth[8*4 +: 8], reth[BW-1:8*RETH_BYTES],
                        atomic[BW-1:8*ATOMIC_ETH_BYTES], aeth[BW-1:8*AETH_BYTES],
                        atomic_ack[BW-1:8*ATOMIC_ACK_ETH_BYTES], imm[BW-1:8*IMM_DT_BYTES],
                        ieth[BW-1:8*IETH_BYTES]};

  header_vector_t hv_d, out_q;

  always_comb begin
    logic [LW-1:0]       bth_off;
    logic [LW-1:0]       hdr_end;   // end of the BTH and extension headers
    logic [LW-1:0]       avail;     // payload plus pad
    logic [LW-1:0]       pad;
    logic                payload;
    logic                last;
    verdict_e            v;
    logic [31:0]         mask;

    mask    = s3_q.info.mask;
    bth_off = LW'(s3_q.l4) + LW'(UDP_HDR_BYTES);
    hdr_end = bth_off + LW'(s3_q.info.hdr_bytes);
    avail   = s3_q.ip_end - hdr_end - LW'(ICRC_BYTES);
    pad     = LW'(s3_q.bth[8*1 + 4 +: 2]);
    payload = (mask & OP_PAYLOAD) != 32'h0;
    last    = (mask & OP_LAST) != 32'h0;

    v = s3_q.verdict;
    if (v == VERDICT_ACCEPT) begin
      if (s3_q.ip_end < hdr_end + LW'(ICRC_BYTES)) begin
        v = VERDICT_TRUNCATED_HEADERS;
      end else if (pad > avail || avail[1:0] != 2'b00 ||
                   (!payload && avail != '0) ||
                   (payload && !last && (pad != '0 || avail == '0))) begin
        // Payload + pad a whole number of words, pad within it; no payload
        // where the opcode has none; FIRST and MIDDLE packets unpadded and
        // not empty.
        v = VERDICT_BAD_LENGTH;
      end
    end

    hv_d = '0;
    hv_d.verdict = v;
    if (v == VERDICT_ACCEPT) begin
      hv_d.has_vlan    = s3_q.vlan;
      hv_d.vlan_tci    = s3_q.vlan_tci;
      hv_d.ip_version  = s3_q.ipv6 ? 4'd6 : 4'd4;
      hv_d.src_ip      = s3_q.src_ip;
      hv_d.dst_ip      = s3_q.dst_ip;
      hv_d.udp_sport   = s3_q.udp_sport;
      hv_d.opcode      = s3_q.bth[7:0];
      hv_d.se          = s3_q.bth[8*1 + 7];
      hv_d.mig         = s3_q.bth[8*1 + 6];
      hv_d.pad         = s3_q.bth[8*1 + 4 +: 2];
      hv_d.pkey        = be16(s3_q.bth[8*2 +: 16]);
      hv_d.fecn        = s3_q.bth[8*4 + 7];
      hv_d.becn        = s3_q.bth[8*4 + 6];
      hv_d.dqpn        = be24(s3_q.bth[8*5 +: 24]);
      hv_d.ack_req     = s3_q.bth[8*8 + 7];
      hv_d.psn         = be24(s3_q.bth[8*9 +: 24]);
      hv_d.op_mask     = mask;
      if ((mask & OP_HAS_DETH) != 32'h0) begin
        hv_d.deth_qkey   = be32(deth[0 +: 32]);
        hv_d.deth_src_qp = be24(deth[8*5 +: 24]);
      end
      if ((mask & OP_HAS_RETH) != 32'h0) begin
        hv_d.reth_va      = be64(reth[0 +: 64]);
        hv_d.reth_rkey    = be32(reth[8*8 +: 32]);
        hv_d.reth_dma_len = be32(reth[8*12 +: 32]);
      end
      if ((mask & OP_HAS_ATOMIC_ETH) != 32'h0) begin
        hv_d.atomic_va       = be64(atomic[0 +: 64]);
        hv_d.atomic_rkey     = be32(atomic[8*8 +: 32]);
        hv_d.atomic_swap_add = be64(atomic[8*12 +: 64]);
        hv_d.atomic_compare  = be64(atomic[8*20 +: 64]);
      end
      if ((mask & OP_HAS_AETH) != 32'h0) begin
        hv_d.aeth_syndrome = aeth[7:0];
        hv_d.aeth_msn      = be24(aeth[8*1 +: 24]);
      end
      if ((mask & OP_HAS_ATOMIC_ACK_ETH) != 32'h0) begin
        hv_d.atomic_ack_orig = be64(atomic_ack[0 +: 64]);
      end
      if ((mask & OP_HAS_IMM_DT) != 32'h0) hv_d.imm = be32(imm[0 +: 32]);
      if ((mask & OP_HAS_IETH) != 32'h0) hv_d.ieth_rkey = be32(ieth[0 +: 32]);
      hv_d.l3_off      = 8'(s3_q.l3);
      hv_d.l4_off      = 8'(s3_q.l4);
      hv_d.bth_off     = 8'(bth_off);
      hv_d.payload_off = 8'(hdr_end);
      hv_d.payload_len = 16'(avail - pad);
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      out_valid_q <= 1'b0;
    end else if (out_ready) begin
      out_valid_q <= s3_valid_q;
    end
  end

  always_ff @(posedge clk_i) begin
    if (out_ready && s3_valid_q) out_q <= hv_d;
  end

  // ---------------------------------------------------------------------------
  // Outputs
  // ---------------------------------------------------------------------------
  assign m_verdict_o         = out_q.verdict;
  assign m_has_vlan_o        = out_q.has_vlan;
  assign m_vlan_tci_o        = out_q.vlan_tci;
  assign m_ip_version_o      = out_q.ip_version;
  assign m_src_ip_o          = out_q.src_ip;
  assign m_dst_ip_o          = out_q.dst_ip;
  assign m_udp_sport_o       = out_q.udp_sport;
  assign m_opcode_o          = out_q.opcode;
  assign m_se_o              = out_q.se;
  assign m_mig_o             = out_q.mig;
  assign m_pad_o             = out_q.pad;
  assign m_pkey_o            = out_q.pkey;
  assign m_fecn_o            = out_q.fecn;
  assign m_becn_o            = out_q.becn;
  assign m_dqpn_o            = out_q.dqpn;
  assign m_ack_req_o         = out_q.ack_req;
  assign m_psn_o             = out_q.psn;
  assign m_op_mask_o         = out_q.op_mask;
  assign m_deth_qkey_o       = out_q.deth_qkey;
  assign m_deth_src_qp_o     = out_q.deth_src_qp;
  assign m_reth_va_o         = out_q.reth_va;
  assign m_reth_rkey_o       = out_q.reth_rkey;
  assign m_reth_dma_len_o    = out_q.reth_dma_len;
  assign m_atomic_va_o       = out_q.atomic_va;
  assign m_atomic_rkey_o     = out_q.atomic_rkey;
  assign m_atomic_swap_add_o = out_q.atomic_swap_add;
  assign m_atomic_compare_o  = out_q.atomic_compare;
  assign m_aeth_syndrome_o   = out_q.aeth_syndrome;
  assign m_aeth_msn_o        = out_q.aeth_msn;
  assign m_atomic_ack_orig_o = out_q.atomic_ack_orig;
  assign m_imm_o             = out_q.imm;
  assign m_ieth_rkey_o       = out_q.ieth_rkey;
  assign m_l3_off_o          = out_q.l3_off;
  assign m_l4_off_o          = out_q.l4_off;
  assign m_bth_off_o         = out_q.bth_off;
  assign m_payload_off_o     = out_q.payload_off;
  assign m_payload_len_o     = out_q.payload_len;

endmodule
