// SPDX-License-Identifier: Apache-2.0
// Memory windows, REREG_MR and on-demand MRs (hw-spec.md 5.6.5, 5.6.10,
// 5.6.11, 5.6.13, 9.5): the window's
// MPT entry, its index range and keys, the PD reference, DEREG_MR refused
// while a window is bound, DEALLOC_MW unbinding, QP destroy, context cleanup.
#include "fw_test_util.h"

using namespace simnic::fw;
using namespace simnic::fw::test;
using hw::CmdOpcode;
using hw::CmdStatus;
namespace acc = hw::access;
namespace me = hw::mpt_entry;

namespace {

Mbox mw_in(std::uint32_t pd, std::uint8_t type) {
    return Mbox(hw::cmd_alloc_mw_in::kSize).set(hw::cmd_alloc_mw_in::pdn, pd).set(hw::cmd_alloc_mw_in::type, type);
}
// ALLOC_MW of a window of `type` in `pd`, which must succeed: its MPT index.
std::uint32_t alloc_mw(Dev& d, std::uint32_t pd, std::uint8_t type) {
    return hw::key_index(d.ok_handle(d.cmd(CmdOpcode::AllocMw, mw_in(pd, type))));
}
Mbox rereg_in(std::uint32_t lkey, std::uint32_t flags, std::uint32_t pd = 0, std::uint32_t access = 0) {
    namespace q = hw::cmd_rereg_mr_in;
    return Mbox(q::kSize).set(q::lkey, lkey).set(q::flags, flags).set(q::pdn, pd).set(q::access, access);
}
std::uint64_t mpt(Dev& d, std::uint32_t idx, hw::Field f) {
    return hw::get(d.store->entry(Table::Mpt, idx), me::kSize, f);
}
void mpt_set(Dev& d, std::uint32_t idx, hw::Field f, std::uint64_t v) {
    REQUIRE(hw::set(d.store->entry(Table::Mpt, idx), me::kSize, f, v));
}
std::uint32_t pd_refs(Dev& d, std::uint32_t pd) {
    return static_cast<std::uint32_t>(hw::get(d.store->entry(Table::Pd, pd), hw::pd_entry::kSize, hw::pd_entry::refcnt));
}
// What the engine writes on a bind (hw-spec.md 6.5), done by hand here.
void fake_bind(Dev& d, std::uint32_t mw_idx, std::uint32_t mr_key, std::uint32_t qpn) {
    mpt_set(d, mw_idx, me::mr_key, mr_key);
    mpt_set(d, mw_idx, me::length, 64);
    mpt_set(d, mw_idx, me::bound_qpn, qpn);
    mpt_set(d, mw_idx, me::mw_state, static_cast<std::uint8_t>(hw::MwState::Valid));
    const std::uint32_t mr = hw::key_index(mr_key);
    mpt_set(d, mr, me::mw_count, mpt(d, mr, me::mw_count) + 1);
}

}  // namespace

