// SPDX-License-Identifier: Apache-2.0
#include "simnic/fw/gid.h"

#include <algorithm>
#include <iterator>

namespace simnic::fw {

std::array<std::uint8_t, 8> eui64_from_mac(const Mac& mac) {
    return {static_cast<std::uint8_t>(mac[0] ^ 0x02), mac[1], mac[2], 0xFF, 0xFE,
            mac[3], mac[4], mac[5]};
}

std::uint64_t guid_from_mac(const Mac& mac) {
    std::uint64_t v = 0;
    for (std::uint8_t b : eui64_from_mac(mac)) v = (v << 8) | b;
    return v;
}

Gid default_gid(const Mac& mac) {
    Gid g{};
    g[0] = 0xFE;
    g[1] = 0x80;
    const auto eui = eui64_from_mac(mac);
    std::copy(eui.begin(), eui.end(), g.begin() + 8);
    return g;
}

Gid ipv4_mapped_gid(const std::array<std::uint8_t, 4>& ip) {
    Gid g{};
    g[10] = 0xFF;
    g[11] = 0xFF;
    std::copy(ip.begin(), ip.end(), g.begin() + 12);
    return g;
}

bool is_ipv4_mapped(const Gid& gid) {
    for (int i = 0; i < 10; ++i)
        if (gid[i] != 0) return false;
    return gid[10] == 0xFF && gid[11] == 0xFF;
}

bool is_zero(const Gid& gid) {
    return std::all_of(gid.begin(), gid.end(), [](std::uint8_t b) { return b == 0; });
}

bool is_link_local(const Gid& gid) {
    static constexpr std::uint8_t kPrefix[8] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0};
    return std::equal(std::begin(kPrefix), std::end(kPrefix), gid.begin());
}

Mac mac_from_link_local(const Gid& gid) {
    return Mac{static_cast<std::uint8_t>(gid[8] ^ 0x02), gid[9], gid[10], gid[13], gid[14], gid[15]};
}

std::vector<Gid> netdev_gids(const NetdevSnapshot& nd) {
    std::vector<Gid> out;
    auto add = [&out](const Gid& g) {
        if (is_zero(g) || std::find(out.begin(), out.end(), g) != out.end()) return;
        out.push_back(g);
    };
    out.push_back(default_gid(nd.mac));
    for (const auto& a : nd.ipv4) add(ipv4_mapped_gid(a));
    for (const auto& a : nd.ipv6) add(a);
    return out;
}

}  // namespace simnic::fw
