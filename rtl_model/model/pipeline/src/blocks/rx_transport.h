// RX transport block: the responder (request packets) and the completer
// (response packets, protocol timers).
//
// Per packet: the QP context lookup (qpc_cache.hit_cycles, plus a DMA read
// of the entry on a miss, counted as stall), then the functional datapath
// runs the transport core on the packet, and the block plays what it
// recorded: MR lookups, payload writes (posted), the reads of a READ
// response's payload (not waited for: the frame carries their arrival time
// to TX build), ACKs and READ responses to TX build, CQEs and EQEs to their
// writers. A request packet counts as the responder's work, a response or a
// timer as the completer's (Nic::kResponder, Nic::kCompleter); the two share
// one datapath, so they never work at the same time.
//
// Why it costs what it costs: *.cycles_per_packet for the transport core's
// decision, plus the memory it touches (the lookups and the reads it must
// see before going on, such as a receive WQE, are waited for).
//
// Request packets the completer releases (the send window reopened, a
// retransmission) belong to the requester's stream: they go, with the
// memory ops just before them (their MR lookups and payload reads, back to
// the last host-memory write, which is the received packet's), to the
// requester's queue behind the packets already there, so PSN order on the
// wire is the datapath's order.
//
// In: Nic::rx_in, Nic::timer_in. Out: Nic::rxt_to_txb, Nic::wqe_to_req,
// Nic::cq_in, Nic::eq_in. Counters: Nic::kResponder, Nic::kCompleter; the
// start time of send WQEs the completer restarts (Nic::wqe_start).
#pragma once

#include "nic.h"

namespace simnic::model {

struct RxTransportBlock : BlockBase {
    SC_HAS_PROCESS(RxTransportBlock);
    RxTransportBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) {
        SC_THREAD(main);
        SC_THREAD(timers);
    }
    void main();
    void timers();
    // Plays the record; returns when its last frame's payload is in (0: no frame).
    uint64_t play(Txn& t, sim::BlockStats& st);
    sc_core::sc_mutex busy;  // the responder and completer share one datapath
};

}  // namespace simnic::model
