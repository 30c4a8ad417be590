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
// "[rounds]": an event count, M completions in rounds of N behind one arm
// each: the application gets one event per round on any device (the event
// is not lost or doubled by moderation); test_cq_moderation.sh reads how
// the model held each (a count of N met by the round's CQEs, a count of 2N
// waiting out the period). "[nohold]": a count no round reaches and no
// period, which a device that held events would never answer: a soft
// device, which models no interrupt timing, posts every event at once.
// "[held]": what a model device's application sees now that its events go
// out at the model's interrupt (its moderation): a round's event behind
// the round's 8th CQE when the count is 8 (its first poll finds all 8), no
// sooner than the period (4 ms) after the round when no round reaches the count,
// and a CQ destroyed while its event is held takes it along (the CQ that
// reuses its number gets only its own). "[held][late]": a count met by
// CQEs that come later in wall-clock time, after the model's period has
// ended in simulated time, sends the event then, not at the period's end in
// wall-clock time. Only test_cq_moderation.sh's model device runs them: a
// soft device posts each event at its first CQE.
#include <infiniband/verbs.h>

#include <poll.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

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

    // What run_rounds saw: the events the application got; of all rounds,
    // the fewest completions the first poll after a round's event found
    // (a model device that holds the event for a count of the round's size
    // has them all there), and the shortest wall-clock time from posting a
    // round to its event.
    struct Rounds {
        int events = 0;
        int fewest_at_event = 0;
        std::uint64_t shortest_wait_ns = 0;
    };
    // `rounds` rounds of `per_round` signaled 64-byte WRITEs from A to B,
    // as an application on a completion channel runs them: arm A's CQ,
    // post the round as one chain, sleep in ibv_get_cq_event, then poll
    // until the round's completions are all in. After the last round no
    // event is left over.
    Rounds run_rounds(int rounds, int per_round) {
        simnic::tb::Mr src(d.pd, 64, kAccess, 9), dst(d.pd, 64, kAccess, 0);
        Rounds out;
        out.fewest_at_event = per_round;
        out.shortest_wait_ns = UINT64_MAX;
        int completions = 0;
        for (int r = 0; r < rounds; ++r) {
            REQUIRE(ibv_req_notify_cq(cq_a, 0) == 0);
            std::vector<ibv_sge> sg(std::size_t(per_round), src.sge(0, 64));
            std::vector<ibv_send_wr> w;
            for (int i = 0; i < per_round; ++i)
                w.push_back(simnic::tb::rdma_wr(std::uint64_t(r * per_round + i), IBV_WR_RDMA_WRITE,
                                                &sg[std::size_t(i)], dst.va(0), dst.mr->rkey));
            for (int i = 0; i + 1 < per_round; ++i) w[std::size_t(i)].next = &w[std::size_t(i) + 1];
            const std::uint64_t posted = now_ns();
            simnic::tb::post_send(a, w[0]);
            REQUIRE(simnic::tb::wait_cq_event(ch) == cq_a);
            out.shortest_wait_ns = std::min(out.shortest_wait_ns, now_ns() - posted);
            ++out.events;
            // One poll for the whole round, as the woken application does:
            // what was in the CQ when the event came.
            std::vector<ibv_wc> wc(static_cast<std::size_t>(per_round));
            const int found = ibv_poll_cq(cq_a, per_round, wc.data());
            REQUIRE(found >= 0);
            out.fewest_at_event = std::min(out.fewest_at_event, found);
            for (int i = 0; i < found; ++i, ++completions) {
                CHECK(wc[std::size_t(i)].wr_id == std::uint64_t(r * per_round + i));
                CHECK(wc[std::size_t(i)].status == IBV_WC_SUCCESS);
            }
            for (int i = found; i < per_round; ++i, ++completions)
                simnic::tb::expect_wc(cq_a, "WRITE", std::uint64_t(r * per_round + i), IBV_WC_SUCCESS,
                                      IBV_WC_RDMA_WRITE);
        }
        // The CQ is not armed again: no event is pending.
        pollfd pfd{ch->fd, POLLIN, 0};
        CHECK(poll(&pfd, 1, 100) == 0);
        CHECK(completions == rounds * per_round);
        CHECK(dst.buf[63] == 9);
        std::printf("%d completions, %d events; at each event the first poll found at least %d; "
                    "post to event at least %llu ns\n",
                    completions, out.events, out.fewest_at_event, (unsigned long long)out.shortest_wait_ns);
        return out;
    }

    static std::uint64_t now_ns() {
        timespec t{};
        clock_gettime(CLOCK_MONOTONIC, &t);
        return std::uint64_t(t.tv_sec) * 1000000000ull + std::uint64_t(t.tv_nsec);
    }
};

// The rounds every "[rounds]" case runs: 8 rounds of 8 WRITEs.
constexpr int kRounds = 8, kPerRound = 8;

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

