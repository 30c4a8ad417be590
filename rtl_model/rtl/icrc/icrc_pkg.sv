// Constants and types shared by the modules of the RoCE v2 ICRC engine.
//
// The ICRC is zlib's CRC-32 (reflected polynomial, init and final xor all
// ones) over 8 bytes of 0xFF, the IP header, the UDP header and the BTH with
// their variant fields forced to ones, and the rest of the packet up to the
// ICRC itself. The C++ reference is simnic::roce::compute_icrc()
// (protocol/roce/include/simnic/roce/icrc.h).
package icrc_pkg;

  // Reflected IEEE 802.3 CRC-32 polynomial (the one zlib uses).
  localparam logic [31:0] CRC_POLY = 32'hEDB88320;

  localparam logic [15:0] ETHERTYPE_IPV4 = 16'h0800;
  localparam logic [15:0] ETHERTYPE_IPV6 = 16'h86DD;
  localparam logic [15:0] ETHERTYPE_VLAN = 16'h8100;

  localparam int unsigned ETH_HDR_BYTES  = 14;  // MAC addresses and ethertype
  localparam int unsigned VLAN_HDR_BYTES = 18;  // with one 802.1Q tag
  localparam int unsigned IPV6_HDR_BYTES = 40;
  localparam int unsigned UDP_HDR_BYTES  = 8;
  localparam int unsigned BTH_BYTES      = 12;
  localparam int unsigned ICRC_BYTES     = 4;

  // One past the last IP-relative byte a mask can touch: BTH byte 4 behind
  // the longest IPv4 header (IHL 15 = 60 bytes).
  localparam int unsigned MASK_SPAN_BYTES = 60 + UDP_HDR_BYTES + 4 + 1;

  // Advance the raw CRC register (no pre- or post-inversion) over one byte,
  // one bit at a time. Used only to compute constants at elaboration.
  function automatic logic [31:0] crc32_serial_byte(logic [31:0] crc, logic [7:0] data);
    logic [31:0] c;
    c = crc;
    for (int unsigned i = 0; i < 8; i++) begin
      c = (c >> 1) ^ (CRC_POLY & {32{c[0] ^ data[i]}});
    end
    return c;
  endfunction

  // The raw CRC register after the initial all-ones value has absorbed the
  // eight 0xFF bytes that stand in for the InfiniBand LRH. The engine loads
  // this at the start of every frame instead of spending a cycle on them.
  function automatic logic [31:0] crc32_lrh_preload();
    logic [31:0] c;
    c = 32'hFFFF_FFFF;
    for (int unsigned i = 0; i < 8; i++) begin
      c = crc32_serial_byte(c, 8'hFF);
    end
    return c;
  endfunction

  localparam logic [31:0] CRC_LRH_PRELOAD = crc32_lrh_preload();

  // Column `in_bit` of the parallel CRC-32 over data_bits bits: the raw CRC
  // register after the data_bits-bit step when only input bit in_bit is one
  // (in_bit < 32: that bit of the register before the step; else data bit
  // in_bit - 32, data bit 0 the first on the wire). The step is linear over
  // GF(2), so the register after any step is the XOR of the columns of its
  // one bits. A lone data bit i makes the serial register CRC_POLY as it
  // enters, and data_bits-1-i zero bits follow; a lone register bit sees
  // data_bits zero bits. Used only to compute constants at elaboration
  // (icrc_tail_stage, icrc_engine).
  function automatic logic [31:0] crc32_column(int unsigned data_bits, int unsigned in_bit);
    logic [31:0] c;
    int unsigned zeros;
    if (in_bit < 32) begin
      c     = 32'd1 << in_bit;
      zeros = data_bits;
    end else begin
      c     = CRC_POLY;
      zeros = data_bits - 1 - (in_bit - 32);
    end
    for (int unsigned i = 0; i < zeros; i++) begin
      c = (c >> 1) ^ (CRC_POLY & {32{c[0]}});
    end
    return c;
  endfunction

  // What the first beat says about a frame: enough to realign it, mask it
  // and check its length.
  typedef struct packed {
    logic       vlan;      // 802.1Q tag present: the IP header starts at byte 18, else 14
    logic       ipv6;      // IPv6 (else IPv4)
    logic [5:0] l4_rel;    // UDP header offset from the IP header start (IHL*4 or 40)
    logic [6:0] min_len;   // shortest frame holding IP, UDP, BTH and ICRC
    logic       bad;       // not IPv4/IPv6, or IPv4 IHL < 5
  } frame_info_t;

endpackage
