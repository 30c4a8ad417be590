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
// Backpressure: the Verilated engine has no output ready, so with
// icrc.impl = rtl the stage does not offer it a frame while the queue to
// the RX transport is full; the edges it waits are its stall
// (Nic::icrc_rtl_ready_low) and the frame is that much later. The C++
// model checks the frame and then waits to hand it on, as before.
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
