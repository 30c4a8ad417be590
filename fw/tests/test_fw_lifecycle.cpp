// SPDX-License-Identifier: Apache-2.0
// Object life cycles: PD/CQ/SRQ/domain busy rules, MR registration checks and
// keys, reference release on destroy, limits, and destroy_context cleanup.
#include "fw_test_util.h"

using namespace simnic::fw;
using namespace simnic::fw::test;
using hw::CmdOpcode;
using hw::CmdStatus;
using hw::QpType;
namespace acc = hw::access;

TEST_CASE("PD: lowest free number, busy while referenced", "[fw][life]") {
    Dev d;
    const std::uint32_t a = d.alloc_pd(), b = d.alloc_pd(), c = d.alloc_pd();
    CHECK(a == 1);
    CHECK(b == 2);
    CHECK(c == 3);
    REQUIRE(d.handle_cmd(CmdOpcode::DeallocPd, b).ok());
    CHECK(d.alloc_pd() == 2);  // lowest free
    const CmdResult mr = d.cmd(CmdOpcode::RegMr, d.mr_in(a, acc::kLocalWrite));
    REQUIRE(mr.ok());
    const CmdResult busy = d.handle_cmd(CmdOpcode::DeallocPd, a);
    CHECK(busy.status == CmdStatus::Busy);
    CHECK(busy.err() == 16);  // EBUSY
    CHECK(hw::get(d.store->entry(Table::Pd, a), hw::pd_entry::kSize, hw::pd_entry::refcnt) == 1);
    REQUIRE(d.handle_cmd(CmdOpcode::DeregMr, static_cast<std::uint32_t>(out(mr, hw::cmd_reg_mr_out::lkey))).ok());
    CHECK(d.handle_cmd(CmdOpcode::DeallocPd, a).ok());
    CHECK(d.handle_cmd(CmdOpcode::DeallocPd, a).status == CmdStatus::NoObject);
    CHECK(d.handle_cmd(CmdOpcode::DeallocPd, 0).status == CmdStatus::NoObject);
    // Another context cannot touch this context's PD.
    REQUIRE(d.fw->open_context(2, 1) == CmdStatus::Ok);
    CHECK(d.cmd(CmdOpcode::DeallocPd, Mbox(4).set(hw::cmd_handle::handle, c), 0, 2).status == CmdStatus::NoObject);
}

TEST_CASE("MR: access rules, bounds, keys", "[fw][life][mr]") {
    Dev d;
    const std::uint32_t pd = d.alloc_pd();
    auto reg = [&](Mbox m) { return d.cmd(CmdOpcode::RegMr, m); };
    // IB rule (rxe, ib_core): remote write or atomic needs local write.
    CHECK(reg(d.mr_in(pd, acc::kRemoteWrite)).status == CmdStatus::BadParam);
    CHECK(reg(d.mr_in(pd, acc::kRemoteAtomic)).err() == 22);
    CHECK(reg(d.mr_in(pd, acc::kRemoteRead)).ok());
    CHECK(reg(d.mr_in(pd, 0)).ok());
    CHECK(reg(d.mr_in(pd, acc::kLocalWrite | acc::kRemoteWrite | acc::kRemoteAtomic | acc::kRemoteRead)).ok());
    CHECK(reg(d.mr_in(pd, 0x20 | acc::kLocalWrite)).status == CmdStatus::BadParam);
    CHECK(reg(d.mr_in(pd, acc::kMwBind | acc::kLocalWrite)).ok());  // MW_BIND: windows may bind
    CHECK(reg(d.mr_in(pd, acc::kLocalWrite, 0)).status == CmdStatus::BadParam);  // length 0
    CHECK(reg(d.mr_in(pd, acc::kLocalWrite).set(hw::cmd_reg_mr_in::iova, ~0ull - 10)).status ==
          CmdStatus::BadParam);  // wraps
    CHECK(reg(d.mr_in(pd, acc::kLocalWrite).set(hw::cmd_reg_mr_in::zero_based, 1)).status ==
          CmdStatus::BadParam);  // zero_based needs iova 0
    CHECK(reg(d.mr_in(pd, acc::kLocalWrite).set(hw::cmd_reg_mr_in::iova, 0).set(hw::cmd_reg_mr_in::zero_based, 1)).ok());
    CHECK(reg(d.mr_in(pd + 7, acc::kLocalWrite)).status == CmdStatus::NoObject);
    CHECK(reg(d.mr_in(pd, acc::kLocalWrite).set(hw::cmd_reg_mr_in::domain_id, 9)).status == CmdStatus::BadDomain);

    // Keys: index << 8 | key byte; the byte advances on every registration into a slot.
    Dev k;
    const std::uint32_t kpd = k.alloc_pd();
    const CmdResult r1 = k.cmd(CmdOpcode::RegMr, k.mr_in(kpd, acc::kLocalWrite));
    REQUIRE(r1.ok());
    const auto key1 = static_cast<std::uint32_t>(out(r1, hw::cmd_reg_mr_out::lkey));
    CHECK(out(r1, hw::cmd_reg_mr_out::rkey) == key1);
    CHECK(key1 == hw::make_key(1, 1));
    REQUIRE(k.handle_cmd(CmdOpcode::DeregMr, key1).ok());
    const CmdResult r2 = k.cmd(CmdOpcode::RegMr, k.mr_in(kpd, acc::kLocalWrite));
    const auto key2 = static_cast<std::uint32_t>(out(r2, hw::cmd_reg_mr_out::lkey));
    CHECK(hw::key_index(key2) == 1);
    CHECK(hw::key_byte(key2) == 2);
    CHECK(k.handle_cmd(CmdOpcode::DeregMr, key1).status == CmdStatus::NoObject);  // stale key
    const std::uint8_t* mpt = k.store->entry(Table::Mpt, 1);
    CHECK(hw::get(mpt, hw::mpt_entry::kSize, hw::mpt_entry::valid) == 1);
    CHECK(hw::get(mpt, hw::mpt_entry::kSize, hw::mpt_entry::key) == key2);
    CHECK(hw::get(mpt, hw::mpt_entry::kSize, hw::mpt_entry::host_addr) == 0x7000);
    REQUIRE(k.handle_cmd(CmdOpcode::DeregMr, key2).ok());
    CHECK(hw::get(mpt, hw::mpt_entry::kSize, hw::mpt_entry::valid) == 0);
    // 255 more registrations wrap the byte.
    std::uint32_t last = 0;
    for (int i = 0; i < 255; ++i) {
        const CmdResult r = k.cmd(CmdOpcode::RegMr, k.mr_in(kpd, 0));
        last = static_cast<std::uint32_t>(out(r, hw::cmd_reg_mr_out::lkey));
        REQUIRE(k.handle_cmd(CmdOpcode::DeregMr, last).ok());
    }
    CHECK(last == hw::make_key(1, 1));  // 2 + 255 = 257 = 1 (mod 256)
}

