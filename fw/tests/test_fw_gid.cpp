// SPDX-License-Identifier: Apache-2.0
// GID table and port attributes from a netdev, as rxe derives them; netdev
// changes and their async events; the real `lo`.
#include <arpa/inet.h>

#include "fw_test_util.h"
#include "simnic/fw/linux_netdev.h"
#include "simnic/fw/wire_netdev.h"
#include "simnic/roce/rules.h"

using namespace simnic::fw;
using namespace simnic::fw::test;
using hw::CmdOpcode;
using hw::EventType;

namespace {
Gid parse(const char* s) {
    Gid g{};
    REQUIRE(inet_pton(AF_INET6, s, g.data()) == 1);
    return g;
}
struct Table_ {
    Dev& d;
    bool valid(std::uint32_t i) { return hw::get(d.store->entry(Table::Gid, i), hw::gid_entry::kSize, hw::gid_entry::valid); }
    Gid gid(std::uint32_t i) {
        Gid g{};
        hw::get_bytes(d.store->entry(Table::Gid, i), hw::gid_entry::kSize, hw::gid_entry::gid, g.data(), g.size());
        return g;
    }
    std::uint64_t f(std::uint32_t i, hw::Field fl) { return hw::get(d.store->entry(Table::Gid, i), hw::gid_entry::kSize, fl); }
};
std::uint64_t port(Dev& d, hw::Field f) {
    const auto p = d.fw->port_block();
    return hw::get(p.data(), p.size(), f);
}
}  // namespace

TEST_CASE("GID derivation: EUI-64 link-local and IPv4-mapped", "[fw][gid]") {
    const Mac mac{0x52, 0x54, 0x00, 0x12, 0x34, 0x56};
    CHECK(default_gid(mac) == parse("fe80::5054:ff:fe12:3456"));
    CHECK(ipv4_mapped_gid({10, 1, 2, 3}) == parse("::ffff:10.1.2.3"));
    CHECK(is_ipv4_mapped(parse("::ffff:10.1.2.3")));
    CHECK_FALSE(is_ipv4_mapped(parse("fe80::1")));
    CHECK(guid_from_mac(mac) == 0x505400fffe123456ull);
    // lo: six zero bytes -> U/L bit flipped -> fe80::200:ff:fe00:0.
    CHECK(default_gid(Mac{}) == parse("fe80::200:ff:fe00:0"));
}

TEST_CASE("GID table from a fake netdev", "[fw][gid]") {
    Dev d;
    Table_ t{d};
    CHECK(t.gid(0) == parse("fe80::5054:ff:fe12:3456"));
    CHECK(t.f(0, hw::gid_entry::net_type) == 1);
    CHECK(t.f(0, hw::gid_entry::gid_type) == 2);
    CHECK(t.gid(1) == parse("::ffff:10.1.2.3"));
    CHECK(t.f(1, hw::gid_entry::net_type) == 0);
    // The EUI-64 link-local IPv6 address is GID 0 already: not listed twice.
    CHECK(t.gid(2) == parse("2001:db8::1"));
    CHECK(t.f(2, hw::gid_entry::net_type) == 1);
    CHECK_FALSE(t.valid(3));
    CHECK(d.sink.events.empty());

    // Address added: lowest free index, GID_CHANGE to every context, and
    // one more generation (hw-spec 2.5: what a driver's GID cache checks).
    const std::uint64_t gen0 = port(d, hw::port_block::gid_gen);
    REQUIRE(d.fw->open_context(2, 7) == hw::CmdStatus::Ok);
    d.netdev.snap.ipv4.push_back({192, 168, 0, 9});
    d.fw->refresh_netdev();
    CHECK(t.gid(3) == parse("::ffff:192.168.0.9"));
    CHECK(port(d, hw::port_block::gid_gen) == gen0 + 1);
    REQUIRE(d.sink.events.size() == 2);
    for (const Event& e : d.sink.events) {
        CHECK(e.type == static_cast<std::uint8_t>(EventType::GidChange));
        CHECK(e.obj == 1);
        CHECK(e.aux == 3);
    }
    // Address removed: its entry cleared, the others keep their index.
    d.sink.events.clear();
    d.netdev.snap.ipv4.erase(d.netdev.snap.ipv4.begin());
    d.fw->refresh_netdev();
    CHECK_FALSE(t.valid(1));
    CHECK(port(d, hw::port_block::gid_gen) == gen0 + 2);
    CHECK(t.gid(2) == parse("2001:db8::1"));
    CHECK(t.gid(3) == parse("::ffff:192.168.0.9"));
    REQUIRE(d.sink.events.size() == 2);
    CHECK(d.sink.events[0].aux == 1);
    // Another new address reuses index 1.
    d.sink.events.clear();
    d.netdev.snap.ipv6.push_back(parse("2001:db8::2"));
    d.fw->refresh_netdev();
    CHECK(t.gid(1) == parse("2001:db8::2"));
    CHECK(port(d, hw::port_block::gid_gen) == gen0 + 3);
    // Nothing changed: no events, the same generation.
    d.sink.events.clear();
    d.fw->refresh_netdev();
    CHECK(d.sink.events.empty());
    CHECK(port(d, hw::port_block::gid_gen) == gen0 + 3);
    // MAC change (the kernel changes the EUI-64 link-local address with it)
    // rewrites GID 0 only.
    d.netdev.snap.mac[5] = 0x57;
    d.netdev.snap.ipv6[0][15] = 0x57;
    d.fw->refresh_netdev();
    CHECK(t.gid(0) == parse("fe80::5054:ff:fe12:3457"));
    CHECK(d.sink.events.size() == 2);
    CHECK(port(d, hw::port_block::gid_gen) == gen0 + 4);  // one refresh, one generation
}

