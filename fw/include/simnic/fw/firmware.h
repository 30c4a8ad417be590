// SPDX-License-Identifier: Apache-2.0
// simnic firmware: executes commands (hw-spec.md 5) against the device tables
// (hw-spec.md 9), owns object numbering (10), the GID table and port state
// (2.5, 9.8), and posts the firmware's async events (8).
//
// Transport-free: a command is (context, opcode, input mailbox bytes) ->
// (status, syndrome, output mailbox bytes). run_entry() adds the CMDQ_ENTRY
// protocol of 5.1 on top, given a MailboxIo for the bootstrap domain.
//
// Thread safety: every public method takes one internal lock, so commands of
// all contexts execute one at a time, as on a single management core.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "simnic/base/range_allocator.h"
#include "simnic/fw/interfaces.h"
#include "simnic/fw/table_store.h"
#include "simnic/fw/types.h"
#include "simnic/hw/layout.h"

namespace simnic::fw {

struct AvFields;  // fw/src: the AV fields of one layout

// Firmware detail code reported in CMDQ_ENTRY.syndrome (diagnostic only).
enum class Syndrome : std::uint32_t {
    None = 0,
    // mailbox
    MboxInShort = 1, MboxOutShort = 2, MboxWindow = 3, MboxIo = 4, MboxTooLong = 5,
    // addressing
    BadPort = 10, BadIndex = 11, NoContext = 12,
    // handles
    NoPd = 20, NoCq = 21, NoQp = 22, NoSrq = 23, NoMr = 24, NoAh = 25, NoDomain = 26, NoMw = 27,
    // resources
    TableFull = 30, MttFull = 31,
    // REG_MR
    AccessBits = 40, RemoteNeedsLocalWrite = 41, ZeroLength = 42, Wraps = 43,
    ZeroBasedIova = 44, PageSize = 45, MttCount = 46, MttEntry = 47, OutsideDomain = 48,
    TooLong = 49,
    // queues
    Alignment = 50, QueueSize = 51, Stride = 52, SgeCount = 53, InlineSize = 54,
    SrqLimit = 55, QpType = 56, SrqPd = 57, SrqMask = 59,
    // MODIFY_QP
    MaskNoState = 60, MaskUnknown = 61, MaskUnsupported = 62, AttrMissing = 63,
    AttrNotAllowed = 64, IllegalTransition = 65, CurStateMismatch = 66, SqDraining = 67,
    BadStateValue = 68,
    PathMtu = 70, PkeyIndex = 71, QpAccess = 72, RdAtomic = 73, DestRdAtomic = 74,
    AvNoGrh = 75, AvSgidIndex = 76, AvZeroDgid = 77, AvUnresolved = 78, AvNetType = 79,
    // life cycles
    PdBusy = 80, CqBusy = 81, SrqBusy = 82, DomainBusy = 83, BootDomain = 84, WrongPid = 85,
    ShmHandle = 86, ShmLength = 87, DomainKind = 88,
    CqTooFull = 90, CqCopyFault = 91, SrqTooFull = 100, SrqBelowLimit = 101, SrqError = 102,
    // memory windows, REREG_MR
    MwType = 92, MrHasMw = 93, ReregFlags = 94, ReregTranslation = 95,
    // multicast
    NotMulticast = 96, NotAttached = 97, McgFull = 98, McgAttachFull = 99,
    BadOpcode = 100,
    // on-demand paging (REG_MR, REREG_MR, ADVISE_MR)
    OdpUnsupported = 110, OdpMttMode = 111, OdpDomainKind = 112, OdpImplicit = 113,
    OdpModeChange = 114, NotOnDemand = 115, AdviceValue = 116, AdviceRange = 117, AdviceAccess = 118,
    // FLUSH rights (REG_MR, REREG_MR)
    FlushNotOffered = 120, NotPersistent = 121,
    // MODIFY_CQ
    CqPeriod = 122,
};

struct FwConfig {
    // CAP_BLOCK image (hw-spec.md 2.4) the device advertises; the firmware
    // takes every limit from it. default_cap_block() gives rxe's values.
    std::array<std::uint8_t, hw::cap_block::kSize> cap{};
    std::uint8_t max_mtu = static_cast<std::uint8_t>(hw::Mtu::M4096);
    std::uint32_t gid_tbl_len = hw::caps_default::gid_tbl_len;
};

// Daemon-chosen values (max_ctx, max_domain, ...) are parameters; the rest are
// hw-spec.md 2.4's defaults. The header (type, version, next, length) is set.
struct DeviceLimits {
    std::uint32_t max_ctx = 256;
    std::uint32_t max_domain = 1024;
    std::uint8_t log_max_cmdq = 10;
    std::uint8_t log_max_eq = 12;
    std::uint32_t max_mtt = 1u << 20;
    std::uint32_t max_mbox_len = 0x40 + 8 * 65536;  // REG_MR of 256 MiB in 4 KiB pages
};
std::array<std::uint8_t, hw::cap_block::kSize> default_cap_block(const DeviceLimits& = {});

// Which objects a listing gives: the `limit` smallest numbers above `after`
// (all of them by default), ascending. A listing of a range costs the range,
// not the table: `simnic resource show` pages a list of 100,000 MRs a few
// hundred at a time (control::ResourceDevice). (At namespace scope: its
// member initializers serve Firmware's default arguments.)
struct ListRange {
    std::optional<std::uint32_t> after;
    std::size_t limit = SIZE_MAX;
};

class Firmware {
public:
    // Reads the netdev once (refresh_netdev) to fill the port block and GIDs.
    Firmware(const FwConfig& cfg, TableStore& tables, NetdevInfo& netdev, EventSink& events,
             EngineHooks* engine = nullptr);
    Firmware(const Firmware&) = delete;
    Firmware& operator=(const Firmware&) = delete;

