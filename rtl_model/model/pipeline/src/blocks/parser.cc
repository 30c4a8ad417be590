#include "blocks/parser.h"

#include "simnic/roce/header_vector.h"
#ifdef SIMNIC_HAVE_RTL_PARSER
#include "roce_parser_rtl.h"
#endif

namespace simnic::model {

using sim::now_ps;
using sim::wait_ps;

void ParserBlock::main() {
    for (;;) {
        uint64_t pushed = 0;
        TxnPtr t = nic.mac_to_parser.read(&pushed);
        const uint64_t in = std::max(pushed, t->ready_ps);
        sim::BlockStats& st = nic.blk[Nic::kParser];
        roce::HeaderVector hv;
        {
            sim::BusyScope busy(st);
            wait_ps(nic.cycles(nic.cfg.beats(uint32_t(t->frame.size()))));
#ifdef SIMNIC_HAVE_RTL_PARSER
            if (nic.parser_rtl) {
                hv = nic.parser_rtl->parse(t->frame.data(), t->frame.size(), nullptr);
                if (!(hv == roce::parse_header_vector(t->frame.data(), t->frame.size()))) ++nic.parser_rtl_mismatch;
            } else
#endif
                hv = roce::parse_header_vector(t->frame.data(), t->frame.size());
            t->ready_ps = now_ps() + nic.cycles(nic.cfg.parser.latency_cycles);
        }
        if (!hv.accepted()) {
            nic.stage_sample(Nic::kParser, in, t->ready_ps);
            ++nic.rx_drops_parser;
            if (size_t(hv.verdict) < nic.rx_drops_parser_reason.size()) ++nic.rx_drops_parser_reason[size_t(hv.verdict)];
            continue;
        }
        t->qpn = hv.dqpn;
        t->opcode = hv.opcode;
        t->psn = hv.psn;
        t->aeth_syndrome = hv.aeth_syndrome;
        nic.parser_to_icrc.write(t, &st);
        nic.stage_sample(Nic::kParser, in, std::max(now_ps(), t->ready_ps));
    }
}

}  // namespace simnic::model
