// SPDX-License-Identifier: Apache-2.0
// simnic hardware spec: the single source of truth for every register block,
// queue entry, device table entry and command mailbox layout.
//
// docs/hw-spec.md describes the same layouts in prose and tables; the unit test
// hwspec/tests/test_hwspec.cpp parses that document and checks every
// "#### Layout:" table against the descriptors below, field by field. Change a
// layout here and in the document together, or the test fails.
//
// Conventions (hw-spec.md section 1.4): all multi-byte integers little-endian;
// bits not described are reserved (write 0, ignore on read); indices free-running.
#pragma once

#include <cstddef>
#include <cstdint>

#include "simnic/hw/field.h"
#include "simnic/hw/verbs.h"

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
    CcStats = 0x00000006,
    TxStats = 0x00000007,
    DmaStats = 0x00000008,
    RxStats = 0x00000009,
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
constexpr std::uint32_t kBar0CcStatsBlock = 0x0500;
constexpr std::uint32_t kBar0TxStatsBlock = 0x0540;
constexpr std::uint32_t kBar0DmaStatsBlock = 0x0580;
constexpr std::uint32_t kBar0RxStatsBlock = 0x05C0;
constexpr std::uint32_t kBar0CtxBase = 0x1000;
constexpr std::uint32_t kCtxPageSize = 0x1000;

// Block offsets inside a context page.
constexpr std::uint32_t kCtxCmdqBlock = 0x000;
constexpr std::uint32_t kCtxEqBlock = 0x040;
constexpr std::uint32_t kCtxIntrBlock = 0x080;
constexpr std::uint32_t kCtxDbBlock = 0x800;
// Doorbell FIFO (hw-spec.md 3.4): registers, then kDbFifoEntries entries.
constexpr std::uint32_t kCtxDbFifo = 0x900;
constexpr std::uint32_t kCtxDbFifoEntries = 0xA00;
constexpr std::uint32_t kDbFifoEntries = 64;
enum class DbKind : std::uint8_t { Sq = 1, Rq = 2, Srq = 3, Cq = 4 };

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
// BAD_PKEY_CNTR, BAD_QKEY_CNTR, PORT_ACTIVE_EVENT, SYS_IMAGE_GUID,
// RC_RNR_NAK_GEN, MEM_WINDOW, MEM_WINDOW_TYPE_2B, and, as rxe from 6.2 (the
// kernel's IB_DEVICE_* values, which rdma-core 44 does not name),
// FLUSH_GLOBAL (bit 38), FLUSH_PERSISTENT (bit 39) and ATOMIC_WRITE (bit 40).
constexpr std::uint64_t kFlushGlobal = 1ull << 38;
constexpr std::uint64_t kFlushPersistent = 1ull << 39;
constexpr std::uint64_t kAtomicWrite = 1ull << 40;
constexpr std::uint64_t device_cap_flags = 0x1021C06ull | kFlushGlobal | kFlushPersistent | kAtomicWrite;
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
constexpr std::uint32_t max_mw = 524287;  // rxe: MW indices above the MR range
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
// On-demand paging (hw-spec 2.4, 5.6.5): the ibv_odp_general_caps and
// ibv_odp_transport_cap_bits values. The transport bits are those of the
// newest rxe (rxe_init_device_param: RC SEND, RECV, WRITE, READ, ATOMIC,
// SRQ_RECV; UD SEND, RECV, SRQ_RECV), plus UC's SEND, RECV, WRITE and
// SRQ_RECV, which rxe leaves out although its UC path is the RC path's: the
// device's DMA is the same for every QP type. IMPLICIT (a whole-address-space
// MR) is simnic's own; rxe does not have it.
constexpr std::uint32_t kOdpSupport = 1u << 0;          // IBV_ODP_SUPPORT
constexpr std::uint32_t kOdpSupportImplicit = 1u << 1;  // IBV_ODP_SUPPORT_IMPLICIT
constexpr std::uint32_t odp_general_caps = kOdpSupport | kOdpSupportImplicit;
constexpr std::uint32_t odp_rc_caps = 0x3F;        // SEND RECV WRITE READ ATOMIC SRQ_RECV
constexpr std::uint32_t odp_uc_caps = 0x27;        // SEND RECV WRITE SRQ_RECV
constexpr std::uint32_t odp_ud_caps = 0x23;        // SEND RECV SRQ_RECV
}  // namespace caps_default

// The multicast group table (hw-spec.md 9.10): an MCG entry holds the QPNs
// of the group, as many as a group may have attached.
constexpr std::uint32_t kMcgQpSlots = caps_default::max_mcast_qp_attach;
constexpr std::uint32_t kMcgQpStride = 4;
// The destination QPN of a multicast packet (IBA 9.8.3.3: the permissive QPN).
constexpr std::uint32_t kMulticastQpn = 0xFFFFFF;
// Whether the 16-byte GID `g` (wire order) names a multicast group: an IPv6
// multicast address (ff00::/8), or an IPv4-mapped one (::ffff:224.0.0.0/4),
// as the kernel's rdma_is_multicast_addr decides.
constexpr bool is_multicast_gid(const std::uint8_t* g) noexcept {
    bool mapped = g[10] == 0xFF && g[11] == 0xFF;
    for (int i = 0; i < 10; ++i) mapped = mapped && g[i] == 0;
    return mapped ? (g[12] & 0xF0) == 0xE0 : g[0] == 0xFF;
}

// ---------------------------------------------------------------------------
// Device values of the hardware's own (the values libibverbs also defines
// are in verbs.h).
// ---------------------------------------------------------------------------
enum class PhysState : std::uint8_t { Polling = 2, Disabled = 3, LinkUp = 5 };  // IBA PortPhysicalState
enum class NetType : std::uint8_t { RoceV2Ipv4 = 0, RoceV2Ipv6 = 1 };
enum class DomainKind : std::uint8_t { Process = 0, Shm = 1 };
enum class CqArm : std::uint8_t { None = 0, Next = 1, Solicited = 2 };

// MPT_ENTRY.kind (hw-spec.md 9.5): an MR, or a window of either ibv_mw_type,
// which the kind encodes as itself.
enum class MptKind : std::uint8_t {
    Mr = 0,
    MwType1 = static_cast<std::uint8_t>(MwType::Type1),
    MwType2 = static_cast<std::uint8_t>(MwType::Type2),
};
static_assert(static_cast<std::uint8_t>(MptKind::Mr) != static_cast<std::uint8_t>(MwType::Type1) &&
                  static_cast<std::uint8_t>(MptKind::Mr) != static_cast<std::uint8_t>(MwType::Type2),
              "MPT_ENTRY.kind: an MR's kind is no MW type");
// MPT_ENTRY.mw_state: rxe's rxe_mw_state.
enum class MwState : std::uint8_t { Invalid = 0, Free = 1, Valid = 2 };

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
    MwBind = 14,        // a BIND_MW WQE failed its checks
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
    AllocMw = 0x0032,
    DeallocMw = 0x0033,
    ReregMr = 0x0034,
    AdviseMr = 0x0035,
    CreateCq = 0x0040,
    ResizeCq = 0x0041,
    DestroyCq = 0x0042,
    ModifyCq = 0x0043,
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
    AttachMcast = 0x0080,
    DetachMcast = 0x0081,
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
    MwBound = 0x0F,
    Fault = 0x10,
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
        case CmdStatus::MwBound: return 22;       // EINVAL
        case CmdStatus::Fault: return 14;         // EFAULT
    }
    return 5;  // unknown status: EIO
}

