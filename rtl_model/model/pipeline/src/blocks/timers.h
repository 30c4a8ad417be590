// Protocol timer block: the QPs' timers (retransmit, RNR, DCQCN's rate
// limiter) in simulated time, for a device whose peers share its simulated
// time (a fabric's: Pipeline::simulated_protocol_time). The engine arms and
// cancels them through the pipeline (TimingModel::arm_timer, cancel_timer);
// the block wakes at the earliest deadline and hands every timer due to the
// completer's input (Nic::timer_in), where a host-time timer enters too.
//
// Why it costs nothing itself: a deadline comparator beside the completer;
// the expired timer's work (a retransmission, the requester let go by the
// rate limiter) is the completer stage's, charged there.
//
// In: Nic::timer_arm / timer_cancel / timer_drop_qp (their state is the
// Nic's). Out: Nic::timer_in. Counter: Nic::timers_fired.
#pragma once

#include "nic.h"

namespace simnic::model {

struct TimerBlock : BlockBase {
    SC_HAS_PROCESS(TimerBlock);
    TimerBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) {
        SC_METHOD(expire);
        sensitive << nic.timer_wake;
        dont_initialize();
    }
    void expire() { nic.timers_expire(); }
};

}  // namespace simnic::model
