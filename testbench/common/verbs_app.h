// What simnic's own libibverbs test programs (verbs_integrity, mw_app,
// cq_ex_app) share: the device their runner names, opened through the system
// libibverbs; QPs connected to each other on it through GID 1; registered
// memory; work requests, posting and completions; a readable work
// completion. Header-only: the programs link only libibverbs and Catch2, like
// any application.
#pragma once

#include <infiniband/verbs.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "open_device.h"

namespace simnic::tb {

constexpr std::uint8_t kVerbsPort = 1;
constexpr int kVerbsGidIndex = 1;  // the IPv4-mapped RoCE v2 GID, as rxe numbers them
// How long a test waits for a completion before it fails.
constexpr auto kCompletionDeadline = std::chrono::seconds(5);

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
        ctx = open_device_named(name);
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

// ---- QPs ----

// A QP of `type` in `pd` whose send and receive CQ is `cq`, asking for
// `cap`; `cap` is left holding what ibv_create_qp granted (max_inline_data).
inline ibv_qp* create_qp(ibv_pd* pd, ibv_qp_type type, ibv_cq* cq, ibv_qp_cap& cap, ibv_srq* srq = nullptr) {
    ibv_qp_init_attr ia{};
    ia.send_cq = cq;
    ia.recv_cq = cq;
    ia.srq = srq;
    ia.qp_type = type;
    ia.cap = cap;
    ibv_qp* qp = ibv_create_qp(pd, &ia);
    INFO("ibv_create_qp errno " << errno);
    REQUIRE(qp != nullptr);
    cap = ia.cap;
    return qp;
}

// The RoCE v2 address vector to `gid` from this side's GID 1.
inline ibv_ah_attr gid_av(const ibv_gid& gid) {
    ibv_ah_attr ah{};
    ah.is_global = 1;
    ah.grh.dgid = gid;
    ah.grh.sgid_index = kVerbsGidIndex;
    ah.grh.hop_limit = 64;
    ah.port_num = kVerbsPort;
    return ah;
}

// The RoCE v2 address vector of the device's own GID 1: two QPs of one
// device reach each other through it, as two processes on one host do.
inline ibv_ah_attr gid_av(const VerbsDevice& d) { return gid_av(d.gid); }

// How a QP is taken to RTS. The defaults are what the simple programs want:
// PSN 0x100 both ways, one outstanding READ/atomic each way, remote read and
// write allowed, timeout 14, 7 retries and 7 RNR retries.
struct QpPath {
    std::uint32_t rq_psn = 0x100, sq_psn = 0x100;
    std::uint8_t rd_atomic = 1;  // max_dest_rd_atomic and max_rd_atomic
    std::uint8_t rnr_retry = 7;
    unsigned access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    std::uint32_t qkey = 0;  // UD
};

// RESET -> INIT on the device's port, P_Key index 0: the access flags (RC,
// UC) or the Q_Key (UD).
inline void qp_to_init(ibv_qp* qp, ibv_qp_type type, const QpPath& p = {}) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = kVerbsPort;
    int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
    if (type == IBV_QPT_UD) {
        a.qkey = p.qkey;
        mask |= IBV_QP_QKEY;
    } else {
        a.qp_access_flags = p.access;
        mask |= IBV_QP_ACCESS_FLAGS;
    }
    REQUIRE(ibv_modify_qp(qp, &a, mask) == 0);
}

// INIT -> RTR; an RC QP is connected to `dest_qpn` through gid_av() at the
// port's active MTU, with an RNR timer of 0.01 ms.
inline void qp_to_rtr(const VerbsDevice& d, ibv_qp* qp, ibv_qp_type type, std::uint32_t dest_qpn,
                      const QpPath& p = {}) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    int mask = IBV_QP_STATE;
    if (type == IBV_QPT_RC) {
        a.path_mtu = d.port.active_mtu;
        a.dest_qp_num = dest_qpn;
        a.rq_psn = p.rq_psn;
        a.max_dest_rd_atomic = p.rd_atomic;
        a.min_rnr_timer = 1;  // 0.01 ms
        a.ah_attr = gid_av(d);
        mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                IBV_QP_MIN_RNR_TIMER;
    }
    REQUIRE(ibv_modify_qp(qp, &a, mask) == 0);
}

// RTR -> RTS.
inline void qp_to_rts(ibv_qp* qp, ibv_qp_type type, const QpPath& p = {}) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = p.sq_psn;
    int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
    if (type == IBV_QPT_RC) {
        a.timeout = 14;
        a.retry_cnt = 7;
        a.rnr_retry = p.rnr_retry;
        a.max_rd_atomic = p.rd_atomic;
        mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
    }
    REQUIRE(ibv_modify_qp(qp, &a, mask) == 0);
}

// Takes `qp` (of `type`) through INIT, RTR and RTS; an RC QP connected to
// `dest_qpn`, a UD QP with `qkey`.
inline void connect_qp(const VerbsDevice& d, ibv_qp* qp, ibv_qp_type type, std::uint32_t dest_qpn,
                       std::uint32_t qkey = 0) {
    QpPath p;
    p.qkey = qkey;
    qp_to_init(qp, type, p);
    qp_to_rtr(d, qp, type, dest_qpn, p);
    qp_to_rts(qp, type, p);
}

