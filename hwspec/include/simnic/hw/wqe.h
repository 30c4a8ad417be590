// SPDX-License-Identifier: Apache-2.0
// simnic hardware spec: the work queue entry codec (hw-spec.md 6).
//
// Send WQEs (6.2, 6.3) and receive WQEs (6.4) as values, and the one
// encoder and decoder of each, written on layout.h's field descriptors. The
// host side (the verbs provider, `simnic bench`, tests) builds WQEs with the
// encoders; the device side reads them with the decoders. A decoder reads
// memory an application controls, so it trusts nothing: every segment must
// lie inside the slot, counts and lengths are checked against the QP's
// limits, and a refusal names its reason (WqeFault) and the CQE status the
// device completes the WQE with.
//
// The segment rules live here and only here: which segments an opcode
// carries on which QP type, how inline data is padded, how large a WQE is,
// and how large a slot must be for a QP's capabilities.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>

#include "simnic/hw/field.h"
#include "simnic/hw/field_map.h"
#include "simnic/hw/layout.h"

namespace simnic::hw {

// ---------------------------------------------------------------------------
// Segment values (hw-spec.md 6.2), one per layout.
// ---------------------------------------------------------------------------
struct DataSeg {  // DATA_SEG: one SGE
    std::uint64_t addr = 0;
    std::uint32_t length = 0;
    std::uint32_t lkey = 0;
};

struct RaddrSeg {  // RADDR_SEG: RDMA, atomics, ATOMIC_WRITE and FLUSH
    std::uint64_t remote_va = 0;
    std::uint32_t rkey = 0;
    std::uint32_t flush_len = 0;  // FLUSH only: the length of the range
};

struct AtomicSeg {  // ATOMIC_SEG
    std::uint64_t compare_add = 0;  // CMP_AND_SWP: compare; FETCH_AND_ADD: addend
    std::uint64_t swap = 0;         // CMP_AND_SWP only
};

struct BindSeg {  // BIND_SEG: BIND_MW
    std::uint32_t mw_rkey = 0;
    std::uint32_t new_rkey = 0;
    std::uint32_t mr_lkey = 0;
    std::uint32_t access = 0;
    std::uint64_t addr = 0;
    std::uint64_t length = 0;
};

struct UdSeg {  // UD_SEG: every WQE of a UD QP
    std::uint32_t ah_num = 0;  // 0: an AV segment follows
    std::uint32_t dest_qpn = 0;
    std::uint32_t qkey = 0;
};

// AV: the UD WQE's address vector segment. QPC, AH_ENTRY, QP_ATTR and
// CMD_CREATE_AH_IN embed the same layout (checked below), so encode_av and
// decode_av also read and write theirs, at their av_dgid offset.
struct AddressVector {
    std::array<std::uint8_t, 16> dgid{};  // wire order
    std::uint8_t sgid_index = 0;
    std::uint8_t hop_limit = 0;
    std::uint8_t traffic_class = 0;
    std::uint8_t sl = 0;
    bool grh = false;
    std::uint8_t net_type = 0;  // NetType
    std::uint32_t flow_label = 0;
    std::uint8_t static_rate = 0;
    std::array<std::uint8_t, 6> dmac{};  // wire order
};

// ---------------------------------------------------------------------------
// Opcodes (hw-spec.md 6.2, 6.3), on top of the vocabulary's classes
// (verbs.h: is_rdma, is_atomic, is_send, is_local_op).
// ---------------------------------------------------------------------------
constexpr bool wqe_has_raddr(WrOpcode o) noexcept { return is_rdma(o) || is_atomic(o) || is_placement(o); }
constexpr bool wqe_opcode_known(WrOpcode o) noexcept {
    return is_send(o) || wqe_has_raddr(o) || is_local_op(o);
}
// Inline data is not allowed for RDMA READ, the atomics and FLUSH (6.2);
// ATOMIC_WRITE's 8 bytes are always inline.
constexpr bool wqe_inline_allowed(WrOpcode o) noexcept {
    return o != WrOpcode::RdmaRead && !is_atomic(o) && !is_local_op(o) && o != WrOpcode::Flush;
}
// FLUSH's FETH in CTRL_SEG.imm_inv (6.2): placement type in bits 3..0,
// selectivity level in bits 5..4, as on the wire.
constexpr std::uint32_t wqe_flush_feth(std::uint8_t placement, std::uint8_t selectivity) noexcept {
    return (std::uint32_t{selectivity} & 3u) << 4 | (std::uint32_t{placement} & 0xfu);
}
constexpr std::uint8_t wqe_flush_placement(std::uint32_t imm_inv) noexcept {
    return static_cast<std::uint8_t>(imm_inv & 0xfu);
}
constexpr std::uint8_t wqe_flush_selectivity(std::uint32_t imm_inv) noexcept {
    return static_cast<std::uint8_t>((imm_inv >> 4) & 3u);
}
// The QP types of hw-spec 6.3 (rxe's opcode table).
constexpr bool wqe_opcode_allowed(QpType t, WrOpcode o) noexcept {
    switch (o) {
        case WrOpcode::Send:
        case WrOpcode::SendWithImm:
            return t == QpType::Rc || t == QpType::Uc || t == QpType::Ud;
        case WrOpcode::RdmaWrite:
        case WrOpcode::RdmaWriteWithImm:
        case WrOpcode::SendWithInv:
        case WrOpcode::BindMw:
            return t == QpType::Rc || t == QpType::Uc;
        case WrOpcode::RdmaRead:
        case WrOpcode::AtomicCmpAndSwp:
        case WrOpcode::AtomicFetchAndAdd:
        case WrOpcode::LocalInv:
        case WrOpcode::Flush:
        case WrOpcode::AtomicWrite:
            return t == QpType::Rc;
    }
    return false;
}

// ---------------------------------------------------------------------------
// Why a WQE is refused, and the CQE status the device completes it with.
// ---------------------------------------------------------------------------
enum class WqeFault : std::uint8_t {
    None = 0,
    BadOpcode,         // not an opcode of 6.3
    LocalOpData,       // BIND_MW or LOCAL_INV with SGEs or inline data
    Truncated,         // a segment, or the inline bytes, would end past the slot
    TooManySge,        // num_sge above the QP's limit (or kMaxSge)
    InlineNotAllowed,  // inline data on RDMA READ or an atomic
    InlineTooLong,     // inline byte_count above the QP's max_inline (or kMaxInline)
    AtomicUnaligned,   // atomic remote_va not 8-byte aligned
    AtomicResult,      // atomic without exactly one 8-byte result SGE
    LengthMismatch,    // total_len is not the SGE sum / the inline byte count
    PlacementData,     // ATOMIC_WRITE without exactly 8 inline bytes, FLUSH with data
};

// hw-spec 6.2, engine checks: a length that disagrees is LOC_LEN_ERR, every
// other malformed WQE LOC_QP_OP_ERR.
constexpr WcStatus wqe_fault_status(WqeFault f) noexcept {
    switch (f) {
        case WqeFault::None: return WcStatus::Success;
        case WqeFault::LengthMismatch: return WcStatus::LocLenErr;
        default: return WcStatus::LocQpOpErr;
    }
}

constexpr const char* to_string(WqeFault f) noexcept {
    switch (f) {
        case WqeFault::None: return "ok";
        case WqeFault::BadOpcode: return "opcode not in hw-spec 6.3";
        case WqeFault::LocalOpData: return "local operation with data";
        case WqeFault::Truncated: return "segment past the end of the slot";
        case WqeFault::TooManySge: return "num_sge above the QP's limit";
        case WqeFault::InlineNotAllowed: return "inline data on RDMA READ or an atomic";
        case WqeFault::InlineTooLong: return "inline data above max_inline";
        case WqeFault::AtomicUnaligned: return "atomic remote_va not 8-byte aligned";
        case WqeFault::AtomicResult: return "atomic result is not one 8-byte SGE";
        case WqeFault::PlacementData: return "ATOMIC_WRITE without 8 inline bytes, or FLUSH with data";
        case WqeFault::LengthMismatch: return "total_len differs from the data length";
    }
    return "?";
}

// ---------------------------------------------------------------------------
// Sizes (hw-spec.md 5.6.7, 5.6.8, 6.2, 6.4)
// ---------------------------------------------------------------------------
constexpr std::uint64_t seg_round_up(std::uint64_t n) noexcept {
    return (n + kSegUnit - 1) / kSegUnit * kSegUnit;
}
// An INLINE_SEG with `len` bytes, padded to 16.
constexpr std::uint64_t inline_part_size(std::uint64_t len) noexcept {
    return seg_round_up(inline_seg::kSize + len);
}
// The largest part of a send WQE before its data: CTRL, then the larger of
// RADDR + ATOMIC and UD + AV.
constexpr std::uint32_t kSendWqeFixedMax =
    ctrl_seg::kSize + (raddr_seg::kSize + atomic_seg::kSize > ud_seg::kSize + av::kSize
                           ? raddr_seg::kSize + atomic_seg::kSize
                           : ud_seg::kSize + av::kSize);
// The slot a QP with these capabilities needs: the largest fixed part, then
// the larger of `max_sge` DATA_SEGs and `max_inline` inline bytes.
constexpr std::uint64_t send_wqe_max_size(std::uint64_t max_sge, std::uint64_t max_inline) noexcept {
    const std::uint64_t sges = std::uint64_t{data_seg::kSize} * max_sge;
    const std::uint64_t inl = inline_part_size(max_inline);
    return kSendWqeFixedMax + (sges > inl ? sges : inl);
}
// The inline bytes a send slot of `stride` bytes carries whatever the opcode.
constexpr std::uint32_t send_inline_room(std::uint32_t stride) noexcept {
    return stride > kSendWqeFixedMax + inline_seg::kSize ? stride - kSendWqeFixedMax - inline_seg::kSize : 0;
}
// A receive WQE with `num_sge` SGEs (RQ and SRQ alike).
constexpr std::uint64_t recv_wqe_size(std::uint64_t num_sge) noexcept {
    return recv_wqe::kSize + std::uint64_t{data_seg::kSize} * num_sge;
}

// ---------------------------------------------------------------------------
// Segment encoders and decoders: each segment's members bound to its
// layout's fields once (field_map.h), for both directions; encode_value(p,
// seg) and decode_value<Seg>(p) at the segment's first byte.
// ---------------------------------------------------------------------------
constexpr auto field_map_of(const DataSeg*) noexcept {
    return field_map(data_seg::kSize, member_field(&DataSeg::addr, data_seg::addr),
                     member_field(&DataSeg::length, data_seg::length), member_field(&DataSeg::lkey, data_seg::lkey));
}
constexpr auto field_map_of(const RaddrSeg*) noexcept {
    return field_map(raddr_seg::kSize, member_field(&RaddrSeg::remote_va, raddr_seg::remote_va),
                     member_field(&RaddrSeg::rkey, raddr_seg::rkey),
                     member_field(&RaddrSeg::flush_len, raddr_seg::flush_len));
}
constexpr auto field_map_of(const AtomicSeg*) noexcept {
    return field_map(atomic_seg::kSize, member_field(&AtomicSeg::compare_add, atomic_seg::compare_add),
                     member_field(&AtomicSeg::swap, atomic_seg::swap));
}
constexpr auto field_map_of(const BindSeg*) noexcept {
    namespace b = bind_seg;
    return field_map(b::kSize, member_field(&BindSeg::mw_rkey, b::mw_rkey), member_field(&BindSeg::new_rkey, b::new_rkey),
                     member_field(&BindSeg::mr_lkey, b::mr_lkey), member_field(&BindSeg::access, b::access),
                     member_field(&BindSeg::addr, b::addr), member_field(&BindSeg::length, b::length));
}
constexpr auto field_map_of(const UdSeg*) noexcept {
    return field_map(ud_seg::kSize, member_field(&UdSeg::ah_num, ud_seg::ah_num),
                     member_field(&UdSeg::dest_qpn, ud_seg::dest_qpn), member_field(&UdSeg::qkey, ud_seg::qkey));
}
constexpr auto field_map_of(const AddressVector*) noexcept {
    using A = AddressVector;
    return field_map(av::kSize, member_field(&A::dgid, av::dgid), member_field(&A::sgid_index, av::sgid_index),
                     member_field(&A::hop_limit, av::hop_limit), member_field(&A::traffic_class, av::traffic_class),
                     member_field(&A::sl, av::sl), member_field(&A::grh, av::grh), member_field(&A::net_type, av::net_type),
                     member_field(&A::flow_label, av::flow_label), member_field(&A::static_rate, av::static_rate),
                     member_field(&A::dmac, av::dmac));
}

inline void encode_av(std::uint8_t* p, const AddressVector& a) noexcept { encode_value(p, a); }
inline AddressVector decode_av(const std::uint8_t* p) noexcept { return decode_value<AddressVector>(p); }

namespace wqe_detail {
// The fields of CTRL_SEG and RECV_WQE that follow from the data.
inline void put(std::uint8_t* p, std::uint32_t len, Field f, std::uint64_t v) noexcept {
    set(p, len, f, v & mask_of(f.width));
}

// The layouts that embed an AV place every AV field at the AV's offset plus
// the embedded av_dgid's: encode_av / decode_av at `entry + X::av_dgid.offset`
// read and write theirs.
constexpr bool shifted(Field embedded, Field f, std::uint32_t base) noexcept {
    return embedded.offset == base + f.offset && embedded.lo == f.lo && embedded.width == f.width;
}
}  // namespace wqe_detail
#define SIMNIC_HW_EMBEDS_AV(ns)                                                                     \
    static_assert(ns::av_dgid.offset + av::kSize <= ns::kSize &&                                    \
                      wqe_detail::shifted(ns::av_dgid, av::dgid, ns::av_dgid.offset) &&             \
                      wqe_detail::shifted(ns::av_sgid_index, av::sgid_index, ns::av_dgid.offset) && \
                      wqe_detail::shifted(ns::av_hop_limit, av::hop_limit, ns::av_dgid.offset) &&   \
                      wqe_detail::shifted(ns::av_traffic_class, av::traffic_class,                  \
                                          ns::av_dgid.offset) &&                                    \
                      wqe_detail::shifted(ns::av_sl, av::sl, ns::av_dgid.offset) &&                 \
                      wqe_detail::shifted(ns::av_grh, av::grh, ns::av_dgid.offset) &&               \
                      wqe_detail::shifted(ns::av_net_type, av::net_type, ns::av_dgid.offset) &&     \
                      wqe_detail::shifted(ns::av_flow_label, av::flow_label, ns::av_dgid.offset) && \
                      wqe_detail::shifted(ns::av_static_rate, av::static_rate,                      \
                                          ns::av_dgid.offset) &&                                    \
                      wqe_detail::shifted(ns::av_dmac, av::dmac, ns::av_dgid.offset),               \
                  #ns " embeds the AV layout")
SIMNIC_HW_EMBEDS_AV(qpc);
SIMNIC_HW_EMBEDS_AV(ah_entry);
SIMNIC_HW_EMBEDS_AV(qp_attr);
SIMNIC_HW_EMBEDS_AV(cmd_create_ah_in);
#undef SIMNIC_HW_EMBEDS_AV

// ---------------------------------------------------------------------------
// Send WQE (hw-spec.md 6.2)
// ---------------------------------------------------------------------------
struct SendWqe {
    // CTRL_SEG
    WrOpcode opcode = WrOpcode::Send;
    bool fence = false;
    bool signaled = false;
    bool solicited = false;
    // SEND_WITH_IMM, RDMA_WRITE_WITH_IMM: the immediate (host order);
    // SEND_WITH_INV, LOCAL_INV: the rkey to invalidate.
    std::uint32_t imm_inv = 0;
    std::uint64_t wr_id = 0;
    // The segments the opcode and the QP type carry (6.2); the others are
    // neither written nor read.
    RaddrSeg raddr;     // RDMA and atomics
    AtomicSeg atomic;   // atomics
    BindSeg bind;       // BIND_MW
    UdSeg ud;           // every WQE of a UD QP but the local operations
    AddressVector av;   // UD, when ud.ah_num is 0
    // The data: num_sge SGEs, or (inline_data) inline_len bytes at
    // inline_bytes. Encoding copies the bytes into the slot; decoding points
    // inline_bytes into the slot it read, so they live as long as it does.
    bool inline_data = false;
    std::uint32_t num_sge = 0;
    std::array<DataSeg, kMaxSge> sge{};
    const std::uint8_t* inline_bytes = nullptr;
    std::uint32_t inline_len = 0;

    // The message length: what CTRL_SEG.total_len says.
    std::uint64_t data_len() const noexcept {
        if (inline_data) return inline_len;
        std::uint64_t n = 0;
        for (std::uint32_t i = 0; i < num_sge && i < kMaxSge; ++i) n += sge[i].length;
        return n;
    }
};

// CTRL_SEG's fields that are the WQE's own; inline_data, num_sge and
// total_len follow from its data.
namespace wqe_detail {
inline constexpr auto kCtrl = field_map(
    ctrl_seg::kSize, member_field(&SendWqe::opcode, ctrl_seg::opcode), member_field(&SendWqe::fence, ctrl_seg::fence),
    member_field(&SendWqe::signaled, ctrl_seg::signaled), member_field(&SendWqe::solicited, ctrl_seg::solicited),
    member_field(&SendWqe::imm_inv, ctrl_seg::imm_inv), member_field(&SendWqe::wr_id, ctrl_seg::wr_id));
}  // namespace wqe_detail

// What a send WQE is decoded against: the QP's type and limits (QPC).
struct SqLimits {
    QpType qp_type = QpType::Rc;
    std::uint32_t stride = 0;      // slot bytes, 2^log_sq_stride
    std::uint32_t max_sge = 0;     // max_send_sge
    std::uint32_t max_inline = 0;  // max_inline
};

// The bytes a send WQE's segments take, packed from the slot start.
inline std::uint64_t send_wqe_size(const SendWqe& w, QpType qp_type) noexcept {
    std::uint64_t n = ctrl_seg::kSize;
    if (is_local_op(w.opcode)) return w.opcode == WrOpcode::BindMw ? n + bind_seg::kSize : n;
    if (wqe_has_raddr(w.opcode)) n += raddr_seg::kSize;
    if (is_atomic(w.opcode)) n += atomic_seg::kSize;
    if (qp_type == QpType::Ud) n += ud_seg::kSize + (w.ud.ah_num == 0 ? av::kSize : 0);
    return n + (w.inline_data ? inline_part_size(w.inline_len)
                              : std::uint64_t{data_seg::kSize} * w.num_sge);
}

// Writes `w` into a slot of `stride` bytes for a QP of `qp_type`: the slot
// zeroed, CTRL (total_len the data length), the segments 6.2 lists for the
// opcode and QP type, then the SGEs or the padded inline segment. Refuses
// (slot untouched) what the format cannot carry: an unknown opcode, data on
// a local operation, inline data where 6.2 forbids it, more than kMaxSge
// SGEs or kMaxInline inline bytes, or a WQE larger than the slot. The QP's
// own limits (max_send_sge, max_inline) are the caller's to check.
inline WqeFault encode_send(const SendWqe& w, QpType qp_type, std::uint8_t* slot,
                            std::uint32_t stride) noexcept {
    const WrOpcode o = w.opcode;
    if (!wqe_opcode_known(o)) return WqeFault::BadOpcode;
    if (is_local_op(o) && (w.inline_data || w.num_sge != 0)) return WqeFault::LocalOpData;
    if (w.inline_data && !wqe_inline_allowed(o)) return WqeFault::InlineNotAllowed;
    if (w.inline_data && w.inline_len > kMaxInline) return WqeFault::InlineTooLong;
    if (o == WrOpcode::AtomicWrite && !(w.inline_data && w.inline_len == 8)) return WqeFault::PlacementData;
    if (o == WrOpcode::Flush && w.num_sge != 0) return WqeFault::PlacementData;
    if (!w.inline_data && w.num_sge > kMaxSge) return WqeFault::TooManySge;
    if (send_wqe_size(w, qp_type) > stride) return WqeFault::Truncated;
    using wqe_detail::put;
    namespace c = ctrl_seg;
    std::memset(slot, 0, stride);
    static_assert(wqe_detail::kCtrl.size == c::kSize);
    encode_fields<wqe_detail::kCtrl>(slot, w);
    put(slot, c::kSize, c::inline_data, w.inline_data ? 1 : 0);
    put(slot, c::kSize, c::num_sge, w.inline_data ? 0 : w.num_sge);
    put(slot, c::kSize, c::total_len, static_cast<std::uint32_t>(w.data_len()));
    std::uint8_t* s = slot + c::kSize;
    if (o == WrOpcode::BindMw) encode_value(s, w.bind);
    if (is_local_op(o)) return WqeFault::None;
    if (wqe_has_raddr(o)) {
        encode_value(s, w.raddr);
        s += raddr_seg::kSize;
    }
    if (is_atomic(o)) {
        encode_value(s, w.atomic);
        s += atomic_seg::kSize;
    }
    if (qp_type == QpType::Ud) {
        encode_value(s, w.ud);
        s += ud_seg::kSize;
        if (w.ud.ah_num == 0) {
            encode_value(s, w.av);
            s += av::kSize;
        }
    }
    if (w.inline_data) {
        put(s, inline_seg::kSize, inline_seg::byte_count, w.inline_len);
        if (w.inline_len != 0) std::memcpy(s + inline_seg::kSize, w.inline_bytes, w.inline_len);
        return WqeFault::None;
    }
    for (std::uint32_t i = 0; i < w.num_sge; ++i, s += data_seg::kSize) encode_value(s, w.sge[i]);
    return WqeFault::None;
}

// Reads the send WQE in `slot` (lim.stride bytes) as the device does (6.2's
// engine checks, in the engine's order). CTRL's fields (wr_id, opcode,
// flags, imm_inv) are filled even when the WQE is refused, for the error
// CQE; the rest of `w` is meaningful only with WqeFault::None. Not checked
// here, because they need device state: the opcode against the QP type, the
// AH of a UD WQE (ud.ah_num), the keys, the lengths against the MTU and
// max_msg_sz.
inline WqeFault decode_send(const std::uint8_t* slot, const SqLimits& lim, SendWqe& w) noexcept {
    namespace c = ctrl_seg;
    w = SendWqe{};
    const std::uint64_t stride = lim.stride;
    if (stride < c::kSize) return WqeFault::Truncated;
    decode_fields<wqe_detail::kCtrl>(slot, w);
    const WrOpcode o = w.opcode;
    const bool inl = get(slot, c::kSize, c::inline_data) != 0;
    const auto nsge = static_cast<std::uint32_t>(get(slot, c::kSize, c::num_sge));
    const auto total = static_cast<std::uint32_t>(get(slot, c::kSize, c::total_len));
    std::uint64_t off = c::kSize;
    auto room = [&](std::uint64_t n) { return off + n <= stride; };

    if (is_local_op(o)) {  // 6.2, 6.5: no data
        if (inl || nsge != 0) return WqeFault::LocalOpData;
        if (o == WrOpcode::BindMw) {
            if (!room(bind_seg::kSize)) return WqeFault::Truncated;
            w.bind = decode_value<BindSeg>(slot + off);
        }
        return WqeFault::None;
    }
    if (!wqe_opcode_known(o)) return WqeFault::BadOpcode;
    if (wqe_has_raddr(o)) {
        if (!room(raddr_seg::kSize)) return WqeFault::Truncated;
        w.raddr = decode_value<RaddrSeg>(slot + off);
        off += raddr_seg::kSize;
    }
    if (is_atomic(o)) {
        if (!room(atomic_seg::kSize)) return WqeFault::Truncated;
        w.atomic = decode_value<AtomicSeg>(slot + off);
        off += atomic_seg::kSize;
        if (w.raddr.remote_va % 8 != 0) return WqeFault::AtomicUnaligned;
    }
    if (lim.qp_type == QpType::Ud) {
        if (!room(ud_seg::kSize)) return WqeFault::Truncated;
        w.ud = decode_value<UdSeg>(slot + off);
        off += ud_seg::kSize;
        if (w.ud.ah_num == 0) {
            if (!room(av::kSize)) return WqeFault::Truncated;
            w.av = decode_value<AddressVector>(slot + off);
            off += av::kSize;
        }
    }
    if (o == WrOpcode::AtomicWrite && !inl) return WqeFault::PlacementData;
    if (inl) {
        if (!wqe_inline_allowed(o)) return WqeFault::InlineNotAllowed;
        if (!room(inline_seg::kSize)) return WqeFault::Truncated;
        const auto n = static_cast<std::uint32_t>(get(slot + off, inline_seg::kSize, inline_seg::byte_count));
        off += inline_seg::kSize;
        // ATOMIC_WRITE's 8 bytes are inline whatever the QP's max_inline.
        if ((n > lim.max_inline && o != WrOpcode::AtomicWrite) || n > kMaxInline) return WqeFault::InlineTooLong;
        if (!room(n)) return WqeFault::Truncated;
        w.inline_data = true;
        w.inline_bytes = slot + off;
        w.inline_len = n;
        if (n != total) return WqeFault::LengthMismatch;
        return o == WrOpcode::AtomicWrite && n != 8 ? WqeFault::PlacementData : WqeFault::None;
    }
    if (nsge > lim.max_sge || nsge > kMaxSge) return WqeFault::TooManySge;
    std::uint64_t sum = 0;
    for (std::uint32_t i = 0; i < nsge; ++i, off += data_seg::kSize) {
        if (!room(data_seg::kSize)) return WqeFault::Truncated;
        w.sge[i] = decode_value<DataSeg>(slot + off);
        w.num_sge = i + 1;
        sum += w.sge[i].length;
    }
    if (is_atomic(o)) return nsge == 1 && sum == 8 ? WqeFault::None : WqeFault::AtomicResult;
    if (o == WrOpcode::Flush && nsge != 0) return WqeFault::PlacementData;
    return sum == total ? WqeFault::None : WqeFault::LengthMismatch;
}

// ---------------------------------------------------------------------------
// Receive WQE (hw-spec.md 6.4): RQ and SRQ alike.
// ---------------------------------------------------------------------------
struct RecvWqe {
    std::uint64_t wr_id = 0;
    std::uint32_t num_sge = 0;
    std::array<DataSeg, kMaxSge> sge{};
};

// Writes `w` into a slot of `stride` bytes (zeroed first). Refuses (slot
// untouched) more than kMaxSge SGEs or a WQE larger than the slot.
inline WqeFault encode_recv(const RecvWqe& w, std::uint8_t* slot, std::uint32_t stride) noexcept {
    if (w.num_sge > kMaxSge) return WqeFault::TooManySge;
    if (recv_wqe_size(w.num_sge) > stride) return WqeFault::Truncated;
    namespace r = recv_wqe;
    std::memset(slot, 0, stride);
    wqe_detail::put(slot, r::kSize, r::wr_id, w.wr_id);
    wqe_detail::put(slot, r::kSize, r::num_sge, w.num_sge);
    std::uint8_t* s = slot + r::kSize;
    for (std::uint32_t i = 0; i < w.num_sge; ++i, s += data_seg::kSize) encode_value(s, w.sge[i]);
    return WqeFault::None;
}

// Reads the receive WQE in `slot` (`stride` bytes) of a queue whose WQEs
// carry at most `max_sge` SGEs (QPC.max_recv_sge, SRQC.max_sge). wr_id is
// filled even when the WQE is refused.
inline WqeFault decode_recv(const std::uint8_t* slot, std::uint32_t stride, std::uint32_t max_sge,
                            RecvWqe& w) noexcept {
    namespace r = recv_wqe;
    w = RecvWqe{};
    if (stride < r::kSize) return WqeFault::Truncated;
    w.wr_id = get(slot, r::kSize, r::wr_id);
    const auto n = static_cast<std::uint32_t>(get(slot, r::kSize, r::num_sge));
    if (n > max_sge || n > kMaxSge) return WqeFault::TooManySge;
    if (recv_wqe_size(n) > stride) return WqeFault::Truncated;
    const std::uint8_t* s = slot + r::kSize;
    for (std::uint32_t i = 0; i < n; ++i, s += data_seg::kSize) w.sge[i] = decode_value<DataSeg>(s);
    w.num_sge = n;
    return WqeFault::None;
}

}  // namespace simnic::hw
