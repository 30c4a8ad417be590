#include "blocks/cqe_writer.h"

#include <algorithm>

namespace simnic::model {

using sim::now_ps;
using sim::wait_ps;
using sim::wait_until;

// CQEs become visible in the order they were written (posted writes keep
// their order), so one FIFO of (visible at, CQE) suffices.
void CqeWriterBlock::visible() {
    for (;;) {
        auto [t, c] = nic.cqe_visible.read();
        // The application's poll finds it cq.poll_ns after it is visible:
        // its message is complete for the application then.
        wait_until(t + uint64_t(nic.cfg.cq.poll_ns) * 1000);
        if (c.is_send) {
            if (uint64_t started = 0; nic.wqe_start.take(wqe_key(c.qpn, c.wqe_index), started))
                nic.latency_ps.add(now_ps() - started);
        }
        if (nic.on_cqe) nic.on_cqe(c.cqn);
    }
}

void CqeWriterBlock::main() {
    for (;;) {
        uint64_t in = 0;
        CqeTok c = nic.cq_in.read(&in);
        sim::BlockStats& st = nic.blk[Nic::kCqeWriter];
        sim::BusyScope busy(st);
        wait_ps(nic.cycles(1));
        const uint64_t t = std::max(nic.dma.write(now_ps(), nic.cfg.cq.cqe_bytes, DmaPurpose::Cqe), c.not_before_ps);
        nic.cqe_visible.push_input({t, c});
        nic.stage_sample(Nic::kCqeWriter, in, t);
    }
}

}  // namespace simnic::model
