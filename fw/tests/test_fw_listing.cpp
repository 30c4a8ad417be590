// SPDX-License-Identifier: Apache-2.0
// The per-object listings behind `simnic resource show cq|mr|pd|srq`: every
// live object, ascending by number across contexts, with the fields its entry
// holds, exact reference counts, and the owning context and pid; destroyed
// objects and a destroyed context's objects disappear.
#include "fw_test_util.h"

using namespace simnic::fw;
using namespace simnic::fw::test;
using hw::CmdOpcode;
using hw::QpType;
namespace acc = hw::access;

TEST_CASE("Listings: CQs, MRs, PDs and SRQs with their owners", "[fw][listing]") {
    Dev d;  // context 1, pid 4242
    CHECK(d.fw->cq_list().empty());
    CHECK(d.fw->mr_list().empty());
    CHECK(d.fw->pd_list().empty());
    CHECK(d.fw->srq_list().empty());

    const std::uint32_t pd1 = d.alloc_pd();
    REQUIRE(d.fw->open_context(2, 999) == hw::CmdStatus::Ok);
    const std::uint32_t pd2 = d.ok_handle(d.cmd(CmdOpcode::AllocPd, Mbox{}, 256, 2));
    const std::uint32_t pd3 = d.alloc_pd();
    const std::uint32_t cq_a = d.create_cq(4), cq_b = d.create_cq(6);

    // Two QPs: one with separate send and receive CQs, one with cq_a on both sides.
    namespace q = hw::cmd_create_qp_in;
    const std::uint32_t qp1 = d.ok_handle(d.cmd(CmdOpcode::CreateQp, d.qp_in(QpType::Rc, pd1, cq_a, cq_b)));
    const std::uint32_t qp2 = d.create_qp(QpType::Rc, pd1, cq_a);

    // An SRQ with two (non-consecutive) QPs on it, and one QP without.
    namespace s = hw::cmd_create_srq_in;
    const std::uint32_t srq = d.ok_handle(d.cmd(
        CmdOpcode::CreateSrq, Mbox(s::kSize).set(s::pdn, pd1).set(s::domain_id, d.boot).set(s::base, 0x400000)
                                  .set(s::log_size, 6).set(s::log_stride, 6).set(s::max_sge, 3).set(s::srq_limit, 4)));
    const auto on_srq = [&] {
        return d.ok_handle(d.cmd(CmdOpcode::CreateQp, d.qp_in(QpType::Uc, pd1, cq_b, cq_b).set(q::srq_en, 1).set(q::srqn, srq)));
    };
    const std::uint32_t sq1 = on_srq();
    const std::uint32_t plain = d.create_qp(QpType::Uc, pd3, cq_b);
    const std::uint32_t sq2 = on_srq();

    const std::uint32_t key = d.reg_mr(pd1, acc::kLocalWrite | acc::kRemoteRead, 8192);

    SECTION("CQs: cqe is the verbs size, users counts QP sides") {
        const auto cqs = d.fw->cq_list();
        REQUIRE(cqs.size() == 2);
        CHECK(cqs[0].cqn == cq_a);
        CHECK(cqs[0].cqe == 15);   // 2^4 - 1
        CHECK(cqs[0].users == 3);  // qp1 send, qp2 send and receive
        CHECK(cqs[0].ctx_id == 1);
        CHECK(cqs[0].pid == 4242);
        CHECK(cqs[1].cqn == cq_b);
        CHECK(cqs[1].cqe == 63);
        CHECK(cqs[1].users == 7);  // qp1 receive, sq1, sq2 and plain on both sides
    }
    SECTION("MRs: index, key, range, PD") {
        const auto mrs = d.fw->mr_list();
        REQUIRE(mrs.size() == 1);
        CHECK(mrs[0].mrn == hw::key_index(key));
        CHECK(mrs[0].key == key);
        CHECK(mrs[0].iova == 0x7000);
        CHECK(mrs[0].length == 8192);
        CHECK(mrs[0].pdn == pd1);
        CHECK(mrs[0].access == (acc::kLocalWrite | acc::kRemoteRead));
        CHECK(mrs[0].ctx_id == 1);
        CHECK(mrs[0].pid == 4242);
    }
    SECTION("PDs: ascending across contexts, users = MRs + QPs + SRQs") {
        const auto pds = d.fw->pd_list();
        REQUIRE(pds.size() == 3);
        CHECK(pds[0].pdn == pd1);
        CHECK(pds[0].users == 6);  // qp1, qp2, sq1, sq2, the SRQ, the MR
        CHECK(pds[0].ctx_id == 1);
        CHECK(pds[0].pid == 4242);
        CHECK(pds[1].pdn == pd2);
        CHECK(pds[1].users == 0);
        CHECK(pds[1].ctx_id == 2);
        CHECK(pds[1].pid == 999);
        CHECK(pds[2].pdn == pd3);
        CHECK(pds[2].users == 1);  // plain
        CHECK(pds[2].ctx_id == 1);
    }
    SECTION("SRQs: sizes, limit as QUERY_SRQ reports it, the QPs on it") {
        auto srqs = d.fw->srq_list();
        REQUIRE(srqs.size() == 1);
        CHECK(srqs[0].srqn == srq);
        CHECK(srqs[0].pdn == pd1);
        CHECK(srqs[0].max_wr == 64);
        CHECK(srqs[0].max_sge == 3);
        CHECK(srqs[0].limit == 4);
        CHECK(srqs[0].qpns == std::vector<std::uint32_t>{sq1, sq2});
        CHECK(srqs[0].ctx_id == 1);
        CHECK(srqs[0].pid == 4242);
        namespace ms = hw::cmd_modify_srq_in;
        REQUIRE(d.cmd(CmdOpcode::ModifySrq, Mbox(ms::kSize).set(ms::srqn, srq).set(ms::attr_mask, 2).set(ms::srq_limit, 0)).ok());
        REQUIRE(d.handle_cmd(CmdOpcode::DestroyQp, sq1).ok());
        srqs = d.fw->srq_list();
        REQUIRE(srqs.size() == 1);
        CHECK(srqs[0].limit == 0);
        CHECK(srqs[0].qpns == std::vector<std::uint32_t>{sq2});
    }
    SECTION("destroyed objects and a destroyed context's objects are gone") {
        d.fw->destroy_context(2);
        auto pds = d.fw->pd_list();
        REQUIRE(pds.size() == 2);
        CHECK(pds[0].pdn == pd1);
        CHECK(pds[1].pdn == pd3);

        for (std::uint32_t qpn : {qp1, qp2, sq1, sq2, plain}) REQUIRE(d.handle_cmd(CmdOpcode::DestroyQp, qpn).ok());
        CHECK(d.fw->srq_list().at(0).qpns.empty());
        CHECK(d.fw->cq_list().at(0).users == 0);
        CHECK(d.fw->pd_list().at(0).users == 2);  // the SRQ and the MR
        REQUIRE(d.handle_cmd(CmdOpcode::DeregMr, key).ok());
        REQUIRE(d.handle_cmd(CmdOpcode::DestroySrq, srq).ok());
        REQUIRE(d.handle_cmd(CmdOpcode::DestroyCq, cq_a).ok());
        CHECK(d.fw->mr_list().empty());
        CHECK(d.fw->srq_list().empty());
        REQUIRE(d.fw->cq_list().size() == 1);
        CHECK(d.fw->cq_list()[0].cqn == cq_b);

        d.fw->destroy_context(1);  // a process that died: everything it held goes
        CHECK(d.fw->cq_list().empty());
        CHECK(d.fw->mr_list().empty());
        CHECK(d.fw->pd_list().empty());
        CHECK(d.fw->srq_list().empty());
    }
}

