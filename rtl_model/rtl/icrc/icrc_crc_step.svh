// The ICRC engine's parallel CRC-32 step over CrcDataBits data bits
// (icrc_crc32_xor's function), written once for the two modules that
// compute one inside their clocked processes: icrc_engine (a whole
// realigned beat) and icrc_tail_stage (one chunk). Each includes this file
// in its module body after declaring
//   localparam int unsigned CrcDataBits = ...;
// and calls crc_step(crc, data) under its load enable, so that a simulator
// evaluates the trees only on the edges that load them (a combinational
// module instance would be evaluated on every change of its inputs). There
// is no include guard on purpose: every module that includes it needs its
// own copy.
//
// One XOR tree per output bit. From 32 data bits on, the register enters
// the step exactly as the first 32 data bits do (each of its bits meets one
// of them at the feedback), so it is folded into them and each tree has
// CrcDataBits inputs; below that it stays a separate input. The trees are
// written lane by lane, 64 inputs at a time, the width of a simulator's
// words, so that it evaluates each tree in few operations; the hardware is
// the same XOR of the same inputs.

  localparam bit          CrcFold  = (CrcDataBits >= 32);
  localparam int unsigned CrcIn    = CrcFold ? CrcDataBits : CrcDataBits + 32;
  localparam int unsigned CrcLanes = (CrcIn + 63) / 64;

  // Row k: the inputs whose XOR is output bit k. Input i is data bit i
  // (folded: with register bit i), or, unfolded, register bit i for i < 32
  // and data bit i - 32 above.
  function automatic logic [31:0][64*CrcLanes-1:0] crc_rows();
    logic [31:0][64*CrcLanes-1:0] r;
    logic [31:0] col;
    for (int unsigned k = 0; k < 32; k++) r[k] = '0;
    for (int unsigned i = 0; i < CrcIn; i++) begin
      col = icrc_pkg::crc32_column(CrcDataBits, CrcFold ? 32 + i : i);
      for (int unsigned k = 0; k < 32; k++) r[k][i] = col[k];
    end
    return r;
  endfunction

  localparam logic [31:0][64*CrcLanes-1:0] CrcRows = crc_rows();

  // The raw CRC register after `data` (data bit 0 the first on the wire).
  function automatic logic [31:0] crc_step(logic [31:0] crc, logic [CrcDataBits-1:0] data);
    logic [64*CrcLanes-1:0] in_bits;
    logic [63:0]            lane [CrcLanes];
    logic [63:0]            acc;
    if (CrcFold) begin
      in_bits = (64*CrcLanes)'(data) ^ (64*CrcLanes)'(crc);
    end else begin
      in_bits = (64*CrcLanes)'({data, crc});
    end
    for (int unsigned j = 0; j < CrcLanes; j++) lane[j] = in_bits[64*j +: 64];
    for (int unsigned k = 0; k < 32; k++) begin
      acc = '0;
      for (int unsigned j = 0; j < CrcLanes; j++) acc ^= lane[j] & CrcRows[k][64*j +: 64];
      crc_step[k] = ^acc;
    end
  endfunction
