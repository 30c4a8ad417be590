#include "simnic/cm/mad.h"

#include <cstdio>
#include <cstring>

namespace simnic::cm {
namespace {

// A field of a CM message: `bits` wide, starting `bit` bits after the first
// bit (most significant) of byte `byte` of the message, big-endian as IBA
// draws it. Offsets are from the start of the message (MAD byte 24).
struct Field {
    uint16_t byte;
    uint8_t bit;
    uint8_t bits;
};

uint64_t get(const uint8_t* msg, Field f) {
    uint64_t v = 0;
    const size_t first = size_t(f.byte) * 8 + f.bit;
    for (size_t i = 0; i < f.bits; ++i) {
        const size_t b = first + i;
        v = v << 1 | ((msg[b / 8] >> (7 - b % 8)) & 1);
    }
    return v;
}

void put(uint8_t* msg, Field f, uint64_t v) {
    const size_t first = size_t(f.byte) * 8 + f.bit;
    for (size_t i = 0; i < f.bits; ++i) {
        const size_t b = first + i;
        const uint8_t m = uint8_t(1u << (7 - b % 8));
        if ((v >> (f.bits - 1 - i)) & 1) msg[b / 8] |= m;
        else msg[b / 8] &= uint8_t(~m);
    }
}

// ---- field tables (IBA 12.6), offsets within the message ----
namespace req {
constexpr Field local_comm_id{0, 0, 32}, vendor_id{5, 0, 24}, service_id{8, 0, 64}, local_ca_guid{16, 0, 64}, local_qkey{28, 0, 32},
    local_qpn{32, 0, 24}, responder_resources{35, 0, 8}, local_eecn{36, 0, 24}, initiator_depth{39, 0, 8},
    remote_eecn{40, 0, 24}, remote_cm_response_timeout{43, 0, 5}, transport_service_type{43, 5, 2},
    end_to_end_flow_control{43, 7, 1}, starting_psn{44, 0, 24}, local_cm_response_timeout{47, 0, 5},
    retry_count{47, 5, 3}, pkey{48, 0, 16}, path_mtu{50, 0, 4}, rdc_exists{50, 4, 1}, rnr_retry_count{50, 5, 3},
    max_cm_retries{51, 0, 4}, srq{51, 4, 1}, extended_transport_type{51, 5, 3}, primary_local_lid{52, 0, 16},
    primary_remote_lid{54, 0, 16}, primary_flow_label{88, 0, 20}, primary_packet_rate{91, 2, 6},
    primary_traffic_class{92, 0, 8}, primary_hop_limit{93, 0, 8}, primary_sl{94, 0, 4},
    primary_subnet_local{94, 4, 1}, primary_local_ack_timeout{95, 0, 5};
constexpr size_t primary_local_gid = 56, primary_remote_gid = 72, private_data = 140;
}  // namespace req
namespace rep {
constexpr Field local_comm_id{0, 0, 32}, remote_comm_id{4, 0, 32}, local_qkey{8, 0, 32}, local_qpn{12, 0, 24},
    local_eecn{16, 0, 24}, starting_psn{20, 0, 24}, responder_resources{24, 0, 8}, initiator_depth{25, 0, 8},
    target_ack_delay{26, 0, 5}, failover_accepted{26, 5, 2}, end_to_end_flow_control{26, 7, 1},
    rnr_retry_count{27, 0, 3}, srq{27, 3, 1}, local_ca_guid{28, 0, 64};
// The VendorID's three bytes fill the byte after each 24-bit field.
constexpr Field vendor_id_h{15, 0, 8}, vendor_id_m{19, 0, 8}, vendor_id_l{23, 0, 8};
constexpr size_t private_data = 36;
}  // namespace rep
namespace rej {
constexpr Field local_comm_id{0, 0, 32}, remote_comm_id{4, 0, 32}, msg_rejected{8, 0, 2},
    rejected_info_length{9, 0, 7}, reason{10, 0, 16};
constexpr size_t ari = 12, private_data = 84;
}  // namespace rej
namespace sidr_req {
constexpr Field request_id{0, 0, 32}, pkey{4, 0, 16}, service_id{8, 0, 64};
constexpr size_t private_data = 16;
}  // namespace sidr_req
namespace sidr_rep {
constexpr Field request_id{0, 0, 32}, status{4, 0, 8}, info_length{5, 0, 8}, qpn{8, 0, 24}, service_id{12, 0, 64},
    qkey{20, 0, 32};
constexpr size_t info = 24, private_data = 96;
}  // namespace sidr_rep
// RTU, DREQ and DREP start with the two communication IDs.
constexpr Field local_comm_id{0, 0, 32}, remote_comm_id{4, 0, 32};
constexpr Field dreq_remote_qpn{8, 0, 24};
constexpr size_t rtu_private = 8, dreq_private = 12, drep_private = 8;

static_assert(req::private_data + kReqPrivateBytes == kMadBytes - kMadHdrBytes);
static_assert(rep::private_data + kRepPrivateBytes == kMadBytes - kMadHdrBytes);
static_assert(rej::private_data + kRejPrivateBytes == kMadBytes - kMadHdrBytes);
static_assert(rej::ari + kRejAriBytes == rej::private_data);
static_assert(rtu_private + kRtuPrivateBytes == kMadBytes - kMadHdrBytes);
static_assert(dreq_private + kDreqPrivateBytes == kMadBytes - kMadHdrBytes);
static_assert(drep_private + kDrepPrivateBytes == kMadBytes - kMadHdrBytes);
static_assert(sidr_req::private_data + kSidrReqPrivateBytes == kMadBytes - kMadHdrBytes);
static_assert(sidr_rep::private_data + kSidrRepPrivateBytes == kMadBytes - kMadHdrBytes);
static_assert(sidr_rep::info + kSidrRepInfoBytes == sidr_rep::private_data);

// The MAD common header (IBA 13.4.2).
constexpr Field h_base_version{0, 0, 8}, h_mgmt_class{1, 0, 8}, h_class_version{2, 0, 8}, h_method{3, 0, 8},
    h_status{4, 0, 16}, h_class_specific{6, 0, 16}, h_tid{8, 0, 64}, h_attr_id{16, 0, 16}, h_attr_mod{20, 0, 32};

Mad with_hdr(const MadHdr& h, AttrId a) {
    Mad m{};
    put(m.data(), h_base_version, h.base_version);
    put(m.data(), h_mgmt_class, h.mgmt_class);
    put(m.data(), h_class_version, h.class_version);
    put(m.data(), h_method, h.method);
    put(m.data(), h_status, h.status);
    put(m.data(), h_class_specific, h.class_specific);
    put(m.data(), h_tid, h.tid);
    put(m.data(), h_attr_id, uint16_t(a));
    put(m.data(), h_attr_mod, h.attr_mod);
    return m;
}

template <size_t N>
void copy_out(std::array<uint8_t, N>& dst, const uint8_t* src) {
    std::memcpy(dst.data(), src, N);
}

}  // namespace

const char* to_string(AttrId a) {
    switch (a) {
        case AttrId::ConnectRequest: return "REQ";
        case AttrId::MsgRcptAck: return "MRA";
        case AttrId::ConnectReject: return "REJ";
        case AttrId::ConnectReply: return "REP";
        case AttrId::ReadyToUse: return "RTU";
        case AttrId::DisconnectRequest: return "DREQ";
        case AttrId::DisconnectReply: return "DREP";
        case AttrId::SidrRequest: return "SIDR_REQ";
        case AttrId::SidrReply: return "SIDR_REP";
    }
    return "?";
}

const char* to_string(MadError e) {
    switch (e) {
        case MadError::Ok: return "ok";
        case MadError::TooShort: return "shorter than a MAD";
        case MadError::NotCm: return "not a CM MAD";
        case MadError::BadVersion: return "unsupported MAD or CM class version";
        case MadError::UnknownAttr: return "unknown CM attribute";
    }
    return "?";
}

MadError decode_hdr(const uint8_t* mad, size_t len, MadHdr& h) {
    if (len < kMadBytes) return MadError::TooShort;
    h.base_version = uint8_t(get(mad, h_base_version));
    h.mgmt_class = uint8_t(get(mad, h_mgmt_class));
    h.class_version = uint8_t(get(mad, h_class_version));
    h.method = uint8_t(get(mad, h_method));
    h.status = uint16_t(get(mad, h_status));
    h.class_specific = uint16_t(get(mad, h_class_specific));
    h.tid = get(mad, h_tid);
    h.attr_id = uint16_t(get(mad, h_attr_id));
    h.attr_mod = uint32_t(get(mad, h_attr_mod));
    if (h.mgmt_class != kMgmtClassCm) return MadError::NotCm;
    if (h.base_version != kMadBaseVersion || h.class_version != kCmClassVersion) return MadError::BadVersion;
    switch (AttrId(h.attr_id)) {
        case AttrId::ConnectRequest:
        case AttrId::MsgRcptAck:
        case AttrId::ConnectReject:
        case AttrId::ConnectReply:
        case AttrId::ReadyToUse:
        case AttrId::DisconnectRequest:
        case AttrId::DisconnectReply:
        case AttrId::SidrRequest:
        case AttrId::SidrReply: return MadError::Ok;
    }
    return MadError::UnknownAttr;
}

Mad encode(const MadHdr& h, const Req& r) {
    Mad m = with_hdr(h, AttrId::ConnectRequest);
    uint8_t* p = m.data() + kMadHdrBytes;
    using namespace req;
    put(p, req::local_comm_id, r.local_comm_id);
    put(p, req::vendor_id, r.vendor_id & kVendorIdMask);
    put(p, req::service_id, r.service_id);
    put(p, local_ca_guid, r.local_ca_guid);
    put(p, local_qkey, r.local_qkey);
    put(p, local_qpn, r.local_qpn);
    put(p, responder_resources, r.responder_resources);
    put(p, local_eecn, r.local_eecn);
    put(p, initiator_depth, r.initiator_depth);
    put(p, remote_eecn, r.remote_eecn);
    put(p, remote_cm_response_timeout, r.remote_cm_response_timeout);
    put(p, transport_service_type, r.transport_service_type);
    put(p, end_to_end_flow_control, r.end_to_end_flow_control);
    put(p, starting_psn, r.starting_psn);
    put(p, local_cm_response_timeout, r.local_cm_response_timeout);
    put(p, retry_count, r.retry_count);
    put(p, pkey, r.pkey);
    put(p, path_mtu, r.path_mtu);
    put(p, rdc_exists, r.rdc_exists);
    put(p, rnr_retry_count, r.rnr_retry_count);
    put(p, max_cm_retries, r.max_cm_retries);
    put(p, srq, r.srq);
    put(p, extended_transport_type, r.extended_transport_type);
    put(p, primary_local_lid, r.primary_local_lid);
    put(p, primary_remote_lid, r.primary_remote_lid);
    std::memcpy(p + primary_local_gid, r.primary_local_gid.data(), 16);
    std::memcpy(p + primary_remote_gid, r.primary_remote_gid.data(), 16);
    put(p, primary_flow_label, r.primary_flow_label);
    put(p, primary_packet_rate, r.primary_packet_rate);
    put(p, primary_traffic_class, r.primary_traffic_class);
    put(p, primary_hop_limit, r.primary_hop_limit);
    put(p, primary_sl, r.primary_sl);
    put(p, primary_subnet_local, r.primary_subnet_local);
    put(p, primary_local_ack_timeout, r.primary_local_ack_timeout);
    std::memcpy(p + req::private_data, r.private_data.data(), kReqPrivateBytes);
    return m;
}

Req decode_req(const uint8_t* mad) {
    const uint8_t* p = mad + kMadHdrBytes;
    using namespace req;
    Req r;
    r.local_comm_id = uint32_t(get(p, req::local_comm_id));
    r.vendor_id = uint32_t(get(p, req::vendor_id));
    r.service_id = get(p, req::service_id);
    r.local_ca_guid = get(p, local_ca_guid);
    r.local_qkey = uint32_t(get(p, local_qkey));
    r.local_qpn = uint32_t(get(p, local_qpn));
    r.responder_resources = uint8_t(get(p, responder_resources));
    r.local_eecn = uint32_t(get(p, local_eecn));
    r.initiator_depth = uint8_t(get(p, initiator_depth));
    r.remote_eecn = uint32_t(get(p, remote_eecn));
    r.remote_cm_response_timeout = uint8_t(get(p, remote_cm_response_timeout));
    r.transport_service_type = uint8_t(get(p, transport_service_type));
    r.end_to_end_flow_control = get(p, end_to_end_flow_control);
    r.starting_psn = uint32_t(get(p, starting_psn));
    r.local_cm_response_timeout = uint8_t(get(p, local_cm_response_timeout));
    r.retry_count = uint8_t(get(p, retry_count));
    r.pkey = uint16_t(get(p, pkey));
    r.path_mtu = uint8_t(get(p, path_mtu));
    r.rdc_exists = get(p, rdc_exists);
    r.rnr_retry_count = uint8_t(get(p, rnr_retry_count));
    r.max_cm_retries = uint8_t(get(p, max_cm_retries));
    r.srq = get(p, srq);
    r.extended_transport_type = uint8_t(get(p, extended_transport_type));
    r.primary_local_lid = uint16_t(get(p, primary_local_lid));
    r.primary_remote_lid = uint16_t(get(p, primary_remote_lid));
    std::memcpy(r.primary_local_gid.data(), p + primary_local_gid, 16);
    std::memcpy(r.primary_remote_gid.data(), p + primary_remote_gid, 16);
    r.primary_flow_label = uint32_t(get(p, primary_flow_label));
    r.primary_packet_rate = uint8_t(get(p, primary_packet_rate));
    r.primary_traffic_class = uint8_t(get(p, primary_traffic_class));
    r.primary_hop_limit = uint8_t(get(p, primary_hop_limit));
    r.primary_sl = uint8_t(get(p, primary_sl));
    r.primary_subnet_local = get(p, primary_subnet_local);
    r.primary_local_ack_timeout = uint8_t(get(p, primary_local_ack_timeout));
    copy_out(r.private_data, p + req::private_data);
    return r;
}

Mad encode(const MadHdr& h, const Rep& r) {
    Mad m = with_hdr(h, AttrId::ConnectReply);
    uint8_t* p = m.data() + kMadHdrBytes;
    using namespace rep;
    put(p, rep::local_comm_id, r.local_comm_id);
    put(p, rep::remote_comm_id, r.remote_comm_id);
    put(p, local_qkey, r.local_qkey);
    put(p, local_qpn, r.local_qpn);
    put(p, local_eecn, r.local_eecn);
    put(p, starting_psn, r.starting_psn);
    put(p, responder_resources, r.responder_resources);
    put(p, initiator_depth, r.initiator_depth);
    put(p, target_ack_delay, r.target_ack_delay);
    put(p, failover_accepted, r.failover_accepted);
    put(p, end_to_end_flow_control, r.end_to_end_flow_control);
    put(p, rnr_retry_count, r.rnr_retry_count);
    put(p, srq, r.srq);
    put(p, local_ca_guid, r.local_ca_guid);
    put(p, vendor_id_h, r.vendor_id >> 16 & 0xFF);
    put(p, vendor_id_m, r.vendor_id >> 8 & 0xFF);
    put(p, vendor_id_l, r.vendor_id & 0xFF);
    std::memcpy(p + rep::private_data, r.private_data.data(), kRepPrivateBytes);
    return m;
}

Rep decode_rep(const uint8_t* mad) {
    const uint8_t* p = mad + kMadHdrBytes;
    using namespace rep;
    Rep r;
    r.local_comm_id = uint32_t(get(p, rep::local_comm_id));
    r.remote_comm_id = uint32_t(get(p, rep::remote_comm_id));
    r.local_qkey = uint32_t(get(p, local_qkey));
    r.local_qpn = uint32_t(get(p, local_qpn));
    r.local_eecn = uint32_t(get(p, local_eecn));
    r.starting_psn = uint32_t(get(p, starting_psn));
    r.responder_resources = uint8_t(get(p, responder_resources));
    r.initiator_depth = uint8_t(get(p, initiator_depth));
    r.target_ack_delay = uint8_t(get(p, target_ack_delay));
    r.failover_accepted = uint8_t(get(p, failover_accepted));
    r.end_to_end_flow_control = get(p, end_to_end_flow_control);
    r.rnr_retry_count = uint8_t(get(p, rnr_retry_count));
    r.srq = get(p, srq);
    r.local_ca_guid = get(p, local_ca_guid);
    r.vendor_id = uint32_t(get(p, vendor_id_h) << 16 | get(p, vendor_id_m) << 8 | get(p, vendor_id_l));
    copy_out(r.private_data, p + rep::private_data);
    return r;
}

Mad encode(const MadHdr& h, const Rtu& r) {
    Mad m = with_hdr(h, AttrId::ReadyToUse);
    uint8_t* p = m.data() + kMadHdrBytes;
    put(p, local_comm_id, r.local_comm_id);
    put(p, remote_comm_id, r.remote_comm_id);
    std::memcpy(p + rtu_private, r.private_data.data(), kRtuPrivateBytes);
    return m;
}

Rtu decode_rtu(const uint8_t* mad) {
    const uint8_t* p = mad + kMadHdrBytes;
    Rtu r;
    r.local_comm_id = uint32_t(get(p, local_comm_id));
    r.remote_comm_id = uint32_t(get(p, remote_comm_id));
    copy_out(r.private_data, p + rtu_private);
    return r;
}

Mad encode(const MadHdr& h, const Rej& r) {
    Mad m = with_hdr(h, AttrId::ConnectReject);
    uint8_t* p = m.data() + kMadHdrBytes;
    put(p, rej::local_comm_id, r.local_comm_id);
    put(p, rej::remote_comm_id, r.remote_comm_id);
    put(p, rej::msg_rejected, uint8_t(r.msg_rejected));
    put(p, rej::rejected_info_length, r.rejected_info_length);
    put(p, rej::reason, r.reason);
    std::memcpy(p + rej::ari, r.ari.data(), kRejAriBytes);
    std::memcpy(p + rej::private_data, r.private_data.data(), kRejPrivateBytes);
    return m;
}

Rej decode_rej(const uint8_t* mad) {
    const uint8_t* p = mad + kMadHdrBytes;
    Rej r;
    r.local_comm_id = uint32_t(get(p, rej::local_comm_id));
    r.remote_comm_id = uint32_t(get(p, rej::remote_comm_id));
    r.msg_rejected = RejMsg(get(p, rej::msg_rejected));
    r.rejected_info_length = uint8_t(get(p, rej::rejected_info_length));
    r.reason = uint16_t(get(p, rej::reason));
    copy_out(r.ari, p + rej::ari);
    copy_out(r.private_data, p + rej::private_data);
    return r;
}

Mad encode(const MadHdr& h, const Dreq& r) {
    Mad m = with_hdr(h, AttrId::DisconnectRequest);
    uint8_t* p = m.data() + kMadHdrBytes;
    put(p, local_comm_id, r.local_comm_id);
    put(p, remote_comm_id, r.remote_comm_id);
    put(p, dreq_remote_qpn, r.remote_qpn);
    std::memcpy(p + dreq_private, r.private_data.data(), kDreqPrivateBytes);
    return m;
}

Dreq decode_dreq(const uint8_t* mad) {
    const uint8_t* p = mad + kMadHdrBytes;
    Dreq r;
    r.local_comm_id = uint32_t(get(p, local_comm_id));
    r.remote_comm_id = uint32_t(get(p, remote_comm_id));
    r.remote_qpn = uint32_t(get(p, dreq_remote_qpn));
    copy_out(r.private_data, p + dreq_private);
    return r;
}

Mad encode(const MadHdr& h, const Drep& r) {
    Mad m = with_hdr(h, AttrId::DisconnectReply);
    uint8_t* p = m.data() + kMadHdrBytes;
    put(p, local_comm_id, r.local_comm_id);
    put(p, remote_comm_id, r.remote_comm_id);
    std::memcpy(p + drep_private, r.private_data.data(), kDrepPrivateBytes);
    return m;
}

Drep decode_drep(const uint8_t* mad) {
    const uint8_t* p = mad + kMadHdrBytes;
    Drep r;
    r.local_comm_id = uint32_t(get(p, local_comm_id));
    r.remote_comm_id = uint32_t(get(p, remote_comm_id));
    copy_out(r.private_data, p + drep_private);
    return r;
}

// cma_hdr: version (8), IP version (high nibble of 8), port (16), source
// address (16), destination address (16).
void put_cma_hdr(uint8_t* p, const CmaHdr& h) {
    p[0] = h.cma_version;
    p[1] = uint8_t(h.ip_version << 4);
    p[2] = uint8_t(h.src_port >> 8);
    p[3] = uint8_t(h.src_port);
    std::memcpy(p + 4, h.src_addr.data(), 16);
    std::memcpy(p + 20, h.dst_addr.data(), 16);
}

bool get_cma_hdr(const uint8_t* p, CmaHdr& h) {
    h.cma_version = p[0];
    h.ip_version = uint8_t(p[1] >> 4);
    h.src_port = uint16_t(p[2] << 8 | p[3]);
    std::memcpy(h.src_addr.data(), p + 4, 16);
    std::memcpy(h.dst_addr.data(), p + 20, 16);
    return h.cma_version == 0 && (h.ip_version == 4 || h.ip_version == 6);
}

Mad encode(const MadHdr& h, const SidrReq& r) {
    Mad m = with_hdr(h, AttrId::SidrRequest);
    uint8_t* p = m.data() + kMadHdrBytes;
    put(p, sidr_req::request_id, r.request_id);
    put(p, sidr_req::pkey, r.pkey);
    put(p, sidr_req::service_id, r.service_id);
    std::memcpy(p + sidr_req::private_data, r.private_data.data(), kSidrReqPrivateBytes);
    return m;
}

SidrReq decode_sidr_req(const uint8_t* mad) {
    const uint8_t* p = mad + kMadHdrBytes;
    SidrReq r;
    r.request_id = uint32_t(get(p, sidr_req::request_id));
    r.pkey = uint16_t(get(p, sidr_req::pkey));
    r.service_id = get(p, sidr_req::service_id);
    copy_out(r.private_data, p + sidr_req::private_data);
    return r;
}

Mad encode(const MadHdr& h, const SidrRep& r) {
    Mad m = with_hdr(h, AttrId::SidrReply);
    uint8_t* p = m.data() + kMadHdrBytes;
    put(p, sidr_rep::request_id, r.request_id);
    put(p, sidr_rep::status, uint8_t(r.status));
    put(p, sidr_rep::info_length, r.info_length);
    put(p, sidr_rep::qpn, r.qpn);
    put(p, sidr_rep::service_id, r.service_id);
    put(p, sidr_rep::qkey, r.qkey);
    std::memcpy(p + sidr_rep::info, r.info.data(), kSidrRepInfoBytes);
    std::memcpy(p + sidr_rep::private_data, r.private_data.data(), kSidrRepPrivateBytes);
    return m;
}

SidrRep decode_sidr_rep(const uint8_t* mad) {
    const uint8_t* p = mad + kMadHdrBytes;
    SidrRep r;
    r.request_id = uint32_t(get(p, sidr_rep::request_id));
    r.status = SidrStatus(get(p, sidr_rep::status));
    r.info_length = uint8_t(get(p, sidr_rep::info_length));
    r.qpn = uint32_t(get(p, sidr_rep::qpn));
    r.service_id = get(p, sidr_rep::service_id);
    r.qkey = uint32_t(get(p, sidr_rep::qkey));
    copy_out(r.info, p + sidr_rep::info);
    copy_out(r.private_data, p + sidr_rep::private_data);
    return r;
}

namespace {
// A REQ's or REP's ECE, when it carries one (rping's carry none).
void append_ece(char* b, size_t size, uint32_t vendor_id, uint32_t options) {
    if (vendor_id == 0 && options == 0) return;
    const size_t n = std::strlen(b);
    std::snprintf(b + n, size - n, " ece 0x%06x/0x%08x", vendor_id, options);
}
}  // namespace

std::string describe(const uint8_t* mad, size_t len) {
    MadHdr h;
    const MadError e = decode_hdr(mad, len, h);
    if (e != MadError::Ok) return std::string("bad MAD: ") + to_string(e);
    char b[160];
    const char* name = to_string(AttrId(h.attr_id));
    const uint8_t* p = mad + kMadHdrBytes;
    switch (AttrId(h.attr_id)) {
        case AttrId::ConnectRequest: {
            const Req r = decode_req(mad);
            std::snprintf(b, sizeof b, "%s comm 0x%08x sid 0x%016llx qpn 0x%06x psn 0x%06x mtu %u fl 0x%05x", name,
                          r.local_comm_id, static_cast<unsigned long long>(r.service_id), r.local_qpn,
                          r.starting_psn, r.path_mtu, r.primary_flow_label);
            append_ece(b, sizeof b, r.vendor_id, h.attr_mod);
            break;
        }
        case AttrId::ConnectReply: {
            const Rep r = decode_rep(mad);
            std::snprintf(b, sizeof b, "%s comm 0x%08x remote 0x%08x qpn 0x%06x psn 0x%06x", name, r.local_comm_id,
                          r.remote_comm_id, r.local_qpn, r.starting_psn);
            append_ece(b, sizeof b, r.vendor_id, h.attr_mod);
            break;
        }
        case AttrId::ConnectReject: {
            const Rej r = decode_rej(mad);
            std::snprintf(b, sizeof b, "%s comm 0x%08x remote 0x%08x reason %u", name, r.local_comm_id,
                          r.remote_comm_id, r.reason);
            break;
        }
        case AttrId::SidrRequest: {
            const SidrReq r = decode_sidr_req(mad);
            std::snprintf(b, sizeof b, "%s req 0x%08x sid 0x%016llx", name, r.request_id,
                          static_cast<unsigned long long>(r.service_id));
            break;
        }
        case AttrId::SidrReply: {
            const SidrRep r = decode_sidr_rep(mad);
            std::snprintf(b, sizeof b, "%s req 0x%08x status %u qpn 0x%06x qkey 0x%08x", name, r.request_id,
                          unsigned(r.status), r.qpn, r.qkey);
            break;
        }
        default:
            std::snprintf(b, sizeof b, "%s comm 0x%08x remote 0x%08x", name, uint32_t(get(p, local_comm_id)),
                          uint32_t(get(p, remote_comm_id)));
    }
    return b;
}

}  // namespace simnic::cm
