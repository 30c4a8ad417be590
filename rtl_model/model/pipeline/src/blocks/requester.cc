#include "blocks/requester.h"

#include <algorithm>

#include "simnic/roce/opcode.h"

namespace simnic::model {

using sim::now_ps;
using sim::wait_ps;
using sim::wait_until;

void RequesterBlock::main() {
    for (;;) {
        uint64_t pushed = 0;
        TxnPtr t = nic.wqe_to_req.read(&pushed);
        sim::BlockStats& st = nic.blk[Nic::kRequester];
        // When the requester could start on the next packet (the stage time).
        uint64_t start = std::max(pushed, t->ready_ps);
        sim::stall_until(st, t->ready_ps);  // its WQEs are still on the way
        OpRecord& rec = t->rec;
        size_t requests = 0;
        for (const TxFrameRec& fr : rec.frames)
            if (is_rc_request(fr.opcode)) ++requests;
        // Packets the completer released continue what is already in flight
        // (the transport counts them against its own window): holding them
        // back could hold back the ACK that frees the queue.
        if (requests && !t->resume) {
            sim::StallScope waiting(&st);
            nic.rtq_admit(requests);  // room in the retransmit queue
        }
        sim::BusyScope busy(st);
        uint64_t payload_ready = now_ps(), writes_done = now_ps();
        for (size_t i = 0; i < rec.ops.size();) {
            const Op& o = rec.ops[i];
            if ((o.kind == Op::Kind::DmaRead && o.purpose == DmaPurpose::WqeFetch) || o.kind == Op::Kind::WqeFetched) {
                ++i;  // the doorbell block did these
                continue;
            }
            if (is_memory_op(o.kind)) {
                i = nic.play_memory(rec, i, st, payload_ready, writes_done, false, t->qpn);
                continue;
            }
            switch (o.kind) {
                case Op::Kind::TxFrame: {
                    wait_ps(nic.cycles(nic.cfg.requester.cycles_per_packet));
                    // An RC request holds a retransmit-queue entry until it
                    // is acknowledged.
                    const TxFrameRec& fr = rec.frames[o.aux];
                    if (is_rc_request(fr.opcode)) nic.rtq_take(fr.qpn, fr.psn);
                    FrameTok f{std::move(rec.frames[o.aux]), std::max(payload_ready, now_ps())};
                    const uint64_t ready = f.ready_ps;
                    nic.req_to_txb.write(std::move(f), &st);
                    nic.stage_sample(Nic::kRequester, start, std::max(now_ps(), ready));
                    start = payload_ready = now_ps();
                    break;
                }
                case Op::Kind::Cqe:
                case Op::Kind::Eqe: i = nic.play_completion(rec, i, t->db.num, writes_done, st); break;
                default: break;
            }
            ++i;
        }
    }
}

}  // namespace simnic::model
