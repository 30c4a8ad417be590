// Streaming RoCE v2 ICRC engine.
//
// Computes the invariant CRC of every frame on an AXI4-Stream-like input and
// checks it against the ICRC the frame carries in its last four bytes. One
// beat per cycle, back to back, frames back to back; the result of a frame
// appears Latency cycles after its last beat, as a one-cycle strobe.
//
// How it works
//   1. Realign. The ICRC starts at the IP header, which sits at byte 14, or at
//      byte 18 behind an 802.1Q tag. Both selectors (ethertype, VLAN tag) are
//      in the first beat, so realigning is a 2:1 choice of a fixed byte shift
//      across the held previous beat and the current one: the realigned beat
//      k is bytes [ip_off + k*B, ip_off + (k+1)*B) of the frame.
//   2. Mask. The variant fields (IPv4 TOS, TTL, checksum; IPv6 traffic class,
//      flow label, hop limit; UDP checksum; BTH byte 4) all lie in the first
//      MASK_SPAN_BYTES bytes of the realigned stream. They are forced to ones
//      by OR-ing a per-frame pattern built from the IP version and IHL.
//   3. Body CRC. Realigned beat k-1 is complete once input beat k arrives, and
//      it is all CRC-covered unless beat k is the last one: a one-beat delay
//      tells us where the frame ends, even when the 4 ICRC bytes straddle two
//      beats. Full beats go through one DataBytes-wide parallel CRC into the
//      body register, pre-loaded with the state after the eight 0xFF bytes.
//   4. Tail. On the last beat, the body CRC and the final 0..B-1 covered
//      bytes go into a separate registered cascade of power-of-two chunk CRCs
//      (B/2, B/4, ... 1 bytes; icrc_tail_stage). The body register is free
//      again at once, so the next frame never waits.
//   5. Compare with the carried ICRC (little-endian on the wire) and register
//      the result.
//
// Beat accounting, for input beat j (0-based) of a frame of len bytes, with
// n bytes valid in the last beat and ip_off = 14 or 18:
//   - j = 0: nothing is complete yet (the held beat is loaded); the body CRC is
//     pre-loaded. If beat 0 is also the last, its bytes [ip_off, n-4) are the
//     tail.
//   - j > 0, not last: realigned beat j-1 is a full body beat.
//   - j > 0, last, n >= ip_off + 4: realigned beat j-1 is a body beat, and
//     bytes [ip_off, n-4) of beat j are the tail (n - 4 - ip_off bytes).
//   - j > 0, last, n <  ip_off + 4: realigned beat j-1 itself is the tail
//     (B + n - 4 - ip_off bytes); the ICRC may straddle beats j-1 and j.
//   Every case is known in the cycle of the last beat, so no flush cycle is
//   ever needed and s_axis_tready_o is tied high.
//
// Reset: asynchronous assertion, active low (rst_ni), on control state only
// (valid bits and the in-frame flag). Datapath registers are not reset; no
// output depends on them while the valid bits are low.
module icrc_engine #(
  // Stream width in bits. A power of two of at least 256: the tag, ethertype
  // and IHL (bytes 12..18) must all be in the first beat, the previous beat
  // of a non-last beat must lie wholly before the ICRC (B > 21 bytes), and
  // the tail cascade halves the beat at each stage.
  parameter int unsigned DataWidth = 512
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,

  // Frame stream. Byte lane 0 (bits 7:0) is the first byte on the wire. tkeep
  // is contiguous from lane 0 and only meaningful on the last beat. No FCS.
  input  logic [DataWidth-1:0]   s_axis_tdata_i,
  input  logic [DataWidth/8-1:0] s_axis_tkeep_i,
  input  logic                   s_axis_tvalid_i,
  input  logic                   s_axis_tlast_i,
  output logic                   s_axis_tready_o,  // always 1: the engine never stalls

  // Per-frame result, valid for the one cycle m_valid_o is high.
  output logic                   m_valid_o,
  output logic [31:0]            m_icrc_o,     // computed ICRC (zlib value; undefined if m_err_o)
  output logic                   m_icrc_ok_o,  // computed ICRC equals the carried one
  output logic                   m_err_o       // not IPv4/IPv6, IHL < 5, or too short
);
  localparam int unsigned DataBytes  = DataWidth / 8;
  // Tail length 0 .. DataBytes-1.
  localparam int unsigned LenWidth   = $clog2(DataBytes);
  // Valid bytes in a beat, 1 .. DataBytes.
  localparam int unsigned CountWidth = LenWidth + 1;
  // One cascade stage per bit of the tail length.
  localparam int unsigned TailStages = LenWidth;
  // Realigned beats that can hold a masked field.
  localparam int unsigned MaskBeats  =
      (icrc_pkg::MASK_SPAN_BYTES + DataBytes - 1) / DataBytes;
  // The beat counter saturates here; 7 beats of at least 32 bytes are past
  // both the masked span and the shortest legal frame.
  localparam logic [2:0]  BeatCntMax = 3'd7;
  localparam int unsigned EthBits    = 8 * icrc_pkg::ETH_HDR_BYTES;
  localparam int unsigned VlanBits   = 8 * icrc_pkg::VLAN_HDR_BYTES;
  // Clock edges from the one that accepts a frame's last beat to the one
  // after which m_valid_o is high for it: the cascade's stages plus the
  // output register (the launch register loads on the accepting edge).
  // 7 for 512 bits, 6 for 256.
  /* verilator lint_off UNUSEDPARAM */
  localparam int unsigned Latency    = TailStages + 1;  // documents the timing; the tb checks it
  /* verilator lint_on UNUSEDPARAM */

  if (DataWidth < 256 || (DataWidth & (DataWidth - 1)) != 0) begin : g_bad_width
    $error("icrc_engine: DataWidth must be a power of two >= 256, got %0d", DataWidth);
  end
  if (MaskBeats > 32'(BeatCntMax)) begin : g_bad_mask
    $error("icrc_engine: beat counter too narrow for %0d masked beats", MaskBeats);
  end

  // ---------------------------------------------------------------------------
  // Frame decode from the first beat
  // ---------------------------------------------------------------------------
  // The first beat's bytes the decode reads: up to the IP header's first
  // byte behind an 802.1Q tag.
  localparam int unsigned HeadBits = 8 * (icrc_pkg::VLAN_HDR_BYTES + 1);

  function automatic logic [7:0] beat_byte(logic [HeadBits-1:0] d, int unsigned i);
    return d[8*i +: 8];
  endfunction

  function automatic icrc_pkg::frame_info_t decode_first_beat(logic [HeadBits-1:0] d);
    icrc_pkg::frame_info_t info;
    logic [15:0] outer_type;
    logic [15:0] ether_type;
    logic [3:0]  ihl;
    logic        is_v4;
    logic        is_v6;
    logic [6:0]  ip_off;
    outer_type = {beat_byte(d, 12), beat_byte(d, 13)};
    info.vlan  = (outer_type == icrc_pkg::ETHERTYPE_VLAN);
    ether_type = info.vlan ? {beat_byte(d, 16), beat_byte(d, 17)} : outer_type;
    ihl        = info.vlan ? d[8*18 +: 4] : d[8*14 +: 4];  // low nibble of the IP header's byte 0
    is_v4      = (ether_type == icrc_pkg::ETHERTYPE_IPV4);
    is_v6      = (ether_type == icrc_pkg::ETHERTYPE_IPV6);
    info.ipv6  = is_v6;
    // IHL counts 32-bit words; IPv6 extension headers are not supported.
    info.l4_rel = is_v6 ? 6'(icrc_pkg::IPV6_HDR_BYTES) : {ihl, 2'b00};
    ip_off     = info.vlan ? 7'(icrc_pkg::VLAN_HDR_BYTES) : 7'(icrc_pkg::ETH_HDR_BYTES);
    info.min_len = ip_off + 7'(info.l4_rel) +
                   7'(icrc_pkg::UDP_HDR_BYTES + icrc_pkg::BTH_BYTES + icrc_pkg::ICRC_BYTES);
    info.bad   = !(is_v4 || is_v6) || (is_v4 && ihl < 4'd5);
    return info;
  endfunction

  // OR-pattern for IP-relative byte p: ones over the variant fields.
  function automatic logic [7:0] mask_byte(int unsigned p, logic ipv6, logic [5:0] l4_rel);
    logic [7:0]  m;
    int unsigned l4;
    m  = 8'h00;
    l4 = 32'(l4_rel);
    if (ipv6) begin
      if (p == 0) m = 8'h0F;                          // traffic class, high nibble
      if ((p >= 1 && p <= 3) || p == 7) m = 8'hFF;    // TC low nibble, flow label; hop limit
    end else begin
      if (p == 1 || p == 8 || p == 10 || p == 11) m = 8'hFF;  // TOS; TTL; header checksum
    end
    if (p == l4 + 6 || p == l4 + 7) m = 8'hFF;        // UDP checksum
    if (p == l4 + icrc_pkg::UDP_HDR_BYTES + 4) m = 8'hFF;  // BTH byte 4: FECN, BECN, resv6a
    return m;
  endfunction

  // The pattern for realigned beat k (no masking past MaskBeats).
  function automatic logic [DataWidth-1:0] mask_beat(logic ipv6, logic [5:0] l4_rel,
                                                      logic [2:0] k);
    logic [DataWidth-1:0] m;
    m = '0;
    for (int unsigned b = 0; b < MaskBeats; b++) begin
      if (k == 3'(b)) begin
        for (int unsigned i = 0; i < DataBytes; i++) begin
          m[8*i +: 8] = mask_byte(b * DataBytes + i, ipv6, l4_rel);
        end
      end
    end
    return m;
  endfunction

  // The parallel CRC-32 step (the body's, over a whole realigned beat): crc_step(), its XOR
  // trees written once for the engine and its tail stages.
  localparam int unsigned CrcDataBits = DataWidth;
  `include "icrc_crc_step.svh"

  // tkeep is contiguous from lane 0: the count is the highest set lane + 1.
  function automatic logic [CountWidth-1:0] keep_count(logic [DataBytes-1:0] keep);
    keep_count = '0;
    for (int unsigned i = 0; i < DataBytes; i++) begin
      if (keep[i]) keep_count = CountWidth'(i + 1);
    end
  endfunction

  // Realigned beat j-1 (masked): the held beat's bytes from the IP header
  // on, completed by the first 14 or 18 bytes of this beat. It is used only
  // on a beat that is not a frame's first, so it takes the frame info and
  // the beat index from registers: that keeps the first-beat decode out of
  // the body CRC's path.
  function automatic logic [DataWidth-1:0] realign_prev(logic [VlanBits-1:0] head,
                                                        logic [DataWidth-1:EthBits] hold,
                                                        logic vlan, logic ipv6,
                                                        logic [5:0] l4_rel, logic [2:0] k);
    logic [DataWidth-1:0] raw;
    if (vlan) begin
      raw = {head, hold[DataWidth-1:VlanBits]};
    end else begin
      raw = {head[EthBits-1:0], hold};
    end
    return raw | mask_beat(ipv6, l4_rel, k);
  endfunction

  // Realigned beat j: this beat's own bytes from the IP header on (masked);
  // it only feeds the tail launch register and may use the decode of this
  // very beat.
  function automatic logic [DataWidth-1:0] realign_cur(logic [DataWidth-1:EthBits] d,
                                                       logic vlan, logic ipv6,
                                                       logic [5:0] l4_rel, logic [2:0] k);
    logic [DataWidth-1:0] raw;
    if (vlan) begin
      raw = {{VlanBits{1'b0}}, d[DataWidth-1:VlanBits]};
    end else begin
      raw = {{EthBits{1'b0}}, d};
    end
    return raw | mask_beat(ipv6, l4_rel, k);
  endfunction

  // ---------------------------------------------------------------------------
  // Input stage: realign, mask, body CRC, tail launch
  // ---------------------------------------------------------------------------
  logic                  in_frame_q;   // the next beat continues a frame
  logic [2:0]            beat_q;       // index of the next beat, saturating
  icrc_pkg::frame_info_t info_q;       // decoded from the frame's first beat
  logic [DataWidth-1:0]  hold_q;       // previous beat of the frame
  logic [31:0]           crc_q;        // raw body CRC after the realigned full beats

  logic                  beat;         // a beat is accepted this cycle
  logic                  first;        // ... and it is a frame's first

  assign s_axis_tready_o = 1'b1;
  assign beat     = s_axis_tvalid_i;
  assign first    = !in_frame_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      in_frame_q <= 1'b0;
    end else if (beat) begin
      in_frame_q <= !s_axis_tlast_i;
    end
  end

  // Tail launch register: the state the cascade starts from.
  logic                 launch_valid_q;
  logic [31:0]          launch_crc_q;
  logic [DataWidth-1:0] launch_data_q;
  logic [LenWidth-1:0]  launch_len_q;
  logic [31:0]          launch_icrc_rx_q;
  logic                 launch_err_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      launch_valid_q <= 1'b0;
    end else begin
      launch_valid_q <= beat && s_axis_tlast_i;
    end
  end

  // The datapath of the input stage. Its combinational logic (decode,
  // realign, mask, the body CRC, where the frame ends) is written inside
  // the clocked process, under the enables of the registers it feeds: the
  // hardware is the same logic in front of the same registers, and a
  // simulator evaluates it once per accepted beat instead of at every
  // change of the inputs and every edge. One body CRC serves both of its
  // loads: the body register on a beat that is not the last (after a last
  // beat the next frame pre-loads it, so its value there is never read) and
  // the launch register on a last beat.
  //
  // Where the frame ends, known in the cycle of its last beat (n bytes
  // valid in it): the held beat is the tail when n < ip_off + 4; the tail
  // is n - ip_off - 4 bytes, or B + n - ip_off - 4 when the held beat is
  // the tail: B is 2**LenWidth, so both are the same sum mod B. The 4 ICRC
  // bytes end at lane n of this beat; the window puts the held beat below
  // this one so that they may straddle the two.
  always_ff @(posedge clk_i) begin : p_input
    logic [2:0]            beat_idx;
    icrc_pkg::frame_info_t info;
    logic [CountWidth-1:0] n;
    logic [6:0]            ip_off;
    logic                  prev_is_tail;
    logic [DataWidth-1:0]  prev_aligned;
    logic [31:0]           crc_body;
    if (beat) begin
      beat_idx = first ? 3'd0 : beat_q;
      info     = first ? decode_first_beat(s_axis_tdata_i[HeadBits-1:0]) : info_q;
      hold_q <= s_axis_tdata_i;
      beat_q <= (beat_idx == BeatCntMax) ? BeatCntMax : beat_idx + 3'd1;
      info_q <= info;
      prev_is_tail = 1'b0;
      if (s_axis_tlast_i) begin
        n            = keep_count(s_axis_tkeep_i);
        ip_off       = info.vlan ? 7'(icrc_pkg::VLAN_HDR_BYTES) : 7'(icrc_pkg::ETH_HDR_BYTES);
        prev_is_tail = !first && (32'(n) < 32'(ip_off) + icrc_pkg::ICRC_BYTES);
      end
      if (!first) begin
        prev_aligned = realign_prev(s_axis_tdata_i[VlanBits-1:0], hold_q[DataWidth-1:EthBits],
                                    info_q.vlan, info_q.ipv6, info_q.l4_rel, beat_q - 3'd1);
      end
      if (first) begin
        crc_body = icrc_pkg::CRC_LRH_PRELOAD;
      end else if (prev_is_tail) begin
        crc_body = crc_q;
      end else begin
        crc_body = crc_step(crc_q, prev_aligned);
      end
      if (!s_axis_tlast_i) begin
        crc_q <= crc_body;
      end else begin
        launch_crc_q <= crc_body;
        if (prev_is_tail) begin
          launch_data_q <= prev_aligned;
        end else begin
          launch_data_q <= realign_cur(s_axis_tdata_i[DataWidth-1:EthBits], info.vlan, info.ipv6,
                                       info.l4_rel, beat_idx);
        end
        launch_len_q     <= LenWidth'(n) - LenWidth'(ip_off) - LenWidth'(icrc_pkg::ICRC_BYTES);
        launch_icrc_rx_q <= 32'({s_axis_tdata_i, hold_q} >> (8 * (DataBytes + 32'(n) - icrc_pkg::ICRC_BYTES)));
        launch_err_q     <= info.bad || (32'(beat_idx) * DataBytes + 32'(n) < 32'(info.min_len));
      end
    end
  end

  // ---------------------------------------------------------------------------
  // Tail cascade: chunks of DataBytes/2, /4, ... 1 bytes, one register each
  // ---------------------------------------------------------------------------
  for (genvar s = 0; s < TailStages; s++) begin : g_tail
    localparam int unsigned ChunkBytes = DataBytes >> (s + 1);
    logic                    valid_in;
    logic [31:0]             crc_in;
    logic [2*ChunkBytes*8-1:0] data_in;
    logic [LenWidth-1:0]     len_in;
    logic [31:0]             icrc_rx_in;
    logic                    err_in;
    logic                    valid_out;
    logic [31:0]             crc_out;
    logic [ChunkBytes*8-1:0] data_out;
    logic [LenWidth-1:0]     len_out;
    logic [31:0]             icrc_rx_out;
    logic                    err_out;

    if (s == 0) begin : g_from_launch
      assign valid_in   = launch_valid_q;
      assign crc_in     = launch_crc_q;
      assign data_in    = launch_data_q;
      assign len_in     = launch_len_q;
      assign icrc_rx_in = launch_icrc_rx_q;
      assign err_in     = launch_err_q;
    end else begin : g_from_prev
      assign valid_in   = g_tail[s-1].valid_out;
      assign crc_in     = g_tail[s-1].crc_out;
      assign data_in    = g_tail[s-1].data_out;
      assign len_in     = g_tail[s-1].len_out;
      assign icrc_rx_in = g_tail[s-1].icrc_rx_out;
      assign err_in     = g_tail[s-1].err_out;
    end

    icrc_tail_stage #(
      .ChunkBytes(ChunkBytes),
      .LenWidth  (LenWidth)
    ) u_stage (
      .clk_i    (clk_i),
      .rst_ni   (rst_ni),
      .valid_i  (valid_in),
      .crc_i    (crc_in),
      .data_i   (data_in),
      .len_i    (len_in),
      .icrc_rx_i(icrc_rx_in),
      .err_i    (err_in),
      .valid_o  (valid_out),
      .crc_o    (crc_out),
      .data_o   (data_out),
      .len_o    (len_out),
      .icrc_rx_o(icrc_rx_out),
      .err_o    (err_out)
    );
  end

  // ---------------------------------------------------------------------------
  // Result
  // ---------------------------------------------------------------------------
  logic        done_valid;
  logic [31:0] done_icrc;
  logic [31:0] done_icrc_rx;
  logic        done_err;
  logic [8+LenWidth-1:0] unused_done;  // the last stage's leftovers are empty

  assign done_valid   = g_tail[TailStages-1].valid_out;
  assign done_icrc    = ~g_tail[TailStages-1].crc_out;  // zlib's final inversion
  assign done_icrc_rx = g_tail[TailStages-1].icrc_rx_out;
  assign done_err     = g_tail[TailStages-1].err_out;
  assign unused_done  = {g_tail[TailStages-1].data_out, g_tail[TailStages-1].len_out};

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      m_valid_o <= 1'b0;
    end else begin
      m_valid_o <= done_valid;
    end
  end

  // Loaded only with a result (a clock enable): the m_* data ports hold
  // the last result between strobes.
  always_ff @(posedge clk_i) begin
    if (done_valid) begin
      m_icrc_o    <= done_icrc;
      m_icrc_ok_o <= !done_err && (done_icrc == done_icrc_rx);
      m_err_o     <= done_err;
    end
  end

endmodule
