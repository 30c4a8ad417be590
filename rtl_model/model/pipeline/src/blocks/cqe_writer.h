// CQE writer block: writes completion queue entries to host memory.
//
// Per CQE: one cycle to format it, then a posted DMA write of cq.cqe_bytes.
// The CQE is visible to the host when that write is (the DMA engine's
// outbound link, then dma.write_latency_ns), and never before the payload
// writes it completes (CqeTok::not_before_ps). Posted writes keep their
// order, so CQEs become visible in the order they were written.
//
// At visibility, in simulated time, a second thread takes the message
// latency sample of a send CQE (visible minus the time its WQE entered the
// device, Nic::wqe_start) and calls Nic::on_cqe: the bench's host model
// reacts there, as a host polling the CQ would.
//
// A CQE whose CQ was armed for events (ibv_req_notify_cq; CqeTok::event)
// is followed by its completion EQE and the MSI-X message, posted behind
// it; a third thread wakes the application cq.msix_ns after the message is
// in host memory, takes the latency sample then (the application sees the
// CQE when woken) and calls Nic::on_cq_event. An arm that finds CQEs
// already there raises the event alone (CqeTok::event_only).
//
// Interrupt moderation (per CQ: ibv_modify_cq's cq_count and cq_period,
// the CQC's mod_* that the CQE carries, as mlx5's CQ moderation; a CQ
// never modified takes the device's cq.moderation_count and
// cq.moderation_period_ns): the event a CQE raised is held until the count
// of CQEs of its CQ are written (that one included; the EQE and message go
// behind the last) or the period after that CQE was visible (a fourth
// thread's timer), whichever comes first. CQEs written meanwhile are seen
// by the application when that interrupt wakes it (their latency is taken
// then). An arm that finds CQEs already there still fires at once.
//
// Why it costs what it costs: the block itself is busy one cycle per CQE;
// what the host waits for is the PCIe write.
//
// In: Nic::cq_in. Out: host memory (the DMA engine), Nic::on_cqe,
// Nic::latency_ps. Counters: Nic::kCqeWriter.
#pragma once

#include <map>

#include "nic.h"

namespace simnic::model {

struct CqeWriterBlock : BlockBase {
    SC_HAS_PROCESS(CqeWriterBlock);
    CqeWriterBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) {
        SC_THREAD(main);
        SC_THREAD(visible);
        SC_THREAD(woken);
        SC_THREAD(moderation_timer);
        // A destroyed CQ's held event goes with it (the engine drops the
        // application's event too: cq_destroying), so that a CQ given its
        // number is not moderated, nor woken, by what was left of it.
        nic.forget_cq_event = [this](uint32_t cqn) {
            if (held.erase(cqn)) held_changed.notify(sc_core::SC_ZERO_TIME);
        };
    }
    // An MSI-X message: one DWORD of data (PCIe MSI-X, its table's Message Data).
    static constexpr uint32_t kMsixMessageBytes = 4;
    void main();
    void visible();
    void woken();
    void moderation_timer();
    // Writes the completion event's EQE and MSI-X message now (behind
    // everything on the outbound link, and never visible before `after_ps`);
    // the application is woken cq.msix_ns after the message. `cqe_ps`: when
    // the CQE that raised the event was visible (the wake time's start).
    void interrupt(CqeTok c, uint64_t cqe_ps, uint64_t after_ps);

    // A CQ's moderation: its own (the CQE's, from MODIFY_CQ) or the
    // device's.
    struct Moderation {
        uint32_t count = 0;       // CQEs per event; 0 or 1: no count
        uint64_t period_ps = 0;   // 0: no timer
    };
    Moderation moderation(const CqeTok& c) const {
        if (c.mod_own) return {c.mod_count, uint64_t(c.mod_period_us) * 1'000'000};
        return {nic.cfg.cq.moderation_count, uint64_t(nic.cfg.cq.moderation_period_ns) * 1000};
    }
    // Whether an event is held at all: a count of 1 is met by the CQE that
    // raised it.
    static bool holds(const Moderation& m) { return m.count > 1 || (m.count == 0 && m.period_ps > 0); }

    // Per CQ, the event that moderation holds (ordered by CQN: the timer
    // takes ties in a fixed order, so runs repeat).
    struct Held {
        CqeTok c;                // the CQE (or arm) that raised the event, with the CQEs held behind it
        uint64_t cqe_ps = 0;     // when that CQE was visible
        uint64_t deadline = 0;   // cqe_ps + the period (UINT64_MAX: none)
        uint32_t count = 0;      // CQEs of the CQ written since, that one included
        uint32_t limit = 0;      // the count that sends the event (> 1), or 0: the period only
    };
    std::map<uint32_t, Held> held;
    sc_core::sc_event held_changed;
};

}  // namespace simnic::model