TEST_CASE("MR: MTT mode", "[fw][life][mr]") {
    Dev d;  // max_mtt 64
    namespace m = hw::cmd_reg_mr_in;
    const std::uint32_t pd = d.alloc_pd();
    auto mtt_mr = [&](std::uint64_t iova, std::uint64_t len, std::uint32_t count, std::uint64_t first_page = 0x100000) {
        Mbox mb(m::kSize + 8 * count);
        mb.set(m::pdn, pd).set(m::access, acc::kLocalWrite).set(m::mtt_mode, 1).set(m::log_page_size, 12)
            .set(m::domain_id, d.boot).set(m::iova, iova).set(m::length, len).set(m::mtt_count, count);
        for (std::uint32_t i = 0; i < count; ++i)
            REQUIRE(hw::set(mb.b.data() + m::kSize + 8 * i, 8, hw::mtt_entry::page_addr, first_page + 0x1000 * i));
        return mb;
    };
    // [0x1800, 0x1800 + 0x2000) spans 3 pages of 4 KiB.
    const CmdResult ok = d.cmd(CmdOpcode::RegMr, mtt_mr(0x1800, 0x2000, 3));
    REQUIRE(ok.ok());
    CHECK(d.fw->counts().mtts == 3);
    const std::uint8_t* mpt = d.store->entry(Table::Mpt, 1);
    CHECK(hw::get(mpt, hw::mpt_entry::kSize, hw::mpt_entry::mtt_count) == 3);
    const auto base = static_cast<std::uint32_t>(hw::get(mpt, hw::mpt_entry::kSize, hw::mpt_entry::mtt_base));
    CHECK(hw::get(d.store->entry(Table::Mtt, base + 2), 8, hw::mtt_entry::page_addr) == 0x102000);
    CHECK(d.cmd(CmdOpcode::RegMr, mtt_mr(0x1800, 0x2000, 2)).status == CmdStatus::BadParam);  // wrong count
    Mbox shortm = mtt_mr(0x1800, 0x2000, 3);
    shortm.b.resize(m::kSize + 16);
    CHECK(d.cmd(CmdOpcode::RegMr, shortm).status == CmdStatus::BadMbox);
    CHECK(d.cmd(CmdOpcode::RegMr, mtt_mr(0, 0x1000, 1, 0x100800)).status == CmdStatus::BadParam);  // unaligned page
    CHECK(d.cmd(CmdOpcode::RegMr, mtt_mr(0, 0x1000, 1, 0)).status == CmdStatus::BadParam);  // page 0
    CHECK(d.cmd(CmdOpcode::RegMr, mtt_mr(0, 0x1000, 1).set(m::log_page_size, 11)).status == CmdStatus::BadParam);
    // MTT pool exhausted: NO_RESOURCES (ENOMEM).
    const CmdResult full = d.cmd(CmdOpcode::RegMr, mtt_mr(0, 62 * 0x1000, 62));
    CHECK(full.status == CmdStatus::NoResources);
    CHECK(full.err() == 12);
    REQUIRE(d.cmd(CmdOpcode::RegMr, mtt_mr(0, 61 * 0x1000, 61)).ok());
    REQUIRE(d.handle_cmd(CmdOpcode::DeregMr, static_cast<std::uint32_t>(out(ok, hw::cmd_reg_mr_out::lkey))).ok());
    CHECK(d.fw->counts().mtts == 61);
    CHECK(d.cmd(CmdOpcode::RegMr, mtt_mr(0, 0x3000, 3)).ok());  // the freed run is reused
}

