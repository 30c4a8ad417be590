// SPDX-License-Identifier: Apache-2.0
// simnic firmware: memory windows, REREG_MR and on-demand paging (hw-spec.md
// 5.6.5, 5.6.10, 5.6.11, 5.6.13, 9.5). The firmware creates and destroys windows; binding and invalidating
// them is the engine's (hw-spec.md 6.5), which writes their ENG fields.
#include "fw_internal.h"

namespace simnic::fw {

namespace me = hw::mpt_entry;
namespace cb = hw::cap_block;
using hw::CmdStatus;

namespace {
bool is_mr(const Entry& e) {
    return e[me::kind] == static_cast<std::uint8_t>(hw::MptKind::Mr);
}
}  // namespace

void Firmware::cmd_alloc_mw(Ctx& c, std::uint16_t id, In in, std::size_t n, Out& r) {
    namespace a = hw::cmd_alloc_mw_in;
    const auto pdn = static_cast<std::uint32_t>(hw::get(in, n, a::pdn));
    const auto type = hw::get(in, n, a::type);  // ibv_mw_type
    if (type != static_cast<std::uint8_t>(hw::MwType::Type1) &&
        type != static_cast<std::uint8_t>(hw::MwType::Type2)) {
        fail(r, CmdStatus::BadParam, Syndrome::MwType);
        return;
    }
    if (!owns_pd(c, pdn)) {
        fail(r, CmdStatus::NoObject, Syndrome::NoPd);
        return;
    }
    std::uint32_t idx = 0;
    if (!mw_.alloc(idx)) {
        fail(r, CmdStatus::NoResources, Syndrome::TableFull);
        return;
    }
    fence(Table::Mpt, idx);
    Entry e(ent(Table::Mpt, idx), Table::Mpt);
    // A new key byte per allocation into the slot, as for MRs (hw-spec.md 10).
    const auto kb = static_cast<std::uint8_t>(hw::key_byte(static_cast<std::uint32_t>(e[me::key])) + 1);
    const std::uint32_t key = hw::make_key(idx, kb);
    e.clear();
    e.set(me::key, key);
    e.set(me::pdn, pdn);
    e.set(me::kind, type);  // MptKind's window kinds are the ibv_mw_type values
    e.set(me::ctx_id, id);
    // rxe: a type 1 window is VALID from the start (with nothing bound), a
    // type 2 window FREE until a BIND_MW WQE binds it.
    const bool type1 = type == static_cast<std::uint8_t>(hw::MwType::Type1);
    e.set(me::mw_state, static_cast<std::uint8_t>(type1 ? hw::MwState::Valid : hw::MwState::Free));
    e.set(me::valid, 1);
    unfence(Table::Mpt, idx);
    pd_ref(pdn, +1);
    c.mws.insert(idx);
    put(r.out.data(), r.out.size(), hw::cmd_handle::handle, key);
    r.out_bytes = hw::cmd_handle::kSize;
}

void Firmware::cmd_dealloc_mw(Ctx& c, In in, std::size_t n, Out& r) {
    const auto idx = static_cast<std::uint32_t>(hw::get(in, n, hw::cmd_handle::handle));
    if (c.mws.count(idx) == 0) {
        fail(r, CmdStatus::NoObject, Syndrome::NoMw);
        return;
    }
    dealloc_mw(c, idx);
}

void Firmware::dealloc_mw(Ctx& c, std::uint32_t idx) {
    fence(Table::Mpt, idx);
    Entry e(ent(Table::Mpt, idx), Table::Mpt);
    const auto key = static_cast<std::uint32_t>(e[me::key]);
    const auto pdn = static_cast<std::uint32_t>(e[me::pdn]);
    const auto mr_key = static_cast<std::uint32_t>(e[me::mr_key]);
    e.clear();
    e.set(me::key, key);  // kept so the next window in the slot gets a new key byte
    unfence(Table::Mpt, idx);
    // rxe_mw_cleanup: a bound window lets go of its MR.
    const std::uint32_t mr = hw::key_index(mr_key);
    if (mr_key != 0 && c.mrs.count(mr)) {
        fence(Table::Mpt, mr);
        Entry m(ent(Table::Mpt, mr), Table::Mpt);
        if (m[me::key] == mr_key && m[me::mw_count] > 0) m.set(me::mw_count, m[me::mw_count] - 1);
        unfence(Table::Mpt, mr);
    }
    pd_ref(pdn, -1);
    c.mws.erase(idx);
    mw_.free(idx);
}

void Firmware::orphan_mws(Ctx& c, std::uint32_t qpn) {
    for (std::uint32_t idx : c.mws) {
        fence(Table::Mpt, idx);
        Entry e(ent(Table::Mpt, idx), Table::Mpt);
        if (e[me::kind] == static_cast<std::uint8_t>(hw::MptKind::MwType2) && e[me::bound_qpn] == qpn)
            e.set(me::bound_qpn, 0);  // QPN 0 is never a user QP: no request matches
        unfence(Table::Mpt, idx);
    }
}

void Firmware::cmd_rereg_mr(Ctx& c, In in, std::size_t n, Out& r) {
    namespace q = hw::cmd_rereg_mr_in;
    namespace acc = hw::access;
    namespace rf = hw::rereg_flags;
    const auto key = static_cast<std::uint32_t>(hw::get(in, n, q::lkey));
    const auto flags = static_cast<std::uint32_t>(hw::get(in, n, q::flags));
    const auto pdn = static_cast<std::uint32_t>(hw::get(in, n, q::pdn));
    auto access = static_cast<std::uint32_t>(hw::get(in, n, q::access));
    const std::uint32_t idx = hw::key_index(key);
    if (c.mrs.count(idx) == 0) {
        fail(r, CmdStatus::NoObject, Syndrome::NoMr);
        return;
    }
    Entry e(ent(Table::Mpt, idx), Table::Mpt);
    if (e[me::key] != key || !is_mr(e)) {
        fail(r, CmdStatus::NoObject, Syndrome::NoMr);
        return;
    }
    if (flags == 0 || (flags & ~rf::kAll) != 0) {
        fail(r, CmdStatus::BadParam, Syndrome::ReregFlags);
        return;
    }
    // rxe supports only the two easy cases, PD and access (EOPNOTSUPP).
    if (flags & rf::kChangeTranslation) {
        fail(r, CmdStatus::NotSupported, Syndrome::ReregTranslation);
        return;
    }
    if ((flags & rf::kChangePd) && !owns_pd(c, pdn)) {
        fail(r, CmdStatus::NoObject, Syndrome::NoPd);
        return;
    }
    if (flags & rf::kChangeAccess) {
        // ON_DEMAND is the MR's paging mode, not a right: a new set of rights
        // may repeat it, not add or drop it (that needs a new translation,
        // which REREG_MR does not do).
        if (((access & acc::kOnDemand) != 0) != (e[me::on_demand] != 0)) {
            fail(r, CmdStatus::BadParam, Syndrome::OdpModeChange);
            return;
        }
        access &= ~std::uint32_t{acc::kOnDemand};
        if ((access & ~acc::kMrAccess) != 0) {
            fail(r, CmdStatus::BadParam, Syndrome::AccessBits);
            return;
        }
        if ((access & (acc::kRemoteWrite | acc::kRemoteAtomic)) && !(access & acc::kLocalWrite)) {
            fail(r, CmdStatus::BadParam, Syndrome::RemoteNeedsLocalWrite);
            return;
        }
        // ib_uverbs_rereg_mr checks the device's FLUSH capabilities
        // (ib_check_mr_access); rxe_rereg_user_mr then stores the rights
        // without REG_MR's look at the pages, so FLUSH_PERSISTENT is granted
        // here where REG_MR refuses it, as on rxe.
        if (!check_flush_offered(access, r)) return;
    }
    fence(Table::Mpt, idx);
    const auto old_pdn = static_cast<std::uint32_t>(e[me::pdn]);
    if (flags & rf::kChangePd) e.set(me::pdn, pdn);
    if (flags & rf::kChangeAccess) e.set(me::access, access);
    unfence(Table::Mpt, idx);
    if (flags & rf::kChangePd) {
        pd_ref(pdn, +1);
        pd_ref(old_pdn, -1);
    }
    put(r.out.data(), r.out.size(), hw::cmd_reg_mr_out::lkey, key);
    put(r.out.data(), r.out.size(), hw::cmd_reg_mr_out::rkey, key);
    r.out_bytes = hw::cmd_reg_mr_out::kSize;
}

// ib_check_mr_access's rule for FLUSH's rights, at REG_MR and REREG_MR.
bool Firmware::check_flush_offered(std::uint32_t access, Out& r) {
    namespace acc = hw::access;
    namespace d = hw::caps_default;
    const std::uint64_t caps = cap(hw::cap_block::device_cap_flags);
    if (((access & acc::kFlushGlobal) && !(caps & d::kFlushGlobal)) ||
        ((access & acc::kFlushPersistent) && !(caps & d::kFlushPersistent))) {
        fail(r, CmdStatus::NotSupported, Syndrome::FlushNotOffered);
        return false;
    }
    return true;
}

// ---------------------------------------------------------------------------
// On-demand paging (5.6.5, 5.6.13)
// ---------------------------------------------------------------------------
// An on-demand MR is a range of the process's address space, not a set of
// pages: the device looks each page up when it touches it (the soft engine's
// process_vm_readv/writev do exactly that), so nothing needs to be mapped at
// registration. That holds for a PROCESS domain in direct mode only; an MTT
// list or a shared mapping is a fixed translation.
bool Firmware::check_on_demand(std::uint32_t dom, bool mtt_mode, bool zero_based, std::uint64_t iova,
                               std::uint64_t length, std::uint64_t host, Out& r) {
    namespace de = hw::domain_entry;
    const std::uint64_t caps = cap(cb::odp_general_caps);
    if ((caps & hw::caps_default::kOdpSupport) == 0)
        return fail(r, CmdStatus::NotSupported, Syndrome::OdpUnsupported);
    if (mtt_mode) return fail(r, CmdStatus::BadParam, Syndrome::OdpMttMode);
    Entry d(ent(Table::Domain, dom), Table::Domain);
    if (d[de::kind] != static_cast<std::uint8_t>(hw::DomainKind::Process))
        return fail(r, CmdStatus::BadParam, Syndrome::OdpDomainKind);
    // The implicit MR: the whole address space, as ibv_reg_mr(pd, NULL,
    // SIZE_MAX, ON_DEMAND) asks. rxe_odp_mr_init_user's rules: the IOVA is 0
    // and the device must offer IMPLICIT, else EINVAL.
    if (host == 0 && length == ~std::uint64_t{0} &&
        (iova != 0 || zero_based || (caps & hw::caps_default::kOdpSupportImplicit) == 0))
        return fail(r, CmdStatus::BadParam, Syndrome::OdpImplicit);
    return true;
}

// ADVISE_MR: one SGE of ibv_advise_mr. The device checks the key, the PD, the
// MR's mode and rights and the range, and gives the host address the range
// starts at; the driver then makes the pages present (it runs in the
// process that owns them). rxe_ib_advise_mr's errors: an advice it does not
// know EOPNOTSUPP, an lkey of no MR of the PD EINVAL, PREFETCH_WRITE on an MR
// that cannot be written EPERM, a range outside the MR EFAULT
// (ib_umem_odp_map_dma_and_lock).
void Firmware::cmd_advise_mr(Ctx& c, In in, std::size_t n, Out& r) {
    namespace a = hw::cmd_advise_mr_in;
    namespace acc = hw::access;
    const auto key = static_cast<std::uint32_t>(hw::get(in, n, a::lkey));
    const auto pdn = static_cast<std::uint32_t>(hw::get(in, n, a::pdn));
    const auto advice = static_cast<std::uint32_t>(hw::get(in, n, a::advice));
    const std::uint64_t addr = hw::get(in, n, a::addr), len = hw::get(in, n, a::length);
    if (advice > static_cast<std::uint32_t>(hw::MrAdvice::PrefetchNoFault)) {
        fail(r, CmdStatus::NotSupported, Syndrome::AdviceValue);
        return;
    }
    const std::uint32_t idx = hw::key_index(key);
    if (c.mrs.count(idx) == 0) {
        fail(r, CmdStatus::BadParam, Syndrome::NoMr);
        return;
    }
    Entry e(ent(Table::Mpt, idx), Table::Mpt);
    if (e[me::key] != key || !is_mr(e) || e[me::pdn] != pdn) {
        fail(r, CmdStatus::BadParam, Syndrome::NoMr);
        return;
    }
    // An MR the host pinned has all its pages already: there is nothing to
    // advise (mlx5 refuses it too; rxe's prefetch assumes an ODP umem).
    if (e[me::on_demand] == 0) {
        fail(r, CmdStatus::BadParam, Syndrome::NotOnDemand);
        return;
    }
    // ib_access_writable: the umem is writable with any of these rights.
    constexpr std::uint8_t kWritable = acc::kLocalWrite | acc::kRemoteWrite | acc::kRemoteAtomic | acc::kMwBind;
    if (advice == static_cast<std::uint32_t>(hw::MrAdvice::PrefetchWrite) && (e[me::access] & kWritable) == 0) {
        fail(r, CmdStatus::Perm, Syndrome::AdviceAccess);
        return;
    }
    const std::uint64_t start = e[me::zero_based] ? 0 : e[me::iova_start];
    const std::uint64_t mlen = e[me::length];
    if (addr < start || addr - start > mlen || len > mlen - (addr - start)) {
        fail(r, CmdStatus::Fault, Syndrome::AdviceRange);
        return;
    }
    put(r.out.data(), r.out.size(), hw::cmd_advise_mr_out::host_addr, e[me::host_addr] + (addr - start));
    put(r.out.data(), r.out.size(), hw::cmd_advise_mr_out::domain_id, e[me::domain_id]);
    r.out_bytes = hw::cmd_advise_mr_out::kSize;
}

}  // namespace simnic::fw