// ---------------------------------------------------------------------------
// Layout descriptors. Offsets are bytes from the start of the layout; see
// field.h for the dword / wide field rules.
//
// Every layout is written once, as an X-macro SIMNIC_HW_<NAME>_FIELDS(F) with one
// row F(field, offset, lo, width) per field in document order, and registered once,
// as a row L(namespace, NAME, size) of SIMNIC_HW_LAYOUTS. From those two lists the
// header generates, for each layout, namespace simnic::hw::<namespace> holding
//   kSize                          the layout size in bytes,
//   constexpr Field <field>        one descriptor per row,
//   kFields[]                      {"<field>", <field>} for every row, in order,
//   static_assert(layout_ok(...))  fields valid, inside kSize, not overlapping,
// and one kLayouts[] entry named "NAME". A field or layout cannot be declared
// without also being listed, so the doc-vs-header test sees all of them.
// ---------------------------------------------------------------------------

// REG_BLOCK_HEADER (hw-spec.md 2.2)
#define SIMNIC_HW_REG_BLOCK_HEADER_FIELDS(F) \
    F(type, 0x00, 0, 32)                     \
    F(version, 0x04, 0, 32)                  \
    F(next, 0x08, 0, 32)                     \
    F(length, 0x0C, 0, 32)

// ID_BLOCK (hw-spec.md 2.3)
#define SIMNIC_HW_ID_BLOCK_FIELDS(F) \
    F(vendor_id, 0x10, 0, 24)        \
    F(vendor_part_id, 0x14, 0, 32)   \
    F(hw_rev, 0x18, 0, 32)           \
    F(fw_minor, 0x1C, 0, 16)         \
    F(fw_major, 0x1C, 16, 16)        \
    F(fw_subminor, 0x20, 0, 16)      \
    F(engine_kind, 0x20, 16, 8)      \
    F(spec_version, 0x24, 0, 32)     \
    F(node_guid, 0x28, 0, 64)        \
    F(sys_image_guid, 0x30, 0, 64)   \
    F(magic, 0x38, 0, 32)            \
    F(device_index, 0x3C, 0, 16)

// CAP_BLOCK (hw-spec.md 2.4)
#define SIMNIC_HW_CAP_BLOCK_FIELDS(F)          \
    F(max_mr_size, 0x10, 0, 64)                \
    F(page_size_cap, 0x18, 0, 64)              \
    F(device_cap_flags, 0x20, 0, 64)           \
    F(max_qp, 0x28, 0, 32)                     \
    F(max_qp_wr, 0x2C, 0, 32)                  \
    F(max_sge, 0x30, 0, 32)                    \
    F(max_sge_rd, 0x34, 0, 32)                 \
    F(max_cq, 0x38, 0, 32)                     \
    F(max_cqe, 0x3C, 0, 32)                    \
    F(max_mr, 0x40, 0, 32)                     \
    F(max_pd, 0x44, 0, 32)                     \
    F(max_qp_rd_atom, 0x48, 0, 32)             \
    F(max_qp_init_rd_atom, 0x4C, 0, 32)        \
    F(max_res_rd_atom, 0x50, 0, 32)            \
    F(max_srq, 0x54, 0, 32)                    \
    F(max_srq_wr, 0x58, 0, 32)                 \
    F(max_srq_sge, 0x5C, 0, 32)                \
    F(max_ah, 0x60, 0, 32)                     \
    F(max_mw, 0x64, 0, 32)                     \
    F(max_pkeys, 0x68, 0, 16)                  \
    F(local_ca_ack_delay, 0x68, 16, 8)         \
    F(atomic_cap, 0x68, 24, 8)                 \
    F(max_inline, 0x6C, 0, 32)                 \
    F(max_mcast_grp, 0x70, 0, 32)              \
    F(max_mcast_qp_attach, 0x74, 0, 32)        \
    F(max_total_mcast_qp_attach, 0x78, 0, 32)  \
    F(max_fast_reg_page_list_len, 0x7C, 0, 32) \
    F(phys_port_cnt, 0x80, 0, 8)               \
    F(num_comp_vectors, 0x80, 8, 8)            \
    F(max_ctx, 0x84, 0, 32)                    \
    F(max_domain, 0x88, 0, 32)                 \
    F(log_max_cmdq, 0x8C, 0, 8)                \
    F(log_max_eq, 0x8C, 8, 8)                  \
    F(log_max_sq_stride, 0x8C, 16, 8)          \
    F(first_qpn, 0x90, 0, 24)                  \
    F(max_mtt, 0x94, 0, 32)                    \
    F(max_mbox_len, 0x98, 0, 32)               \
    F(odp_general_caps, 0x9C, 0, 8)            \
    F(odp_rc_caps, 0x9C, 8, 8)                 \
    F(odp_uc_caps, 0x9C, 16, 8)                \
    F(odp_ud_caps, 0x9C, 24, 8)

// PORT_BLOCK (hw-spec.md 2.5)
#define SIMNIC_HW_PORT_BLOCK_FIELDS(F) \
    F(port_num, 0x10, 0, 8)            \
    F(state, 0x10, 8, 8)               \
    F(phys_state, 0x10, 16, 8)         \
    F(link_layer, 0x10, 24, 8)         \
    F(max_mtu, 0x14, 0, 8)             \
    F(active_mtu, 0x14, 8, 8)          \
    F(active_width, 0x14, 16, 8)       \
    F(active_speed, 0x14, 24, 8)       \
    F(netdev_mtu, 0x18, 0, 32)         \
    F(gid_tbl_len, 0x1C, 0, 32)        \
    F(pkey_tbl_len, 0x20, 0, 16)       \
    F(max_vl_num, 0x20, 16, 8)         \
    F(port_cap_flags, 0x24, 0, 32)     \
    F(max_msg_sz, 0x28, 0, 32)         \
    F(ifindex, 0x2C, 0, 32)            \
    F(mac, 0x30, 0, 48)                \
    F(bad_pkey_cntr, 0x38, 0, 32)      \
    F(qkey_viol_cntr, 0x3C, 0, 32)     \
    F(gid_gen, 0x40, 0, 32)

