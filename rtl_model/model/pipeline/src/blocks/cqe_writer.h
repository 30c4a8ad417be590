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
// Why it costs what it costs: the block itself is busy one cycle per CQE;
// what the host waits for is the PCIe write.
//
// In: Nic::cq_in. Out: host memory (the DMA engine), Nic::on_cqe,
// Nic::latency_ps. Counters: Nic::kCqeWriter.
#pragma once

#include "nic.h"

namespace simnic::model {

struct CqeWriterBlock : BlockBase {
    SC_HAS_PROCESS(CqeWriterBlock);
    CqeWriterBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) {
        SC_THREAD(main);
        SC_THREAD(visible);
        SC_THREAD(woken);
    }
    // An MSI-X message: one DWORD of data (PCIe MSI-X, its table's Message Data).
    static constexpr uint32_t kMsixMessageBytes = 4;
    void main();
    void visible();
    void woken();
};

}  // namespace simnic::model