TEST_CASE("MW: allocation, index range, keys, states, PD reference", "[fw][mw]") {
    Dev d;
    const std::uint32_t max_mr = static_cast<std::uint32_t>(hw::get(d.cfg.cap.data(), d.cfg.cap.size(), hw::cap_block::max_mr));
    CHECK(hw::get(d.cfg.cap.data(), d.cfg.cap.size(), hw::cap_block::max_mw) == 524287);
    CHECK((hw::get(d.cfg.cap.data(), d.cfg.cap.size(), hw::cap_block::device_cap_flags) & ((1u << 17) | (1u << 24))) ==
          ((1u << 17) | (1u << 24)));  // MEM_WINDOW, MEM_WINDOW_TYPE_2B
    const std::uint32_t pd = d.alloc_pd();

    const std::uint32_t k1 = d.ok_handle(d.cmd(CmdOpcode::AllocMw, mw_in(pd, 1)));
    const std::uint32_t k2 = d.ok_handle(d.cmd(CmdOpcode::AllocMw, mw_in(pd, 2)));
    // Windows take the MPT indices above the MRs' (as rxe's rkey_is_mw ranges).
    CHECK(hw::key_index(k1) == max_mr + 1);
    CHECK(hw::key_index(k2) == max_mr + 2);
    CHECK(mpt(d, max_mr + 1, me::kind) == 1);
    CHECK(mpt(d, max_mr + 2, me::kind) == 2);
    CHECK(mpt(d, max_mr + 1, me::mw_state) == static_cast<std::uint8_t>(hw::MwState::Valid));
    CHECK(mpt(d, max_mr + 2, me::mw_state) == static_cast<std::uint8_t>(hw::MwState::Free));
    CHECK(mpt(d, max_mr + 1, me::length) == 0);
    CHECK(mpt(d, max_mr + 1, me::valid) == 1);
    CHECK(mpt(d, max_mr + 1, me::pdn) == pd);
    CHECK(pd_refs(d, pd) == 2);
    CHECK(d.fw->counts().mws == 2);
    // An MR still gets index 1: the two ranges are separate.
    CHECK(hw::key_index(d.reg_mr(pd, acc::kLocalWrite | acc::kMwBind)) == 1);

    // Bad input.
    CHECK(d.cmd(CmdOpcode::AllocMw, mw_in(pd, 0)).status == CmdStatus::BadParam);
    CHECK(d.cmd(CmdOpcode::AllocMw, mw_in(pd, 3)).status == CmdStatus::BadParam);
    CHECK(d.cmd(CmdOpcode::AllocMw, mw_in(pd + 9, 1)).status == CmdStatus::NoObject);
    CHECK(d.cmd(CmdOpcode::AllocMw, Mbox(4)).status == CmdStatus::BadMbox);

    // PD busy while windows use it; DEALLOC_MW releases; the slot's next key differs.
    CHECK(d.handle_cmd(CmdOpcode::DeallocPd, pd).status == CmdStatus::Busy);
    REQUIRE(d.handle_cmd(CmdOpcode::DeallocMw, hw::key_index(k1)).ok());
    CHECK(mpt(d, max_mr + 1, me::valid) == 0);
    CHECK(d.handle_cmd(CmdOpcode::DeallocMw, hw::key_index(k1)).status == CmdStatus::NoObject);
    CHECK(d.handle_cmd(CmdOpcode::DeallocMw, 1).status == CmdStatus::NoObject);  // an MR's index
    const std::uint32_t k3 = d.ok_handle(d.cmd(CmdOpcode::AllocMw, mw_in(pd, 1)));
    CHECK(hw::key_index(k3) == hw::key_index(k1));
    CHECK(k3 != k1);
    // Another context cannot free this context's window.
    REQUIRE(d.fw->open_context(2, 1) == CmdStatus::Ok);
    CHECK(d.cmd(CmdOpcode::DeallocMw, Mbox(4).set(hw::cmd_handle::handle, hw::key_index(k2)), 0, 2).status ==
          CmdStatus::NoObject);
}

TEST_CASE("MW: DEREG_MR refused while bound, DEALLOC_MW and cleanup unbind", "[fw][mw]") {
    Dev d;
    const std::uint32_t pd = d.alloc_pd();
    const std::uint32_t lkey = d.reg_mr(pd, acc::kLocalWrite | acc::kMwBind);
    const std::uint32_t mw = alloc_mw(d, pd, 2);
    fake_bind(d, mw, lkey, 0x11);

    const int fences = d.engine.fences;
    const CmdResult busy = d.handle_cmd(CmdOpcode::DeregMr, lkey);
    CHECK(busy.status == CmdStatus::MwBound);
    CHECK(busy.err() == 22);  // EINVAL, as rxe
    CHECK(d.engine.fences > fences);  // the count is read under the fence
    CHECK(mpt(d, 1, me::valid) == 1);
    CHECK(d.fw->counts().mrs == 1);

    REQUIRE(d.handle_cmd(CmdOpcode::DeallocMw, mw).ok());
    CHECK(mpt(d, 1, me::mw_count) == 0);
    CHECK(d.handle_cmd(CmdOpcode::DeregMr, lkey).ok());
    CHECK(d.handle_cmd(CmdOpcode::DeallocPd, pd).ok());
}

