#include "blocks/rx_transport.h"

#include <algorithm>
#include <string>
#include <utility>

#include "simnic/hw/verbs.h"
#include "simnic/roce/opcode.h"

namespace simnic::model {

using sim::now_ps;
using sim::wait_ps;
using sim::wait_until;

// One context of a stage: plays what the stage decided for its QPs, in order.
struct RxTransportBlock::Context : sc_core::sc_module {
    SC_HAS_PROCESS(Context);
    Context(sc_core::sc_module_name n, RxTransportBlock& b, Role r) : sc_core::sc_module(n), blk(b), role(r) {
        SC_THREAD(run);
    }
    void run() {
        for (;;) {
            Decided d = in.read();
            blk.play_decided(role, d);
        }
    }
    RxTransportBlock& blk;
    Role role;
    sim::Chan<Decided> in{"context", kContextQueue};
};

RxTransportBlock::RxTransportBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) {
    SC_THREAD(main);
    SC_THREAD(timers);
    SC_THREAD(responder);
    SC_THREAD(completer);
    const uint32_t count[2] = {std::max(1u, nic.cfg.responder.contexts), std::max(1u, nic.cfg.completer.contexts)};
    for (int r = 0; r < 2; ++r)
        for (uint32_t k = 0; k < count[r]; ++k)
            ctx[r].push_back(std::make_unique<Context>(
                ((r == kResp ? "responder_ctx" : "completer_ctx") + std::to_string(k)).c_str(), *this, Role(r)));
}
RxTransportBlock::~RxTransportBlock() = default;

void RxTransportBlock::wait_cq_turn(uint32_t cqn, uint64_t ticket, sim::BlockStats& st) {
    auto it = cq_order.find(cqn);
    if (it == cq_order.end() || it->second.turn == ticket) return;
    sim::StallScope s(&st);
    while ((it = cq_order.find(cqn)) != cq_order.end() && it->second.turn != ticket) sc_core::wait(cq_turn_moved);
}

void RxTransportBlock::pass_cq_turn(uint32_t cqn) {
    auto it = cq_order.find(cqn);
    if (it == cq_order.end()) return;
    ++it->second.turn;
    cq_turn_moved.notify(sc_core::SC_ZERO_TIME);
}

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
            resume = nic.txns.take();
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
    // Waits for the turn of the CQ that op i completes into (the first time only).
    auto cq_turn = [&](uint32_t cqn) {
        for (Txn::CqTicket& c : t.cq_tickets)
            if (c.cqn == cqn) {
                if (!c.waited) wait_cq_turn(cqn, c.ticket, st);
                c.waited = true;
                return;
            }
    };
    uint64_t payload_ready = now_ps(), writes_done = now_ps(), out_ready = 0;
    // With cut-through, where each response's payload comes in (TX build streams it).
    std::vector<DmaArrival> spans;
    std::vector<DmaArrival>* spans_of = nic.cut_through ? &spans : nullptr;
    // Placed before the ICRC verdict (pipeline.place_before_verdict): the
    // payload's writes go as it streams in; anything else the packet does
    // (its CQE, its ACK, what must not happen for a bad packet) waits for
    // the verdict.
    const Txn* early = t.verdict_ps ? &t : nullptr;
    for (size_t i = 0; i < rec.ops.size();) {
        const Op& o = rec.ops[i];
        if (is_memory_op(o.kind)) {
            i = nic.play_memory(rec, i, st, payload_ready, writes_done, false, t.qpn, spans_of, early);
            continue;
        }
        if (early) sim::stall_until(st, t.verdict_ps);
        switch (o.kind) {
            case Op::Kind::TxFrame: {
                FrameTok f{std::move(rec.frames[o.aux]), std::max(payload_ready, now_ps()), 0, std::exchange(spans, {})};
                out_ready = std::max(out_ready, f.ready_ps);
                nic.rxt_to_txb.write(std::move(f), &st);
                payload_ready = now_ps();
                break;
            }
            case Op::Kind::Cqe:
                cq_turn(o.id);
                i = nic.play_completion(rec, i, t.qpn, writes_done, st);
                break;
            case Op::Kind::Eqe:
                if (o.id == uint32_t(hw::EventType::Completion)) cq_turn(o.aux);
                i = nic.play_completion(rec, i, t.qpn, writes_done, st);
                break;
            case Op::Kind::WqeFetched:
                if (o.id) nic.note_wqe_start(o.id, o.aux, now_ps());
                break;
            default: break;
        }
        ++i;
    }
    if (early) {
        sim::stall_until(st, t.verdict_ps);
        if (t.icrc_bad) {
            // Placed, then dropped at the verdict: nothing else was
            // recorded (no PSN advance, CQE or ACK); the requester's
            // retransmission places the payload again and completes.
            if (std::any_of(rec.ops.begin(), rec.ops.end(), [](const Op& x) { return x.kind == Op::Kind::DmaWrite; }))
                ++nic.rx_dropped_after_placement;
            nic.be.rx_dropped(true);
        }
    }
    // The turns taken pass, in the order they were taken.
    for (const Txn::CqTicket& c : t.cq_tickets)
        if (c.waited) pass_cq_turn(c.cqn);
    // A ticket not used (cannot happen: every ticket is for a CQ the record
    // completes into) must still pass, or the CQ's next entry would wait forever.
    for (const Txn::CqTicket& c : t.cq_tickets)
        if (!c.waited) {
            wait_cq_turn(c.cqn, c.ticket, st);
            pass_cq_turn(c.cqn);
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
        to_stage[request ? kResp : kComp].write({std::move(t), in}, &nic.blk[request ? Nic::kResponder : Nic::kCompleter]);
    }
}

