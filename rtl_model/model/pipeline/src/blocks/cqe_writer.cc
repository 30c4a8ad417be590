#include "blocks/cqe_writer.h"

#include <algorithm>

namespace simnic::model {

using sim::now_ps;
using sim::wait_ps;
using sim::wait_until;

// CQEs become visible in the order they were written (posted writes keep
// their order), so one FIFO of (visible at, CQE) suffices.
void CqeWriterBlock::visible() {
    for (;;) {
        auto [t, c] = nic.cqe_visible.read();
        // The application's poll finds it cq.poll_ns after it is visible:
        // its message is complete for the application then. (One that
        // raised an event is complete when the interrupt has woken the
        // application: woken().)
        wait_until(t + uint64_t(nic.cfg.cq.poll_ns) * 1000);
        if (c.is_send && !c.event && !c.moderated) {
            if (uint64_t started = 0; nic.wqe_start.take(wqe_key(c.qpn, c.wqe_index), started))
                nic.latency_ps.add(now_ps() - started);
        }
        if (nic.on_cqe) nic.on_cqe(c.cqn);
    }
}

// The application blocked in ibv_get_cq_event, woken by a CQ's MSI-X
// interrupt: it polls (cq.poll_ns) and finds the CQE that raised the event.
// Its real completion event, which the engine holds for this interrupt
// (Datapath::cq_event; a model device), goes to the host then, with
// on_cq_event. (At the poll, not the wake: this thread takes the wakes one
// after the other, and a wake due while it waits for the previous one's
// poll would be late anyway; an application's ibv_get_cq_event is
// followed by its poll.)
void CqeWriterBlock::woken() {
    for (;;) {
        auto [t, c] = nic.cq_wake.read();
        wait_until(t + uint64_t(nic.cfg.cq.poll_ns) * 1000);
        nic.be.cq_event(c.cqn, c.period_ps / 1000, c.cqes_to_count);
        if (c.is_send && !c.event_only) {
            if (uint64_t started = 0; nic.wqe_start.take(wqe_key(c.qpn, c.wqe_index), started))
                nic.latency_ps.add(now_ps() - started);
        }
        // The CQEs moderation held behind it: the application finds them now.
        for (uint64_t key : c.held)
            if (uint64_t started = 0; nic.wqe_start.take(key, started)) nic.latency_ps.add(now_ps() - started);
        if (nic.on_cq_event) nic.on_cq_event(c.cqn);
    }
}

void CqeWriterBlock::interrupt(CqeTok c, uint64_t cqe_ps, uint64_t after_ps) {
    // The completion event: its EQE, then the MSI-X message (a posted DWORD
    // write to the address in the MSI-X table), both behind the CQE on the
    // outbound link, so the interrupt never overtakes the CQE it announces.
    // The application is woken cq.msix_ns after the message is in (the
    // interrupt's delivery, the driver's handler, the completion channel's
    // reader woken).
    nic.dma.write(now_ps(), nic.cfg.eq.eqe_bytes, DmaPurpose::Eqe);
    ++nic.eqes;
    const uint64_t msg = std::max(nic.dma.write(now_ps(), kMsixMessageBytes, DmaPurpose::Eqe), after_ps);
    const uint64_t wake = msg + uint64_t(nic.cfg.cq.msix_ns) * 1000;
    ++nic.interrupts;
    nic.interrupt_wake_ps += wake - cqe_ps;
    nic.cq_wake.push_input({wake, std::move(c)});
}

// Interrupt moderation's timer: an event held its CQ's period after the
// CQE that raised it goes out then, however few CQEs followed.
void CqeWriterBlock::moderation_timer() {
    for (;;) {
        if (held.empty()) {
            sc_core::wait(held_changed);
            continue;
        }
        auto first = held.begin();
        for (auto it = held.begin(); it != held.end(); ++it)
            if (it->second.deadline < first->second.deadline) first = it;
        if (first->second.deadline == UINT64_MAX) {
            // Only counts are pending (a CQ with a count and no period):
            // no timer, or an idle model would run on to it.
            sc_core::wait(held_changed);
            continue;
        }
        if (first->second.deadline > now_ps()) {
            sc_core::wait(sc_core::sc_time(double(first->second.deadline - now_ps()), sc_core::SC_PS), held_changed);
            continue;
        }
        Held h = std::move(first->second);
        held.erase(first);
        h.c.period_ps = h.deadline - h.cqe_ps;
        h.c.cqes_to_count = h.limit > h.count ? h.limit - h.count : 0;
        interrupt(std::move(h.c), h.cqe_ps, h.cqe_ps);
    }
}

void CqeWriterBlock::main() {
    for (;;) {
        uint64_t in = 0;
        CqeTok c = nic.cq_in.read(&in);
        sim::BlockStats& st = nic.blk[Nic::kCqeWriter];
        sim::BusyScope busy(st);
        wait_ps(nic.cycles(1));
        uint64_t t = now_ps();
        auto h = held.find(c.cqn);
        if (!c.event_only) {
            t = std::max(nic.dma.write(now_ps(), nic.cfg.cq.cqe_bytes, DmaPurpose::Cqe), c.not_before_ps);
            if (h != held.end()) {
                // Its CQ's event is held: the application sees this CQE
                // when that interrupt wakes it.
                c.moderated = true;
                ++nic.moderated_cqes;
                ++h->second.count;
                if (c.is_send) h->second.c.held.push_back(wqe_key(c.qpn, c.wqe_index));
            }
            nic.cqe_visible.push_input({t, c});
            nic.stage_sample(Nic::kCqeWriter, in, t);
        }
        if (h != held.end() && h->second.limit > 1 && h->second.count >= h->second.limit) {
            // The count is reached: the event goes behind this CQE.
            Held e = std::move(h->second);
            held.erase(h);
            held_changed.notify(sc_core::SC_ZERO_TIME);
            interrupt(std::move(e.c), e.cqe_ps, t);
        }
        if (!c.event) continue;
        const Moderation m = moderation(c);
        if (holds(m) && !c.event_only) {
            // Held until the count of CQEs or the period.
            // (A CQ armed again while its event is held cannot be: the
            // event is what disarms it, and the application re-arms when
            // woken; a second one would go out at once.)
            if (held.count(c.cqn)) {
                interrupt(c, t, t);
                continue;
            }
            // A count without a period (only ibv_modify_cq can ask for
            // one; the device keys refuse it) waits for its count, as a
            // NIC whose timer is off would.
            Held e{c, t, m.period_ps ? t + m.period_ps : UINT64_MAX, 1, m.count > 1 ? m.count : 0};
            held.emplace(c.cqn, std::move(e));
            held_changed.notify(sc_core::SC_ZERO_TIME);
            continue;
        }
        interrupt(c, t, t);
    }
}

}  // namespace simnic::model