// ---- memory ----

// `n` bytes filled with `fill`, registered in `pd` with `access`.
struct Mr {
    std::vector<std::uint8_t> buf;
    ibv_mr* mr = nullptr;
    Mr(ibv_pd* pd, std::size_t n, unsigned access, std::uint8_t fill) : buf(n, fill) {
        mr = ibv_reg_mr(pd, buf.data(), n, static_cast<int>(access));
        INFO("ibv_reg_mr errno " << errno);
        REQUIRE(mr != nullptr);
    }
    ~Mr() { CHECK(ibv_dereg_mr(mr) == 0); }
    Mr(const Mr&) = delete;
    Mr& operator=(const Mr&) = delete;
    std::uint64_t va(std::size_t off) const { return reinterpret_cast<std::uintptr_t>(buf.data()) + off; }
    ibv_sge sge(std::size_t off, std::size_t n) const {
        return ibv_sge{va(off), static_cast<std::uint32_t>(n), mr->lkey};
    }
};

// ---- work requests ----

// A signaled send WR `wr_id` of `op` gathering `sg[0..n)`.
inline ibv_send_wr send_wr(std::uint64_t wr_id, ibv_wr_opcode op, ibv_sge* sg, int n = 1) {
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = sg;
    wr.num_sge = n;
    wr.opcode = op;
    wr.send_flags = IBV_SEND_SIGNALED;
    return wr;
}

// send_wr() of an RDMA op on the remote `va` and `rkey`.
inline ibv_send_wr rdma_wr(std::uint64_t wr_id, ibv_wr_opcode op, ibv_sge* sg, std::uint64_t va,
                           std::uint32_t rkey, int n = 1) {
    ibv_send_wr wr = send_wr(wr_id, op, sg, n);
    wr.wr.rdma.remote_addr = va;
    wr.wr.rdma.rkey = rkey;
    return wr;
}

// A receive WR `wr_id` scattering into `sg[0..n)`.
inline ibv_recv_wr recv_wr(std::uint64_t wr_id, ibv_sge* sg, int n = 1) {
    ibv_recv_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = sg;
    wr.num_sge = n;
    return wr;
}

// Posts `wr` (and the WRs chained to it); ibv_post_send must accept them.
inline void post_send(ibv_qp* qp, ibv_send_wr& wr) {
    ibv_send_wr* bad = nullptr;
    const int e = ibv_post_send(qp, &wr, &bad);
    INFO("ibv_post_send opcode " << wr.opcode << " num_sge " << wr.num_sge);
    REQUIRE(e == 0);
}

inline void post_recv(ibv_qp* qp, ibv_recv_wr& wr) {
    ibv_recv_wr* bad = nullptr;
    REQUIRE(ibv_post_recv(qp, &wr, &bad) == 0);
}

// One receive WR `wr_id` of the one SGE `sg`.
inline void post_recv(ibv_qp* qp, ibv_sge& sg, std::uint64_t wr_id) {
    ibv_recv_wr wr = recv_wr(wr_id, &sg);
    post_recv(qp, wr);
}

// ---- completions ----

// The next completion on `cq`, waited for up to kCompletionDeadline.
inline ibv_wc poll_one(ibv_cq* cq, const char* what) {
    const auto end = std::chrono::steady_clock::now() + kCompletionDeadline;
    ibv_wc wc{};
    for (;;) {
        const int n = ibv_poll_cq(cq, 1, &wc);
        INFO(what << ": ibv_poll_cq");
        REQUIRE(n >= 0);
        if (n == 1) return wc;
        if (std::chrono::steady_clock::now() > end) FAIL(what << ": no completion within 5 s");
        std::this_thread::yield();
    }
}

// The next completion on `cq` is `wr_id`'s, with status `st` (and, on
// success, opcode `op`).
inline ibv_wc expect_wc(ibv_cq* cq, const char* what, std::uint64_t wr_id, ibv_wc_status st, ibv_wc_opcode op) {
    ibv_wc wc = poll_one(cq, what);
    INFO(what << ": " << wc_str(wc));
    CHECK(wc.wr_id == wr_id);
    REQUIRE(wc.status == st);
    if (st == IBV_WC_SUCCESS) CHECK(wc.opcode == op);
    return wc;
}

// The next event on completion channel `ch`, waited for up to 5 s (the
// channel's fd must become readable) and acknowledged: its CQ, and in
// `cq_context` (if given) that CQ's context.
inline ibv_cq* wait_cq_event(ibv_comp_channel* ch, void** cq_context = nullptr) {
    pollfd pfd{ch->fd, POLLIN, 0};
    REQUIRE(poll(&pfd, 1, 5000) == 1);
    ibv_cq* cq = nullptr;
    void* ctx = nullptr;
    REQUIRE(ibv_get_cq_event(ch, &cq, &ctx) == 0);
    ibv_ack_cq_events(cq, 1);
    if (cq_context) *cq_context = ctx;
    return cq;
}

}  // namespace simnic::tb