// STATS_BLOCK (hw-spec.md 2.6)
#define SIMNIC_HW_STATS_BLOCK_FIELDS(F) \
    F(tx_packets, 0x10, 0, 64)          \
    F(tx_bytes, 0x18, 0, 64)            \
    F(rx_packets, 0x20, 0, 64)          \
    F(rx_bytes, 0x28, 0, 64)            \
    F(retransmits, 0x30, 0, 64)         \
    F(timeouts, 0x38, 0, 64)            \
    F(retry_exceeded, 0x40, 0, 64)      \
    F(rnr_retry_exceeded, 0x48, 0, 64)  \
    F(rx_nak_psn_seq, 0x50, 0, 64)      \
    F(rx_nak_inv_req, 0x58, 0, 64)      \
    F(rx_nak_rem_access, 0x60, 0, 64)   \
    F(rx_nak_rem_op, 0x68, 0, 64)       \
    F(rx_rnr_nak, 0x70, 0, 64)          \
    F(tx_nak_psn_seq, 0x78, 0, 64)      \
    F(tx_nak_inv_req, 0x80, 0, 64)      \
    F(tx_nak_rem_access, 0x88, 0, 64)   \
    F(tx_nak_rem_op, 0x90, 0, 64)       \
    F(tx_rnr_nak, 0x98, 0, 64)          \
    F(duplicate_requests, 0xA0, 0, 64)  \
    F(out_of_seq_requests, 0xA8, 0, 64) \
    F(icrc_errors, 0xB0, 0, 64)         \
    F(rx_drops_bad_hdr, 0xB8, 0, 64)    \
    F(rx_drops_no_qp, 0xC0, 0, 64)      \
    F(rx_drops_qkey, 0xC8, 0, 64)       \
    F(rx_drops_pkey, 0xD0, 0, 64)       \
    F(tx_drops, 0xD8, 0, 64)            \
    F(local_prot_err, 0xE0, 0, 64)      \
    F(remote_access_err, 0xE8, 0, 64)   \
    F(dma_faults, 0xF0, 0, 64)          \
    F(cq_overflows, 0xF8, 0, 64)

// CC_STATS_BLOCK (hw-spec.md 2.6.1): congestion control's counters, a block
// of their own because STATS_BLOCK is full.
#define SIMNIC_HW_CC_STATS_BLOCK_FIELDS(F) \
    F(ce_packets, 0x10, 0, 64)             \
    F(cnp_sent, 0x18, 0, 64)               \
    F(cnp_received, 0x20, 0, 64)           \
    F(cnp_suppressed, 0x28, 0, 64)         \
    F(rate_limit_holds, 0x30, 0, 64)

// TX_STATS_BLOCK (hw-spec.md 2.6.2): the port's MAC TX, its ACKs that wait
// for their flow's reply, and the requesters it held back.
#define SIMNIC_HW_TX_STATS_BLOCK_FIELDS(F) \
    F(acks_held, 0x10, 0, 64)              \
    F(acks_joined, 0x18, 0, 64)            \
    F(ack_holds_expired, 0x20, 0, 64)      \
    F(rx_backlog_holds, 0x28, 0, 64)

// DMA_STATS_BLOCK (hw-spec.md 2.6.3): how the transport's data crossed to
// host memory, in transfers and in packets that needed none of their own.
#define SIMNIC_HW_DMA_STATS_BLOCK_FIELDS(F) \
    F(host_reads, 0x10, 0, 64)              \
    F(host_writes, 0x18, 0, 64)             \
    F(read_ahead_hits, 0x20, 0, 64)         \
    F(writes_combined, 0x28, 0, 64)

// RX_STATS_BLOCK (hw-spec.md 2.6.4): the port's MAC RX, what the host's
// network stack dropped before the device could take it.
#define SIMNIC_HW_RX_STATS_BLOCK_FIELDS(F) \
    F(rx_overflow_drops, 0x10, 0, 64)

// CTXWIN_BLOCK (hw-spec.md 2.7)
#define SIMNIC_HW_CTXWIN_BLOCK_FIELDS(F) \
    F(ctx_base, 0x10, 0, 32)             \
    F(ctx_stride, 0x14, 0, 32)           \
    F(ctx_count, 0x18, 0, 32)

// CMDQ_REGS (hw-spec.md 2.7.1)
#define SIMNIC_HW_CMDQ_REGS_FIELDS(F) \
    F(ring_base, 0x10, 0, 64)         \
    F(log_size, 0x18, 0, 5)           \
    F(enable, 0x18, 8, 1)             \
    F(ctx_id, 0x1C, 0, 16)            \
    F(boot_domain, 0x1C, 16, 16)      \
    F(mbox_base, 0x20, 0, 64)         \
    F(mbox_len, 0x28, 0, 32)          \
    F(pi, 0x2C, 0, 32)                \
    F(ci, 0x30, 0, 32)                \
    F(ready, 0x34, 0, 1)              \
    F(fatal, 0x34, 1, 1)

// EQ_REGS (hw-spec.md 2.7.2)
#define SIMNIC_HW_EQ_REGS_FIELDS(F) \
    F(base, 0x10, 0, 64)            \
    F(log_size, 0x18, 0, 5)         \
    F(enable, 0x18, 8, 1)           \
    F(overrun, 0x18, 9, 1)          \
    F(pi, 0x1C, 0, 32)              \
    F(ci, 0x20, 0, 32)              \
    F(arm, 0x24, 0, 1)

// INTR_REGS (hw-spec.md 2.7.3)
#define SIMNIC_HW_INTR_REGS_FIELDS(F) \
    F(vector, 0x10, 0, 16)            \
    F(mask, 0x14, 0, 1)               \
    F(pending, 0x18, 0, 1)            \
    F(count, 0x1C, 0, 32)

// DB_REGS (hw-spec.md 3.1)
#define SIMNIC_HW_DB_REGS_FIELDS(F) \
    F(sq_qpn, 0x10, 0, 24)          \
    F(sq_pi, 0x14, 0, 32)           \
    F(rq_qpn, 0x18, 0, 24)          \
    F(rq_pi, 0x1C, 0, 32)           \
    F(srq_num, 0x20, 0, 24)         \
    F(srq_pi, 0x24, 0, 32)          \
    F(cq_num, 0x28, 0, 24)          \
    F(cq_cmd, 0x28, 24, 2)          \
    F(cq_ci, 0x2C, 0, 32)

// CMDQ_ENTRY (hw-spec.md 5.2)
#define SIMNIC_HW_CMDQ_ENTRY_FIELDS(F) \
    F(opcode, 0x00, 0, 16)             \
    F(eqe_req, 0x00, 16, 1)            \
    F(token, 0x04, 0, 32)              \
    F(in_addr, 0x08, 0, 64)            \
    F(out_addr, 0x10, 0, 64)           \
    F(in_len, 0x18, 0, 32)             \
    F(out_len, 0x1C, 0, 32)            \
    F(status, 0x20, 0, 8)              \
    F(owner, 0x20, 31, 1)              \
    F(syndrome, 0x24, 0, 32)           \
    F(out_bytes, 0x28, 0, 32)

// EQE (hw-spec.md 8.1)
#define SIMNIC_HW_EQE_FIELDS(F) \
    F(event_type, 0x00, 0, 8)   \
    F(obj_num, 0x04, 0, 24)     \
    F(token, 0x08, 0, 32)       \
    F(cmd_status, 0x0C, 0, 8)   \
    F(aux, 0x10, 0, 32)         \
    F(owner, 0x1C, 31, 1)

// CTRL_SEG (hw-spec.md 6.2)
#define SIMNIC_HW_CTRL_SEG_FIELDS(F) \
    F(opcode, 0x00, 0, 8)            \
    F(fence, 0x00, 8, 1)             \
    F(signaled, 0x00, 9, 1)          \
    F(solicited, 0x00, 10, 1)        \
    F(inline_data, 0x00, 11, 1)      \
    F(num_sge, 0x00, 16, 8)          \
    F(imm_inv, 0x04, 0, 32)          \
    F(wr_id, 0x08, 0, 64)            \
    F(total_len, 0x10, 0, 32)

