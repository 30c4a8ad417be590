// One stage of the ICRC engine's tail cascade.
//
// The last, partial piece of a frame (0 .. DataBytes-1 bytes, lane 0 first)
// is absorbed by a chain of stages with chunk sizes DataBytes/2, /4, ... 1.
// The stage for chunk C absorbs the next C bytes when bit log2(C) of the
// remaining length is set, so the chain covers every length with log2 stages
// of fixed-size XOR trees instead of one variable-length CRC. Each stage is
// registered, so back-to-back frames flow through at one per cycle.
//
// The bytes still to be absorbed are always at lane 0: a stage that takes its
// chunk passes on the bytes above it. After this stage fewer than C bytes
// remain, so only C bytes travel on.
//
// Reset: asynchronous, active low (rst_ni), on the valid bit only; the data
// registers are not reset because nothing reads them while valid is low,
// and they load only when valid_i is high.
module icrc_tail_stage #(
  // Chunk absorbed by this stage, in bytes; a power of two.
  parameter int unsigned ChunkBytes = 32,
  // Width of the remaining-length field (log2 of the engine's beat bytes).
  parameter int unsigned LenWidth   = 6
) (
  input  logic                      clk_i,
  input  logic                      rst_ni,

  input  logic                      valid_i,
  input  logic [31:0]               crc_i,       // raw CRC register so far
  input  logic [2*ChunkBytes*8-1:0] data_i,      // bytes still to absorb, lane 0 first
  input  logic [LenWidth-1:0]       len_i,       // how many of them (< 2*ChunkBytes)
  input  logic [31:0]               icrc_rx_i,   // ICRC carried by the frame (passed on)
  input  logic                      err_i,       // frame error (passed on)

  output logic                      valid_o,
  output logic [31:0]               crc_o,
  output logic [ChunkBytes*8-1:0]   data_o,
  output logic [LenWidth-1:0]       len_o,
  output logic [31:0]               icrc_rx_o,
  output logic                      err_o
);
  localparam int unsigned ChunkBits = 8 * ChunkBytes;
  localparam int unsigned LenBit    = $clog2(ChunkBytes);

  if (ChunkBytes == 0 || (ChunkBytes & (ChunkBytes - 1)) != 0) begin : g_bad_chunk
    $error("icrc_tail_stage: ChunkBytes must be a power of two, got %0d", ChunkBytes);
  end
  if (LenBit >= LenWidth) begin : g_bad_len
    $error("icrc_tail_stage: LenWidth %0d too small for ChunkBytes %0d", LenWidth, ChunkBytes);
  end

  // The parallel CRC-32 step (the chunk's): crc_step(), its XOR
  // trees written once for the engine and its tail stages.
  localparam int unsigned CrcDataBits = ChunkBits;
  `include "icrc_crc_step.svh"

  logic take;
  assign take = len_i[LenBit];

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      valid_o <= 1'b0;
    end else begin
      valid_o <= valid_i;
    end
  end

  // The data registers load only with a frame (a clock enable): between
  // frames nothing changes and the chunk's XOR trees are not exercised. The
  // CRC is computed in this process so that it is evaluated only on the
  // edges that load it; it is the same combinational logic in front of the
  // register as an icrc_crc32_xor instance would be.
  always_ff @(posedge clk_i) begin
    if (valid_i) begin
      if (take) begin
        crc_o  <= crc_step(crc_i, data_i[ChunkBits-1:0]);
        data_o <= data_i[2*ChunkBits-1:ChunkBits];
      end else begin
        crc_o  <= crc_i;
        data_o <= data_i[ChunkBits-1:0];
      end
      len_o     <= len_i;
      icrc_rx_o <= icrc_rx_i;
      err_o     <= err_i;
    end
  end

endmodule