TEST_CASE("MW: a destroyed QP's type 2 windows grant nothing more", "[fw][mw]") {
    Dev d;
    const std::uint32_t pd = d.alloc_pd();
    const std::uint32_t cq = d.create_cq();
    const std::uint32_t qpn = d.create_qp(hw::QpType::Rc, pd, cq);
    const std::uint32_t lkey = d.reg_mr(pd, acc::kLocalWrite | acc::kMwBind);
    const std::uint32_t mw = alloc_mw(d, pd, 2);
    const std::uint32_t other = alloc_mw(d, pd, 2);
    fake_bind(d, mw, lkey, qpn);
    fake_bind(d, other, lkey, qpn + 1);
    REQUIRE(d.handle_cmd(CmdOpcode::DestroyQp, qpn).ok());
    CHECK(mpt(d, mw, me::bound_qpn) == 0);
    CHECK(mpt(d, other, me::bound_qpn) == qpn + 1);
    // Still bound to the MR: it stays registered until the window goes.
    CHECK(d.handle_cmd(CmdOpcode::DeregMr, lkey).status == CmdStatus::MwBound);
}

TEST_CASE("MW: destroy_context frees windows before MRs", "[fw][mw]") {
    Dev d;
    const std::uint32_t pd = d.alloc_pd();
    const std::uint32_t lkey = d.reg_mr(pd, acc::kLocalWrite | acc::kMwBind);
    const std::uint32_t mw = alloc_mw(d, pd, 1);
    fake_bind(d, mw, lkey, 0);
    d.ok_handle(d.cmd(CmdOpcode::AllocMw, mw_in(pd, 2)));
    CHECK(d.fw->mw_list().size() == 2);
    CHECK(d.fw->mw_list()[0].mr_key == lkey);
    d.fw->destroy_context(d.ctx);
    const auto n = d.fw->counts();
    CHECK(n.mws == 0);
    CHECK(n.mrs == 0);
    CHECK(n.pds == 0);
    CHECK(mpt(d, mw, me::valid) == 0);
    CHECK(mpt(d, 1, me::valid) == 0);
    CHECK(d.fw->mw_list().empty());
}

TEST_CASE("REREG_MR: PD and access only, as rxe", "[fw][mr][rereg]") {
    Dev d;
    const std::uint32_t pd = d.alloc_pd(), pd2 = d.alloc_pd();
    const std::uint32_t lkey = d.reg_mr(pd, acc::kLocalWrite);
    namespace rf = hw::rereg_flags;

    const CmdResult a = d.cmd(CmdOpcode::ReregMr, rereg_in(lkey, rf::kChangeAccess, 0,
                                                           acc::kLocalWrite | acc::kRemoteWrite | acc::kMwBind));
    REQUIRE(a.ok());
    CHECK(out(a, hw::cmd_reg_mr_out::lkey) == lkey);  // keys unchanged
    CHECK(out(a, hw::cmd_reg_mr_out::rkey) == lkey);
    CHECK(mpt(d, 1, me::access) == (acc::kLocalWrite | acc::kRemoteWrite | acc::kMwBind));

    REQUIRE(d.cmd(CmdOpcode::ReregMr, rereg_in(lkey, rf::kChangePd, pd2)).ok());
    CHECK(mpt(d, 1, me::pdn) == pd2);
    CHECK(pd_refs(d, pd) == 0);
    CHECK(pd_refs(d, pd2) == 1);
    CHECK(d.handle_cmd(CmdOpcode::DeallocPd, pd).ok());
    CHECK(d.handle_cmd(CmdOpcode::DeallocPd, pd2).status == CmdStatus::Busy);

    const CmdResult t = d.cmd(CmdOpcode::ReregMr, rereg_in(lkey, rf::kChangeTranslation));
    CHECK(t.status == CmdStatus::NotSupported);
    CHECK(t.err() == 95);  // EOPNOTSUPP
    CHECK(d.cmd(CmdOpcode::ReregMr, rereg_in(lkey, rf::kChangeTranslation | rf::kChangePd, pd2)).status ==
          CmdStatus::NotSupported);
    CHECK(d.cmd(CmdOpcode::ReregMr, rereg_in(lkey, 0)).status == CmdStatus::BadParam);
    CHECK(d.cmd(CmdOpcode::ReregMr, rereg_in(lkey, 8)).status == CmdStatus::BadParam);
    CHECK(d.cmd(CmdOpcode::ReregMr, rereg_in(lkey, rf::kChangeAccess, 0, acc::kRemoteWrite)).status ==
          CmdStatus::BadParam);  // remote write needs local write
    CHECK(d.cmd(CmdOpcode::ReregMr, rereg_in(lkey, rf::kChangeAccess, 0, 0x40)).status == CmdStatus::BadParam);
    CHECK(d.cmd(CmdOpcode::ReregMr, rereg_in(lkey, rf::kChangePd, pd2 + 5)).status == CmdStatus::NoObject);
    CHECK(d.cmd(CmdOpcode::ReregMr, rereg_in(lkey + 1, rf::kChangeAccess)).status == CmdStatus::NoObject);
    const std::uint32_t mwk = d.ok_handle(d.cmd(CmdOpcode::AllocMw, mw_in(pd2, 1)));
    CHECK(d.cmd(CmdOpcode::ReregMr, rereg_in(mwk, rf::kChangeAccess)).status == CmdStatus::NoObject);
    // A failed command changed nothing.
    CHECK(mpt(d, 1, me::pdn) == pd2);
    CHECK(mpt(d, 1, me::access) == (acc::kLocalWrite | acc::kRemoteWrite | acc::kMwBind));
}

