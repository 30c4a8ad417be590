// Communication Management MADs (IBA vol 1, chapter 12) as the kernel's
// ib_cm puts them on the wire, and the rdma_cm header that rdma_cm carries
// at the start of a REQ's private data.
//
// A CM MAD is 256 bytes: the 24-byte MAD common header, then the 232-byte
// message. Each message has exactly one reader (decode_*) and one writer
// (encode_*); every field's place is written once, in the field table of
// mad.cc. On RoCE v2 a MAD travels as the payload of a UD SEND ONLY from QP1
// to QP1 with the GSI's Q_Key (see docs/rxe-wire-rules.md, "CM on QP1").
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace simnic::cm {

inline constexpr size_t kMadBytes = 256;
inline constexpr size_t kMadHdrBytes = 24;
inline constexpr uint8_t kMadBaseVersion = 1;
inline constexpr uint8_t kMgmtClassCm = 0x07;
inline constexpr uint8_t kCmClassVersion = 2;
inline constexpr uint8_t kMethodSend = 0x03;
inline constexpr uint32_t kGsiQpn = 1;
inline constexpr uint32_t kGsiQkey = 0x80010000;

using Mad = std::array<uint8_t, kMadBytes>;
using Gid = std::array<uint8_t, 16>;

// CM attribute IDs (IBA 16.7.2 table 214, those rdma_cm's RC connections
// and UD service ID resolution use).
enum class AttrId : uint16_t {
    ConnectRequest = 0x0010,     // REQ
    MsgRcptAck = 0x0011,         // MRA
    ConnectReject = 0x0012,      // REJ
    ConnectReply = 0x0013,       // REP
    ReadyToUse = 0x0014,         // RTU
    DisconnectRequest = 0x0015,  // DREQ
    DisconnectReply = 0x0016,    // DREP
    SidrRequest = 0x0017,        // SIDR_REQ
    SidrReply = 0x0018,          // SIDR_REP
};
const char* to_string(AttrId a);

struct MadHdr {
    uint8_t base_version = kMadBaseVersion;
    uint8_t mgmt_class = kMgmtClassCm;
    uint8_t class_version = kCmClassVersion;
    uint8_t method = kMethodSend;
    uint16_t status = 0;
    uint16_t class_specific = 0;
    uint64_t tid = 0;
    uint16_t attr_id = 0;
    uint32_t attr_mod = 0;
};

// Private data capacities of each message (IBA 12.6).
inline constexpr size_t kReqPrivateBytes = 92;
inline constexpr size_t kRepPrivateBytes = 196;
inline constexpr size_t kRtuPrivateBytes = 224;
inline constexpr size_t kRejPrivateBytes = 148;
inline constexpr size_t kRejAriBytes = 72;
inline constexpr size_t kDreqPrivateBytes = 220;
inline constexpr size_t kDrepPrivateBytes = 224;
inline constexpr size_t kSidrReqPrivateBytes = 216;
inline constexpr size_t kSidrRepPrivateBytes = 136;
inline constexpr size_t kSidrRepInfoBytes = 72;

// Enhanced Connection Establishment (ECE, IBA 1.4's vendor options), as
// the kernel's ib_cm carries it (cm_format_req, cm_format_rep): the vendor
// ID in the REQ's or REP's VendorID field (24 bits), the options in the MAD
// header's AttributeModifier (MadHdr::attr_mod). rdma_cm sends what
// librdmacm gives it (rdma_set_local_ece, ucma's ece) and reports what came
// with CONNECT_REQUEST and CONNECT_RESPONSE; zero is "no ECE".
inline constexpr uint32_t kVendorIdMask = 0xFFFFFF;

// ConnectRequest (IBA 12.6.5). Only the primary path: rdma_cm on RoCE sends
// no alternate path and leaves its fields zero.
struct Req {
    uint32_t local_comm_id = 0;
    uint32_t vendor_id = 0;                  // ECE (24 bits)
    uint64_t service_id = 0;
    uint64_t local_ca_guid = 0;
    uint32_t local_qkey = 0;
    uint32_t local_qpn = 0;
    uint8_t responder_resources = 0;
    uint32_t local_eecn = 0;
    uint8_t initiator_depth = 0;
    uint32_t remote_eecn = 0;
    uint8_t remote_cm_response_timeout = 0;  // 4.096 us << n
    uint8_t transport_service_type = 0;      // 0 RC, 1 UC
    bool end_to_end_flow_control = false;
    uint32_t starting_psn = 0;
    uint8_t local_cm_response_timeout = 0;
    uint8_t retry_count = 0;
    uint16_t pkey = 0xffff;
    uint8_t path_mtu = 0;                    // IB MTU code, 3 = 1024, 5 = 4096
    bool rdc_exists = false;
    uint8_t rnr_retry_count = 0;
    uint8_t max_cm_retries = 0;
    bool srq = false;
    uint8_t extended_transport_type = 0;
    uint16_t primary_local_lid = 0xffff;     // permissive: RoCE has no LIDs
    uint16_t primary_remote_lid = 0xffff;
    Gid primary_local_gid{};
    Gid primary_remote_gid{};
    uint32_t primary_flow_label = 0;
    uint8_t primary_packet_rate = 0;
    uint8_t primary_traffic_class = 0;
    uint8_t primary_hop_limit = 0;
    uint8_t primary_sl = 0;
    bool primary_subnet_local = false;
    uint8_t primary_local_ack_timeout = 0;
    std::array<uint8_t, kReqPrivateBytes> private_data{};
};

// ConnectReply (IBA 12.6.8).
struct Rep {
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    uint32_t vendor_id = 0;  // ECE (24 bits, in three bytes after LocalQPN, LocalEECN and StartingPSN)
    uint32_t local_qkey = 0;
    uint32_t local_qpn = 0;
    uint32_t local_eecn = 0;
    uint32_t starting_psn = 0;
    uint8_t responder_resources = 0;
    uint8_t initiator_depth = 0;
    uint8_t target_ack_delay = 0;
    uint8_t failover_accepted = 0;
    bool end_to_end_flow_control = false;
    uint8_t rnr_retry_count = 0;
    bool srq = false;
    uint64_t local_ca_guid = 0;
    std::array<uint8_t, kRepPrivateBytes> private_data{};
};

// ReadyToUse (12.6.9).
struct Rtu {
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    std::array<uint8_t, kRtuPrivateBytes> private_data{};
};

// Which message a REJ rejects (12.6.7 MessageREJected).
enum class RejMsg : uint8_t { Req = 0, Rep = 1, Other = 2 };
// The reasons simnic sends (IBA 12.6.7.2 table 110).
enum class RejReason : uint16_t {
    Timeout = 1,
    InvalidServiceId = 8,
    StaleConnection = 10,
    ConsumerReject = 28,
    InvalidCommId = 33,
    // rdma_reject_ece: the peer's ECE options are not acceptable.
    VendorOptionNotSupported = 35,
};

// ConnectReject (12.6.7).
struct Rej {
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    RejMsg msg_rejected = RejMsg::Req;
    uint8_t rejected_info_length = 0;
    uint16_t reason = 0;
    std::array<uint8_t, kRejAriBytes> ari{};
    std::array<uint8_t, kRejPrivateBytes> private_data{};
};

// DisconnectRequest (12.6.10).
struct Dreq {
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    uint32_t remote_qpn = 0;
    std::array<uint8_t, kDreqPrivateBytes> private_data{};
};

// DisconnectReply (12.6.11).
struct Drep {
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    std::array<uint8_t, kDrepPrivateBytes> private_data{};
};

// ServiceIDResolutionRequest (IBA 12.11.1): a UD peer asks which QP (and
// Q_Key) serves a service ID. rdma_cm's UDP port space sends one from
// rdma_connect, its cma header first in the private data, as in a REQ.
struct SidrReq {
    uint32_t request_id = 0;
    uint16_t pkey = 0xffff;
    uint64_t service_id = 0;
    std::array<uint8_t, kSidrReqPrivateBytes> private_data{};
};

// The SIDR_REP status (IBA 12.11.2 table 119).
enum class SidrStatus : uint8_t { Success = 0, Unsupported = 1, Rejected = 2, NoQp = 3, Redirect = 4 };

// ServiceIDResolutionResponse (12.11.2).
struct SidrRep {
    uint32_t request_id = 0;
    SidrStatus status = SidrStatus::Success;
    uint8_t info_length = 0;
    uint32_t qpn = 0;
    uint64_t service_id = 0;
    uint32_t qkey = 0;
    std::array<uint8_t, kSidrRepInfoBytes> info{};
    std::array<uint8_t, kSidrRepPrivateBytes> private_data{};
};

// Why a MAD was not accepted.
enum class MadError : uint8_t { Ok, TooShort, NotCm, BadVersion, UnknownAttr };
const char* to_string(MadError e);

// Header checks and the attribute: Ok for a CM MAD of a known attribute.
MadError decode_hdr(const uint8_t* mad, size_t len, MadHdr& hdr);

Mad encode(const MadHdr& hdr, const Req& m);
Mad encode(const MadHdr& hdr, const Rep& m);
Mad encode(const MadHdr& hdr, const Rtu& m);
Mad encode(const MadHdr& hdr, const Rej& m);
Mad encode(const MadHdr& hdr, const Dreq& m);
Mad encode(const MadHdr& hdr, const Drep& m);
Mad encode(const MadHdr& hdr, const SidrReq& m);
Mad encode(const MadHdr& hdr, const SidrRep& m);
// The message body of a MAD whose header decoded (len >= kMadBytes).
Req decode_req(const uint8_t* mad);
Rep decode_rep(const uint8_t* mad);
Rtu decode_rtu(const uint8_t* mad);
Rej decode_rej(const uint8_t* mad);
Dreq decode_dreq(const uint8_t* mad);
Drep decode_drep(const uint8_t* mad);
SidrReq decode_sidr_req(const uint8_t* mad);
SidrRep decode_sidr_rep(const uint8_t* mad);

// ---- rdma_cm's header in a REQ's private data ----
// rdma_cm (RDMA_PS_TCP and friends) puts the IP addresses and its source
// port in the first 36 bytes of the REQ's private data; the application's
// own private data follows. The service ID is the port space << 16 | the
// destination port.
inline constexpr size_t kCmaHdrBytes = 36;
inline constexpr uint16_t kPsTcp = 0x0106;
inline constexpr uint16_t kPsUdp = 0x0111;
// The Q_Key rdma_cm gives every QP of the UDP port space (RDMA_UDP_QKEY).
inline constexpr uint32_t kUdpQkey = 0x01234567;
inline constexpr uint64_t service_id(uint16_t port_space, uint16_t port) {
    return uint64_t{port_space} << 16 | port;
}

struct CmaHdr {
    uint8_t cma_version = 0;
    uint8_t ip_version = 4;  // 4 or 6 (the high nibble of the byte on the wire)
    uint16_t src_port = 0;
    Gid src_addr{};          // IPv4 in the last 4 bytes, the rest zero
    Gid dst_addr{};
};
void put_cma_hdr(uint8_t* p, const CmaHdr& h);
// False if the header is not one rdma_cm writes (version, IP version).
bool get_cma_hdr(const uint8_t* p, CmaHdr& h);

// A MAD as one line for logs and tests: "REQ comm 0x.. qpn 0x.. ..".
std::string describe(const uint8_t* mad, size_t len);

}  // namespace simnic::cm