TEST_CASE("CQ: sizes, busy while a QP uses it, resize", "[fw][life][cq]") {
    Dev d;
    CHECK(d.cmd(CmdOpcode::CreateCq, d.cq_in(0)).status == CmdStatus::BadParam);
    CHECK(d.cmd(CmdOpcode::CreateCq, d.cq_in(16)).status == CmdStatus::ExceedsCap);  // 65536 > 32767 + 1
    CHECK(d.cmd(CmdOpcode::CreateCq, d.cq_in(15)).ok());
    CHECK(d.cmd(CmdOpcode::CreateCq, d.cq_in(4, 0x100020)).status == CmdStatus::BadParam);  // alignment
    const std::uint32_t pd = d.alloc_pd(), cq = d.create_cq(), cq2 = d.create_cq();
    const std::uint32_t qpn = d.ok_handle(d.cmd(CmdOpcode::CreateQp, d.qp_in(QpType::Rc, pd, cq, cq2)));
    CHECK(hw::get(d.store->entry(Table::Cqc, cq), hw::cqc::kSize, hw::cqc::ref_qps) == 1);
    CHECK(d.handle_cmd(CmdOpcode::DestroyCq, cq).status == CmdStatus::Busy);
    CHECK(d.handle_cmd(CmdOpcode::DestroyCq, cq2).status == CmdStatus::Busy);
    CHECK(d.handle_cmd(CmdOpcode::DeallocPd, pd).status == CmdStatus::Busy);

    // RESIZE_CQ: BAD_PARAM (EINVAL, as rxe's resize_finish) while more CQEs
    // are outstanding than the new ring holds: 2^n - 1, one slot kept empty
    // (hw-spec 7.2).
    namespace rz = hw::cmd_resize_cq_in;
    auto resize = [&](std::uint32_t log) {
        return d.cmd(CmdOpcode::ResizeCq, Mbox(rz::kSize).set(rz::cqn, cq).set(rz::log_size, log)
                                              .set(rz::domain_id, d.boot).set(rz::base, 0x800000));
    };
    std::uint8_t* cqc = d.store->entry(Table::Cqc, cq);
    hw::set(cqc, hw::cqc::kSize, hw::cqc::pi, 40);
    hw::set(cqc, hw::cqc::kSize, hw::cqc::ci, 20);
    const CmdResult full = resize(4);
    CHECK(full.status == CmdStatus::BadParam);
    CHECK(full.err() == EINVAL);
    CHECK(hw::get(cqc, hw::cqc::kSize, hw::cqc::log_size) == 4);
    // 16 CQEs waiting: not in 16 slots, which hold 15.
    hw::set(cqc, hw::cqc::kSize, hw::cqc::ci, 24);
    CHECK(resize(4).status == CmdStatus::BadParam);
    CHECK(d.engine.cq_copies == 0);
    // 15 fit.
    hw::set(cqc, hw::cqc::kSize, hw::cqc::ci, 25);
    REQUIRE(resize(4).ok());
    CHECK(d.engine.cq_copies == 1);
    hw::set(cqc, hw::cqc::kSize, hw::cqc::ci, 20);
    REQUIRE(resize(5).ok());
    CHECK(d.engine.cq_copies == 2);
    CHECK(hw::get(cqc, hw::cqc::kSize, hw::cqc::log_size) == 5);
    CHECK(hw::get(cqc, hw::cqc::kSize, hw::cqc::base) == 0x800000);
    CHECK(hw::get(cqc, hw::cqc::kSize, hw::cqc::pi) == 40);  // engine fields kept

    REQUIRE(d.handle_cmd(CmdOpcode::DestroyQp, qpn).ok());
    CHECK(d.engine.destroyed_qps == std::vector<std::uint32_t>{qpn});
    CHECK(hw::get(cqc, hw::cqc::kSize, hw::cqc::ref_qps) == 0);
    CHECK(d.handle_cmd(CmdOpcode::DestroyCq, cq).ok());
    CHECK(d.handle_cmd(CmdOpcode::DestroyCq, cq2).ok());
    CHECK(d.handle_cmd(CmdOpcode::DeallocPd, pd).ok());
    CHECK(d.handle_cmd(CmdOpcode::DestroyCq, cq).status == CmdStatus::NoObject);
}

TEST_CASE("CQ: MODIFY_CQ sets the CQ's moderation, refuses what ibv_modify_cq does on mlx5", "[fw][life][cq]") {
    Dev d;
    namespace m = hw::cmd_modify_cq_in;
    namespace cc = hw::cqc;
    const std::uint32_t cq = d.create_cq(), other = d.create_cq();
    auto modify = [&](std::uint32_t cqn, std::uint32_t mask, std::uint32_t count, std::uint32_t period,
                      std::uint16_t ctx = 0xFFFF) {
        return d.cmd(CmdOpcode::ModifyCq, Mbox(m::kSize).set(m::cqn, cqn).set(m::attr_mask, mask)
                                              .set(m::cq_count, count).set(m::cq_period, period), 0, ctx);
    };
    auto field = [&](std::uint32_t cqn, hw::Field f) { return hw::get(d.store->entry(Table::Cqc, cqn), cc::kSize, f); };
    // A new CQ: no moderation of its own (the device's default).
    CHECK(field(cq, cc::mod_en) == 0);
    CHECK(field(cq, cc::mod_count) == 0);
    CHECK(field(cq, cc::mod_period) == 0);

    REQUIRE(modify(cq, hw::cq_attr_mask::kModerate, 8, 16).ok());
    CHECK(field(cq, cc::mod_en) == 1);
    CHECK(field(cq, cc::mod_count) == 8);
    CHECK(field(cq, cc::mod_period) == 16);
    CHECK(field(other, cc::mod_en) == 0);  // per CQ
    // The extremes: 65535 CQEs, 4095 us (mlx5's MLX5_MAX_CQ_PERIOD); and
    // back to no moderation (0/0), which stays the CQ's own setting.
    REQUIRE(modify(other, hw::cq_attr_mask::kModerate, 0xFFFF, 0xFFF).ok());
    CHECK(field(other, cc::mod_count) == 0xFFFF);
    CHECK(field(other, cc::mod_period) == 0xFFF);
    REQUIRE(modify(other, hw::cq_attr_mask::kModerate, 0, 0).ok());
    CHECK(field(other, cc::mod_en) == 1);
    CHECK(field(other, cc::mod_count) == 0);
    CHECK(field(other, cc::mod_period) == 0);

    // Bad input changes nothing. A period beyond 12 bits: EINVAL (mlx5_ib).
    const CmdResult longp = modify(cq, hw::cq_attr_mask::kModerate, 4, 0x1000);
    CHECK(longp.status == CmdStatus::BadParam);
    CHECK(longp.err() == EINVAL);
    // No attribute, or one that does not exist: EINVAL (the kernel's check
    // of an empty mask, libibverbs' of IBV_CQ_ATTR_RESERVED and above).
    for (const std::uint32_t mask : {0u, 2u, 3u, 0x80000000u}) {
        INFO("attr_mask " << mask);
        const CmdResult bad = modify(cq, mask, 4, 4);
        CHECK(bad.status == CmdStatus::BadAttrMask);
        CHECK(bad.err() == EINVAL);
    }
    CHECK(field(cq, cc::mod_count) == 8);
    CHECK(field(cq, cc::mod_period) == 16);
    // No such CQ, or another context's: ENOENT.
    CHECK(modify(0x777, hw::cq_attr_mask::kModerate, 1, 1).status == CmdStatus::NoObject);
    REQUIRE(d.fw->open_context(2, 1) == CmdStatus::Ok);
    CHECK(modify(cq, hw::cq_attr_mask::kModerate, 1, 1, 2).status == CmdStatus::NoObject);
    CHECK(field(cq, cc::mod_count) == 8);
    // The moderation goes with the CQ: a CQ created in its slot starts without.
    REQUIRE(d.handle_cmd(CmdOpcode::DestroyCq, cq).ok());
    const std::uint32_t again = d.create_cq();
    REQUIRE(again == cq);
    CHECK(field(again, cc::mod_en) == 0);
    CHECK(field(again, cc::mod_count) == 0);
}

