// SPDX-License-Identifier: Apache-2.0
// simnic hardware spec: the single source of truth for every register block,
// queue entry, device table entry and command mailbox layout.
//
// docs/hw-spec.md describes the same layouts in prose and tables; the unit test
// testbench/unit/test_hwspec.cpp parses that document and checks every
// "#### Layout:" table against the descriptors below, field by field. Change a
// layout here and in the document together, or the test fails.
//
// Conventions (hw-spec.md section 1.4): all multi-byte integers little-endian;
// bits not described are reserved (write 0, ignore on read); indices free-running.
#pragma once

#include <cstddef>
#include <cstdint>

#include "simnic/hw/field.h"

namespace simnic::hw {

// ---------------------------------------------------------------------------
// Identification constants (hw-spec.md 2.3)
// ---------------------------------------------------------------------------
constexpr std::uint32_t kVendorId = 0xFFFFFF;
constexpr std::uint32_t kVendorPartId = 0;
constexpr std::uint32_t kHwRev = 1;
constexpr std::uint32_t kMagic = 0x43494E53;  // "SNIC"
constexpr std::uint32_t kSpecVersion = 0x00010000;  // 1.0
constexpr std::uint32_t kFwMajor = 0, kFwMinor = 1, kFwSubminor = 0;

enum class EngineKind : std::uint8_t { Soft = 0, Model = 1 };

// ---------------------------------------------------------------------------
// BAR0 map (hw-spec.md 2.1, 2.2). Drivers should walk the block chain; the
// fixed offsets are what this revision places there.
// ---------------------------------------------------------------------------
enum class BlockType : std::uint32_t {
    Id = 0x00000001,
    Cap = 0x00000002,
    Port = 0x00000003,
    Stats = 0x00000004,
    CtxWin = 0x00000005,
    Cmdq = 0x00000101,
    Eq = 0x00000102,
    Intr = 0x00000103,
    Doorbell = 0x00000104,
};
constexpr std::uint32_t kBlockVersion = 0x00010000;  // 1.0 for every block type

constexpr std::uint32_t kBar0IdBlock = 0x0000;
constexpr std::uint32_t kBar0CapBlock = 0x0100;
constexpr std::uint32_t kBar0PortBlock = 0x0200;  // port 1
constexpr std::uint32_t kBar0StatsBlock = 0x0300;
constexpr std::uint32_t kBar0CtxWinBlock = 0x0400;
constexpr std::uint32_t kBar0CtxBase = 0x1000;
constexpr std::uint32_t kCtxPageSize = 0x1000;

// Block offsets inside a context page.
constexpr std::uint32_t kCtxCmdqBlock = 0x000;
constexpr std::uint32_t kCtxEqBlock = 0x040;
constexpr std::uint32_t kCtxIntrBlock = 0x080;
constexpr std::uint32_t kCtxDbBlock = 0x800;

// ---------------------------------------------------------------------------
// Queue geometry (hw-spec.md 6, 7, 8)
// ---------------------------------------------------------------------------
constexpr std::uint32_t kCmdqEntrySize = 64;
constexpr std::uint32_t kEqeSize = 32;
constexpr std::uint32_t kCqeSize = 64;
constexpr std::uint32_t kSegUnit = 16;  // WQE segments are multiples of 16 bytes
constexpr std::uint32_t kMaxSge = 32;
constexpr std::uint32_t kMaxSrqSge = 27;
constexpr std::uint32_t kMaxInline = 512;
constexpr std::uint8_t kMinLogSqStride = 6;  // 64 bytes
constexpr std::uint8_t kMinLogRqStride = 4;  // 16 bytes
constexpr std::uint8_t kMaxLogStride = 10;   // 1024 bytes
constexpr std::uint8_t kMaxLogQueue = 20;    // 1 Mi entries

constexpr std::uint32_t ring_slot(std::uint32_t index, std::uint8_t log_size) noexcept {
    return index & ((std::uint32_t{1} << log_size) - 1);
}
// Phase bit the device writes into the owner field of CQE/EQE number `index`.
constexpr std::uint32_t phase_of(std::uint32_t index, std::uint8_t log_size) noexcept {
    return ((index >> log_size) & 1u) ^ 1u;
}
// Number of occupied entries; rings are full at (1 << log_size).
constexpr std::uint32_t ring_used(std::uint32_t pi, std::uint32_t ci) noexcept { return pi - ci; }

// ---------------------------------------------------------------------------
// Object numbering (hw-spec.md 10)
// ---------------------------------------------------------------------------
constexpr std::uint32_t kQpnMask = 0xFFFFFF;
constexpr std::uint32_t kQpnSmi = 0;
constexpr std::uint32_t kQpnGsi = 1;
constexpr std::uint32_t kFirstUserQpn = 0x11;
constexpr std::uint32_t kReservedLkey = 0;  // MPT index 0 is never allocated

constexpr std::uint32_t make_key(std::uint32_t index, std::uint8_t key_byte) noexcept {
    return (index << 8) | key_byte;
}
constexpr std::uint32_t key_index(std::uint32_t key) noexcept { return key >> 8; }
constexpr std::uint8_t key_byte(std::uint32_t key) noexcept {
    return static_cast<std::uint8_t>(key & 0xFF);
}

// ---------------------------------------------------------------------------
// Default capability values (hw-spec.md 2.4), as kernel rxe reports them.
// ---------------------------------------------------------------------------
namespace caps_default {
constexpr std::uint64_t max_mr_size = 0xFFFFFFFFFFFFFFFFull;
constexpr std::uint64_t page_size_cap = 0xFFFFF000ull;
constexpr std::uint64_t device_cap_flags = 0x1C06;
constexpr std::uint32_t max_qp = 1048560;
constexpr std::uint32_t max_qp_wr = 1048576;
constexpr std::uint32_t max_sge = kMaxSge;
constexpr std::uint32_t max_sge_rd = 32;
constexpr std::uint32_t max_cq = 1048576;
constexpr std::uint32_t max_cqe = 32767;
constexpr std::uint32_t max_mr = 524287;
constexpr std::uint32_t max_pd = 1048576;
constexpr std::uint32_t max_qp_rd_atom = 128;
constexpr std::uint32_t max_qp_init_rd_atom = 128;
constexpr std::uint32_t max_res_rd_atom = 258048;
constexpr std::uint32_t max_srq = 917503;
constexpr std::uint32_t max_srq_wr = 1048576;
constexpr std::uint32_t max_srq_sge = kMaxSrqSge;
constexpr std::uint32_t max_ah = 32767;
constexpr std::uint32_t max_mw = 0;
constexpr std::uint32_t max_pkeys = 64;
constexpr std::uint32_t local_ca_ack_delay = 15;
constexpr std::uint32_t atomic_cap = 1;  // IBV_ATOMIC_HCA
constexpr std::uint32_t max_inline = kMaxInline;
constexpr std::uint32_t max_mcast_grp = 8192;
constexpr std::uint32_t max_mcast_qp_attach = 56;
constexpr std::uint32_t max_total_mcast_qp_attach = 458752;
constexpr std::uint32_t max_fast_reg_page_list_len = 512;
constexpr std::uint32_t phys_port_cnt = 1;
constexpr std::uint32_t num_comp_vectors = 1;
constexpr std::uint32_t gid_tbl_len = 1024;
constexpr std::uint32_t pkey_tbl_len = 1;
constexpr std::uint32_t port_cap_flags = 0x00010000;  // IBV_PORT_CM_SUP
constexpr std::uint32_t max_msg_sz = 0x800000;
}  // namespace caps_default

// ---------------------------------------------------------------------------
// Values that follow libibverbs numbering (hw-spec.md 6.3, 7.1, 8.2, 5.6)
// ---------------------------------------------------------------------------
enum class WqeOpcode : std::uint8_t {  // ibv_wr_opcode
    RdmaWrite = 0,
    RdmaWriteWithImm = 1,
    Send = 2,
    SendWithImm = 3,
    RdmaRead = 4,
    AtomicCmpAndSwp = 5,
    AtomicFetchAndAdd = 6,
    SendWithInv = 9,
};

enum class WcOpcode : std::uint8_t {  // ibv_wc_opcode
    Send = 0,
    RdmaWrite = 1,
    RdmaRead = 2,
    CompSwap = 3,
    FetchAdd = 4,
    Recv = 128,
    RecvRdmaWithImm = 129,
};

enum class WcStatus : std::uint8_t {  // ibv_wc_status
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

namespace wc_flags {  // ibv_wc_flags subset
constexpr std::uint8_t kGrh = 1u << 0;
constexpr std::uint8_t kWithImm = 1u << 1;
constexpr std::uint8_t kWithInv = 1u << 3;
}  // namespace wc_flags

enum class EventType : std::uint8_t {
    // ibv_event_type numbering
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

enum class QpState : std::uint8_t { Reset = 0, Init = 1, Rtr = 2, Rts = 3, Sqd = 4, Sqe = 5, Err = 6 };
enum class QpType : std::uint8_t { Rc = 2, Uc = 3, Ud = 4 };
enum class Mtu : std::uint8_t { M256 = 1, M512 = 2, M1024 = 3, M2048 = 4, M4096 = 5 };
enum class PortState : std::uint8_t { Down = 1, Init = 2, Armed = 3, Active = 4 };
enum class PhysState : std::uint8_t { Polling = 2, Disabled = 3, LinkUp = 5 };
constexpr std::uint8_t kLinkLayerEthernet = 2;
enum class GidType : std::uint8_t { Ib = 0, RoceV1 = 1, RoceV2 = 2 };
enum class NetType : std::uint8_t { RoceV2Ipv4 = 0, RoceV2Ipv6 = 1 };
enum class DomainKind : std::uint8_t { Process = 0, Shm = 1 };
enum class CqArm : std::uint8_t { None = 0, Next = 1, Solicited = 2 };

namespace access {  // ibv_access_flags subset accepted by REG_MR and MODIFY_QP
constexpr std::uint8_t kLocalWrite = 1u << 0;
constexpr std::uint8_t kRemoteWrite = 1u << 1;
constexpr std::uint8_t kRemoteRead = 1u << 2;
constexpr std::uint8_t kRemoteAtomic = 1u << 3;
constexpr std::uint8_t kAll = 0x0F;
}  // namespace access

namespace qp_attr_mask {  // ibv_qp_attr_mask
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

namespace srq_attr_mask {  // ibv_srq_attr_mask
constexpr std::uint32_t kMaxWr = 1u << 0;
constexpr std::uint32_t kLimit = 1u << 1;
}  // namespace srq_attr_mask

// QP error causes: QPC.error_cause, CQE.vendor_err, EQE.aux (hw-spec.md 9.2).
enum class ErrorCause : std::uint8_t {
    None = 0,
    LocLen = 1,         // receive buffer too small / message too long
    LocQpOp = 2,        // WQE malformed or opcode illegal for the QP type
    LocProt = 3,        // lkey / PD / bounds / rights check failed
    RemAccess = 4,      // rkey check failed (responder) or NAK received
    RemInvReq = 5,      // invalid request (responder) or NAK received
    RemOp = 6,          // remote operational error
    RetryExc = 7,       // transport retries exhausted
    RnrRetryExc = 8,    // RNR retries exhausted
    BadResp = 9,        // unexpected response opcode
    CqOverflow = 10,    // a CQ the QP completes to overflowed
    QueueFault = 11,    // queue memory access refused (domain gone, out of region)
    ModifyToErr = 12,   // MODIFY_QP moved the QP to ERR
    SrqFault = 13,      // the SRQ faulted
};

// ---------------------------------------------------------------------------
// Command interface (hw-spec.md 5)
// ---------------------------------------------------------------------------
enum class CmdOpcode : std::uint16_t {
    Nop = 0x0000,
    QueryDevice = 0x0001,
    QueryPort = 0x0002,
    QueryGid = 0x0003,
    QueryPkey = 0x0004,
    AttachDomain = 0x0010,
    DetachDomain = 0x0011,
    AllocPd = 0x0020,
    DeallocPd = 0x0021,
    RegMr = 0x0030,
    DeregMr = 0x0031,
    CreateCq = 0x0040,
    ResizeCq = 0x0041,
    DestroyCq = 0x0042,
    CreateQp = 0x0050,
    ModifyQp = 0x0051,
    QueryQp = 0x0052,
    DestroyQp = 0x0053,
    CreateSrq = 0x0060,
    ModifySrq = 0x0061,
    QuerySrq = 0x0062,
    DestroySrq = 0x0063,
    CreateAh = 0x0070,
    DestroyAh = 0x0071,
};

enum class CmdStatus : std::uint8_t {
    Ok = 0x00,
    BadOpcode = 0x01,
    BadParam = 0x02,
    BadState = 0x03,
    NoObject = 0x04,
    NoResources = 0x05,
    Busy = 0x06,
    Perm = 0x07,
    ExceedsCap = 0x08,
    BadMbox = 0x09,
    BadAttrMask = 0x0A,
    Again = 0x0B,
    Internal = 0x0C,
    BadDomain = 0x0D,
    NotSupported = 0x0E,
};

// errno the verbs layer returns for each status (Linux errno values).
constexpr int status_errno(CmdStatus s) noexcept {
    switch (s) {
        case CmdStatus::Ok: return 0;
        case CmdStatus::BadOpcode: return 95;     // EOPNOTSUPP
        case CmdStatus::BadParam: return 22;      // EINVAL
        case CmdStatus::BadState: return 22;      // EINVAL
        case CmdStatus::NoObject: return 2;       // ENOENT
        case CmdStatus::NoResources: return 12;   // ENOMEM
        case CmdStatus::Busy: return 16;          // EBUSY
        case CmdStatus::Perm: return 1;           // EPERM
        case CmdStatus::ExceedsCap: return 22;    // EINVAL
        case CmdStatus::BadMbox: return 14;       // EFAULT
        case CmdStatus::BadAttrMask: return 22;   // EINVAL
        case CmdStatus::Again: return 11;         // EAGAIN
        case CmdStatus::Internal: return 5;       // EIO
        case CmdStatus::BadDomain: return 14;     // EFAULT
        case CmdStatus::NotSupported: return 95;  // EOPNOTSUPP
    }
    return 5;  // unknown status: EIO
}

// ---------------------------------------------------------------------------
// Layout descriptors. Offsets are bytes from the start of the layout; see
// field.h for the dword / wide field rules.
// ---------------------------------------------------------------------------
// REG_BLOCK_HEADER (16 bytes)
namespace reg_block_header {
constexpr std::uint32_t kSize = 16;
constexpr Field type{0x00, 0, 32};
constexpr Field version{0x04, 0, 32};
constexpr Field next{0x08, 0, 32};
constexpr Field length{0x0C, 0, 32};
constexpr NamedField kFields[] = {
    {"type", type},
    {"version", version},
    {"next", next},
    {"length", length},
};
static_assert(layout_ok(kFields, kSize), "REG_BLOCK_HEADER: field outside layout or overlapping");
}  // namespace reg_block_header

// ID_BLOCK (64 bytes)
namespace id_block {
constexpr std::uint32_t kSize = 64;
constexpr Field vendor_id{0x10, 0, 24};
constexpr Field vendor_part_id{0x14, 0, 32};
constexpr Field hw_rev{0x18, 0, 32};
constexpr Field fw_minor{0x1C, 0, 16};
constexpr Field fw_major{0x1C, 16, 16};
constexpr Field fw_subminor{0x20, 0, 16};
constexpr Field engine_kind{0x20, 16, 8};
constexpr Field spec_version{0x24, 0, 32};
constexpr Field node_guid{0x28, 0, 64};
constexpr Field sys_image_guid{0x30, 0, 64};
constexpr Field magic{0x38, 0, 32};
constexpr Field device_index{0x3C, 0, 16};
constexpr NamedField kFields[] = {
    {"vendor_id", vendor_id},
    {"vendor_part_id", vendor_part_id},
    {"hw_rev", hw_rev},
    {"fw_minor", fw_minor},
    {"fw_major", fw_major},
    {"fw_subminor", fw_subminor},
    {"engine_kind", engine_kind},
    {"spec_version", spec_version},
    {"node_guid", node_guid},
    {"sys_image_guid", sys_image_guid},
    {"magic", magic},
    {"device_index", device_index},
};
static_assert(layout_ok(kFields, kSize), "ID_BLOCK: field outside layout or overlapping");
}  // namespace id_block

// CAP_BLOCK (256 bytes)
namespace cap_block {
constexpr std::uint32_t kSize = 256;
constexpr Field max_mr_size{0x10, 0, 64};
constexpr Field page_size_cap{0x18, 0, 64};
constexpr Field device_cap_flags{0x20, 0, 64};
constexpr Field max_qp{0x28, 0, 32};
constexpr Field max_qp_wr{0x2C, 0, 32};
constexpr Field max_sge{0x30, 0, 32};
constexpr Field max_sge_rd{0x34, 0, 32};
constexpr Field max_cq{0x38, 0, 32};
constexpr Field max_cqe{0x3C, 0, 32};
constexpr Field max_mr{0x40, 0, 32};
constexpr Field max_pd{0x44, 0, 32};
constexpr Field max_qp_rd_atom{0x48, 0, 32};
constexpr Field max_qp_init_rd_atom{0x4C, 0, 32};
constexpr Field max_res_rd_atom{0x50, 0, 32};
constexpr Field max_srq{0x54, 0, 32};
constexpr Field max_srq_wr{0x58, 0, 32};
constexpr Field max_srq_sge{0x5C, 0, 32};
constexpr Field max_ah{0x60, 0, 32};
constexpr Field max_mw{0x64, 0, 32};
constexpr Field max_pkeys{0x68, 0, 16};
constexpr Field local_ca_ack_delay{0x68, 16, 8};
constexpr Field atomic_cap{0x68, 24, 8};
constexpr Field max_inline{0x6C, 0, 32};
constexpr Field max_mcast_grp{0x70, 0, 32};
constexpr Field max_mcast_qp_attach{0x74, 0, 32};
constexpr Field max_total_mcast_qp_attach{0x78, 0, 32};
constexpr Field max_fast_reg_page_list_len{0x7C, 0, 32};
constexpr Field phys_port_cnt{0x80, 0, 8};
constexpr Field num_comp_vectors{0x80, 8, 8};
constexpr Field max_ctx{0x84, 0, 32};
constexpr Field max_domain{0x88, 0, 32};
constexpr Field log_max_cmdq{0x8C, 0, 8};
constexpr Field log_max_eq{0x8C, 8, 8};
constexpr Field log_max_sq_stride{0x8C, 16, 8};
constexpr Field first_qpn{0x90, 0, 24};
constexpr Field max_mtt{0x94, 0, 32};
constexpr Field max_mbox_len{0x98, 0, 32};
constexpr NamedField kFields[] = {
    {"max_mr_size", max_mr_size},
    {"page_size_cap", page_size_cap},
    {"device_cap_flags", device_cap_flags},
    {"max_qp", max_qp},
    {"max_qp_wr", max_qp_wr},
    {"max_sge", max_sge},
    {"max_sge_rd", max_sge_rd},
    {"max_cq", max_cq},
    {"max_cqe", max_cqe},
    {"max_mr", max_mr},
    {"max_pd", max_pd},
    {"max_qp_rd_atom", max_qp_rd_atom},
    {"max_qp_init_rd_atom", max_qp_init_rd_atom},
    {"max_res_rd_atom", max_res_rd_atom},
    {"max_srq", max_srq},
    {"max_srq_wr", max_srq_wr},
    {"max_srq_sge", max_srq_sge},
    {"max_ah", max_ah},
    {"max_mw", max_mw},
    {"max_pkeys", max_pkeys},
    {"local_ca_ack_delay", local_ca_ack_delay},
    {"atomic_cap", atomic_cap},
    {"max_inline", max_inline},
    {"max_mcast_grp", max_mcast_grp},
    {"max_mcast_qp_attach", max_mcast_qp_attach},
    {"max_total_mcast_qp_attach", max_total_mcast_qp_attach},
    {"max_fast_reg_page_list_len", max_fast_reg_page_list_len},
    {"phys_port_cnt", phys_port_cnt},
    {"num_comp_vectors", num_comp_vectors},
    {"max_ctx", max_ctx},
    {"max_domain", max_domain},
    {"log_max_cmdq", log_max_cmdq},
    {"log_max_eq", log_max_eq},
    {"log_max_sq_stride", log_max_sq_stride},
    {"first_qpn", first_qpn},
    {"max_mtt", max_mtt},
    {"max_mbox_len", max_mbox_len},
};
static_assert(layout_ok(kFields, kSize), "CAP_BLOCK: field outside layout or overlapping");
}  // namespace cap_block

// PORT_BLOCK (64 bytes)
namespace port_block {
constexpr std::uint32_t kSize = 64;
constexpr Field port_num{0x10, 0, 8};
constexpr Field state{0x10, 8, 8};
constexpr Field phys_state{0x10, 16, 8};
constexpr Field link_layer{0x10, 24, 8};
constexpr Field max_mtu{0x14, 0, 8};
constexpr Field active_mtu{0x14, 8, 8};
constexpr Field active_width{0x14, 16, 8};
constexpr Field active_speed{0x14, 24, 8};
constexpr Field netdev_mtu{0x18, 0, 32};
constexpr Field gid_tbl_len{0x1C, 0, 32};
constexpr Field pkey_tbl_len{0x20, 0, 16};
constexpr Field max_vl_num{0x20, 16, 8};
constexpr Field port_cap_flags{0x24, 0, 32};
constexpr Field max_msg_sz{0x28, 0, 32};
constexpr Field ifindex{0x2C, 0, 32};
constexpr Field mac{0x30, 0, 48};
constexpr Field bad_pkey_cntr{0x38, 0, 32};
constexpr Field qkey_viol_cntr{0x3C, 0, 32};
constexpr NamedField kFields[] = {
    {"port_num", port_num},
    {"state", state},
    {"phys_state", phys_state},
    {"link_layer", link_layer},
    {"max_mtu", max_mtu},
    {"active_mtu", active_mtu},
    {"active_width", active_width},
    {"active_speed", active_speed},
    {"netdev_mtu", netdev_mtu},
    {"gid_tbl_len", gid_tbl_len},
    {"pkey_tbl_len", pkey_tbl_len},
    {"max_vl_num", max_vl_num},
    {"port_cap_flags", port_cap_flags},
    {"max_msg_sz", max_msg_sz},
    {"ifindex", ifindex},
    {"mac", mac},
    {"bad_pkey_cntr", bad_pkey_cntr},
    {"qkey_viol_cntr", qkey_viol_cntr},
};
static_assert(layout_ok(kFields, kSize), "PORT_BLOCK: field outside layout or overlapping");
}  // namespace port_block

// STATS_BLOCK (256 bytes)
namespace stats_block {
constexpr std::uint32_t kSize = 256;
constexpr Field tx_packets{0x10, 0, 64};
constexpr Field tx_bytes{0x18, 0, 64};
constexpr Field rx_packets{0x20, 0, 64};
constexpr Field rx_bytes{0x28, 0, 64};
constexpr Field retransmits{0x30, 0, 64};
constexpr Field timeouts{0x38, 0, 64};
constexpr Field retry_exceeded{0x40, 0, 64};
constexpr Field rnr_retry_exceeded{0x48, 0, 64};
constexpr Field rx_nak_psn_seq{0x50, 0, 64};
constexpr Field rx_nak_inv_req{0x58, 0, 64};
constexpr Field rx_nak_rem_access{0x60, 0, 64};
constexpr Field rx_nak_rem_op{0x68, 0, 64};
constexpr Field rx_rnr_nak{0x70, 0, 64};
constexpr Field tx_nak_psn_seq{0x78, 0, 64};
constexpr Field tx_nak_inv_req{0x80, 0, 64};
constexpr Field tx_nak_rem_access{0x88, 0, 64};
constexpr Field tx_nak_rem_op{0x90, 0, 64};
constexpr Field tx_rnr_nak{0x98, 0, 64};
constexpr Field duplicate_requests{0xA0, 0, 64};
constexpr Field out_of_seq_requests{0xA8, 0, 64};
constexpr Field icrc_errors{0xB0, 0, 64};
constexpr Field rx_drops_bad_hdr{0xB8, 0, 64};
constexpr Field rx_drops_no_qp{0xC0, 0, 64};
constexpr Field rx_drops_qkey{0xC8, 0, 64};
constexpr Field rx_drops_pkey{0xD0, 0, 64};
constexpr Field tx_drops{0xD8, 0, 64};
constexpr Field local_prot_err{0xE0, 0, 64};
constexpr Field remote_access_err{0xE8, 0, 64};
constexpr Field dma_faults{0xF0, 0, 64};
constexpr Field cq_overflows{0xF8, 0, 64};
constexpr NamedField kFields[] = {
    {"tx_packets", tx_packets},
    {"tx_bytes", tx_bytes},
    {"rx_packets", rx_packets},
    {"rx_bytes", rx_bytes},
    {"retransmits", retransmits},
    {"timeouts", timeouts},
    {"retry_exceeded", retry_exceeded},
    {"rnr_retry_exceeded", rnr_retry_exceeded},
    {"rx_nak_psn_seq", rx_nak_psn_seq},
    {"rx_nak_inv_req", rx_nak_inv_req},
    {"rx_nak_rem_access", rx_nak_rem_access},
    {"rx_nak_rem_op", rx_nak_rem_op},
    {"rx_rnr_nak", rx_rnr_nak},
    {"tx_nak_psn_seq", tx_nak_psn_seq},
    {"tx_nak_inv_req", tx_nak_inv_req},
    {"tx_nak_rem_access", tx_nak_rem_access},
    {"tx_nak_rem_op", tx_nak_rem_op},
    {"tx_rnr_nak", tx_rnr_nak},
    {"duplicate_requests", duplicate_requests},
    {"out_of_seq_requests", out_of_seq_requests},
    {"icrc_errors", icrc_errors},
    {"rx_drops_bad_hdr", rx_drops_bad_hdr},
    {"rx_drops_no_qp", rx_drops_no_qp},
    {"rx_drops_qkey", rx_drops_qkey},
    {"rx_drops_pkey", rx_drops_pkey},
    {"tx_drops", tx_drops},
    {"local_prot_err", local_prot_err},
    {"remote_access_err", remote_access_err},
    {"dma_faults", dma_faults},
    {"cq_overflows", cq_overflows},
};
static_assert(layout_ok(kFields, kSize), "STATS_BLOCK: field outside layout or overlapping");
}  // namespace stats_block

// CTXWIN_BLOCK (32 bytes)
namespace ctxwin_block {
constexpr std::uint32_t kSize = 32;
constexpr Field ctx_base{0x10, 0, 32};
constexpr Field ctx_stride{0x14, 0, 32};
constexpr Field ctx_count{0x18, 0, 32};
constexpr NamedField kFields[] = {
    {"ctx_base", ctx_base},
    {"ctx_stride", ctx_stride},
    {"ctx_count", ctx_count},
};
static_assert(layout_ok(kFields, kSize), "CTXWIN_BLOCK: field outside layout or overlapping");
}  // namespace ctxwin_block

// CMDQ_REGS (64 bytes)
namespace cmdq_regs {
constexpr std::uint32_t kSize = 64;
constexpr Field ring_base{0x10, 0, 64};
constexpr Field log_size{0x18, 0, 5};
constexpr Field enable{0x18, 8, 1};
constexpr Field ctx_id{0x1C, 0, 16};
constexpr Field boot_domain{0x1C, 16, 16};
constexpr Field mbox_base{0x20, 0, 64};
constexpr Field mbox_len{0x28, 0, 32};
constexpr Field pi{0x2C, 0, 32};
constexpr Field ci{0x30, 0, 32};
constexpr Field ready{0x34, 0, 1};
constexpr Field fatal{0x34, 1, 1};
constexpr NamedField kFields[] = {
    {"ring_base", ring_base},
    {"log_size", log_size},
    {"enable", enable},
    {"ctx_id", ctx_id},
    {"boot_domain", boot_domain},
    {"mbox_base", mbox_base},
    {"mbox_len", mbox_len},
    {"pi", pi},
    {"ci", ci},
    {"ready", ready},
    {"fatal", fatal},
};
static_assert(layout_ok(kFields, kSize), "CMDQ_REGS: field outside layout or overlapping");
}  // namespace cmdq_regs

// EQ_REGS (64 bytes)
namespace eq_regs {
constexpr std::uint32_t kSize = 64;
constexpr Field base{0x10, 0, 64};
constexpr Field log_size{0x18, 0, 5};
constexpr Field enable{0x18, 8, 1};
constexpr Field overrun{0x18, 9, 1};
constexpr Field pi{0x1C, 0, 32};
constexpr Field ci{0x20, 0, 32};
constexpr Field arm{0x24, 0, 1};
constexpr NamedField kFields[] = {
    {"base", base},
    {"log_size", log_size},
    {"enable", enable},
    {"overrun", overrun},
    {"pi", pi},
    {"ci", ci},
    {"arm", arm},
};
static_assert(layout_ok(kFields, kSize), "EQ_REGS: field outside layout or overlapping");
}  // namespace eq_regs

// INTR_REGS (32 bytes)
namespace intr_regs {
constexpr std::uint32_t kSize = 32;
constexpr Field vector{0x10, 0, 16};
constexpr Field mask{0x14, 0, 1};
constexpr Field pending{0x18, 0, 1};
constexpr Field count{0x1C, 0, 32};
constexpr NamedField kFields[] = {
    {"vector", vector},
    {"mask", mask},
    {"pending", pending},
    {"count", count},
};
static_assert(layout_ok(kFields, kSize), "INTR_REGS: field outside layout or overlapping");
}  // namespace intr_regs

// DB_REGS (48 bytes)
namespace db_regs {
constexpr std::uint32_t kSize = 48;
constexpr Field sq_qpn{0x10, 0, 24};
constexpr Field sq_pi{0x14, 0, 32};
constexpr Field rq_qpn{0x18, 0, 24};
constexpr Field rq_pi{0x1C, 0, 32};
constexpr Field srq_num{0x20, 0, 24};
constexpr Field srq_pi{0x24, 0, 32};
constexpr Field cq_num{0x28, 0, 24};
constexpr Field cq_cmd{0x28, 24, 2};
constexpr Field cq_ci{0x2C, 0, 32};
constexpr NamedField kFields[] = {
    {"sq_qpn", sq_qpn},
    {"sq_pi", sq_pi},
    {"rq_qpn", rq_qpn},
    {"rq_pi", rq_pi},
    {"srq_num", srq_num},
    {"srq_pi", srq_pi},
    {"cq_num", cq_num},
    {"cq_cmd", cq_cmd},
    {"cq_ci", cq_ci},
};
static_assert(layout_ok(kFields, kSize), "DB_REGS: field outside layout or overlapping");
}  // namespace db_regs

// CMDQ_ENTRY (64 bytes)
namespace cmdq_entry {
constexpr std::uint32_t kSize = 64;
constexpr Field opcode{0x00, 0, 16};
constexpr Field eqe_req{0x00, 16, 1};
constexpr Field token{0x04, 0, 32};
constexpr Field in_addr{0x08, 0, 64};
constexpr Field out_addr{0x10, 0, 64};
constexpr Field in_len{0x18, 0, 32};
constexpr Field out_len{0x1C, 0, 32};
constexpr Field status{0x20, 0, 8};
constexpr Field owner{0x20, 31, 1};
constexpr Field syndrome{0x24, 0, 32};
constexpr Field out_bytes{0x28, 0, 32};
constexpr NamedField kFields[] = {
    {"opcode", opcode},
    {"eqe_req", eqe_req},
    {"token", token},
    {"in_addr", in_addr},
    {"out_addr", out_addr},
    {"in_len", in_len},
    {"out_len", out_len},
    {"status", status},
    {"owner", owner},
    {"syndrome", syndrome},
    {"out_bytes", out_bytes},
};
static_assert(layout_ok(kFields, kSize), "CMDQ_ENTRY: field outside layout or overlapping");
}  // namespace cmdq_entry

// EQE (32 bytes)
namespace eqe {
constexpr std::uint32_t kSize = 32;
constexpr Field event_type{0x00, 0, 8};
constexpr Field obj_num{0x04, 0, 24};
constexpr Field token{0x08, 0, 32};
constexpr Field cmd_status{0x0C, 0, 8};
constexpr Field aux{0x10, 0, 32};
constexpr Field owner{0x1C, 31, 1};
constexpr NamedField kFields[] = {
    {"event_type", event_type},
    {"obj_num", obj_num},
    {"token", token},
    {"cmd_status", cmd_status},
    {"aux", aux},
    {"owner", owner},
};
static_assert(layout_ok(kFields, kSize), "EQE: field outside layout or overlapping");
}  // namespace eqe

// CTRL_SEG (32 bytes)
namespace ctrl_seg {
constexpr std::uint32_t kSize = 32;
constexpr Field opcode{0x00, 0, 8};
constexpr Field fence{0x00, 8, 1};
constexpr Field signaled{0x00, 9, 1};
constexpr Field solicited{0x00, 10, 1};
constexpr Field inline_data{0x00, 11, 1};
constexpr Field num_sge{0x00, 16, 8};
constexpr Field imm_inv{0x04, 0, 32};
constexpr Field wr_id{0x08, 0, 64};
constexpr Field total_len{0x10, 0, 32};
constexpr NamedField kFields[] = {
    {"opcode", opcode},
    {"fence", fence},
    {"signaled", signaled},
    {"solicited", solicited},
    {"inline_data", inline_data},
    {"num_sge", num_sge},
    {"imm_inv", imm_inv},
    {"wr_id", wr_id},
    {"total_len", total_len},
};
static_assert(layout_ok(kFields, kSize), "CTRL_SEG: field outside layout or overlapping");
}  // namespace ctrl_seg

// RADDR_SEG (16 bytes)
namespace raddr_seg {
constexpr std::uint32_t kSize = 16;
constexpr Field remote_va{0x00, 0, 64};
constexpr Field rkey{0x08, 0, 32};
constexpr NamedField kFields[] = {
    {"remote_va", remote_va},
    {"rkey", rkey},
};
static_assert(layout_ok(kFields, kSize), "RADDR_SEG: field outside layout or overlapping");
}  // namespace raddr_seg

// ATOMIC_SEG (16 bytes)
namespace atomic_seg {
constexpr std::uint32_t kSize = 16;
constexpr Field compare_add{0x00, 0, 64};
constexpr Field swap{0x08, 0, 64};
constexpr NamedField kFields[] = {
    {"compare_add", compare_add},
    {"swap", swap},
};
static_assert(layout_ok(kFields, kSize), "ATOMIC_SEG: field outside layout or overlapping");
}  // namespace atomic_seg

// UD_SEG (16 bytes)
namespace ud_seg {
constexpr std::uint32_t kSize = 16;
constexpr Field ah_num{0x00, 0, 32};
constexpr Field dest_qpn{0x04, 0, 24};
constexpr Field qkey{0x08, 0, 32};
constexpr NamedField kFields[] = {
    {"ah_num", ah_num},
    {"dest_qpn", dest_qpn},
    {"qkey", qkey},
};
static_assert(layout_ok(kFields, kSize), "UD_SEG: field outside layout or overlapping");
}  // namespace ud_seg

// AV (32 bytes)
namespace av {
constexpr std::uint32_t kSize = 32;
constexpr Field dgid{0x00, 0, 128};
constexpr Field sgid_index{0x10, 0, 8};
constexpr Field hop_limit{0x10, 8, 8};
constexpr Field traffic_class{0x10, 16, 8};
constexpr Field sl{0x10, 24, 4};
constexpr Field grh{0x10, 28, 1};
constexpr Field net_type{0x10, 29, 2};
constexpr Field flow_label{0x14, 0, 20};
constexpr Field static_rate{0x14, 24, 8};
constexpr Field dmac{0x18, 0, 48};
constexpr NamedField kFields[] = {
    {"dgid", dgid},
    {"sgid_index", sgid_index},
    {"hop_limit", hop_limit},
    {"traffic_class", traffic_class},
    {"sl", sl},
    {"grh", grh},
    {"net_type", net_type},
    {"flow_label", flow_label},
    {"static_rate", static_rate},
    {"dmac", dmac},
};
static_assert(layout_ok(kFields, kSize), "AV: field outside layout or overlapping");
}  // namespace av

// INLINE_SEG (4 bytes)
namespace inline_seg {
constexpr std::uint32_t kSize = 4;
constexpr Field byte_count{0x00, 0, 32};
constexpr NamedField kFields[] = {
    {"byte_count", byte_count},
};
static_assert(layout_ok(kFields, kSize), "INLINE_SEG: field outside layout or overlapping");
}  // namespace inline_seg

// DATA_SEG (16 bytes)
namespace data_seg {
constexpr std::uint32_t kSize = 16;
constexpr Field addr{0x00, 0, 64};
constexpr Field length{0x08, 0, 32};
constexpr Field lkey{0x0C, 0, 32};
constexpr NamedField kFields[] = {
    {"addr", addr},
    {"length", length},
    {"lkey", lkey},
};
static_assert(layout_ok(kFields, kSize), "DATA_SEG: field outside layout or overlapping");
}  // namespace data_seg

// RECV_WQE (16 bytes)
namespace recv_wqe {
constexpr std::uint32_t kSize = 16;
constexpr Field wr_id{0x00, 0, 64};
constexpr Field num_sge{0x08, 0, 8};
constexpr NamedField kFields[] = {
    {"wr_id", wr_id},
    {"num_sge", num_sge},
};
static_assert(layout_ok(kFields, kSize), "RECV_WQE: field outside layout or overlapping");
}  // namespace recv_wqe

// CQE (64 bytes)
namespace cqe {
constexpr std::uint32_t kSize = 64;
constexpr Field wr_id{0x00, 0, 64};
constexpr Field status{0x08, 0, 8};
constexpr Field opcode{0x08, 8, 8};
constexpr Field wc_flags{0x08, 16, 8};
constexpr Field sl{0x08, 24, 4};
constexpr Field vendor_err{0x0C, 0, 32};
constexpr Field byte_len{0x10, 0, 32};
constexpr Field imm_inv{0x14, 0, 32};
constexpr Field qp_num{0x18, 0, 24};
constexpr Field src_qp{0x1C, 0, 24};
constexpr Field pkey_index{0x20, 0, 16};
constexpr Field slid{0x20, 16, 16};
constexpr Field dlid_path_bits{0x24, 0, 8};
constexpr Field is_send{0x24, 8, 1};
constexpr Field wqe_index{0x28, 0, 32};
constexpr Field owner{0x3C, 31, 1};
constexpr NamedField kFields[] = {
    {"wr_id", wr_id},
    {"status", status},
    {"opcode", opcode},
    {"wc_flags", wc_flags},
    {"sl", sl},
    {"vendor_err", vendor_err},
    {"byte_len", byte_len},
    {"imm_inv", imm_inv},
    {"qp_num", qp_num},
    {"src_qp", src_qp},
    {"pkey_index", pkey_index},
    {"slid", slid},
    {"dlid_path_bits", dlid_path_bits},
    {"is_send", is_send},
    {"wqe_index", wqe_index},
    {"owner", owner},
};
static_assert(layout_ok(kFields, kSize), "CQE: field outside layout or overlapping");
}  // namespace cqe

// QPC (256 bytes)
namespace qpc {
constexpr std::uint32_t kSize = 256;
constexpr Field state{0x00, 0, 4};
constexpr Field qp_type{0x00, 8, 8};
constexpr Field path_mtu{0x00, 16, 4};
constexpr Field sq_draining{0x00, 20, 1};
constexpr Field sq_sig_all{0x00, 21, 1};
constexpr Field en_sqd_async_notify{0x00, 22, 1};
constexpr Field srq_en{0x00, 23, 1};
constexpr Field port_num{0x00, 24, 8};
constexpr Field qpn{0x04, 0, 24};
constexpr Field pdn{0x08, 0, 24};
constexpr Field send_cqn{0x0C, 0, 24};
constexpr Field recv_cqn{0x10, 0, 24};
constexpr Field srqn{0x14, 0, 24};
constexpr Field ctx_id{0x18, 0, 16};
constexpr Field domain_id{0x18, 16, 16};
constexpr Field dest_qpn{0x1C, 0, 24};
constexpr Field sq_base{0x20, 0, 64};
constexpr Field rq_base{0x28, 0, 64};
constexpr Field log_sq_size{0x30, 0, 5};
constexpr Field log_sq_stride{0x30, 8, 4};
constexpr Field log_rq_size{0x30, 16, 5};
constexpr Field log_rq_stride{0x30, 24, 4};
constexpr Field max_send_sge{0x34, 0, 8};
constexpr Field max_recv_sge{0x34, 8, 8};
constexpr Field max_inline{0x34, 16, 16};
constexpr Field sq_pi{0x38, 0, 32};
constexpr Field sq_ci{0x3C, 0, 32};
constexpr Field rq_pi{0x40, 0, 32};
constexpr Field rq_ci{0x44, 0, 32};
constexpr Field sq_psn{0x48, 0, 24};
constexpr Field rq_psn{0x4C, 0, 24};
constexpr Field last_acked_psn{0x50, 0, 24};
constexpr Field msn{0x54, 0, 24};
constexpr Field ssn{0x58, 0, 24};
constexpr Field qkey{0x5C, 0, 32};
constexpr Field qp_access_flags{0x60, 0, 8};
constexpr Field min_rnr_timer{0x60, 8, 5};
constexpr Field timeout{0x60, 16, 5};
constexpr Field retry_cnt{0x60, 24, 3};
constexpr Field rnr_retry{0x60, 28, 3};
constexpr Field max_rd_atomic{0x64, 0, 8};
constexpr Field max_dest_rd_atomic{0x64, 8, 8};
constexpr Field pkey_index{0x64, 16, 16};
constexpr Field retry_left{0x68, 0, 3};
constexpr Field rnr_retry_left{0x68, 4, 3};
constexpr Field error_cause{0x68, 8, 8};
constexpr Field rd_atomic_inflight{0x68, 16, 8};
constexpr Field comm_est_sent{0x68, 24, 1};
constexpr Field av_dgid{0x70, 0, 128};
constexpr Field av_sgid_index{0x80, 0, 8};
constexpr Field av_hop_limit{0x80, 8, 8};
constexpr Field av_traffic_class{0x80, 16, 8};
constexpr Field av_sl{0x80, 24, 4};
constexpr Field av_grh{0x80, 28, 1};
constexpr Field av_net_type{0x80, 29, 2};
constexpr Field av_flow_label{0x84, 0, 20};
constexpr Field av_static_rate{0x84, 24, 8};
constexpr Field av_dmac{0x88, 0, 48};
constexpr NamedField kFields[] = {
    {"state", state},
    {"qp_type", qp_type},
    {"path_mtu", path_mtu},
    {"sq_draining", sq_draining},
    {"sq_sig_all", sq_sig_all},
    {"en_sqd_async_notify", en_sqd_async_notify},
    {"srq_en", srq_en},
    {"port_num", port_num},
    {"qpn", qpn},
    {"pdn", pdn},
    {"send_cqn", send_cqn},
    {"recv_cqn", recv_cqn},
    {"srqn", srqn},
    {"ctx_id", ctx_id},
    {"domain_id", domain_id},
    {"dest_qpn", dest_qpn},
    {"sq_base", sq_base},
    {"rq_base", rq_base},
    {"log_sq_size", log_sq_size},
    {"log_sq_stride", log_sq_stride},
    {"log_rq_size", log_rq_size},
    {"log_rq_stride", log_rq_stride},
    {"max_send_sge", max_send_sge},
    {"max_recv_sge", max_recv_sge},
    {"max_inline", max_inline},
    {"sq_pi", sq_pi},
    {"sq_ci", sq_ci},
    {"rq_pi", rq_pi},
    {"rq_ci", rq_ci},
    {"sq_psn", sq_psn},
    {"rq_psn", rq_psn},
    {"last_acked_psn", last_acked_psn},
    {"msn", msn},
    {"ssn", ssn},
    {"qkey", qkey},
    {"qp_access_flags", qp_access_flags},
    {"min_rnr_timer", min_rnr_timer},
    {"timeout", timeout},
    {"retry_cnt", retry_cnt},
    {"rnr_retry", rnr_retry},
    {"max_rd_atomic", max_rd_atomic},
    {"max_dest_rd_atomic", max_dest_rd_atomic},
    {"pkey_index", pkey_index},
    {"retry_left", retry_left},
    {"rnr_retry_left", rnr_retry_left},
    {"error_cause", error_cause},
    {"rd_atomic_inflight", rd_atomic_inflight},
    {"comm_est_sent", comm_est_sent},
    {"av_dgid", av_dgid},
    {"av_sgid_index", av_sgid_index},
    {"av_hop_limit", av_hop_limit},
    {"av_traffic_class", av_traffic_class},
    {"av_sl", av_sl},
    {"av_grh", av_grh},
    {"av_net_type", av_net_type},
    {"av_flow_label", av_flow_label},
    {"av_static_rate", av_static_rate},
    {"av_dmac", av_dmac},
};
static_assert(layout_ok(kFields, kSize), "QPC: field outside layout or overlapping");
}  // namespace qpc

// CQC (32 bytes)
namespace cqc {
constexpr std::uint32_t kSize = 32;
constexpr Field cqn{0x00, 0, 24};
constexpr Field log_size{0x00, 24, 5};
constexpr Field ctx_id{0x04, 0, 16};
constexpr Field domain_id{0x04, 16, 16};
constexpr Field base{0x08, 0, 64};
constexpr Field pi{0x10, 0, 32};
constexpr Field ci{0x14, 0, 32};
constexpr Field arm{0x18, 0, 2};
constexpr Field error{0x18, 2, 1};
constexpr Field ref_qps{0x18, 8, 8};
constexpr NamedField kFields[] = {
    {"cqn", cqn},
    {"log_size", log_size},
    {"ctx_id", ctx_id},
    {"domain_id", domain_id},
    {"base", base},
    {"pi", pi},
    {"ci", ci},
    {"arm", arm},
    {"error", error},
    {"ref_qps", ref_qps},
};
static_assert(layout_ok(kFields, kSize), "CQC: field outside layout or overlapping");
}  // namespace cqc

// SRQC (64 bytes)
namespace srqc {
constexpr std::uint32_t kSize = 64;
constexpr Field srqn{0x00, 0, 24};
constexpr Field pdn{0x04, 0, 24};
constexpr Field ctx_id{0x08, 0, 16};
constexpr Field domain_id{0x08, 16, 16};
constexpr Field log_size{0x0C, 0, 5};
constexpr Field log_stride{0x0C, 8, 4};
constexpr Field max_sge{0x0C, 16, 8};
constexpr Field limit_armed{0x0C, 24, 1};
constexpr Field error{0x0C, 25, 1};
constexpr Field base{0x10, 0, 64};
constexpr Field pi{0x18, 0, 32};
constexpr Field ci{0x1C, 0, 32};
constexpr Field srq_limit{0x20, 0, 32};
constexpr NamedField kFields[] = {
    {"srqn", srqn},
    {"pdn", pdn},
    {"ctx_id", ctx_id},
    {"domain_id", domain_id},
    {"log_size", log_size},
    {"log_stride", log_stride},
    {"max_sge", max_sge},
    {"limit_armed", limit_armed},
    {"error", error},
    {"base", base},
    {"pi", pi},
    {"ci", ci},
    {"srq_limit", srq_limit},
};
static_assert(layout_ok(kFields, kSize), "SRQC: field outside layout or overlapping");
}  // namespace srqc

// MPT_ENTRY (64 bytes)
namespace mpt_entry {
constexpr std::uint32_t kSize = 64;
constexpr Field key{0x00, 0, 32};
constexpr Field pdn{0x04, 0, 24};
constexpr Field valid{0x04, 24, 1};
constexpr Field mtt_mode{0x04, 25, 1};
constexpr Field zero_based{0x04, 26, 1};
constexpr Field access{0x08, 0, 8};
constexpr Field log_page_size{0x08, 8, 6};
constexpr Field domain_id{0x0C, 0, 16};
constexpr Field ctx_id{0x0C, 16, 16};
constexpr Field iova_start{0x10, 0, 64};
constexpr Field length{0x18, 0, 64};
constexpr Field host_addr{0x20, 0, 64};
constexpr Field mtt_base{0x28, 0, 32};
constexpr Field mtt_count{0x2C, 0, 32};
constexpr NamedField kFields[] = {
    {"key", key},
    {"pdn", pdn},
    {"valid", valid},
    {"mtt_mode", mtt_mode},
    {"zero_based", zero_based},
    {"access", access},
    {"log_page_size", log_page_size},
    {"domain_id", domain_id},
    {"ctx_id", ctx_id},
    {"iova_start", iova_start},
    {"length", length},
    {"host_addr", host_addr},
    {"mtt_base", mtt_base},
    {"mtt_count", mtt_count},
};
static_assert(layout_ok(kFields, kSize), "MPT_ENTRY: field outside layout or overlapping");
}  // namespace mpt_entry

// MTT_ENTRY (8 bytes)
namespace mtt_entry {
constexpr std::uint32_t kSize = 8;
constexpr Field page_addr{0x00, 0, 64};
constexpr NamedField kFields[] = {
    {"page_addr", page_addr},
};
static_assert(layout_ok(kFields, kSize), "MTT_ENTRY: field outside layout or overlapping");
}  // namespace mtt_entry

// PD_ENTRY (8 bytes)
namespace pd_entry {
constexpr std::uint32_t kSize = 8;
constexpr Field valid{0x00, 0, 1};
constexpr Field ctx_id{0x00, 16, 16};
constexpr Field refcnt{0x04, 0, 32};
constexpr NamedField kFields[] = {
    {"valid", valid},
    {"ctx_id", ctx_id},
    {"refcnt", refcnt},
};
static_assert(layout_ok(kFields, kSize), "PD_ENTRY: field outside layout or overlapping");
}  // namespace pd_entry

// AH_ENTRY (48 bytes)
namespace ah_entry {
constexpr std::uint32_t kSize = 48;
constexpr Field pdn{0x00, 0, 24};
constexpr Field valid{0x00, 31, 1};
constexpr Field ctx_id{0x04, 0, 16};
constexpr Field port_num{0x04, 16, 8};
constexpr Field av_dgid{0x10, 0, 128};
constexpr Field av_sgid_index{0x20, 0, 8};
constexpr Field av_hop_limit{0x20, 8, 8};
constexpr Field av_traffic_class{0x20, 16, 8};
constexpr Field av_sl{0x20, 24, 4};
constexpr Field av_grh{0x20, 28, 1};
constexpr Field av_net_type{0x20, 29, 2};
constexpr Field av_flow_label{0x24, 0, 20};
constexpr Field av_static_rate{0x24, 24, 8};
constexpr Field av_dmac{0x28, 0, 48};
constexpr NamedField kFields[] = {
    {"pdn", pdn},
    {"valid", valid},
    {"ctx_id", ctx_id},
    {"port_num", port_num},
    {"av_dgid", av_dgid},
    {"av_sgid_index", av_sgid_index},
    {"av_hop_limit", av_hop_limit},
    {"av_traffic_class", av_traffic_class},
    {"av_sl", av_sl},
    {"av_grh", av_grh},
    {"av_net_type", av_net_type},
    {"av_flow_label", av_flow_label},
    {"av_static_rate", av_static_rate},
    {"av_dmac", av_dmac},
};
static_assert(layout_ok(kFields, kSize), "AH_ENTRY: field outside layout or overlapping");
}  // namespace ah_entry

// GID_ENTRY (32 bytes)
namespace gid_entry {
constexpr std::uint32_t kSize = 32;
constexpr Field gid{0x00, 0, 128};
constexpr Field gid_type{0x10, 0, 8};
constexpr Field valid{0x10, 8, 1};
constexpr Field net_type{0x10, 9, 2};
constexpr Field ndev_ifindex{0x14, 0, 32};
constexpr NamedField kFields[] = {
    {"gid", gid},
    {"gid_type", gid_type},
    {"valid", valid},
    {"net_type", net_type},
    {"ndev_ifindex", ndev_ifindex},
};
static_assert(layout_ok(kFields, kSize), "GID_ENTRY: field outside layout or overlapping");
}  // namespace gid_entry

// DOMAIN_ENTRY (32 bytes)
namespace domain_entry {
constexpr std::uint32_t kSize = 32;
constexpr Field ctx_id{0x00, 0, 16};
constexpr Field kind{0x00, 16, 8};
constexpr Field valid{0x00, 31, 1};
constexpr Field pid{0x04, 0, 32};
constexpr Field shm_handle{0x08, 0, 32};
constexpr Field map_base{0x10, 0, 64};
constexpr Field map_len{0x18, 0, 64};
constexpr NamedField kFields[] = {
    {"ctx_id", ctx_id},
    {"kind", kind},
    {"valid", valid},
    {"pid", pid},
    {"shm_handle", shm_handle},
    {"map_base", map_base},
    {"map_len", map_len},
};
static_assert(layout_ok(kFields, kSize), "DOMAIN_ENTRY: field outside layout or overlapping");
}  // namespace domain_entry

// CMD_HANDLE (4 bytes)
namespace cmd_handle {
constexpr std::uint32_t kSize = 4;
constexpr Field handle{0x00, 0, 32};
constexpr NamedField kFields[] = {
    {"handle", handle},
};
static_assert(layout_ok(kFields, kSize), "CMD_HANDLE: field outside layout or overlapping");
}  // namespace cmd_handle

// CMD_QUERY_PORT_IN (4 bytes)
namespace cmd_query_port_in {
constexpr std::uint32_t kSize = 4;
constexpr Field port_num{0x00, 0, 8};
constexpr NamedField kFields[] = {
    {"port_num", port_num},
};
static_assert(layout_ok(kFields, kSize), "CMD_QUERY_PORT_IN: field outside layout or overlapping");
}  // namespace cmd_query_port_in

// CMD_QUERY_GID_IN (8 bytes)
namespace cmd_query_gid_in {
constexpr std::uint32_t kSize = 8;
constexpr Field port_num{0x00, 0, 8};
constexpr Field index{0x04, 0, 16};
constexpr NamedField kFields[] = {
    {"port_num", port_num},
    {"index", index},
};
static_assert(layout_ok(kFields, kSize), "CMD_QUERY_GID_IN: field outside layout or overlapping");
}  // namespace cmd_query_gid_in

// CMD_QUERY_PKEY_IN (8 bytes)
namespace cmd_query_pkey_in {
constexpr std::uint32_t kSize = 8;
constexpr Field port_num{0x00, 0, 8};
constexpr Field index{0x04, 0, 16};
constexpr NamedField kFields[] = {
    {"port_num", port_num},
    {"index", index},
};
static_assert(layout_ok(kFields, kSize), "CMD_QUERY_PKEY_IN: field outside layout or overlapping");
}  // namespace cmd_query_pkey_in

// CMD_QUERY_PKEY_OUT (4 bytes)
namespace cmd_query_pkey_out {
constexpr std::uint32_t kSize = 4;
constexpr Field pkey{0x00, 0, 16};
constexpr NamedField kFields[] = {
    {"pkey", pkey},
};
static_assert(layout_ok(kFields, kSize), "CMD_QUERY_PKEY_OUT: field outside layout or overlapping");
}  // namespace cmd_query_pkey_out

// CMD_ATTACH_DOMAIN_IN (32 bytes)
namespace cmd_attach_domain_in {
constexpr std::uint32_t kSize = 32;
constexpr Field kind{0x00, 0, 8};
constexpr Field pid{0x04, 0, 32};
constexpr Field shm_handle{0x08, 0, 32};
constexpr Field map_base{0x10, 0, 64};
constexpr Field map_len{0x18, 0, 64};
constexpr NamedField kFields[] = {
    {"kind", kind},
    {"pid", pid},
    {"shm_handle", shm_handle},
    {"map_base", map_base},
    {"map_len", map_len},
};
static_assert(layout_ok(kFields, kSize), "CMD_ATTACH_DOMAIN_IN: field outside layout or overlapping");
}  // namespace cmd_attach_domain_in

// CMD_REG_MR_IN (64 bytes)
namespace cmd_reg_mr_in {
constexpr std::uint32_t kSize = 64;
constexpr Field pdn{0x00, 0, 24};
constexpr Field access{0x04, 0, 8};
constexpr Field log_page_size{0x04, 8, 6};
constexpr Field mtt_mode{0x04, 16, 1};
constexpr Field zero_based{0x04, 17, 1};
constexpr Field domain_id{0x08, 0, 16};
constexpr Field iova{0x10, 0, 64};
constexpr Field length{0x18, 0, 64};
constexpr Field host_addr{0x20, 0, 64};
constexpr Field mtt_count{0x28, 0, 32};
constexpr NamedField kFields[] = {
    {"pdn", pdn},
    {"access", access},
    {"log_page_size", log_page_size},
    {"mtt_mode", mtt_mode},
    {"zero_based", zero_based},
    {"domain_id", domain_id},
    {"iova", iova},
    {"length", length},
    {"host_addr", host_addr},
    {"mtt_count", mtt_count},
};
static_assert(layout_ok(kFields, kSize), "CMD_REG_MR_IN: field outside layout or overlapping");
}  // namespace cmd_reg_mr_in

// CMD_REG_MR_OUT (8 bytes)
namespace cmd_reg_mr_out {
constexpr std::uint32_t kSize = 8;
constexpr Field lkey{0x00, 0, 32};
constexpr Field rkey{0x04, 0, 32};
constexpr NamedField kFields[] = {
    {"lkey", lkey},
    {"rkey", rkey},
};
static_assert(layout_ok(kFields, kSize), "CMD_REG_MR_OUT: field outside layout or overlapping");
}  // namespace cmd_reg_mr_out

// CMD_CREATE_CQ_IN (16 bytes)
namespace cmd_create_cq_in {
constexpr std::uint32_t kSize = 16;
constexpr Field log_size{0x00, 0, 5};
constexpr Field domain_id{0x04, 0, 16};
constexpr Field base{0x08, 0, 64};
constexpr NamedField kFields[] = {
    {"log_size", log_size},
    {"domain_id", domain_id},
    {"base", base},
};
static_assert(layout_ok(kFields, kSize), "CMD_CREATE_CQ_IN: field outside layout or overlapping");
}  // namespace cmd_create_cq_in

// CMD_RESIZE_CQ_IN (24 bytes)
namespace cmd_resize_cq_in {
constexpr std::uint32_t kSize = 24;
constexpr Field cqn{0x00, 0, 24};
constexpr Field log_size{0x04, 0, 5};
constexpr Field domain_id{0x08, 0, 16};
constexpr Field base{0x10, 0, 64};
constexpr NamedField kFields[] = {
    {"cqn", cqn},
    {"log_size", log_size},
    {"domain_id", domain_id},
    {"base", base},
};
static_assert(layout_ok(kFields, kSize), "CMD_RESIZE_CQ_IN: field outside layout or overlapping");
}  // namespace cmd_resize_cq_in

// CMD_CREATE_QP_IN (64 bytes)
namespace cmd_create_qp_in {
constexpr std::uint32_t kSize = 64;
constexpr Field qp_type{0x00, 0, 8};
constexpr Field sq_sig_all{0x00, 8, 1};
constexpr Field srq_en{0x00, 9, 1};
constexpr Field pdn{0x04, 0, 24};
constexpr Field send_cqn{0x08, 0, 24};
constexpr Field recv_cqn{0x0C, 0, 24};
constexpr Field srqn{0x10, 0, 24};
constexpr Field domain_id{0x14, 0, 16};
constexpr Field sq_base{0x18, 0, 64};
constexpr Field rq_base{0x20, 0, 64};
constexpr Field log_sq_size{0x28, 0, 5};
constexpr Field log_sq_stride{0x28, 8, 4};
constexpr Field log_rq_size{0x28, 16, 5};
constexpr Field log_rq_stride{0x28, 24, 4};
constexpr Field max_send_sge{0x2C, 0, 8};
constexpr Field max_recv_sge{0x2C, 8, 8};
constexpr Field max_inline{0x2C, 16, 16};
constexpr NamedField kFields[] = {
    {"qp_type", qp_type},
    {"sq_sig_all", sq_sig_all},
    {"srq_en", srq_en},
    {"pdn", pdn},
    {"send_cqn", send_cqn},
    {"recv_cqn", recv_cqn},
    {"srqn", srqn},
    {"domain_id", domain_id},
    {"sq_base", sq_base},
    {"rq_base", rq_base},
    {"log_sq_size", log_sq_size},
    {"log_sq_stride", log_sq_stride},
    {"log_rq_size", log_rq_size},
    {"log_rq_stride", log_rq_stride},
    {"max_send_sge", max_send_sge},
    {"max_recv_sge", max_recv_sge},
    {"max_inline", max_inline},
};
static_assert(layout_ok(kFields, kSize), "CMD_CREATE_QP_IN: field outside layout or overlapping");
}  // namespace cmd_create_qp_in

// QP_ATTR (96 bytes)
namespace qp_attr {
constexpr std::uint32_t kSize = 96;
constexpr Field qpn{0x00, 0, 24};
constexpr Field attr_mask{0x04, 0, 32};
constexpr Field qp_state{0x08, 0, 4};
constexpr Field cur_state{0x08, 4, 4};
constexpr Field path_mtu{0x08, 8, 4};
constexpr Field en_sqd_async_notify{0x08, 12, 1};
constexpr Field sq_draining{0x08, 13, 1};
constexpr Field qkey{0x0C, 0, 32};
constexpr Field rq_psn{0x10, 0, 24};
constexpr Field sq_psn{0x14, 0, 24};
constexpr Field dest_qp_num{0x18, 0, 24};
constexpr Field qp_access_flags{0x1C, 0, 8};
constexpr Field port_num{0x1C, 8, 8};
constexpr Field pkey_index{0x1C, 16, 16};
constexpr Field timeout{0x20, 0, 5};
constexpr Field retry_cnt{0x20, 8, 3};
constexpr Field rnr_retry{0x20, 12, 3};
constexpr Field min_rnr_timer{0x20, 16, 5};
constexpr Field max_rd_atomic{0x24, 0, 8};
constexpr Field max_dest_rd_atomic{0x24, 8, 8};
constexpr Field av_dgid{0x30, 0, 128};
constexpr Field av_sgid_index{0x40, 0, 8};
constexpr Field av_hop_limit{0x40, 8, 8};
constexpr Field av_traffic_class{0x40, 16, 8};
constexpr Field av_sl{0x40, 24, 4};
constexpr Field av_grh{0x40, 28, 1};
constexpr Field av_net_type{0x40, 29, 2};
constexpr Field av_flow_label{0x44, 0, 20};
constexpr Field av_static_rate{0x44, 24, 8};
constexpr Field av_dmac{0x48, 0, 48};
constexpr Field max_send_wr{0x50, 0, 32};
constexpr Field max_recv_wr{0x54, 0, 32};
constexpr Field max_send_sge{0x58, 0, 8};
constexpr Field max_recv_sge{0x58, 8, 8};
constexpr Field max_inline{0x58, 16, 16};
constexpr NamedField kFields[] = {
    {"qpn", qpn},
    {"attr_mask", attr_mask},
    {"qp_state", qp_state},
    {"cur_state", cur_state},
    {"path_mtu", path_mtu},
    {"en_sqd_async_notify", en_sqd_async_notify},
    {"sq_draining", sq_draining},
    {"qkey", qkey},
    {"rq_psn", rq_psn},
    {"sq_psn", sq_psn},
    {"dest_qp_num", dest_qp_num},
    {"qp_access_flags", qp_access_flags},
    {"port_num", port_num},
    {"pkey_index", pkey_index},
    {"timeout", timeout},
    {"retry_cnt", retry_cnt},
    {"rnr_retry", rnr_retry},
    {"min_rnr_timer", min_rnr_timer},
    {"max_rd_atomic", max_rd_atomic},
    {"max_dest_rd_atomic", max_dest_rd_atomic},
    {"av_dgid", av_dgid},
    {"av_sgid_index", av_sgid_index},
    {"av_hop_limit", av_hop_limit},
    {"av_traffic_class", av_traffic_class},
    {"av_sl", av_sl},
    {"av_grh", av_grh},
    {"av_net_type", av_net_type},
    {"av_flow_label", av_flow_label},
    {"av_static_rate", av_static_rate},
    {"av_dmac", av_dmac},
    {"max_send_wr", max_send_wr},
    {"max_recv_wr", max_recv_wr},
    {"max_send_sge", max_send_sge},
    {"max_recv_sge", max_recv_sge},
    {"max_inline", max_inline},
};
static_assert(layout_ok(kFields, kSize), "QP_ATTR: field outside layout or overlapping");
}  // namespace qp_attr

// CMD_CREATE_SRQ_IN (32 bytes)
namespace cmd_create_srq_in {
constexpr std::uint32_t kSize = 32;
constexpr Field pdn{0x00, 0, 24};
constexpr Field domain_id{0x04, 0, 16};
constexpr Field base{0x08, 0, 64};
constexpr Field log_size{0x10, 0, 5};
constexpr Field log_stride{0x10, 8, 4};
constexpr Field max_sge{0x10, 16, 8};
constexpr Field srq_limit{0x14, 0, 32};
constexpr NamedField kFields[] = {
    {"pdn", pdn},
    {"domain_id", domain_id},
    {"base", base},
    {"log_size", log_size},
    {"log_stride", log_stride},
    {"max_sge", max_sge},
    {"srq_limit", srq_limit},
};
static_assert(layout_ok(kFields, kSize), "CMD_CREATE_SRQ_IN: field outside layout or overlapping");
}  // namespace cmd_create_srq_in

// CMD_MODIFY_SRQ_IN (12 bytes)
namespace cmd_modify_srq_in {
constexpr std::uint32_t kSize = 12;
constexpr Field srqn{0x00, 0, 24};
constexpr Field attr_mask{0x04, 0, 32};
constexpr Field srq_limit{0x08, 0, 32};
constexpr NamedField kFields[] = {
    {"srqn", srqn},
    {"attr_mask", attr_mask},
    {"srq_limit", srq_limit},
};
static_assert(layout_ok(kFields, kSize), "CMD_MODIFY_SRQ_IN: field outside layout or overlapping");
}  // namespace cmd_modify_srq_in

// CMD_QUERY_SRQ_OUT (12 bytes)
namespace cmd_query_srq_out {
constexpr std::uint32_t kSize = 12;
constexpr Field max_wr{0x00, 0, 32};
constexpr Field max_sge{0x04, 0, 32};
constexpr Field srq_limit{0x08, 0, 32};
constexpr NamedField kFields[] = {
    {"max_wr", max_wr},
    {"max_sge", max_sge},
    {"srq_limit", srq_limit},
};
static_assert(layout_ok(kFields, kSize), "CMD_QUERY_SRQ_OUT: field outside layout or overlapping");
}  // namespace cmd_query_srq_out

// CMD_CREATE_AH_IN (48 bytes)
namespace cmd_create_ah_in {
constexpr std::uint32_t kSize = 48;
constexpr Field pdn{0x00, 0, 24};
constexpr Field port_num{0x04, 0, 8};
constexpr Field av_dgid{0x10, 0, 128};
constexpr Field av_sgid_index{0x20, 0, 8};
constexpr Field av_hop_limit{0x20, 8, 8};
constexpr Field av_traffic_class{0x20, 16, 8};
constexpr Field av_sl{0x20, 24, 4};
constexpr Field av_grh{0x20, 28, 1};
constexpr Field av_net_type{0x20, 29, 2};
constexpr Field av_flow_label{0x24, 0, 20};
constexpr Field av_static_rate{0x24, 24, 8};
constexpr Field av_dmac{0x28, 0, 48};
constexpr NamedField kFields[] = {
    {"pdn", pdn},
    {"port_num", port_num},
    {"av_dgid", av_dgid},
    {"av_sgid_index", av_sgid_index},
    {"av_hop_limit", av_hop_limit},
    {"av_traffic_class", av_traffic_class},
    {"av_sl", av_sl},
    {"av_grh", av_grh},
    {"av_net_type", av_net_type},
    {"av_flow_label", av_flow_label},
    {"av_static_rate", av_static_rate},
    {"av_dmac", av_dmac},
};
static_assert(layout_ok(kFields, kSize), "CMD_CREATE_AH_IN: field outside layout or overlapping");
}  // namespace cmd_create_ah_in

constexpr LayoutDesc kLayouts[] = {
    {"REG_BLOCK_HEADER", reg_block_header::kSize, reg_block_header::kFields, sizeof(reg_block_header::kFields) / sizeof(reg_block_header::kFields[0])},
    {"ID_BLOCK", id_block::kSize, id_block::kFields, sizeof(id_block::kFields) / sizeof(id_block::kFields[0])},
    {"CAP_BLOCK", cap_block::kSize, cap_block::kFields, sizeof(cap_block::kFields) / sizeof(cap_block::kFields[0])},
    {"PORT_BLOCK", port_block::kSize, port_block::kFields, sizeof(port_block::kFields) / sizeof(port_block::kFields[0])},
    {"STATS_BLOCK", stats_block::kSize, stats_block::kFields, sizeof(stats_block::kFields) / sizeof(stats_block::kFields[0])},
    {"CTXWIN_BLOCK", ctxwin_block::kSize, ctxwin_block::kFields, sizeof(ctxwin_block::kFields) / sizeof(ctxwin_block::kFields[0])},
    {"CMDQ_REGS", cmdq_regs::kSize, cmdq_regs::kFields, sizeof(cmdq_regs::kFields) / sizeof(cmdq_regs::kFields[0])},
    {"EQ_REGS", eq_regs::kSize, eq_regs::kFields, sizeof(eq_regs::kFields) / sizeof(eq_regs::kFields[0])},
    {"INTR_REGS", intr_regs::kSize, intr_regs::kFields, sizeof(intr_regs::kFields) / sizeof(intr_regs::kFields[0])},
    {"DB_REGS", db_regs::kSize, db_regs::kFields, sizeof(db_regs::kFields) / sizeof(db_regs::kFields[0])},
    {"CMDQ_ENTRY", cmdq_entry::kSize, cmdq_entry::kFields, sizeof(cmdq_entry::kFields) / sizeof(cmdq_entry::kFields[0])},
    {"EQE", eqe::kSize, eqe::kFields, sizeof(eqe::kFields) / sizeof(eqe::kFields[0])},
    {"CTRL_SEG", ctrl_seg::kSize, ctrl_seg::kFields, sizeof(ctrl_seg::kFields) / sizeof(ctrl_seg::kFields[0])},
    {"RADDR_SEG", raddr_seg::kSize, raddr_seg::kFields, sizeof(raddr_seg::kFields) / sizeof(raddr_seg::kFields[0])},
    {"ATOMIC_SEG", atomic_seg::kSize, atomic_seg::kFields, sizeof(atomic_seg::kFields) / sizeof(atomic_seg::kFields[0])},
    {"UD_SEG", ud_seg::kSize, ud_seg::kFields, sizeof(ud_seg::kFields) / sizeof(ud_seg::kFields[0])},
    {"AV", av::kSize, av::kFields, sizeof(av::kFields) / sizeof(av::kFields[0])},
    {"INLINE_SEG", inline_seg::kSize, inline_seg::kFields, sizeof(inline_seg::kFields) / sizeof(inline_seg::kFields[0])},
    {"DATA_SEG", data_seg::kSize, data_seg::kFields, sizeof(data_seg::kFields) / sizeof(data_seg::kFields[0])},
    {"RECV_WQE", recv_wqe::kSize, recv_wqe::kFields, sizeof(recv_wqe::kFields) / sizeof(recv_wqe::kFields[0])},
    {"CQE", cqe::kSize, cqe::kFields, sizeof(cqe::kFields) / sizeof(cqe::kFields[0])},
    {"QPC", qpc::kSize, qpc::kFields, sizeof(qpc::kFields) / sizeof(qpc::kFields[0])},
    {"CQC", cqc::kSize, cqc::kFields, sizeof(cqc::kFields) / sizeof(cqc::kFields[0])},
    {"SRQC", srqc::kSize, srqc::kFields, sizeof(srqc::kFields) / sizeof(srqc::kFields[0])},
    {"MPT_ENTRY", mpt_entry::kSize, mpt_entry::kFields, sizeof(mpt_entry::kFields) / sizeof(mpt_entry::kFields[0])},
    {"MTT_ENTRY", mtt_entry::kSize, mtt_entry::kFields, sizeof(mtt_entry::kFields) / sizeof(mtt_entry::kFields[0])},
    {"PD_ENTRY", pd_entry::kSize, pd_entry::kFields, sizeof(pd_entry::kFields) / sizeof(pd_entry::kFields[0])},
    {"AH_ENTRY", ah_entry::kSize, ah_entry::kFields, sizeof(ah_entry::kFields) / sizeof(ah_entry::kFields[0])},
    {"GID_ENTRY", gid_entry::kSize, gid_entry::kFields, sizeof(gid_entry::kFields) / sizeof(gid_entry::kFields[0])},
    {"DOMAIN_ENTRY", domain_entry::kSize, domain_entry::kFields, sizeof(domain_entry::kFields) / sizeof(domain_entry::kFields[0])},
    {"CMD_HANDLE", cmd_handle::kSize, cmd_handle::kFields, sizeof(cmd_handle::kFields) / sizeof(cmd_handle::kFields[0])},
    {"CMD_QUERY_PORT_IN", cmd_query_port_in::kSize, cmd_query_port_in::kFields, sizeof(cmd_query_port_in::kFields) / sizeof(cmd_query_port_in::kFields[0])},
    {"CMD_QUERY_GID_IN", cmd_query_gid_in::kSize, cmd_query_gid_in::kFields, sizeof(cmd_query_gid_in::kFields) / sizeof(cmd_query_gid_in::kFields[0])},
    {"CMD_QUERY_PKEY_IN", cmd_query_pkey_in::kSize, cmd_query_pkey_in::kFields, sizeof(cmd_query_pkey_in::kFields) / sizeof(cmd_query_pkey_in::kFields[0])},
    {"CMD_QUERY_PKEY_OUT", cmd_query_pkey_out::kSize, cmd_query_pkey_out::kFields, sizeof(cmd_query_pkey_out::kFields) / sizeof(cmd_query_pkey_out::kFields[0])},
    {"CMD_ATTACH_DOMAIN_IN", cmd_attach_domain_in::kSize, cmd_attach_domain_in::kFields, sizeof(cmd_attach_domain_in::kFields) / sizeof(cmd_attach_domain_in::kFields[0])},
    {"CMD_REG_MR_IN", cmd_reg_mr_in::kSize, cmd_reg_mr_in::kFields, sizeof(cmd_reg_mr_in::kFields) / sizeof(cmd_reg_mr_in::kFields[0])},
    {"CMD_REG_MR_OUT", cmd_reg_mr_out::kSize, cmd_reg_mr_out::kFields, sizeof(cmd_reg_mr_out::kFields) / sizeof(cmd_reg_mr_out::kFields[0])},
    {"CMD_CREATE_CQ_IN", cmd_create_cq_in::kSize, cmd_create_cq_in::kFields, sizeof(cmd_create_cq_in::kFields) / sizeof(cmd_create_cq_in::kFields[0])},
    {"CMD_RESIZE_CQ_IN", cmd_resize_cq_in::kSize, cmd_resize_cq_in::kFields, sizeof(cmd_resize_cq_in::kFields) / sizeof(cmd_resize_cq_in::kFields[0])},
    {"CMD_CREATE_QP_IN", cmd_create_qp_in::kSize, cmd_create_qp_in::kFields, sizeof(cmd_create_qp_in::kFields) / sizeof(cmd_create_qp_in::kFields[0])},
    {"QP_ATTR", qp_attr::kSize, qp_attr::kFields, sizeof(qp_attr::kFields) / sizeof(qp_attr::kFields[0])},
    {"CMD_CREATE_SRQ_IN", cmd_create_srq_in::kSize, cmd_create_srq_in::kFields, sizeof(cmd_create_srq_in::kFields) / sizeof(cmd_create_srq_in::kFields[0])},
    {"CMD_MODIFY_SRQ_IN", cmd_modify_srq_in::kSize, cmd_modify_srq_in::kFields, sizeof(cmd_modify_srq_in::kFields) / sizeof(cmd_modify_srq_in::kFields[0])},
    {"CMD_QUERY_SRQ_OUT", cmd_query_srq_out::kSize, cmd_query_srq_out::kFields, sizeof(cmd_query_srq_out::kFields) / sizeof(cmd_query_srq_out::kFields[0])},
    {"CMD_CREATE_AH_IN", cmd_create_ah_in::kSize, cmd_create_ah_in::kFields, sizeof(cmd_create_ah_in::kFields) / sizeof(cmd_create_ah_in::kFields[0])},
};

constexpr std::size_t kLayoutCount = sizeof(kLayouts) / sizeof(kLayouts[0]);

// Register offsets derived from the descriptors (never written out twice).
constexpr std::uint32_t reg(std::uint32_t block, Field f) noexcept { return block + f.offset; }
constexpr std::uint32_t kCtxCmdqPi = reg(kCtxCmdqBlock, cmdq_regs::pi);
constexpr std::uint32_t kCtxCmdqCi = reg(kCtxCmdqBlock, cmdq_regs::ci);
constexpr std::uint32_t kCtxEqCi = reg(kCtxEqBlock, eq_regs::ci);
constexpr std::uint32_t kCtxEqArm = reg(kCtxEqBlock, eq_regs::arm);
constexpr std::uint32_t kCtxSqDoorbell = reg(kCtxDbBlock, db_regs::sq_qpn);    // 64-bit store
constexpr std::uint32_t kCtxRqDoorbell = reg(kCtxDbBlock, db_regs::rq_qpn);    // 64-bit store
constexpr std::uint32_t kCtxSrqDoorbell = reg(kCtxDbBlock, db_regs::srq_num);  // 64-bit store
constexpr std::uint32_t kCtxCqDoorbell = reg(kCtxDbBlock, db_regs::cq_num);    // 64-bit store

// Sizes and placement checks.
static_assert(cmdq_entry::kSize == kCmdqEntrySize, "command entry size");
static_assert(eqe::kSize == kEqeSize, "EQE size");
static_assert(cqe::kSize == kCqeSize, "CQE size");
static_assert(ctrl_seg::kSize % kSegUnit == 0 && raddr_seg::kSize % kSegUnit == 0 &&
                  atomic_seg::kSize % kSegUnit == 0 && ud_seg::kSize % kSegUnit == 0 &&
                  av::kSize % kSegUnit == 0 && data_seg::kSize == kSegUnit &&
                  recv_wqe::kSize == kSegUnit,
              "WQE segments are multiples of 16 bytes");
// Largest send WQE: CTRL + UD + AV + 32 DATA segments fits the largest stride.
static_assert(ctrl_seg::kSize + ud_seg::kSize + av::kSize + kMaxSge * data_seg::kSize <=
                  (1u << kMaxLogStride),
              "max send WQE exceeds max stride");
static_assert(ctrl_seg::kSize + raddr_seg::kSize + inline_seg::kSize + kMaxInline <=
                  (1u << kMaxLogStride),
              "max inline WQE exceeds max stride");
static_assert(recv_wqe::kSize + kMaxSge * data_seg::kSize <= (1u << kMaxLogStride),
              "max receive WQE exceeds max stride");
static_assert(kBar0IdBlock + id_block::kSize <= kBar0CapBlock, "BAR0: ID overlaps CAP");
static_assert(kBar0CapBlock + cap_block::kSize <= kBar0PortBlock, "BAR0: CAP overlaps PORT");
static_assert(kBar0PortBlock + port_block::kSize <= kBar0StatsBlock, "BAR0: PORT overlaps STATS");
static_assert(kBar0StatsBlock + stats_block::kSize <= kBar0CtxWinBlock, "BAR0: STATS overlaps CTXWIN");
static_assert(kBar0CtxWinBlock + ctxwin_block::kSize <= kBar0CtxBase, "BAR0: CTXWIN overlaps contexts");
static_assert(kCtxCmdqBlock + cmdq_regs::kSize <= kCtxEqBlock, "ctx page: CMDQ overlaps EQ");
static_assert(kCtxEqBlock + eq_regs::kSize <= kCtxIntrBlock, "ctx page: EQ overlaps INTR");
static_assert(kCtxIntrBlock + intr_regs::kSize <= kCtxDbBlock, "ctx page: INTR overlaps DB");
static_assert(kCtxDbBlock + db_regs::kSize <= kCtxPageSize, "ctx page: DB exceeds page");
// Doorbells are single 64-bit stores: the QPN/CQN dword and the index dword
// must form one 8-byte aligned quadword.
static_assert(kCtxSqDoorbell % 8 == 0 && db_regs::sq_pi.offset == db_regs::sq_qpn.offset + 4, "SQ doorbell");
static_assert(kCtxRqDoorbell % 8 == 0 && db_regs::rq_pi.offset == db_regs::rq_qpn.offset + 4, "RQ doorbell");
static_assert(kCtxSrqDoorbell % 8 == 0 && db_regs::srq_pi.offset == db_regs::srq_num.offset + 4, "SRQ doorbell");
static_assert(kCtxCqDoorbell % 8 == 0 && db_regs::cq_ci.offset == db_regs::cq_num.offset + 4, "CQ doorbell");
// Owner/phase bits live in the last dword the device writes.
static_assert(cqe::owner.offset == cqe::kSize - 4, "CQE owner in last dword");
static_assert(eqe::owner.offset == eqe::kSize - 4, "EQE owner in last dword");
// Query outputs are images of register blocks.
static_assert(qp_attr::kSize >= 0x5C, "QP_ATTR");

}  // namespace simnic::hw
