// SPDX-License-Identifier: Apache-2.0
// ATTACH_MCAST and DETACH_MCAST (hw-spec.md 5.6.12) against the multicast
// group table (9.10): a group's MCG entry exists while a QP is attached to
// it. Checks and errors are rxe's (rxe_mcast.c; ib_attach_mcast for the QP
// type and the MGID).
#include <algorithm>
#include <array>

#include "fw_internal.h"

namespace simnic::fw {

namespace cb = hw::cap_block;
using hw::CmdStatus;
namespace mi = hw::cmd_mcast_in;
namespace me = hw::mcg_entry;

namespace {

// The QPN field of slot `i` of an MCG entry.
hw::Field qpn_slot(std::uint32_t i) {
    hw::Field f = me::qpn;
    f.offset += i * hw::kMcgQpStride;
    return f;
}

}  // namespace

// The checks both commands share: the QP is this context's and UD, the MGID
// a multicast address.
bool Firmware::mcast_args(Ctx& c, In in, std::size_t n, Out& r, std::uint32_t& qpn,
                          std::array<std::uint8_t, 16>& mgid) {
    qpn = static_cast<std::uint32_t>(hw::get(in, n, mi::qpn));
    hw::get_bytes(in, n, mi::mgid, mgid.data(), mgid.size());
    if (c.qps.count(qpn) == 0) return fail(r, CmdStatus::NoObject, Syndrome::NoQp);
    if (Entry(ent(Table::Qpc, qpn), Table::Qpc)[hw::qpc::qp_type] != static_cast<std::uint8_t>(hw::QpType::Ud))
        return fail(r, CmdStatus::BadParam, Syndrome::QpType);
    if (!hw::is_multicast_gid(mgid.data())) return fail(r, CmdStatus::BadParam, Syndrome::NotMulticast);
    return true;
}

void Firmware::cmd_attach_mcast(Ctx& c, In in, std::size_t n, Out& r) {
    std::uint32_t qpn = 0;
    std::array<std::uint8_t, 16> mgid{};
    if (!mcast_args(c, in, n, r, qpn, mgid)) return;
    auto it = mcg_by_gid_.find(mgid);
    if (it != mcg_by_gid_.end() && qp_mcgs_[qpn].count(it->second) != 0) return;  // already in it
    if (mcg_attach_ >= cap(cb::max_total_mcast_qp_attach)) {
        fail(r, CmdStatus::NoResources, Syndrome::McgAttachFull);
        return;
    }
    std::uint32_t mcg = 0;
    if (it != mcg_by_gid_.end()) {
        mcg = it->second;
        const std::uint64_t held = Entry(ent(Table::Mcg, mcg), Table::Mcg)[me::num_qp];
        if (held >= std::min<std::uint64_t>(cap(cb::max_mcast_qp_attach), hw::kMcgQpSlots)) {
            fail(r, CmdStatus::NoResources, Syndrome::McgFull);
            return;
        }
    } else if (!mcgn_.alloc(mcg)) {
        fail(r, CmdStatus::NoResources, Syndrome::TableFull);
        return;
    }
    fence(Table::Mcg, mcg);
    Entry e(ent(Table::Mcg, mcg), Table::Mcg);
    if (e[me::valid] == 0) {
        e.clear();
        hw::set_bytes(e.p, e.n, me::mgid, mgid.data(), mgid.size());
        e.set(me::valid, 1);
    }
    const auto k = static_cast<std::uint32_t>(e[me::num_qp]);
    e.set(qpn_slot(k), qpn);
    e.set(me::num_qp, k + 1);
    unfence(Table::Mcg, mcg);
    mcg_by_gid_[mgid] = mcg;
    qp_mcgs_[qpn].insert(mcg);
    ++mcg_attach_;
}

void Firmware::cmd_detach_mcast(Ctx& c, In in, std::size_t n, Out& r) {
    std::uint32_t qpn = 0;
    std::array<std::uint8_t, 16> mgid{};
    if (!mcast_args(c, in, n, r, qpn, mgid)) return;
    auto it = mcg_by_gid_.find(mgid);
    auto q = qp_mcgs_.find(qpn);
    if (it == mcg_by_gid_.end() || q == qp_mcgs_.end() || q->second.count(it->second) == 0) {
        fail(r, CmdStatus::BadParam, Syndrome::NotAttached);
        return;
    }
    mcg_remove(it->second, qpn);
}

void Firmware::mcg_remove(std::uint32_t mcg, std::uint32_t qpn) {
    fence(Table::Mcg, mcg);
    Entry e(ent(Table::Mcg, mcg), Table::Mcg);
    const auto k = static_cast<std::uint32_t>(e[me::num_qp]);
    for (std::uint32_t i = 0; i < k; ++i) {
        if (e[qpn_slot(i)] != qpn) continue;
        // The last slot moves into the freed one: the first num_qp slots
        // stay the group.
        e.set(qpn_slot(i), e[qpn_slot(k - 1)]);
        e.set(qpn_slot(k - 1), 0);
        e.set(me::num_qp, k - 1);
        break;
    }
    std::array<std::uint8_t, 16> mgid{};
    hw::get_bytes(e.p, e.n, me::mgid, mgid.data(), mgid.size());
    const bool last = e[me::num_qp] == 0;
    if (last) e.clear();
    unfence(Table::Mcg, mcg);
    if (last) {
        mcg_by_gid_.erase(mgid);
        mcgn_.free(mcg);
    }
    auto q = qp_mcgs_.find(qpn);
    if (q != qp_mcgs_.end()) {
        q->second.erase(mcg);
        if (q->second.empty()) qp_mcgs_.erase(q);
    }
    --mcg_attach_;
}

void Firmware::mcg_drop_qp(std::uint32_t qpn) {
    auto q = qp_mcgs_.find(qpn);
    if (q == qp_mcgs_.end()) return;
    const std::set<std::uint32_t> groups = q->second;
    for (std::uint32_t mcg : groups) mcg_remove(mcg, qpn);
}

}  // namespace simnic::fw
