#include "blocks/mac_rx.h"

#include <algorithm>

namespace simnic::model {

using sim::now_ps;
using sim::wait_ps;

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
        auto t = std::make_shared<Txn>();
        t->kind = Txn::Kind::Rx;
        t->t_in = now_ps();
        {
            sim::BusyScope busy(st);
            const uint32_t len = uint32_t(fr.size());
            wait_ps(std::max<uint64_t>(nic.cycles(nic.cfg.beats(len)), uint64_t(nic.cfg.line_time_ps(len) + 0.5)));
            ++nic.rx_frames;
            t->frame = std::move(fr);
            t->ready_ps = now_ps();
        }
        nic.mac_to_parser.write(t, &st);
        nic.stage_sample(Nic::kMacRx, in, now_ps());
    }
}

}  // namespace simnic::model
