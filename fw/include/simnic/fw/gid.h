// SPDX-License-Identifier: Apache-2.0
// simnic firmware: GIDs derived from a netdev, the way the kernel's RoCE GID
// management fills rxe's table (see fw/README.md, "GID table").
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "simnic/fw/interfaces.h"
#include "simnic/fw/types.h"

namespace simnic::fw {

// Modified EUI-64 of a 48-bit MAC: FF:FE inserted in the middle and the
// universal/local bit (0x02 of byte 0) flipped.
std::array<std::uint8_t, 8> eui64_from_mac(const Mac& mac);

// The EUI-64 as a number whose most significant byte is byte 0 (what
// ID_BLOCK.node_guid holds; the provider turns it into ibv's big-endian GUID).
std::uint64_t guid_from_mac(const Mac& mac);

// fe80::/64 + EUI-64: GID index 0 (the "default GID").
Gid default_gid(const Mac& mac);

// ::ffff:a.b.c.d
Gid ipv4_mapped_gid(const std::array<std::uint8_t, 4>& ip);

bool is_ipv4_mapped(const Gid& gid);
bool is_zero(const Gid& gid);

// fe80::/64, the link-local prefix (the kernel's rdma_link_local_addr).
bool is_link_local(const Gid& gid);

// The MAC a link-local GID's interface identifier encodes (EUI-64 undone:
// bytes 8..10 and 13..15, universal/local bit flipped back). The kernel
// resolves a link-local DGID this way, without a neighbour lookup
// (ib_resolve_eth_dmac), so the first packet to a peer that has not talked
// yet does not wait for neighbour discovery.
Mac mac_from_link_local(const Gid& gid);

// The GIDs a netdev yields, in table order: the default GID, then every IPv4
// address (IPv4-mapped), then every IPv6 address; a GID equal to one already
// listed (the EUI-64 link-local address is the default GID) and the zero GID
// are skipped. Index i of the result is the table index on a fresh table.
std::vector<Gid> netdev_gids(const NetdevSnapshot& nd);

}  // namespace simnic::fw
