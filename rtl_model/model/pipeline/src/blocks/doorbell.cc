#include "blocks/doorbell.h"

#include <algorithm>

namespace simnic::model {

using sim::now_ps;
using sim::wait_ps;

namespace {
// Doorbell kinds (hw::DbKind numbering, hw-spec 3.2).
constexpr uint8_t kDbSq = 1, kDbRq = 2;
}  // namespace

void DoorbellBlock::main() {
    for (;;) {
        TxnPtr t = nic.db_in.read();
        sim::BlockStats& st = nic.blk[Nic::kDoorbell];
        {
            sim::BusyScope busy(st);
            wait_ps(nic.cycles(1));  // the doorbell write itself
            auto ep = nic.db_epoch.find(Nic::db_key(t->db.kind, t->db.num));
            if (ep != nic.db_epoch.end() && ep->second != t->db_epoch) continue;  // its object is gone
            if (t->db.kind == kDbSq || t->db.kind == kDbRq) nic.lookup(nic.qpc, t->db.num, st);
            if (!t->executed) nic.be.exec_doorbell(t->db, t->rec);
            // WQE fetch: every WQE read of this doorbell is issued back to
            // back, and the next doorbell's right after: fetches overlap (up
            // to the DMA engine's tags). The requester starts on this
            // doorbell's WQEs when the last of them has arrived.
            uint64_t last = now_ps();
            for (Op& o : t->rec.ops) {
                if (o.kind == Op::Kind::DmaRead && o.purpose == DmaPurpose::WqeFetch)
                    last = std::max(last, nic.dma.read(now_ps(), o.bytes, o.purpose));
                else if (o.kind == Op::Kind::WqeFetched)
                    nic.note_wqe_start(o.id, o.aux, t->t_in);
            }
            t->ready_ps = last;
        }
        nic.wqe_to_req.write(t, probe_of(*t), &st.stall_ps);
    }
}

}  // namespace simnic::model
