// Parser block: the receive parser that turns a frame into its header
// vector (roce/header_vector.h).
//
// The header vector comes from the C++ twin, roce::parse_header_vector(), or,
// with parser.impl = rtl, from the Verilated parser (whose verdicts are
// checked against the twin's; a disagreement is counted). Malformed frames
// are dropped here and counted, in all and per reason (the verdict); the
// ICRC is not the parser's business (the ICRC check block's).
//
// Why it costs what it costs: the frame streams through at one beat
// (mac.width_bytes) per cycle, ceil(len / width) cycles, after which the
// frame moves on; its header vector is out parser.latency_cycles after the
// last beat, which the frame carries as its ready time (Txn::ready_ps) to
// the ICRC check, which waits for it. The RTL parser runs with the same
// timing as the C++ model.
//
// In: Nic::mac_to_parser. Out: Nic::parser_to_icrc. Counters: Nic::kParser,
// rx_drops_parser, rx_drops_parser_reason, parser_rtl_mismatch.
#pragma once

#include "nic.h"

namespace simnic::model {

struct ParserBlock : BlockBase {
    SC_HAS_PROCESS(ParserBlock);
    ParserBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) { SC_THREAD(main); }
    void main();
};

}  // namespace simnic::model
