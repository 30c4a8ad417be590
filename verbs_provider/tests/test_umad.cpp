// libibumad's records of a simnic device (umad_ca.h) on an in-process
// device: what ibstat prints for kernel rxe, from the same queries as
// ibv_devinfo's answers. The exported umad_* functions are checked end to end
// by test_ibstat.sh.
#include <endian.h>

#include <cerrno>
#include <memory>

#include "local_device.h"
#include "umad_ca.h"

namespace sv = simnic::verbs;
namespace su = simnic::verbs::umad;
namespace host = simnic::host;
namespace fw = simnic::fw;

namespace {

// One device "sim0" on a fake eth0 (MAC 52:54:00:12:34:56) with rxe's
// limits, as the provider's device source.
using UmadRig = simnic::verbs::test::LocalDevice;

constexpr std::uint64_t kEui64 = 0x505400FFFE123456ull;  // of 52:54:00:12:34:56

}  // namespace

TEST_CASE("umad: sysfs rate from active width and speed", "[verbs][umad]") {
    CHECK(su::rate_gbps(1, 1) == 2);     // 1X SDR: "2.5 Gb/sec", ibstat prints 2.5
    CHECK(su::rate_gbps(2, 1) == 10);    // 4X SDR
    CHECK(su::rate_gbps(2, 4) == 40);    // 4X QDR
    CHECK(su::rate_gbps(2, 8) == 40);    // 4X FDR10
    CHECK(su::rate_gbps(2, 16) == 56);   // 4X FDR
    CHECK(su::rate_gbps(2, 32) == 100);  // 4X EDR
    CHECK(su::rate_gbps(8, 64) == 600);  // 12X HDR
    CHECK(su::rate_gbps(16, 128) == 200);  // 2X NDR
    CHECK(su::rate_gbps(0, 1) == 0);     // no such width
}

TEST_CASE("umad: a simnic CA as kernel rxe's sysfs describes it", "[verbs][umad]") {
    UmadRig rig;
    CHECK(su::is_device("sim0"));
    CHECK_FALSE(su::is_device("mlx5_0"));
    CHECK_FALSE(su::is_device(nullptr));
    std::vector<std::string> names;
    REQUIRE(su::device_names(names) == 0);
    CHECK(names == std::vector<std::string>{"sim0"});

    su::Ca ca;
    REQUIRE(su::get_ca("sim0", &ca) == 0);
    CHECK(std::string(ca.ca_name) == "sim0");
    CHECK(ca.node_type == 1u);
    CHECK(ca.numports == 1);
    CHECK_FALSE(std::string(ca.fw_ver).empty());  // ibv_devinfo's fw_ver, below
    CHECK(std::string(ca.hw_ver).empty());     // rxe has no hw_rev file
    CHECK(std::string(ca.ca_type).empty());
    CHECK(be64toh(ca.node_guid) == kEui64);
    CHECK(ca.ports[0] == nullptr);
    REQUIRE(ca.ports[1] != nullptr);
    for (int i = 2; i < su::kCaMaxPorts; ++i) CHECK(ca.ports[i] == nullptr);

    // The port agrees with ibv_query_port / ibv_query_gid on the same device.
    const su::Port& p = *ca.ports[1];
    ibv_context* ctx = sv::open_device([] {
        std::vector<ibv_device*> d;
        sv::current_devices(d);
        return d.at(0);
    }());
    REQUIRE(ctx != nullptr);
    ibv_port_attr pa;
    REQUIRE(sv::query_port(ctx, 1, &pa, sizeof pa) == 0);
    ibv_device_attr da;
    REQUIRE(sv::query_device(ctx, &da) == 0);
    CHECK(ca.system_guid == da.sys_image_guid);
    CHECK(std::string(ca.fw_ver) == da.fw_ver);
    CHECK(std::string(p.ca_name) == "sim0");
    CHECK(p.portnum == 1);
    CHECK(p.state == static_cast<unsigned>(pa.state));
    CHECK(p.phys_state == pa.phys_state);
    CHECK(p.base_lid == 0u);
    CHECK(p.lmc == 0u);
    CHECK(p.sm_lid == 0u);
    CHECK(p.rate == su::rate_gbps(pa.active_width, pa.active_speed));
    CHECK(be32toh(p.capmask) == pa.port_cap_flags);
    CHECK(std::string(p.link_layer) == "Ethernet");
    ibv_gid g0;
    REQUIRE(sv::query_gid(ctx, 1, 0, &g0) == 0);
    CHECK(be64toh(p.gid_prefix) == 0xFE80000000000000ull);
    CHECK(be64toh(p.port_guid) == kEui64);
    REQUIRE(p.pkeys_size == pa.pkey_tbl_len);
    REQUIRE(p.pkeys != nullptr);
    CHECK(p.pkeys[0] == 0xFFFF);
    CHECK(sv::close_device(ctx) == 0);
    su::release_ca(&ca);
    CHECK(ca.ports[1] == nullptr);
}

TEST_CASE("umad: ports, port GUIDs and bad input", "[verbs][umad]") {
    UmadRig rig;
    su::Port p;
    REQUIRE(su::get_port("sim0", 0, &p) == 0);  // 0: the first active port
    CHECK(p.portnum == 1);
    CHECK(be64toh(p.port_guid) == kEui64);
    su::release_port(&p);
    CHECK(p.pkeys == nullptr);
    REQUIRE(su::get_port("sim0", 1, &p) == 0);
    su::release_port(&p);
    CHECK(su::get_port("sim0", 2, &p) == -EIO);
    CHECK(su::get_port("nosuch", 1, &p) == -ENODEV);
    CHECK(su::get_port("sim0", 1, nullptr) == -EINVAL);

    __be64 guids[4] = {1, 1, 1, 1};
    CHECK(su::get_ca_portguids("sim0", guids, 4) == 2);
    CHECK(guids[0] == 0);
    CHECK(be64toh(guids[1]) == kEui64);
    CHECK(su::get_ca_portguids("sim0", guids, 1) == -ENOMEM);
    CHECK(su::get_ca_portguids("sim0", nullptr, 0) == 0);
    CHECK(su::get_ca_portguids("nosuch", guids, 4) == -ENODEV);

    su::Ca ca;
    CHECK(su::get_ca("nosuch", &ca) == -ENODEV);
    CHECK(su::get_ca(nullptr, &ca) == -EINVAL);
    CHECK(su::get_ca("sim0", nullptr) == -EINVAL);
}
