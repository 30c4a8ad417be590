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
// Segmentation: with req_seg.impl = rtl the Verilated segmentation block
// (rtl_model/rtl/req_seg: roce_req_seg.sv, or one's own) runs on every
// WQE's packets the datapath made in one go (a transaction: the WQE's
// descriptor, as many packets as the datapath sent of it then): each packet
// descriptor is compared with the one the datapath's segmentation made
// (transport::seg_packet, recorded with the frame), a difference counted
// and dumped with the frame, and its own cycles per packet (the first with
// the descriptor's stalls and latency) replace cycles_per_packet. The
// datapath's packets go on the wire either way.
//
// In: Nic::wqe_to_req (doorbells, and request packets the completer
// released). Out: Nic::req_to_txb, Nic::cq_in, Nic::eq_in. Counters:
// Nic::kRequester, Nic::req_seg_rtl_*.
#pragma once

#include <vector>

#include "nic.h"

namespace simnic::model {

struct RequesterBlock : BlockBase {
    SC_HAS_PROCESS(RequesterBlock);
    RequesterBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) { SC_THREAD(main); }
    void main();

private:
    // req_seg.impl = rtl: the RTL over the record's request packets, checked
    // against the datapath's segmentation; `cycles` gets each frame's edges
    // (0: no segmentation step, cycles_per_packet then).
    void rtl_segment(OpRecord& rec, std::vector<uint64_t>& cycles);
    std::vector<uint64_t> seg_cycles_;
};

}  // namespace simnic::model