TEST_CASE("QP: create checks and QPN numbering", "[fw][life][qp]") {
    Dev d;
    namespace q = hw::cmd_create_qp_in;
    const std::uint32_t pd = d.alloc_pd(), cq = d.create_cq();
    auto create = [&](Mbox m) { return d.cmd(CmdOpcode::CreateQp, m); };
    CHECK(create(d.qp_in(static_cast<QpType>(1), pd, cq, cq)).status == CmdStatus::NotSupported);
    CHECK(create(d.qp_in(QpType::Rc, pd + 1, cq, cq)).status == CmdStatus::NoObject);
    CHECK(create(d.qp_in(QpType::Rc, pd, cq + 1, cq)).status == CmdStatus::NoObject);
    CHECK(create(d.qp_in(QpType::Rc, pd, cq, cq).set(q::max_send_sge, 33)).status == CmdStatus::ExceedsCap);
    CHECK(create(d.qp_in(QpType::Rc, pd, cq, cq).set(q::max_inline, 513)).status == CmdStatus::ExceedsCap);
    CHECK(create(d.qp_in(QpType::Rc, pd, cq, cq).set(q::log_sq_size, 21)).status == CmdStatus::ExceedsCap);
    CHECK(create(d.qp_in(QpType::Rc, pd, cq, cq).set(q::log_sq_stride, 6)).status == CmdStatus::BadParam);
    CHECK(create(d.qp_in(QpType::Rc, pd, cq, cq).set(q::max_recv_sge, 4)).status == CmdStatus::BadParam);  // 80 > 64
    CHECK(create(d.qp_in(QpType::Rc, pd, cq, cq).set(q::sq_base, 0x200080)).status == CmdStatus::BadParam);
    CHECK(create(d.qp_in(QpType::Rc, pd, cq, cq).set(q::domain_id, 7)).status == CmdStatus::BadDomain);
    // First user QPN 0x11, then cyclic: a freed QPN is not reused at once.
    const std::uint32_t a = d.create_qp(QpType::Rc, pd, cq);
    CHECK(a == 0x11);
    REQUIRE(d.handle_cmd(CmdOpcode::DestroyQp, a).ok());
    CHECK(d.create_qp(QpType::Uc, pd, cq) == 0x12);
    CHECK(d.qpc_get(0x12, hw::qpc::state) == 0);
    CHECK(d.qpc_get(0x12, hw::qpc::qp_type) == 3);
    CHECK(d.qpc_get(0x12, hw::qpc::qpn) == 0x12);
    CHECK(d.qpc_get(0x12, hw::qpc::ctx_id) == d.ctx);

    // SRQ: must share the QP's PD; busy while attached.
    namespace s = hw::cmd_create_srq_in;
    const Mbox srq_in = Mbox(s::kSize).set(s::pdn, pd).set(s::domain_id, d.boot).set(s::base, 0x400000)
                            .set(s::log_size, 6).set(s::log_stride, 6).set(s::max_sge, 3).set(s::srq_limit, 4);
    const std::uint32_t srq = d.ok_handle(d.cmd(CmdOpcode::CreateSrq, srq_in));
    const std::uint32_t pd2 = d.alloc_pd();
    CHECK(create(d.qp_in(QpType::Rc, pd2, cq, cq).set(q::srq_en, 1).set(q::srqn, srq)).status == CmdStatus::BadParam);
    const std::uint32_t uc = d.ok_handle(create(d.qp_in(QpType::Uc, pd, cq, cq).set(q::srq_en, 1).set(q::srqn, srq)));
    CHECK(d.handle_cmd(CmdOpcode::DestroySrq, srq).status == CmdStatus::Busy);
    const CmdResult qq = d.handle_cmd(CmdOpcode::QueryQp, uc);
    CHECK(out(qq, hw::qp_attr::max_recv_wr) == 0);
    REQUIRE(d.handle_cmd(CmdOpcode::DestroyQp, uc).ok());
    const CmdResult qs = d.handle_cmd(CmdOpcode::QuerySrq, srq);
    CHECK(out(qs, hw::cmd_query_srq_out::max_wr) == 64);
    CHECK(out(qs, hw::cmd_query_srq_out::max_sge) == 3);
    CHECK(out(qs, hw::cmd_query_srq_out::srq_limit) == 4);
    namespace ms = hw::cmd_modify_srq_in;
    // MAX_WR 0 (rxe_srq_chk_attr: EINVAL); the resize itself: "SRQ: MODIFY_SRQ resize ...".
    CHECK(d.cmd(CmdOpcode::ModifySrq, Mbox(ms::kSize).set(ms::srqn, srq).set(ms::attr_mask, 1)).status ==
          CmdStatus::BadParam);
    CHECK(d.cmd(CmdOpcode::ModifySrq, Mbox(ms::kSize).set(ms::srqn, srq).set(ms::attr_mask, 2).set(ms::srq_limit, 64)).status ==
          CmdStatus::BadParam);
    REQUIRE(d.cmd(CmdOpcode::ModifySrq, Mbox(ms::kSize).set(ms::srqn, srq).set(ms::attr_mask, 2).set(ms::srq_limit, 0)).ok());
    CHECK(out(d.handle_cmd(CmdOpcode::QuerySrq, srq), hw::cmd_query_srq_out::srq_limit) == 0);
    CHECK(d.cmd(CmdOpcode::CreateSrq, Mbox(srq_in).set(s::max_sge, 28)).status == CmdStatus::ExceedsCap);
    CHECK(d.cmd(CmdOpcode::CreateSrq, Mbox(srq_in).set(s::srq_limit, 64)).status == CmdStatus::BadParam);
    CHECK(d.handle_cmd(CmdOpcode::DestroySrq, srq).ok());
}

