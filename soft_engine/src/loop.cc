// The engine thread (one per device): each pass takes the doorbells, the
// received frames and the due timers under the device lock, then ends the
// batch (posted writes out, frames sent, sleeping drivers woken, EQEs and
// their interrupts last). It spins
// briefly after work and then sleeps in epoll (hw-spec 3.4), so that an idle
// device costs nothing.
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "engine_internal.h"

namespace simnic::soft_engine {

bool SoftEngine::Impl::pass(uint64_t now, bool& simulating) {
    bool work = false;
    defer_eqes = true;
    // A fabric: the other devices' doorbells enter the simulation now too
    // (their applications run meanwhile), and the fabric advances a
    // quantum at a time below, not to idle: it has no port of its own whose
    // frames could overtake the doorbells.
    work |= drain_group_fifos();
    if (!cfg.group && pipe && work) {
        // A model device simulates the doorbells before the frames of the
        // same pass: simulated together, a frame's receive path overtakes
        // the doorbell block (and doorbells_before_rx takes those rung while
        // this runs). It stops early if what it sends to the device itself
        // outruns the port's receive path (tx_room's twin for a model
        // device): run_quantum below goes on once the port has been read.
        pipe->run_unless_lagging([this] { return rx_lags(); });
    }
    work |= rx_batch();
    work |= resume_held();
    work |= run_timers(now);
    // A held fabric (EngineGroup::hold): the doorbells and MADs wait in the
    // simulation's inputs, and the engine sleeps until the fabric is
    // released (which sets resume_sim) or more doorbells come.
    if (cfg.group && cfg.group->held) {
        end_batch();
        return work;
    }
    work |= std::exchange(gsi_pending, false);
    work |= std::exchange(resume_sim, false);
    // A model device simulates what came in, a quantum of its time per pass:
    // what it sends goes out at the end of the pass, and what comes back is
    // taken in by the next. A fabric with nothing new simulates on only
    // while busy, or once its quiet gap has lasted in wall time.
    bool due = work || simulating;
    if (cfg.group && pipe) {
        // Anything new ends a quiet gap: it is taken at the time the fabric
        // stands at, an event now, so the gap check below lets it through.
        if (work && cfg.group->quiet_until_ns) {
            cfg.group->quiet_until_ns = 0;
            ++cfg.group->gaps_cut_short;
        }
        if (due) due = quiet_gap_due(now);
    }
    if (pipe && due) {
        simulating = pipe->run_quantum();
        work |= simulating;
    }
    end_batch();
    // A fabric's pass may have simulated the other members' devices too:
    // their completions are woken now, not at their next pass.
    if (cfg.group)
        for (Impl* m : cfg.group->members)
            if (m != this) m->end_batch();
    return work;
}

bool SoftEngine::Impl::quiet_gap_due(uint64_t now) {
    EngineGroup& g = *cfg.group;
    if (g.quiet_until_ns == 0) {
        const uint64_t gap = pipe->quiet_gap_ns();
        if (gap == 0) return true;  // busy (or idle: run_quantum says so)
        g.quiet_until_ns = now + gap;
    }
    if (now < g.quiet_until_ns) return false;
    g.quiet_until_ns = 0;
    ++g.gaps_waited_out;
    return true;
}

void SoftEngine::Impl::end_batch() {
    // The read-ahead copy is kept: it serves only the WQE it was read for,
    // whose bytes the application may not change before that WQE
    // completes, and the firmware's commands drop it (fence) before
    // anything is unmapped (host_memory.cc).
    wc_flush();
    publish_dma_stats();
    tx_step_end();
    wake_cq_waiters();
    post_deferred_eqes();
}

void SoftEngine::Impl::loop() {
    constexpr uint64_t kSpinNs = 200'000;  // stay awake this long after the last work
    static_assert(EngineConfig::kMaxAckHoldNs < kSpinNs, "a held ACK runs out while the engine spins");
    uint64_t last_work = mono_ns();
    epoll_event evs[32];
    bool simulating = false;  // a model device's pipeline has work left
    while (!stop.load(std::memory_order_relaxed)) {
        bool work = false;
        {
            std::lock_guard<std::recursive_mutex> lk(mu);
            work = pass(mono_ns(), simulating);
        }
        while (fence_waiters.load(std::memory_order_acquire) > 0) std::this_thread::yield();
        const uint64_t now = mono_ns();
        if (work) {
            last_work = now;
            continue;
        }
        if (now - last_work < kSpinNs) {
            // Spinning keeps doorbell-to-wire latency low, but on a machine
            // with fewer cores than busy threads it must not starve the
            // applications whose next doorbell it is waiting for.
            std::this_thread::yield();
            continue;
        }
        // Going to sleep (hw-spec 3.4): flag, fence, look once more.
        {
            std::lock_guard<std::recursive_mutex> lk(mu);
            // No ACK waits for a reply across a sleep (the hold is far
            // shorter than the spin: it has run out by now).
            if (ack_hold.holding()) tx_flush();
            set_sleeping(1);
            __atomic_thread_fence(__ATOMIC_SEQ_CST);
            if (fifos_pending() || !loop_q.empty() || port->rx_pending()) {
                set_sleeping(0);
                continue;
            }
            itimerspec its{};
            if (const uint64_t d = next_deadline()) {
                its.it_value.tv_sec = time_t(d / 1000000000ull);
                its.it_value.tv_nsec = long(d % 1000000000ull);
            }
            timerfd_settime(timer_fd, TFD_TIMER_ABSTIME, &its, nullptr);
        }
        const int n = epoll_wait(epfd, evs, 32, -1);
        {
            std::lock_guard<std::recursive_mutex> lk(mu);
            set_sleeping(0);
            // Only the engine's own event fds are drained here (rx_batch reads
            // the port's). The port's set changes under this lock as groups
            // are joined and left, and a socket closed meanwhile may have
            // been reported with a number that now names something else.
            for (int i = 0; i < n; ++i) {
                const int fd = evs[i].data.fd;
                const bool ours = fd == wake_fd || fd == timer_fd ||
                                  std::any_of(ctxs.begin(), ctxs.end(),
                                              [fd](const auto& c) { return c.second.engine_fd == fd; });
                if (!ours) continue;
                uint64_t v;
                while (::read(fd, &v, sizeof v) == sizeof v) {}
            }
        }
        last_work = mono_ns();
    }
}

}  // namespace simnic::soft_engine
