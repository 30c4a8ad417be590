// A freed QPC is never read by the engine, and a QP number used again starts
// clean (TableStore::release, fw/src/table_store.cc: the firmware gives a
// block of QPCs back once every QPC in it is free, and hands QP numbers out
// cyclically). A soft engine device in-process (engine_world.h), every DMA
// checked against what is registered (dma_guard.cc): a QP is destroyed while
// frames for it are on their way and its SQ holds WQEs never acknowledged,
// its number comes round again for a new QP, and
//  - the frames for the old QP are dropped and counted (rx_drops_no_qp),
//    answered by nothing, completed into no CQ;
//  - the old QP's rings are never touched again (their ranges leave the DMA
//    guard when it is destroyed: a fetch from them is a violation);
//  - the new QP's QPC and engine state are its own: its PSNs, empty ring
//    cursors, no error, no timer; the old QP's requests are never sent again
//    under the new QP, whatever the timers do; the old frames replayed at it
//    complete nothing, and its own first SEND completes with its own WQE.
// Then the same with the engine polled by a thread of its own while the
// control thread destroys and creates QPs and frames arrive, as the daemon's
// engine thread runs beside its control thread (ASan sees a freed block read).
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "engine_world.h"
#include "simnic/hw/cqe.h"
#include "simnic/roce/opcode.h"

using namespace simnic;
using namespace simnic::fuzz;
namespace op = simnic::roce::op;

namespace {

// Forgets the DMA ranges of a destroyed QP's rings: the engine must never
// touch them again.
void forget_rings(const QpInfo& q) {
    auto& r = DmaGuard::get().ranges;
    for (auto it = r.begin(); it != r.end();) {
        const auto lo = it->lo;
        if (lo == reinterpret_cast<std::uint64_t>(q.sq) || (q.rq && lo == reinterpret_cast<std::uint64_t>(q.rq)))
            it = r.erase(it);
        else
            ++it;
    }
}

// The CQEs in the main CQ's ring (hw-spec 7): (QPN, wr_id) of each valid one.
std::vector<std::pair<std::uint32_t, std::uint64_t>> cqes(EngineWorld& w) {
    std::vector<std::pair<std::uint32_t, std::uint64_t>> v;
    const std::uint32_t n = 1u << EngineWorld::kLogCq;
    for (std::uint32_t i = 0; i < n; ++i) {
        const std::uint8_t* e = w.cq_ring + std::size_t{i} * hw::kCqeSize;
        // A slot the device wrote in its first pass over the ring has owner 0
        // (hw/cqe.h); an untouched (zeroed) slot has no QPN.
        const hw::Cqe c = hw::decode_cqe(e);
        if (c.qp_num == 0) continue;
        v.push_back({c.qp_num, c.wr_id});
    }
    return v;
}

}  // namespace