// RADDR_SEG (hw-spec.md 6.2)
#define SIMNIC_HW_RADDR_SEG_FIELDS(F) \
    F(remote_va, 0x00, 0, 64)         \
    F(rkey, 0x08, 0, 32)              \
    F(flush_len, 0x0C, 0, 32)

// ATOMIC_SEG (hw-spec.md 6.2)
#define SIMNIC_HW_ATOMIC_SEG_FIELDS(F) \
    F(compare_add, 0x00, 0, 64)        \
    F(swap, 0x08, 0, 64)

// BIND_SEG (hw-spec.md 6.2)
#define SIMNIC_HW_BIND_SEG_FIELDS(F) \
    F(mw_rkey, 0x00, 0, 32)          \
    F(new_rkey, 0x04, 0, 32)         \
    F(mr_lkey, 0x08, 0, 32)          \
    F(access, 0x0C, 0, 32)           \
    F(addr, 0x10, 0, 64)             \
    F(length, 0x18, 0, 64)

// UD_SEG (hw-spec.md 6.2)
#define SIMNIC_HW_UD_SEG_FIELDS(F) \
    F(ah_num, 0x00, 0, 32)         \
    F(dest_qpn, 0x04, 0, 24)       \
    F(qkey, 0x08, 0, 32)

// AV (hw-spec.md 6.2)
#define SIMNIC_HW_AV_FIELDS(F)    \
    F(dgid, 0x00, 0, 128)         \
    F(sgid_index, 0x10, 0, 8)     \
    F(hop_limit, 0x10, 8, 8)      \
    F(traffic_class, 0x10, 16, 8) \
    F(sl, 0x10, 24, 4)            \
    F(grh, 0x10, 28, 1)           \
    F(net_type, 0x10, 29, 2)      \
    F(flow_label, 0x14, 0, 20)    \
    F(static_rate, 0x14, 24, 8)   \
    F(dmac, 0x18, 0, 48)

// INLINE_SEG (hw-spec.md 6.2)
#define SIMNIC_HW_INLINE_SEG_FIELDS(F) \
    F(byte_count, 0x00, 0, 32)

// DATA_SEG (hw-spec.md 6.2)
#define SIMNIC_HW_DATA_SEG_FIELDS(F) \
    F(addr, 0x00, 0, 64)             \
    F(length, 0x08, 0, 32)           \
    F(lkey, 0x0C, 0, 32)

// RECV_WQE (hw-spec.md 6.4)
#define SIMNIC_HW_RECV_WQE_FIELDS(F) \
    F(wr_id, 0x00, 0, 64)            \
    F(num_sge, 0x08, 0, 8)

// CQE (hw-spec.md 7.1)
#define SIMNIC_HW_CQE_FIELDS(F)   \
    F(wr_id, 0x00, 0, 64)         \
    F(status, 0x08, 0, 8)         \
    F(opcode, 0x08, 8, 8)         \
    F(wc_flags, 0x08, 16, 8)      \
    F(sl, 0x08, 24, 4)            \
    F(vendor_err, 0x0C, 0, 32)    \
    F(byte_len, 0x10, 0, 32)      \
    F(imm_inv, 0x14, 0, 32)       \
    F(qp_num, 0x18, 0, 24)        \
    F(src_qp, 0x1C, 0, 24)        \
    F(pkey_index, 0x20, 0, 16)    \
    F(slid, 0x20, 16, 16)         \
    F(dlid_path_bits, 0x24, 0, 8) \
    F(is_send, 0x24, 8, 1)        \
    F(wqe_index, 0x28, 0, 32)     \
    F(owner, 0x3C, 31, 1)

// QPC (hw-spec.md 9.2)
#define SIMNIC_HW_QPC_FIELDS(F)         \
    F(state, 0x00, 0, 4)                \
    F(qp_type, 0x00, 8, 8)              \
    F(path_mtu, 0x00, 16, 4)            \
    F(sq_draining, 0x00, 20, 1)         \
    F(sq_sig_all, 0x00, 21, 1)          \
    F(en_sqd_async_notify, 0x00, 22, 1) \
    F(srq_en, 0x00, 23, 1)              \
    F(port_num, 0x00, 24, 8)            \
    F(qpn, 0x04, 0, 24)                 \
    F(pdn, 0x08, 0, 24)                 \
    F(send_cqn, 0x0C, 0, 24)            \
    F(recv_cqn, 0x10, 0, 24)            \
    F(srqn, 0x14, 0, 24)                \
    F(ctx_id, 0x18, 0, 16)              \
    F(domain_id, 0x18, 16, 16)          \
    F(dest_qpn, 0x1C, 0, 24)            \
    F(sq_base, 0x20, 0, 64)             \
    F(rq_base, 0x28, 0, 64)             \
    F(log_sq_size, 0x30, 0, 5)          \
    F(log_sq_stride, 0x30, 8, 4)        \
    F(log_rq_size, 0x30, 16, 5)         \
    F(log_rq_stride, 0x30, 24, 4)       \
    F(max_send_sge, 0x34, 0, 8)         \
    F(max_recv_sge, 0x34, 8, 8)         \
    F(max_inline, 0x34, 16, 16)         \
    F(sq_pi, 0x38, 0, 32)               \
    F(sq_ci, 0x3C, 0, 32)               \
    F(rq_pi, 0x40, 0, 32)               \
    F(rq_ci, 0x44, 0, 32)               \
    F(sq_psn, 0x48, 0, 24)              \
    F(rq_psn, 0x4C, 0, 24)              \
    F(last_acked_psn, 0x50, 0, 24)      \
    F(msn, 0x54, 0, 24)                 \
    F(ssn, 0x58, 0, 24)                 \
    F(qkey, 0x5C, 0, 32)                \
    F(min_rnr_timer, 0x60, 8, 5)        \
    F(timeout, 0x60, 16, 5)             \
    F(retry_cnt, 0x60, 24, 3)           \
    F(rnr_retry, 0x60, 28, 3)           \
    F(max_rd_atomic, 0x64, 0, 8)        \
    F(max_dest_rd_atomic, 0x64, 8, 8)   \
    F(pkey_index, 0x64, 16, 16)         \
    F(retry_left, 0x68, 0, 3)           \
    F(rnr_retry_left, 0x68, 4, 3)       \
    F(error_cause, 0x68, 8, 8)          \
    F(rd_atomic_inflight, 0x68, 16, 8)  \
    F(comm_est_sent, 0x68, 24, 1)       \
    F(qp_access_flags, 0x6C, 0, 16)     \
    F(av_dgid, 0x70, 0, 128)            \
    F(av_sgid_index, 0x80, 0, 8)        \
    F(av_hop_limit, 0x80, 8, 8)         \
    F(av_traffic_class, 0x80, 16, 8)    \
    F(av_sl, 0x80, 24, 4)               \
    F(av_grh, 0x80, 28, 1)              \
    F(av_net_type, 0x80, 29, 2)         \
    F(av_flow_label, 0x84, 0, 20)       \
    F(av_static_rate, 0x84, 24, 8)      \
    F(av_dmac, 0x88, 0, 48)