TEST_CASE("rounds: 64 WRITEs in rounds of 8 on a CQ moderated to 8 CQEs / 500 us", "[rounds][count]") {
    Device d;
    Pair p(d);
    REQUIRE(modify(p.cq_a, IBV_CQ_ATTR_MODERATE, kPerRound, 500) == 0);
    CHECK(p.run_rounds(kRounds, kPerRound).events == kRounds);
}

TEST_CASE("rounds: 64 WRITEs in rounds of 8 on a CQ moderated to 16 CQEs / 500 us", "[rounds][period]") {
    Device d;
    Pair p(d);
    REQUIRE(modify(p.cq_a, IBV_CQ_ATTR_MODERATE, 2 * kPerRound, 500) == 0);
    CHECK(p.run_rounds(kRounds, kPerRound).events == kRounds);
}

TEST_CASE("rounds: 64 WRITEs in rounds of 8 on a CQ without moderation", "[rounds][plain]") {
    Device d;
    Pair p(d);
    CHECK(p.run_rounds(kRounds, kPerRound).events == kRounds);
}

TEST_CASE("nohold: a count no round reaches and no period, events at once", "[nohold]") {
    Device d;
    Pair p(d);
    REQUIRE(modify(p.cq_a, IBV_CQ_ATTR_MODERATE, 64, 0) == 0);
    // Each round's event comes within wait_cq_event's 5 s although its CQ
    // never sees 64 CQEs behind one arm.
    CHECK(p.run_rounds(kRounds, kPerRound).events == kRounds);
}

TEST_CASE("held: rounds of 8 on a CQ moderated to 8 CQEs, each event behind its round's 8th CQE",
          "[held][count]") {
    Device d;
    Pair p(d);
    REQUIRE(modify(p.cq_a, IBV_CQ_ATTR_MODERATE, kPerRound, 500) == 0);
    const Pair::Rounds r = p.run_rounds(kRounds, kPerRound);
    CHECK(r.events == kRounds);
    // The model holds the event until the count is written: the first
    // poll after it finds the whole round.
    CHECK(r.fewest_at_event == kPerRound);
}

TEST_CASE("held: rounds of 8 on a CQ moderated to 16 CQEs / 4000 us, each event after the period",
          "[held][period]") {
    Device d;
    Pair p(d);
    // A period well above a round's wall-clock time through the model
    // (about 0.4 ms on lo): an event posted at the round's first CQE comes
    // sooner.
    REQUIRE(modify(p.cq_a, IBV_CQ_ATTR_MODERATE, 2 * kPerRound, 4000) == 0);
    const Pair::Rounds r = p.run_rounds(kRounds, kPerRound);
    CHECK(r.events == kRounds);  // none lost: the period sends each
    // The period, in wall-clock time too (cq_eq.cc, cq_event).
    CHECK(r.shortest_wait_ns >= 4000000);
}

