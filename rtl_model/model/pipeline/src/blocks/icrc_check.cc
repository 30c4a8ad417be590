#include "blocks/icrc_check.h"

#include "icrc_engine_rtl.h"
#include "simnic/roce/packet.h"

namespace simnic::model {

using sim::now_ps;
using sim::wait_ps;
using sim::wait_until;

void IcrcCheckBlock::main() {
    for (;;) {
        uint64_t pushed = 0;
        TxnPtr t = nic.parser_to_icrc.read(&pushed);
        const uint64_t in = std::max(pushed, t->ready_ps);
        wait_until(t->ready_ps);
        sim::BlockStats& st = nic.blk[Nic::kIcrcCheck];
        bool ok = false;
        {
            sim::BusyScope busy(st);
            const std::vector<uint8_t>& b = t->frame;
            wait_ps(nic.cycles(nic.cfg.beats(uint32_t(b.size()))));
            if (nic.icrc_rtl) {
                const std::vector<rtl::IcrcResult> r = nic.icrc_rtl->run({b});
                ok = !r.empty() && r[0].ok && !r[0].err;
            } else {
                roce::Packet p;
                roce::DecodeOptions o;
                o.check_ip_checksum = false;
                ok = roce::decode_frame(b.data(), b.size(), p, o).error != roce::DecodeError::BadIcrc;
            }
            t->ready_ps = now_ps() + nic.cycles(nic.cfg.icrc.latency_cycles);
        }
        if (!ok) {
            nic.stage_sample(Nic::kIcrcCheck, in, t->ready_ps);
            ++nic.rx_drops_icrc;
            continue;
        }
        nic.rx_in.write(t, &st);
        nic.stage_sample(Nic::kIcrcCheck, in, std::max(now_ps(), t->ready_ps));
    }
}

}  // namespace simnic::model