// CQC (hw-spec.md 9.3)
#define SIMNIC_HW_CQC_FIELDS(F) \
    F(cqn, 0x00, 0, 24)         \
    F(log_size, 0x00, 24, 5)    \
    F(ctx_id, 0x04, 0, 16)      \
    F(domain_id, 0x04, 16, 16)  \
    F(base, 0x08, 0, 64)        \
    F(pi, 0x10, 0, 32)          \
    F(ci, 0x14, 0, 32)          \
    F(arm, 0x18, 0, 2)          \
    F(error, 0x18, 2, 1)        \
    F(ref_qps, 0x18, 8, 8)      \
    F(mod_count, 0x1C, 0, 16)   \
    F(mod_period, 0x1C, 16, 12) \
    F(mod_en, 0x1C, 31, 1)

// SRQC (hw-spec.md 9.4)
#define SIMNIC_HW_SRQC_FIELDS(F) \
    F(srqn, 0x00, 0, 24)         \
    F(pdn, 0x04, 0, 24)          \
    F(ctx_id, 0x08, 0, 16)       \
    F(domain_id, 0x08, 16, 16)   \
    F(log_size, 0x0C, 0, 5)      \
    F(log_stride, 0x0C, 8, 4)    \
    F(max_sge, 0x0C, 16, 8)      \
    F(limit_armed, 0x0C, 24, 1)  \
    F(error, 0x0C, 25, 1)        \
    F(base, 0x10, 0, 64)         \
    F(pi, 0x18, 0, 32)           \
    F(ci, 0x1C, 0, 32)           \
    F(srq_limit, 0x20, 0, 32)

// MPT_ENTRY (hw-spec.md 9.5)
#define SIMNIC_HW_MPT_ENTRY_FIELDS(F) \
    F(key, 0x00, 0, 32)               \
    F(pdn, 0x04, 0, 24)               \
    F(valid, 0x04, 24, 1)             \
    F(mtt_mode, 0x04, 25, 1)          \
    F(zero_based, 0x04, 26, 1)        \
    F(kind, 0x04, 27, 2)              \
    F(mw_state, 0x04, 29, 2)          \
    F(on_demand, 0x04, 31, 1)         \
    F(access, 0x08, 0, 16)            \
    F(log_page_size, 0x08, 16, 6)     \
    F(domain_id, 0x0C, 0, 16)         \
    F(ctx_id, 0x0C, 16, 16)           \
    F(iova_start, 0x10, 0, 64)        \
    F(length, 0x18, 0, 64)            \
    F(host_addr, 0x20, 0, 64)         \
    F(mtt_base, 0x28, 0, 32)          \
    F(mtt_count, 0x2C, 0, 32)         \
    F(mr_key, 0x30, 0, 32)            \
    F(bound_qpn, 0x34, 0, 24)         \
    F(mw_count, 0x38, 0, 32)

// MTT_ENTRY (hw-spec.md 9.6)
#define SIMNIC_HW_MTT_ENTRY_FIELDS(F) \
    F(page_addr, 0x00, 0, 64)

// PD_ENTRY (hw-spec.md 9.7)
#define SIMNIC_HW_PD_ENTRY_FIELDS(F) \
    F(valid, 0x00, 0, 1)             \
    F(ctx_id, 0x00, 16, 16)          \
    F(refcnt, 0x04, 0, 32)

// AH_ENTRY (hw-spec.md 9.7)
#define SIMNIC_HW_AH_ENTRY_FIELDS(F) \
    F(pdn, 0x00, 0, 24)              \
    F(valid, 0x00, 31, 1)            \
    F(ctx_id, 0x04, 0, 16)           \
    F(port_num, 0x04, 16, 8)         \
    F(av_dgid, 0x10, 0, 128)         \
    F(av_sgid_index, 0x20, 0, 8)     \
    F(av_hop_limit, 0x20, 8, 8)      \
    F(av_traffic_class, 0x20, 16, 8) \
    F(av_sl, 0x20, 24, 4)            \
    F(av_grh, 0x20, 28, 1)           \
    F(av_net_type, 0x20, 29, 2)      \
    F(av_flow_label, 0x24, 0, 20)    \
    F(av_static_rate, 0x24, 24, 8)   \
    F(av_dmac, 0x28, 0, 48)

// GID_ENTRY (hw-spec.md 9.8)
#define SIMNIC_HW_GID_ENTRY_FIELDS(F) \
    F(gid, 0x00, 0, 128)              \
    F(gid_type, 0x10, 0, 8)           \
    F(valid, 0x10, 8, 1)              \
    F(net_type, 0x10, 9, 2)           \
    F(ndev_ifindex, 0x14, 0, 32)

// DOMAIN_ENTRY (hw-spec.md 9.9)
#define SIMNIC_HW_DOMAIN_ENTRY_FIELDS(F) \
    F(ctx_id, 0x00, 0, 16)               \
    F(kind, 0x00, 16, 8)                 \
    F(valid, 0x00, 31, 1)                \
    F(pid, 0x04, 0, 32)                  \
    F(shm_handle, 0x08, 0, 32)           \
    F(map_base, 0x10, 0, 64)             \
    F(map_len, 0x18, 0, 64)

// CMD_HANDLE (hw-spec.md 5.3)
#define SIMNIC_HW_CMD_HANDLE_FIELDS(F) \
    F(handle, 0x00, 0, 32)

// CMD_QUERY_PORT_IN (hw-spec.md 5.6.2)
#define SIMNIC_HW_CMD_QUERY_PORT_IN_FIELDS(F) \
    F(port_num, 0x00, 0, 8)

// CMD_QUERY_GID_IN (hw-spec.md 5.6.2)
#define SIMNIC_HW_CMD_QUERY_GID_IN_FIELDS(F) \
    F(port_num, 0x00, 0, 8)                  \
    F(index, 0x04, 0, 16)

// CMD_QUERY_PKEY_IN (hw-spec.md 5.6.2)
#define SIMNIC_HW_CMD_QUERY_PKEY_IN_FIELDS(F) \
    F(port_num, 0x00, 0, 8)                   \
    F(index, 0x04, 0, 16)

// CMD_QUERY_PKEY_OUT (hw-spec.md 5.6.2)
#define SIMNIC_HW_CMD_QUERY_PKEY_OUT_FIELDS(F) \
    F(pkey, 0x00, 0, 16)

// CMD_ATTACH_DOMAIN_IN (hw-spec.md 5.6.3)
#define SIMNIC_HW_CMD_ATTACH_DOMAIN_IN_FIELDS(F) \
    F(kind, 0x00, 0, 8)                          \
    F(pid, 0x04, 0, 32)                          \
    F(shm_handle, 0x08, 0, 32)                   \
    F(map_base, 0x10, 0, 64)                     \
    F(map_len, 0x18, 0, 64)

