// MAC RX block: takes frames off the line.
//
// A received frame occupies the MAC for the longer of its beats through the
// datapath, ceil(len / mac.width_bytes) cycles, and its time on the line,
// (len + mac.ifg_bytes) * 8 / mac.line_rate_gbps: frames that arrive faster
// than that queue in front of it (the wire input is unbounded, as a real
// line cannot be pushed back). The frame goes to the parser when its last
// byte is in; if the parser's queue is full, this block stalls.
//
// PFC frames (802.1Qbb) stop here: they set MAC TX's pauses (take_pfc).
//
// In: Nic::wire_in (Pipeline::rx_frame, or MAC TX in loopback). Out:
// Nic::mac_to_parser. Counters: Nic::kMacRx, rx_frames.
#pragma once

#include "nic.h"

namespace simnic::model {

struct MacRxBlock : BlockBase {
    SC_HAS_PROCESS(MacRxBlock);
    MacRxBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) { SC_THREAD(main); }
    void main();
    bool take_pfc(const std::vector<uint8_t>& fr, uint64_t dur);
};

}  // namespace simnic::model