TEST_CASE("held: a count met by CQEs written later in wall-clock time sends the event at the count",
          "[held][late]") {
    Device d;
    Pair p(d);
    // Count 8, period 4000 us. Four WRITEs, a pause of 0.5 ms, four more:
    // the model ends the period of the first four in simulated time at
    // once, and the event waits for 4 ms of wall-clock time; the next four
    // CQEs meet the count about 0.5 ms after the first round, and a NIC
    // would send the event then. (Before the engine counted them, the
    // event came 4 ms after the first CQE, every time.) A host that stalls
    // this program past the period between the two halves sends it by the
    // period: then again, three times at most.
    REQUIRE(modify(p.cq_a, IBV_CQ_ATTR_MODERATE, 8, 4000) == 0);
    simnic::tb::Mr src(d.pd, 64, kAccess, 4), dst(d.pd, 64, kAccess, 0);
    std::uint64_t best_ns = UINT64_MAX;
    int found_best = 0;
    std::uint64_t id = 0;
    for (int attempt = 0; attempt < 3 && best_ns >= 3000000; ++attempt) {
        REQUIRE(ibv_req_notify_cq(p.cq_a, 0) == 0);
        ibv_sge sg = src.sge(0, 64);
        const std::uint64_t posted = Pair::now_ns();
        for (int half = 0; half < 2; ++half) {
            for (int i = 0; i < 4; ++i) {
                ibv_send_wr w = simnic::tb::rdma_wr(id++, IBV_WR_RDMA_WRITE, &sg, dst.va(0), dst.mr->rkey);
                simnic::tb::post_send(p.a, w);
            }
            if (half == 0) {
                timespec ts{0, 500 * 1000};
                nanosleep(&ts, nullptr);
            }
        }
        REQUIRE(simnic::tb::wait_cq_event(p.ch) == p.cq_a);
        const std::uint64_t waited = Pair::now_ns() - posted;
        std::vector<ibv_wc> wc(8);
        const int found = ibv_poll_cq(p.cq_a, 8, wc.data());
        REQUIRE(found >= 0);
        for (int i = found; i < 8; ++i)
            simnic::tb::expect_wc(p.cq_a, "WRITE", id - 8 + std::uint64_t(i), IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
        if (waited < best_ns) best_ns = waited, found_best = found;
    }
    std::printf("count met later: event %llu ns after the first post, the first poll found %d\n",
                (unsigned long long)best_ns, found_best);
    CHECK(best_ns < 3000000);  // well before the 4 ms period
    CHECK(found_best == 8);    // at the count: all eight CQEs are there
}

TEST_CASE("held: a CQ destroyed while its event is held takes it along", "[held][destroy]") {
    Device d;
    // The longest period, and a count one WRITE never reaches: the event is
    // held when its CQ goes. (Its 4.095 ms start at the CQE; a host that
    // stalls this program that long between the CQE and the destroy lets
    // the event through first: then again, three times at most.)
    bool held_at_destroy = false;
    for (int attempt = 0; attempt < 3 && !held_at_destroy; ++attempt) {
        auto p = std::make_unique<Pair>(d);
        REQUIRE(modify(p->cq_a, IBV_CQ_ATTR_MODERATE, 64, 4095) == 0);
        simnic::tb::Mr src(d.pd, 64, kAccess, 5), dst(d.pd, 64, kAccess, 0);
        REQUIRE(ibv_req_notify_cq(p->cq_a, 0) == 0);
        ibv_sge sg = src.sge(0, 64);
        ibv_send_wr w = simnic::tb::rdma_wr(3, IBV_WR_RDMA_WRITE, &sg, dst.va(0), dst.mr->rkey);
        simnic::tb::post_send(p->a, w);
        simnic::tb::expect_wc(p->cq_a, "WRITE", 3, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
        pollfd pfd{p->ch->fd, POLLIN, 0};
        held_at_destroy = poll(&pfd, 1, 0) == 0;
        if (!held_at_destroy) REQUIRE(simnic::tb::wait_cq_event(p->ch) == p->cq_a);
        p.reset();  // QPs, CQs, channel
    }
    REQUIRE(held_at_destroy);
    // Past the period: the device goes on, and a new CQ (which may get the
    // old number) has its own event only.
    timespec ts{0, 10 * 1000 * 1000};
    nanosleep(&ts, nullptr);
    Pair q(d);
    q.write_one();
    pollfd pfd{q.ch->fd, POLLIN, 0};
    CHECK(poll(&pfd, 1, 100) == 0);
}

// An arm for solicited completions (ibv_req_notify_cq(cq, 1)) through the
// same path: the datapath's rule raises the event at the solicited SEND's
// receive CQE only, and on a model device the model's interrupt sends it.
// On any device: one event, the two unsolicited receives already in the CQ
// with it, none more.
TEST_CASE("solicited: an arm for solicited completions wakes at the solicited SEND", "[solicited]") {
    Device d;
    Pair p(d);
    simnic::tb::Mr src(d.pd, 64, kAccess, 4), dst(d.pd, 3 * 64, kAccess, 0);
    for (int i = 0; i < 3; ++i) {
        ibv_sge sg = dst.sge(std::size_t(i) * 64, 64);
        simnic::tb::post_recv(p.a, sg, std::uint64_t(100 + i));
    }
    REQUIRE(ibv_req_notify_cq(p.cq_a, 1) == 0);
    ibv_sge sg[3] = {src.sge(0, 64), src.sge(0, 64), src.sge(0, 64)};
    ibv_send_wr w[3];
    for (int i = 0; i < 3; ++i) w[i] = simnic::tb::send_wr(std::uint64_t(200 + i), IBV_WR_SEND, &sg[i]);
    w[0].next = &w[1];
    w[1].next = &w[2];
    w[2].send_flags |= IBV_SEND_SOLICITED;
    simnic::tb::post_send(p.b, w[0]);
    for (int i = 0; i < 3; ++i)
        simnic::tb::expect_wc(p.cq_b, "SEND", std::uint64_t(200 + i), IBV_WC_SUCCESS, IBV_WC_SEND);
    REQUIRE(simnic::tb::wait_cq_event(p.ch) == p.cq_a);
    ibv_wc wc[3];
    const int n = ibv_poll_cq(p.cq_a, 3, wc);
    CHECK(n == 3);  // the solicited receive is the last: the event came with it
    for (int i = 0; i < n; ++i) {
        CHECK(wc[i].wr_id == std::uint64_t(100 + i));
        CHECK(wc[i].opcode == IBV_WC_RECV);
    }
    pollfd pfd{p.ch->fd, POLLIN, 0};
    CHECK(poll(&pfd, 1, 100) == 0);
    CHECK(dst.buf[3 * 64 - 1] == 4);
}
