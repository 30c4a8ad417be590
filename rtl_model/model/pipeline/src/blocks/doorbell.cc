#include "blocks/doorbell.h"

#include <algorithm>

#include "simnic/hw/verbs.h"

namespace simnic::model {

using sim::now_ps;
using sim::wait_ps;

namespace {
// Doorbell kinds (hw::DbKind numbering, hw-spec 3.2).
constexpr uint8_t kDbSq = 1, kDbRq = 2, kDbCq = 4;
}  // namespace

// Receive-WQE prefetch: the WQEs this RQ doorbell posts (its producer
// index against the last one rung) are read now, back to back; the
// responder finds them on chip (Nic::play_memory).
void DoorbellBlock::prefetch_recv(const Txn& t) {
    const uint32_t qpn = t.db.num;
    auto it = nic.rq_rung.try_emplace(qpn, 0).first;
    const uint32_t posted = t.db.index - it->second;  // ring indices wrap
    it->second = t.db.index;
    if (posted > (1u << 20)) return;  // not a forward step: a reset QP's ring starting over
    auto st = nic.rq_stride.find(qpn);
    const uint32_t bytes = st != nic.rq_stride.end() ? st->second : kRecvWqeBytes;
    std::deque<uint64_t>& q = nic.rq_prefetched[qpn];
    for (uint32_t k = 0; k < posted; ++k) q.push_back(nic.dma.read(now_ps(), bytes, DmaPurpose::RecvWqe));
}

bool DoorbellBlock::for_requester(const OpRecord& rec) {
    for (const Op& o : rec.ops) {
        const bool done_here = (o.kind == Op::Kind::DmaRead && o.purpose == DmaPurpose::WqeFetch) ||
                               o.kind == Op::Kind::WqeFetched || o.kind == Op::Kind::Qpc;
        if (!done_here) return true;
    }
    return false;
}

void DoorbellBlock::main() {
    for (;;) {
        uint64_t in = 0;
        TxnPtr t = nic.db_in.read(&in);
        sim::BlockStats& st = nic.blk[Nic::kDoorbell];
        // The CPU's posted MMIO write on its way to the device
        // (doorbell.mmio_ns): doorbells arrive in the order rung, each this
        // late, so it adds to each one's latency, not to their rate.
        sim::wait_until(t->t_in + uint64_t(nic.cfg.doorbell.mmio_ns) * 1000);
        {
            sim::BusyScope busy(st);
            wait_ps(nic.cycles(1));  // the doorbell write itself
            auto ep = nic.db_epoch.find(Nic::db_key(t->db.kind, t->db.num));
            const bool gone = ep != nic.db_epoch.end() && ep->second != t->db_epoch;
            if (gone) {
                // Its object is gone. A doorbell the datapath took when it
                // was rung (an RQ's: its flush CQEs) may have raised
                // completion events on a CQ that lives on: the engine holds
                // them for an interrupt this record will never reach, so
                // they go now, untimed, rather than never.
                if (t->executed)
                    for (const Op& o : t->rec.ops)
                        if (o.kind == Op::Kind::Eqe && o.id == uint32_t(hw::EventType::Completion))
                            nic.be.cq_event(o.aux, 0, 0);
                nic.doorbell_taken();
                continue;
            }
            if (t->db.kind == kDbSq || t->db.kind == kDbRq) nic.lookup(nic.qpc, t->db.num, st);
            if (!t->executed && t->db.kind == kDbCq) {
                // Arm-only: the consumer index was taken when rung; the arm
                // goes with the CQ's index now (hw-spec 7.3).
                Doorbell arm = t->db;
                auto ci = nic.cq_ci_rung.find(arm.num);
                if (ci != nic.cq_ci_rung.end()) arm.index = ci->second;
                nic.be.exec_doorbell(arm, t->rec);
                ++nic.cq_arms;
            } else if (!t->executed) {
                nic.be.exec_doorbell(t->db, t->rec);
            }
            nic.doorbell_taken();
            // WQE fetch: every WQE read of this doorbell is issued back to
            // back, and the next doorbell's right after: fetches overlap (up
            // to the DMA engine's tags). The requester starts on this
            // doorbell's WQEs when the last of them has arrived. A doorbell
            // that carries its WQEs (doorbell.wqe_by_mmio_bytes) has them
            // already: they came with the MMIO write.
            uint32_t wqe_bytes = 0;
            for (const Op& o : t->rec.ops)
                if (o.kind == Op::Kind::DmaRead && o.purpose == DmaPurpose::WqeFetch) wqe_bytes += o.bytes;
            const bool by_mmio = t->db.kind == kDbSq && wqe_bytes && wqe_bytes <= nic.cfg.doorbell.wqe_by_mmio_bytes;
            nic.wqe_by_mmio += by_mmio;
            uint64_t last = now_ps();
            for (Op& o : t->rec.ops) {
                if (o.kind == Op::Kind::DmaRead && o.purpose == DmaPurpose::WqeFetch) {
                    if (!by_mmio) last = std::max(last, nic.dma.read(now_ps(), o.bytes, o.purpose));
                } else if (o.kind == Op::Kind::WqeFetched) {
                    nic.note_wqe_start(o.id, o.aux, t->t_in);
                }
            }
            t->ready_ps = last;
            if (t->db.kind == kDbRq && nic.cfg.doorbell.recv_wqe_prefetch) prefetch_recv(*t);
        }
        // Only work for the requester goes into its queue: an RQ or CQ
        // doorbell that gives it nothing to do (no frame, CQE or EQE) does
        // not take one of its places. (They did: with four doorbells per
        // SEND in the queue of 16, only four SENDs' WQE fetches were ever in
        // flight, which capped 64-byte SENDs near 1.5 M/s and WRITEs near
        // 14 M/s whatever the QP count.)
        if (!for_requester(t->rec)) {
            nic.stage_sample(Nic::kDoorbell, in, now_ps());
            continue;
        }
        nic.wqe_to_req.write(t, &st);
        nic.stage_sample(Nic::kDoorbell, in, std::max(now_ps(), t->ready_ps));
    }
}

}  // namespace simnic::model
