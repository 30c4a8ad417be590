#include "blocks/mgmt_core.h"

namespace simnic::model {

using sim::wait_ps;

void MgmtCoreBlock::main() {
    for (;;) {
        uint64_t in = 0;
        nic.fw_in.read(&in);
        sim::BusyScope busy(nic.blk[Nic::kMgmtCore]);
        wait_ps(uint64_t(nic.cfg.fw_command_ns() * 1000.0 + 0.5));
        ++nic.fw_commands;
        nic.stage_sample(Nic::kMgmtCore, in, sim::now_ps());
    }
}

}  // namespace simnic::model
