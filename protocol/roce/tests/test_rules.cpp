// PSN arithmetic, the rxe UDP source port rule and the IB MTU rule.
#include <catch2/catch.hpp>

#include "simnic/roce/rules.h"

using namespace simnic::roce;

TEST_CASE("psn_add wraps at 24 bits", "[rules]") {
    CHECK(psn_add(0, 0) == 0u);
    CHECK(psn_add(0, 1) == 1u);
    CHECK(psn_add(0xfffffe, 1) == 0xffffffu);
    CHECK(psn_add(0xffffff, 1) == 0u);
    CHECK(psn_add(0xffffff, 2) == 1u);
    CHECK(psn_add(0xfffff0, 0x20) == 0x10u);
    CHECK(psn_add(0x800000, 0x800000) == 0u);
    CHECK(psn_add(0x123456, 0x1000000) == 0x123456u);  // a full turn
}

TEST_CASE("psn_diff is the signed 24-bit distance", "[rules]") {
    CHECK(psn_diff(0, 0) == 0);
    CHECK(psn_diff(1, 0) == 1);
    CHECK(psn_diff(0, 1) == -1);
    CHECK(psn_diff(0, 0xffffff) == 1);
    CHECK(psn_diff(0xffffff, 0) == -1);
    CHECK(psn_diff(5, 0xfffffb) == 10);   // 0xfffffb + 10 = 0x1000005
    CHECK(psn_diff(0xfffffb, 5) == -10);
    CHECK(psn_diff(0x7fffff, 0) == 0x7fffff);   // largest positive
    CHECK(psn_diff(0x800000, 0) == -0x800000);  // half a turn counts as behind
    CHECK(psn_diff(0, 0x800000) == -0x800000);
    CHECK(psn_diff(0x800001, 1) == -0x800000);
    CHECK(psn_diff(0x800000, 1) == 0x7fffff);
    // Bits above 24 are ignored.
    CHECK(psn_diff(0x1000003, 1) == 2);
}

TEST_CASE("psn_before / psn_after around the wrap", "[rules]") {
    CHECK(psn_before(0xffffff, 0));
    CHECK(psn_after(0, 0xffffff));
    CHECK(psn_before(0xfffff0, 0x10));
    CHECK(psn_after(0x10, 0xfffff0));
    CHECK_FALSE(psn_before(5, 5));
    CHECK_FALSE(psn_after(5, 5));
    CHECK(psn_before(1, 2));
    CHECK_FALSE(psn_before(2, 1));
    CHECK(psn_after(0x7fffff, 0));
    CHECK(psn_before(0x800000, 0));
    // Every distance 1..2^23-1 ahead of a base just below the wrap.
    for (uint32_t d = 1; d < 0x800000; d = d * 3 + 1) {
        uint32_t base = 0xfffff8;
        uint32_t ahead = (base + d) & 0xffffff;
        CHECK(psn_after(ahead, base));
        CHECK(psn_before(base, ahead));
        CHECK(psn_diff(ahead, base) == static_cast<int32_t>(d));
        CHECK(psn_add(base, d) == ahead);
    }
}

TEST_CASE("UDP source port: pairs seen in rxe captures", "[rules]") {
    CHECK(roce_udp_sport(0x11, 0x11) == 0xc121);
    CHECK(roce_udp_sport(0x14, 0x14) == 0xc190);
}

TEST_CASE("UDP source port: large QPNs, worked by hand", "[rules]") {
    // lqpn 0xABCDEF, rqpn 0x123456:
    //   v = 0xABCDEF * 0x123456
    //     = 0xABCDEF * 0x120000 + 0xABCDEF * 0x3456
    //     = 0x0C14_7ACE_0000 + 0x0023_1F8B_BA4A
    //     = 0x0C37_9A59_BA4A
    //   v >> 20 = 0x0C3_79A5 (drop five hex digits)
    //   v ^= v >> 20: low 24 bits 0x59BA4A ^ 0xC379A5 = 0x9AC3EF -> v = 0x0C37_9A9A_C3EF
    //   v >> 40 = 0x0C;  v ^= 0x0C -> v = 0x0C37_9A9A_C3E3
    //   fl = v & 0xFFFFF = 0xAC3E3
    //   lo = fl & 0x3FFF = 0x03E3, hi = (fl & 0xFC000) >> 14 = 0xAC000 >> 14 = 0x2B
    //   sport = 0xC000 | (0x3E3 ^ 0x2B) = 0xC000 | 0x3C8 = 0xC3C8
    CHECK(uint64_t{0xABCDEF} * 0x123456 == 0x0C379A59BA4Aull);  // the product above
    CHECK(flow_label_from_qpns(0xABCDEF, 0x123456) == 0xAC3E3u);
    CHECK(udp_sport_from_flow_label(0xAC3E3) == 0xC3C8);
    CHECK(roce_udp_sport(0xABCDEF, 0x123456) == 0xC3C8);
    // The product is symmetric in the two QPNs.
    CHECK(roce_udp_sport(0x123456, 0xABCDEF) == 0xC3C8);

    // lqpn = rqpn = 0xFFFFFF:
    //   v = 0xFFFFFF^2 = 0xFFFF_FE00_0001
    //   v >> 20 = 0x0FFF_FFE0; v ^= -> low 32 bits 0xFE000001 ^ 0x0FFFFFE0 = 0xF1FFFFE1
    //     -> v = 0xFFFF_F1FF_FFE1
    //   v >> 40 = 0xFF; v ^= -> 0xFFFF_F1FF_FF1E
    //   fl = 0xFFF1E; lo = 0x3F1E; hi = 0xFC000 >> 14 = 0x3F
    //   sport = 0xC000 | (0x3F1E ^ 0x3F) = 0xC000 | 0x3F21 = 0xFF21
    CHECK(flow_label_from_qpns(0xFFFFFF, 0xFFFFFF) == 0xFFF1Eu);
    CHECK(roce_udp_sport(0xFFFFFF, 0xFFFFFF) == 0xFF21);

    // Small product: no folding. 0x11 * 0x11 = 0x121, 0x14 * 0x14 = 0x190.
    CHECK(flow_label_from_qpns(0x11, 0x11) == 0x121u);
    CHECK(flow_label_from_qpns(0x14, 0x14) == 0x190u);
    // QPN 0 on either side: flow label 0, sport 0xC000.
    CHECK(roce_udp_sport(0, 0x1234) == 0xC000);
}

