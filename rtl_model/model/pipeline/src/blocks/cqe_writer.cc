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
        if (c.is_send && !c.event) {
            if (uint64_t started = 0; nic.wqe_start.take(wqe_key(c.qpn, c.wqe_index), started))
                nic.latency_ps.add(now_ps() - started);
        }
        if (nic.on_cqe) nic.on_cqe(c.cqn);
    }
}

// The application blocked in ibv_get_cq_event, woken by a CQ's MSI-X
// interrupt: it polls (cq.poll_ns) and finds the CQE that raised the event.
void CqeWriterBlock::woken() {
    for (;;) {
        auto [t, c] = nic.cq_wake.read();
        wait_until(t + uint64_t(nic.cfg.cq.poll_ns) * 1000);
        if (c.is_send && !c.event_only) {
            if (uint64_t started = 0; nic.wqe_start.take(wqe_key(c.qpn, c.wqe_index), started))
                nic.latency_ps.add(now_ps() - started);
        }
        if (nic.on_cq_event) nic.on_cq_event(c.cqn);
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
        if (!c.event_only) {
            t = std::max(nic.dma.write(now_ps(), nic.cfg.cq.cqe_bytes, DmaPurpose::Cqe), c.not_before_ps);
            nic.cqe_visible.push_input({t, c});
            nic.stage_sample(Nic::kCqeWriter, in, t);
        }
        if (c.event) {
            // The completion event: its EQE, then the MSI-X message (a
            // posted DWORD write to the address in the MSI-X table), both
            // behind the CQE on the outbound link, so the interrupt never
            // overtakes the CQE it announces. The application is woken
            // cq.msix_ns after the message is in (the interrupt's delivery,
            // the driver's handler, the completion channel's reader woken).
            nic.dma.write(now_ps(), nic.cfg.eq.eqe_bytes, DmaPurpose::Eqe);
            ++nic.eqes;
            const uint64_t msg = std::max(nic.dma.write(now_ps(), kMsixMessageBytes, DmaPurpose::Eqe), t);
            const uint64_t wake = msg + uint64_t(nic.cfg.cq.msix_ns) * 1000;
            ++nic.interrupts;
            nic.interrupt_wake_ps += wake - t;
            nic.cq_wake.push_input({wake, c});
        }
    }
}

}  // namespace simnic::model
