// The fabric's topology parser (topology.h): the examples parse, and every
// bad input is refused with its place and key.
#include <catch2/catch.hpp>

#include <string>

#include "simnic/model/fabric/topology.h"

// No SystemC runs here, but the topology's switch settings come with the
// switch's library, which links libsystemc, and libsystemc wants an
// sc_main: a linker that keeps every named library (clang's, in the
// sanitizer build) fails without this stub, one that drops unused ones
// (gcc's --as-needed) never asks for it.
extern "C" int sc_main(int, char**) { return 0; }  // as sc_externs.h declares it

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
    for (const char* f : {"incast2.toml", "incast8.toml", "leafspine.toml"}) {
        Topology t;
        std::string err;
        INFO(f);
        REQUIRE(load_topology(std::string(SIMNIC_SOURCE_DIR) + "/docs/examples/fabric/" + f, t, err));
        const std::string n(f);
        CHECK(t.hosts.size() == (n == "incast2.toml" ? 3u : n == "incast8.toml" ? 9u : 4u));
        CHECK(t.switches.size() == (n == "leafspine.toml" ? 3u : 1u));
    }
}

TEST_CASE("topology: bad input is refused with file, line and key", "[topology]") {
    // TOML syntax.
    CHECK(has(refused("[[host]\n"), "topo.toml:1:"));
    // Unknown keys and tables, with their line.
    std::string e = refused(std::string(kTwo) + "[switch]\nbufer_bytes = 5\n");
    CHECK(has(e, "topo.toml:14:15: switch.bufer_bytes: unknown key"));
    CHECK(has(refused(std::string(kTwo) + "[spines]\nx = 1\n"), "spines: unknown table"));
    CHECK(has(refused(std::string(kTwo) + "[spine]\nx = 1\n"), "spine.x: unknown key"));
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

TEST_CASE("topology: a leaf-spine, its ports, peers and routes", "[topology]") {
    Topology t;
    std::string err;
    const std::string text = R"(
[spine]
count = 2
rate_gbps = 400
delay_ns = 200
[[host]]
name = "a"
mac = "02:00:00:00:00:01"
ip = "10.0.0.1"
leaf = 0
[[host]]
name = "b"
mac = "02:00:00:00:00:02"
ip = "10.0.0.2"
leaf = 1
[[host]]
name = "c"
mac = "02:00:00:00:00:03"
ip = "10.0.0.3"
leaf = 1
)";
    REQUIRE(parse_topology(text, "ls.toml", t, err));
    CHECK(t.leaves == 2);
    CHECK(t.spines == 2);
    REQUIRE(t.switches.size() == 4);
    // Leaf 1: b on port 0, c on port 1, uplinks to spines 0 and 1 on 2, 3.
    CHECK(t.host_at[2] == std::make_pair(1u, 1u));
    REQUIRE(t.switches[1].ports.size() == 4);
    CHECK(t.switches[1].ports[2].line_rate_bps == 400'000'000'000ull);
    CHECK_FALSE(t.peers[1][3].host);
    CHECK(t.peers[1][3].index == 3);  // spine 1 is switch 3
    CHECK(t.peers[1][3].port == 1);   // its port to leaf 1
    CHECK(t.peers[1][3].delay_ps == 200'000);
    // a (host 0) from leaf 1: up to spine 0 % 2 = 0, port 2.
    for (const auto& r : t.switches[1].fdb)
        if (r.mac == t.hosts[0].mac) CHECK(r.port == 2);
    // Spine 0: port 1 leads to leaf 1, port 2 of it.
    CHECK(t.peers[2][1].index == 1);
    CHECK(t.peers[2][1].port == 2);
    for (const auto& r : t.switches[3].fdb)
        if (r.mac == t.hosts[1].mac) CHECK(r.port == 1);
    // A single switch is built the same way: host i on port i.
    Topology one;
    REQUIRE(parse_topology(kTwo, "one.toml", one, err));
    REQUIRE(one.switches.size() == 1);
    CHECK(one.host_at[1] == std::make_pair(0u, 1u));
    CHECK(one.peers[0][1].host);
    // Errors: a host without a leaf, a leaf without hosts, one leaf only.
    CHECK(has(refused(std::string(kTwo) + "[spine]\n"), "host[0].leaf: missing"));
    std::string e = refused(R"([[host]]
name = "a"
mac = "02:00:00:00:00:01"
ip = "10.0.0.1"
leaf = 0
[[host]]
name = "b"
mac = "02:00:00:00:00:02"
ip = "10.0.0.2"
leaf = 2
)");
    CHECK(has(e, "leaf 1 has no host"));
    CHECK(has(refused(R"([[host]]
name = "a"
mac = "02:00:00:00:00:01"
ip = "10.0.0.1"
leaf = 0
[[host]]
name = "b"
mac = "02:00:00:00:00:02"
ip = "10.0.0.2"
leaf = 0
)"),
              "two leaves or more"));
    CHECK(has(refused(std::string(kTwo) + "[spine]\ncount = 0\n"), "spine.count: must be from 1 to 64"));
}
