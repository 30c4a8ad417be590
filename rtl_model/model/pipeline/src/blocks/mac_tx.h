// MAC TX block: puts frames on the line.
//
// A frame may not start before TX build's ICRC for it is out
// (FrameTok::ready_ps). It then occupies the MAC for the longer of two
// times: its beats through the datapath, ceil(len / mac.width_bytes) cycles,
// and its time on the line, (len + mac.ifg_bytes) * 8 / mac.line_rate_gbps
// (preamble, SFD and inter-frame gap are ifg_bytes). So back-to-back frames
// leave at line rate when the datapath is wide and fast enough, and at the
// datapath's rate otherwise. The frame leaves when its last byte has been
// sent: through Datapath::wire_tx, or, in loopback (`simnic bench`), into MAC
// RX's input.
//
// In: Nic::txb_to_mac. Out: Datapath::wire_tx or Nic::wire_in. Counters:
// Nic::kMacTx, tx_frames, tx_wire_bytes, tx_payload_bytes, first_tx_ps,
// last_tx_ps (the modelled throughput).
#pragma once

#include "nic.h"

namespace simnic::model {

struct MacTxBlock : BlockBase {
    SC_HAS_PROCESS(MacTxBlock);
    MacTxBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) { SC_THREAD(main); }
    void main();
};

}  // namespace simnic::model