    // ---- contexts (the daemon's handshake, not commands) ----
    // Creates context `ctx_id` for process `pid` with its bootstrap domain
    // (PROCESS kind). NO_RESOURCES if the domain table is full, BAD_PARAM if
    // ctx_id is in use or >= max_ctx.
    hw::CmdStatus open_context(std::uint16_t ctx_id, std::uint32_t pid,
                               std::uint16_t* boot_domain = nullptr);
    // A shared memory object the process passed at the handshake (for
    // ATTACH_DOMAIN kind SHM).
    hw::CmdStatus add_shm_object(std::uint16_t ctx_id, std::uint32_t handle, std::uint64_t size);
    // Releases everything the context owns, in the order of hw-spec.md 2.7
    // (QP, SRQ, AH, MW, MR, CQ, PD, domain), then forgets the context. For a
    // process that died without cleaning up.
    void destroy_context(std::uint16_t ctx_id);
    bool has_context(std::uint16_t ctx_id) const;

    // ---- commands ----
    // Executes one command. `out_len` is the output mailbox length the driver
    // gave; result.out holds result.out_bytes bytes to write back.
    CmdResult execute(std::uint16_t ctx_id, std::uint16_t opcode, const std::uint8_t* in,
                      std::size_t in_len, std::size_t out_len);

    // The command-ring protocol for one CMDQ_ENTRY (hw-spec.md 5.1): checks the
    // mailboxes against the window [mbox_base, mbox_base + mbox_len), reads
    // the input through `io`, executes, writes the output, then syndrome,
    // out_bytes and the status dword (owner = 0) into `entry`, and posts a
    // CMD_COMPLETION EQE if eqe_req is set. Returns the status.
    hw::CmdStatus run_entry(std::uint16_t ctx_id, std::uint8_t* entry, std::size_t entry_len,
                            std::uint64_t mbox_base, std::uint64_t mbox_len, MailboxIo& io);

    // ---- port ----
    // Re-reads the netdev: port state, MTUs, MAC, GID table. Posts PORT_ACTIVE
    // / PORT_ERR on a state change and GID_CHANGE per changed index, to every
    // context. Call it on netdev notifications (or periodically).
    void refresh_netdev();

