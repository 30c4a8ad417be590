// Completion and event queues (hw-spec 7, 8): CQEs written into the
// applications' rings with the owner bit last, the CQ doorbell (consumer
// index and arming), the completion wake-up of sleeping driver threads
// (hw-spec 3.5), EQEs, the copy of a CQ's entries on resize, and the
// transport core's CompletionPort and EventPort, which land here.
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

#include "engine_internal.h"
#include "simnic/hw/mmio.h"

namespace simnic::soft_engine {

namespace {

// Writes the CQE's first `od` bytes, then the 4 bytes holding the owner
// bit, so that a consumer never sees the new owner with an old body.
bool write_cqe_ordered(const HostDom& dom, uint64_t slot, uint8_t* b, uint32_t od) {
    if (dom.base) {
        // Shared memory: the body, then the owner dword with release
        // order, which the driver's acquire load pairs with.
        uint8_t* p = dom.at(slot, size_t(od) + 4);
        if (!p || (reinterpret_cast<uintptr_t>(p + od) & 3) != 0) return false;
        std::memcpy(p, b, od);
        uint32_t w;
        std::memcpy(&w, b + od, 4);
        __atomic_store_n(reinterpret_cast<uint32_t*>(p + od), w, __ATOMIC_RELEASE);
        return true;
    }
    const pid_t pid = dom.pid;
#if defined(__x86_64__) || defined(__i386__)
    // One system call: the kernel copies the remote iovecs one after the
    // other, each a separate copy, and x86 makes stores visible in
    // program order, so the owner word still lands after the body.
    iovec r[2] = {{reinterpret_cast<void*>(slot), od}, {reinterpret_cast<void*>(slot + od), 4}};
    return dma(pid, true, r, 2, b, size_t(od) + 4);
#else
    return dma_write(pid, slot, b, od) && dma_write(pid, slot + od, b + od, 4);
#endif
}

}  // namespace

void SoftEngine::Impl::post_event(uint16_t ctx, hw::EventType type, uint32_t obj, uint32_t aux) {
    // The object goes with it: a completion event's CQN is where the model
    // device's interrupt wakes the application (cq.msix_ns).
    if (rec) rec->add(Op::Kind::Eqe, uint32_t(type), 0, obj);
    // Completion events on a model device. The datapath decides that an
    // event is due (the arm, solicited or not, met by a CQE, or an arm that
    // finds CQEs: write_cqe, cq_doorbell, as on a soft device); the model's
    // CQE writer decides when it reaches the host: behind its CQE, held by
    // the CQ's moderation (ibv_modify_cq's count and period), the EQE and
    // MSI-X message written, cq.msix_ns later (blocks/cqe_writer.h). So
    // that the application sees what the model models, the event waits here
    // for that interrupt (cq_event), one interrupt per event raised, in the
    // order raised. Only an event recorded for the model waits: one raised
    // outside a step the model plays (a firmware command's flush) goes out
    // at once, as the model never hears of it.
    if (rec && model_cq_events && type == hw::EventType::Completion) {
        held_cq_events[obj].emplace_back(ctx, mono_ns());
        return;
    }
    post_eqe(ctx, type, obj, aux);
}

// The model's interrupt for a CQ: its oldest held event goes to the host.
//
// Simulated and wall-clock time. The model runs ahead of the wall clock
// (it jumps over idle time: docs/model.md, "Simulated time and wall-clock
// time"), so an event its moderation timer sent after a period of 500 us
// of simulated time would reach the application a few microseconds of
// wall-clock time after its CQE: before the real peer's next
// acknowledgements, and with them the CQEs the period exists to gather,
// could come back through the kernel. As protocol timers stay in wall-clock
// time on such a device (they never fire early against a slow real peer),
// an event the period sent (`period_ns`) goes out no earlier than that
// period of wall-clock time after the datapath raised it: the application
// is never woken earlier than the period it asked for, and the CQEs written
// meanwhile are in its ring when it is. One the count sent (or no
// moderation) goes at once: the count is met in simulated time, when the
// CQEs are already in the ring. A fabric's device keeps protocol time in
// simulated time, every peer with it, and so does this; a standalone engine
// (simnic bench, whose host lives in the simulation) too.
//
// Each interrupt is for the CQ's oldest event still held, which it takes
// out of the queue at once, with its own raise time: an event that waits
// out its period in wall-clock time waits on its own (due_cq_events), so
// the next interrupt for the CQ is for the next event. (They waited at the
// queue's front before: a second event's period was counted from the
// first's raise time, and an event the count sent meanwhile posted the
// waiting one early and itself late.)
void SoftEngine::Impl::cq_event(uint32_t cqn, uint64_t period_ns, uint32_t cqes_to_count) {
    auto it = held_cq_events.find(cqn);
    if (it == held_cq_events.end() || it->second.empty()) return;  // its CQ destroyed since
    const auto [ctx, raised] = it->second.front();
    it->second.pop_front();
    if (it->second.empty()) held_cq_events.erase(it);
    if (period_ns && !sim_time && !cfg.standalone && raised + period_ns > mono_ns()) {
        due_cq_events.push_back({raised + period_ns, cqn, ctx, cqes_to_count});
        return;
    }
    post_cq_event(cqn, ctx);
}

void SoftEngine::Impl::post_cq_event(uint32_t cqn, uint16_t ctx) {
    // The CQ is still the one the event was raised for (a destroyed CQ's
    // events are dropped with it: cq_destroying).
    const uint8_t* e = entry(Table::Cqc, cqn);
    if (!e || g(e, Table::Cqc, hw::cqc::cqn) != cqn || g(e, Table::Cqc, hw::cqc::ctx_id) != ctx) return;
    post_eqe(ctx, hw::EventType::Completion, cqn, 0);
}

// A CQE written to a CQ whose event waits out its period in wall-clock
// time (cq_event). The model's period ended in simulated time, before the
// CQEs that a real peer's later packets complete could come back through
// the kernel; a NIC's moderation, which sees them in its own time, would
// send the event when its count is met. So the engine counts them on the
// model's behalf, and the count sends the event now.
void SoftEngine::Impl::count_due_cqe(uint32_t cqn) {
    for (size_t i = 0; i < due_cq_events.size(); ++i) {
        DueCqEvent& d = due_cq_events[i];
        if (d.cqn != cqn || d.cqes_left == 0 || --d.cqes_left != 0) continue;
        const uint16_t ctx = d.ctx;
        due_cq_events.erase(due_cq_events.begin() + std::ptrdiff_t(i));
        post_cq_event(cqn, ctx);
        return;  // one CQE counts toward one event: the oldest waiting
    }
}

// The events whose period has passed in wall-clock time (cq_event): posted,
// the earliest due first.
bool SoftEngine::Impl::post_due_cq_events(uint64_t now) {
    if (due_cq_events.empty()) return false;
    std::vector<DueCqEvent> due;
    for (size_t i = 0; i < due_cq_events.size();) {
        if (due_cq_events[i].due_ns > now) {
            ++i;
            continue;
        }
        due.push_back(due_cq_events[i]);
        due_cq_events.erase(due_cq_events.begin() + std::ptrdiff_t(i));
    }
    std::stable_sort(due.begin(), due.end(), [](const DueCqEvent& a, const DueCqEvent& b) { return a.due_ns < b.due_ns; });
    for (const DueCqEvent& d : due) post_cq_event(d.cqn, d.ctx);
    return !due.empty();
}

void SoftEngine::Impl::post_eqe(uint16_t ctx, hw::EventType type, uint32_t obj, uint32_t aux) {
    wc_flush();
    publish_dma_stats();
    hw::Eqe v;
    v.event_type = type;
    v.obj_num = obj;  // the codec keeps the field's 24 bits
    v.aux = aux;
    std::array<uint8_t, hw::eqe::kSize> e;
    hw::encode_eqe(v, e.data());
    if (defer_eqes) {
        deferred_eqes.emplace_back(ctx, e);
        return;
    }
    cfg.events->post_eqe(ctx, e.data(), e.size());
}

void SoftEngine::Impl::post_deferred_eqes() {
    defer_eqes = false;
    for (const auto& [ctx, e] : deferred_eqes) cfg.events->post_eqe(ctx, e.data(), e.size());
    deferred_eqes.clear();
}

void SoftEngine::Impl::cq_error(uint8_t* e, uint32_t cqn) {
    s(e, Table::Cqc, hw::cqc::error, 1);
    post_event(uint16_t(g(e, Table::Cqc, hw::cqc::ctx_id)), hw::EventType::CqErr, cqn);
}

// A CQ in error (a fault) takes nothing and says nothing more: the QP that
// hit the fault has gone to ERR already.
SoftEngine::Impl::CqeWrite SoftEngine::Impl::write_cqe(uint32_t cqn, const tp::Completion& c, uint32_t wqe_index,
                                                       bool is_send, bool solicited) {
    uint8_t* e = entry(Table::Cqc, cqn);
    if (!e || cqn == 0 || g(e, Table::Cqc, hw::cqc::cqn) != cqn || g(e, Table::Cqc, hw::cqc::error))
        return CqeWrite::Written;
    const uint8_t n = uint8_t(g(e, Table::Cqc, hw::cqc::log_size));
    const uint32_t pi = uint32_t(g(e, Table::Cqc, hw::cqc::pi)), ci = uint32_t(g(e, Table::Cqc, hw::cqc::ci));
    // One slot stays empty, as in rxe's queue (rxe_queue_init, queue_full):
    // a ring of 2^n slots holds 2^n - 1 CQEs, the verbs `cqe` the provider
    // reports. A full CQ loses the CQE and raises CQ_ERR, and that is all
    // (rxe_cq_post's EBUSY): the CQ is not marked, so a CQE that finds room
    // later is written.
    if (pi - ci >= (1u << n) - 1) {
        stat(hw::stats_block::cq_overflows);
        post_event(uint16_t(g(e, Table::Cqc, hw::cqc::ctx_id)), hw::EventType::CqErr, cqn);
        return CqeWrite::Overrun;
    }
    wc_flush();  // the data a CQE completes is in memory before the CQE
    publish_dma_stats();
    hw::Cqe v;
    v.wr_id = c.wr_id;
    v.status = c.status;
    v.opcode = c.opcode;
    v.wc_flags = uint8_t(c.wc_flags);
    v.vendor_err = c.vendor_err;
    v.byte_len = c.byte_len;
    v.imm_inv = c.imm_data;
    v.qp_num = c.qp_num;  // the codec keeps the fields' 24 bits
    v.src_qp = c.src_qp;
    v.is_send = is_send;
    v.wqe_index = wqe_index;
    uint8_t b[hw::cqe::kSize];
    hw::encode_cqe(v, pi, n, b);
    HostDom dom;
    const uint64_t slot = g(e, Table::Cqc, hw::cqc::base) + hw::ring_entry_offset(hw::kCqRing, pi, n);
    const uint32_t od = hw::kCqRing.owner.offset;
    if (!host_dom(uint32_t(g(e, Table::Cqc, hw::cqc::domain_id)), dom) || !write_cqe_ordered(dom, slot, b, od)) {
        stat(hw::stats_block::dma_faults);
        cq_error(e, cqn);
        return CqeWrite::Fault;
    }
    s(e, Table::Cqc, hw::cqc::pi, pi + 1);
    if (!due_cq_events.empty()) count_due_cqe(cqn);
    {
        const auto id = uint16_t(g(e, Table::Cqc, hw::cqc::ctx_id));
        auto it = ctxs.find(id);
        if (it != ctxs.end() && !it->second.cqe_written) {
            it->second.cqe_written = true;
            cqe_ctxs.push_back(id);
        }
    }
    if (rec) {
        rec->add(Op::Kind::Cqe, cqn, 0, wqe_index, DmaPurpose::Cqe, is_send);
        Op& o = rec->ops.back();
        o.cq_mod_en = g(e, Table::Cqc, hw::cqc::mod_en) != 0;
        o.cq_mod_count = uint16_t(g(e, Table::Cqc, hw::cqc::mod_count));
        o.cq_mod_period_us = uint16_t(g(e, Table::Cqc, hw::cqc::mod_period));
    }
    const bool notable = solicited || c.status != hw::WcStatus::Success;
    if (notable) cqs[cqn] = CqState{true, pi};
    const uint64_t arm = g(e, Table::Cqc, hw::cqc::arm);
    if (arm == uint64_t(hw::CqArm::Next) || (arm == uint64_t(hw::CqArm::Solicited) && notable)) {
        s(e, Table::Cqc, hw::cqc::arm, 0);
        post_event(uint16_t(g(e, Table::Cqc, hw::cqc::ctx_id)), hw::EventType::Completion, cqn);
    }
    return CqeWrite::Written;
}

// Completion wake-up (hw-spec 3.5): a driver thread that found its CQs
// empty for a while sleeps on CQ_WAKE_SEQ of its context page instead of
// spinning. After the CQEs of a batch are written, every context that got
// one and has sleepers is woken; the full fence pairs with the driver's
// (it registers in CQ_WAITERS, fences, then looks at its CQs once more).
// Runs after every engine batch: it looks only at the contexts that got
// a CQE (cqe_ctxs), not at every open context.
void SoftEngine::Impl::wake_cq_waiters() {
    if (cqe_ctxs.empty()) return;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    for (const uint16_t id : cqe_ctxs) {
        auto it = ctxs.find(id);
        if (it == ctxs.end()) continue;  // closed since
        CtxState& c = it->second;
        c.cqe_written = false;
        constexpr uint32_t f = hw::kCtxDbFifo;
        if (hw::mmio_load32(c.page, f + hw::db_fifo_regs::cq_waiters.offset) == 0) continue;
        auto* seq = reinterpret_cast<uint32_t*>(c.page + f + hw::db_fifo_regs::cq_wake_seq.offset);
        __atomic_fetch_add(seq, 1, __ATOMIC_RELEASE);
        syscall(SYS_futex, seq, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
    }
    cqe_ctxs.clear();
}

void SoftEngine::Impl::cq_doorbell(uint16_t ctx, uint32_t cqn, uint32_t ci, uint32_t cmd, uint32_t seen) {
    uint8_t* e = entry(Table::Cqc, cqn);
    if (!e || cqn == 0 || g(e, Table::Cqc, hw::cqc::cqn) != cqn || g(e, Table::Cqc, hw::cqc::ctx_id) != ctx) {
        stat(hw::stats_block::dma_faults);
        return;
    }
    const uint32_t pi = uint32_t(g(e, Table::Cqc, hw::cqc::pi));
    const uint32_t old_ci = uint32_t(g(e, Table::Cqc, hw::cqc::ci));
    if (ci - old_ci > pi - old_ci) {
        // A consumer index past the producer index is no consumer of
        // this CQ: a driver's bad doorbell. Taken, it would make the CQ
        // look overfull. (Doorbells of a destroyed CQ whose number was
        // reused are stopped earlier: cq_destroying, forget_doorbells.)
        stat(hw::stats_block::dma_faults);
        return;
    }
    s(e, Table::Cqc, hw::cqc::ci, ci);
    if (cmd != uint32_t(hw::CqArm::Next) && cmd != uint32_t(hw::CqArm::Solicited)) return;
    // Arming asks for an event for the next matching CQE after the arm, as
    // rxe's rxe_req_notify_cq does. The arm travels through the FIFO, so CQEs
    // written since the driver rang it must fire at once (no lost wake-up),
    // but those the driver already saw when it armed ([ci, seen): it will
    // poll them) must not: an application that re-arms before it polls, as
    // perftest's -e does, would get one event more than with rxe, for a CQ
    // it has drained, and then polls the other CQ and fails (issue 11). A
    // `seen` outside [ci, pi] is taken as ci.
    if (seen - ci > pi - ci) seen = ci;
    bool fire = false;
    if (cmd == uint32_t(hw::CqArm::Next)) {
        fire = pi != seen;
    } else {
        const CqState& st = cqs[cqn];
        fire = st.notable && st.notable_idx - seen < pi - seen;
    }
    // rxe (6.1): a "solicited" arm does not narrow a "next" one.
    if (!fire && cmd == uint32_t(hw::CqArm::Solicited) && g(e, Table::Cqc, hw::cqc::arm) == uint32_t(hw::CqArm::Next))
        return;
    if (fire) {
        s(e, Table::Cqc, hw::cqc::arm, 0);
        post_event(ctx, hw::EventType::Completion, cqn);
    } else {
        s(e, Table::Cqc, hw::cqc::arm, cmd);
    }
}

// RESIZE_CQ: the entries not yet consumed, into the new ring (EngineHooks).
bool SoftEngine::Impl::cq_copy_entries(const uint8_t* cqc, uint16_t new_domain, uint64_t new_base,
                                       uint8_t new_log_size) {
    constexpr hw::Table T = hw::Table::Cqc;
    const uint8_t n = uint8_t(g(cqc, T, hw::cqc::log_size));
    const uint32_t pi = uint32_t(g(cqc, T, hw::cqc::pi)), ci = uint32_t(g(cqc, T, hw::cqc::ci));
    HostDom from, to;
    if (!host_dom(uint32_t(g(cqc, T, hw::cqc::domain_id)), from) || !host_dom(new_domain, to)) return false;
    const uint64_t base = g(cqc, T, hw::cqc::base);
    for (uint32_t i = ci; i != pi; ++i) {
        uint8_t b[hw::cqe::kSize];
        if (!from.read(base + hw::ring_entry_offset(hw::kCqRing, i, n), b, sizeof b)) return false;
        hw::stamp_owner(hw::kCqRing, b, i, new_log_size);
        if (!to.write(new_base + hw::ring_entry_offset(hw::kCqRing, i, new_log_size), b, sizeof b)) return false;
    }
    return true;
}

// ---- the transport core's CompletionPort and EventPort ----

void EngineQp::post(tp::CqSide side, const tp::Completion& c, bool solicited) {
    uint32_t idx = 0;
    tp::Completion cc = c;
    if (side == tp::CqSide::Send) {
        tp::SendQueue& sq = core->context().sq;
        idx = (sq.empty() && posting_index) ? *posting_index : eng.ring_index_of(*this, sq.head_seq());
        if (c.status == hw::WcStatus::RetryExcErr) eng.stat(hw::stats_block::retry_exceeded);
        if (c.status == hw::WcStatus::RnrRetryExcErr) eng.stat(hw::stats_block::rnr_retry_exceeded);
    } else if (!recv_idx.empty()) {
        idx = recv_idx.front();
        recv_idx.pop_front();
    }
    if (c.status != hw::WcStatus::Success && c.status != hw::WcStatus::WrFlushErr && cause == hw::ErrorCause::None)
        cause = cause_of(c.status);
    if (c.status != hw::WcStatus::Success && cc.vendor_err == 0)
        cc.vendor_err = uint32_t(c.status == hw::WcStatus::WrFlushErr ? cause : cause_of(c.status));
    const auto w = eng.write_cqe(side == tp::CqSide::Send ? send_cqn : recv_cqn, cc, idx, side == tp::CqSide::Send,
                                 solicited);
    // As rxe: the responder whose receive CQE was lost moves its QP to ERR
    // (RESPST_ERR_CQ_OVERFLOW); the completer ignores rxe_cq_post's EBUSY,
    // so a lost send CQE leaves the QP as it was. A fault writing the CQE
    // (no rxe counterpart) stops the QP whichever side it was.
    if (w == SoftEngine::Impl::CqeWrite::Fault || (w == SoftEngine::Impl::CqeWrite::Overrun && side == tp::CqSide::Recv))
        fault = hw::ErrorCause::CqOverflow;
}

void EngineQp::count(tp::Counter c) {
    switch (c) {
        case tp::Counter::DuplicateRequest: eng.stat(hw::stats_block::duplicate_requests); break;
        case tp::Counter::OutOfSeqRequest: eng.stat(hw::stats_block::out_of_seq_requests); break;
        case tp::Counter::CePacket: eng.cc_stat(hw::cc_stats_block::ce_packets); break;
        case tp::Counter::CnpSent: eng.cc_stat(hw::cc_stats_block::cnp_sent); break;
        case tp::Counter::CnpSuppressed: eng.cc_stat(hw::cc_stats_block::cnp_suppressed); break;
        case tp::Counter::CnpReceived: eng.cc_stat(hw::cc_stats_block::cnp_received); break;
        case tp::Counter::RateLimited: eng.cc_stat(hw::cc_stats_block::rate_limit_holds); break;
    }
}

void EngineQp::async_event(hw::EventType ev) {
    // aux: the error cause for error events, 0 otherwise (hw-spec 8.1).
    eng.post_event(ctx, ev, qpn, hw::is_error_event(ev) ? uint32_t(cause) : 0);
}

}  // namespace simnic::soft_engine
