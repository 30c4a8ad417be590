#include "blocks/mgmt_core.h"

namespace simnic::model {

using sim::wait_ps;

void MgmtCoreBlock::main() {
    for (;;) {
        nic.fw_in.read();
        sim::BusyScope busy(nic.blk[Nic::kMgmtCore]);
        wait_ps(uint64_t(nic.cfg.fw_command_ns() * 1000.0 + 0.5));
        ++nic.fw_commands;
    }
}

}  // namespace simnic::model
