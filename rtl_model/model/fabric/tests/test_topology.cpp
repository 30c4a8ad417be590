// The fabric's topology parser (topology.h): the examples parse, and every
// bad input is refused with its place and key.
#include <catch2/catch.hpp>

#include <string>

#include "simnic/model/fabric/topology.h"

using namespace simnic::model::fabric;

namespace {

const char* kTwo = R"(
[[host]]
name = "a"
mac = "02:00:00:00:00:01"
ip = "10.0.0.1"

[[host]]
name = "b"
mac = "02:00:00:00:00:02"
ip = "10.0.0.2"
rate_gbps = 25
delay_ns = 1000
)";

std::string refused(const std::string& text) {
    Topology t;
    std::string err;
    REQUIRE_FALSE(parse_topology(text, "topo.toml", t, err));
    return err;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("topology: hosts, links and the switch's ports and table", "[topology]") {
    Topology t;
    std::string err;
    REQUIRE(parse_topology(std::string("[link]\nrate_gbps = 40\ndelay_ns = 250\n") + kTwo +
                               "\n[switch]\nbuffer_bytes = 1000000\n[switch.priority.3]\npfc = false\nkmin_bytes = 10000\n",
                           "t.toml", t, err));
    REQUIRE(t.hosts.size() == 2);
    CHECK(t.hosts[0].name == "a");
    CHECK(mac_text(t.hosts[0].mac) == "02:00:00:00:00:01");
    CHECK(ipv4_text(t.hosts[1].ipv4) == "10.0.0.2");
    CHECK(t.hosts[0].rate_gbps == 40);        // [link]'s default
    CHECK(t.hosts[0].delay_ps == 250'000);
    CHECK(t.hosts[1].rate_gbps == 25);        // its own
    CHECK(t.hosts[1].delay_ps == 1'000'000);
    REQUIRE(t.sw.ports.size() == 2);
    CHECK(t.sw.ports[1].line_rate_bps == 25'000'000'000ull);
    REQUIRE(t.sw.fdb.size() == 2);
    CHECK(t.sw.fdb[1].port == 1);
    CHECK(t.sw.buffer_bytes == 1'000'000);
    CHECK_FALSE(t.sw.priority[3].pfc);
    CHECK(t.sw.priority[3].ecn);              // the default kept
    CHECK(t.sw.priority[3].kmin_bytes == 10'000);
}

TEST_CASE("topology: the examples in docs/examples/fabric parse", "[topology]") {
    for (const char* f : {"incast2.toml", "incast8.toml"}) {
        Topology t;
        std::string err;
        INFO(f);
        REQUIRE(load_topology(std::string(SIMNIC_SOURCE_DIR) + "/docs/examples/fabric/" + f, t, err));
        CHECK(t.hosts.size() == (std::string(f) == "incast2.toml" ? 3u : 9u));
    }
}

TEST_CASE("topology: bad input is refused with file, line and key", "[topology]") {
    // TOML syntax.
    CHECK(has(refused("[[host]\n"), "topo.toml:1:"));
    // Unknown keys and tables, with their line.
    std::string e = refused(std::string(kTwo) + "[switch]\nbufer_bytes = 5\n");
    CHECK(has(e, "topo.toml:14:15: switch.bufer_bytes: unknown key"));
    CHECK(has(refused(std::string(kTwo) + "[spine]\nx = 1\n"), "spine: unknown table"));
    // Bad values.
    e = refused(R"([[host]]
name = "a"
mac = "02:00:00:00:00"
ip = "10.0.0.300"
[[host]]
name = "a"
mac = "03:00:00:00:00:01"
ip = "10.0.0.2"
rate_gbps = 0
)");
    CHECK(has(e, "topo.toml:3:7: host[0].mac: '02:00:00:00:00' is not a MAC address"));
    CHECK(has(e, "topo.toml:4:6: host[0].ip: '10.0.0.300' is not an IPv4 address"));
    CHECK(has(e, "host[1].mac: '03:00:00:00:00:01' is a multicast address"));
    CHECK(has(e, "topo.toml:9:13: host[1].rate_gbps: must be a number of at least"));
    CHECK(has(e, "host[1].name: 'a' names two hosts"));
    // Missing keys, duplicates, too few hosts.
    CHECK(has(refused("[[host]]\nname = \"x\"\n"), "host[0].mac: missing"));
    CHECK(has(refused("[[host]]\nname = \"x\"\nmac = \"02:00:00:00:00:01\"\nip = \"1.2.3.4\"\n"),
              "at least two hosts"));
    CHECK(has(refused(std::string(kTwo) + "[[host]]\nname = \"c\"\nmac = \"02:00:00:00:00:01\"\nip = \"10.0.0.1\"\n"),
              "host[2].mac: 02:00:00:00:00:01 is another host's too"));
    // Types and ranges.
    CHECK(has(refused(std::string(kTwo) + "[switch]\nbuffer_bytes = \"big\"\n"),
              "switch.buffer_bytes: must be a non-negative integer"));
    CHECK(has(refused(std::string(kTwo) + "[switch]\nscheduling = \"fair\"\n"), "'fair' is not a scheduling"));
    CHECK(has(refused(std::string(kTwo) + "[switch.priority.9]\necn = true\n"), "switch.priority.9: a priority is 0 to 7"));
    CHECK(has(refused(std::string(kTwo) + "[switch.priority.3]\npfc = 1\n"), "switch.priority.3.pfc: must be true or false"));
    // Cross-field rules of the switch (validate_switch_config).
    e = refused(std::string(kTwo) + "[switch.priority.3]\nkmin_bytes = 300000\nkmax_bytes = 200000\n");
    CHECK(has(e, "topo.toml: switch: "));
    Topology t;
    std::string err;
    CHECK_FALSE(load_topology("/nonexistent/topo.toml", t, err));
    CHECK(has(err, "cannot read"));
}
