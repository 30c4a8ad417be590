// ICRC check block: drops received frames whose ICRC is wrong.
//
// The ICRC engine is the C++ model (roce::decode_frame's ICRC check) or,
// with icrc.impl = rtl, the Verilated engine; both give the same verdicts
// and the same timing. A frame with a wrong ICRC is dropped and counted.
//
// Why it costs what it costs: the check needs the parser's header vector,
// so a frame starts when the parser's result is out (Txn::ready_ps); it
// then streams through at one beat per cycle, ceil(len / mac.width_bytes)
// cycles, and the verdict is out icrc.latency_cycles after the last beat,
// which the frame carries to the RX transport stage as its ready time.
//
// In: Nic::parser_to_icrc. Out: Nic::rx_in. Counters: Nic::kIcrcCheck,
// rx_drops_icrc.
#pragma once

#include "nic.h"

namespace simnic::model {

struct IcrcCheckBlock : BlockBase {
    SC_HAS_PROCESS(IcrcCheckBlock);
    IcrcCheckBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) { SC_THREAD(main); }
    void main();
};

}  // namespace simnic::model