// CMD_REG_MR_IN (hw-spec.md 5.6.5)
#define SIMNIC_HW_CMD_REG_MR_IN_FIELDS(F) \
    F(pdn, 0x00, 0, 24)                   \
    F(access, 0x04, 0, 16)                \
    F(log_page_size, 0x04, 16, 6)         \
    F(mtt_mode, 0x04, 24, 1)              \
    F(zero_based, 0x04, 25, 1)            \
    F(domain_id, 0x08, 0, 16)             \
    F(iova, 0x10, 0, 64)                  \
    F(length, 0x18, 0, 64)                \
    F(host_addr, 0x20, 0, 64)             \
    F(mtt_count, 0x28, 0, 32)

// CMD_REG_MR_OUT (hw-spec.md 5.6.5)
#define SIMNIC_HW_CMD_REG_MR_OUT_FIELDS(F) \
    F(lkey, 0x00, 0, 32)                   \
    F(rkey, 0x04, 0, 32)

// CMD_ADVISE_MR_IN (hw-spec.md 5.6.13)
#define SIMNIC_HW_CMD_ADVISE_MR_IN_FIELDS(F) \
    F(lkey, 0x00, 0, 32)                     \
    F(pdn, 0x04, 0, 24)                      \
    F(advice, 0x08, 0, 8)                    \
    F(addr, 0x10, 0, 64)                     \
    F(length, 0x18, 0, 32)

// CMD_ADVISE_MR_OUT (hw-spec.md 5.6.13)
#define SIMNIC_HW_CMD_ADVISE_MR_OUT_FIELDS(F) \
    F(host_addr, 0x00, 0, 64)                 \
    F(domain_id, 0x08, 0, 16)

// CMD_ALLOC_MW_IN (hw-spec.md 5.6.10)
#define SIMNIC_HW_CMD_ALLOC_MW_IN_FIELDS(F) \
    F(pdn, 0x00, 0, 24)                     \
    F(type, 0x04, 0, 8)

// CMD_REREG_MR_IN (hw-spec.md 5.6.11)
#define SIMNIC_HW_CMD_REREG_MR_IN_FIELDS(F) \
    F(lkey, 0x00, 0, 32)                    \
    F(flags, 0x04, 0, 32)                   \
    F(pdn, 0x08, 0, 24)                     \
    F(access, 0x0C, 0, 16)

// CMD_CREATE_CQ_IN (hw-spec.md 5.6.6)
#define SIMNIC_HW_CMD_CREATE_CQ_IN_FIELDS(F) \
    F(log_size, 0x00, 0, 5)                  \
    F(domain_id, 0x04, 0, 16)                \
    F(base, 0x08, 0, 64)

// CMD_RESIZE_CQ_IN (hw-spec.md 5.6.6)
#define SIMNIC_HW_CMD_RESIZE_CQ_IN_FIELDS(F) \
    F(cqn, 0x00, 0, 24)                      \
    F(log_size, 0x04, 0, 5)                  \
    F(domain_id, 0x08, 0, 16)                \
    F(base, 0x10, 0, 64)

// CMD_MODIFY_CQ_IN (hw-spec.md 5.6.6)
#define SIMNIC_HW_CMD_MODIFY_CQ_IN_FIELDS(F) \
    F(cqn, 0x00, 0, 24)                      \
    F(attr_mask, 0x04, 0, 32)                \
    F(cq_count, 0x08, 0, 16)                 \
    F(cq_period, 0x08, 16, 16)

// CMD_CREATE_QP_IN (hw-spec.md 5.6.7)
#define SIMNIC_HW_CMD_CREATE_QP_IN_FIELDS(F) \
    F(qp_type, 0x00, 0, 8)                   \
    F(sq_sig_all, 0x00, 8, 1)                \
    F(srq_en, 0x00, 9, 1)                    \
    F(pdn, 0x04, 0, 24)                      \
    F(send_cqn, 0x08, 0, 24)                 \
    F(recv_cqn, 0x0C, 0, 24)                 \
    F(srqn, 0x10, 0, 24)                     \
    F(domain_id, 0x14, 0, 16)                \
    F(sq_base, 0x18, 0, 64)                  \
    F(rq_base, 0x20, 0, 64)                  \
    F(log_sq_size, 0x28, 0, 5)               \
    F(log_sq_stride, 0x28, 8, 4)             \
    F(log_rq_size, 0x28, 16, 5)              \
    F(log_rq_stride, 0x28, 24, 4)            \
    F(max_send_sge, 0x2C, 0, 8)              \
    F(max_recv_sge, 0x2C, 8, 8)              \
    F(max_inline, 0x2C, 16, 16)

// QP_ATTR (hw-spec.md 5.6.7)
#define SIMNIC_HW_QP_ATTR_FIELDS(F)     \
    F(qpn, 0x00, 0, 24)                 \
    F(attr_mask, 0x04, 0, 32)           \
    F(qp_state, 0x08, 0, 4)             \
    F(cur_state, 0x08, 4, 4)            \
    F(path_mtu, 0x08, 8, 4)             \
    F(en_sqd_async_notify, 0x08, 12, 1) \
    F(sq_draining, 0x08, 13, 1)         \
    F(qkey, 0x0C, 0, 32)                \
    F(rq_psn, 0x10, 0, 24)              \
    F(sq_psn, 0x14, 0, 24)              \
    F(dest_qp_num, 0x18, 0, 24)         \
    F(port_num, 0x1C, 8, 8)             \
    F(pkey_index, 0x1C, 16, 16)         \
    F(timeout, 0x20, 0, 5)              \
    F(retry_cnt, 0x20, 8, 3)            \
    F(rnr_retry, 0x20, 12, 3)           \
    F(min_rnr_timer, 0x20, 16, 5)       \
    F(max_rd_atomic, 0x24, 0, 8)        \
    F(max_dest_rd_atomic, 0x24, 8, 8)   \
    F(qp_access_flags, 0x28, 0, 16)     \
    F(av_dgid, 0x30, 0, 128)            \
    F(av_sgid_index, 0x40, 0, 8)        \
    F(av_hop_limit, 0x40, 8, 8)         \
    F(av_traffic_class, 0x40, 16, 8)    \
    F(av_sl, 0x40, 24, 4)               \
    F(av_grh, 0x40, 28, 1)              \
    F(av_net_type, 0x40, 29, 2)         \
    F(av_flow_label, 0x44, 0, 20)       \
    F(av_static_rate, 0x44, 24, 8)      \
    F(av_dmac, 0x48, 0, 48)             \
    F(max_send_wr, 0x50, 0, 32)         \
    F(max_recv_wr, 0x54, 0, 32)         \
    F(max_send_sge, 0x58, 0, 8)         \
    F(max_recv_sge, 0x58, 8, 8)         \
    F(max_inline, 0x58, 16, 16)

// CMD_CREATE_SRQ_IN (hw-spec.md 5.6.8)
#define SIMNIC_HW_CMD_CREATE_SRQ_IN_FIELDS(F) \
    F(pdn, 0x00, 0, 24)                       \
    F(domain_id, 0x04, 0, 16)                 \
    F(base, 0x08, 0, 64)                      \
    F(log_size, 0x10, 0, 5)                   \
    F(log_stride, 0x10, 8, 4)                 \
    F(max_sge, 0x10, 16, 8)                   \
    F(srq_limit, 0x14, 0, 32)

