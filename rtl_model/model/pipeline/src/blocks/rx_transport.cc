#include "blocks/rx_transport.h"

#include <algorithm>

#include "simnic/roce/opcode.h"

namespace simnic::model {

using sim::now_ps;
using sim::wait_ps;
using sim::wait_until;

uint64_t RxTransportBlock::play(Txn& t, sim::BlockStats& st) {
    OpRecord& rec = t.rec;
    // Request packets the completer releases (the send window reopened, a
    // retransmission) belong to the requester's stream: they go behind the
    // requester's queued packets, never ahead of them, so PSN order on the
    // wire is the order the datapath gave them.
    TxnPtr resume;
    size_t seg = 0;  // first op of the current frame's segment
    for (size_t i = 0; i < rec.ops.size(); ++i) {
        const Op& o = rec.ops[i];
        if (o.kind != Op::Kind::TxFrame) continue;
        if (!roce::opcode_info(rec.frames[o.aux].opcode).has(roce::kRequest)) continue;
        if (!resume) {
            resume = std::make_shared<Txn>();
            resume->kind = Txn::Kind::Doorbell;
            resume->resume = true;
            resume->t_in = now_ps();
            resume->qpn = t.qpn;
            resume->db.num = t.qpn;
        }
        // The frame and the memory ops just before it (its MR lookups and
        // payload reads). Building a request never writes host memory: a
        // write before it is the received packet's (a READ response's data),
        // and so is everything before that write; they stay here.
        size_t first = i;
        while (first > seg && is_memory_op(rec.ops[first - 1].kind) && rec.ops[first - 1].kind != Op::Kind::DmaWrite)
            --first;
        for (size_t k = first; k <= i; ++k) {
            Op c = rec.ops[k];
            if (c.kind == Op::Kind::TxFrame) {
                c.aux = uint32_t(resume->rec.frames.size());
                resume->rec.frames.push_back(std::move(rec.frames[o.aux]));
            }
            resume->rec.ops.push_back(c);
            rec.ops[k].kind = Op::Kind::WqeFetched;  // played by the requester now
            rec.ops[k].id = 0;
        }
        seg = i + 1;
    }
    uint64_t payload_ready = now_ps(), writes_done = now_ps(), out_ready = 0;
    for (size_t i = 0; i < rec.ops.size();) {
        const Op& o = rec.ops[i];
        if (is_memory_op(o.kind)) {
            i = nic.play_memory(rec, i, st, payload_ready, writes_done, false, t.qpn);
            continue;
        }
        switch (o.kind) {
            case Op::Kind::TxFrame: {
                FrameTok f{std::move(rec.frames[o.aux]), std::max(payload_ready, now_ps())};
                out_ready = std::max(out_ready, f.ready_ps);
                nic.rxt_to_txb.write(std::move(f), &st);
                payload_ready = now_ps();
                break;
            }
            case Op::Kind::Cqe:
            case Op::Kind::Eqe: i = nic.play_completion(rec, i, t.qpn, writes_done, st); break;
            case Op::Kind::WqeFetched:
                if (o.id) nic.note_wqe_start(o.id, o.aux, now_ps());
                break;
            default: break;
        }
        ++i;
    }
    if (resume) nic.wqe_to_req.write(resume, &st);
    return out_ready;
}

void RxTransportBlock::main() {
    for (;;) {
        uint64_t pushed = 0;
        TxnPtr t = nic.rx_in.read(&pushed);
        const uint64_t in = std::max(pushed, t->ready_ps);
        wait_until(t->ready_ps);
        const bool request = roce::opcode_info(t->opcode).has(roce::kRequest);
        const int blk = request ? Nic::kResponder : Nic::kCompleter;
        sim::BlockStats& st = nic.blk[blk];
        uint64_t out_ready = 0;
        busy.lock();
        {
            sim::BusyScope b(st);
            nic.lookup(nic.qpc, t->qpn, st);
            nic.be.exec_rx(t->frame.data(), t->frame.size(), t->rec);
            if (!request && t->opcode < 0x20) {
                // An RC response frees the retransmit-queue entries it
                // acknowledges (a NAK or RNR NAK: those before its PSN).
                const roce::AethType at = roce::aeth_type(t->aeth_syndrome);
                const bool has_aeth = roce::opcode_info(t->opcode).has(roce::kHasAeth);
                nic.rtq_ack(t->qpn, t->psn,
                            has_aeth && (at == roce::AethType::Nak || at == roce::AethType::RnrNak));
            }
            wait_ps(nic.cycles(request ? nic.cfg.responder.cycles_per_packet : nic.cfg.completer.cycles_per_packet));
            out_ready = play(*t, st);
        }
        busy.unlock();
        // Until its last frame is handed on with its payload in (a READ
        // response's data read from host memory), as for the requester.
        nic.stage_sample(blk, in, std::max(now_ps(), out_ready));
    }
}

void RxTransportBlock::timers() {
    for (;;) {
        uint64_t in = 0;
        TxnPtr t = nic.timer_in.read(&in);
        sim::BlockStats& st = nic.blk[Nic::kCompleter];
        uint64_t out_ready = 0;
        busy.lock();
        {
            sim::BusyScope b(st);
            nic.lookup(nic.qpc, t->qpn, st);
            nic.be.exec_timer(t->qpn, t->timer, t->rec);
            wait_ps(nic.cycles(nic.cfg.completer.cycles_per_packet));
            out_ready = play(*t, st);
        }
        busy.unlock();
        nic.stage_sample(Nic::kCompleter, in, std::max(now_ps(), out_ready));
    }
}

}  // namespace simnic::model
