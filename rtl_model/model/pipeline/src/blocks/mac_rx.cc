#include "blocks/mac_rx.h"

#include <algorithm>

namespace simnic::model {

using sim::now_ps;
using sim::wait_ps;

// A MAC control frame (EtherType 0x8808) is the MAC's own: a PFC frame
// (802.1Qbb, opcode 0x0101) sets MAC TX's pause per priority once its last
// bit is in; other control frames are dropped here. Neither reaches the
// parser. Layout: pfc.h of the switch model.
bool MacRxBlock::take_pfc(const std::vector<uint8_t>& fr, uint64_t dur) {
    if (fr.size() < 14 || fr[12] != 0x88 || fr[13] != 0x08) return false;
    sim::BlockStats& st = nic.blk[Nic::kMacRx];
    {
        sim::BusyScope busy(st);
        wait_ps(dur);
        ++nic.rx_frames;
    }
    if (fr.size() < 34 || fr[14] != 0x01 || fr[15] != 0x01) return true;
    ++nic.pfc_rx_frames;
    const unsigned enable = unsigned(fr[16] << 8 | fr[17]);
    // A quantum is 512 bit times at this port's rate.
    const double quantum_ps = 512 * 1000.0 / nic.cfg.mac.line_rate_gbps;
    for (unsigned p = 0; p < 8; ++p) {
        if (!(enable & (1u << p))) continue;
        const unsigned quanta = unsigned(fr[18 + 2 * p] << 8 | fr[19 + 2 * p]);
        nic.pause_until_ps[p] = now_ps() + uint64_t(quanta * quantum_ps + 0.5);
    }
    nic.pause_changed.notify(sc_core::SC_ZERO_TIME);
    return true;
}

void MacRxBlock::main() {
    for (;;) {
        uint64_t in = 0;
        std::vector<uint8_t> fr = nic.wire_in.read(&in);
        // The way from the peer's MAC to this one (mac.phy_latency_ns,
        // mac.cable_ns): this port's RX PHY; looped back, also its own TX
        // PHY and the cable. Frames arrive in order, each this late: it adds
        // to their latency, not to the time between them. (From a real
        // wire, the peer's TX PHY and the cable are the peer's and the
        // kernel's.)
        sim::wait_until(in + nic.rx_path_ps);
        sim::BlockStats& st = nic.blk[Nic::kMacRx];
        TxnPtr t = nic.txns.take();
        t->kind = Txn::Kind::Rx;
        t->t_in = now_ps();
        const uint32_t len = uint32_t(fr.size());
        const uint64_t dur = std::max<uint64_t>(nic.cycles(nic.cfg.beats(len)), uint64_t(nic.cfg.line_time_ps(len) + 0.5));
        if (take_pfc(fr, dur)) continue;
        if (nic.cut_through) {
            // The frame goes on to the parser beat by beat: its first beat is
            // out when the line has brought its first width_bytes (at least a
            // cycle), its last when the whole frame is in. (Looped back, MAC
            // TX hands it over as it starts sending, so the line time counts
            // once; from a real wire the frame came whole and the line time
            // is the peer's serialisation, as store-and-forward.)
            // Kept here: once handed on, the parser moves the frame's times on.
            const uint64_t s = now_ps(), tail = s + dur;
            t->ready_ps = tail;
            t->head_ps = nic.cfg.beats(len) <= 1
                             ? t->ready_ps
                             : s + std::max<uint64_t>(nic.cycles(1),
                                                      uint64_t(nic.cfg.mac.width_bytes * 8000.0 / nic.cfg.mac.line_rate_gbps + 0.5));
            // The stage: what MAC RX adds to the frame's last bit, which a
            // looped-back frame had on the line when MAC TX finished it.
            const uint64_t tail_in = nic.loopback ? in + dur : in;
            {
                sim::BusyScope busy(st);
                ++nic.rx_frames;
                t->frame = std::move(fr);
                sim::wait_until(t->head_ps);
                nic.mac_to_parser.write(t, &st);
                sim::wait_until(tail);
            }
            nic.stage_sample(Nic::kMacRx, tail_in, std::max(now_ps(), tail));
            continue;
        }
        {
            sim::BusyScope busy(st);
            wait_ps(dur);
            ++nic.rx_frames;
            t->frame = std::move(fr);
            t->ready_ps = now_ps();
        }
        nic.mac_to_parser.write(t, &st);
        nic.stage_sample(Nic::kMacRx, in, now_ps());
    }
}

}  // namespace simnic::model
