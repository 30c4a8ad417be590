// Requester block: turns fetched WQEs into request packets.
//
// Segmentation and PSNs are the functional datapath's (it ran when the
// doorbell block called it); this block plays what it recorded. It waits for
// the doorbell's WQEs to be in the device (Txn::ready_ps, counted as stall),
// then, per request packet: its MR lookups (MPT/MTT caches; a miss is a DMA
// read of the entry, waited for), its payload DMA reads, and
// requester.cycles_per_packet to build it.
//
// Why it costs what it costs: payload reads are issued, not waited for. The
// packet goes to TX build with the time its payload will have arrived
// (FrameTok::ready_ps), so the reads of consecutive packets overlap, up to
// the DMA engine's tags, and this block's own rate is one packet per
// cycles_per_packet. CQEs and EQEs the WQEs produce (unsignalled errors,
// completions without a wire packet) go to their writers, a CQE not before
// the payload writes it completes are visible.
//
// In: Nic::wqe_to_req (doorbells, and request packets the completer
// released). Out: Nic::req_to_txb, Nic::cq_in, Nic::eq_in. Counters:
// Nic::kRequester.
#pragma once

#include "nic.h"

namespace simnic::model {

struct RequesterBlock : BlockBase {
    SC_HAS_PROCESS(RequesterBlock);
    RequesterBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) { SC_THREAD(main); }
    void main();
};

}  // namespace simnic::model
