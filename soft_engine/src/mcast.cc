// Multicast (hw-spec 9.10), as rxe_mcast.c and rxe_rcv_mcast_pkt have it:
// the engine's index of the MCG table, the port's group memberships that
// follow it, and the fan-out of a multicast packet to every attached QP.
#include <sys/epoll.h>

#include <algorithm>

#include "engine_internal.h"

namespace simnic::soft_engine {

namespace {

// The IP address a GID names (IPv4-mapped or IPv6).
IpAddr ip_of(const std::array<uint8_t, 16>& g) {
    static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    IpAddr a;
    if (std::equal(kMapped, kMapped + 12, g.begin())) {
        a.v4 = uint32_t(g[12]) << 24 | uint32_t(g[13]) << 16 | uint32_t(g[14]) << 8 | g[15];
    } else {
        a.version = roce::IpVersion::V6;
        std::copy(g.begin(), g.end(), a.v6.begin());
    }
    return a;
}

}  // namespace

// Called when the firmware releases its fence on MCG entry `index` (under
// the engine lock): the entry is read again, and the port joins a group
// that appeared and leaves one that went.
void SoftEngine::Impl::reload_mcg(uint32_t index) {
    namespace me = hw::mcg_entry;
    const uint8_t* e = entry(Table::Mcg, index);
    std::optional<Gid> before;
    if (auto it = mcg_gids.find(index); it != mcg_gids.end()) {
        before = it->second;
        mcgs.erase(it->second);
        mcg_gids.erase(it);
    }
    std::optional<Gid> now;
    if (e && g(e, Table::Mcg, me::valid)) {
        Gid mgid{};
        hw::get_bytes(e, me::kSize, me::mgid, mgid.data(), mgid.size());
        const auto n = std::min<uint64_t>(g(e, Table::Mcg, me::num_qp), hw::kMcgQpSlots);
        std::vector<uint32_t> qpns;
        for (uint32_t k = 0; k < n; ++k) {
            hw::Field f = me::qpn;
            f.offset += k * hw::kMcgQpStride;
            qpns.push_back(uint32_t(g(e, Table::Mcg, f)));
        }
        mcgs[mgid] = std::move(qpns);
        mcg_gids[index] = mgid;
        now = mgid;
    }
    if (before && before != now) port_group(*before, false);
    if (now && before != now) port_group(*now, true);
}

void SoftEngine::Impl::port_group(const Gid& mgid, bool join) {
    if (!port) return;
    port->set_group(ip_of(mgid), join);
    // The port's descriptors may have changed (a socket per group): the
    // sleep waits on what it has now. A closed descriptor left epoll by itself.
    std::vector<int> fds = port->fds();
    for (int fd : fds) {
        if (fd < 0 || std::find(port_fds.begin(), port_fds.end(), fd) != port_fds.end()) continue;
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = fd;
        epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
    }
    port_fds = std::move(fds);
    wake();
}

void SoftEngine::Impl::rx_multicast(const roce::Packet& pkt) {
    Gid dgid{};
    if (pkt.ip_version == roce::IpVersion::V4) {
        dgid[10] = dgid[11] = 0xff;
        for (int i = 0; i < 4; ++i) dgid[size_t(12 + i)] = uint8_t(pkt.ip4.dst >> (24 - 8 * i));
    } else {
        std::copy(pkt.ip6.dst.begin(), pkt.ip6.dst.end(), dgid.begin());
    }
    auto it = hw::is_multicast_gid(dgid.data()) ? mcgs.find(dgid) : mcgs.end();
    if (it == mcgs.end()) {
        stat(hw::stats_block::rx_drops_no_qp);
        return;
    }
    // A copy of the QPN list: a QP's step may not change the group, but the
    // list must not be walked while anything could.
    const std::vector<uint32_t> members = it->second;
    bool delivered = false;
    for (uint32_t qpn : members) {
        auto q = qps.find(qpn);
        if (q == qps.end()) continue;
        const hw::QpState st = q->second->state();
        if (st == hw::QpState::Reset || st == hw::QpState::Init || ctx_gone(q->second->ctx)) continue;
        EngineQp& qp = *q->second;
        run(qp, [&] { qp.core->on_packet(pkt); });
        delivered = true;
    }
    if (!delivered) stat(hw::stats_block::rx_drops_no_qp);
}

}  // namespace simnic::soft_engine
