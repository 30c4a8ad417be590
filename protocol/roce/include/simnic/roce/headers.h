// Decoded forms of the headers of a RoCE v2 frame.
//
// These are plain values; their byte layouts live only in the codecs in
// packet.cc. Every field a header carries is kept, reserved bits included, so
// that decoding then encoding a frame reproduces it byte for byte.
#pragma once

#include <array>
#include <cstdint>

namespace simnic::roce {

using MacAddr = std::array<uint8_t, 6>;
using Ipv6Addr = std::array<uint8_t, 16>;

inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeIpv6 = 0x86dd;
inline constexpr uint16_t kEtherTypeVlan = 0x8100;
inline constexpr uint8_t kIpProtoUdp = 17;
inline constexpr uint16_t kRoceV2Port = 4791;
inline constexpr size_t kEthHdrBytes = 14;
inline constexpr size_t kVlanTagBytes = 4;
inline constexpr size_t kIpv4HdrBytes = 20;  // without options
inline constexpr size_t kIpv6HdrBytes = 40;
inline constexpr size_t kUdpHdrBytes = 8;
inline constexpr size_t kIcrcBytes = 4;
inline constexpr size_t kEthMinFrameBytes = 60;  // without the FCS

struct EthHdr {
    MacAddr dst{};
    MacAddr src{};
    bool has_vlan = false;
    uint16_t vlan_tci = 0;  // PCP(3) DEI(1) VID(12)
    uint16_t ethertype = kEtherTypeIpv4;  // of the payload, after any VLAN tag
};

struct Ipv4Hdr {
    uint8_t ihl = 5;  // header length in 32-bit words; >5 means options follow
    uint8_t tos = 0;
    uint16_t total_len = 0;
    uint16_t id = 0;
    uint16_t frag = 0x4000;  // flags(3) and fragment offset(13); rxe sets DF
    uint8_t ttl = 64;
    uint8_t protocol = kIpProtoUdp;
    uint16_t checksum = 0;
    uint32_t src = 0;
    uint32_t dst = 0;
    std::array<uint8_t, 40> options{};  // (ihl - 5) * 4 bytes are meaningful
};

struct Ipv6Hdr {
    uint8_t traffic_class = 0;
    uint32_t flow_label = 0;  // 20 bits
    uint16_t payload_len = 0;
    uint8_t next_header = kIpProtoUdp;
    uint8_t hop_limit = 64;
    Ipv6Addr src{};
    Ipv6Addr dst{};
};

struct UdpHdr {
    uint16_t sport = 0;
    uint16_t dport = kRoceV2Port;
    uint16_t length = 0;
    uint16_t checksum = 0;
};

// Base Transport Header (IBA 9.2). On RoCE v2 the first bits of byte 4 carry
// FECN and BECN; the rest of byte 4 is reserved (rxe calls it resv6a).
struct Bth {
    uint8_t opcode = 0;
    bool se = false;      // solicited event
    bool mig = false;     // migration state
    uint8_t pad = 0;      // pad count, 0..3
    uint8_t tver = 0;     // transport header version, 0
    uint16_t pkey = 0xffff;
    bool fecn = false;
    bool becn = false;
    uint8_t resv6 = 0;    // byte 4, bits 5..0
    uint32_t dqpn = 0;    // 24 bits
    bool ack_req = false;
    uint8_t resv7 = 0;    // byte 8, bits 6..0
    uint32_t psn = 0;     // 24 bits
};

struct Deth {
    uint32_t qkey = 0;
    uint8_t resv8 = 0;
    uint32_t src_qp = 0;  // 24 bits
};

struct Reth {
    uint64_t va = 0;
    uint32_t rkey = 0;
    uint32_t dma_len = 0;
};

// FETH (FLUSH): placement type and selectivity level; the other bits are
// reserved and kept for a byte-exact round trip.
struct Feth {
    uint8_t placement = 0;  // bits 3..0 (roce::feth::kPlacement*)
    uint8_t selectivity = 0;  // bits 5..4 (roce::feth::kSelect*)
    uint32_t resv = 0;  // bits 31..6, shifted down
};

struct AtomicEth {
    uint64_t va = 0;
    uint32_t rkey = 0;
    uint64_t swap_add = 0;
    uint64_t compare = 0;
};

// AETH syndrome: bits 7..5 select ACK (000), RNR NAK (001) or NAK (011); the
// low five bits are the credit count, RNR timer or NAK code respectively.
struct Aeth {
    uint8_t syndrome = 0;
    uint32_t msn = 0;  // 24 bits
};

enum class AethType : uint8_t { Ack = 0, RnrNak = 1, Reserved = 2, Nak = 3 };
enum class NakCode : uint8_t {
    PsnSequenceError = 0,
    InvalidRequest = 1,
    RemoteAccessError = 2,
    RemoteOperationalError = 3,
    InvalidRdRequest = 4,
};
constexpr AethType aeth_type(uint8_t syndrome) {
    return static_cast<AethType>((syndrome >> 5) & 3);
}
constexpr uint8_t aeth_value(uint8_t syndrome) { return syndrome & 0x1f; }
constexpr uint8_t make_syndrome(AethType t, uint8_t value) {
    return static_cast<uint8_t>((static_cast<uint8_t>(t) << 5) | (value & 0x1f));
}

struct AtomicAckEth {
    uint64_t orig = 0;
};

// Every transport header the opcode table can name. Which members are
// meaningful is decided by the opcode's mask, never by the values.
struct TransportHdrs {
    Bth bth;
    Deth deth;
    Feth feth;
    Reth reth;
    AtomicEth atomic;
    Aeth aeth;
    AtomicAckEth atomic_ack;
    uint32_t imm = 0;        // ImmDt, host order
    uint32_t ieth_rkey = 0;  // IETH
    // A CNP's reserved bytes after the BTH (annex A17.9.3), kept so that a
    // decoded CNP encodes back byte for byte; a sender leaves them zero.
    std::array<uint8_t, 16> cnp_resv{};
};

}  // namespace simnic::roce
