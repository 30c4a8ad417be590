// The BTH opcode table: one entry per RC, UC and UD opcode, naming the
// extension headers the packet carries and its role in a message.
//
// This table is the only place that knows which headers an opcode has. The
// decoder, the encoder, both engines and the RTL parser's testbench all read
// it; header offsets are derived from the mask at compile time so that no
// entry repeats offset arithmetic by hand.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace simnic::roce {

// Extension headers, in the order IBA places them after the BTH. FETH (IBA
// 1.5's memory placement extensions: FLUSH) comes before the RETH.
enum class Ext : uint8_t { DETH, FETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH };
inline constexpr size_t kNumExt = 8;

inline constexpr size_t kBthBytes = 12;
inline constexpr std::array<uint8_t, kNumExt> kExtBytes = {
    8,   // DETH: Q_Key, reserved, source QP
    4,   // FETH: reserved, selectivity level, placement type
    16,  // RETH: virtual address, R_Key, DMA length
    28,  // AtomicETH: virtual address, R_Key, swap/add data, compare data
    4,   // AETH: syndrome, MSN
    8,   // AtomicAckETH: original remote data
    4,   // ImmDt
    4,   // IETH: R_Key to invalidate
};

// Flag bits of an opcode's mask.
// The header bits are ext_flag(Ext), in Ext order.
enum OpFlag : uint32_t {
    kHasDeth = 1u << 0,
    kHasFeth = 1u << 1,
    kHasReth = 1u << 2,
    kHasAtomicEth = 1u << 3,
    kHasAeth = 1u << 4,
    kHasAtomicAckEth = 1u << 5,
    kHasImmDt = 1u << 6,
    kHasIeth = 1u << 7,
    kPayload = 1u << 8,    // carries a payload (possibly of zero bytes)
    kRequest = 1u << 9,    // sent by the requester
    kResponse = 1u << 10,  // sent by the responder (ACK, READ response, atomic ACK)
    kSend = 1u << 11,
    kWrite = 1u << 12,
    kRead = 1u << 13,
    kAtomic = 1u << 14,    // CMP_SWAP and FETCH_ADD (AtomicETH, answered with an ATOMIC ACK)
    kFirst = 1u << 15,     // first packet of a multi-packet message
    kMiddle = 1u << 16,
    kLast = 1u << 17,
    kOnly = kFirst | kLast,  // a one-packet message is both first and last
    kUsesRecvWqe = 1u << 18, // consumes a receive WQE at the responder
    kCompletes = 1u << 19,   // the message completes at this packet
    // IBA 1.5's memory placement extensions (rxe from 6.2). Neither is a
    // WRITE nor an atomic to the checks that test those bits: each has rules
    // of its own (rxe's RXE_ATOMIC_WRITE_MASK and RXE_FLUSH_MASK).
    kAtomicWrite = 1u << 20, // ATOMIC WRITE: RETH and 8 bytes placed at once
    kFlush = 1u << 21,       // FLUSH: FETH and RETH, no payload
    // RoCE v2's Congestion Notification Packet (IBA annex A17.9.3): neither
    // request nor response, for no QP's transport state machines; its BTH is
    // followed by kCnpResvBytes reserved bytes, then the ICRC.
    kCnp = 1u << 22,
};

// The CNP's reserved bytes after the BTH (annex A17.9.3: 16 bytes, sent as
// zero). They are not an IBA extension header, so they have no Ext: the
// table adds them to hdr_bytes after the extension headers.
inline constexpr size_t kCnpResvBytes = 16;

constexpr uint32_t ext_flag(Ext e) { return 1u << static_cast<unsigned>(e); }
static_assert(ext_flag(Ext::FETH) == kHasFeth && ext_flag(Ext::IETH) == kHasIeth &&
              ext_flag(Ext::IETH) < kPayload, "header bits are ext_flag(Ext), below the other flags");