TEST_CASE("Port state and MTU follow the netdev, PORT_ACTIVE / PORT_ERR", "[fw][gid]") {
    Dev d;
    namespace pb = hw::port_block;
    CHECK(port(d, pb::state) == 4);
    d.netdev.snap.running = false;  // carrier lost
    d.fw->refresh_netdev();
    CHECK(port(d, pb::state) == 1);
    CHECK(port(d, pb::phys_state) == 2);
    REQUIRE(d.sink.events.size() == 1);
    CHECK(d.sink.events[0].type == static_cast<std::uint8_t>(EventType::PortErr));
    CHECK(d.sink.events[0].obj == 1);
    d.netdev.snap.running = true;
    d.netdev.snap.mtu = 9000;
    d.fw->refresh_netdev();
    CHECK(port(d, pb::state) == 4);
    CHECK(port(d, pb::phys_state) == 5);
    CHECK(port(d, pb::active_mtu) == 5);
    CHECK(port(d, pb::netdev_mtu) == 9000);
    REQUIRE(d.sink.events.size() == 2);
    CHECK(d.sink.events[1].type == static_cast<std::uint8_t>(EventType::PortActive));
    for (auto [mtu, ib] : {std::pair{1500u, 3u}, {1104u, 3u}, {1103u, 2u}, {1000u, 2u}, {2200u, 4u},
                           {4175u, 4u}, {4176u, 5u}, {65536u, 5u}, {300u, 1u}}) {
        d.netdev.snap.mtu = mtu;
        d.fw->refresh_netdev();
        INFO("netdev mtu " << mtu);
        CHECK(port(d, pb::active_mtu) == ib);
        CHECK(ib == static_cast<unsigned>(simnic::roce::rxe_active_mtu(static_cast<int>(mtu))));
    }
    // Netdev gone: port down.
    d.netdev.gone = true;
    d.fw->refresh_netdev();
    CHECK(port(d, pb::state) == 1);
    // ID block: node GUID from the port MAC.
    const auto id = d.fw->id_block(hw::EngineKind::Soft, 3);
    CHECK(hw::get(id.data(), id.size(), hw::id_block::node_guid) == 0x505400fffe123456ull);
    CHECK(hw::get(id.data(), id.size(), hw::id_block::vendor_id) == 0xFFFFFF);
    CHECK(hw::get(id.data(), id.size(), hw::id_block::device_index) == 3);
    CHECK(hw::get(id.data(), id.size(), hw::id_block::magic) == hw::kMagic);
}

