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
// descriptor, as many packets as the datapath sent of it then), in
// simulated time: at each of the transaction's packets the block is
// clocked edge by edge until it hands a packet descriptor over, and those
// edges (the first packet's with the descriptor's) replace
// cycles_per_packet. Its m_ready_i is the room in the queue to TX build:
// while that queue is full the model holds m_ready_i low, the RTL holds its
// output (or goes on working, as it is designed to), and those edges are
// the requester's stall (Nic::req_seg_rtl_ready_low counts them). The clock
// of the block only runs while the requester is at one of its packets
// (between them it does MR lookups and issues payload reads). Each packet
// descriptor is compared with the one the datapath's segmentation made
// (transport::seg_packet, recorded with the frame), a difference counted
// and dumped with the frame once per transaction, and the pipeline follows
// the RTL: the frame is re-encoded with the RTL's BTH opcode, PSN, AckReq,
// SE and RETH, its ICRC recomputed (rtl/req_seg/req_seg_frame.h), or, if
// it cannot carry them (other headers, another payload), goes as built,
// counted in Nic::req_seg_rtl_skipped. A packet the RTL did not give goes
// as built. The datapath's own state (PSNs, the retransmit queue's
// entries) stays the datapath's.
// In: Nic::wqe_to_req (doorbells, and request packets the completer
// released). Out: Nic::req_to_txb, Nic::cq_in, Nic::eq_in. Counters:
// Nic::kRequester, Nic::req_seg_rtl_*.
#pragma once

#include <cstdint>
#include <vector>

#include "nic.h"

namespace simnic::model {

struct RequesterBlock : BlockBase {
    SC_HAS_PROCESS(RequesterBlock);
    RequesterBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) { SC_THREAD(main); }
    void main();

private:
    // req_seg.impl = rtl: groups the record's frames into transactions
    // (seg_first_, seg_count_ per frame).
    void rtl_transactions(const OpRecord& rec);
    // req_seg.impl = rtl: frame `j`'s packet from the RTL, in simulated
    // time (its edges waited, m_ready_i from the room in req_to_txb); the
    // transaction offered at its first frame, checked at its last.
    void rtl_packet(OpRecord& rec, size_t j, sim::BlockStats& st);
    // Ends the open transaction: a block that did not say m_last_o is run
    // on (m_ready_i high, no time) to its next packet or m_last_o, as
    // ReqSegRtl::run() does, then its packets are compared with the
    // datapath's.
    void rtl_close(OpRecord& rec);

    std::vector<size_t> seg_first_, seg_count_;
    struct SegTxn {
        bool open = false;
        bool ended = false;  // m_last_o came, or one packet too many
        size_t first = 0, n = 0;
        transport::SegWqe w;
        std::vector<transport::SegPacket> packets, want;  // from the RTL; the datapath's
        uint64_t offered_at = 0;  // ReqSegRtl::cycles() when offered
        // The first packet found wrong as they were played, and its frame
        // (the frames leave the record as they are sent).
        size_t bad = SIZE_MAX;
        std::vector<uint8_t> bad_frame;
        // The first packet whose frame could not carry the RTL's
        // descriptor, and why (said in the dump).
        size_t skipped = SIZE_MAX;
        const char* skipped_why = nullptr;
    } txn_;
};

}  // namespace simnic::model