// FLUSH's rights (hw-spec.md 5.6.5, 5.6.11; rxe 6.12 and ib_check_mr_access).
TEST_CASE("FLUSH rights: REG_MR and REREG_MR keep them, with rxe's errors", "[fw][mr][flush]") {
    namespace d_ = hw::caps_default;
    namespace rf = hw::rereg_flags;
    Dev d;
    const std::uint64_t caps = hw::get(d.cfg.cap.data(), d.cfg.cap.size(), hw::cap_block::device_cap_flags);
    CHECK((caps & (d_::kFlushGlobal | d_::kFlushPersistent)) == (d_::kFlushGlobal | d_::kFlushPersistent));
    const std::uint32_t pd = d.alloc_pd();

    // FLUSH_GLOBAL is kept in MPT_ENTRY.access beside the other rights.
    const std::uint32_t g = d.reg_mr(pd, acc::kLocalWrite | acc::kRemoteRead | acc::kFlushGlobal);
    CHECK(mpt(d, hw::key_index(g), me::access) == (acc::kLocalWrite | acc::kRemoteRead | acc::kFlushGlobal));
    // FLUSH_PERSISTENT: only over persistent memory (rxe_mr_init_user,
    // EINVAL), and none is.
    const CmdResult p = d.cmd(CmdOpcode::RegMr, d.mr_in(pd, acc::kLocalWrite | acc::kFlushPersistent));
    CHECK(p.status == CmdStatus::BadParam);
    CHECK(p.err() == 22);  // EINVAL
    // Bits above FLUSH_PERSISTENT are no rights.
    CHECK(d.cmd(CmdOpcode::RegMr, d.mr_in(pd, acc::kLocalWrite | 0x400)).status == CmdStatus::BadParam);
    // The IB rule still holds with FLUSH's rights.
    CHECK(d.cmd(CmdOpcode::RegMr, d.mr_in(pd, acc::kRemoteWrite | acc::kFlushGlobal)).status == CmdStatus::BadParam);

    // REREG_MR CHANGE_ACCESS stores the new rights without looking at the
    // pages (rxe_rereg_user_mr): FLUSH_PERSISTENT is granted there.
    REQUIRE(d.cmd(CmdOpcode::ReregMr, rereg_in(g, rf::kChangeAccess, 0,
                                               acc::kLocalWrite | acc::kFlushGlobal | acc::kFlushPersistent))
                .ok());
    CHECK(mpt(d, hw::key_index(g), me::access) == (acc::kLocalWrite | acc::kFlushGlobal | acc::kFlushPersistent));
    REQUIRE(d.cmd(CmdOpcode::ReregMr, rereg_in(g, rf::kChangeAccess, 0, acc::kLocalWrite)).ok());
    CHECK(mpt(d, hw::key_index(g), me::access) == acc::kLocalWrite);
    CHECK(d.cmd(CmdOpcode::ReregMr, rereg_in(g, rf::kChangeAccess, 0, acc::kLocalWrite | 0x800)).status ==
          CmdStatus::BadParam);

    // A device that does not advertise a FLUSH capability refuses that right
    // (ib_check_mr_access: EOPNOTSUPP), at REG_MR and at REREG_MR.
    Dev no_persist(small_limits(), [&](auto& c) {
        REQUIRE(hw::set(c.data(), c.size(), hw::cap_block::device_cap_flags, caps & ~d_::kFlushPersistent));
    });
    const std::uint32_t pd2 = no_persist.alloc_pd();
    const std::uint32_t k = no_persist.reg_mr(pd2, acc::kLocalWrite | acc::kFlushGlobal);
    const CmdResult np = no_persist.cmd(
        CmdOpcode::ReregMr, rereg_in(k, rf::kChangeAccess, 0, acc::kLocalWrite | acc::kFlushPersistent));
    CHECK(np.status == CmdStatus::NotSupported);
    CHECK(np.err() == 95);  // EOPNOTSUPP
    // Before REG_MR's persistence check.
    CHECK(no_persist.cmd(CmdOpcode::RegMr, no_persist.mr_in(pd2, acc::kLocalWrite | acc::kFlushPersistent)).status ==
          CmdStatus::NotSupported);
    Dev none(small_limits(), [&](auto& c) {
        REQUIRE(hw::set(c.data(), c.size(), hw::cap_block::device_cap_flags,
                        caps & ~(d_::kFlushGlobal | d_::kFlushPersistent)));
    });
    const std::uint32_t pd3 = none.alloc_pd();
    CHECK(none.cmd(CmdOpcode::RegMr, none.mr_in(pd3, acc::kLocalWrite | acc::kFlushGlobal)).status ==
          CmdStatus::NotSupported);
    CHECK(none.reg_mr(pd3, acc::kLocalWrite | acc::kRemoteWrite) != 0);  // the other rights as before
}

