// A fabric's topology, from TOML (issue 15, section 1): the hosts (model
// devices, each with its own MAC and IPv4 address), the link from each host
// to the switch (line rate, propagation delay) and the switch's settings
// (SwitchConfig). docs/model.md, "The fabric", has the format; examples in
// docs/examples/fabric/.
//
// One switch: host i is on switch port i. (A leaf-spine is not built yet.)
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
};

struct Topology {
    std::vector<HostSpec> hosts;
    SwitchConfig sw;  // ports and fdb filled from the hosts
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