// The opcode's top three bits (IBA 9.2, table 38); 100b is the CNP's
// (RoCE v2 annex A17.9.3), which belongs to no QP transport.
enum class Transport : uint8_t { RC = 0, UC = 1, RD = 2, UD = 3, CNP = 4 };

struct OpcodeInfo {
    const char* name = nullptr;  // nullptr: opcode not supported
    uint32_t mask = 0;
    uint8_t hdr_bytes = 0;                  // BTH plus all extension headers
    std::array<uint8_t, kNumExt> ext_off{}; // offset from the BTH start; 0 if absent

    constexpr bool valid() const { return name != nullptr; }
    constexpr bool has(uint32_t flags) const { return (mask & flags) == flags; }
    constexpr bool has(Ext e) const { return (mask & ext_flag(e)) != 0; }
    constexpr size_t offset(Ext e) const { return ext_off[static_cast<size_t>(e)]; }
};

// Opcode values (IBA 9.2, table 38). Names follow the spec.
namespace op {
enum : uint8_t {
    RC_SEND_FIRST = 0x00,
    RC_SEND_MIDDLE = 0x01,
    RC_SEND_LAST = 0x02,
    RC_SEND_LAST_WITH_IMMEDIATE = 0x03,
    RC_SEND_ONLY = 0x04,
    RC_SEND_ONLY_WITH_IMMEDIATE = 0x05,
    RC_RDMA_WRITE_FIRST = 0x06,
    RC_RDMA_WRITE_MIDDLE = 0x07,
    RC_RDMA_WRITE_LAST = 0x08,
    RC_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x09,
    RC_RDMA_WRITE_ONLY = 0x0a,
    RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x0b,
    RC_RDMA_READ_REQUEST = 0x0c,
    RC_RDMA_READ_RESPONSE_FIRST = 0x0d,
    RC_RDMA_READ_RESPONSE_MIDDLE = 0x0e,
    RC_RDMA_READ_RESPONSE_LAST = 0x0f,
    RC_RDMA_READ_RESPONSE_ONLY = 0x10,
    RC_ACKNOWLEDGE = 0x11,
    RC_ATOMIC_ACKNOWLEDGE = 0x12,
    RC_COMPARE_SWAP = 0x13,
    RC_FETCH_ADD = 0x14,
    RC_SEND_LAST_WITH_INVALIDATE = 0x16,
    RC_SEND_ONLY_WITH_INVALIDATE = 0x17,
    RC_FLUSH = 0x1c,         // IBA 1.5 memory placement extensions (rxe: 6.2 on)
    RC_ATOMIC_WRITE = 0x1d,
    UC_SEND_FIRST = 0x20,
    UC_SEND_MIDDLE = 0x21,
    UC_SEND_LAST = 0x22,
    UC_SEND_LAST_WITH_IMMEDIATE = 0x23,
    UC_SEND_ONLY = 0x24,
    UC_SEND_ONLY_WITH_IMMEDIATE = 0x25,
    UC_RDMA_WRITE_FIRST = 0x26,
    UC_RDMA_WRITE_MIDDLE = 0x27,
    UC_RDMA_WRITE_LAST = 0x28,
    UC_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x29,
    UC_RDMA_WRITE_ONLY = 0x2a,
    UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x2b,
    UD_SEND_ONLY = 0x64,
    UD_SEND_ONLY_WITH_IMMEDIATE = 0x65,
    CNP = 0x81,              // RoCE v2 annex A17.9.3: Congestion Notification Packet
};
}  // namespace op

constexpr Transport opcode_transport(uint8_t opcode) {
    return static_cast<Transport>(opcode >> 5);
}