    // Snapshots of the global blocks the daemon mirrors into BAR0.
    std::array<std::uint8_t, hw::cap_block::kSize> cap_block() const;
    std::array<std::uint8_t, hw::port_block::kSize> port_block() const;
    // ID_BLOCK image (hw-spec.md 2.3) for this port's MAC.
    std::array<std::uint8_t, hw::id_block::kSize> id_block(hw::EngineKind kind,
                                                          std::uint16_t device_index) const;

    // ---- introspection (CLI `resource show`, tests) ----
    struct Counts {
        std::uint32_t qps = 0, cqs = 0, srqs = 0, mrs = 0, pds = 0, ahs = 0, domains = 0,
                      mtts = 0, mws = 0, mcgs = 0, mcg_attach = 0;
    };
    Counts counts() const;
    Counts counts(std::uint16_t ctx_id) const;
    using ListRange = fw::ListRange;
    std::vector<std::uint32_t> qpns(const ListRange& r = {}) const;  // live QPNs

    // Every live object of one kind, ascending by number, as `simnic resource
    // show cq|mr|pd|srq` lists it: what its table entry says, the exact
    // reference counts (which the tables hold saturated or not at all), and
    // the context that owns it with that context's process.
    struct CqListing {
        std::uint32_t cqn = 0;
        std::uint32_t cqe = 0;    // CQEs it holds: 2^log_size - 1, the verbs `cqe`
        std::uint32_t users = 0;  // QP sides (send, receive) that name it
        std::uint16_t ctx_id = 0;
        std::uint32_t pid = 0;
    };
    struct MrListing {
        std::uint32_t mrn = 0;  // MPT index
        std::uint32_t key = 0;  // lkey = rkey
        std::uint64_t iova = 0, length = 0;
        std::uint32_t pdn = 0;
        std::uint16_t access = 0;  // MPT_ENTRY.access
        std::uint16_t ctx_id = 0;
        std::uint32_t pid = 0;
    };
    struct MwListing {
        std::uint32_t mwn = 0;   // MPT index (the window's handle)
        std::uint32_t rkey = 0;  // current rkey
        std::uint8_t type = 0;   // 1 or 2
        std::uint8_t state = 0;  // hw::MwState
        std::uint32_t pdn = 0;
        std::uint32_t mr_key = 0;  // bound MR, 0 if none
        std::uint64_t addr = 0, length = 0;
        std::uint32_t qpn = 0;     // type 2: bound QP
        std::uint16_t ctx_id = 0;
        std::uint32_t pid = 0;
    };
    struct PdListing {
        std::uint32_t pdn = 0;
        std::uint32_t users = 0;  // MRs, QPs, SRQs and AHs that name it
        std::uint16_t ctx_id = 0;
        std::uint32_t pid = 0;
    };
    struct SrqListing {
        std::uint32_t srqn = 0;
        std::uint32_t pdn = 0;
        std::uint32_t max_wr = 0, max_sge = 0;
        std::uint32_t limit = 0;           // as QUERY_SRQ reports it: 0 when not armed
        std::vector<std::uint32_t> qpns;   // QPs that receive through it, ascending
        std::uint16_t ctx_id = 0;
        std::uint32_t pid = 0;
    };
    std::vector<CqListing> cq_list(const ListRange& r = {}) const;
    std::vector<MrListing> mr_list(const ListRange& r = {}) const;
    std::vector<MwListing> mw_list(const ListRange& r = {}) const;
    std::vector<PdListing> pd_list(const ListRange& r = {}) const;
    std::vector<SrqListing> srq_list(const ListRange& r = {}) const;

private:
    struct Ctx {
        std::uint32_t pid = 0;
        std::uint16_t boot_domain = 0;
        std::map<std::uint32_t, std::uint64_t> shm;  // handle -> object size
        std::set<std::uint32_t> qps, cqs, srqs, mrs, mws, pds, ahs, domains;
    };

    // Lowest-free allocator over [lo, hi].
    class LowestFree {
    public:
        LowestFree() = default;
        LowestFree(std::uint32_t lo, std::uint32_t hi) : lo_(lo), hi_(hi), next_(lo) {}
        bool alloc(std::uint32_t& n);
        void free(std::uint32_t n);
        std::uint32_t used() const { return next_ - lo_ - static_cast<std::uint32_t>(freed_.size()); }

