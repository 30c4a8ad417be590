// SPDX-License-Identifier: Apache-2.0
// Memory windows and REREG_MR (hw-spec.md 5.6.10, 5.6.11, 9.5): the window's
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
Mbox rereg_in(std::uint32_t lkey, std::uint32_t flags, std::uint32_t pd = 0, std::uint8_t access = 0) {
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

TEST_CASE("MW: DEREG_MR refused while bound; DEALLOC_MW and cleanup unbind", "[fw][mw]") {
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