TEST_CASE("The real lo: GIDs, MTU 65536 -> 4096, PORT_ACTIVE", "[fw][gid][lo]") {
    LinuxNetdev lo("lo");
    const std::optional<NetdevSnapshot> snap = lo.query();
    REQUIRE(snap);
    CHECK(snap->ifindex >= 1);
    CHECK(snap->mac == Mac{});
    CHECK(snap->up);
    const std::vector<Gid> gids = netdev_gids(*snap);
    REQUIRE(!gids.empty());
    CHECK(gids[0] == parse("fe80::200:ff:fe00:0"));
    bool has_127 = false;
    for (const Gid& g : gids) has_127 |= g == parse("::ffff:127.0.0.1");
    CHECK(has_127);
    CHECK(gids[1] == parse("::ffff:127.0.0.1"));  // IPv4 before IPv6, as ib_core enumerates

    FwConfig cfg;
    cfg.cap = default_cap_block(small_limits());
    hw::set(cfg.cap.data(), cfg.cap.size(), hw::cap_block::max_qp, 64);
    MemTableStore store(table_capacities(cfg.cap.data(), cfg.gid_tbl_len));
    RecordingSink sink;
    Firmware fw(cfg, store, lo, sink);
    const auto p = fw.port_block();
    namespace pb = hw::port_block;
    CHECK(hw::get(p.data(), p.size(), pb::netdev_mtu) == snap->mtu);
    if (snap->mtu == 65536) CHECK(hw::get(p.data(), p.size(), pb::active_mtu) == 5);
    CHECK(hw::get(p.data(), p.size(), pb::state) == (snap->running ? 4u : 1u));
    Gid g0{};
    hw::get_bytes(store.entry(Table::Gid, 0), hw::gid_entry::kSize, hw::gid_entry::gid, g0.data(), g0.size());
    CHECK(g0 == parse("fe80::200:ff:fe00:0"));
    // A local GID resolves to the port MAC without a neighbour lookup.
    REQUIRE(fw.open_context(0, 1) == hw::CmdStatus::Ok);
    const CmdResult pd = fw.execute(0, static_cast<std::uint16_t>(CmdOpcode::AllocPd), nullptr, 0, 4);
    REQUIRE(pd.ok());
    namespace ah = hw::cmd_create_ah_in;
    const Gid dst = parse("::ffff:127.0.0.1");
    Mbox m = Mbox(ah::kSize).set(ah::pdn, 1).set(ah::port_num, 1).bytes(ah::av_dgid, dst.data(), dst.size())
                 .set(ah::av_sgid_index, 1).set(ah::av_grh, 1);
    CHECK(fw.execute(0, static_cast<std::uint16_t>(CmdOpcode::CreateAh), m.b.data(), m.b.size(), 4).ok());
}

TEST_CASE("A link-local DGID resolves to the MAC its EUI-64 encodes, with no neighbour lookup", "[fw][gid]") {
    CHECK(is_link_local(parse("fe80::5054:ff:fe12:3456")));
    CHECK_FALSE(is_link_local(parse("fe80:1::5054:ff:fe12:3456")));
    CHECK_FALSE(is_link_local(parse("2001:db8::1")));
    CHECK_FALSE(is_link_local(parse("::ffff:10.1.2.3")));
    CHECK(mac_from_link_local(parse("fe80::5054:ff:fe12:3456")) == Mac{0x52, 0x54, 0x00, 0x12, 0x34, 0x56});
    // Round trip through the default GID of a MAC.
    const Mac mac{0x0a, 0x1b, 0x2c, 0x3d, 0x4e, 0x5f};
    CHECK(mac_from_link_local(default_gid(mac)) == mac);
}

