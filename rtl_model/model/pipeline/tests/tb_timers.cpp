// The protocol timer block alone (blocks/timers.h): a fabric's device keeps
// the QPs' timers in simulated time. Each expires at its deadline into the
// completer's input (timer_in); a re-arm moves it, a cancel or a QP's reset
// removes it, and nothing stays behind: the simulation is idle at the last
// live deadline, not at a cancelled one.
#include <catch2/catch.hpp>

#include <tuple>

#include "block_harness.h"
#include "blocks/timers.h"

using namespace simnic::model;

namespace {

constexpr uint64_t kNs = 1000;  // ps

std::vector<std::tuple<uint64_t, uint32_t, uint8_t>> fired(const std::vector<tb::Seen<TxnPtr>>& seen) {
    std::vector<std::tuple<uint64_t, uint32_t, uint8_t>> r;
    for (const auto& s : seen) {
        CHECK(s.item->kind == Txn::Kind::Timer);
        CHECK(s.item->t_in == s.t_ps);
        r.emplace_back(s.t_ps / kNs, s.item->qpn, s.item->timer);
    }
    return r;
}

}  // namespace

TEST_CASE("timers: each expires at its deadline, a re-arm moves it, a cancel removes it", "[model][block][timers]") {
    tb::BlockBench<TimerBlock> b;
    Nic& n = b.nic();
    const auto& out = b.watch(n.timer_in);
    b.thread("arming", [&n] {
        n.timer_arm(5, 0, 1000 * kNs);
        n.timer_arm(6, 2, 300 * kNs);
        n.timer_arm(7, 1, 2000 * kNs);
        n.timer_arm(5, 1, 500 * kNs);
        n.timer_arm(8, 0, 900 * kNs);
        sim::wait_ps(100 * kNs);
        n.timer_arm(5, 0, 1500 * kNs);  // later
        n.timer_arm(8, 0, 400 * kNs);   // earlier
        n.timer_cancel(7, 1);
        n.timer_cancel(7, 2);           // never armed: harmless
        sim::wait_ps(100 * kNs);
        n.timer_arm(6, 1, 50 * kNs);    // already past: now
    });
    // Idle at the last live deadline: the cancelled one at 2000 ns left
    // no event behind.
    CHECK(b.run() == 1500 * kNs);
    using T = std::tuple<uint64_t, uint32_t, uint8_t>;
    CHECK(fired(out) == std::vector<T>{T{200, 6, 1}, T{300, 6, 2}, T{400, 8, 0}, T{500, 5, 1}, T{1500, 5, 0}});
    CHECK(n.timers_fired == 5);
    CHECK(n.timer_due.empty());
    CHECK(n.timer_at.empty());
}

TEST_CASE("timers: a QP's reset drops its every timer, others stay", "[model][block][timers]") {
    tb::BlockBench<TimerBlock> b;
    Nic& n = b.nic();
    const auto& out = b.watch(n.timer_in);
    b.thread("arming", [&n] {
        for (uint8_t t = 0; t < 3; ++t) n.timer_arm(9, t, (100 + t) * kNs);
        n.timer_arm(10, 0, 300 * kNs);
        sim::wait_ps(50 * kNs);
        n.timer_drop_qp(9);
    });
    CHECK(b.run() == 300 * kNs);
    using T = std::tuple<uint64_t, uint32_t, uint8_t>;
    CHECK(fired(out) == std::vector<T>{T{300, 10, 0}});
    // Armed again between runs (outside the simulation), from where the
    // simulation stands.
    n.timer_arm(9, 2, 350 * kNs);
    CHECK(b.run() == 350 * kNs);
    CHECK(n.timers_fired == 2);
}
