#include "simnic/transport/mw.h"

namespace simnic::transport {

namespace {
// [a, a + n) inside [lo, lo + size), without wrap.
bool inside(uint64_t a, uint64_t n, uint64_t lo, uint64_t size) {
    return a >= lo && a + n >= a && a + n <= lo + size && lo + size >= lo;
}
}  // namespace

MemStatus check_bind(const MwRecord& mw, const MrFacts* mr, const MwBind& b, const MwQp& qp) {
    if (mw.state == hw::MwState::Invalid || mw.rkey != b.mw_rkey) return MemStatus::BadKey;
    // rxe looks the MR up before anything else, and only for a real range.
    if (b.length != 0 && (mr == nullptr || mr->lkey != b.mr_lkey)) return MemStatus::BadKey;
    if (b.length == 0) mr = nullptr;
    if (b.access & ~kMwBindAccessMask) return MemStatus::NoPermission;
    const bool zb = (b.access & hw::access::kZeroBased) != 0;
    if (mw.type == hw::MwType::Type1) {
        // A type 1 window is rebound (or unbound) in place, never zero-based
        // (o10-36.2.2).
        if (mw.state != hw::MwState::Valid) return MemStatus::BadKey;
        if (zb) return MemStatus::NoPermission;
    } else {
        if (mw.state != hw::MwState::Free) return MemStatus::BadKey;  // o10-37.2.30
        if (qp.pdn != mw.pdn) return MemStatus::NoPermission;         // C10-72
        if (mr == nullptr) return MemStatus::OutOfBounds;             // o10-37.2.40
    }
    if (mr == nullptr) return MemStatus::Ok;  // a type 1 unbind
    if (mr->zero_based) return MemStatus::NoPermission;
    if (!(mr->access & hw::access::kMwBind)) return MemStatus::NoPermission;  // C10-73
    const bool remote_writes = (b.access & (hw::access::kRemoteWrite | hw::access::kRemoteAtomic)) != 0;
    if (remote_writes && !(mr->access & hw::access::kLocalWrite))
        return MemStatus::NoPermission;                                   // C10-74
    if (zb) {                                                             // C10-75
        if (b.length > mr->length) return MemStatus::OutOfBounds;
    } else if (!inside(b.addr, b.length, mr->iova, mr->length)) {
        return MemStatus::OutOfBounds;
    }
    return MemStatus::Ok;
}

void apply_bind(MwRecord& mw, const MwBind& b, const MwQp& qp) {
    mw.rkey = (mw.rkey & ~0xFFu) | (b.new_rkey & 0xFFu);
    mw.access = b.access & kMwRights;
    mw.zero_based = (b.access & hw::access::kZeroBased) != 0;
    mw.state = hw::MwState::Valid;
    mw.addr = b.addr;
    mw.length = b.length;
    mw.mr_key = b.length != 0 ? b.mr_lkey : 0;
    mw.qpn = mw.type == hw::MwType::Type2 ? qp.qpn : 0;
}

MemStatus check_invalidate(const MwRecord& mw, uint32_t rkey) {
    if (mw.state == hw::MwState::Invalid || mw.rkey != rkey) return MemStatus::BadKey;
    if (mw.type == hw::MwType::Type1) return MemStatus::NoPermission;  // o10-37.2.26
    return MemStatus::Ok;
}

void apply_invalidate(MwRecord& mw) {
    mw.state = hw::MwState::Free;
    mw.qpn = 0;
    mw.mr_key = 0;
    mw.addr = 0;
    mw.length = 0;
    mw.access = 0;
    mw.zero_based = false;
}

MemStatus window_access(const MwRecord& mw, uint32_t rkey, const MwQp& qp, uint64_t va,
                        uint64_t len, uint32_t access, uint64_t& mr_va) {
    // rxe_lookup_mw: key, PD, the bound QP for type 2, something bound, VALID.
    if (mw.state != hw::MwState::Valid || mw.rkey != rkey || mw.pdn != qp.pdn || mw.length == 0 ||
        mw.mr_key == 0 || (mw.type == hw::MwType::Type2 && mw.qpn != qp.qpn))
        return MemStatus::BadKey;
    if ((mw.access & access) != access) return MemStatus::NoPermission;
    // The window's own range (the IBA's rule; rxe 6.1 checks only the MR's).
    if (mw.zero_based) {
        if (!inside(va, len, 0, mw.length) || mw.addr + va < mw.addr) return MemStatus::OutOfBounds;
        mr_va = mw.addr + va;
    } else {
        if (!inside(va, len, mw.addr, mw.length)) return MemStatus::OutOfBounds;
        mr_va = va;
    }
    return MemStatus::Ok;
}

}  // namespace simnic::transport