// MODIFY_SRQ with MAX_WR (5.6.8): rxe_srq_chk_attr's checks and
// resize_finish's (the WQEs queued must fit), then the SRQC names the new
// ring with the indices unchanged; the doorbell the engine had not taken
// when the command came counts.
TEST_CASE("SRQ: MODIFY_SRQ resize checks and swaps the ring, indices kept", "[fw][life][srq]") {
    Dev d;
    namespace s = hw::cmd_create_srq_in;
    namespace ms = hw::cmd_modify_srq_in;
    namespace sc = hw::srqc;
    const std::uint32_t pd = d.alloc_pd();
    const std::uint32_t srq = d.ok_handle(d.cmd(CmdOpcode::CreateSrq, Mbox(s::kSize)
                                                                         .set(s::pdn, pd)
                                                                         .set(s::domain_id, d.boot)
                                                                         .set(s::base, 0x400000)
                                                                         .set(s::log_size, 3)
                                                                         .set(s::log_stride, 6)
                                                                         .set(s::max_sge, 3)));
    std::uint8_t* ctx = d.store->entry(hw::Table::Srqc, srq);
    auto srqc = [&](hw::Field f) { return hw::get(ctx, sc::kSize, f); };
    // The engine has taken 3 WQEs of 5 announced; a doorbell for 7 waits.
    REQUIRE(hw::set(ctx, sc::kSize, sc::pi, 5));
    REQUIRE(hw::set(ctx, sc::kSize, sc::ci, 3));
    d.engine.srq_doorbell_pi = 7;
    auto resize = [&](std::uint64_t max_wr, std::uint64_t log, std::uint64_t base) {
        return Mbox(ms::kSize)
            .set(ms::srqn, srq)
            .set(ms::attr_mask, hw::srq_attr_mask::kMaxWr)
            .set(ms::max_wr, max_wr)
            .set(ms::log_size, log)
            .set(ms::domain_id, d.boot)
            .set(ms::base, base);
    };
    auto modify = [&](const Mbox& m) { return d.cmd(CmdOpcode::ModifySrq, m); };
    const std::uint64_t cap_wr = hw::get(d.fw->cap_block().data(), hw::cap_block::kSize, hw::cap_block::max_srq_wr);
    CHECK(modify(resize(0, 2, 0x500000)).status == CmdStatus::BadParam);
    CHECK(modify(resize(cap_wr + 1, 21, 0x500000)).status == CmdStatus::ExceedsCap);
    CHECK(modify(resize(5, 2, 0x500000)).status == CmdStatus::BadParam);  // 4 entries for 5
    CHECK(modify(resize(4, 2, 0x500020)).status == CmdStatus::BadParam);  // not at a stride
    CHECK(modify(resize(4, 2, 0x500000).set(ms::domain_id, 7)).status == CmdStatus::BadDomain);
    CHECK(modify(Mbox(resize(4, 2, 0x500000)).set(ms::attr_mask, 4)).status == CmdStatus::BadParam);
    CHECK(d.engine.srq_resizes == 0);
    // Below the armed limit: EINVAL, as rxe (max_wr < srq->limit).
    REQUIRE(modify(Mbox(ms::kSize).set(ms::srqn, srq).set(ms::attr_mask, hw::srq_attr_mask::kLimit).set(ms::srq_limit, 6))
                .ok());
    CHECK(modify(resize(5, 3, 0x500000)).status == CmdStatus::BadParam);
    REQUIRE(modify(Mbox(ms::kSize).set(ms::srqn, srq).set(ms::attr_mask, hw::srq_attr_mask::kLimit).set(ms::srq_limit, 0))
                .ok());
    // Four WQEs queued once the waiting doorbell is taken: two entries do
    // not hold them (rxe's resize_finish: EINVAL), and nothing changes.
    CHECK(modify(resize(2, 1, 0x500000)).status == CmdStatus::BadParam);
    CHECK(d.engine.srq_resizes == 1);
    CHECK(srqc(sc::pi) == 7);
    CHECK(srqc(sc::base) == 0x400000);
    CHECK(srqc(sc::log_size) == 3);
    // Four entries do: the SRQC names the new ring, same indices.
    const int fences = d.engine.fences;
    REQUIRE(modify(resize(3, 2, 0x500000)).ok());
    CHECK(d.engine.fences == fences + 1);
    CHECK(d.engine.depth == 0);
    CHECK(srqc(sc::base) == 0x500000);
    CHECK(srqc(sc::log_size) == 2);
    CHECK(srqc(sc::domain_id) == d.boot);
    CHECK(srqc(sc::log_stride) == 6);
    CHECK(srqc(sc::max_sge) == 3);
    CHECK(srqc(sc::pi) == 7);
    CHECK(srqc(sc::ci) == 3);
    CHECK(out(d.handle_cmd(CmdOpcode::QuerySrq, srq), hw::cmd_query_srq_out::max_wr) == 4);
    // Both at once: the limit is checked against the new size and armed.
    CHECK(modify(Mbox(resize(100, 7, 0x600000))
                     .set(ms::attr_mask, hw::srq_attr_mask::kMaxWr | hw::srq_attr_mask::kLimit)
                     .set(ms::srq_limit, 128))
              .status == CmdStatus::BadParam);
    REQUIRE(modify(Mbox(resize(100, 7, 0x600000))
                       .set(ms::attr_mask, hw::srq_attr_mask::kMaxWr | hw::srq_attr_mask::kLimit)
                       .set(ms::srq_limit, 64))
                .ok());
    const CmdResult q = d.handle_cmd(CmdOpcode::QuerySrq, srq);
    CHECK(out(q, hw::cmd_query_srq_out::max_wr) == 128);
    CHECK(out(q, hw::cmd_query_srq_out::srq_limit) == 64);
    CHECK(srqc(sc::base) == 0x600000);
    CHECK(modify(resize(50, 6, 0x500000)).status == CmdStatus::BadParam);  // below the armed 64
    // An SRQ in error takes no change (rxe_srq_chk_attr).
    REQUIRE(hw::set(ctx, sc::kSize, sc::error, 1));
    CHECK(modify(resize(128, 7, 0x500000)).status == CmdStatus::BadParam);
    CHECK(modify(Mbox(ms::kSize).set(ms::srqn, srq).set(ms::attr_mask, hw::srq_attr_mask::kLimit).set(ms::srq_limit, 1))
              .status == CmdStatus::BadParam);
    CHECK(d.handle_cmd(CmdOpcode::DestroySrq, srq).ok());
}

