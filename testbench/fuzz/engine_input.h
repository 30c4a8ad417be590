// The receive-path fuzzer's input (fuzz_engine_rx.cc): a sequence of steps,
// an opcode byte and its arguments each. make_engine_seeds.cc writes real
// exchanges in this form. Every byte sequence is a valid input: a step
// whose arguments run out reads zeros.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_bytes.h"

namespace simnic::fuzz::engine_input {

enum Op : std::uint8_t {
    // [slot] [opcode] [psn mode] [psn delta i8] [f1] [f2] [u16 payload length]
    // [key: mr << 3 | key kind] [u16 va offset] [u32 dma length] [syndrome]
    // [u32 x] [u64 swap] [u64 compare] [patches n] n x ([u16 offset] [byte])
    Frame = 0,
    Raw,       // [flags: 1 fix the ICRC, 2 as an IP packet] [u16 length] bytes
    Timers,    // every timer of every QP fires
    PostRecv,  // [slot, or 0xFF: the SRQ]
    ToErr,     // [slot]: MODIFY_QP to ERR
    Destroy,   // [slot]: DESTROY_QP
    Send,      // [slot] [what]: a send WQE (SEND, WRITE, READ, CMP_AND_SWP)
    kOpCount
};

// QP slots (fuzz_engine_rx.cc, populate()): 0 RC RTS with requests
// outstanding, 1 RC RTS, 2 RC RTR, 3 RC RTS on the SRQ, 4 UC RTS, 5 UC RTR,
// 6 UD RTS, 7 UD RTS on the SRQ, 8 RC INIT, 9 RC ERR, 10 UC RESET, 11 RC SQD.
inline constexpr std::uint8_t kSlotRawQpn = 0xFE;  // the QPN is x's low 24 bits
inline constexpr std::uint8_t kSlotGsi = 0xFD;     // QP1

// PSN modes: 0 the responder's expected PSN, 1 the requester's oldest
// unacknowledged, 2 the QP's initial send PSN; each plus the delta. 3: x.

// f1
inline constexpr std::uint8_t kF1Ipv6 = 1;
inline constexpr std::uint8_t kF1Foreign = 2;   // from an address that is not the peer's
inline constexpr std::uint8_t kF1AsIp = 4;      // handed as an IP packet (the UDP port)
inline constexpr std::uint8_t kF1Vlan = 8;
inline constexpr std::uint8_t kF1Se = 16;
inline constexpr std::uint8_t kF1AckReq = 32;
inline constexpr std::uint8_t kF1FixIcrc = 64;  // after the patches: a valid ICRC again
// f2
inline constexpr std::uint8_t kF2SameTransport = 1;  // the opcode moved to the QP's transport
inline constexpr std::uint8_t kF2Mig = 2;
inline constexpr std::uint8_t kF2OtherPkey = 4;
inline constexpr std::uint8_t kF2Tver = 8;
inline constexpr std::uint8_t kF2Fecn = 16;
inline constexpr std::uint8_t kF2RawVa = 32;     // RETH/AtomicETH va: the swap field
inline constexpr std::uint8_t kF2RawLen = 64;    // RETH dma length as given (else modulo 8 KiB)
inline constexpr std::uint8_t kF2Unaligned = 128;
// Shared with other meanings where they cannot clash.
inline constexpr std::uint8_t kF2RawQkey = kF2Mig;
inline constexpr std::uint8_t kF2Truncate = kF2Tver;

inline constexpr int kMaxSteps = 64;
inline constexpr std::size_t kMaxSentPerStep = 512;

using Reader = ByteReader;

struct Writer : ByteWriter<Writer> {
    Writer& op(Op o) { return u8(o); }
    struct F {
        std::uint8_t slot = 0, opcode = 0, psn_mode = 0;
        std::int8_t psn_delta = 0;
        std::uint8_t f1 = 0, f2 = 0;
        std::uint16_t len = 0;
        std::uint8_t key = 0;
        std::uint16_t va_off = 64;
        std::uint32_t dma_len = 0;
        std::uint8_t syndrome = 0;
        std::uint32_t x = 0;
        std::uint64_t swap = 0, compare = 0;
    };
    Writer& frame(const F& f) {
        op(Frame).u8(f.slot).u8(f.opcode).u8(f.psn_mode).u8(static_cast<std::uint8_t>(f.psn_delta)).u8(f.f1).u8(f.f2);
        u16(f.len).u8(f.key).u16(f.va_off).u32(f.dma_len).u8(f.syndrome).u32(f.x).u64(f.swap).u64(f.compare);
        return u8(0);  // no patches
    }
};

}  // namespace simnic::fuzz::engine_input
