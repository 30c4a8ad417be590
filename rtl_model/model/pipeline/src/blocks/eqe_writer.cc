#include "blocks/eqe_writer.h"

namespace simnic::model {

using sim::now_ps;
using sim::wait_ps;

void EqeWriterBlock::main() {
    for (;;) {
        uint64_t in = 0;
        nic.eq_in.read(&in);
        sim::BusyScope busy(nic.blk[Nic::kEqeWriter]);
        wait_ps(nic.cycles(1));
        nic.stage_sample(Nic::kEqeWriter, in, nic.dma.write(now_ps(), nic.cfg.eq.eqe_bytes, DmaPurpose::Eqe));
        ++nic.eqes;
    }
}

}  // namespace simnic::model