// QPNs are cyclic over max_qp (a million on a real device): the QPC blocks
// that numbers already passed must go back when their QPs do, or a daemon
// that creates and destroys QPs for hours grows until the numbers wrap.
TEST_CASE("QP: the QPC memory of destroyed QPs goes back", "[fw][life][qp]") {
    Dev d;
    const std::uint32_t pd = d.alloc_pd(), cq = d.create_cq();
    const std::uint32_t per = MemTableStore::kChunkEntries;
    std::vector<std::uint32_t> qps;
    for (std::uint32_t i = 0; i < 2 * per + 10; ++i) qps.push_back(d.create_qp(QpType::Rc, pd, cq));
    CHECK(d.store->chunks_held(hw::Table::Qpc) == 3);
    // One QP left in the first block keeps it; the second block goes.
    for (std::size_t i = 1; i < qps.size() - 5; ++i) REQUIRE(d.handle_cmd(CmdOpcode::DestroyQp, qps[i]).ok());
    CHECK(d.store->chunks_held(hw::Table::Qpc) == 2);
    CHECK(d.qpc_get(qps[0], hw::qpc::qpn) == qps[0]);  // the survivors' QPCs are intact
    CHECK(d.qpc_get(qps.back(), hw::qpc::qpn) == qps.back());
    REQUIRE(d.handle_cmd(CmdOpcode::DestroyQp, qps[0]).ok());
    CHECK(d.store->chunks_held(hw::Table::Qpc) == 1);
    // A new QP takes the next number (cyclic, as before) and works.
    const std::uint32_t next = d.create_qp(QpType::Rc, pd, cq);
    CHECK(next == qps.back() + 1);
    CHECK(d.handle_cmd(CmdOpcode::QueryQp, next).ok());
    for (std::size_t i = qps.size() - 5; i < qps.size(); ++i) REQUIRE(d.handle_cmd(CmdOpcode::DestroyQp, qps[i]).ok());
    REQUIRE(d.handle_cmd(CmdOpcode::DestroyQp, next).ok());
    CHECK(d.store->chunks_held(hw::Table::Qpc) == 0);
}

TEST_CASE("Limits: a full table gives NO_RESOURCES (ENOMEM)", "[fw][life]") {
    Dev d(small_limits(), [](auto& cap) {
        hw::set(cap.data(), cap.size(), hw::cap_block::max_pd, 3);
        hw::set(cap.data(), cap.size(), hw::cap_block::max_cq, 2);
    });
    d.put_cap(hw::cap_block::max_qp, 4096);
    Dev q(small_limits(), [](auto& cap) { hw::set(cap.data(), cap.size(), hw::cap_block::max_qp, 3); });
    for (int i = 0; i < 3; ++i) d.alloc_pd();
    const CmdResult pd = d.cmd(CmdOpcode::AllocPd);
    CHECK(pd.status == CmdStatus::NoResources);
    CHECK(pd.err() == 12);
    d.create_cq();
    d.create_cq();
    CHECK(d.cmd(CmdOpcode::CreateCq, d.cq_in()).status == CmdStatus::NoResources);

    // max_qp 3: QPNs 0x11..0x13, then full; a destroyed QP frees a slot.
    const std::uint32_t qpd = q.alloc_pd(), qcq = q.create_cq();
    CHECK(q.create_qp(QpType::Rc, qpd, qcq) == 0x11);
    CHECK(q.create_qp(QpType::Rc, qpd, qcq) == 0x12);
    CHECK(q.create_qp(QpType::Rc, qpd, qcq) == 0x13);
    CHECK(q.cmd(CmdOpcode::CreateQp, q.qp_in(QpType::Rc, qpd, qcq, qcq)).status == CmdStatus::NoResources);
    REQUIRE(q.handle_cmd(CmdOpcode::DestroyQp, 0x12).ok());
    CHECK(q.create_qp(QpType::Rc, qpd, qcq) == 0x12);  // wrapped around to the only free one
}

