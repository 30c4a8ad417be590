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
        const uint64_t in = std::max(pushed, f.ready_ps);
        wait_until(f.ready_ps);
        sim::BlockStats& st = nic.blk[Nic::kMacTx];
        {
            sim::BusyScope busy(st);
            const uint32_t len = uint32_t(f.f.bytes.size());
            const uint64_t dur = std::max<uint64_t>(nic.cycles(nic.cfg.beats(len)),
                                                    uint64_t(nic.cfg.line_time_ps(len) + 0.5));
            if (nic.tx_frames == 0 && nic.first_tx_ps == 0) nic.first_tx_ps = now_ps();
            wait_ps(dur);
            ++nic.tx_frames;
            nic.tx_wire_bytes += len + nic.cfg.mac.ifg_bytes;
            nic.tx_payload_bytes += f.f.payload;
            nic.last_tx_ps = now_ps();
        }
        nic.stage_sample(Nic::kMacTx, in, now_ps());
        if (nic.loopback) {
            nic.wire_in.push_input(std::move(f.f.bytes));
        } else {
            ++nic.wire_frames;
            nic.be.wire_tx(f.f.bytes.data(), f.f.bytes.size());
        }
    }
}

}  // namespace simnic::model
