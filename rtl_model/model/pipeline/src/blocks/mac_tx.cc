#include "blocks/mac_tx.h"

#include <algorithm>

namespace simnic::model {

using sim::now_ps;
using sim::wait_ps;
using sim::wait_until;

void MacTxBlock::main() {
    for (;;) {
        uint64_t pushed = 0;
        FrameTok f = nic.txb_to_mac.read(&pushed);
        const uint32_t len = uint32_t(f.f.bytes.size());
        const uint64_t dur = std::max<uint64_t>(nic.cycles(nic.cfg.beats(len)), uint64_t(nic.cfg.line_time_ps(len) + 0.5));
        // Store-and-forward: the frame is all there (ready_ps). Cut-through:
        // it starts once its first beat is there, but late enough that the
        // line never waits for a beat (a MAC cannot pause a frame on the
        // wire): its last byte goes out a cycle after its last beat came.
        uint64_t start = f.ready_ps;
        if (nic.cut_through) {
            start = f.head_ps;
            if (f.ready_ps + nic.cycles(1) > start + dur) start = f.ready_ps + nic.cycles(1) - dur;
        }
        // The stage: from when the frame is all there (cut-through: its last
        // beat out of TX build) to its last byte on the line, so that the
        // stages along a frame's path still add up.
        const uint64_t in = std::max(pushed, f.ready_ps);
        wait_until(start);
        // PFC: a frame of a paused priority waits for the pause to end or
        // be lifted (a frame already on the line finishes: 802.3 Annex 31B).
        if (!nic.loopback) {
            const uint8_t prio = Nic::frame_priority(f.f.bytes);
            const uint64_t held = now_ps();
            if (nic.pause_until_ps[prio] > held) ++nic.pfc_paused_frames;
            while (nic.pause_until_ps[prio] > now_ps())
                sc_core::wait(sc_core::sc_time(double(nic.pause_until_ps[prio] - now_ps()), sc_core::SC_PS),
                              nic.pause_changed);
            nic.pfc_paused_ps += now_ps() - held;
        }
        sim::BlockStats& st = nic.blk[Nic::kMacTx];
        const bool streamed = nic.cut_through && nic.loopback;
        {
            sim::BusyScope busy(st);
            if (nic.tx_frames == 0 && nic.first_tx_ps == 0) nic.first_tx_ps = now_ps();
            // Looped back with cut-through, MAC RX receives the frame while
            // it is sent: it gets the first bit now (mac_rx.cc).
            if (streamed) nic.wire_in.push_input(std::move(f.f.bytes));
            wait_ps(dur);
            ++nic.tx_frames;
            nic.tx_wire_bytes += len + nic.cfg.mac.ifg_bytes;
            nic.tx_payload_bytes += f.f.payload;
            nic.last_tx_ps = now_ps();
        }
        nic.stage_sample(Nic::kMacTx, in, now_ps());
        if (streamed) continue;
        if (nic.loopback) {
            nic.wire_in.push_input(std::move(f.f.bytes));
        } else if (nic.wire_sink) {
            ++nic.wire_frames;
            nic.wire_sink(std::move(f.f.bytes));
        } else {
            ++nic.wire_frames;
            nic.be.wire_tx(f.f.bytes.data(), f.f.bytes.size());
        }
    }
}

}  // namespace simnic::model