// ---------------------------------------------------------------------------
// On-demand paging (hw-spec.md 5.6.5, 5.6.13)
// ---------------------------------------------------------------------------
namespace {
Mbox advise_in(std::uint32_t lkey, std::uint32_t pd, std::uint8_t advice, std::uint64_t addr, std::uint32_t len) {
    namespace a = hw::cmd_advise_mr_in;
    return Mbox(a::kSize).set(a::lkey, lkey).set(a::pdn, pd).set(a::advice, advice).set(a::addr, addr).set(a::length, len);
}
constexpr auto kPrefetch = static_cast<std::uint8_t>(hw::MrAdvice::Prefetch);
constexpr auto kPrefetchWrite = static_cast<std::uint8_t>(hw::MrAdvice::PrefetchWrite);
constexpr auto kNoFault = static_cast<std::uint8_t>(hw::MrAdvice::PrefetchNoFault);
}  // namespace

TEST_CASE("ODP: REG_MR of an on-demand MR, the implicit MR, and their rules", "[fw][odp]") {
    Dev d;
    auto cap = [&d](hw::Field f) { return hw::get(d.cfg.cap.data(), d.cfg.cap.size(), f); };
    // The capability bits, as ibv_query_device_ex reports them.
    CHECK(cap(hw::cap_block::odp_general_caps) == 0x3);  // SUPPORT | SUPPORT_IMPLICIT
    CHECK(cap(hw::cap_block::odp_rc_caps) == 0x3F);
    CHECK(cap(hw::cap_block::odp_uc_caps) == 0x27);
    CHECK(cap(hw::cap_block::odp_ud_caps) == 0x23);
    const std::uint32_t pd = d.alloc_pd();

    // An explicit on-demand MR: the mode is MPT_ENTRY.on_demand, not a right.
    const std::uint32_t odp = d.reg_mr(pd, acc::kLocalWrite | acc::kRemoteWrite | acc::kOnDemand);
    CHECK(mpt(d, hw::key_index(odp), me::on_demand) == 1);
    CHECK(mpt(d, hw::key_index(odp), me::access) == (acc::kLocalWrite | acc::kRemoteWrite));
    const std::uint32_t pinned = d.reg_mr(pd, acc::kLocalWrite);
    CHECK(mpt(d, hw::key_index(pinned), me::on_demand) == 0);

    // The implicit MR: address 0, length 2^64 - 1, IOVA 0.
    namespace m = hw::cmd_reg_mr_in;
    auto implicit = [&](std::uint64_t iova) {
        return d.mr_in(pd, acc::kLocalWrite | acc::kOnDemand, ~std::uint64_t{0}).set(m::iova, iova).set(m::host_addr, 0);
    };
    const CmdResult im = d.cmd(CmdOpcode::RegMr, implicit(0));
    REQUIRE(im.ok());
    const std::uint32_t ikey = static_cast<std::uint32_t>(out(im, hw::cmd_reg_mr_out::lkey));
    CHECK(mpt(d, hw::key_index(ikey), me::length) == ~std::uint64_t{0});
    CHECK(mpt(d, hw::key_index(ikey), me::on_demand) == 1);
    // rxe_odp_mr_init_user: an implicit MR at another IOVA is EINVAL (and one
    // on a device without IMPLICIT: the next test case).
    CHECK(d.cmd(CmdOpcode::RegMr, implicit(0x1000)).status == CmdStatus::BadParam);
    CHECK(d.cmd(CmdOpcode::RegMr, implicit(0).set(m::zero_based, 1)).status == CmdStatus::BadParam);
    // An MTT list is a pinned translation: not on demand.
    CHECK(d.cmd(CmdOpcode::RegMr, d.mr_in(pd, acc::kLocalWrite | acc::kOnDemand)
                                       .set(m::mtt_mode, 1).set(m::log_page_size, 12).set(m::mtt_count, 1))
              .status == CmdStatus::BadParam);
    // Bit 7 is no right and no mode.
    CHECK(d.cmd(CmdOpcode::RegMr, d.mr_in(pd, acc::kLocalWrite | 0x80)).status == CmdStatus::BadParam);

    // REREG_MR's new rights may repeat the mode, not change it.
    CHECK(d.cmd(CmdOpcode::ReregMr, rereg_in(odp, hw::rereg_flags::kChangeAccess, 0, acc::kLocalWrite)).status ==
          CmdStatus::BadParam);
    CHECK(d.cmd(CmdOpcode::ReregMr, rereg_in(pinned, hw::rereg_flags::kChangeAccess, 0,
                                             acc::kLocalWrite | acc::kOnDemand))
              .status == CmdStatus::BadParam);
    REQUIRE(d.cmd(CmdOpcode::ReregMr, rereg_in(odp, hw::rereg_flags::kChangeAccess, 0,
                                               acc::kLocalWrite | acc::kRemoteRead | acc::kOnDemand))
                .ok());
    CHECK(mpt(d, hw::key_index(odp), me::on_demand) == 1);
    CHECK(mpt(d, hw::key_index(odp), me::access) == (acc::kLocalWrite | acc::kRemoteRead));
}

