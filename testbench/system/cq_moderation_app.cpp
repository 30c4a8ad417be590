// ibv_modify_cq (IBV_CQ_ATTR_MODERATE) on a simnic device, from an ordinary
// libibverbs application: this program links the system libibverbs only,
// reaches the device through LD_PRELOAD, and calls the static inline
// ibv_modify_cq of <infiniband/verbs.h>, which goes to the provider's
// verbs_context_ops.modify_cq. Run under `simnic exec` with
// SIMNIC_TEST_DEVICE naming a device.
//
// "[modify_cq]": what an application sees on any device: the moderation
// accepted, bad input refused with mlx5's errno values.
// "[moderation]": one signaled WRITE completing on an armed CQ, with or
// without a moderation of its own; test_cq_moderation.sh reads the model
// device's interrupt figures (`simnic stats`) around each case.
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdint>

#include <catch2/catch.hpp>

#include "verbs_app.h"

namespace {

using Device = simnic::tb::VerbsDevice;
constexpr unsigned kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

int modify(ibv_cq* cq, std::uint32_t mask, std::uint16_t count, std::uint16_t period_us) {
    ibv_modify_cq_attr a{};
    a.attr_mask = mask;
    a.moderate.cq_count = count;
    a.moderate.cq_period = period_us;
    return ibv_modify_cq(cq, &a);
}

// Two RC QPs of the device connected to each other; A's CQ on a completion
// channel, B's plain.
struct Pair {
    Device& d;
    ibv_comp_channel* ch = nullptr;
    ibv_cq* cq_a = nullptr;
    ibv_cq* cq_b = nullptr;
    ibv_qp* a = nullptr;
    ibv_qp* b = nullptr;
    explicit Pair(Device& dev) : d(dev) {
        ch = ibv_create_comp_channel(d.ctx);
        REQUIRE(ch != nullptr);
        cq_a = ibv_create_cq(d.ctx, 64, nullptr, ch, 0);
        cq_b = ibv_create_cq(d.ctx, 64, nullptr, nullptr, 0);
        REQUIRE(cq_a != nullptr);
        REQUIRE(cq_b != nullptr);
        ibv_qp_cap cap{16, 16, 1, 1, 0};
        a = simnic::tb::create_qp(d.pd, IBV_QPT_RC, cq_a, cap);
        b = simnic::tb::create_qp(d.pd, IBV_QPT_RC, cq_b, cap);
        simnic::tb::connect_qp(d, a, IBV_QPT_RC, b->qp_num);
        simnic::tb::connect_qp(d, b, IBV_QPT_RC, a->qp_num);
    }
    ~Pair() {
        CHECK(ibv_destroy_qp(a) == 0);
        CHECK(ibv_destroy_qp(b) == 0);
        CHECK(ibv_destroy_cq(cq_a) == 0);
        CHECK(ibv_destroy_cq(cq_b) == 0);
        CHECK(ibv_destroy_comp_channel(ch) == 0);
    }
    Pair(const Pair&) = delete;
    Pair& operator=(const Pair&) = delete;

    // One signaled 64-byte WRITE from A to B on A's armed CQ: one event,
    // then its completion.
    void write_one() {
        simnic::tb::Mr src(d.pd, 64, kAccess, 7), dst(d.pd, 64, kAccess, 0);
        REQUIRE(ibv_req_notify_cq(cq_a, 0) == 0);
        ibv_sge sg = src.sge(0, 64);
        ibv_send_wr w = simnic::tb::rdma_wr(1, IBV_WR_RDMA_WRITE, &sg, dst.va(0), dst.mr->rkey);
        simnic::tb::post_send(a, w);
        CHECK(simnic::tb::wait_cq_event(ch) == cq_a);
        simnic::tb::expect_wc(cq_a, "WRITE", 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
        CHECK(dst.buf[63] == 7);
    }
};

}  // namespace

TEST_CASE("ibv_modify_cq: the moderation is accepted, bad input refused as on mlx5", "[modify_cq]") {
    Device d;
    ibv_cq* cq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
    REQUIRE(cq != nullptr);
    CHECK(modify(cq, IBV_CQ_ATTR_MODERATE, 16, 40) == 0);
    CHECK(modify(cq, IBV_CQ_ATTR_MODERATE, 0xFFFF, 4095) == 0);  // mlx5's MLX5_MAX_CQ_PERIOD
    CHECK(modify(cq, IBV_CQ_ATTR_MODERATE, 0, 0) == 0);          // back to none
    // A period beyond 4095 us: EINVAL (mlx5_ib_modify_cq).
    CHECK(modify(cq, IBV_CQ_ATTR_MODERATE, 16, 4096) == EINVAL);
    CHECK(modify(cq, IBV_CQ_ATTR_MODERATE, 16, 0xFFFF) == EINVAL);
    // No attribute (the kernel's check), or one libibverbs does not know
    // (ibv_cmd_modify_cq's): EINVAL.
    CHECK(modify(cq, 0, 16, 40) == EINVAL);
    CHECK(modify(cq, IBV_CQ_ATTR_RESERVED, 16, 40) == EINVAL);
    CHECK(modify(cq, IBV_CQ_ATTR_MODERATE | IBV_CQ_ATTR_RESERVED, 16, 40) == EINVAL);
    // The CQ still works: a moderated CQ's completions are all there.
    CHECK(modify(cq, IBV_CQ_ATTR_MODERATE, 4, 100) == 0);
    CHECK(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("moderation: one WRITE on a CQ of its own moderation, 64 CQEs or 500 us", "[moderation][own]") {
    Device d;
    Pair p(d);
    REQUIRE(modify(p.cq_a, IBV_CQ_ATTR_MODERATE, 64, 500) == 0);
    p.write_one();
}

TEST_CASE("moderation: one WRITE on a CQ without moderation", "[moderation][none]") {
    Device d;
    Pair p(d);
    p.write_one();
}

TEST_CASE("moderation: one WRITE on a CQ whose moderation was set, then set back to none", "[moderation][reset]") {
    Device d;
    Pair p(d);
    REQUIRE(modify(p.cq_a, IBV_CQ_ATTR_MODERATE, 64, 500) == 0);
    REQUIRE(modify(p.cq_a, IBV_CQ_ATTR_MODERATE, 0, 0) == 0);
    p.write_one();
}
