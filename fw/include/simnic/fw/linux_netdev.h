// SPDX-License-Identifier: Apache-2.0
// simnic firmware: NetdevInfo for a real Linux interface (the daemon's), read
// with ioctl (SIOCGIFINDEX, SIOCGIFMTU, SIOCGIFHWADDR, SIOCGIFFLAGS),
// getifaddrs() and the rtnetlink neighbour table. No privileges needed.
#pragma once

#include <string>

#include "simnic/fw/interfaces.h"

namespace simnic::fw {

class LinuxNetdev final : public NetdevInfo {
public:
    explicit LinuxNetdev(std::string ifname);
    std::optional<NetdevSnapshot> query() override;
    // Looks the destination up in the kernel's neighbour table (on-link
    // destinations only). On a miss it sends one empty UDP datagram to the
    // address's discard port (9) so the kernel starts ARP/ND, and returns
    // nullopt; the command fails with AGAIN and the caller retries.
    std::optional<Mac> resolve_neighbor(const Gid& dgid) override;

private:
    std::string name_;
};

}  // namespace simnic::fw