TEST_CASE("ODP: a device without ODP refuses on-demand MRs, without IMPLICIT, the implicit MR", "[fw][odp]") {
    Dev none(small_limits(), [](auto& c) { REQUIRE(hw::set(c.data(), c.size(), hw::cap_block::odp_general_caps, 0)); });
    const std::uint32_t pd = none.alloc_pd();
    CHECK(none.cmd(CmdOpcode::RegMr, none.mr_in(pd, acc::kLocalWrite | acc::kOnDemand)).status ==
          CmdStatus::NotSupported);
    Dev explicit_only(small_limits(),
                      [](auto& c) { REQUIRE(hw::set(c.data(), c.size(), hw::cap_block::odp_general_caps, 1)); });
    const std::uint32_t pd2 = explicit_only.alloc_pd();
    namespace m = hw::cmd_reg_mr_in;
    CHECK(explicit_only.reg_mr(pd2, acc::kLocalWrite | acc::kOnDemand) != 0);
    CHECK(explicit_only
              .cmd(CmdOpcode::RegMr, explicit_only.mr_in(pd2, acc::kLocalWrite | acc::kOnDemand, ~std::uint64_t{0})
                                         .set(m::iova, 0).set(m::host_addr, 0))
              .status == CmdStatus::BadParam);
}

