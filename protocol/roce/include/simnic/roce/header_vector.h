// The header vector: what the NIC's receive parser hands the pipeline for
// every frame it sees.
//
// One plain record per frame: a verdict (accept, or why the frame is
// dropped) and, for accepted frames, every header field the pipeline acts
// on, with the offsets of each layer. The RTL parser (rtl_model/rtl/parser/)
// produces exactly this record, field for field, and parse_header_vector()
// below is its C++ twin: the cycle model can run either.
//
// The twin is not a second parser: it calls decode_frame() and reads the
// opcode table, and maps the first DecodeError to a drop reason. The parser
// does not check the ICRC (that is the ICRC engine's job, rtl_model/rtl/icrc/)
// but it does check the IPv4 header checksum.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "simnic/roce/headers.h"
#include "simnic/roce/packet.h"

namespace simnic::roce {

// Why a frame is accepted or dropped. The first failing check, in the order
// decode_frame() makes them, decides. The numeric values are the RTL's
// m_verdict_o codes (the SystemVerilog constants are generated from this
// list and kParseVerdictIds below), so never reorder; append.
enum class ParseVerdict : uint8_t {
    Accept = 0,        // a well-formed RoCE v2 packet; every field below is valid
    TooShort,          // the frame ends inside the Ethernet/802.1Q, IP, UDP or BTH header
                       // (DecodeError Truncated{Ethernet,Ip,Udp,Bth})
    NotIp,             // ethertype, after at most one 802.1Q tag, is not IPv4 or IPv6
    BadIpHeader,       // IP version field disagrees with the ethertype, IPv4 IHL < 5,
                       // or a wrong IPv4 header checksum (BadIpVersion, BadIpHeader)
    IpLengthMismatch,  // IP length field disagrees with the frame length (only frames of
                       // at most 60 bytes may carry Ethernet padding after the IP packet)
    IpFragment,        // IPv4 MF flag or fragment offset set
    NotUdp,            // IPv4 protocol / IPv6 next header is not UDP (17); IPv6 extension
                       // headers are not supported
    UdpLengthMismatch, // UDP length disagrees with the IP length
    NotRoceV2,         // UDP destination port is not 4791
    BadBth,            // opcode not in the opcode table, or BTH TVer != 0
                       // (UnknownOpcode, BadTver)
    TruncatedHeaders,  // too short for the extension headers the opcode names plus the
                       // ICRC (TruncatedExtHeader)
    BadLength,         // pad count or payload length the opcode does not allow
                       // (BadPadCount, LengthMismatch)
};
inline constexpr size_t kNumParseVerdicts = 12;

// Identifiers of the verdicts, in enum order: the generated SystemVerilog
// package names its constants VERDICT_<id>.
inline constexpr std::array<const char*, kNumParseVerdicts> kParseVerdictIds = {
    "ACCEPT",     "TOO_SHORT",           "NOT_IP",      "BAD_IP_HEADER",
    "IP_LENGTH",  "IP_FRAGMENT",         "NOT_UDP",     "UDP_LENGTH",
    "NOT_ROCE_V2", "BAD_BTH",            "TRUNCATED_HEADERS", "BAD_LENGTH",
};

// A human-readable reason ("frame too short for the BTH" ...).
const char* to_string(ParseVerdict v);

// The drop reason for a decode error (Ok and BadIcrc map to Accept: the
// parser does not check the ICRC).
ParseVerdict verdict_of(DecodeError e);

// The record. On a drop every field but `verdict` is zero. On accept, the
// fields of extension headers the opcode does not carry are zero. Multi-byte
// fields are host-order numbers (the wire carries them big-endian).
struct HeaderVector {
    ParseVerdict verdict = ParseVerdict::Accept;

    // ---- Layer 2 ----
    bool has_vlan = false;    // one 802.1Q tag (ethertype 0x8100) precedes the ethertype
    uint16_t vlan_tci = 0;    // its TCI: PCP(3) DEI(1) VID(12); 0 without a tag