TEST_CASE("a destroyed QP's number comes round again: its frames are dropped, the new QP starts clean",
          "[fuzz][qpc]") {
    EngineWorld w;
    // 4 QP numbers, so that the allocator wraps within the test.
    REQUIRE(w.open(4));
    QpInfo& old_qp = w.add_qp(hw::QpType::Rc, hw::QpState::Rts);
    REQUIRE(w.error.empty());
    const std::uint32_t qpn = old_qp.qpn;
    // Requests the peer never acknowledges: sent, and outstanding.
    w.post_send(old_qp, hw::WrOpcode::Send, 64);
    w.post_send(old_qp, hw::WrOpcode::RdmaWrite, 100);
    w.post_send(old_qp, hw::WrOpcode::RdmaRead, 256);
    REQUIRE(w.settle());
    REQUIRE(w.port->sent_total == 3);
    CHECK(w.store->chunks_held(hw::Table::Qpc) == 1);

    // Frames for it arrive, then it is destroyed before the engine takes them.
    const std::uint32_t old_rq_psn = old_qp.rq_psn;
    w.port->arrive(peer_frame(qpn, op::RC_SEND_ONLY, old_rq_psn, 40));
    w.port->arrive(peer_frame(qpn, op::RC_ACKNOWLEDGE, old_qp.sq_psn));
    w.port->arrive(peer_frame(qpn, op::RC_RDMA_READ_RESPONSE_ONLY, old_qp.sq_psn + 2, 256));
    REQUIRE(w.destroy_qp(old_qp));
    forget_rings(old_qp);
    // Its block of QPCs went back (no other QP lives in it) and reads as zeros.
    CHECK(w.store->chunks_held(hw::Table::Qpc) == 0);
    const std::uint64_t no_qp0 = w.stat(hw::stats_block::rx_drops_no_qp);
    const std::size_t sent0 = w.port->sent_total;
    REQUIRE(w.settle());
    CHECK(w.stat(hw::stats_block::rx_drops_no_qp) == no_qp0 + 3);
    CHECK(w.port->sent_total == sent0);  // no ACK, no NAK, no retransmission
    CHECK(cqes(w).empty());              // DESTROY_QP: outstanding WQEs get no CQE
    w.poll(base::mono_ns() + 100'000'000'000ull);  // its retransmit timer, had it one
    CHECK(w.port->sent_total == sent0);

    // QP numbers cycle over the 4: create and destroy until `qpn` comes back.
    QpInfo* fresh = nullptr;
    for (int i = 0; i < 8 && !fresh; ++i) {
        QpInfo& q = w.add_qp(hw::QpType::Rc, hw::QpState::Rts);
        REQUIRE(w.error.empty());
        if (q.qpn == qpn) {
            fresh = &q;
            break;
        }
        REQUIRE(w.destroy_qp(q));
        forget_rings(q);
    }
    REQUIRE(fresh);
    QpInfo& nq = *fresh;
    CHECK(nq.rq_psn != old_rq_psn);
    CHECK(w.qpc_get(qpn, hw::qpc::state) == static_cast<std::uint64_t>(hw::QpState::Rts));
    CHECK(w.qpc_get(qpn, hw::qpc::rq_psn) == nq.rq_psn);
    CHECK(w.qpc_get(qpn, hw::qpc::sq_psn) == nq.sq_psn);
    CHECK(w.qpc_get(qpn, hw::qpc::sq_pi) == 0);
    CHECK(w.qpc_get(qpn, hw::qpc::sq_ci) == 0);
    CHECK(w.qpc_get(qpn, hw::qpc::rq_ci) == 0);
    CHECK(w.qpc_get(qpn, hw::qpc::rq_pi) == nq.rq_pi);
    CHECK(w.qpc_get(qpn, hw::qpc::error_cause) == 0);
    w.engine->exclusive([&] {
        auto& eq = *w.engine->impl().qps.at(qpn);
        CHECK(eq.sq_fetch == 0);
        CHECK(eq.seqmap.empty());
        CHECK(eq.recv_idx.empty());
        CHECK(eq.timer_deadline[0] == 0);
        CHECK(eq.timer_deadline[1] == 0);
        CHECK(eq.core->context().sq.empty());
    });

    // The old QP's requests are not the new QP's: its timers send nothing.
    const std::size_t sent1 = w.port->sent_total;
    w.poll(base::mono_ns() + 100'000'000'000ull);
    REQUIRE(w.settle());
    CHECK(w.port->sent_total == sent1);
    // The old frames again, now at the new QP: the ACK and READ response
    // answer nothing it sent, the SEND is outside its PSN window. Nothing
    // completes.
    w.port->arrive(peer_frame(qpn, op::RC_ACKNOWLEDGE, old_qp.sq_psn));
    w.port->arrive(peer_frame(qpn, op::RC_RDMA_READ_RESPONSE_ONLY, old_qp.sq_psn + 2, 256));
    w.port->arrive(peer_frame(qpn, op::RC_SEND_ONLY, old_rq_psn, 40));
    REQUIRE(w.settle());
    CHECK(cqes(w).empty());
    // Its own first SEND completes, with its own receive WQE.
    w.port->arrive(peer_frame(qpn, op::RC_SEND_ONLY, nq.rq_psn, 40));
    REQUIRE(w.settle());
    const auto c = cqes(w);
    REQUIRE(c.size() == 1);
    CHECK(c[0].first == qpn);
    CHECK(c[0].second == (0x5200000000ull | std::uint64_t{qpn} << 8 | 0));
    CHECK(DmaGuard::get().violations == 0);
}

TEST_CASE("QPs destroyed and created while the engine runs in a thread of its own and frames arrive", "[fuzz][qpc]") {
    EngineWorld w;
    REQUIRE(w.open(4));
    // Each round's QP is the only one: its DESTROY_QP gives the block of
    // QPCs back, and the next CREATE_QP allocates it again, while the engine
    // thread takes frames for both.
    std::atomic<bool> stop{false};
    std::thread engine([&] {
        while (!stop.load()) w.poll();
    });
    std::size_t made = 0;
    for (int round = 0; round < 100; ++round) {
        QpInfo& q = w.add_qp(round % 3 == 2 ? hw::QpType::Uc : hw::QpType::Rc, hw::QpState::Rts);
        REQUIRE(w.error.empty());
        ++made;
        w.post_send(q, hw::WrOpcode::Send, 64);
        for (int k = 0; k < 4; ++k) w.port->arrive(peer_frame(q.qpn, op::RC_SEND_ONLY, q.rq_psn + k, 16));
        REQUIRE(w.destroy_qp(q));
        w.port->arrive(peer_frame(q.qpn, op::RC_ACKNOWLEDGE, q.sq_psn));
        // The ring ranges stay allowed here: an engine pass may still be
        // reading the ring of a QP whose DESTROY_QP has not yet fenced it.
        if (w.qps.size() > 64) w.qps.erase(w.qps.begin(), w.qps.begin() + 32);
    }
    stop = true;
    engine.join();
    REQUIRE(w.settle());
    CHECK(made == 100);
    w.engine->exclusive([&] { CHECK(w.engine->impl().qps.empty()); });
    CHECK(w.store->chunks_held(hw::Table::Qpc) == 0);
    CHECK(DmaGuard::get().violations == 0);
}