    private:
        std::uint32_t lo_ = 1, hi_ = 0, next_ = 1;
        std::set<std::uint32_t> freed_;
    };

    using Out = CmdResult;
    using In = const std::uint8_t*;

    // dispatch
    void dispatch(Ctx& c, std::uint16_t ctx_id, std::uint16_t opcode, In in, std::size_t in_len,
                  std::size_t out_len, Out& r);
    // commands (fw/src/cmd_*.cc)
    void cmd_query_device(Out& r);
    void cmd_query_port(In in, std::size_t n, Out& r);
    void cmd_query_gid(In in, std::size_t n, Out& r);
    void cmd_query_pkey(In in, std::size_t n, Out& r);
    void cmd_attach_domain(Ctx& c, std::uint16_t id, In in, std::size_t n, Out& r);
    void cmd_detach_domain(Ctx& c, In in, std::size_t n, Out& r);
    void cmd_alloc_pd(Ctx& c, std::uint16_t id, Out& r);
    void cmd_dealloc_pd(Ctx& c, In in, std::size_t n, Out& r);
    void cmd_reg_mr(Ctx& c, std::uint16_t id, In in, std::size_t n, Out& r);
    void cmd_dereg_mr(Ctx& c, In in, std::size_t n, Out& r);
    void cmd_alloc_mw(Ctx& c, std::uint16_t id, In in, std::size_t n, Out& r);
    void cmd_dealloc_mw(Ctx& c, In in, std::size_t n, Out& r);
    void cmd_rereg_mr(Ctx& c, In in, std::size_t n, Out& r);
    void cmd_advise_mr(Ctx& c, In in, std::size_t n, Out& r);
    void cmd_create_cq(Ctx& c, std::uint16_t id, In in, std::size_t n, Out& r);
    void cmd_resize_cq(Ctx& c, In in, std::size_t n, Out& r);
    void cmd_destroy_cq(Ctx& c, In in, std::size_t n, Out& r);
    void cmd_modify_cq(Ctx& c, In in, std::size_t n, Out& r);
    void cmd_create_qp(Ctx& c, std::uint16_t id, In in, std::size_t n, Out& r);
    void cmd_modify_qp(Ctx& c, In in, std::size_t n, Out& r);
    void cmd_query_qp(Ctx& c, In in, std::size_t n, Out& r);
    void cmd_destroy_qp(Ctx& c, In in, std::size_t n, Out& r);
    void cmd_create_srq(Ctx& c, std::uint16_t id, In in, std::size_t n, Out& r);
    void cmd_modify_srq(Ctx& c, In in, std::size_t n, Out& r);
    void cmd_query_srq(Ctx& c, In in, std::size_t n, Out& r);
    void cmd_destroy_srq(Ctx& c, In in, std::size_t n, Out& r);
    void cmd_create_ah(Ctx& c, std::uint16_t id, In in, std::size_t n, Out& r);
    void cmd_destroy_ah(Ctx& c, In in, std::size_t n, Out& r);
    bool mcast_args(Ctx& c, In in, std::size_t n, Out& r, std::uint32_t& qpn,
                    std::array<std::uint8_t, 16>& mgid);
    void cmd_attach_mcast(Ctx& c, In in, std::size_t n, Out& r);
    void cmd_detach_mcast(Ctx& c, In in, std::size_t n, Out& r);

    // object teardown without checks (commands and destroy_context)
    void destroy_qp(Ctx& c, std::uint32_t qpn);
    void destroy_srq(Ctx& c, std::uint32_t srqn);
    void destroy_ah(Ctx& c, std::uint32_t ahn);
    // Takes `qpn` out of MCG entry `mcg` (freeing the entry when it was the
    // last QP); and out of every group it is in (DESTROY_QP).
    void mcg_remove(std::uint32_t mcg, std::uint32_t qpn);
    void mcg_drop_qp(std::uint32_t qpn);
    void dereg_mr(Ctx& c, std::uint32_t index);
    void dealloc_mw(Ctx& c, std::uint32_t index);
    // A destroyed QP's type 2 windows stay bound but grant nothing (bound_qpn 0).
    void orphan_mws(Ctx& c, std::uint32_t qpn);
    void destroy_cq(Ctx& c, std::uint32_t cqn);
    void dealloc_pd(Ctx& c, std::uint32_t pdn);
    void detach_domain(Ctx& c, std::uint32_t dom);

