// The RoCE v2 invariant CRC.
//
// The ICRC is the IEEE 802.3 CRC-32 (the one zlib computes) over the frame
// from the IP header to the end of the pad, with the fields a router may
// change replaced by ones, and preceded by eight 0xFF bytes standing in for the
// InfiniBand LRH that RoCE v2 does not carry. The result goes on the wire
// least significant byte first. See docs/wire-format.md.
#pragma once

#include <cstddef>
#include <cstdint>

#include "simnic/roce/packet.h"

namespace simnic::roce {

// CRC-32 (reflected polynomial 0xEDB88320, zlib convention: pass 0 to start,
// pass the previous result to continue).
uint32_t crc32(uint32_t crc, const uint8_t* data, size_t len);

// Compute the ICRC of a frame whose IP header starts at l3_off and whose UDP
// header starts at l4_off. The ICRC covers [l3_off, len - 4).
// Returns 0 (and reads nothing) unless the IP header is at most 60 bytes and
// len >= l4_off + 8 + 12 + 4 (IP, UDP, BTH and ICRC present).
uint32_t compute_icrc(const uint8_t* frame, size_t len, size_t l3_off, size_t l4_off,
                      IpVersion version);

// The implementations behind crc32(), exposed for the unit tests and the
// benchmark (testbench/bench/bench_crc.cpp). All follow crc32()'s convention.
// crc32() uses the 512-bit carry-less multiply one for inputs of at least
// kVclmulMinBytes when the CPU has it, the 128-bit one for inputs of at
// least kClmulMinBytes when the CPU has that, and the table one otherwise.
namespace detail {

inline constexpr size_t kClmulMinBytes = 64;
inline constexpr size_t kVclmulMinBytes = 256;

// Slicing-by-8 tables; any CPU, any length.
uint32_t crc32_portable(uint32_t crc, const uint8_t* data, size_t len);

// True when this CPU has PCLMULQDQ and SSE4.1 (always false off x86).
bool clmul_available();

// PCLMULQDQ folding; any length (pieces under 16 bytes go through the
// tables). Only call it when clmul_available().
uint32_t crc32_clmul(uint32_t crc, const uint8_t* data, size_t len);

// True when this CPU (and OS) has VPCLMULQDQ with AVX-512F and AVX-512VL
// besides what clmul_available() asks.
bool vclmul_available();

// VPCLMULQDQ folding on 512-bit registers; any length (under 256 bytes it is
// crc32_clmul). Only call it when vclmul_available().
uint32_t crc32_vclmul(uint32_t crc, const uint8_t* data, size_t len);

}  // namespace detail

}  // namespace simnic::roce
