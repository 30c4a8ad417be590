// SPDX-License-Identifier: Apache-2.0
// simnic firmware: queries, domains, PDs, MRs, CQs, SRQs and AHs
// (hw-spec.md 5.6.2 - 5.6.6, 5.6.8, 5.6.9).
#include <algorithm>
#include <optional>

#include "fw_internal.h"
#include "simnic/fw/gid.h"
#include "simnic/hw/wqe.h"
#include "simnic/roce/neighbour.h"

namespace simnic::fw {

namespace cb = hw::cap_block;
using hw::CmdStatus;

namespace {
std::uint32_t handle_of(const std::uint8_t* in, std::size_t n) {
    return static_cast<std::uint32_t>(hw::get(in, n, hw::cmd_handle::handle));
}
void out_handle(CmdResult& r, std::uint32_t h) {
    put(r.out.data(), r.out.size(), hw::cmd_handle::handle, h);
    r.out_bytes = hw::cmd_handle::kSize;
}
}  // namespace

// ---------------------------------------------------------------------------
// Queries (5.6.2)
// ---------------------------------------------------------------------------
void Firmware::cmd_query_device(Out& r) {
    std::copy(cfg_.cap.begin(), cfg_.cap.end(), r.out.begin());
    r.out_bytes = hw::cap_block::kSize;
}

void Firmware::cmd_query_port(In in, std::size_t n, Out& r) {
    if (hw::get(in, n, hw::cmd_query_port_in::port_num) != 1) {
        fail(r, CmdStatus::NoObject, Syndrome::BadPort);
        return;
    }
    std::copy(port_.begin(), port_.end(), r.out.begin());
    r.out_bytes = hw::port_block::kSize;
}

void Firmware::cmd_query_gid(In in, std::size_t n, Out& r) {
    namespace q = hw::cmd_query_gid_in;
    if (hw::get(in, n, q::port_num) != 1) {
        fail(r, CmdStatus::BadParam, Syndrome::BadPort);
        return;
    }
    const auto idx = static_cast<std::uint32_t>(hw::get(in, n, q::index));
    std::uint8_t* e = idx < cfg_.gid_tbl_len ? ent(Table::Gid, idx) : nullptr;
    if (e == nullptr) {
        fail(r, CmdStatus::BadParam, Syndrome::BadIndex);
        return;
    }
    std::copy(e, e + hw::gid_entry::kSize, r.out.begin());
    r.out_bytes = hw::gid_entry::kSize;
}

void Firmware::cmd_query_pkey(In in, std::size_t n, Out& r) {
    namespace q = hw::cmd_query_pkey_in;
    if (hw::get(in, n, q::port_num) != 1) {
        fail(r, CmdStatus::BadParam, Syndrome::BadPort);
        return;
    }
    if (hw::get(in, n, q::index) >= hw::caps_default::pkey_tbl_len) {
        fail(r, CmdStatus::BadParam, Syndrome::BadIndex);
        return;
    }
    put(r.out.data(), r.out.size(), hw::cmd_query_pkey_out::pkey, 0xFFFF);
    r.out_bytes = hw::cmd_query_pkey_out::kSize;
}

// ---------------------------------------------------------------------------
// Domains (5.6.3)
// ---------------------------------------------------------------------------
void Firmware::cmd_attach_domain(Ctx& c, std::uint16_t id, In in, std::size_t n, Out& r) {
    namespace a = hw::cmd_attach_domain_in;
    namespace de = hw::domain_entry;
    const auto kind = hw::get(in, n, a::kind);
    const std::uint64_t base = hw::get(in, n, a::map_base), len = hw::get(in, n, a::map_len);
    const auto handle = static_cast<std::uint32_t>(hw::get(in, n, a::shm_handle));
    if (kind == static_cast<std::uint8_t>(hw::DomainKind::Process)) {
        if (hw::get(in, n, a::pid) != c.pid) {
            fail(r, CmdStatus::Perm, Syndrome::WrongPid);
            return;
        }
    } else if (kind == static_cast<std::uint8_t>(hw::DomainKind::Shm)) {
        auto it = c.shm.find(handle);
        if (it == c.shm.end()) {
            fail(r, CmdStatus::BadDomain, Syndrome::ShmHandle);
            return;
        }
        if (len == 0 || len > it->second) {
            fail(r, CmdStatus::BadParam, Syndrome::ShmLength);
            return;
        }
        if (base + (len - 1) < base) {
            fail(r, CmdStatus::BadParam, Syndrome::Wraps);
            return;
        }
    } else {
        fail(r, CmdStatus::BadParam, Syndrome::DomainKind);
        return;
    }
    std::uint32_t d = 0;
    if (!dom_.alloc(d)) {
        fail(r, CmdStatus::NoResources, Syndrome::TableFull);
        return;
    }
    Entry e(ent(Table::Domain, d), Table::Domain);
    e.clear();
    e.set(de::ctx_id, id);
    e.set(de::kind, kind);
    if (kind == static_cast<std::uint8_t>(hw::DomainKind::Process)) {
        e.set(de::pid, c.pid);
    } else {
        e.set(de::shm_handle, handle);
        e.set(de::map_base, base);
        e.set(de::map_len, len);
    }
    e.set(de::valid, 1);
    c.domains.insert(d);
    out_handle(r, d);
}

void Firmware::cmd_detach_domain(Ctx& c, In in, std::size_t n, Out& r) {
    const std::uint32_t d = handle_of(in, n);
    if (c.domains.count(d) == 0) {
        fail(r, CmdStatus::NoObject, Syndrome::NoDomain);
        return;
    }
    if (d == c.boot_domain) {
        fail(r, CmdStatus::Perm, Syndrome::BootDomain);
        return;
    }
    if (dom_refs_.count(d)) {
        fail(r, CmdStatus::Busy, Syndrome::DomainBusy);
        return;
    }
    detach_domain(c, d);
}

void Firmware::detach_domain(Ctx& c, std::uint32_t d) {
    fence(Table::Domain, d);
    Entry(ent(Table::Domain, d), Table::Domain).clear();
    unfence(Table::Domain, d);
    dom_refs_.erase(d);
    c.domains.erase(d);
    dom_.free(d);
}

// ---------------------------------------------------------------------------
// PDs (5.6.4)
// ---------------------------------------------------------------------------
void Firmware::cmd_alloc_pd(Ctx& c, std::uint16_t id, Out& r) {
    std::uint32_t pdn = 0;
    if (!pdn_.alloc(pdn)) {
        fail(r, CmdStatus::NoResources, Syndrome::TableFull);
        return;
    }
    Entry e(ent(Table::Pd, pdn), Table::Pd);
    e.clear();
    e.set(hw::pd_entry::ctx_id, id);
    e.set(hw::pd_entry::valid, 1);
    c.pds.insert(pdn);
    out_handle(r, pdn);
}

void Firmware::cmd_dealloc_pd(Ctx& c, In in, std::size_t n, Out& r) {
    const std::uint32_t pdn = handle_of(in, n);
    if (!owns_pd(c, pdn)) {
        fail(r, CmdStatus::NoObject, Syndrome::NoPd);
        return;
    }
    if (Entry(ent(Table::Pd, pdn), Table::Pd)[hw::pd_entry::refcnt] != 0) {
        fail(r, CmdStatus::Busy, Syndrome::PdBusy);
        return;
    }
    dealloc_pd(c, pdn);
}

void Firmware::dealloc_pd(Ctx& c, std::uint32_t pdn) {
    Entry(ent(Table::Pd, pdn), Table::Pd).clear();
    c.pds.erase(pdn);
    pdn_.free(pdn);
}

// ---------------------------------------------------------------------------
// MRs (5.6.5)
// ---------------------------------------------------------------------------
void Firmware::cmd_reg_mr(Ctx& c, std::uint16_t id, In in, std::size_t n, Out& r) {
    namespace m = hw::cmd_reg_mr_in;
    namespace me = hw::mpt_entry;
    namespace acc = hw::access;
    const auto pdn = static_cast<std::uint32_t>(hw::get(in, n, m::pdn));
    const auto access_in = static_cast<std::uint32_t>(hw::get(in, n, m::access));
    const bool on_demand = (access_in & acc::kOnDemand) != 0;
    const std::uint32_t access = access_in & ~std::uint32_t{acc::kOnDemand};
    const auto log_ps = static_cast<std::uint32_t>(hw::get(in, n, m::log_page_size));
    const bool mtt_mode = hw::get(in, n, m::mtt_mode) != 0;
    const bool zero_based = hw::get(in, n, m::zero_based) != 0;
    const auto dom = static_cast<std::uint32_t>(hw::get(in, n, m::domain_id));
    const std::uint64_t iova = hw::get(in, n, m::iova), length = hw::get(in, n, m::length);
    const std::uint64_t host = hw::get(in, n, m::host_addr);
    const auto mtt_count = static_cast<std::uint32_t>(hw::get(in, n, m::mtt_count));

    if ((access & ~acc::kMrAccess) != 0) {
        fail(r, CmdStatus::BadParam, Syndrome::AccessBits);
        return;
    }
    if ((access & (acc::kRemoteWrite | acc::kRemoteAtomic)) != 0 && (access & acc::kLocalWrite) == 0) {
        fail(r, CmdStatus::BadParam, Syndrome::RemoteNeedsLocalWrite);
        return;
    }
    if (!check_flush_offered(access, r)) return;
    // rxe_mr_init_user: FLUSH_PERSISTENT only over persistent memory (pmem
    // pages), else EINVAL. No memory a simnic device reaches is persistent.
    if (access & acc::kFlushPersistent) {
        fail(r, CmdStatus::BadParam, Syndrome::NotPersistent);
        return;
    }
    if (length == 0) {
        fail(r, CmdStatus::BadParam, Syndrome::ZeroLength);
        return;
    }
    if (iova + (length - 1) < iova) {
        fail(r, CmdStatus::BadParam, Syndrome::Wraps);
        return;
    }
    if (length > cap(cb::max_mr_size)) {
        fail(r, CmdStatus::BadParam, Syndrome::TooLong);
        return;
    }
    if (zero_based && iova != 0) {
        fail(r, CmdStatus::BadParam, Syndrome::ZeroBasedIova);
        return;
    }

    if (!owns_pd(c, pdn)) {
        fail(r, CmdStatus::NoObject, Syndrome::NoPd);
        return;
    }
    if (dom == 0 || c.domains.count(dom) == 0) {
        fail(r, CmdStatus::BadDomain, Syndrome::NoDomain);
        return;
    }
    if (on_demand && !check_on_demand(dom, mtt_mode, zero_based, iova, length, host, r)) return;
    std::uint64_t page = 0;
    if (!mtt_mode) {
        if (!check_range(c, dom, host, length, r)) return;
    } else {
        if (log_ps < 12 || log_ps > 31 || ((cap(cb::page_size_cap) >> log_ps) & 1) == 0) {
            fail(r, CmdStatus::BadParam, Syndrome::PageSize);
            return;
        }
        page = pow2(log_ps);
        const std::uint64_t first = iova & ~(page - 1);
        const std::uint64_t last = (iova + (length - 1)) & ~(page - 1);
        const std::uint64_t pages = ((last - first) >> log_ps) + 1;
        if (pages != mtt_count) {
            fail(r, CmdStatus::BadParam, Syndrome::MttCount);
            return;
        }
        if (n < std::uint64_t{hw::cmd_reg_mr_in::kSize} + std::uint64_t{mtt_count} * hw::mtt_entry::kSize) {
            fail(r, CmdStatus::BadMbox, Syndrome::MboxInShort);
            return;
        }
        for (std::uint32_t i = 0; i < mtt_count; ++i) {
            const std::uint8_t* me_in = in + hw::cmd_reg_mr_in::kSize + std::size_t{i} * hw::mtt_entry::kSize;
            const std::uint64_t pa = hw::get(me_in, hw::mtt_entry::kSize, hw::mtt_entry::page_addr);
            if (pa == 0 || (pa & (page - 1)) != 0) {
                fail(r, CmdStatus::BadParam, Syndrome::MttEntry);
                return;
            }
            if (!check_range(c, dom, pa, page, r)) return;
        }
    }
    std::uint32_t idx = 0, mtt_base = 0;
    if (mtt_mode) {
        const std::optional<std::uint32_t> run = mtt_.alloc(mtt_count);
        if (!run) {
            fail(r, CmdStatus::NoResources, Syndrome::MttFull);
            return;
        }
        mtt_base = *run;
    }
    if (!mpt_.alloc(idx)) {
        if (mtt_mode) mtt_.free(mtt_base, mtt_count);
        fail(r, CmdStatus::NoResources, Syndrome::TableFull);
        return;
    }
    if (mtt_mode) {
        for (std::uint32_t i = 0; i < mtt_count; ++i) {
            const std::uint8_t* me_in = in + hw::cmd_reg_mr_in::kSize + std::size_t{i} * hw::mtt_entry::kSize;
            Entry t(ent(Table::Mtt, mtt_base + i), Table::Mtt);
            t.set(hw::mtt_entry::page_addr, hw::get(me_in, hw::mtt_entry::kSize, hw::mtt_entry::page_addr));
        }
        mr_mtt_[idx] = mtt_count;
    }
    fence(Table::Mpt, idx);
    Entry e(ent(Table::Mpt, idx), Table::Mpt);
    // The key byte advances on every registration into the slot (hw-spec.md 10).
    const auto key_byte = static_cast<std::uint8_t>(hw::key_byte(static_cast<std::uint32_t>(e[me::key])) + 1);
    const std::uint32_t key = hw::make_key(idx, key_byte);
    e.clear();
    e.set(me::key, key);
    e.set(me::pdn, pdn);
    e.set(me::mtt_mode, mtt_mode);
    e.set(me::zero_based, zero_based);
    e.set(me::on_demand, on_demand);
    e.set(me::access, access);
    e.set(me::log_page_size, mtt_mode ? log_ps : 0);
    e.set(me::domain_id, dom);
    e.set(me::ctx_id, id);
    e.set(me::iova_start, iova);
    e.set(me::length, length);
    e.set(me::host_addr, mtt_mode ? 0 : host);
    e.set(me::mtt_base, mtt_mode ? mtt_base : 0);
    e.set(me::mtt_count, mtt_mode ? mtt_count : 0);
    e.set(me::valid, 1);
    unfence(Table::Mpt, idx);
    pd_ref(pdn, +1);
    ++dom_refs_[dom];
    c.mrs.insert(idx);
    put(r.out.data(), r.out.size(), hw::cmd_reg_mr_out::lkey, key);
    put(r.out.data(), r.out.size(), hw::cmd_reg_mr_out::rkey, key);
    r.out_bytes = hw::cmd_reg_mr_out::kSize;
}

void Firmware::cmd_dereg_mr(Ctx& c, In in, std::size_t n, Out& r) {
    const std::uint32_t key = handle_of(in, n);
    const std::uint32_t idx = hw::key_index(key);
    if (c.mrs.count(idx) == 0 ||
        Entry(ent(Table::Mpt, idx), Table::Mpt)[hw::mpt_entry::key] != key) {
        fail(r, CmdStatus::NoObject, Syndrome::NoMr);
        return;
    }
    // IBA 10.6.7.2.6: not while windows are bound to it (rxe: EINVAL). The
    // engine counts binds, so read the count under the fence.
    fence(Table::Mpt, idx);
    const bool bound = Entry(ent(Table::Mpt, idx), Table::Mpt)[hw::mpt_entry::mw_count] != 0;
    unfence(Table::Mpt, idx);
    if (bound) {
        fail(r, CmdStatus::MwBound, Syndrome::MrHasMw);
        return;
    }
    dereg_mr(c, idx);
}

void Firmware::dereg_mr(Ctx& c, std::uint32_t idx) {
    namespace me = hw::mpt_entry;
    fence(Table::Mpt, idx);
    if (engine_) engine_->mr_deregistering(idx);
    Entry e(ent(Table::Mpt, idx), Table::Mpt);
    const auto key = static_cast<std::uint32_t>(e[me::key]);
    const auto pdn = static_cast<std::uint32_t>(e[me::pdn]);
    const auto dom = static_cast<std::uint32_t>(e[me::domain_id]);
    const auto mtt_base = static_cast<std::uint32_t>(e[me::mtt_base]);
    e.clear();
    e.set(me::key, key);  // kept so the next registration advances the key byte
    unfence(Table::Mpt, idx);
    auto it = mr_mtt_.find(idx);
    if (it != mr_mtt_.end()) {
        for (std::uint32_t i = 0; i < it->second; ++i)
            Entry(ent(Table::Mtt, mtt_base + i), Table::Mtt).clear();
        mtt_.free(mtt_base, it->second);
        mr_mtt_.erase(it);
    }
    pd_ref(pdn, -1);
    if (--dom_refs_[dom] == 0) dom_refs_.erase(dom);
    c.mrs.erase(idx);
    mpt_.free(idx);
}

// ---------------------------------------------------------------------------
// CQs (5.6.6)
// ---------------------------------------------------------------------------
namespace {
bool cq_size_ok(std::uint64_t log, std::uint64_t max_cqe, CmdResult& r) {
    if (log < 1) return fail(r, CmdStatus::BadParam, Syndrome::QueueSize);
    if (pow2(log) > max_cqe + 1) return fail(r, CmdStatus::ExceedsCap, Syndrome::QueueSize);
    return true;
}
}  // namespace

void Firmware::cmd_create_cq(Ctx& c, std::uint16_t id, In in, std::size_t n, Out& r) {
    namespace q = hw::cmd_create_cq_in;
    namespace cc = hw::cqc;
    const std::uint64_t log = hw::get(in, n, q::log_size);
    const auto dom = static_cast<std::uint32_t>(hw::get(in, n, q::domain_id));
    const std::uint64_t base = hw::get(in, n, q::base);
    if (!cq_size_ok(log, cap(cb::max_cqe), r)) return;
    if (base % hw::kCqeSize != 0) {
        fail(r, CmdStatus::BadParam, Syndrome::Alignment);
        return;
    }
    if (!check_range(c, dom, base, pow2(log) * hw::kCqeSize, r)) return;
    std::uint32_t cqn = 0;
    if (!cqn_.alloc(cqn)) {
        fail(r, CmdStatus::NoResources, Syndrome::TableFull);
        return;
    }
    fence(Table::Cqc, cqn);
    Entry e(ent(Table::Cqc, cqn), Table::Cqc);
    e.clear();
    e.set(cc::cqn, cqn);
    e.set(cc::log_size, log);
    e.set(cc::ctx_id, id);
    e.set(cc::domain_id, dom);
    e.set(cc::base, base);
    unfence(Table::Cqc, cqn);
    ++dom_refs_[dom];
    c.cqs.insert(cqn);
    out_handle(r, cqn);
}

void Firmware::cmd_resize_cq(Ctx& c, In in, std::size_t n, Out& r) {
    namespace q = hw::cmd_resize_cq_in;
    namespace cc = hw::cqc;
    const auto cqn = static_cast<std::uint32_t>(hw::get(in, n, q::cqn));
    const std::uint64_t log = hw::get(in, n, q::log_size);
    const auto dom = static_cast<std::uint32_t>(hw::get(in, n, q::domain_id));
    const std::uint64_t base = hw::get(in, n, q::base);
    if (c.cqs.count(cqn) == 0) {
        fail(r, CmdStatus::NoObject, Syndrome::NoCq);
        return;
    }
    if (!cq_size_ok(log, cap(cb::max_cqe), r)) return;
    if (base % hw::kCqeSize != 0) {
        fail(r, CmdStatus::BadParam, Syndrome::Alignment);
        return;
    }
    if (!check_range(c, dom, base, pow2(log) * hw::kCqeSize, r)) return;
    fence(Table::Cqc, cqn);
    Entry e(ent(Table::Cqc, cqn), Table::Cqc);
    const auto pi = static_cast<std::uint32_t>(e[cc::pi]), ci = static_cast<std::uint32_t>(e[cc::ci]);
    if (hw::ring_used(pi, ci) >= pow2(log)) {
        // A ring of 2^n slots holds 2^n - 1 CQEs (hw-spec 7.2, as rxe's
        // queue). A size the waiting CQEs do not fit in is a bad parameter,
        // not a transient state: rxe's resize_finish answers EINVAL.
        unfence(Table::Cqc, cqn);
        fail(r, CmdStatus::BadParam, Syndrome::CqTooFull);
        return;
    }
    if (engine_ && !engine_->cq_copy_entries(e.p, static_cast<std::uint16_t>(dom), base,
                                             static_cast<std::uint8_t>(log))) {
        unfence(Table::Cqc, cqn);
        fail(r, CmdStatus::BadDomain, Syndrome::CqCopyFault);
        return;
    }
    const auto old_dom = static_cast<std::uint32_t>(e[cc::domain_id]);
    e.set(cc::log_size, log);
    e.set(cc::domain_id, dom);
    e.set(cc::base, base);
    unfence(Table::Cqc, cqn);
    ++dom_refs_[dom];
    if (--dom_refs_[old_dom] == 0) dom_refs_.erase(old_dom);
}

void Firmware::cmd_destroy_cq(Ctx& c, In in, std::size_t n, Out& r) {
    const std::uint32_t cqn = handle_of(in, n);
    if (c.cqs.count(cqn) == 0) {
        fail(r, CmdStatus::NoObject, Syndrome::NoCq);
        return;
    }
    if (cq_refs_.count(cqn)) {
        fail(r, CmdStatus::Busy, Syndrome::CqBusy);
        return;
    }
    destroy_cq(c, cqn);
}

// MODIFY_CQ: the CQ's interrupt moderation (ibv_modify_cq). The checks are
// the ones an application meets on mlx5: libibverbs refuses a mask with an
// unknown bit and the kernel an empty one (EINVAL both), mlx5_ib a period
// above MLX5_MAX_CQ_PERIOD (EINVAL). The engine reads the fields when it
// writes a CQE of the CQ, so the fence orders the change against them.
void Firmware::cmd_modify_cq(Ctx& c, In in, std::size_t n, Out& r) {
    namespace q = hw::cmd_modify_cq_in;
    namespace cc = hw::cqc;
    const auto cqn = static_cast<std::uint32_t>(hw::get(in, n, q::cqn));
    const std::uint64_t mask = hw::get(in, n, q::attr_mask);
    const std::uint64_t count = hw::get(in, n, q::cq_count);
    const std::uint64_t period = hw::get(in, n, q::cq_period);
    if (c.cqs.count(cqn) == 0) {
        fail(r, CmdStatus::NoObject, Syndrome::NoCq);
        return;
    }
    if (mask == 0 || (mask & ~std::uint64_t(hw::cq_attr_mask::kAll)) != 0) {
        fail(r, CmdStatus::BadAttrMask, Syndrome::MaskUnknown);
        return;
    }
    if (period > hw::kMaxCqPeriodUs) {
        fail(r, CmdStatus::BadParam, Syndrome::CqPeriod);
        return;
    }
    fence(Table::Cqc, cqn);
    Entry e(ent(Table::Cqc, cqn), Table::Cqc);
    e.set(cc::mod_count, count);
    e.set(cc::mod_period, period);
    e.set(cc::mod_en, 1);
    unfence(Table::Cqc, cqn);
}

void Firmware::destroy_cq(Ctx& c, std::uint32_t cqn) {
    fence(Table::Cqc, cqn);
    if (engine_) engine_->cq_destroying(cqn);
    Entry e(ent(Table::Cqc, cqn), Table::Cqc);
    const auto dom = static_cast<std::uint32_t>(e[hw::cqc::domain_id]);
    e.clear();
    unfence(Table::Cqc, cqn);
    if (--dom_refs_[dom] == 0) dom_refs_.erase(dom);
    cq_refs_.erase(cqn);
    c.cqs.erase(cqn);
    cqn_.free(cqn);
}

// ---------------------------------------------------------------------------
// SRQs (5.6.8)
// ---------------------------------------------------------------------------
void Firmware::cmd_create_srq(Ctx& c, std::uint16_t id, In in, std::size_t n, Out& r) {
    namespace q = hw::cmd_create_srq_in;
    namespace sc = hw::srqc;
    const auto pdn = static_cast<std::uint32_t>(hw::get(in, n, q::pdn));
    const auto dom = static_cast<std::uint32_t>(hw::get(in, n, q::domain_id));
    const std::uint64_t base = hw::get(in, n, q::base);
    const std::uint64_t log = hw::get(in, n, q::log_size), log_stride = hw::get(in, n, q::log_stride);
    const std::uint64_t max_sge = hw::get(in, n, q::max_sge), limit = hw::get(in, n, q::srq_limit);
    if (!owns_pd(c, pdn)) {
        fail(r, CmdStatus::NoObject, Syndrome::NoPd);
        return;
    }
    if (max_sge > cap(cb::max_srq_sge)) {
        fail(r, CmdStatus::ExceedsCap, Syndrome::SgeCount);
        return;
    }
    if (pow2(log) > cap(cb::max_srq_wr)) {
        fail(r, CmdStatus::ExceedsCap, Syndrome::QueueSize);
        return;
    }
    if (log_stride < hw::kMinLogRqStride || log_stride > hw::kMaxLogStride ||
        pow2(log_stride) < hw::recv_wqe_size(max_sge)) {
        fail(r, CmdStatus::BadParam, Syndrome::Stride);
        return;
    }
    if (limit >= pow2(log)) {
        fail(r, CmdStatus::BadParam, Syndrome::SrqLimit);
        return;
    }
    if (base % pow2(log_stride) != 0) {
        fail(r, CmdStatus::BadParam, Syndrome::Alignment);
        return;
    }
    if (!check_range(c, dom, base, pow2(log + log_stride), r)) return;
    std::uint32_t srqn = 0;
    if (!srqn_.alloc(srqn)) {
        fail(r, CmdStatus::NoResources, Syndrome::TableFull);
        return;
    }
    fence(Table::Srqc, srqn);
    Entry e(ent(Table::Srqc, srqn), Table::Srqc);
    e.clear();
    e.set(sc::srqn, srqn);
    e.set(sc::pdn, pdn);
    e.set(sc::ctx_id, id);
    e.set(sc::domain_id, dom);
    e.set(sc::log_size, log);
    e.set(sc::log_stride, log_stride);
    e.set(sc::max_sge, max_sge);
    e.set(sc::limit_armed, limit != 0);
    e.set(sc::base, base);
    e.set(sc::srq_limit, limit);
    unfence(Table::Srqc, srqn);
    pd_ref(pdn, +1);
    ++dom_refs_[dom];
    c.srqs.insert(srqn);
    out_handle(r, srqn);
}

void Firmware::cmd_modify_srq(Ctx& c, In in, std::size_t n, Out& r) {
    namespace q = hw::cmd_modify_srq_in;
    namespace sc = hw::srqc;
    namespace am = hw::srq_attr_mask;
    const auto srqn = static_cast<std::uint32_t>(hw::get(in, n, q::srqn));
    const std::uint64_t mask = hw::get(in, n, q::attr_mask), limit = hw::get(in, n, q::srq_limit);
    if (c.srqs.count(srqn) == 0) {
        fail(r, CmdStatus::NoObject, Syndrome::NoSrq);
        return;
    }
    if (mask & ~std::uint64_t{am::kLimit | am::kMaxWr}) {
        fail(r, CmdStatus::BadParam, Syndrome::SrqMask);
        return;
    }
    Entry e(ent(Table::Srqc, srqn), Table::Srqc);
    // rxe_srq_chk_attr refuses any change to an SRQ in error.
    if (mask != 0 && e[sc::error]) {
        fail(r, CmdStatus::BadParam, Syndrome::SrqError);
        return;
    }
    const bool resize = (mask & am::kMaxWr) != 0;
    std::uint64_t log = e[sc::log_size];
    std::uint64_t base = 0;
    std::uint32_t dom = 0;
    if (resize) {
        // The driver has written the WQEs posted and not yet taken to the
        // same indices of the new ring (5.6.8); the firmware checks the
        // request as rxe_srq_chk_attr does and swaps the rings.
        const std::uint64_t max_wr = hw::get(in, n, q::max_wr);
        log = hw::get(in, n, q::log_size);
        base = hw::get(in, n, q::base);
        dom = static_cast<std::uint32_t>(hw::get(in, n, q::domain_id));
        if (max_wr == 0 || pow2(log) < max_wr) {
            fail(r, CmdStatus::BadParam, Syndrome::QueueSize);
            return;
        }
        if (max_wr > cap(cb::max_srq_wr) || pow2(log) > cap(cb::max_srq_wr)) {
            fail(r, CmdStatus::ExceedsCap, Syndrome::QueueSize);
            return;
        }
        // rxe: max_wr below the armed limit is EINVAL (a limit that has
        // fired, read back as 0, does not count).
        if (e[sc::limit_armed] && max_wr < e[sc::srq_limit]) {
            fail(r, CmdStatus::BadParam, Syndrome::SrqBelowLimit);
            return;
        }
        if (base % pow2(e[sc::log_stride]) != 0) {
            fail(r, CmdStatus::BadParam, Syndrome::Alignment);
            return;
        }
        if (!check_range(c, dom, base, pow2(log + e[sc::log_stride]), r)) return;
    }
    // The limit must stay below the ring's size (the new one when both
    // change), whether it is set now or stays armed.
    const bool armed_after = (mask & am::kLimit) ? limit != 0 : e[sc::limit_armed] != 0;
    const std::uint64_t limit_after = (mask & am::kLimit) ? limit : e[sc::srq_limit];
    if (armed_after && limit_after >= pow2(log)) {
        fail(r, CmdStatus::BadParam, Syndrome::SrqLimit);
        return;
    }
    if (mask == 0) return;
    fence(Table::Srqc, srqn);
    if (resize) {
        if (engine_) engine_->srq_resizing(srqn);
        const auto pi = static_cast<std::uint32_t>(e[sc::pi]), ci = static_cast<std::uint32_t>(e[sc::ci]);
        if (hw::ring_used(pi, ci) > pow2(log)) {
            // rxe's resize_finish: fewer entries than the WQEs queued is EINVAL.
            unfence(Table::Srqc, srqn);
            fail(r, CmdStatus::BadParam, Syndrome::SrqTooFull);
            return;
        }
        // The indices go on unchanged: the engine takes WQE `ci` from the
        // new ring next, and the CQEs' wqe_index count on.
        const auto old_dom = static_cast<std::uint32_t>(e[sc::domain_id]);
        e.set(sc::base, base);
        e.set(sc::log_size, log);
        e.set(sc::domain_id, dom);
        ++dom_refs_[dom];
        if (--dom_refs_[old_dom] == 0) dom_refs_.erase(old_dom);
    }
    if (mask & am::kLimit) {
        e.set(sc::srq_limit, limit);
        e.set(sc::limit_armed, limit != 0);
    }
    unfence(Table::Srqc, srqn);
}

void Firmware::cmd_query_srq(Ctx& c, In in, std::size_t n, Out& r) {
    namespace q = hw::cmd_query_srq_out;
    namespace sc = hw::srqc;
    const std::uint32_t srqn = handle_of(in, n);
    if (c.srqs.count(srqn) == 0) {
        fail(r, CmdStatus::NoObject, Syndrome::NoSrq);
        return;
    }
    Entry e(ent(Table::Srqc, srqn), Table::Srqc);
    put(r.out.data(), r.out.size(), q::max_wr, pow2(e[sc::log_size]));
    put(r.out.data(), r.out.size(), q::max_sge, e[sc::max_sge]);
    put(r.out.data(), r.out.size(), q::srq_limit, e[sc::limit_armed] ? e[sc::srq_limit] : 0);
    r.out_bytes = q::kSize;
}

void Firmware::cmd_destroy_srq(Ctx& c, In in, std::size_t n, Out& r) {
    const std::uint32_t srqn = handle_of(in, n);
    if (c.srqs.count(srqn) == 0) {
        fail(r, CmdStatus::NoObject, Syndrome::NoSrq);
        return;
    }
    if (srq_refs_.count(srqn)) {
        fail(r, CmdStatus::Busy, Syndrome::SrqBusy);
        return;
    }
    destroy_srq(c, srqn);
}

void Firmware::destroy_srq(Ctx& c, std::uint32_t srqn) {
    namespace sc = hw::srqc;
    fence(Table::Srqc, srqn);
    if (engine_) engine_->srq_destroying(srqn);
    Entry e(ent(Table::Srqc, srqn), Table::Srqc);
    const auto pdn = static_cast<std::uint32_t>(e[sc::pdn]);
    const auto dom = static_cast<std::uint32_t>(e[sc::domain_id]);
    e.clear();
    unfence(Table::Srqc, srqn);
    pd_ref(pdn, -1);
    if (--dom_refs_[dom] == 0) dom_refs_.erase(dom);
    srq_refs_.erase(srqn);
    c.srqs.erase(srqn);
    srqn_.free(srqn);
}

// ---------------------------------------------------------------------------
// Address vectors (5.6.7 value checks) and AHs (5.6.9)
// ---------------------------------------------------------------------------
bool Firmware::apply_av(In in, std::size_t n, const AvFields& s, std::uint8_t* dst,
                        std::size_t dst_len, const AvFields& d, Out& r) {
    namespace ge = hw::gid_entry;
    Gid dgid{};
    hw::get_bytes(in, n, s.dgid, dgid.data(), dgid.size());
    const auto sgid_index = static_cast<std::uint32_t>(hw::get(in, n, s.sgid_index));
    if (hw::get(in, n, s.grh) != 1) return fail(r, CmdStatus::BadParam, Syndrome::AvNoGrh);
    std::uint8_t* sg = sgid_index < cfg_.gid_tbl_len ? ent(Table::Gid, sgid_index) : nullptr;
    if (sg == nullptr || !hw::get(sg, ge::kSize, ge::valid))
        return fail(r, CmdStatus::BadParam, Syndrome::AvSgidIndex);
    if (is_zero(dgid)) return fail(r, CmdStatus::BadParam, Syndrome::AvZeroDgid);
    const std::uint8_t net_type = static_cast<std::uint8_t>(
        is_ipv4_mapped(dgid) ? hw::NetType::RoceV2Ipv4 : hw::NetType::RoceV2Ipv6);
    // A packet cannot leave an IPv6 source address for an IPv4 destination or
    // the other way round.
    if (hw::get(sg, ge::kSize, ge::net_type) != net_type)
        return fail(r, CmdStatus::BadParam, Syndrome::AvNetType);

    // Next-hop MAC: our own GIDs loop back to the port MAC.
    std::optional<Mac> dmac;
    const std::uint32_t len = std::min<std::uint32_t>(cfg_.gid_tbl_len, tables_.capacity(Table::Gid));
    for (std::uint32_t i = 0; i < len && !dmac; ++i) {
        const std::uint8_t* g = ent(Table::Gid, i);
        if (!hw::get(g, ge::kSize, ge::valid)) continue;
        Gid lg{};
        hw::get_bytes(g, ge::kSize, ge::gid, lg.data(), lg.size());
        if (lg == dgid) {
            Mac m{};
            hw::get_bytes(port_.data(), port_.size(), hw::port_block::mac, m.data(), m.size());
            dmac = m;
        }
    }
    if (!dmac && is_link_local(dgid)) dmac = mac_from_link_local(dgid);
    // A group's MAC follows from its address (ib_resolve_eth_dmac), with no
    // neighbour to ask.
    const bool multicast = hw::is_multicast_gid(dgid.data());
    if (!dmac && multicast) {
        roce::MacAddr m{};
        if (net_type == static_cast<std::uint8_t>(hw::NetType::RoceV2Ipv4)) {
            m = roce::ipv4_multicast_mac(std::uint32_t(dgid[12]) << 24 | std::uint32_t(dgid[13]) << 16 |
                                         std::uint32_t(dgid[14]) << 8 | dgid[15]);
        } else {
            roce::Ipv6Addr a{};
            std::copy(dgid.begin(), dgid.end(), a.begin());
            m = roce::ipv6_multicast_mac(a);
        }
        dmac = Mac{};
        std::copy(m.begin(), m.end(), dmac->begin());
    }
    if (!dmac) dmac = netdev_.resolve_neighbor(dgid);
    if (!dmac) return fail(r, CmdStatus::Again, Syndrome::AvUnresolved);

    hw::set_bytes(dst, dst_len, d.dgid, dgid.data(), dgid.size());
    put(dst, dst_len, d.sgid_index, sgid_index);
    // ib_core resolves a RoCE address vector through the IP stack unless its
    // DGID is link-local (ib_resolve_unicast_gid_dmac) and then replaces the
    // hop limit with the route's (ip_default_ttl, 64): rxe's frames carry TTL
    // 64 although ibv_rc_pingpong asks for 1 (the golden captures).
    // A multicast AV is not resolved through a route either: its hop limit
    // stays.
    put(dst, dst_len, d.hop_limit,
        is_link_local(dgid) || multicast ? hw::get(in, n, s.hop_limit) : kRouteHopLimit);
    put(dst, dst_len, d.traffic_class, hw::get(in, n, s.traffic_class));
    put(dst, dst_len, d.sl, hw::get(in, n, s.sl));
    put(dst, dst_len, d.grh, 1);
    put(dst, dst_len, d.net_type, net_type);
    put(dst, dst_len, d.flow_label, hw::get(in, n, s.flow_label));
    put(dst, dst_len, d.static_rate, hw::get(in, n, s.static_rate));
    hw::set_bytes(dst, dst_len, d.dmac, dmac->data(), dmac->size());
    return true;
}

void Firmware::cmd_create_ah(Ctx& c, std::uint16_t id, In in, std::size_t n, Out& r) {
    namespace q = hw::cmd_create_ah_in;
    namespace ae = hw::ah_entry;
    const auto pdn = static_cast<std::uint32_t>(hw::get(in, n, q::pdn));
    if (!owns_pd(c, pdn)) {
        fail(r, CmdStatus::NoObject, Syndrome::NoPd);
        return;
    }
    if (hw::get(in, n, q::port_num) != 1) {
        fail(r, CmdStatus::BadParam, Syndrome::BadPort);
        return;
    }
    std::array<std::uint8_t, ae::kSize> staged{};
    if (!apply_av(in, n, kAvAhIn, staged.data(), staged.size(), kAvAhEntry, r)) return;
    std::uint32_t ahn = 0;
    if (!ahn_.alloc(ahn)) {
        fail(r, CmdStatus::NoResources, Syndrome::TableFull);
        return;
    }
    put(staged.data(), staged.size(), ae::pdn, pdn);
    put(staged.data(), staged.size(), ae::ctx_id, id);
    put(staged.data(), staged.size(), ae::port_num, 1);
    put(staged.data(), staged.size(), ae::valid, 1);
    fence(Table::Ah, ahn);
    std::copy(staged.begin(), staged.end(), ent(Table::Ah, ahn));
    unfence(Table::Ah, ahn);
    pd_ref(pdn, +1);
    c.ahs.insert(ahn);
    out_handle(r, ahn);
}

void Firmware::cmd_destroy_ah(Ctx& c, In in, std::size_t n, Out& r) {
    const std::uint32_t ahn = handle_of(in, n);
    if (c.ahs.count(ahn) == 0) {
        fail(r, CmdStatus::NoObject, Syndrome::NoAh);
        return;
    }
    destroy_ah(c, ahn);
}

void Firmware::destroy_ah(Ctx& c, std::uint32_t ahn) {
    Entry e(ent(Table::Ah, ahn), Table::Ah);
    const auto pdn = static_cast<std::uint32_t>(e[hw::ah_entry::pdn]);
    fence(Table::Ah, ahn);
    if (engine_) engine_->ah_destroying(ahn);
    e.clear();
    unfence(Table::Ah, ahn);
    pd_ref(pdn, -1);
    c.ahs.erase(ahn);
    ahn_.free(ahn);
}

}  // namespace simnic::fw
