// The CM fuzzer's input (fuzz_cm.cc): a sequence of steps, each an opcode
// byte and its arguments, so that the fuzzing engine mutates scenarios
// (listen, a REQ arrives, accept, the RTU is lost, a DREQ crosses ours...)
// rather than raw bytes alone. make_cm_seeds.cc writes real scenarios in
// this form. Every byte sequence is a valid input: a step whose arguments
// run out reads zeros.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_bytes.h"

namespace simnic::fuzz::cm_input {

// The application's side (librdmacm's calls, as the daemon makes them) and
// the wire's. Arguments in brackets, one byte each unless said.
enum Op : std::uint8_t {
    Create = 0,      // [ps: 0 TCP, 1 UDP, 2 IB, else a port space none has] [channel]
    Listen,          // [id] [port] [addr: 0 any, 1 the v4 GID, 2 the v6 GID, 3 a foreign one]
    Connect,         // [id] [port] [dst: 0 peer v4, 1 peer v6, 2 no route] [qpn] [private bytes]
    Accept,          // [id] [qpn] [responder resources] [initiator depth] [private bytes]
    Reject,          // [id] [private bytes]
    Establish,       // [id]
    Disconnect,      // [id]
    Destroy,         // [id]
    DestroyChannel,  // [channel]
    Migrate,         // [id] [channel]
    Mad,             // see MadKind: [kind] [device] [sent] [flags] [u32 comm] [u32 qpn] [u8 x4]
                     // [patches n] n x [offset] [byte] [truncate]
    Time,            // [ms / 8]
    RemovePort,      // [device]: the device goes away (and comes back at the next step)
    Notify,          // [id] [event: an ibv_event_type, COMM_EST 4 and PATH_MIG 6 the ones it knows]
    SetOption,       // [id] [which: 0 REUSEADDR, 1 AFONLY, 2 ACK_TIMEOUT, 3 IB_PATH, 4 TOS] [value]
    kOpCount
};

// What a Mad step builds. `sent` picks one of the MADs the agent has sent
// (modulo their count): a reply takes its communication IDs from it, so that
// answers reach the IDs waiting for them.
enum MadKind : std::uint8_t {
    Req = 0,
    Rep,
    Rtu,
    Rej,
    Dreq,
    Drep,
    Mra,
    SidrReq,
    SidrRep,
    Lap,      // 0x0019: not one simnic's CM answers
    Apr,      // 0x001A
    Unknown,  // an attribute of the CM class no one defines
    Raw,      // the 256 bytes are the input's
    kKindCount
};

// The flags byte of a Mad step.
inline constexpr std::uint8_t kFlagWrongIds = 1;   // comm IDs from the input, not from `sent`
inline constexpr std::uint8_t kFlagV6 = 2;         // the cma header says IPv6
inline constexpr std::uint8_t kFlagUdpPs = 4;      // the service ID is of the UDP port space
inline constexpr std::uint8_t kFlagBadCma = 8;     // the cma header's version is not rdma_cm's
inline constexpr std::uint8_t kFlagOtherPort = 16; // the second listening port's service ID

// The ports inputs name: [port] % 3.
inline constexpr std::uint16_t kPorts[3] = {7471, 7472, 0};
// Connect's explicit source port (so that a leaked ID holding it shows).
inline constexpr std::uint16_t kActivePort = 7473;

using Reader = ByteReader;

// Builders for the seed program.
struct Writer : ByteWriter<Writer> {
    Writer& op(Op o) { return u8(o); }
    // A Mad step without patches, full length.
    Writer& mad(MadKind k, std::uint8_t sent, std::uint8_t flags = 0, std::uint32_t comm = 0x1000,
                std::uint32_t qpn = 0x11, std::uint8_t a = 3, std::uint8_t b2 = 0, std::uint8_t c = 0,
                std::uint8_t d = 0) {
        op(Mad).u8(k).u8(0).u8(sent).u8(flags).u32(comm).u32(qpn).u8(a).u8(b2).u8(c).u8(d);
        return u8(0).u8(0);
    }
};

}  // namespace simnic::fuzz::cm_input