// CMD_MODIFY_SRQ_IN (hw-spec.md 5.6.8)
#define SIMNIC_HW_CMD_MODIFY_SRQ_IN_FIELDS(F) \
    F(srqn, 0x00, 0, 24)                      \
    F(attr_mask, 0x04, 0, 32)                 \
    F(srq_limit, 0x08, 0, 32)                 \
    F(max_wr, 0x0C, 0, 32)                    \
    F(domain_id, 0x10, 0, 16)                 \
    F(log_size, 0x10, 16, 5)                  \
    F(base, 0x18, 0, 64)

// CMD_QUERY_SRQ_OUT (hw-spec.md 5.6.8)
#define SIMNIC_HW_CMD_QUERY_SRQ_OUT_FIELDS(F) \
    F(max_wr, 0x00, 0, 32)                    \
    F(max_sge, 0x04, 0, 32)                   \
    F(srq_limit, 0x08, 0, 32)

// CMD_CREATE_AH_IN (hw-spec.md 5.6.9)
#define SIMNIC_HW_CMD_CREATE_AH_IN_FIELDS(F) \
    F(pdn, 0x00, 0, 24)                      \
    F(port_num, 0x04, 0, 8)                  \
    F(av_dgid, 0x10, 0, 128)                 \
    F(av_sgid_index, 0x20, 0, 8)             \
    F(av_hop_limit, 0x20, 8, 8)              \
    F(av_traffic_class, 0x20, 16, 8)         \
    F(av_sl, 0x20, 24, 4)                    \
    F(av_grh, 0x20, 28, 1)                   \
    F(av_net_type, 0x20, 29, 2)              \
    F(av_flow_label, 0x24, 0, 20)            \
    F(av_static_rate, 0x24, 24, 8)           \
    F(av_dmac, 0x28, 0, 48)

// CMD_MCAST_IN (hw-spec.md 5.6.12)
#define SIMNIC_HW_CMD_MCAST_IN_FIELDS(F) \
    F(qpn, 0x00, 0, 24)                  \
    F(mgid, 0x10, 0, 128)

// MCG_ENTRY (hw-spec.md 9.10): `qpn` is the first of kMcgQpSlots slots,
// kMcgQpStride bytes apart.
#define SIMNIC_HW_MCG_ENTRY_FIELDS(F) \
    F(mgid, 0x00, 0, 128)             \
    F(valid, 0x10, 0, 1)              \
    F(num_qp, 0x14, 0, 32)            \
    F(qpn, 0x20, 0, 24)

// DB_FIFO_ENTRY (hw-spec.md 3.4)
#define SIMNIC_HW_DB_FIFO_ENTRY_FIELDS(F) \
    F(seq, 0x00, 0, 32)                   \
    F(num, 0x04, 0, 24)                   \
    F(kind, 0x04, 24, 4)                  \
    F(cq_cmd, 0x04, 28, 2)                \
    F(index, 0x08, 0, 32)                 \
    F(cq_seen, 0x0C, 0, 32)

// DB_FIFO_REGS (hw-spec.md 3.4)
#define SIMNIC_HW_DB_FIFO_REGS_FIELDS(F) \
    F(fifo_pi, 0x00, 0, 32)              \
    F(fifo_ci, 0x04, 0, 32)              \
    F(engine_sleeping, 0x08, 0, 32)      \
    F(cq_waiters, 0x0C, 0, 32)           \
    F(cq_wake_seq, 0x10, 0, 32)

// Every layout: L(namespace, NAME, size in bytes); fields in SIMNIC_HW_<NAME>_FIELDS.
#define SIMNIC_HW_LAYOUTS(L)                          \
    L(reg_block_header, REG_BLOCK_HEADER, 16)         \
    L(id_block, ID_BLOCK, 64)                         \
    L(cap_block, CAP_BLOCK, 256)                      \
    L(port_block, PORT_BLOCK, 80)                     \
    L(stats_block, STATS_BLOCK, 256)                  \
    L(ctxwin_block, CTXWIN_BLOCK, 32)                 \
    L(cc_stats_block, CC_STATS_BLOCK, 64)             \
    L(tx_stats_block, TX_STATS_BLOCK, 64)             \
    L(dma_stats_block, DMA_STATS_BLOCK, 64)           \
    L(rx_stats_block, RX_STATS_BLOCK, 64)             \
    L(cmdq_regs, CMDQ_REGS, 64)                       \
    L(eq_regs, EQ_REGS, 64)                           \
    L(intr_regs, INTR_REGS, 32)                       \
    L(db_regs, DB_REGS, 48)                           \
    L(db_fifo_regs, DB_FIFO_REGS, 64)                 \
    L(db_fifo_entry, DB_FIFO_ENTRY, 16)               \
    L(cmdq_entry, CMDQ_ENTRY, 64)                     \
    L(eqe, EQE, 32)                                   \
    L(ctrl_seg, CTRL_SEG, 32)                         \
    L(raddr_seg, RADDR_SEG, 16)                       \
    L(atomic_seg, ATOMIC_SEG, 16)                     \
    L(bind_seg, BIND_SEG, 32)                         \
    L(ud_seg, UD_SEG, 16)                             \
    L(av, AV, 32)                                     \
    L(inline_seg, INLINE_SEG, 4)                      \
    L(data_seg, DATA_SEG, 16)                         \
    L(recv_wqe, RECV_WQE, 16)                         \
    L(cqe, CQE, 64)                                   \
    L(qpc, QPC, 256)                                  \
    L(cqc, CQC, 32)                                   \
    L(srqc, SRQC, 64)                                 \
    L(mpt_entry, MPT_ENTRY, 64)                       \
    L(mtt_entry, MTT_ENTRY, 8)                        \
    L(pd_entry, PD_ENTRY, 8)                          \
    L(ah_entry, AH_ENTRY, 48)                         \
    L(gid_entry, GID_ENTRY, 32)                       \
    L(domain_entry, DOMAIN_ENTRY, 32)                 \
    L(mcg_entry, MCG_ENTRY, 256)                      \
    L(cmd_handle, CMD_HANDLE, 4)                      \
    L(cmd_query_port_in, CMD_QUERY_PORT_IN, 4)        \
    L(cmd_query_gid_in, CMD_QUERY_GID_IN, 8)          \
    L(cmd_query_pkey_in, CMD_QUERY_PKEY_IN, 8)        \
    L(cmd_query_pkey_out, CMD_QUERY_PKEY_OUT, 4)      \
    L(cmd_attach_domain_in, CMD_ATTACH_DOMAIN_IN, 32) \
    L(cmd_reg_mr_in, CMD_REG_MR_IN, 64)               \
    L(cmd_reg_mr_out, CMD_REG_MR_OUT, 8)              \
    L(cmd_advise_mr_in, CMD_ADVISE_MR_IN, 32)         \
    L(cmd_advise_mr_out, CMD_ADVISE_MR_OUT, 16)       \
    L(cmd_alloc_mw_in, CMD_ALLOC_MW_IN, 8)            \
    L(cmd_rereg_mr_in, CMD_REREG_MR_IN, 16)           \
    L(cmd_create_cq_in, CMD_CREATE_CQ_IN, 16)         \
    L(cmd_resize_cq_in, CMD_RESIZE_CQ_IN, 24)         \
    L(cmd_modify_cq_in, CMD_MODIFY_CQ_IN, 12)         \
    L(cmd_create_qp_in, CMD_CREATE_QP_IN, 64)         \
    L(qp_attr, QP_ATTR, 96)                           \
    L(cmd_create_srq_in, CMD_CREATE_SRQ_IN, 32)       \
    L(cmd_modify_srq_in, CMD_MODIFY_SRQ_IN, 32)       \
    L(cmd_query_srq_out, CMD_QUERY_SRQ_OUT, 12)       \
    L(cmd_create_ah_in, CMD_CREATE_AH_IN, 48)         \
    L(cmd_mcast_in, CMD_MCAST_IN, 32)

