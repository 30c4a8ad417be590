// Small protocol rules every part of simnic must agree on: 24-bit PSN
// arithmetic, the RoCE v2 UDP source port, and the IB MTU a netdev allows.
#pragma once

#include <cstdint>
#include <optional>

namespace simnic::roce {

// ---- PSN arithmetic (IBA 9.7.1: PSNs are 24-bit and wrap) ----
inline constexpr uint32_t kPsnMask = 0xffffff;

constexpr uint32_t psn_add(uint32_t psn, uint32_t n) { return (psn + n) & kPsnMask; }

// Signed distance a - b in the 24-bit space, in [-2^23, 2^23).
constexpr int32_t psn_diff(uint32_t a, uint32_t b) {
    uint32_t d = (a - b) & kPsnMask;
    return d & 0x800000 ? static_cast<int32_t>(d) - 0x1000000 : static_cast<int32_t>(d);
}
constexpr bool psn_before(uint32_t a, uint32_t b) { return psn_diff(a, b) < 0; }
constexpr bool psn_after(uint32_t a, uint32_t b) { return psn_diff(a, b) > 0; }

static_assert(psn_diff(0, kPsnMask) == 1);
static_assert(psn_diff(kPsnMask, 0) == -1);
static_assert(psn_add(kPsnMask, 2) == 1);

// ---- UDP source port (rxe: rdma_flow_label_to_udp_sport) ----
// A flow label for a QP pair when the GRH carries none: fold the product of
// the two QPNs down to 20 bits.
constexpr uint32_t flow_label_from_qpns(uint32_t lqpn, uint32_t rqpn) {
    uint64_t v = static_cast<uint64_t>(lqpn) * rqpn;
    v ^= v >> 20;
    v ^= v >> 40;
    return static_cast<uint32_t>(v & 0xfffff);
}
constexpr uint16_t udp_sport_from_flow_label(uint32_t fl) {
    uint32_t lo = fl & 0x3fff;
    uint32_t hi = (fl & 0xfc000) >> 14;
    return static_cast<uint16_t>(0xc000 | (lo ^ hi));
}
// The port rxe puts in a packet of QP lqpn to QP rqpn.
constexpr uint16_t roce_udp_sport(uint32_t lqpn, uint32_t rqpn, uint32_t grh_flow_label = 0) {
    uint32_t fl = grh_flow_label & 0xfffff;
    if (fl == 0) fl = flow_label_from_qpns(lqpn, rqpn);
    return udp_sport_from_flow_label(fl);
}
// The port of a QP that never gets an address vector (UD QPs, QP1): rxe
// keeps the one it chose at creation, 0xC000 plus the kernel's 14-bit
// multiplicative hash (hash_32) of the QP's own number.
constexpr uint16_t roce_udp_sport_unconnected(uint32_t qpn) {
    return static_cast<uint16_t>(0xc000u + ((qpn * 0x61C88647u) >> (32 - 14)));
}
// The flow label rdma_cm puts in a connection's address vector: derived from
// the CM's source port and the service's destination port.
constexpr uint32_t cm_flow_label(uint16_t src_port, uint16_t dst_port) {
    return (uint32_t{src_port} * 31 + dst_port) & 0xfffff;
}
static_assert(roce_udp_sport(0x11, 0x11) == 0xc121, "seen in rxe captures");
static_assert(roce_udp_sport_unconnected(1) == 55410, "QP1, seen in rxe captures");
static_assert(roce_udp_sport(0x14, 0x14) == 0xc190, "seen in rxe captures");

// ---- MTU ----
enum class IbMtu : uint8_t { Mtu256 = 1, Mtu512 = 2, Mtu1024 = 3, Mtu2048 = 4, Mtu4096 = 5 };

constexpr uint32_t ib_mtu_bytes(IbMtu m) { return 128u << static_cast<unsigned>(m); }

// Headroom rxe reserves for Ethernet, IP, UDP, BTH and extension headers and
// the ICRC when it derives the IB MTU from the netdev MTU.
inline constexpr int kRoceMaxHdrBytes = 80;

// The largest IB MTU whose packets fit in `netdev_mtu`; none if even 256
// bytes do not fit.
constexpr std::optional<IbMtu> ib_mtu_from_netdev_mtu(int netdev_mtu) {
    int room = netdev_mtu - kRoceMaxHdrBytes;
    if (room < 256) return std::nullopt;
    if (room < 512) return IbMtu::Mtu256;
    if (room < 1024) return IbMtu::Mtu512;
    if (room < 2048) return IbMtu::Mtu1024;
    if (room < 4096) return IbMtu::Mtu2048;
    return IbMtu::Mtu4096;
}
// The port's active MTU as rxe sets it: the netdev-derived MTU, capped at
// 4096, and 256 when the netdev is too small for any.
constexpr IbMtu rxe_active_mtu(int netdev_mtu) {
    return ib_mtu_from_netdev_mtu(netdev_mtu).value_or(IbMtu::Mtu256);
}
static_assert(rxe_active_mtu(1500) == IbMtu::Mtu1024, "seen on rxe");
static_assert(rxe_active_mtu(9000) == IbMtu::Mtu4096, "seen on rxe");

}  // namespace simnic::roce