    // helpers (fw/src/firmware.cc)
    std::uint64_t cap(hw::Field f) const { return hw::get(cfg_.cap.data(), cfg_.cap.size(), f); }
    std::uint8_t* ent(Table t, std::uint32_t idx) { return tables_.entry(t, idx); }
    bool owns_pd(const Ctx& c, std::uint32_t pdn) const { return c.pds.count(pdn) != 0; }
    // Domain checks for queue memory / MR pages: BAD_DOMAIN if not attached
    // to this context, BAD_PARAM if [addr, addr + len) wraps or leaves an SHM
    // mapping.
    // REG_MR and REREG_MR: a FLUSH right the device does not advertise in
    // CAP_BLOCK.device_cap_flags is NOT_SUPPORTED (ib_check_mr_access).
    bool check_flush_offered(std::uint32_t access, Out& r);
    // REG_MR of an on-demand MR (hw-spec 5.6.5): the rules beyond a pinned one's.
    bool check_on_demand(std::uint32_t dom, bool mtt_mode, bool zero_based, std::uint64_t iova,
                         std::uint64_t length, std::uint64_t host, Out& r);
    bool check_range(const Ctx& c, std::uint32_t dom, std::uint64_t addr, std::uint64_t len,
                     Out& r);
    void pd_ref(std::uint32_t pdn, int delta);
    void cq_ref(std::uint32_t cqn, int delta);
    void fence(Table t, std::uint32_t i) { if (engine_) engine_->fence(t, i); }
    void unfence(Table t, std::uint32_t i) { if (engine_) engine_->unfence(t, i); }
    void post_event(std::uint16_t ctx_id, hw::EventType type, std::uint32_t obj,
                    std::uint32_t aux = 0, std::uint32_t token = 0, std::uint8_t status = 0);
    void post_event_all(hw::EventType type, std::uint32_t obj, std::uint32_t aux = 0);
    // AV (hw-spec.md 5.6.7): validates the AV in `in` (fields `src`), resolves
    // dmac and net_type, and writes the complete AV into `dst` entry fields.
    bool apply_av(In in, std::size_t n, const AvFields& src, std::uint8_t* dst,
                  std::size_t dst_len, const AvFields& dfields, Out& r);
    bool alloc_qpn(std::uint32_t& qpn);
    void refresh_locked();

    FwConfig cfg_;
    TableStore& tables_;
    NetdevInfo& netdev_;
    EventSink& events_;
    EngineHooks* engine_;
    mutable std::mutex mu_;

    std::map<std::uint16_t, Ctx> ctxs_;
    std::array<std::uint8_t, hw::port_block::kSize> port_{};
    bool port_known_ = false;

    LowestFree cqn_, srqn_, pdn_, mpt_, mw_, ahn_, dom_;
    base::RangeAllocator<std::uint32_t> mtt_;  // contiguous runs of MTT entries, first fit
    std::uint32_t qpn_lo_ = hw::kFirstUserQpn, qpn_hi_ = 0, qpn_last_ = 0, live_qps_ = 0;
    // Exact reference counts the tables hold only saturated or not at all.
    std::unordered_map<std::uint32_t, std::uint32_t> cq_refs_, srq_refs_, dom_refs_;
    std::unordered_map<std::uint32_t, std::uint32_t> mr_mtt_;  // MPT index -> MTT count
    // Multicast groups (hw-spec.md 9.10): MGID -> MCG number, the groups
    // each QP is in, and the attachments over all groups.
    LowestFree mcgn_;
    std::map<std::array<std::uint8_t, 16>, std::uint32_t> mcg_by_gid_;
    std::unordered_map<std::uint32_t, std::set<std::uint32_t>> qp_mcgs_;
    std::uint32_t mcg_attach_ = 0;
};

}  // namespace simnic::fw