namespace detail {
constexpr OpcodeInfo make_op(const char* name, uint32_t mask) {
    OpcodeInfo info{};
    info.name = name;
    info.mask = mask;
    size_t off = kBthBytes;
    for (size_t e = 0; e < kNumExt; ++e) {
        if (mask & (1u << e)) {
            info.ext_off[e] = static_cast<uint8_t>(off);
            off += kExtBytes[e];
        }
    }
    if (mask & kCnp) off += kCnpResvBytes;
    info.hdr_bytes = static_cast<uint8_t>(off);
    return info;
}

constexpr std::array<OpcodeInfo, 256> build_table() {
    std::array<OpcodeInfo, 256> t{};
    // Masks common to the RC and UC send/write families; the transport
    // prefix is added per opcode below.
    constexpr uint32_t req = kRequest;
    constexpr uint32_t send = req | kSend | kPayload | kUsesRecvWqe;
    constexpr uint32_t write = req | kWrite | kPayload;
    constexpr uint32_t imm = kHasImmDt;

    struct Row { uint8_t low; const char* rc; const char* uc; uint32_t mask; };
    // Opcodes shared by RC (0x00) and UC (0x20) with the same low 5 bits.
    constexpr Row shared[] = {
        {0x00, "RC_SEND_FIRST", "UC_SEND_FIRST", send | kFirst},
        {0x01, "RC_SEND_MIDDLE", "UC_SEND_MIDDLE", send | kMiddle},
        {0x02, "RC_SEND_LAST", "UC_SEND_LAST", send | kLast | kCompletes},
        {0x03, "RC_SEND_LAST_WITH_IMMEDIATE", "UC_SEND_LAST_WITH_IMMEDIATE",
         send | imm | kLast | kCompletes},
        {0x04, "RC_SEND_ONLY", "UC_SEND_ONLY", send | kOnly | kCompletes},
        {0x05, "RC_SEND_ONLY_WITH_IMMEDIATE", "UC_SEND_ONLY_WITH_IMMEDIATE",
         send | imm | kOnly | kCompletes},
        {0x06, "RC_RDMA_WRITE_FIRST", "UC_RDMA_WRITE_FIRST", write | kHasReth | kFirst},
        {0x07, "RC_RDMA_WRITE_MIDDLE", "UC_RDMA_WRITE_MIDDLE", write | kMiddle},
        {0x08, "RC_RDMA_WRITE_LAST", "UC_RDMA_WRITE_LAST", write | kLast},
        {0x09, "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
         write | imm | kLast | kUsesRecvWqe | kCompletes},
        {0x0a, "RC_RDMA_WRITE_ONLY", "UC_RDMA_WRITE_ONLY", write | kHasReth | kOnly},
        {0x0b, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
         write | kHasReth | imm | kOnly | kUsesRecvWqe | kCompletes},
    };
    for (const Row& r : shared) {
        t[0x00 | r.low] = make_op(r.rc, r.mask);
        t[0x20 | r.low] = make_op(r.uc, r.mask);
    }
    constexpr uint32_t rresp = kResponse | kRead | kPayload;
    t[op::RC_RDMA_READ_REQUEST] = make_op("RC_RDMA_READ_REQUEST", req | kRead | kHasReth | kOnly);
    t[op::RC_RDMA_READ_RESPONSE_FIRST] =
        make_op("RC_RDMA_READ_RESPONSE_FIRST", rresp | kHasAeth | kFirst);
    t[op::RC_RDMA_READ_RESPONSE_MIDDLE] = make_op("RC_RDMA_READ_RESPONSE_MIDDLE", rresp | kMiddle);
    t[op::RC_RDMA_READ_RESPONSE_LAST] =
        make_op("RC_RDMA_READ_RESPONSE_LAST", rresp | kHasAeth | kLast | kCompletes);
    t[op::RC_RDMA_READ_RESPONSE_ONLY] =
        make_op("RC_RDMA_READ_RESPONSE_ONLY", rresp | kHasAeth | kOnly | kCompletes);
    t[op::RC_ACKNOWLEDGE] = make_op("RC_ACKNOWLEDGE", kResponse | kHasAeth | kOnly);
    t[op::RC_ATOMIC_ACKNOWLEDGE] = make_op(
        "RC_ATOMIC_ACKNOWLEDGE", kResponse | kAtomic | kHasAeth | kHasAtomicAckEth | kOnly | kCompletes);
    t[op::RC_COMPARE_SWAP] = make_op("RC_COMPARE_SWAP", req | kAtomic | kHasAtomicEth | kOnly);
    t[op::RC_FETCH_ADD] = make_op("RC_FETCH_ADD", req | kAtomic | kHasAtomicEth | kOnly);
    t[op::RC_SEND_LAST_WITH_INVALIDATE] = make_op("RC_SEND_LAST_WITH_INVALIDATE",
                                                  send | kHasIeth | kLast | kCompletes);
    t[op::RC_SEND_ONLY_WITH_INVALIDATE] = make_op("RC_SEND_ONLY_WITH_INVALIDATE",
                                                  send | kHasIeth | kOnly | kCompletes);
    // Both are answered with an RDMA READ RESPONSE ONLY without payload
    // (rxe's send_read_response_ack), not with an ACK.
    t[op::RC_FLUSH] = make_op("RC_FLUSH", req | kFlush | kHasFeth | kHasReth | kOnly);
    t[op::RC_ATOMIC_WRITE] =
        make_op("RC_ATOMIC_WRITE", req | kAtomicWrite | kHasReth | kPayload | kOnly);
    t[op::UD_SEND_ONLY] = make_op("UD_SEND_ONLY", send | kHasDeth | kOnly | kCompletes);
    t[op::UD_SEND_ONLY_WITH_IMMEDIATE] =
        make_op("UD_SEND_ONLY_WITH_IMMEDIATE", send | kHasDeth | imm | kOnly | kCompletes);
    // No payload: the 16 reserved bytes are part of its headers.
    t[op::CNP] = make_op("CNP", kCnp);
    return t;
}
}  // namespace detail

