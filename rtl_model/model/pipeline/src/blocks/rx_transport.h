// RX transport block: the responder (request packets) and the completer
// (response packets, protocol timers), two stages side by side.
//
// Each stage decides, one packet at a time: the QP context lookup
// (qpc_cache.hit_cycles, plus a DMA read of the entry on a miss, counted
// as stall), then the functional datapath runs the transport core on the
// packet, *.cycles_per_packet. What the datapath recorded is then played
// by one of the stage's contexts (*.contexts; the QP's, QPN modulo the
// count): MR lookups, payload writes (posted), the reads it must see before
// going on (a receive WQE), the reads of a READ response's payload (not
// waited for: the frame carries their arrival time to TX build), ACKs and
// READ responses to TX build, CQEs and EQEs to their writers.
//
// Why so: the IBA orders a QP's packets (a responder executes them in PSN
// order, a completer retires WQEs in order), not those of different QPs,
// and a responder and a completer are separate machines. Before, one
// thread did both and waited out each receive WQE's 600 ns read before
// taking the next packet, so 64-byte SENDs capped near 1.4 M/s whatever
// the QP count. A context plays its packets in order, so a QP's order
// holds; two QPs in one context wait for each other, as QPs that share a
// hardware context would.
//
// The datapath decides in arrival order at each stage, so what is sent and
// written is decided as before; only when it shows changes. CQEs for one CQ
// go to the CQE writer in the order the datapath wrote them into the ring
// (a ticket per CQ taken when the stage decides), so a CQ's entries become
// visible in ring order even when a later packet's context finishes first.
//
// Request packets the completer releases (the send window reopened, a
// retransmission) belong to the requester's stream: they go, with the
// memory ops just before them (their MR lookups and payload reads, back to
// the last host-memory write, which is the received packet's), to the
// requester's queue behind the packets already there, so PSN order on the
// wire is the datapath's order.
//
// In: Nic::rx_in, Nic::timer_in. Out: Nic::rxt_to_txb, Nic::wqe_to_req,
// Nic::cq_in, Nic::eq_in. Counters: Nic::kResponder, Nic::kCompleter (busy:
// while the stage decides or any context plays); the start time of send
// WQEs the completer restarts (Nic::wqe_start).
#pragma once

#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "nic.h"

namespace simnic::model {

struct RxTransportBlock : BlockBase {
    SC_HAS_PROCESS(RxTransportBlock);
    RxTransportBlock(sc_core::sc_module_name n, Nic& nic);
    ~RxTransportBlock() override;

    // A packet or timer the stage decided on, for a context to play.
    struct Decided {
        TxnPtr t;
        uint64_t in = 0;  // when it was there for the stage (its stage time starts)
        // Per CQ the record completes into, its turn: in t->cq_tickets.
    };
    static constexpr size_t kContextQueue = 4;  // decided packets waiting per context

    // The two stages and their contexts.
    enum Role { kResp = 0, kComp = 1 };
    struct Context;

    void main();    // rx_in: requests to the responder, responses to the completer
    void timers();  // timer_in: the completer's
    void responder();
    void completer();
    void decide(Role r, TxnPtr t, uint64_t in);
    void play_decided(Role r, Decided& d);
    // Plays the record; returns when its last frame's payload is in (0: no frame).
    uint64_t play(Txn& t, sim::BlockStats& st);

    sim::Chan<std::pair<TxnPtr, uint64_t>> to_stage[2]{{"rx_transport.responder_in", 2},
                                                       {"rx_transport.completer_in", 2}};
    std::vector<std::unique_ptr<Context>> ctx[2];

    // CQE order per CQ: the next ticket to hand out, and the ticket whose
    // turn it is. A CQ's entry stays once made (turn == next: none waits),
    // so that each completion does not make and free one.
    struct CqOrder {
        uint64_t next = 0, turn = 0;
    };
    std::unordered_map<uint32_t, CqOrder> cq_order;
    sc_core::sc_event cq_turn_moved;
    void wait_cq_turn(uint32_t cqn, uint64_t ticket, sim::BlockStats& st);
    void pass_cq_turn(uint32_t cqn);
};

}  // namespace simnic::model
