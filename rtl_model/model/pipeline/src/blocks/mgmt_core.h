// Management core block: the embedded core that runs firmware commands
// (create/modify/destroy of QPs, CQs, MRs ...).
//
// Why it costs what it costs: each command is fw.command_cycles of the core's
// own clock, fw.core_mhz, i.e. command_cycles / core_mhz microseconds,
// independent of the pipeline clock; commands run one at a time, in order.
// The commands' effects are the firmware's (functional); only their time is
// modelled here.
//
// In: Nic::fw_in (Pipeline::fw_command). Counters: Nic::kMgmtCore,
// fw_commands.
#pragma once

#include "nic.h"

namespace simnic::model {

struct MgmtCoreBlock : BlockBase {
    SC_HAS_PROCESS(MgmtCoreBlock);
    MgmtCoreBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) { SC_THREAD(main); }
    void main();
};

}  // namespace simnic::model
