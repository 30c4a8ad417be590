// The QPs' timers: the retransmit, RNR and rate-limit timers the transport core arms
// through its TimerPort, kept as one deadline each, fired by the engine
// thread when due (on a model device, inside the timing model's completer
// stage), and the earliest of them, which bounds the thread's sleep; or,
// on a device whose timing model keeps protocol time (a fabric's), handed
// to the model.
#include <vector>

#include "engine_internal.h"

namespace simnic::soft_engine {

bool SoftEngine::Impl::run_timers(uint64_t now) {
    // A model device's completion events held for their period in
    // wall-clock time (cq_eq.cc, cq_event).
    bool any = post_due_cq_events(now);
    std::vector<EngineQp*> due;
    for (auto& [n, q] : qps)
        for (int t = 0; t < tp::kNumQpTimers; ++t)
            if (q->timer_deadline[t] && q->timer_deadline[t] <= now) due.push_back(q.get());
    for (EngineQp* q : due) {
        for (int t = 0; t < tp::kNumQpTimers; ++t) {
            if (!q->timer_deadline[t] || q->timer_deadline[t] > now || !q->core) continue;
            q->timer_deadline[t] = 0;
            any = true;
            // A model device runs the timer in its completer stage.
            if (pipe) pipe->timer(q->qpn, uint8_t(t));
            else fire_timer(*q, t);
        }
    }
    return any;
}

void SoftEngine::Impl::fire_timer(EngineQp& q, int t) {
    if (!q.core) return;
    if (t == int(tp::QpTimer::Retransmit)) stat(hw::stats_block::timeouts);
    run(q, [&] { q.core->on_timer(tp::QpTimer(t)); });
}

uint64_t SoftEngine::Impl::next_deadline() {
    uint64_t d = 0;
    for (auto& [n, q] : qps)
        for (uint64_t t : q->timer_deadline)
            if (t && (d == 0 || t < d)) d = t;
    for (const DueCqEvent& e : due_cq_events)
        if (d == 0 || e.due_ns < d) d = e.due_ns;
    // A fabric's quiet gap, jumped when it has lasted (loop.cc).
    if (cfg.group && cfg.group->quiet_until_ns && (d == 0 || cfg.group->quiet_until_ns < d))
        d = cfg.group->quiet_until_ns;
    return d;
}

// ---- the transport core's TimerPort ----

// A model device whose peers share its simulated time (a fabric's) keeps
// protocol time in the model: the deadlines are simulated nanoseconds and
// the model runs each expired timer in its completer stage (exec_timer), so
// DCQCN's rate limiter, its timers and the NP's CNP interval act in the
// simulated time the frames cross the fabric in. Every other device: the
// host's monotonic clock, and the deadlines above.
uint64_t EngineQp::now_ns() { return eng.protocol_now(); }
void EngineQp::arm(tp::QpTimer t, uint64_t deadline_ns) {
    if (eng.sim_time) return eng.pipe->arm_timer(qpn, uint8_t(t), deadline_ns);
    timer_deadline[int(t)] = deadline_ns ? deadline_ns : 1;
}
void EngineQp::cancel(tp::QpTimer t) {
    if (eng.sim_time) return eng.pipe->cancel_timer(qpn, uint8_t(t));
    timer_deadline[int(t)] = 0;
}

}  // namespace simnic::soft_engine
