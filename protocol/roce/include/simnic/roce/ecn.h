// ECN in a RoCE v2 packet's IP header, and the CNP that answers a CE mark.
//
// ECN (RFC 3168) is the low two bits of the IPv4 TOS byte and of the IPv6
// traffic class. A RoCE v2 sender that takes part in congestion control
// marks its packets ECN-capable (ECT(0)); a congested switch re-marks them CE;
// the receiver (the notification point) answers with a CNP (IBA annex
// A17.9.3) to the sending QP. The ICRC replaces the whole TOS byte / traffic
// class with ones (icrc.h, docs/wire-format.md), so a switch's re-marking leaves
// the ICRC valid; the IPv4 header checksum is updated with the mark.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "simnic/roce/packet.h"

namespace simnic::roce {

// The ECN codepoints (RFC 3168, section 5).
enum class Ecn : uint8_t {
    NotEct = 0b00,  // the sender does not take part in ECN
    Ect1 = 0b01,
    Ect0 = 0b10,    // what an ECN-capable RoCE v2 sender sets
    Ce = 0b11,      // congestion experienced: set by a switch on an ECT packet
};

const char* to_string(Ecn e);

// ---- On an IP packet in place (`ip` points at the IPv4 or IPv6 header) ----

// The ECN field, or nothing if `len` is too short for the header or its
// version is neither 4 nor 6.
std::optional<Ecn> read_ecn(const uint8_t* ip, size_t len);

// Writes the ECN field, keeping the DSCP. An IPv4 header checksum is updated
// incrementally (RFC 1624, eqn. 3), so a header that was right stays right
// and one that was wrong stays wrong. False (nothing written) if the header
// is too short or not IPv4/IPv6.
bool write_ecn(uint8_t* ip, size_t len, Ecn e);

// The sender's helper: ECT(0).
inline bool set_ect0(uint8_t* ip, size_t len) { return write_ecn(ip, len, Ecn::Ect0); }

// A switch's marking (RFC 3168, section 5): an ECN-capable packet (ECT(0),
// ECT(1) or already CE) becomes CE; a Not-ECT one is left alone. True if the
// packet is CE afterwards.
bool mark_ce(uint8_t* ip, size_t len);

// ---- The same on a whole Ethernet frame (an optional 802.1Q tag) ----

// Where the IP header starts, or 0 if the frame is not IPv4/IPv6 over
// Ethernet.
size_t ip_header_offset(const uint8_t* frame, size_t len);
// A RoCE v2 frame by its headers alone: UDP to port 4791 over IPv4 (first
// fragment, any header length) or IPv6 (UDP as the next header). Nothing past
// the UDP header is looked at: a frame whose BTH or ICRC is damaged is still
// one (a wire's fault rules pick their frames with it).
bool is_roce_v2_frame(const uint8_t* frame, size_t len);
std::optional<Ecn> read_frame_ecn(const uint8_t* frame, size_t len);
bool write_frame_ecn(uint8_t* frame, size_t len, Ecn e);

// ---- On a Packet before encode_frame() ----

Ecn ecn_of(const Packet& p);
void set_ecn(Packet& p, Ecn e);

// ---- The CNP (IBA annex A17.9.3) ----

// The CNP answering `marked`, a CE-marked packet this port received for one
// of its QPs. `sender_qpn` is the QP that sent `marked` (the receiving QP's
// remote QP number; the marked packet's BTH names only the receiving QP).
//
// Per annex A17.9.3 the BTH carries opcode 0x81, SE = M = 0, PadCnt = 0,
// TVer = 0, the marked packet's P_Key, FECN = 0, BECN = 1, DestQP =
// sender_qpn, A = 0 and PSN = 0; 16 reserved bytes of zero follow, then the
// ICRC. Addressing is the marked packet's reversed (MACs, IP addresses); the
// UDP source port is the marked packet's (our choice: the annex leaves it to
// the sender), the IP header is Not-ECT (a CNP is never marked itself) with
// DSCP `dscp` (its low six bits; the notification point's
// NpConfig::cnp_dscp, so that switches can give CNPs their own priority) and
// TTL / hop limit 64. The caller may change any of these before
// encode_frame().
Packet make_cnp(const Packet& marked, uint32_t sender_qpn, uint8_t dscp = 0);

// True if `p` is a CNP as annex A17.9.3 defines one (opcode 0x81 with BECN
// set); the QP it notifies is p.hdr.bth.dqpn.
bool is_cnp(const Packet& p);

}  // namespace simnic::roce