TEST_CASE("Domains: attach rules, busy while used, bootstrap fixed", "[fw][life]") {
    Dev d;
    namespace a = hw::cmd_attach_domain_in;
    auto attach = [&](Mbox m) { return d.cmd(CmdOpcode::AttachDomain, m); };
    CHECK(attach(Mbox(a::kSize).set(a::kind, 0).set(a::pid, 1)).status == CmdStatus::Perm);
    const std::uint32_t proc = d.ok_handle(attach(Mbox(a::kSize).set(a::kind, 0).set(a::pid, 4242)));
    CHECK(proc != d.boot);
    CHECK(attach(Mbox(a::kSize).set(a::kind, 1).set(a::shm_handle, 5).set(a::map_len, 4096)).status ==
          CmdStatus::BadDomain);
    REQUIRE(d.fw->add_shm_object(d.ctx, 5, 1 << 20) == CmdStatus::Ok);
    CHECK(attach(Mbox(a::kSize).set(a::kind, 1).set(a::shm_handle, 5).set(a::map_len, (1 << 20) + 1)).status ==
          CmdStatus::BadParam);
    const std::uint32_t shm = d.ok_handle(attach(
        Mbox(a::kSize).set(a::kind, 1).set(a::shm_handle, 5).set(a::map_base, 0x10000000).set(a::map_len, 1 << 20)));
    CHECK(attach(Mbox(a::kSize).set(a::kind, 2)).status == CmdStatus::BadParam);
    // Queue memory must lie inside the SHM mapping.
    CHECK(d.cmd(CmdOpcode::CreateCq, d.cq_in(4, 0x100000).set(hw::cmd_create_cq_in::domain_id, shm)).status ==
          CmdStatus::BadParam);
    const std::uint32_t cq =
        d.ok_handle(d.cmd(CmdOpcode::CreateCq, d.cq_in(4, 0x10000000).set(hw::cmd_create_cq_in::domain_id, shm)));
    CHECK(d.handle_cmd(CmdOpcode::DetachDomain, shm).status == CmdStatus::Busy);
    CHECK(d.handle_cmd(CmdOpcode::DetachDomain, d.boot).status == CmdStatus::Perm);
    REQUIRE(d.handle_cmd(CmdOpcode::DestroyCq, cq).ok());
    CHECK(d.handle_cmd(CmdOpcode::DetachDomain, shm).ok());
    CHECK(d.handle_cmd(CmdOpcode::DetachDomain, proc).ok());
    CHECK(d.handle_cmd(CmdOpcode::DetachDomain, proc).status == CmdStatus::NoObject);
}

TEST_CASE("AH: create validates and resolves the AV, takes a PD reference", "[fw][life]") {
    Dev d;
    namespace ah = hw::cmd_create_ah_in;
    const std::uint32_t pd = d.alloc_pd();
    auto ah_in = [&](const Gid& dgid, std::uint32_t sgid) {
        return Mbox(ah::kSize).set(ah::pdn, pd).set(ah::port_num, 1).bytes(ah::av_dgid, dgid.data(), dgid.size())
            .set(ah::av_sgid_index, sgid).set(ah::av_grh, 1).set(ah::av_hop_limit, 64);
    };
    // A local GID loops back to the port MAC; the IPv6 GID gives net_type 1.
    const Gid own6 = d.netdev.snap.ipv6[1];
    const std::uint32_t a = d.ok_handle(d.cmd(CmdOpcode::CreateAh, ah_in(own6, 2)));
    CHECK(a == 1);
    const std::uint8_t* e = d.store->entry(Table::Ah, a);
    Mac m{};
    REQUIRE(hw::get_bytes(e, hw::ah_entry::kSize, hw::ah_entry::av_dmac, m.data(), m.size()));
    CHECK(m == d.netdev.snap.mac);
    CHECK(hw::get(e, hw::ah_entry::kSize, hw::ah_entry::av_net_type) == 1);
    CHECK(hw::get(e, hw::ah_entry::kSize, hw::ah_entry::valid) == 1);
    CHECK(hw::get(e, hw::ah_entry::kSize, hw::ah_entry::pdn) == pd);
    CHECK(d.handle_cmd(CmdOpcode::DeallocPd, pd).status == CmdStatus::Busy);
    CHECK(d.cmd(CmdOpcode::CreateAh, ah_in(ipv4_mapped_gid({10, 9, 9, 9}), 1)).status == CmdStatus::Again);
    // A peer's link-local GID needs no neighbour lookup: its MAC is in it.
    const int lookups = d.netdev.resolves;
    const Gid peer_ll = default_gid(Mac{0x52, 0x54, 0x00, 0x99, 0x88, 0x77});
    const std::uint32_t b = d.ok_handle(d.cmd(CmdOpcode::CreateAh, ah_in(peer_ll, 0)));
    CHECK(d.netdev.resolves == lookups);
    REQUIRE(hw::get_bytes(d.store->entry(Table::Ah, b), hw::ah_entry::kSize, hw::ah_entry::av_dmac, m.data(),
                          m.size()));
    CHECK(m == Mac{0x52, 0x54, 0x00, 0x99, 0x88, 0x77});
    REQUIRE(d.handle_cmd(CmdOpcode::DestroyAh, b).ok());
    CHECK(d.cmd(CmdOpcode::CreateAh, ah_in(own6, 2).set(ah::port_num, 2)).status == CmdStatus::BadParam);
    CHECK(d.cmd(CmdOpcode::CreateAh, ah_in(own6, 2).set(ah::av_grh, 0)).status == CmdStatus::BadParam);
    REQUIRE(d.handle_cmd(CmdOpcode::DestroyAh, a).ok());
    CHECK(hw::get(e, hw::ah_entry::kSize, hw::ah_entry::valid) == 0);
    CHECK(d.handle_cmd(CmdOpcode::DestroyAh, a).status == CmdStatus::NoObject);
    CHECK(d.handle_cmd(CmdOpcode::DeallocPd, pd).ok());
}