inline constexpr std::array<OpcodeInfo, 256> kOpcodeTable = detail::build_table();

inline const OpcodeInfo& opcode_info(uint8_t opcode) { return kOpcodeTable[opcode]; }

// Compile-time checks of a few entries against IBA's header sizes, so a bad
// mask cannot survive a build.
static_assert(kOpcodeTable[op::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE].hdr_bytes == 12 + 16 + 4);
static_assert(kOpcodeTable[op::RC_ATOMIC_ACKNOWLEDGE].hdr_bytes == 12 + 4 + 8);
static_assert(kOpcodeTable[op::RC_COMPARE_SWAP].hdr_bytes == 12 + 28);
static_assert(kOpcodeTable[op::UD_SEND_ONLY_WITH_IMMEDIATE].offset(Ext::ImmDt) == 12 + 8);
static_assert(!kOpcodeTable[0x15].valid(), "0x15 is reserved");
static_assert(kOpcodeTable[op::RC_FLUSH].offset(Ext::FETH) == 12 &&
              kOpcodeTable[op::RC_FLUSH].offset(Ext::RETH) == 12 + 4 &&
              kOpcodeTable[op::RC_FLUSH].hdr_bytes == 12 + 4 + 16);
static_assert(kOpcodeTable[op::RC_ATOMIC_WRITE].hdr_bytes == 12 + 16);
static_assert(kOpcodeTable[op::CNP].hdr_bytes == 12 + 16 && !kOpcodeTable[op::CNP].has(kPayload));
static_assert(opcode_transport(op::CNP) == Transport::CNP);

// FETH (IBA 1.5, 9.2.x): the low byte holds the selectivity level in bits
// 5..4 and the placement type in bits 3..0; the rest is reserved.
namespace feth {
inline constexpr uint8_t kPlacementGlobal = 1;      // global visibility
inline constexpr uint8_t kPlacementPersistent = 2;  // persistence
inline constexpr uint8_t kSelectRange = 0;          // the RETH's range
inline constexpr uint8_t kSelectMr = 1;             // the whole MR (the RETH's VA and length unused)
}  // namespace feth

}  // namespace simnic::roce
