// A fabric's topology, from TOML (issue 15, section 1): the hosts (model
// devices, each with its own MAC and IPv4 address), the link from each host
// to the switch (line rate, propagation delay) and the switch's settings
// (SwitchConfig). docs/model.md, "The fabric", has the format; examples in
// docs/examples/fabric/.
//
// One switch (host i on its port i), or a two-tier leaf-spine: hosts with
// `leaf = L` are on leaf switch L, every leaf has an uplink to every spine,
// and a frame for a host on another leaf goes up to spine (destination
// host's index mod spines) and down to that host's leaf: static routes, no
// ECMP hashing, so a flow keeps its order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "simnic/model/fabric/switch_config.h"

namespace simnic::model::fabric {

struct HostSpec {
    std::string name;
    roce::MacAddr mac{};
    std::uint32_t ipv4 = 0;  // host order
    // The host's link to the switch: both ends run at this rate (the
    // device's MAC and the switch port), and a frame's bits take this long
    // to cross it.
    double rate_gbps = 100;
    std::uint64_t delay_ps = 500'000;  // 100 m of fibre, about 5 ns/m
    int leaf = -1;  // leaf-spine: its leaf switch; -1: the single switch
};

// Where a switch port leads: a host, or another switch's port.
struct PortPeer {
    bool host = true;
    std::uint32_t index = 0;  // the host, or the peer switch
    std::uint32_t port = 0;   // the peer switch's port
    double rate_gbps = 100;
    std::uint64_t delay_ps = 0;
};

struct Topology {
    std::vector<HostSpec> hosts;
    SwitchConfig sw;  // one switch: ports and fdb filled from the hosts; leaf-spine: every switch's settings
    // Leaf-spine ([spine] and hosts with `leaf`): the switches, leaves
    // first (leaf L is switch L), then the spines, each with its ports and
    // forwarding table; empty with one switch. `peers[s][p]`: where port p
    // of switch s leads. `host_at[i]`: host i's (switch, port).
    std::uint32_t leaves = 0, spines = 0;
    double uplink_rate_gbps = 100;         // every leaf-spine link ([spine] rate_gbps, delay_ns)
    std::uint64_t uplink_delay_ps = 500'000;
    std::vector<SwitchConfig> switches;
    std::vector<std::vector<PortPeer>> peers;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> host_at;
    // Builds switches, peers and host_at for a single switch too (one
    // switch, `sw`, host i on port i): what the fabric uses.
    void build();
};

// Parses a topology; `origin` names the text in messages (its file name).
// Every problem is reported, one per line, as "origin:line:column: key: what".
bool parse_topology(const std::string& text, const std::string& origin, Topology& out, std::string& err);
bool load_topology(const std::string& path, Topology& out, std::string& err);

// "02:00:00:00:00:01" -> MAC; "10.0.0.1" -> host-order IPv4.
bool parse_mac(const std::string& s, roce::MacAddr& out);
bool parse_ipv4(const std::string& s, std::uint32_t& out);
std::string mac_text(const roce::MacAddr& m);
std::string ipv4_text(std::uint32_t a);

}  // namespace simnic::model::fabric
