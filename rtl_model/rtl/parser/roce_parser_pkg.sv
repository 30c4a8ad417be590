// Constants, types and helpers of the RoCE v2 header parser.
//
// The opcode table and the verdict codes are not here: they are generated
// from the C++ packet core into roce_parser_gen_pkg (gen_roce_parser_pkg.cc),
// which must be compiled before this package. The C++ twin of the parser is
// simnic::roce::parse_header_vector() (protocol/roce/include/simnic/roce/
// header_vector.h); every field below means what it means there.
package roce_parser_pkg;

  localparam logic [15:0] ETHERTYPE_IPV4 = 16'h0800;
  localparam logic [15:0] ETHERTYPE_IPV6 = 16'h86DD;
  localparam logic [15:0] ETHERTYPE_VLAN = 16'h8100;
  localparam logic [7:0]  IP_PROTO_UDP   = 8'd17;
  localparam logic [15:0] ROCE_V2_PORT   = 16'd4791;

  localparam int unsigned ETH_HDR_BYTES       = 14;  // MAC addresses and ethertype
  localparam int unsigned VLAN_TAG_BYTES      = 4;   // one 802.1Q tag
  localparam int unsigned IPV4_HDR_BYTES      = 20;  // without options
  localparam int unsigned IPV4_MAX_HDR_BYTES  = 60;  // IHL 15
  localparam int unsigned IPV6_HDR_BYTES      = 40;  // no extension headers
  localparam int unsigned UDP_HDR_BYTES       = 8;
  localparam int unsigned ICRC_BYTES          = 4;
  // Frames of at most this many bytes (no FCS) may carry Ethernet padding
  // after the IP packet.
  localparam int unsigned ETH_MIN_FRAME_BYTES = 60;

  // Every header byte the parser reads lies in the first HDR_SPAN_BYTES of a
  // frame: the longest case is a VLAN tag, IPv4 with IHL 15, UDP and the
  // longest BTH + extension headers (126 bytes with today's table).
  localparam int unsigned HDR_SPAN_BYTES = ETH_HDR_BYTES + VLAN_TAG_BYTES + IPV4_MAX_HDR_BYTES +
                                           UDP_HDR_BYTES + roce_parser_gen_pkg::MAX_HDR_BYTES;
  // The UDP header starts at 14 or 18 plus IHL*4 or 40: always 2 mod 4, from
  // L4_MIN_OFF to L4_MAX_OFF.
  localparam int unsigned L4_MIN_OFF = ETH_HDR_BYTES + IPV4_HDR_BYTES;
  localparam int unsigned L4_MAX_OFF = ETH_HDR_BYTES + VLAN_TAG_BYTES + IPV4_MAX_HDR_BYTES;
  // The UDP header, the BTH and the longest extension headers.
  localparam int unsigned L4_WIN_BYTES  = UDP_HDR_BYTES + roce_parser_gen_pkg::MAX_HDR_BYTES;
  localparam int unsigned BTH_WIN_BYTES = roce_parser_gen_pkg::MAX_HDR_BYTES;

  // Frame lengths are counted in LEN_WIDTH bits, saturating. Any frame longer
  // than an IP packet can describe (65535 + 18 bytes) fails the IP length
  // check whatever its exact length, so saturation changes no verdict.
  localparam int unsigned LEN_WIDTH = 17;

  // The header vector: one per frame. On a drop every field but verdict is
  // zero; on accept, extension header fields the opcode does not carry are
  // zero. Multi-byte fields are numbers (the wire's big-endian order undone).
  typedef struct packed {
    roce_parser_gen_pkg::verdict_e verdict;
    logic         has_vlan;         // one 802.1Q tag
    logic [15:0]  vlan_tci;         // its TCI (0 without a tag)
    logic [3:0]   ip_version;       // 4 or 6
    logic [127:0] src_ip;           // IPv6 address, or IPv4 address in bits 31:0
    logic [127:0] dst_ip;
    logic [15:0]  udp_sport;
    logic [7:0]   opcode;           // BTH
    logic         se;
    logic         mig;
    logic [1:0]   pad;
    logic [15:0]  pkey;
    logic         fecn;
    logic         becn;
    logic [23:0]  dqpn;
    logic         ack_req;
    logic [23:0]  psn;
    logic [31:0]  op_mask;          // the opcode's mask (roce_parser_gen_pkg::OP_*)
    logic [31:0]  deth_qkey;        // DETH
    logic [23:0]  deth_src_qp;
    logic [63:0]  reth_va;          // RETH
    logic [31:0]  reth_rkey;
    logic [31:0]  reth_dma_len;
    logic [63:0]  atomic_va;        // AtomicETH
    logic [31:0]  atomic_rkey;
    logic [63:0]  atomic_swap_add;
    logic [63:0]  atomic_compare;
    logic [7:0]   aeth_syndrome;    // AETH
    logic [23:0]  aeth_msn;
    logic [63:0]  atomic_ack_orig;  // AtomicAckETH
    logic [31:0]  imm;              // ImmDt
    logic [31:0]  ieth_rkey;        // IETH
    logic [7:0]   l3_off;           // byte offsets from the start of the frame
    logic [7:0]   l4_off;
    logic [7:0]   bth_off;
    logic [7:0]   payload_off;
    logic [15:0]  payload_len;      // payload bytes, without pad and ICRC
  } header_vector_t;

  // Streams carry byte 0 of the wire in bits 7:0. These turn a slice of
  // consecutive wire bytes into the big-endian number they encode.
  function automatic logic [15:0] be16(logic [15:0] b);
    return {b[7:0], b[15:8]};
  endfunction

  function automatic logic [23:0] be24(logic [23:0] b);
    return {b[7:0], b[15:8], b[23:16]};
  endfunction

  function automatic logic [31:0] be32(logic [31:0] b);
    return {be16(b[15:0]), be16(b[31:16])};
  endfunction

  function automatic logic [63:0] be64(logic [63:0] b);
    return {be32(b[31:0]), be32(b[63:32])};
  endfunction

  function automatic logic [127:0] be128(logic [127:0] b);
    return {be64(b[63:0]), be64(b[127:64])};
  endfunction

endpackage
