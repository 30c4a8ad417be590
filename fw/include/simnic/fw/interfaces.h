// SPDX-License-Identifier: Apache-2.0
// simnic firmware: what the firmware needs from the outside world, as narrow
// interfaces. The daemon implements them; tests implement fakes. What the
// firmware and the engine share (the tables, EngineHooks, EventSink) is in
// simnic/hw/tables.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "simnic/fw/types.h"

namespace simnic::fw {

// ---------------------------------------------------------------------------
// The Ethernet interface the port is bound to.
// ---------------------------------------------------------------------------
struct NetdevSnapshot {
    std::string name;
    std::uint32_t ifindex = 0;
    Mac mac{};                  // all zero for lo (its address is 6 zero bytes)
    std::uint32_t mtu = 1500;
    bool up = false;            // IFF_UP
    bool running = false;       // IFF_RUNNING (carrier)
    // Addresses in the order the netdev lists them.
    std::vector<std::array<std::uint8_t, 4>> ipv4;
    std::vector<Gid> ipv6;
};

class NetdevInfo {
public:
    virtual ~NetdevInfo() = default;
    // The netdev's current attributes; nullopt if it no longer exists.
    virtual std::optional<NetdevSnapshot> query() = 0;
    // Next-hop MAC for a remote GID (IPv4-mapped or IPv6) on this netdev;
    // nullopt if it is not (yet) known. The firmware answers local GIDs
    // itself and never asks for them.
    virtual std::optional<Mac> resolve_neighbor(const Gid& dgid) = 0;
};

// ---------------------------------------------------------------------------
// Host memory of the command path: the mailboxes of one command, in the
// context's bootstrap domain. Used only by Firmware::run_entry().
// ---------------------------------------------------------------------------
class MailboxIo {
public:
    virtual ~MailboxIo() = default;
    virtual bool read(std::uint64_t addr, std::uint8_t* dst, std::size_t len) = 0;
    virtual bool write(std::uint64_t addr, const std::uint8_t* src, std::size_t len) = 0;
};

}  // namespace simnic::fw
