// Decoding and encoding of whole RoCE v2 frames.
//
// decode_frame() walks Ethernet (optional 802.1Q), IPv4 or IPv6, UDP, BTH,
// the extension headers the opcode table names, the payload, the pad and the
// ICRC. It never reads outside [frame, frame + len) and returns a typed error
// for the first thing it cannot accept. encode_frame() is its inverse and is
// what both engines use to put packets on the wire.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "simnic/roce/headers.h"
#include "simnic/roce/opcode.h"

namespace simnic::roce {

enum class IpVersion : uint8_t { V4 = 4, V6 = 6 };

enum class DecodeError : uint8_t {
    Ok = 0,
    TruncatedEthernet,
    UnsupportedEthertype,   // not IPv4, IPv6 or 802.1Q-tagged IPv4/IPv6
    TruncatedIp,
    BadIpVersion,           // version field disagrees with the ethertype
    BadIpHeader,            // IPv4 IHL < 5, or an IPv4 header checksum mismatch
    IpLengthMismatch,       // IP length field disagrees with the frame
    IpFragment,             // RoCE v2 never fragments; fragments are refused
    NotUdp,
    TruncatedUdp,
    UdpLengthMismatch,
    NotRoceV2,              // UDP destination port is not 4791
    TruncatedBth,
    UnknownOpcode,          // reserved, RD or otherwise unsupported opcode
    BadTver,                // BTH transport version is not 0
    TruncatedExtHeader,     // shorter than the headers the opcode names
    BadPadCount,            // pad exceeds the payload, or pad on a non-final packet
    LengthMismatch,         // payload length the opcode does not allow
    BadIcrc,                // everything decoded, but the ICRC does not match
};

const char* to_string(DecodeError e);

// A decoded frame. Payload points into the caller's buffer, which must outlive
// the Packet. For encoding, the caller fills the headers and points payload at
// the bytes to send.
struct Packet {
    EthHdr eth;
    IpVersion ip_version = IpVersion::V4;
    Ipv4Hdr ip4;
    Ipv6Hdr ip6;
    UdpHdr udp;
    TransportHdrs hdr;
    const uint8_t* payload = nullptr;
    size_t payload_len = 0;  // excludes the pad
    uint32_t icrc = 0;       // as carried on the wire (decode) or computed (encode)

    // Offsets within the frame, filled by decode and by encode.
    size_t l3_off = 0;
    size_t l4_off = 0;
    size_t bth_off = 0;
    size_t payload_off = 0;
    size_t frame_len = 0;    // the whole frame, any Ethernet padding included

    const OpcodeInfo& opinfo() const { return opcode_info(hdr.bth.opcode); }
};

struct DecodeOptions {
    bool check_icrc = true;
    bool check_ip_checksum = true;
};

// Where decoding stopped, for diagnostics: the error and the byte offset at
// which the offending field starts.
struct DecodeResult {
    DecodeError error = DecodeError::Ok;
    size_t offset = 0;
    uint32_t computed_icrc = 0;  // valid once the frame decoded far enough, with check_icrc

    bool ok() const { return error == DecodeError::Ok; }
    explicit operator bool() const { return ok(); }
};

// Decode an Ethernet frame (no FCS). A frame of at most the Ethernet minimum
// size may carry padding after the IP packet; it is ignored.
DecodeResult decode_frame(const uint8_t* frame, size_t len, Packet& out,
                          const DecodeOptions& opt = {});
// Decode a frame that starts at the IP header (pcap's raw-IP and cooked
// link types). out.eth is left default and out.l3_off is 0.
DecodeResult decode_ip_packet(const uint8_t* pkt, size_t len, Packet& out,
                              const DecodeOptions& opt = {});
// The ICRC check decode_frame() or decode_ip_packet() makes with
// check_icrc, for a packet `p` they decoded without it from `buf` (the
// buffer its offsets count from): BadIcrc or Ok, and the ICRC computed.
DecodeResult check_icrc(const uint8_t* buf, const Packet& p);

enum class UdpChecksum : uint8_t {
    Zero,     // what rxe sends (RoCE v2 permits a zero UDP checksum)
    Compute,  // a full UDP checksum over the pseudo-header
    Keep,     // use udp.checksum as given
};

struct EncodeOptions {
    bool fill_lengths = true;   // IP and UDP lengths and the BTH pad count
    bool fill_ip_checksum = true;
    bool fill_icrc = true;
    UdpChecksum udp_checksum = UdpChecksum::Zero;
    // Pad frames shorter than the Ethernet minimum (60 bytes without FCS)
    // with zeros after the ICRC, as a sending MAC does. Off by default:
    // captures taken at the sender show the unpadded frame.
    bool pad_to_eth_min = false;
};

// Bytes the encoded frame will occupy.
size_t encoded_frame_len(const Packet& p, const EncodeOptions& opt = {});

// Encode into `out` (resized to fit). Updates p's lengths, checksums, pad,
// ICRC and offsets as the options say, so that p describes the frame written.
// Returns false, writing nothing, if the opcode is unknown or the payload is
// not allowed for it.
bool encode_frame(Packet& p, std::vector<uint8_t>& out, const EncodeOptions& opt = {});

// The IPv4 header checksum over `len` bytes (RFC 791).
uint16_t ipv4_checksum(const uint8_t* hdr, size_t len);

}  // namespace simnic::roce