TEST_CASE("destroy_context releases everything a dead process owned", "[fw][life]") {
    Dev d;
    REQUIRE(d.fw->open_context(2, 999) == CmdStatus::Ok);
    // Context 2 owns a little of everything, interlinked.
    auto as2 = [&](CmdOpcode op, Mbox m) { return d.cmd(op, m, 256, 2); };
    std::uint16_t boot2 = 0;
    const std::uint32_t pd = d.ok_handle(as2(CmdOpcode::AllocPd, Mbox{}));
    // Find context 2's bootstrap domain: the only domain it owns.
    REQUIRE(d.fw->counts(2).domains == 1);
    for (std::uint32_t i = 1; i < 16; ++i) {
        const std::uint8_t* de = d.store->entry(Table::Domain, i);
        if (hw::get(de, hw::domain_entry::kSize, hw::domain_entry::valid) &&
            hw::get(de, hw::domain_entry::kSize, hw::domain_entry::ctx_id) == 2)
            boot2 = static_cast<std::uint16_t>(i);
    }
    REQUIRE(boot2 != 0);
    const std::uint32_t cq = d.ok_handle(as2(CmdOpcode::CreateCq, d.cq_in().set(hw::cmd_create_cq_in::domain_id, boot2)));
    namespace s = hw::cmd_create_srq_in;
    const std::uint32_t srq = d.ok_handle(as2(CmdOpcode::CreateSrq, Mbox(s::kSize).set(s::pdn, pd).set(s::domain_id, boot2)
                                                                       .set(s::base, 0x400000).set(s::log_size, 4).set(s::log_stride, 5)));
    Mbox qin = d.qp_in(QpType::Rc, pd, cq, cq).set(hw::cmd_create_qp_in::domain_id, boot2);
    const std::uint32_t qp1 = d.ok_handle(as2(CmdOpcode::CreateQp, qin));
    const std::uint32_t qp2 = d.ok_handle(as2(CmdOpcode::CreateQp, Mbox(qin).set(hw::cmd_create_qp_in::srq_en, 1)
                                                                       .set(hw::cmd_create_qp_in::srqn, srq)));
    REQUIRE(as2(CmdOpcode::RegMr, d.mr_in(pd, acc::kLocalWrite).set(hw::cmd_reg_mr_in::domain_id, boot2)).ok());
    namespace ah = hw::cmd_create_ah_in;
    const Gid own = ipv4_mapped_gid({10, 1, 2, 3});
    REQUIRE(as2(CmdOpcode::CreateAh, Mbox(ah::kSize).set(ah::pdn, pd).set(ah::port_num, 1)
                                         .bytes(ah::av_dgid, own.data(), own.size()).set(ah::av_sgid_index, 1)
                                         .set(ah::av_grh, 1)).ok());
    // Context 1's objects must survive.
    const std::uint32_t mypd = d.alloc_pd();
    const std::uint32_t mycq = d.create_cq();
    const std::uint32_t myqp = d.create_qp(QpType::Ud, mypd, mycq);

    const Firmware::Counts before = d.fw->counts(2);
    CHECK(before.qps == 2);
    CHECK(before.mrs == 1);
    CHECK(before.ahs == 1);
    d.fw->destroy_context(2);
    CHECK_FALSE(d.fw->has_context(2));
    const Firmware::Counts c2 = d.fw->counts(2);
    CHECK(c2.qps + c2.cqs + c2.srqs + c2.mrs + c2.pds + c2.ahs + c2.domains == 0);
    const Firmware::Counts all = d.fw->counts();
    CHECK(all.qps == 1);
    CHECK(all.cqs == 1);
    CHECK(all.pds == 1);
    CHECK(all.mrs == 0);
    CHECK(all.srqs == 0);
    CHECK(all.ahs == 0);
    CHECK(all.domains == 1);
    CHECK(d.fw->qpns() == std::vector<std::uint32_t>{myqp});
    // The tables no longer name context 2's objects.
    CHECK(d.qpc_get(qp1, hw::qpc::qpn) == 0);
    CHECK(d.qpc_get(qp2, hw::qpc::qpn) == 0);
    CHECK(hw::get(d.store->entry(Table::Cqc, cq), hw::cqc::kSize, hw::cqc::cqn) == 0);
    CHECK(hw::get(d.store->entry(Table::Pd, pd), hw::pd_entry::kSize, hw::pd_entry::valid) == 0);
    CHECK(hw::get(d.store->entry(Table::Domain, boot2), hw::domain_entry::kSize, hw::domain_entry::valid) == 0);
    CHECK(hw::get(d.store->entry(Table::Mpt, 1), hw::mpt_entry::kSize, hw::mpt_entry::valid) == 0);
    CHECK(d.engine.depth == 0);
    // Its numbers are free again; a new process can use the device.
    REQUIRE(d.fw->open_context(2, 1000) == CmdStatus::Ok);
    CHECK(d.ok_handle(as2(CmdOpcode::AllocPd, Mbox{})) == pd);
    d.fw->destroy_context(2);
    d.fw->destroy_context(d.ctx);
    const Firmware::Counts none = d.fw->counts();
    CHECK(none.qps + none.cqs + none.srqs + none.mrs + none.pds + none.ahs + none.domains + none.mtts == 0);
}