void RxTransportBlock::timers() {
    for (;;) {
        uint64_t in = 0;
        TxnPtr t = nic.timer_in.read(&in);
        to_stage[kComp].write({std::move(t), in}, &nic.blk[Nic::kCompleter]);
    }
}

void RxTransportBlock::responder() {
    for (;;) {
        auto [t, in] = to_stage[kResp].read();
        decide(kResp, std::move(t), in);
    }
}

void RxTransportBlock::completer() {
    for (;;) {
        auto [t, in] = to_stage[kComp].read();
        decide(kComp, std::move(t), in);
    }
}

void RxTransportBlock::decide(Role r, TxnPtr t, uint64_t in) {
    const int blk = r == kResp ? Nic::kResponder : Nic::kCompleter;
    sim::BlockStats& st = nic.blk[blk];
    Decided d;
    t->cq_tickets.clear();
    {
        sim::BusyScope b(st);
        nic.lookup(nic.qpc, t->qpn, st);
        if (t->kind == Txn::Kind::Timer) {
            nic.be.exec_timer(t->qpn, t->timer, t->rec);
        } else if (t->verdict_ps && t->icrc_bad) {
            // Handed on before its verdict, which will be bad: the datapath
            // executes nothing, but the responder has already placed what
            // its checks let through (inside the validated MR or receive
            // buffer) while the payload streamed in.
            const uint32_t placed = nic.be.probe_placement(t->frame.data(), t->frame.size(), t->rec);
            if (placed) t->rec.add(Op::Kind::DmaWrite, 0, placed, 0, DmaPurpose::Payload);
        } else {
            // The parser's packet points into the frame it decoded: this one.
            if (t->decoded) t->pkt->payload = t->frame.data() + t->pkt->payload_off;
            nic.be.exec_rx(t->frame.data(), t->frame.size(), t->icrc_good, t->rec, t->decoded ? t->pkt.get() : nullptr);
            if (r == kComp && t->opcode < 0x20) {
                // An RC response frees the retransmit-queue entries it
                // acknowledges (a NAK or RNR NAK: those before its PSN).
                const roce::AethType at = roce::aeth_type(t->aeth_syndrome);
                const bool has_aeth = roce::opcode_info(t->opcode).has(roce::kHasAeth);
                nic.rtq_ack(t->qpn, t->psn,
                            has_aeth && (at == roce::AethType::Nak || at == roce::AethType::RnrNak));
            }
        }
        if (t->verdict_ps && std::any_of(t->rec.ops.begin(), t->rec.ops.end(), [](const Op& o) {
                return o.kind == Op::Kind::DmaWrite && o.purpose == DmaPurpose::Payload;
            }))
            ++nic.rx_placed_before_verdict;
        // The CQs this record completes into take their turn now, in the
        // order the datapath wrote their rings.
        for (const Op& o : t->rec.ops) {
            uint32_t cqn = 0;
            if (o.kind == Op::Kind::Cqe) cqn = o.id;
            else if (o.kind == Op::Kind::Eqe && o.id == uint32_t(hw::EventType::Completion)) cqn = o.aux;
            else continue;
            bool have = false;
            for (const Txn::CqTicket& tk : t->cq_tickets) have = have || tk.cqn == cqn;
            if (!have) t->cq_tickets.push_back({cqn, cq_order[cqn].next++});
        }
        wait_ps(nic.cycles(r == kResp ? nic.cfg.responder.cycles_per_packet : nic.cfg.completer.cycles_per_packet));
    }
    d.t = std::move(t);
    d.in = in;
    std::vector<std::unique_ptr<Context>>& c = ctx[r];
    c[d.t->qpn % c.size()]->in.write(std::move(d), &st);
}

void RxTransportBlock::play_decided(Role r, Decided& d) {
    const int blk = r == kResp ? Nic::kResponder : Nic::kCompleter;
    sim::BlockStats& st = nic.blk[blk];
    uint64_t out_ready = 0;
    {
        sim::BusyScope b(st, /*item=*/false);
        out_ready = play(*d.t, st);
    }
    // Until its last frame is handed on with its payload in (a READ
    // response's data read from host memory), as for the requester.
    nic.stage_sample(blk, d.in, std::max(now_ps(), out_ready));
}

}  // namespace simnic::model
