#include "blocks/tx_build.h"

#include <cstdio>

#include "icrc_engine_rtl.h"

namespace simnic::model {

using sim::now_ps;
using sim::wait_ps;
using sim::wait_until;

void TxBuildBlock::main() {
    for (;;) {
        // Responses (ACKs, READ responses) first: they are short and the
        // peer's requester is waiting on them.
        while (nic.rxt_to_txb.empty() && nic.req_to_txb.empty())
            sc_core::wait(either_);
        uint64_t pushed = 0;
        FrameTok f = !nic.rxt_to_txb.empty() ? nic.rxt_to_txb.read(&pushed) : nic.req_to_txb.read(&pushed);
        sim::BlockStats& st = nic.blk[Nic::kTxBuild];
        const uint64_t in = std::max(pushed, f.ready_ps);
        sim::stall_until(st, f.ready_ps);  // payload still on its way from host memory
        uint64_t ready = 0;
        {
            sim::BusyScope busy(st);
            std::vector<uint8_t>& b = f.f.bytes;
            // The C++ model: the frame's beats, then icrc.latency_cycles.
            uint64_t in_cycles = nic.cfg.beats(uint32_t(b.size())), latency = nic.cfg.icrc.latency_cycles;
            if (nic.icrc_rtl && b.size() >= 4) {
                // The RTL's ICRC goes on the frame, checked against the one
                // the datapath computed; its own cycles set the timing.
                const uint32_t carried = uint32_t(b[b.size() - 4]) | uint32_t(b[b.size() - 3]) << 8 |
                                         uint32_t(b[b.size() - 2]) << 16 | uint32_t(b[b.size() - 1]) << 24;
                const std::vector<rtl::IcrcResult> r = nic.icrc_rtl->run({b});
                if (!r.empty() && !r[0].err) {
                    in_cycles = r[0].last_beat_cycle - r[0].first_beat_cycle + 1;
                    latency = nic.icrc_rtl_latency = r[0].valid_cycle - r[0].last_beat_cycle;
                    if (r[0].icrc != carried) {
                        ++nic.icrc_rtl_mismatch;
                        char w[64];
                        std::snprintf(w, sizeof w, "TX ICRC from the RTL %08x, from the datapath %08x", r[0].icrc,
                                      carried);
                        nic.rtl_mismatch("tx_build", w, b);
                    }
                    for (int k = 0; k < 4; ++k) b[b.size() - 4 + size_t(k)] = uint8_t(r[0].icrc >> (8 * k));
                }
            }
            if (nic.cut_through) {
                // The frame streams on to MAC TX: its first beat is out a
                // cycle after it started, its last after all its beats and
                // the ICRC that goes at its end.
                const uint64_t s = now_ps();
                f.head_ps = s + nic.cycles(1);
                f.ready_ps = s + nic.cycles(in_cycles + latency);
                ready = f.ready_ps;
                wait_ps(nic.cycles(1));
                nic.txb_to_mac.write(std::move(f), &st);
                wait_until(s + nic.cycles(in_cycles));  // the rest of its beats
            } else {
                wait_ps(nic.cycles(in_cycles));
                f.ready_ps = ready = now_ps() + nic.cycles(latency);
            }
        }
        if (!nic.cut_through) nic.txb_to_mac.write(std::move(f), &st);
        nic.stage_sample(Nic::kTxBuild, in, std::max(now_ps(), ready));
    }
}

}  // namespace simnic::model
