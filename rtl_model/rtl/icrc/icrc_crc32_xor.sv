// Parallel CRC-32: advance the raw (uninverted) reflected CRC register over
// DataBytes bytes in one step. Purely combinational.
//
// The update is linear over GF(2), so every output bit is the XOR of a fixed
// subset of the 32 state bits and the 8*DataBytes data bits. The subsets are
// computed at elaboration by running the bit-serial LFSR symbolically: each
// register bit holds the set of inputs it depends on instead of a value. The
// hardware is then one balanced XOR tree per output bit; its depth is
// log2 of the row weight (about half of 32 + 8*DataBytes inputs).
//
// The engine itself (icrc_engine, icrc_tail_stage) computes the same XOR
// trees inside its clocked processes, under the enable of the register they
// load, so that a simulator evaluates them once per loading edge; this
// module is the same function for designs that want it as an instance.
//
// Byte 0 (data_i[7:0]) is the first byte on the wire; within a byte the
// least significant bit goes first (the reflected convention).
module icrc_crc32_xor #(
  // Bytes absorbed per step; any value >= 1.
  parameter int unsigned DataBytes = 64
) (
  input  logic [31:0]            crc_i,   // raw CRC register before the bytes
  input  logic [8*DataBytes-1:0] data_i,  // bytes, lane 0 first
  output logic [31:0]            crc_o    // raw CRC register after the bytes
);
  localparam int unsigned DataBits = 8 * DataBytes;
  // Inputs of the XOR network: {data, state}, state in the low 32 bits.
  localparam int unsigned InBits = DataBits + 32;

  if (DataBytes < 1) begin : g_bad_width
    $error("icrc_crc32_xor: DataBytes must be at least 1, got %0d", DataBytes);
  end

  // Row k is the set of inputs whose XOR is output bit k.
  function automatic logic [31:0][InBits-1:0] gen_rows();
    logic [31:0][InBits-1:0] s;
    logic [InBits-1:0] fb;
    for (int unsigned k = 0; k < 32; k++) begin
      s[k] = '0;
      s[k][k] = 1'b1;
    end
    for (int unsigned i = 0; i < DataBits; i++) begin
      // Serial step: fb = crc[0] ^ d; crc = (crc >> 1) ^ (fb ? POLY : 0).
      fb = s[0];
      fb[32 + i] = 1'b1;  // data bit i enters here and nowhere earlier
      for (int unsigned k = 0; k < 31; k++) begin
        s[k] = s[k + 1] ^ (icrc_pkg::CRC_POLY[k] ? fb : '0);
      end
      s[31] = icrc_pkg::CRC_POLY[31] ? fb : '0;
    end
    return s;
  endfunction

  localparam logic [31:0][InBits-1:0] Rows = gen_rows();

  logic [InBits-1:0] in_bits;
  assign in_bits = {data_i, crc_i};

  always_comb begin
    for (int unsigned k = 0; k < 32; k++) begin
      crc_o[k] = ^(in_bits & Rows[k]);
    end
  end

endmodule
