// Doorbell block: where the host's doorbell writes enter the TX pipeline.
//
// Models the doorbell FIFO's consumer: per doorbell, one cycle for the
// doorbell write itself, then, for an SQ or RQ doorbell, the QP context
// lookup (qpc_cache.hit_cycles on a hit; on a miss, a DMA read of
// qpc_cache.entry_bytes first, counted as this block's stall). The
// functional datapath then decides which WQEs the doorbell makes runnable,
// and their fetch by DMA is issued here.
//
// Why it costs what it costs: the WQE reads of a doorbell are issued back to
// back and the next doorbell's right after, without waiting for them, so
// fetches overlap across doorbells up to the DMA engine's tags. The time the
// last WQE arrives travels with the work (Txn::ready_ps): the requester,
// not this block, waits for it.
//
// In: Nic::db_in. Out: Nic::wqe_to_req. Counters: Nic::kDoorbell; each
// send WQE's start time (Nic::wqe_start, for the message latency).
#pragma once

#include "nic.h"

namespace simnic::model {

struct DoorbellBlock : BlockBase {
    SC_HAS_PROCESS(DoorbellBlock);
    DoorbellBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) { SC_THREAD(main); }
    void main();
};

}  // namespace simnic::model
