#include "blocks/parser.h"

#include <algorithm>
#include <string>

#include "simnic/roce/header_vector.h"
#ifdef SIMNIC_HAVE_RTL_PARSER
#include "roce_parser_rtl.h"
#endif

namespace simnic::model {

using sim::now_ps;
using sim::wait_ps;
using sim::wait_until;

namespace {

// What the stages after the parser read from its header vector.
void fill_txn(Txn& t, const roce::HeaderVector& hv) {
    t.qpn = hv.dqpn;
    t.opcode = hv.opcode;
    t.psn = hv.psn;
    t.aeth_syndrome = hv.aeth_syndrome;
}

// The Txn's packet, for the C++ twin to decode the frame into.
roce::Packet& decode_into(Txn& t) {
    if (!t.pkt) t.pkt = std::make_unique<roce::Packet>();
    return *t.pkt;
}

}  // namespace

#ifdef SIMNIC_HAVE_RTL_PARSER
void ParserBlock::hold_rtl(const roce::HeaderVector& hv, const std::vector<uint8_t>& frame, sim::BlockStats& st,
                          uint64_t from_ps) {
    // The queue to the ICRC check is full: the frame's header vector waits
    // on the RTL's port with m_ready_i low, for every edge from `from_ps`
    // until the ICRC check takes an entry (the wait is the stall, as the
    // blocked write's always was), and the RTL must hold it there unchanged.
    {
        sim::StallScope stalled(&st);
        nic.parser_to_icrc.wait_room();
    }
    const uint64_t t0 = from_ps;
    const uint64_t low = now_ps() > t0 ? (now_ps() - t0) / nic.period_ps : 0;
    roce::HeaderVector after;
    const uint64_t held = nic.parser_rtl->hold(low, &after);
    nic.parser_rtl_ready_low += nic.low_edges_counted(st, t0, low);
    if (held != low || !(after == hv)) {
        ++nic.parser_rtl_mismatch;
        nic.rtl_mismatch("parser",
                         "the header vector was not held with m_ready_i low: m_valid_o high on " +
                             std::to_string(held) + " of " + std::to_string(low) + " edges, opcode " +
                             std::to_string(after.opcode) + " dqpn " + std::to_string(after.dqpn) + " psn " +
                             std::to_string(after.psn) + " after, " + std::to_string(hv.opcode) + " " +
                             std::to_string(hv.dqpn) + " " + std::to_string(hv.psn) + " before",
                         frame);
    }
}
#endif

void ParserBlock::main() {
    for (;;) {
        uint64_t pushed = 0;
        TxnPtr t = nic.mac_to_parser.read(&pushed);
        // Cut-through: the frame's first beat is there (head_ps), its last
        // comes later (ready_ps); the stage is what the parser adds to the
        // frame's last beat, so that the stages still add up.
        const uint64_t in = nic.cut_through ? t->ready_ps : std::max(pushed, t->ready_ps);
        if (nic.cut_through) sim::wait_until(t->head_ps);
        sim::BlockStats& st = nic.blk[Nic::kParser];
        roce::HeaderVector hv;
        {
            sim::BusyScope busy(st);
            // The C++ twin: the frame's beats, then parser.latency_cycles.
            uint64_t in_cycles = nic.cfg.beats(uint32_t(t->frame.size())), latency = nic.cfg.parser.latency_cycles;
#ifdef SIMNIC_HAVE_RTL_PARSER
            if (nic.parser_rtl) {
                // The RTL sets the stage's timing with its own cycles: the
                // edges that took the beats in (its input stalls included),
                // then its own latency to the header vector; the configured
                // latency is not used. Its record is the one the pipeline
                // follows, checked against the C++ twin's.
                uint64_t total = 0;
                hv = nic.parser_rtl->parse(t->frame.data(), t->frame.size(), &total, &in_cycles);
                latency = nic.parser_rtl_latency = total - in_cycles;
                const roce::HeaderVector want =
                    roce::parse_header_vector(t->frame.data(), t->frame.size(), &decode_into(*t));
                t->decoded = want.accepted();
                if (!(hv == want)) {
                    ++nic.parser_rtl_mismatch;
                    nic.rtl_mismatch("parser", "RTL verdict " + std::to_string(int(hv.verdict)) + " opcode " +
                                                   std::to_string(hv.opcode) + " dqpn " + std::to_string(hv.dqpn) +
                                                   " psn " + std::to_string(hv.psn) + ", C++ verdict " +
                                                   std::to_string(int(want.verdict)) + " opcode " +
                                                   std::to_string(want.opcode) + " dqpn " +
                                                   std::to_string(want.dqpn) + " psn " + std::to_string(want.psn),
                                     t->frame);
                }
            } else
#endif
            {
                hv = roce::parse_header_vector(t->frame.data(), t->frame.size(), &decode_into(*t));
                t->decoded = hv.accepted();
            }
            if (nic.cut_through) {
                // The header vector is out `latency` after the header's
                // beats (a malformed frame is judged on all of them); the
                // beats go on to the ICRC check as they come, one cycle
                // behind, the first now.
                const uint64_t s = now_ps();
                const uint64_t hdr_beats =
                    hv.accepted() ? std::min<uint64_t>(in_cycles, nic.cfg.beats(hv.payload_off)) : in_cycles;
                t->hdr_ps = s + nic.cycles(hdr_beats + latency);
                const uint64_t tail = std::max(s + nic.cycles(in_cycles), t->ready_ps + nic.cycles(1));
                if (!hv.accepted()) {
                    wait_until(tail);
                    t->ready_ps = t->hdr_ps;
                } else {
                    t->head_ps = s + nic.cycles(1);
                    t->ready_ps = tail;
                    fill_txn(*t, hv);
                    sim::wait_until(t->head_ps);
#ifdef SIMNIC_HAVE_RTL_PARSER
                    // Its beats go on from here, but its header vector is
                    // on the RTL's port only from hdr_ps: m_ready_i is low
                    // on the edges from then the queue is still full.
                    if (nic.parser_rtl && nic.parser_to_icrc.full()) hold_rtl(hv, t->frame, st, t->hdr_ps);
#endif
                    nic.parser_to_icrc.write(t, &st);
                    sim::wait_until(tail);
                }
            } else {
                wait_ps(nic.cycles(in_cycles));
                t->ready_ps = now_ps() + nic.cycles(latency);
            }
        }
        if (nic.cut_through && hv.accepted()) {
            // Its last beat out (the ICRC check has the frame by now and
            // moves its times on): what the parser added to the frame.
            nic.stage_sample(Nic::kParser, in, now_ps());
            continue;
        }
        if (!hv.accepted()) {
            nic.stage_sample(Nic::kParser, in, t->ready_ps);
            ++nic.rx_drops_parser;
            nic.be.rx_dropped(false);
            if (size_t(hv.verdict) < nic.rx_drops_parser_reason.size()) ++nic.rx_drops_parser_reason[size_t(hv.verdict)];
            continue;
        }
        fill_txn(*t, hv);
#ifdef SIMNIC_HAVE_RTL_PARSER
        if (nic.parser_rtl && nic.parser_to_icrc.full()) hold_rtl(hv, t->frame, st, now_ps());
#endif
        nic.parser_to_icrc.write(t, &st);
        nic.stage_sample(Nic::kParser, in, std::max(now_ps(), t->ready_ps));
    }
}

}  // namespace simnic::model
