// EQE writer block: writes event queue entries to host memory (and raises
// the interrupt).
//
// Per EQE: one cycle to format it, then a posted DMA write of eq.eqe_bytes
// on the outbound PCIe link, which it shares with payload and CQE writes.
// Why it costs what it costs: posted writes do not block the block, so it is
// busy one cycle per EQE; the link time is the DMA engine's.
//
// In: Nic::eq_in. Out: host memory (the DMA engine). Counters:
// Nic::kEqeWriter, eqes.
#pragma once

#include "nic.h"

namespace simnic::model {

struct EqeWriterBlock : BlockBase {
    SC_HAS_PROCESS(EqeWriterBlock);
    EqeWriterBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) { SC_THREAD(main); }
    void main();
};

}  // namespace simnic::model
