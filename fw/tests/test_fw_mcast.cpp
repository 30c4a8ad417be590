// SPDX-License-Identifier: Apache-2.0
// ATTACH_MCAST and DETACH_MCAST (hw-spec.md 5.6.12) and the MCG table
// (9.10): the entry's bytes after each command, the checks with rxe's
// errnos, the three limits reached and one more refused, and DESTROY_QP
// taking its QP out of every group.
#include <set>

#include "fw_test_util.h"

using namespace simnic::fw;
using namespace simnic::fw::test;
using hw::CmdOpcode;
using hw::CmdStatus;
namespace me = hw::mcg_entry;
namespace mi = hw::cmd_mcast_in;
namespace cb = hw::cap_block;

namespace {

using Mgid = std::array<std::uint8_t, 16>;

// ::ffff:a.b.c.d, the MGID rdma_cm gives an IPv4 group on RoCE v2.
Mgid v4_group(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
    return Mgid{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d};
}

CmdResult mcast(Dev& dev, CmdOpcode op, std::uint32_t qpn, const Mgid& g, std::uint16_t as_ctx = 0xFFFF) {
    return dev.cmd(op, Mbox(mi::kSize).set(mi::qpn, qpn).bytes(mi::mgid, g.data(), g.size()), 0, as_ctx);
}
int attach(Dev& dev, std::uint32_t qpn, const Mgid& g) {
    return hw::status_errno(mcast(dev, CmdOpcode::AttachMcast, qpn, g).status);
}
int detach(Dev& dev, std::uint32_t qpn, const Mgid& g) {
    return hw::status_errno(mcast(dev, CmdOpcode::DetachMcast, qpn, g).status);
}

// The MCG entry `i`, read back: its MGID, valid bit and QPNs in slot order.
struct Mcg {
    Mgid mgid{};
    bool valid = false;
    std::vector<std::uint32_t> qpns;
};
Mcg read_mcg(Dev& dev, std::uint32_t i) {
    const std::uint8_t* e = dev.store->entry(Table::Mcg, i);
    REQUIRE(e != nullptr);
    Mcg m;
    hw::get_bytes(e, me::kSize, me::mgid, m.mgid.data(), m.mgid.size());
    m.valid = hw::get(e, me::kSize, me::valid) != 0;
    const auto n = hw::get(e, me::kSize, me::num_qp);
    for (std::uint32_t k = 0; k < n; ++k) {
        hw::Field f = me::qpn;
        f.offset += k * hw::kMcgQpStride;
        m.qpns.push_back(static_cast<std::uint32_t>(hw::get(e, me::kSize, f)));
    }
    return m;
}
bool all_zero(Dev& dev, std::uint32_t i) {
    const std::uint8_t* e = dev.store->entry(Table::Mcg, i);
    for (std::uint32_t k = 0; k < me::kSize; ++k)
        if (e[k] != 0) return false;
    return true;
}

struct UdSetup {
    explicit UdSetup(Dev& d) : dev(d), pd(d.alloc_pd()), cq(d.create_cq()) {}
    std::uint32_t qp(hw::QpType t = hw::QpType::Ud) { return dev.create_qp(t, pd, cq); }
    Dev& dev;
    std::uint32_t pd, cq;
};

}  // namespace