TEST_CASE("UDP source port: a non-zero GRH flow label wins over the QPNs", "[rules]") {
    // fl = 0x12345: lo = 0x2345, hi = (0x12345 & 0xFC000) >> 14 = 0x10000 >> 14 = 0x4
    // sport = 0xC000 | (0x2345 ^ 0x4) = 0xE341
    CHECK(udp_sport_from_flow_label(0x12345) == 0xE341);
    CHECK(roce_udp_sport(0x11, 0x11, 0x12345) == 0xE341);
    CHECK(roce_udp_sport(0xABCDEF, 0x123456, 0x12345) == 0xE341);
    // fl = 0xFFFFF: lo = 0x3FFF, hi = 0x3F; 0x3FFF ^ 0x3F = 0x3FC0 -> 0xFFC0
    CHECK(roce_udp_sport(1, 2, 0xFFFFF) == 0xFFC0);
    // Only the 20 flow-label bits count: 0x100000 is a zero flow label, so
    // the QPN rule applies.
    CHECK(roce_udp_sport(0x11, 0x11, 0x100000) == 0xc121);
    // The port is always in 0xC000..0xFFFF.
    for (uint32_t fl = 1; fl < 0x100000; fl += 0x1357) {
        uint16_t p = udp_sport_from_flow_label(fl);
        CHECK(p >= 0xC000);
    }
}

TEST_CASE("IB MTU from the netdev MTU", "[rules]") {
    CHECK(ib_mtu_bytes(IbMtu::Mtu256) == 256u);
    CHECK(ib_mtu_bytes(IbMtu::Mtu512) == 512u);
    CHECK(ib_mtu_bytes(IbMtu::Mtu1024) == 1024u);
    CHECK(ib_mtu_bytes(IbMtu::Mtu2048) == 2048u);
    CHECK(ib_mtu_bytes(IbMtu::Mtu4096) == 4096u);

    // Seen on rxe.
    CHECK(ib_mtu_from_netdev_mtu(1500) == IbMtu::Mtu1024);
    CHECK(ib_mtu_from_netdev_mtu(9000) == IbMtu::Mtu4096);
    CHECK(rxe_active_mtu(1500) == IbMtu::Mtu1024);
    CHECK(rxe_active_mtu(9000) == IbMtu::Mtu4096);

    // Boundaries: netdev MTU - 80 must reach the IB MTU.
    CHECK_FALSE(ib_mtu_from_netdev_mtu(335).has_value());  // 255 bytes of room
    CHECK(ib_mtu_from_netdev_mtu(336) == IbMtu::Mtu256);   // 256
    CHECK(ib_mtu_from_netdev_mtu(591) == IbMtu::Mtu256);   // 511
    CHECK(ib_mtu_from_netdev_mtu(592) == IbMtu::Mtu512);   // 512
    CHECK(ib_mtu_from_netdev_mtu(1103) == IbMtu::Mtu512);  // 1023
    CHECK(ib_mtu_from_netdev_mtu(1104) == IbMtu::Mtu1024); // 1024
    CHECK(ib_mtu_from_netdev_mtu(2127) == IbMtu::Mtu1024); // 2047
    CHECK(ib_mtu_from_netdev_mtu(2128) == IbMtu::Mtu2048); // 2048
    CHECK(ib_mtu_from_netdev_mtu(4175) == IbMtu::Mtu2048); // 4095
    CHECK(ib_mtu_from_netdev_mtu(4176) == IbMtu::Mtu4096); // 4096
    CHECK(ib_mtu_from_netdev_mtu(65535) == IbMtu::Mtu4096);
    CHECK_FALSE(ib_mtu_from_netdev_mtu(0).has_value());
    CHECK_FALSE(ib_mtu_from_netdev_mtu(-1).has_value());

    // rxe falls back to 256 when nothing fits.
    CHECK(rxe_active_mtu(335) == IbMtu::Mtu256);
    CHECK(rxe_active_mtu(68) == IbMtu::Mtu256);
    CHECK(rxe_active_mtu(4176) == IbMtu::Mtu4096);
    CHECK(rxe_active_mtu(2128) == IbMtu::Mtu2048);
}
