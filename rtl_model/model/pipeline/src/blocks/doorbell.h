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
// Latencies a designer adds (docs/model.md): doorbell.mmio_ns, the MMIO
// write's way to the device, before the doorbell is taken;
// doorbell.wqe_by_mmio_bytes, a send doorbell that carries its WQEs needs no
// fetch; doorbell.recv_wqe_prefetch, an RQ doorbell's WQEs are read now, so
// the responder finds them on chip.
//
// A doorbell whose record leaves the requester nothing to do (an RQ or CQ
// doorbell, usually) ends here: it does not wait in the requester's queue.
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
    void prefetch_recv(const Txn& t);
    // Whether a doorbell's record leaves the requester anything to do.
    static bool for_requester(const OpRecord& rec);
    // A receive WQE's bytes before the datapath's first read of the QP's
    // says (the bench's: one SGE, hw-spec 6.3, in a 64-byte stride).
    static constexpr uint32_t kRecvWqeBytes = 64;
};

}  // namespace simnic::model
