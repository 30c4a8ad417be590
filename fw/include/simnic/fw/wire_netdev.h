// SPDX-License-Identifier: Apache-2.0
// simnic firmware: NetdevInfo for a device whose port is on a wire of frames
// (`simnic link add ... wire HOST:PORT addr A.B.C.D/N`) instead of a netdev.
// The port is the device's netdev: its MAC, MTU and addresses are the
// device's own, fixed when it was added, and it is always up (a wire has no
// carrier to lose). Its IPv6 addresses begin with the link-local one the
// kernel would form from the MAC (fe80::EUI-64), so the GID table holds what
// rxe's would on such a netdev: GID 0 fe80::EUI-64, then ::ffff:a.b.c.d,
// then any other IPv6 address. Neighbours come from the port's own table
// (ARP and neighbour discovery on the wire), through `resolve`.
#pragma once

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "simnic/fw/interfaces.h"

namespace simnic::fw {

class WireNetdev final : public NetdevInfo {
public:
    // The port's next-hop MAC for a GID, having started resolution when it
    // is unknown (the firmware's caller retries, as with LinuxNetdev). Called
    // on the firmware's thread; the port must allow that.
    using Resolver = std::function<std::optional<Mac>(const Gid& dgid)>;

    // `name` names the port in messages (the wire's endpoint); `ipv6` are
    // the addresses besides the link-local one.
    WireNetdev(std::string name, const Mac& mac, std::uint32_t mtu, const std::array<std::uint8_t, 4>& ipv4,
               const std::vector<Gid>& ipv6, Resolver resolve);
    std::optional<NetdevSnapshot> query() override { return snap_; }
    std::optional<Mac> resolve_neighbor(const Gid& dgid) override { return resolve_(dgid); }

private:
    NetdevSnapshot snap_;
    Resolver resolve_;
};

}  // namespace simnic::fw