TEST_CASE("MCG: attach and detach write the group's entry, slot by slot", "[fw][mcast]") {
    Dev d;
    UdSetup s(d);
    const std::uint32_t a = s.qp(), b = s.qp(), c = s.qp();
    const Mgid g1 = v4_group(239, 1, 2, 3);
    const Mgid g2 = {0xff, 0x12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xbe, 0xef};  // IPv6 group

    const int fences0 = d.engine.fences;
    REQUIRE(attach(d, a, g1) == 0);
    CHECK(d.engine.fences == fences0 + 1);  // written under a fence, which the engine rereads
    REQUIRE(attach(d, b, g1) == 0);
    REQUIRE(attach(d, c, g1) == 0);
    REQUIRE(attach(d, b, g2) == 0);
    Mcg m = read_mcg(d, 0);
    CHECK(m.valid);
    CHECK(m.mgid == g1);
    CHECK(m.qpns == std::vector<std::uint32_t>{a, b, c});
    m = read_mcg(d, 1);
    CHECK(m.valid);
    CHECK(m.mgid == g2);
    CHECK(m.qpns == std::vector<std::uint32_t>{b});
    CHECK(d.fw->counts().mcgs == 2);
    CHECK(d.fw->counts().mcg_attach == 4);

    // Attaching a member again changes nothing (rxe: 0).
    REQUIRE(attach(d, a, g1) == 0);
    CHECK(read_mcg(d, 0).qpns == std::vector<std::uint32_t>{a, b, c});
    CHECK(d.fw->counts().mcg_attach == 4);

    // A detach moves the last slot into the freed one.
    REQUIRE(detach(d, a, g1) == 0);
    CHECK(read_mcg(d, 0).qpns == std::vector<std::uint32_t>{c, b});
    REQUIRE(detach(d, b, g1) == 0);
    REQUIRE(detach(d, c, g1) == 0);
    // The last detach frees the entry: every byte back to zero, its number free.
    CHECK(all_zero(d, 0));
    CHECK(d.fw->counts().mcgs == 1);
    const Mgid g3 = v4_group(224, 0, 0, 251);
    REQUIRE(attach(d, a, g3) == 0);
    CHECK(read_mcg(d, 0).mgid == g3);  // lowest free number
    CHECK(d.fw->counts().mcg_attach == 2);
}

TEST_CASE("MCG: rxe's checks and errnos", "[fw][mcast]") {
    Dev d;
    UdSetup s(d);
    const std::uint32_t ud = s.qp(), rc = s.qp(hw::QpType::Rc), uc = s.qp(hw::QpType::Uc);
    const Mgid g = v4_group(239, 1, 2, 3);
    CHECK(attach(d, rc, g) == EINVAL);  // ib_attach_mcast: UD QPs only
    CHECK(attach(d, uc, g) == EINVAL);
    CHECK(attach(d, ud, v4_group(10, 0, 0, 1)) == EINVAL);       // unicast IPv4-mapped
    CHECK(attach(d, ud, v4_group(240, 0, 0, 1)) == EINVAL);      // class E is not multicast
    CHECK(attach(d, ud, Mgid{0xfe, 0x80}) == EINVAL);            // link-local unicast
    CHECK(attach(d, ud + 100, g) == ENOENT);                     // no such QP of the context
    CHECK(detach(d, ud, g) == EINVAL);                           // no such group (rxe: EINVAL)
    REQUIRE(attach(d, ud, g) == 0);
    const std::uint32_t other = s.qp();
    CHECK(detach(d, other, g) == EINVAL);                        // the group, but not this QP
    CHECK(detach(d, ud, v4_group(10, 0, 0, 1)) == EINVAL);
    CHECK(d.fw->counts().mcgs == 1);
    CHECK(d.fw->counts().mcg_attach == 1);
    // A context cannot attach another context's QP.
    REQUIRE(d.fw->open_context(2, 777) == CmdStatus::Ok);
    CHECK(mcast(d, CmdOpcode::AttachMcast, other, g, 2).status == CmdStatus::NoObject);
    CHECK(d.fw->counts().mcg_attach == 1);
}

TEST_CASE("MCG: max_mcast_qp_attach QPs per group, the next refused with ENOMEM", "[fw][mcast]") {
    Dev d;
    UdSetup s(d);
    const Mgid g = v4_group(239, 9, 9, 9);
    std::vector<std::uint32_t> qps;
    for (std::uint32_t i = 0; i < hw::caps_default::max_mcast_qp_attach; ++i) {
        qps.push_back(s.qp());
        REQUIRE(attach(d, qps.back(), g) == 0);
    }
    CHECK(read_mcg(d, 0).qpns == qps);
    const std::uint32_t extra = s.qp();
    CHECK(attach(d, extra, g) == ENOMEM);
    CHECK(read_mcg(d, 0).qpns.size() == 56);
    // Another group still takes it.
    CHECK(attach(d, extra, v4_group(239, 9, 9, 10)) == 0);
    // And a free slot takes it again.
    REQUIRE(detach(d, qps[7], g) == 0);
    CHECK(attach(d, extra, g) == 0);
}

