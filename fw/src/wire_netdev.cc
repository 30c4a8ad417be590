// SPDX-License-Identifier: Apache-2.0
#include "simnic/fw/wire_netdev.h"

#include <algorithm>
#include <utility>

#include "simnic/fw/gid.h"

namespace simnic::fw {

WireNetdev::WireNetdev(std::string name, const Mac& mac, std::uint32_t mtu, const std::array<std::uint8_t, 4>& ipv4,
                       const std::vector<Gid>& ipv6, Resolver resolve)
    : resolve_(std::move(resolve)) {
    snap_.name = std::move(name);
    snap_.ifindex = 0;  // no netdev: what the kernel reports for a GID without one
    snap_.mac = mac;
    snap_.mtu = mtu;
    snap_.up = snap_.running = true;
    snap_.ipv4 = {ipv4};
    // The kernel lists an Ethernet netdev's EUI-64 link-local address among
    // its IPv6 addresses; the GID table takes it as GID 0.
    snap_.ipv6.push_back(default_gid(mac));
    for (const Gid& g : ipv6)
        if (std::find(snap_.ipv6.begin(), snap_.ipv6.end(), g) == snap_.ipv6.end()) snap_.ipv6.push_back(g);
}

}  // namespace simnic::fw