TEST_CASE("A wire port's netdev: GIDs as rxe's on that netdev, port active, neighbours from the port", "[fw][gid]") {
    const Mac mac{0x02, 0x11, 0x22, 0x33, 0x44, 0x55};
    std::vector<Gid> asked;
    std::optional<Mac> answer;  // the port's table: unknown at first
    WireNetdev wn("127.0.0.1:47000", mac, 1500, {10, 0, 0, 10}, {parse("fd00::10"), parse("fe80::11:22ff:fe33:4455")},
                  [&](const Gid& g) {
                      asked.push_back(g);
                      return answer;
                  });
    const std::optional<NetdevSnapshot> snap = wn.query();
    REQUIRE(snap);
    CHECK(snap->up);
    CHECK(snap->running);
    CHECK(snap->mtu == 1500);
    CHECK(snap->ifindex == 0);
    // The link-local address is the EUI-64 one, listed once.
    CHECK(snap->ipv6 == std::vector<Gid>{parse("fe80::11:22ff:fe33:4455"), parse("fd00::10")});

    FwConfig cfg;
    cfg.cap = default_cap_block(small_limits());
    hw::set(cfg.cap.data(), cfg.cap.size(), hw::cap_block::max_qp, 64);
    MemTableStore store(table_capacities(cfg.cap.data(), cfg.gid_tbl_len));
    RecordingSink sink;
    Firmware fw(cfg, store, wn, sink);
    auto gid = [&](std::uint32_t i) {
        Gid g{};
        hw::get_bytes(store.entry(Table::Gid, i), hw::gid_entry::kSize, hw::gid_entry::gid, g.data(), g.size());
        return g;
    };
    CHECK(gid(0) == parse("fe80::11:22ff:fe33:4455"));
    CHECK(gid(1) == parse("::ffff:10.0.0.10"));
    CHECK(gid(2) == parse("fd00::10"));
    CHECK_FALSE(hw::get(store.entry(Table::Gid, 3), hw::gid_entry::kSize, hw::gid_entry::valid));
    const auto p = fw.port_block();
    namespace pb = hw::port_block;
    CHECK(hw::get(p.data(), p.size(), pb::state) == 4u);  // ACTIVE
    CHECK(hw::get(p.data(), p.size(), pb::active_mtu) == 3u);  // 1500 -> 1024, as rxe
    Mac pm{};
    hw::get_bytes(p.data(), p.size(), pb::mac, pm.data(), pm.size());
    CHECK(pm == mac);

    // An AH to a peer on the wire asks the port; unknown: AGAIN (the
    // provider retries); once the port knows it, the AH is made.
    REQUIRE(fw.open_context(0, 1) == hw::CmdStatus::Ok);
    REQUIRE(fw.execute(0, static_cast<std::uint16_t>(CmdOpcode::AllocPd), nullptr, 0, 4).ok());
    namespace ah = hw::cmd_create_ah_in;
    const Gid dst = parse("::ffff:10.0.0.1");
    Mbox m = Mbox(ah::kSize).set(ah::pdn, 1).set(ah::port_num, 1).bytes(ah::av_dgid, dst.data(), dst.size())
                 .set(ah::av_sgid_index, 1).set(ah::av_grh, 1);
    const CmdResult r = fw.execute(0, static_cast<std::uint16_t>(CmdOpcode::CreateAh), m.b.data(), m.b.size(), 4);
    CHECK(r.status == hw::CmdStatus::Again);
    REQUIRE(asked.size() == 1);
    CHECK(asked[0] == dst);
    answer = Mac{0x52, 0x54, 0x00, 0x5e, 0x00, 0x01};
    m.set(ah::av_hop_limit, 1);  // what ibv_rc_pingpong asks for
    const CmdResult made = fw.execute(0, static_cast<std::uint16_t>(CmdOpcode::CreateAh), m.b.data(), m.b.size(), 4);
    REQUIRE(made.ok());
    // The AH holds the peer's MAC, and the route's hop limit, as ib_core
    // gives rxe for a DGID that is not link-local.
    const std::uint32_t ahn = static_cast<std::uint32_t>(out(made, hw::cmd_handle::handle));
    const std::uint8_t* a = store.entry(Table::Ah, ahn);
    Mac am{};
    hw::get_bytes(a, hw::ah_entry::kSize, hw::ah_entry::av_dmac, am.data(), am.size());
    CHECK(am == *answer);
    CHECK(hw::get(a, hw::ah_entry::kSize, hw::ah_entry::av_hop_limit) == 64);
    // Its own address needs no lookup.
    const Gid self = parse("::ffff:10.0.0.10");
    Mbox m2 = Mbox(ah::kSize).set(ah::pdn, 1).set(ah::port_num, 1).bytes(ah::av_dgid, self.data(), self.size())
                  .set(ah::av_sgid_index, 1).set(ah::av_grh, 1);
    CHECK(fw.execute(0, static_cast<std::uint16_t>(CmdOpcode::CreateAh), m2.b.data(), m2.b.size(), 4).ok());
    CHECK(asked.size() == 2);
    // A link-local DGID is not routed: its MAC from the EUI-64, the hop
    // limit as asked.
    const Gid ll = parse("fe80::5054:ff:fe5e:1");
    Mbox m3 = Mbox(ah::kSize).set(ah::pdn, 1).set(ah::port_num, 1).bytes(ah::av_dgid, ll.data(), ll.size())
                  .set(ah::av_sgid_index, 0).set(ah::av_grh, 1).set(ah::av_hop_limit, 1);
    const CmdResult r3 = fw.execute(0, static_cast<std::uint16_t>(CmdOpcode::CreateAh), m3.b.data(), m3.b.size(), 4);
    REQUIRE(r3.ok());
    const std::uint8_t* a3 = store.entry(Table::Ah, static_cast<std::uint32_t>(out(r3, hw::cmd_handle::handle)));
    CHECK(hw::get(a3, hw::ah_entry::kSize, hw::ah_entry::av_hop_limit) == 1);
    CHECK(asked.size() == 2);
}