TEST_CASE("MCG: max_mcast_grp groups, the next refused with ENOMEM", "[fw][mcast]") {
    Dev d;
    UdSetup s(d);
    const std::uint32_t qp = s.qp();
    const std::uint32_t n = hw::caps_default::max_mcast_grp;
    for (std::uint32_t i = 0; i < n; ++i)
        REQUIRE(attach(d, qp, v4_group(239, 0, std::uint8_t(i >> 8), std::uint8_t(i))) == 0);
    CHECK(d.fw->counts().mcgs == n);
    CHECK(read_mcg(d, n - 1).mgid == v4_group(239, 0, std::uint8_t((n - 1) >> 8), std::uint8_t(n - 1)));
    CHECK(attach(d, qp, v4_group(239, 1, 0, 0)) == ENOMEM);
    // A member of an existing group is no new group.
    CHECK(attach(d, s.qp(), v4_group(239, 0, 0, 5)) == 0);
    REQUIRE(detach(d, qp, v4_group(239, 0, 0, 17)) == 0);
    CHECK(attach(d, qp, v4_group(239, 1, 0, 0)) == 0);
    CHECK(read_mcg(d, 17).mgid == v4_group(239, 1, 0, 0));
}

TEST_CASE("MCG: max_total_mcast_qp_attach attachments, the next refused with ENOMEM", "[fw][mcast]") {
    // rxe advertises 8192 x 56, which the other two limits reach first; a
    // device advertising fewer enforces its own.
    Dev d(small_limits(), [](std::array<std::uint8_t, cb::kSize>& cap) {
        hw::set(cap.data(), cap.size(), cb::max_total_mcast_qp_attach, 3);
    });
    UdSetup s(d);
    const std::uint32_t a = s.qp(), b = s.qp();
    REQUIRE(attach(d, a, v4_group(239, 0, 0, 1)) == 0);
    REQUIRE(attach(d, b, v4_group(239, 0, 0, 1)) == 0);
    REQUIRE(attach(d, a, v4_group(239, 0, 0, 2)) == 0);
    CHECK(attach(d, b, v4_group(239, 0, 0, 2)) == ENOMEM);
    CHECK(attach(d, b, v4_group(239, 0, 0, 3)) == ENOMEM);
    CHECK(d.fw->counts().mcgs == 2);  // the refused new group took no entry
    CHECK(attach(d, a, v4_group(239, 0, 0, 1)) == 0);  // already in: no new attachment
}

TEST_CASE("MCG: DESTROY_QP takes the QP out of every group, freeing emptied ones", "[fw][mcast]") {
    Dev d;
    UdSetup s(d);
    const std::uint32_t a = s.qp(), b = s.qp();
    const Mgid g1 = v4_group(239, 1, 1, 1), g2 = v4_group(239, 2, 2, 2);
    REQUIRE(attach(d, a, g1) == 0);
    REQUIRE(attach(d, b, g1) == 0);
    REQUIRE(attach(d, a, g2) == 0);
    REQUIRE(d.handle_cmd(CmdOpcode::DestroyQp, a).ok());
    CHECK(read_mcg(d, 0).qpns == std::vector<std::uint32_t>{b});
    CHECK(all_zero(d, 1));
    CHECK(d.fw->counts().mcgs == 1);
    CHECK(d.fw->counts().mcg_attach == 1);
    // The context going away takes the rest.
    d.fw->destroy_context(d.ctx);
    CHECK(all_zero(d, 0));
    CHECK(d.fw->counts().mcgs == 0);
    CHECK(d.fw->counts().mcg_attach == 0);
}