TEST_CASE("ODP: ADVISE_MR checks the key, PD, mode, rights and range, and gives the host address", "[fw][odp]") {
    Dev d;
    const std::uint32_t pd = d.alloc_pd(), pd2 = d.alloc_pd();
    // mr_in's MRs: IOVA 0x7000 at host address 0x7000, 4096 bytes.
    const std::uint32_t rw = d.reg_mr(pd, acc::kLocalWrite | acc::kOnDemand);
    const std::uint32_t ro = d.reg_mr(pd, acc::kRemoteRead | acc::kOnDemand);
    const std::uint32_t pinned = d.reg_mr(pd, acc::kLocalWrite);

    const CmdResult ok = d.cmd(CmdOpcode::AdviseMr, advise_in(rw, pd, kPrefetchWrite, 0x7100, 0x200));
    REQUIRE(ok.ok());
    CHECK(out(ok, hw::cmd_advise_mr_out::host_addr) == 0x7100);
    CHECK(out(ok, hw::cmd_advise_mr_out::domain_id) == d.boot);
    // The whole MR, and an empty range at its end, are inside it.
    CHECK(d.cmd(CmdOpcode::AdviseMr, advise_in(rw, pd, kPrefetch, 0x7000, 4096)).ok());
    CHECK(d.cmd(CmdOpcode::AdviseMr, advise_in(rw, pd, kNoFault, 0x8000, 0)).ok());
    // rxe_ib_advise_mr's answers.
    CHECK(d.cmd(CmdOpcode::AdviseMr, advise_in(rw, pd, 3, 0x7000, 8)).status == CmdStatus::NotSupported);
    CHECK(d.cmd(CmdOpcode::AdviseMr, advise_in(rw + 1, pd, kPrefetch, 0x7000, 8)).status == CmdStatus::BadParam);
    CHECK(d.cmd(CmdOpcode::AdviseMr, advise_in(rw, pd2, kPrefetch, 0x7000, 8)).status == CmdStatus::BadParam);
    CHECK(d.cmd(CmdOpcode::AdviseMr, advise_in(ro, pd, kPrefetchWrite, 0x7000, 8)).status == CmdStatus::Perm);
    CHECK(d.cmd(CmdOpcode::AdviseMr, advise_in(ro, pd, kPrefetch, 0x7000, 8)).ok());
    CHECK(d.cmd(CmdOpcode::AdviseMr, advise_in(rw, pd, kPrefetch, 0x6FFF, 8)).status == CmdStatus::Fault);
    CHECK(d.cmd(CmdOpcode::AdviseMr, advise_in(rw, pd, kPrefetch, 0x7FFF, 2)).status == CmdStatus::Fault);
    CHECK(d.cmd(CmdOpcode::AdviseMr, advise_in(rw, pd, kPrefetch, ~std::uint64_t{0}, 2)).status == CmdStatus::Fault);
    // A pinned MR has nothing to advise.
    CHECK(d.cmd(CmdOpcode::AdviseMr, advise_in(pinned, pd, kPrefetch, 0x7000, 8)).status == CmdStatus::BadParam);
    CHECK(hw::status_errno(CmdStatus::Fault) == EFAULT);
}
