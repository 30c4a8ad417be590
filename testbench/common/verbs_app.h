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

// Takes `qp` (of `type`) through INIT, RTR and RTS on the device's port and
// GID 1, as the simple programs want it: PSN 0x100 both ways; RC connected
// to `dest_qpn` on the same GID with one outstanding READ/atomic each way,
// timeout 14 and retries 7; UD with `qkey`. Remote read and write allowed.
inline void connect_qp(const VerbsDevice& d, ibv_qp* qp, ibv_qp_type type, std::uint32_t dest_qpn,
                       std::uint32_t qkey = 0) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = kVerbsPort;
    int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
    if (type == IBV_QPT_UD) {
        a.qkey = qkey;
        mask |= IBV_QP_QKEY;
    } else {
        a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
        mask |= IBV_QP_ACCESS_FLAGS;
    }
    REQUIRE(ibv_modify_qp(qp, &a, mask) == 0);
    a = ibv_qp_attr{};
    a.qp_state = IBV_QPS_RTR;
    mask = IBV_QP_STATE;
    if (type == IBV_QPT_RC) {
        a.path_mtu = d.port.active_mtu;
        a.dest_qp_num = dest_qpn;
        a.rq_psn = 0x100;
        a.max_dest_rd_atomic = 1;
        a.min_rnr_timer = 1;
        a.ah_attr.is_global = 1;
        a.ah_attr.grh.dgid = d.gid;
        a.ah_attr.grh.sgid_index = kVerbsGidIndex;
        a.ah_attr.grh.hop_limit = 64;
        a.ah_attr.port_num = kVerbsPort;
        mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                IBV_QP_MIN_RNR_TIMER;
    }
    REQUIRE(ibv_modify_qp(qp, &a, mask) == 0);
    a = ibv_qp_attr{};
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = 0x100;
    mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
    if (type == IBV_QPT_RC) {
        a.timeout = 14;
        a.retry_cnt = 7;
        a.rnr_retry = 7;
        a.max_rd_atomic = 1;
        mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
    }
    REQUIRE(ibv_modify_qp(qp, &a, mask) == 0);
}

}  // namespace simnic::tb