TEST_CASE("Listings of a range: the smallest numbers after a cursor, across contexts", "[fw][listing]") {
    Dev d;  // context 1
    REQUIRE(d.fw->open_context(2, 999) == hw::CmdStatus::Ok);
    // PDs of two contexts, interleaved, so that each context's ordered set
    // holds every other number.
    std::vector<std::uint32_t> all;
    for (int i = 0; i < 20; ++i) {
        const std::uint16_t ctx = i % 2 == 0 ? 1 : 2;
        all.push_back(d.ok_handle(d.cmd(CmdOpcode::AllocPd, Mbox{}, 256, ctx)));
    }
    std::sort(all.begin(), all.end());
    const auto numbers = [](const std::vector<Firmware::PdListing>& v) {
        std::vector<std::uint32_t> n;
        for (const auto& l : v) n.push_back(l.pdn);
        return n;
    };
    // The whole list by default, as before.
    CHECK(numbers(d.fw->pd_list()) == all);
    // Every cursor and limit: the `limit` numbers after the cursor, in order,
    // whichever context holds them.
    for (std::size_t at = 0; at <= all.size(); ++at) {
        for (std::size_t limit : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{7}, all.size()}) {
            ListRange r;
            if (at > 0) r.after = all[at - 1];
            r.limit = limit;
            const std::size_t end = std::min(all.size(), at + limit);
            const std::vector<std::uint32_t> want(all.begin() + std::ptrdiff_t(at), all.begin() + std::ptrdiff_t(end));
            INFO("after index " << at << ", limit " << limit);
            CHECK(numbers(d.fw->pd_list(r)) == want);
        }
    }
    // A cursor past the last number.
    ListRange past;
    past.after = all.back();
    CHECK(d.fw->pd_list(past).empty());
    // The QP numbers take a range the same way.
    const std::uint32_t cq = d.create_cq(4);
    std::vector<std::uint32_t> qpns;
    for (int i = 0; i < 5; ++i) qpns.push_back(d.create_qp(QpType::Rc, all[0], cq));
    std::sort(qpns.begin(), qpns.end());
    ListRange two;
    two.after = qpns[1];
    two.limit = 2;
    CHECK(d.fw->qpns(two) == std::vector<std::uint32_t>{qpns[2], qpns[3]});
}
