// TX build block: header build and ICRC insert for every frame that leaves.
//
// Takes frames from three queues, the RX transport stage's responses (ACKs,
// READ responses) first, since they are short and the peer's requester is
// waiting on them, then QP1's MADs (a fabric's device: Pipeline::tx_frame;
// few, and a connection waits on each), then the requester's request
// packets. A frame cannot start before its payload is in the device
// (FrameTok::ready_ps, set by the DMA reads that fetch it): that wait is
// this block's stall.
//
// Why it costs what it costs: the frame streams through the datapath at one
// beat (mac.width_bytes) per cycle, so it occupies the block for
// ceil(len / width) cycles; the ICRC engine's result is out
// icrc.latency_cycles after the last beat, which the frame carries to MAC TX
// as its ready time (pipelined: the next frame may start meanwhile). With
// icrc.impl = rtl the Verilated ICRC engine computes the ICRC that goes on
// the wire (a disagreement with the datapath's is counted); the timing is the
// same as the C++ model's.
//
// The headers: the C++ model takes them as the datapath built them, their
// first beat tx_build.latency_cycles (0) after the frame starts. With
// tx_build.impl = rtl the Verilated header builder (rtl_model/rtl/tx_build:
// roce_tx_build.sv, or one's own) builds them from the frame's header
// descriptor: its header is compared with the datapath's byte for byte
// (a difference counted and dumped, and the RTL's header sent), and its own
// cycles replace the header's beats and tx_build.latency_cycles.
//
// Backpressure with an RTL: the frame's first beat is the one that needs
// room in the queue to MAC TX. With tx_build.impl = rtl the header's first
// beat waits on the RTL's port with m_axis_tready_i low for the edges the
// queue stays full (the RTL must hold it; Nic::tx_build_rtl_ready_low);
// with icrc.impl = rtl the frame is not offered to the ICRC engine, which
// has no output ready, meanwhile (Nic::icrc_rtl_ready_low). Each such edge
// is a cycle of TX build's stall and the frame goes on that much later.
// The C++ model, with neither, hands the frame on when the queue has room
// (after its last beat with store-and-forward), as before.
//
// In: Nic::rxt_to_txb, Nic::qp1_to_txb, Nic::req_to_txb. Out:
// Nic::txb_to_mac. Counters: Nic::kTxBuild, Nic::icrc_rtl_mismatch,
// Nic::tx_build_rtl_mismatch.
#pragma once

#include "nic.h"

namespace simnic::model {

struct TxBuildBlock : BlockBase {
    SC_HAS_PROCESS(TxBuildBlock);
    TxBuildBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) {
        either_ |= nic.rxt_to_txb.data_event();
        either_ |= nic.req_to_txb.data_event();
        either_ |= nic.qp1_to_txb.data_event();
        SC_THREAD(main);
    }
    void main();

private:
    // tx_build.impl = rtl: the RTL's header for frame `b` (its beats from
    // `in_cycles`, its latency into `hdr_latency`), compared with the
    // datapath's and put on the frame; false if the descriptor cannot
    // carry the frame (sent as built). Its first beat is held with
    // m_axis_tready_i low while the queue to MAC TX is full: the edges
    // into `low` (the stall, counted in `st`).
    bool rtl_header(std::vector<uint8_t>& b, uint64_t& in_cycles, uint64_t& hdr_latency, uint64_t& low,
                    sim::BlockStats& st);

    // What main() waits on when every queue is empty. A member, built once:
    // `wait(a | b)` makes a list on the heap that SystemC frees when the wait
    // ends, and leaked it when a device was deleted with the thread waiting.
    sc_core::sc_event_or_list either_;
};

}  // namespace simnic::model
