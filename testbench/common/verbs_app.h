// What simnic's own libibverbs test programs (verbs_integrity, mw_app,
// cq_ex_app) share: the device their runner names, opened through the system
// libibverbs, and a readable work completion. Header-only: the programs link
// only libibverbs and Catch2, like any application.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

namespace simnic::tb {

constexpr std::uint8_t kVerbsPort = 1;
constexpr int kVerbsGidIndex = 1;  // the IPv4-mapped RoCE v2 GID, as rxe numbers them

inline std::string wc_str(const ibv_wc& wc) {
    std::ostringstream o;
    o << "wc{wr_id=" << wc.wr_id << " status=" << ibv_wc_status_str(wc.status) << " opcode=" << wc.opcode
      << " byte_len=" << wc.byte_len << " wc_flags=" << wc.wc_flags << " imm=" << wc.imm_data
      << " qp_num=" << wc.qp_num << " src_qp=" << wc.src_qp << "}";
    return o.str();
}

// The device named by $SIMNIC_TEST_DEVICE (set by the runner), its port 1 and
// GID 1 (checked to be IPv4-mapped: ::ffff:a.b.c.d), and a PD.
struct VerbsDevice {
    ibv_context* ctx = nullptr;
    ibv_pd* pd = nullptr;
    ibv_device_attr attr{};
    ibv_port_attr port{};
    ibv_gid gid{};
    std::uint32_t mtu = 0;  // active MTU in bytes

    VerbsDevice() {
        const char* name = std::getenv("SIMNIC_TEST_DEVICE");
        INFO("SIMNIC_TEST_DEVICE must name the simnic device");
        REQUIRE(name != nullptr);
        int n = 0;
        ibv_device** list = ibv_get_device_list(&n);
        REQUIRE(list != nullptr);
        for (int i = 0; i < n && ctx == nullptr; ++i)
            if (std::strcmp(ibv_get_device_name(list[i]), name) == 0) ctx = ibv_open_device(list[i]);
        ibv_free_device_list(list);
        INFO("device " << name);
        REQUIRE(ctx != nullptr);
        REQUIRE(ibv_query_device(ctx, &attr) == 0);
        REQUIRE(ibv_query_port(ctx, kVerbsPort, &port) == 0);
        REQUIRE(port.state == IBV_PORT_ACTIVE);
        REQUIRE(ibv_query_gid(ctx, kVerbsPort, kVerbsGidIndex, &gid) == 0);
        static const std::uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        REQUIRE(std::memcmp(gid.raw, v4mapped, 12) == 0);
        mtu = 128u << port.active_mtu;
        REQUIRE(mtu >= 256);
        pd = ibv_alloc_pd(ctx);
        REQUIRE(pd != nullptr);
    }
    ~VerbsDevice() {
        if (pd) CHECK(ibv_dealloc_pd(pd) == 0);
        if (ctx) CHECK(ibv_close_device(ctx) == 0);
    }
    VerbsDevice(const VerbsDevice&) = delete;
    VerbsDevice& operator=(const VerbsDevice&) = delete;
};

}  // namespace simnic::tb
