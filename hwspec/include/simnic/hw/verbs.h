// SPDX-License-Identifier: Apache-2.0
// simnic hardware spec: the verbs vocabulary, defined once.
//
// Every value here is one that libibverbs also defines, and carries
// libibverbs' numbering (rdma-core 44, <infiniband/verbs.h>; hw-spec.md 1.4):
// the WQE, CQE, EQE and command fields hold these numbers, so the verbs
// provider passes an application's values through unchanged, and the
// firmware, the engines, the transport core and the CM agent all speak the
// same words. Each set names the libibverbs type it follows.
//
// Nothing here includes libibverbs: the device side (firmware, engines, the
// cycle model) must build without it. The verbs provider, the only code that
// includes <infiniband/verbs.h>, checks every value below against it with
// static_asserts (verbs_provider/src/verbs_abi.cc); a value added here gets
// its check there.
#pragma once

#include <cstdint>

namespace simnic::hw {

// ---------------------------------------------------------------------------
// Work requests (hw-spec.md 6.2, 6.3)
// ---------------------------------------------------------------------------

// ibv_wr_opcode: CTRL_SEG.opcode. The values simnic executes; the others
// (TSO, DRIVER1, ...) fail with LOC_QP_OP_ERR. FLUSH and ATOMIC_WRITE are
// IBA 1.5's memory placement extensions (kernel rxe from 6.2): rdma-core 44
// has IBV_WR_ATOMIC_WRITE but not yet IBV_WR_FLUSH, whose value is the
// kernel's IB_UVERBS_WR_FLUSH.
enum class WrOpcode : std::uint8_t {
    RdmaWrite = 0,
    RdmaWriteWithImm = 1,
    Send = 2,
    SendWithImm = 3,
    RdmaRead = 4,
    AtomicCmpAndSwp = 5,
    AtomicFetchAndAdd = 6,
    LocalInv = 7,
    BindMw = 8,
    SendWithInv = 9,
    Flush = 14,
    AtomicWrite = 15,
};

// RDMA WRITE (with or without immediate) and RDMA READ: with the atomics, the
// requests that carry a RADDR segment.
constexpr bool is_rdma(WrOpcode o) noexcept {
    return o == WrOpcode::RdmaWrite || o == WrOpcode::RdmaWriteWithImm || o == WrOpcode::RdmaRead;
}
// Atomics, and the requests that take a responder resource (READ and the
// atomics): the requester limits these by max_rd_atomic, the completer
// expects data back for them.
constexpr bool is_atomic(WrOpcode o) noexcept {
    return o == WrOpcode::AtomicCmpAndSwp || o == WrOpcode::AtomicFetchAndAdd;
}
constexpr bool is_read_or_atomic(WrOpcode o) noexcept { return o == WrOpcode::RdmaRead || is_atomic(o); }
// ATOMIC_WRITE and FLUSH: one packet each with a RETH, answered by an RDMA
// READ RESPONSE without payload. Neither takes a max_rd_atomic credit at the
// requester (rxe's WR_ATOMIC_OR_READ_MASK leaves them out).
constexpr bool is_placement(WrOpcode o) noexcept { return o == WrOpcode::Flush || o == WrOpcode::AtomicWrite; }
// Operations the requester performs itself, sending no packet (rxe's
// WR_LOCAL_OP_MASK); their WQEs carry no data.
constexpr bool is_local_op(WrOpcode o) noexcept { return o == WrOpcode::LocalInv || o == WrOpcode::BindMw; }
// The SENDs, which consume a receive WQE at the responder.
constexpr bool is_send(WrOpcode o) noexcept {
    return o == WrOpcode::Send || o == WrOpcode::SendWithImm || o == WrOpcode::SendWithInv;
}

// ibv_send_flags. CTRL_SEG carries each as a bit of its own (fence,
// signaled, solicited, inline_data); these are the verbs' and the transport
// core's SendWqe.send_flags.
namespace send_flags {
constexpr std::uint32_t kFence = 1u << 0;
constexpr std::uint32_t kSignaled = 1u << 1;
constexpr std::uint32_t kSolicited = 1u << 2;
constexpr std::uint32_t kInline = 1u << 3;
}  // namespace send_flags

// ---------------------------------------------------------------------------
// Completions (hw-spec.md 7.1)
// ---------------------------------------------------------------------------

// ibv_wc_status: CQE.status.
enum class WcStatus : std::uint8_t {
    Success = 0,
    LocLenErr = 1,
    LocQpOpErr = 2,
    LocEecOpErr = 3,
    LocProtErr = 4,
    WrFlushErr = 5,
    MwBindErr = 6,
    BadRespErr = 7,
    LocAccessErr = 8,
    RemInvReqErr = 9,
    RemAccessErr = 10,
    RemOpErr = 11,
    RetryExcErr = 12,
    RnrRetryExcErr = 13,
    LocRddViolErr = 14,
    RemInvRdReqErr = 15,
    RemAbortErr = 16,
    InvEecnErr = 17,
    InvEecStateErr = 18,
    FatalErr = 19,
    RespTimeoutErr = 20,
    GeneralErr = 21,
};

// ibv_wc_status_str()'s words.
constexpr const char* to_string(WcStatus s) noexcept {
    switch (s) {
        case WcStatus::Success: return "success";
        case WcStatus::LocLenErr: return "local length error";
        case WcStatus::LocQpOpErr: return "local QP operation error";
        case WcStatus::LocEecOpErr: return "local EE context operation error";
        case WcStatus::LocProtErr: return "local protection error";
        case WcStatus::WrFlushErr: return "Work Request Flushed Error";
        case WcStatus::MwBindErr: return "memory management operation error";
        case WcStatus::BadRespErr: return "bad response error";
        case WcStatus::LocAccessErr: return "local access error";
        case WcStatus::RemInvReqErr: return "remote invalid request error";
        case WcStatus::RemAccessErr: return "remote access error";
        case WcStatus::RemOpErr: return "remote operation error";
        case WcStatus::RetryExcErr: return "transport retry counter exceeded";
        case WcStatus::RnrRetryExcErr: return "RNR retry counter exceeded";
        case WcStatus::LocRddViolErr: return "local RDD violation error";
        case WcStatus::RemInvRdReqErr: return "remote invalid RD request";
        case WcStatus::RemAbortErr: return "aborted error";
        case WcStatus::InvEecnErr: return "invalid EE context number";
        case WcStatus::InvEecStateErr: return "invalid EE context state";
        case WcStatus::FatalErr: return "fatal error";
        case WcStatus::RespTimeoutErr: return "response timeout error";
        case WcStatus::GeneralErr: return "general error";
    }
    return "unknown";
}

// ibv_wc_opcode: CQE.opcode. The values a simnic CQE carries.
enum class WcOpcode : std::uint8_t {
    Send = 0,
    RdmaWrite = 1,
    RdmaRead = 2,
    CompSwap = 3,
    FetchAdd = 4,
    BindMw = 5,
    LocalInv = 6,
    Flush = 8,        // IB_UVERBS_WC_FLUSH; rdma-core 44 does not name it yet
    AtomicWrite = 9,  // IBV_WC_ATOMIC_WRITE
    Recv = 128,
    RecvRdmaWithImm = 129,
};

// ibv_wc_flags: CQE.wc_flags. The bits a simnic CQE carries.
namespace wc_flags {
constexpr std::uint8_t kGrh = 1u << 0;
constexpr std::uint8_t kWithImm = 1u << 1;
constexpr std::uint8_t kWithInv = 1u << 3;
}  // namespace wc_flags

// ---------------------------------------------------------------------------
// QPs (hw-spec.md 5.6.7, 5.7, 9.2)
// ---------------------------------------------------------------------------

// ibv_qp_type: CMD_CREATE_QP_IN.qp_type, QPC.qp_type. The types simnic has.
enum class QpType : std::uint8_t { Rc = 2, Uc = 3, Ud = 4 };

// ibv_qp_state: QP_ATTR.qp_state / cur_state, QPC.state.
enum class QpState : std::uint8_t { Reset = 0, Init = 1, Rtr = 2, Rts = 3, Sqd = 4, Sqe = 5, Err = 6 };

// The IBA names (hw-spec.md 5.7's tables, iproute2's `rdma resource`);
// "?" for a value outside the set.
constexpr const char* to_string(QpType t) noexcept {
    switch (t) {
        case QpType::Rc: return "RC";
        case QpType::Uc: return "UC";
        case QpType::Ud: return "UD";
    }
    return "?";
}
constexpr const char* to_string(QpState s) noexcept {
    switch (s) {
        case QpState::Reset: return "RESET";
        case QpState::Init: return "INIT";
        case QpState::Rtr: return "RTR";
        case QpState::Rts: return "RTS";
        case QpState::Sqd: return "SQD";
        case QpState::Sqe: return "SQE";
        case QpState::Err: return "ERR";
    }
    return "?";
}

// ibv_qp_attr_mask: QP_ATTR.attr_mask, and the masks rdma_init_qp_attr
// returns.
namespace qp_attr_mask {
constexpr std::uint32_t kState = 1u << 0;
constexpr std::uint32_t kCurState = 1u << 1;
constexpr std::uint32_t kEnSqdAsyncNotify = 1u << 2;
constexpr std::uint32_t kAccessFlags = 1u << 3;
constexpr std::uint32_t kPkeyIndex = 1u << 4;
constexpr std::uint32_t kPort = 1u << 5;
constexpr std::uint32_t kQkey = 1u << 6;
constexpr std::uint32_t kAv = 1u << 7;
constexpr std::uint32_t kPathMtu = 1u << 8;
constexpr std::uint32_t kTimeout = 1u << 9;
constexpr std::uint32_t kRetryCnt = 1u << 10;
constexpr std::uint32_t kRnrRetry = 1u << 11;
constexpr std::uint32_t kRqPsn = 1u << 12;
constexpr std::uint32_t kMaxQpRdAtomic = 1u << 13;
constexpr std::uint32_t kAltPath = 1u << 14;
constexpr std::uint32_t kMinRnrTimer = 1u << 15;
constexpr std::uint32_t kSqPsn = 1u << 16;
constexpr std::uint32_t kMaxDestRdAtomic = 1u << 17;
constexpr std::uint32_t kPathMigState = 1u << 18;
constexpr std::uint32_t kCap = 1u << 19;
constexpr std::uint32_t kDestQpn = 1u << 20;
constexpr std::uint32_t kRateLimit = 1u << 25;
// Bits this revision rejects with CmdStatus::NotSupported.
constexpr std::uint32_t kUnsupported = kAltPath | kPathMigState | kCap | kRateLimit;
}  // namespace qp_attr_mask

// ibv_cq_attr_mask: CMD_MODIFY_CQ_IN.attr_mask (hw-spec.md 5.6.6). The one
// attribute is the moderation, ibv_moderate_cq's cq_count and cq_period.
namespace cq_attr_mask {
constexpr std::uint32_t kModerate = 1u << 0;  // IBV_CQ_ATTR_MODERATE
constexpr std::uint32_t kAll = kModerate;
}  // namespace cq_attr_mask
// The longest moderation period, us: CQC.mod_period's 12 bits, as mlx5's
// MLX5_MAX_CQ_PERIOD (0xfff, its cq_period field's width); ibv_modify_cq
// with a longer one fails with EINVAL, as on mlx5.
constexpr std::uint32_t kMaxCqPeriodUs = 0xFFF;

// ---------------------------------------------------------------------------
// Memory (hw-spec.md 5.6.5, 5.6.10, 5.6.11, 6.5, 9.5)
// ---------------------------------------------------------------------------

// ibv_access_flags: the subset REG_MR, REREG_MR, MODIFY_QP and BIND_SEG
// accept; MPT_ENTRY.access and QPC.qp_access_flags keep them.
namespace access {
constexpr std::uint8_t kLocalWrite = 1u << 0;
constexpr std::uint8_t kRemoteWrite = 1u << 1;
constexpr std::uint8_t kRemoteRead = 1u << 2;
constexpr std::uint8_t kRemoteAtomic = 1u << 3;
constexpr std::uint8_t kMwBind = 1u << 4;     // MRs only: memory windows may be bound to it
constexpr std::uint8_t kZeroBased = 1u << 5;  // BIND_SEG only: a zero-based window
// REG_MR and REREG_MR only: the MR's pages are looked up when the device
// touches them, not pinned at registration (on-demand paging, hw-spec
// 5.6.5). A mode of the MR, kept in MPT_ENTRY.on_demand, not a right.
constexpr std::uint8_t kOnDemand = 1u << 6;
constexpr std::uint8_t kRemote = kRemoteWrite | kRemoteRead | kRemoteAtomic;
// FLUSH's rights (IBA 1.5; rxe from 6.2, the kernel's IB_ACCESS_FLUSH_*):
// the placement types a FLUSH may ask of an MR and a QP, FETH placement bit 0
// (global visibility) and bit 1 (persistence). MPT_ENTRY.access,
// QPC.qp_access_flags and the commands' access fields are 16 bits wide to
// hold them.
constexpr std::uint32_t kFlushGlobal = 1u << 8;
constexpr std::uint32_t kFlushPersistent = 1u << 9;
constexpr std::uint32_t kFlush = kFlushGlobal | kFlushPersistent;
// What MODIFY_QP accepts (QPC.qp_access_flags), and REG_MR and REREG_MR
// (MPT_ENTRY.access, with MW_BIND). kAll and kAllMr are the same without
// FLUSH's rights: every right an MR usually grants.
constexpr std::uint8_t kAll = 0x0F;
constexpr std::uint8_t kAllMr = 0x1F;
constexpr std::uint32_t kQpAccess = kAll | kFlush;
constexpr std::uint32_t kMrAccess = kAllMr | kFlush;
}  // namespace access

// ibv_advise_mr_advice: CMD_ADVISE_MR_IN.advice.
enum class MrAdvice : std::uint8_t { Prefetch = 0, PrefetchWrite = 1, PrefetchNoFault = 2 };

// ibv_mw_type: CMD_ALLOC_MW_IN.type (MPT_ENTRY.kind encodes it, layout.h).
enum class MwType : std::uint8_t { Type1 = 1, Type2 = 2 };

// ibv_rereg_mr_flags: CMD_REREG_MR_IN.flags.
namespace rereg_flags {
constexpr std::uint32_t kChangeTranslation = 1u << 0;
constexpr std::uint32_t kChangePd = 1u << 1;
constexpr std::uint32_t kChangeAccess = 1u << 2;
constexpr std::uint32_t kAll = 0x7;
}  // namespace rereg_flags

// ibv_srq_attr_mask: CMD_MODIFY_SRQ_IN.attr_mask.
namespace srq_attr_mask {
constexpr std::uint32_t kMaxWr = 1u << 0;
constexpr std::uint32_t kLimit = 1u << 1;
}  // namespace srq_attr_mask

// ---------------------------------------------------------------------------
// Events (hw-spec.md 8.2)
// ---------------------------------------------------------------------------

// EQE.event_type: ibv_event_type's numbering up to 0x13, then simnic's own
// events, which never reach an application as async events.
enum class EventType : std::uint8_t {
    // ibv_event_type
    CqErr = 0,
    QpFatal = 1,
    QpReqErr = 2,
    QpAccessErr = 3,
    CommEst = 4,
    SqDrained = 5,
    PathMig = 6,
    PathMigErr = 7,
    DeviceFatal = 8,
    PortActive = 9,
    PortErr = 10,
    LidChange = 11,
    PkeyChange = 12,
    SmChange = 13,
    SrqErr = 14,
    SrqLimitReached = 15,
    QpLastWqeReached = 16,
    ClientReregister = 17,
    GidChange = 18,
    WqFatal = 19,
    // simnic events
    Completion = 0x80,
    CmdCompletion = 0x81,
};

// The QP error events: their EQE's aux is the QP's error cause (8.1, 8.2).
constexpr bool is_error_event(EventType e) noexcept {
    return e == EventType::QpFatal || e == EventType::QpReqErr || e == EventType::QpAccessErr;
}

// ---------------------------------------------------------------------------
// Ports and GIDs (hw-spec.md 2.5, 9.8)
// ---------------------------------------------------------------------------

// ibv_mtu: PORT_BLOCK.max_mtu / active_mtu, QP_ATTR.path_mtu. The IBA's
// PMTU encoding, which the packet core calls roce::IbMtu.
enum class Mtu : std::uint8_t { M256 = 1, M512 = 2, M1024 = 3, M2048 = 4, M4096 = 5 };
// ibv_port_state: PORT_BLOCK.state.
enum class PortState : std::uint8_t { Down = 1, Init = 2, Armed = 3, Active = 4 };
// IBV_LINK_LAYER_ETHERNET: PORT_BLOCK.link_layer.
constexpr std::uint8_t kLinkLayerEthernet = 2;
// ibv_gid_type: GID_ENTRY.gid_type.
enum class GidType : std::uint8_t { Ib = 0, RoceV1 = 1, RoceV2 = 2 };

}  // namespace simnic::hw
