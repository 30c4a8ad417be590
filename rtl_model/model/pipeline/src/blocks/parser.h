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
// Backpressure with the RTL: when the queue to the ICRC check is full as a
// frame is handed on, its header vector waits on the RTL's port with
// m_ready_i low for the whole edges until the ICRC check takes an entry
// (RoceParserRtl::hold), the wait being the parser's stall as before; an
// RTL that drops or changes the record meanwhile is a mismatch. Counted in
// Nic::parser_rtl_ready_low. Store-and-forward hands the frame on after
// its last beat and counts the edges from there; cut-through hands it on
// at its first beat, before the header vector is out, and counts only the
// edges from the header vector's (Txn::hdr_ps) on that the queue is still
// full.
//
// In: Nic::mac_to_parser. Out: Nic::parser_to_icrc. Counters: Nic::kParser,
// rx_drops_parser, rx_drops_parser_reason, parser_rtl_mismatch.
#pragma once

#include <vector>

#include "nic.h"
#include "simnic/roce/header_vector.h"

namespace simnic::model {

struct ParserBlock : BlockBase {
    SC_HAS_PROCESS(ParserBlock);
    ParserBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) { SC_THREAD(main); }
    void main();

private:
    // The queue to the ICRC check is full: wait for room with the RTL's
    // m_ready_i low, checking that it holds `hv` (built with the RTL only).
    // The edges are counted from `from_ps`, the first edge the header
    // vector could be taken on.
    void hold_rtl(const roce::HeaderVector& hv, const std::vector<uint8_t>& frame, sim::BlockStats& st,
                  uint64_t from_ps);
};

}  // namespace simnic::model
