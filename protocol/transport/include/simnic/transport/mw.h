// Memory windows: the rules of binding, invalidating and using them
// (IBA 10.6.7, as rxe_mw.c applies them), on plain records.
//
// The core knows no table layout, so these functions take the facts an
// engine reads from its MPT (hw-spec 9.5) and say what is allowed; the engine
// stores the result. Both engines and the transport test bench use them, so
// one set of rules decides every bind, invalidate and windowed access.
#pragma once

#include <cstdint>

#include "simnic/hw/layout.h"
#include "simnic/transport/env.h"

namespace simnic::transport {

// One window as its MPT entry holds it (hw::MwType is the verbs' ibv_mw_type,
// hw::MwState the MPT's, rxe's rxe_mw_state).
struct MwRecord {
    hw::MwType type = hw::MwType::Type1;
    hw::MwState state = hw::MwState::Invalid;
    uint32_t rkey = 0;    // current key: the index never changes, binds change the key byte
    uint32_t pdn = 0;
    uint32_t qpn = 0;     // type 2: the QP it is bound to
    uint32_t mr_key = 0;  // the MR it is bound to; 0 when unbound
    uint64_t addr = 0;    // first bound address, in the MR's IOVA space
    uint64_t length = 0;  // 0: nothing bound
    uint32_t access = 0;  // hw::access rights granted by the bind
    bool zero_based = false;
};

// What a bind needs to know of the MR it names.
struct MrFacts {
    uint32_t lkey = 0;
    uint64_t iova = 0;
    uint64_t length = 0;
    uint32_t access = 0;  // hw::access, kMwBind included
    bool zero_based = false;
};

// The QP a bind runs on, or a request arrives at.
struct MwQp {
    uint32_t qpn = 0;
    uint32_t pdn = 0;
};

// BIND_SEG.access bits a bind accepts: rxe's RXE_ACCESS_SUPPORTED_MW without
// the features simnic lacks (on-demand paging, flush). LOCAL_WRITE and
// MW_BIND mean nothing for a window but are not refused, as in rxe.
inline constexpr uint32_t kMwBindAccessMask = hw::access::kLocalWrite | hw::access::kRemoteWrite |
                                              hw::access::kRemoteRead | hw::access::kRemoteAtomic |
                                              hw::access::kMwBind | hw::access::kZeroBased;
// The rights a window grants (what MPT_ENTRY.access keeps for it).
inline constexpr uint32_t kMwRights = hw::access::kRemote;

// The checks of a BIND_MW (rxe_bind_mw + rxe_check_bind_mw). `mr` is null
// when the bind names no MR (length 0) or when the MR key names no valid MR
// of the QP's context; the caller finds the window by b.mw_rkey's index.
// Ok, or why the bind fails (every failure completes with MW_BIND_ERR).
MemStatus check_bind(const MwRecord& mw, const MrFacts* mr, const MwBind& b, const MwQp& qp);
// Apply a bind that check_bind allowed. The caller moves the MR's count of
// bound windows from the old mw.mr_key (read before) to the new one.
void apply_bind(MwRecord& mw, const MwBind& b, const MwQp& qp);

// LOCAL_INV or SEND_WITH_INV of a window (rxe_invalidate_mw). Ok when it
// may be invalidated (a FREE type 2 window included, which changes nothing).
MemStatus check_invalidate(const MwRecord& mw, uint32_t rkey);
// Unbind a window check_invalidate allowed: FREE, nothing bound. The caller
// drops the MR's count if mw.mr_key was set.
void apply_invalidate(MwRecord& mw);

// A remote access (RDMA READ/WRITE, atomic) through a window: `access` is the
// right asked for. On Ok, `mr_va` is the address of `va` in the MR's IOVA
// space and [mr_va, mr_va + len) is inside the window.
MemStatus window_access(const MwRecord& mw, uint32_t rkey, const MwQp& qp, uint64_t va,
                        uint64_t len, uint32_t access, uint64_t& mr_va);

}  // namespace simnic::transport