    // ---- Layer 3 ----
    uint8_t ip_version = 0;   // 4 or 6
    // Source and destination addresses as 128-bit big-endian numbers, byte 0
    // most significant: IPv6 addresses as they are; an IPv4 address sits in
    // bytes 12..15 (the low 32 bits) with bytes 0..11 zero.
    Ipv6Addr src_ip{};
    Ipv6Addr dst_ip{};

    // ---- Layer 4 ----
    uint16_t udp_sport = 0;   // UDP source port (rxe's flow entropy); the destination is 4791

    // ---- BTH (IBA 9.2) ----
    uint8_t opcode = 0;
    bool se = false;          // solicited event
    bool mig = false;         // migration state
    uint8_t pad = 0;          // pad count 0..3
    uint16_t pkey = 0;        // partition key
    bool fecn = false;        // RoCE v2: forward ECN (BTH byte 4, bit 7)
    bool becn = false;        // RoCE v2: backward ECN (BTH byte 4, bit 6)
    uint32_t dqpn = 0;        // destination QP, 24 bits
    bool ack_req = false;     // acknowledge request
    uint32_t psn = 0;         // packet sequence number, 24 bits

    // The opcode's entry in the opcode table (OpcodeInfo::mask: kHas* header
    // flags, kPayload, request/response, operation and FIRST/MIDDLE/LAST).
    uint32_t op_mask = 0;

    // ---- Extension headers (zero unless op_mask names them) ----
    uint32_t deth_qkey = 0;          // DETH Q_Key
    uint32_t deth_src_qp = 0;        // DETH source QP, 24 bits
    uint64_t reth_va = 0;            // RETH virtual address
    uint32_t reth_rkey = 0;          // RETH R_Key
    uint32_t reth_dma_len = 0;       // RETH DMA length
    uint64_t atomic_va = 0;          // AtomicETH virtual address
    uint32_t atomic_rkey = 0;        // AtomicETH R_Key
    uint64_t atomic_swap_add = 0;    // AtomicETH swap (CmpSwap) or add (FetchAdd) data
    uint64_t atomic_compare = 0;     // AtomicETH compare data
    uint8_t aeth_syndrome = 0;       // AETH syndrome (ACK / RNR NAK / NAK and value)
    uint32_t aeth_msn = 0;           // AETH MSN, 24 bits
    uint64_t atomic_ack_orig = 0;    // AtomicAckETH original remote data
    uint32_t imm = 0;                // ImmDt (immediate data, as a number)
    uint32_t ieth_rkey = 0;          // IETH R_Key to invalidate

    // ---- Where things are, in bytes from the start of the frame ----
    uint16_t l3_off = 0;       // IP header (14, or 18 behind a VLAN tag)
    uint16_t l4_off = 0;       // UDP header
    uint16_t bth_off = 0;      // BTH
    uint16_t payload_off = 0;  // payload: the BTH plus the opcode's extension headers
    // Payload bytes, without the pad and the ICRC. The ICRC follows the pad
    // at payload_off + payload_len + pad; any bytes after it are Ethernet
    // padding of a short frame.
    uint16_t payload_len = 0;

    bool accepted() const { return verdict == ParseVerdict::Accept; }
    // The IPv4 addresses (meaningful when ip_version == 4).
    uint32_t src_ip4() const;
    uint32_t dst_ip4() const;
};

bool operator==(const HeaderVector& a, const HeaderVector& b);
inline bool operator!=(const HeaderVector& a, const HeaderVector& b) { return !(a == b); }

// "field: a != b" for every field that differs, one per line; empty if equal.
std::string diff(const HeaderVector& a, const HeaderVector& b);
// Every field, one "name=value" per line (values in hex).
std::string describe(const HeaderVector& hv);

// The C++ twin of the RTL parser: decode_frame() (IPv4 header checksum
// checked, ICRC not checked) turned into a header vector. `frame` is an
// Ethernet frame without FCS; it is never read outside [frame, frame + len).
// `decoded`, if given, gets the packet decode_frame() made of it (valid
// when the vector is accepted), so that a later stage need not decode the
// frame again.
HeaderVector parse_header_vector(const uint8_t* frame, size_t len, Packet* decoded = nullptr);

}  // namespace simnic::roce