// Generators, undefined after use.
#define SIMNIC_HW_FIELD_DEF(name, offset, lo, width) constexpr Field name{offset, lo, width};
#define SIMNIC_HW_FIELD_ENTRY(name, offset, lo, width) {#name, name},

#define SIMNIC_HW_LAYOUT(ns, NAME, size)                                                 \
namespace ns {                                                                           \
constexpr std::uint32_t kSize = size;                                                    \
SIMNIC_HW_##NAME##_FIELDS(SIMNIC_HW_FIELD_DEF)                                           \
constexpr NamedField kFields[] = {SIMNIC_HW_##NAME##_FIELDS(SIMNIC_HW_FIELD_ENTRY)};     \
static_assert(layout_ok(kFields, kSize), #NAME ": field outside layout or overlapping"); \
}  // namespace ns

#define SIMNIC_HW_LAYOUT_DESC(ns, NAME, size)                                      \
    {#NAME, ns::kSize, ns::kFields, sizeof(ns::kFields) / sizeof(ns::kFields[0])},

SIMNIC_HW_LAYOUTS(SIMNIC_HW_LAYOUT)

constexpr LayoutDesc kLayouts[] = {SIMNIC_HW_LAYOUTS(SIMNIC_HW_LAYOUT_DESC)};

#undef SIMNIC_HW_LAYOUT_DESC
#undef SIMNIC_HW_LAYOUT
#undef SIMNIC_HW_FIELD_ENTRY
#undef SIMNIC_HW_FIELD_DEF

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
static_assert(bind_seg::kSize % kSegUnit == 0 &&
                  ctrl_seg::kSize + bind_seg::kSize <= (1u << kMinLogSqStride),
              "a BIND_MW WQE fits the smallest SQ stride");
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
static_assert(kBar0CtxWinBlock + ctxwin_block::kSize <= kBar0CcStatsBlock, "BAR0: CTXWIN overlaps CC_STATS");
static_assert(kBar0CcStatsBlock + cc_stats_block::kSize <= kBar0TxStatsBlock, "BAR0: CC_STATS overlaps TX_STATS");
static_assert(kBar0TxStatsBlock + tx_stats_block::kSize <= kBar0DmaStatsBlock, "BAR0: TX_STATS overlaps DMA_STATS");
static_assert(kBar0DmaStatsBlock + dma_stats_block::kSize <= kBar0RxStatsBlock, "BAR0: DMA_STATS overlaps RX_STATS");
static_assert(kBar0RxStatsBlock + rx_stats_block::kSize <= kBar0CtxBase, "BAR0: RX_STATS overlaps contexts");
// The global blocks after PORT_BLOCK on the chain (hw-spec 2.1, 2.2), in
// order. The firmware writes ID, CAP and PORT (PORT's `next` is this
// list's first); the device writes these headers, each pointing at the
// block after it and the last at 0, from this one list (the daemon's BAR0,
// and a local context's image of it).
struct GlobalBlock {
    std::uint32_t at;
    BlockType type;
    std::uint32_t length;
};
inline constexpr GlobalBlock kBar0DeviceBlocks[] = {
    {kBar0StatsBlock, BlockType::Stats, stats_block::kSize},
    {kBar0CtxWinBlock, BlockType::CtxWin, ctxwin_block::kSize},
    {kBar0CcStatsBlock, BlockType::CcStats, cc_stats_block::kSize},
    {kBar0TxStatsBlock, BlockType::TxStats, tx_stats_block::kSize},
    {kBar0DmaStatsBlock, BlockType::DmaStats, dma_stats_block::kSize},
    {kBar0RxStatsBlock, BlockType::RxStats, rx_stats_block::kSize},
};
constexpr std::size_t kBar0DeviceBlockCount = sizeof kBar0DeviceBlocks / sizeof kBar0DeviceBlocks[0];
// The `next` of kBar0DeviceBlocks[i]'s header.
constexpr std::uint32_t bar0_device_block_next(std::size_t i) {
    return i + 1 < kBar0DeviceBlockCount ? kBar0DeviceBlocks[i + 1].at : 0;
}
static_assert(kCtxCmdqBlock + cmdq_regs::kSize <= kCtxEqBlock, "ctx page: CMDQ overlaps EQ");
static_assert(kCtxEqBlock + eq_regs::kSize <= kCtxIntrBlock, "ctx page: EQ overlaps INTR");
static_assert(kCtxIntrBlock + intr_regs::kSize <= kCtxDbBlock, "ctx page: INTR overlaps DB");
static_assert(kCtxDbBlock + db_regs::kSize <= kCtxDbFifo, "ctx page: DB overlaps the doorbell FIFO");
static_assert(kCtxDbFifo + db_fifo_regs::kSize <= kCtxDbFifoEntries, "ctx page: FIFO registers overlap entries");
static_assert(kCtxDbFifoEntries + kDbFifoEntries * db_fifo_entry::kSize <= kCtxPageSize, "ctx page: FIFO exceeds page");
// Doorbells are single 64-bit stores: the QPN/CQN dword and the index dword
// must form one 8-byte aligned quadword.
static_assert(kCtxSqDoorbell % 8 == 0 && db_regs::sq_pi.offset == db_regs::sq_qpn.offset + 4, "SQ doorbell");
static_assert(kCtxRqDoorbell % 8 == 0 && db_regs::rq_pi.offset == db_regs::rq_qpn.offset + 4, "RQ doorbell");
static_assert(kCtxSrqDoorbell % 8 == 0 && db_regs::srq_pi.offset == db_regs::srq_num.offset + 4, "SRQ doorbell");
static_assert(kCtxCqDoorbell % 8 == 0 && db_regs::cq_ci.offset == db_regs::cq_num.offset + 4, "CQ doorbell");
// Owner/phase bits live in the last dword the device writes.
static_assert(cqe::owner.offset == cqe::kSize - 4, "CQE owner in last dword");
static_assert(eqe::owner.offset == eqe::kSize - 4, "EQE owner in last dword");
// An MCG entry holds max_mcast_qp_attach QPNs after its header.
static_assert(mcg_entry::qpn.offset + kMcgQpSlots * kMcgQpStride == mcg_entry::kSize,
              "MCG entry: QPN slots fill the entry");
// Query outputs are images of register blocks.
static_assert(qp_attr::kSize >= 0x5C, "QP_ATTR");

}  // namespace simnic::hw
