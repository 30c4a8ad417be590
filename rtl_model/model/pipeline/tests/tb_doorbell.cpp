// The doorbell block alone: one cycle per doorbell plus, for an SQ or RQ
// doorbell, the QPC lookup (hit: qpc_cache.hit_cycles; miss: that plus the
// DmaEngine's read of qpc_cache.entry_bytes, counted as stall); the WQE
// fetch reads are issued and not waited for, so fetches of consecutive
// doorbells overlap, and each doorbell goes on with the time its last WQE
// arrives; the send WQEs' start times are recorded for the latency figure.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "block_harness.h"
#include "blocks/doorbell.h"
#include "simnic/hw/layout.h"
#include "simnic/hw/verbs.h"

using namespace simnic;
using namespace simnic::model;

namespace {

constexpr uint32_t kWqeBytes = 64;  // what the stand-in datapath fetches per WQE

TxnPtr doorbell(hw::DbKind kind, uint32_t num, uint32_t index, uint64_t t_in = 0) {
    auto t = std::make_shared<Txn>();
    t->kind = Txn::Kind::Doorbell;
    t->t_in = t_in;
    t->db.kind = uint8_t(kind);
    t->db.num = num;
    t->db.index = index;
    t->qpn = num;
    return t;
}

// The datapath's part: an SQ doorbell makes `wqes` WQEs runnable, each
// fetched by DMA; other doorbells fetch nothing.
// An SQ doorbell makes `wqes` WQEs runnable, each a frame to send; other
// doorbells leave nothing for the requester.
void datapath(tb::FakeDatapath& be, uint32_t wqes) {
    be.on_doorbell = [wqes](const Doorbell& db, OpRecord& rec) {
        if (db.kind != uint8_t(hw::DbKind::Sq)) return;
        for (uint32_t i = 0; i < wqes; ++i) {
            rec.add(Op::Kind::DmaRead, 0, kWqeBytes, 0, DmaPurpose::WqeFetch);
            rec.add(Op::Kind::WqeFetched, db.num, 0, db.index - wqes + i);
        }
        for (uint32_t i = 0; i < wqes; ++i) {
            rec.add(Op::Kind::TxFrame, 0, 0, uint32_t(rec.frames.size()));
            rec.frames.push_back(TxFrameRec{});
        }
    };
}

}  // namespace

TEST_CASE("doorbell: QPC miss costs the entry's DMA read over a hit, WQE fetches overlap",
          "[model][block][doorbell]") {
    ModelConfig slow;  // another cache and memory
    slow.qpc_cache.hit_cycles = 5;
    slow.qpc_cache.entry_bytes = 1024;
    slow.dma.read_latency_ns = 1000;
    slow.dma.bandwidth_gbps = 64;
    for (const ModelConfig& cfg : {ModelConfig{}, slow}) {
        INFO("qpc hit_cycles " << cfg.qpc_cache.hit_cycles << ", entry " << cfg.qpc_cache.entry_bytes);
        const uint64_t P = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
        const uint64_t hit = cfg.qpc_cache.hit_cycles * P;
        const uint32_t qpn = 5;

        tb::BlockBench<DoorbellBlock> b(cfg);
        datapath(b.be, 1);
        b.drive(b.nic().db_in, {{0, doorbell(hw::DbKind::Sq, qpn, 1)}, {0, doorbell(hw::DbKind::Sq, qpn, 2)}});
        const auto& out = b.watch(b.nic().wqe_to_req);
        b.run();
        REQUIRE(out.size() == 2);

        // The same DMA traffic on a DmaEngine of its own gives the times.
        DmaEngine dma(cfg.dma);
        const uint64_t lookup1 = P + hit;                       // doorbell write, lookup: a miss
        const uint64_t ctx = dma.read(lookup1, cfg.qpc_cache.entry_bytes, DmaPurpose::Context);
        const uint64_t out1 = ctx;                              // the fetch is issued, not waited for
        const uint64_t wqe1 = dma.read(out1, kWqeBytes, DmaPurpose::WqeFetch);
        const uint64_t out2 = out1 + P + hit;                   // the second doorbell hits
        const uint64_t wqe2 = dma.read(out2, kWqeBytes, DmaPurpose::WqeFetch);

        CHECK(out[0].t_ps == out1);
        CHECK(out[0].item->ready_ps == wqe1);
        CHECK(out[1].t_ps == out2);
        CHECK(out[1].item->ready_ps == wqe2);
        // Miss = hit + the entry's read; the second doorbell's cost is the hit.
        CHECK(out1 - 0 == P + hit + (ctx - lookup1));
        CHECK(out2 - out1 == P + hit);
        // The second fetch was issued before the first came back: they overlap.
        CHECK(out2 < wqe1);
        CHECK(wqe2 - wqe1 == out2 - out1);
        CHECK(wqe2 - wqe1 < uint64_t(cfg.dma.read_latency_ns) * 1000);

        const Nic& n = b.nic();
        CHECK(n.qpc.stats().misses == 1);
        CHECK(n.qpc.stats().hits == 1);
        const sim::BlockStats& st = n.blk[Nic::kDoorbell];
        CHECK(st.stall_ps == ctx - lookup1);  // waiting for the QPC entry
        CHECK(st.busy_ps == out2);
        CHECK(n.dma.stats().read_bytes[size_t(DmaPurpose::WqeFetch)] == 2 * kWqeBytes);
        CHECK(n.dma.stats().read_bytes[size_t(DmaPurpose::Context)] == cfg.qpc_cache.entry_bytes);
        // The datapath was called once the QPC was there.
        REQUIRE(b.be.doorbells.size() == 2);
        CHECK(b.be.doorbells[0].t_ps == out1);
        CHECK(b.be.doorbells[1].t_ps == out2);
        // Each WQE's start, for the message latency: when its doorbell came in.
        CHECK(n.wqe_start.at(wqe_key(qpn, 0)) == 0);
        CHECK(n.wqe_start.at(wqe_key(qpn, 1)) == 0);
    }
}

TEST_CASE("doorbell: the WQEs of one doorbell are fetched back to back, it goes on when the last is in",
          "[model][block][doorbell]") {
    ModelConfig cfg;
    cfg.dma.outstanding_reads = 2;  // fewer tags than WQEs: the rest wait for one
    const uint64_t P = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
    const uint32_t wqes = 5;
    tb::BlockBench<DoorbellBlock> b(cfg);
    datapath(b.be, wqes);
    // Warm the QPC so the doorbell hits.
    b.nic().qpc.access(9);
    b.drive(b.nic().db_in, 0, doorbell(hw::DbKind::Sq, 9, wqes));
    const auto& out = b.watch(b.nic().wqe_to_req);
    b.run();
    REQUIRE(out.size() == 1);
    const uint64_t issue = P + cfg.qpc_cache.hit_cycles * P;
    DmaEngine dma(cfg.dma);
    uint64_t last = 0;
    for (uint32_t i = 0; i < wqes; ++i) last = std::max(last, dma.read(issue, kWqeBytes, DmaPurpose::WqeFetch));
    CHECK(out[0].t_ps == issue);
    CHECK(out[0].item->ready_ps == last);
    CHECK(b.nic().dma.stats().tag_wait_ps == dma.stats().tag_wait_ps);
    CHECK(b.nic().dma.stats().tag_wait_ps > 0);
}

TEST_CASE("doorbell: CQ and SRQ doorbells cost one cycle, no QPC lookup, and leave the requester's queue alone",
          "[model][block][doorbell]") {
    const ModelConfig cfg;
    const uint64_t P = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
    tb::BlockBench<DoorbellBlock> b(cfg);
    datapath(b.be, 1);
    b.nic().qpc.access(5);  // the RQ doorbell's QP: a hit
    const uint64_t lookups0 = b.nic().qpc.stats().hits + b.nic().qpc.stats().misses;
    b.drive(b.nic().db_in, {{0, doorbell(hw::DbKind::Cq, 3, 0)},
                            {0, doorbell(hw::DbKind::Srq, 4, 0)},
                            {0, doorbell(hw::DbKind::Rq, 5, 1)}});
    const auto& out = b.watch(b.nic().wqe_to_req);
    b.run();
    // Applied, one cycle each (the RQ doorbell: and its QPC lookup)...
    REQUIRE(b.be.doorbells.size() == 3);
    CHECK(b.be.doorbells[0].t_ps == P);
    CHECK(b.be.doorbells[1].t_ps == 2 * P);
    CHECK(b.nic().stage[Nic::kDoorbell].count() == 3);
    // ... and gone: nothing for the requester, so no place in its queue.
    CHECK(out.empty());
    CHECK(b.nic().qpc.stats().hits + b.nic().qpc.stats().misses == lookups0 + 1);
    CHECK(b.nic().blk[Nic::kDoorbell].stall_ps == 0);
}

TEST_CASE("doorbell: with doorbell.mmio_ns a doorbell is taken that much after it is rung",
          "[model][block][doorbell]") {
    ModelConfig cfg;
    cfg.doorbell.mmio_ns = 150;
    const uint64_t P = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
    tb::BlockBench<DoorbellBlock> b(cfg);
    datapath(b.be, 1);
    b.nic().qpc.access(9);
    // Rung back to back: each arrives 150 ns later, in order, one cycle apart.
    b.drive(b.nic().db_in, {{0, doorbell(hw::DbKind::Sq, 9, 1)}, {0, doorbell(hw::DbKind::Sq, 9, 2)}});
    const auto& out = b.watch(b.nic().wqe_to_req);
    b.run();
    REQUIRE(out.size() == 2);
    const uint64_t hit = cfg.qpc_cache.hit_cycles * P;
    CHECK(out[0].t_ps == 150000 + P + hit);
    CHECK(out[1].t_ps == 150000 + 2 * (P + hit));
}

TEST_CASE("doorbell: a send doorbell that carries its WQEs fetches none", "[model][block][doorbell]") {
    ModelConfig cfg;
    cfg.doorbell.wqe_by_mmio_bytes = 2 * kWqeBytes;
    const uint64_t P = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
    for (uint32_t wqes : {2u, 3u}) {
        INFO(wqes << " WQEs");
        tb::BlockBench<DoorbellBlock> b(cfg);
        datapath(b.be, wqes);
        b.nic().qpc.access(9);
        b.drive(b.nic().db_in, 0, doorbell(hw::DbKind::Sq, 9, wqes));
        const auto& out = b.watch(b.nic().wqe_to_req);
        b.run();
        REQUIRE(out.size() == 1);
        const uint64_t taken = P + cfg.qpc_cache.hit_cycles * P;
        if (wqes * kWqeBytes <= cfg.doorbell.wqe_by_mmio_bytes) {
            CHECK(out[0].item->ready_ps == taken);  // they came with the doorbell
            CHECK(b.nic().dma.stats().reads == 0);
            CHECK(b.nic().wqe_by_mmio == 1);
        } else {
            CHECK(out[0].item->ready_ps > taken + cfg.dma.read_latency_ns * 1000);  // more than it carries: fetched
            CHECK(b.nic().dma.stats().reads == wqes);
            CHECK(b.nic().wqe_by_mmio == 0);
        }
    }
}

TEST_CASE("doorbell: with receive-WQE prefetch an RQ doorbell reads the WQEs it posts", "[model][block][doorbell]") {
    ModelConfig cfg;
    cfg.doorbell.recv_wqe_prefetch = 1;
    tb::BlockBench<DoorbellBlock> b(cfg);
    datapath(b.be, 1);
    Nic& n = b.nic();
    n.qpc.access(5);  // the QPC hits: the only reads are the WQEs'
    // Three WQEs posted, then two more: one read each, back to back.
    b.drive(n.db_in, {{0, doorbell(hw::DbKind::Rq, 5, 3)}, {0, doorbell(hw::DbKind::Rq, 5, 5)}});
    b.run();
    REQUIRE(n.rq_prefetched[5].size() == 5);
    CHECK(n.dma.stats().reads == 5);
    CHECK(n.dma.stats().read_bytes[size_t(DmaPurpose::RecvWqe)] == 5 * DoorbellBlock::kRecvWqeBytes);
    const uint64_t first = n.rq_prefetched[5].front();
    CHECK(first >= cfg.dma.read_latency_ns * 1000);
    CHECK(std::is_sorted(n.rq_prefetched[5].begin(), n.rq_prefetched[5].end()));
    // Without prefetch: none.
    tb::BlockBench<DoorbellBlock> off{ModelConfig{}};
    datapath(off.be, 1);
    off.nic().qpc.access(5);
    off.drive(off.nic().db_in, 0, doorbell(hw::DbKind::Rq, 5, 3));
    off.run();
    CHECK(off.nic().dma.stats().reads == 0);
    CHECK(off.nic().rq_prefetched.empty());
}

TEST_CASE("doorbell: a doorbell whose object was destroyed on its way is dropped, not applied",
          "[model][block][doorbell]") {
    // A CQ doorbell rung before DESTROY_CQ reaches the block after it; a new
    // CQ with the same number must not see its consumer index. The epoch a
    // doorbell carries is the one its object had when it was rung.
    const ModelConfig cfg;
    tb::BlockBench<DoorbellBlock> b(cfg);
    datapath(b.be, 1);
    Nic& n = b.nic();
    TxnPtr stale = doorbell(hw::DbKind::Cq, 3, 7);           // rung for the old CQ 3 (epoch 0)
    ++n.db_epoch[Nic::db_key(uint8_t(hw::DbKind::Cq), 3)];   // CQ 3 destroyed
    TxnPtr fresh = doorbell(hw::DbKind::Cq, 3, 1);
    fresh->db_epoch = 1;                                     // rung for the new CQ 3
    TxnPtr other = doorbell(hw::DbKind::Srq, 3, 2);          // another object, same number
    b.drive(n.db_in, {{0, stale}, {0, fresh}, {0, other}});
    const auto& out = b.watch(n.wqe_to_req);
    b.run();
    REQUIRE(b.be.doorbells.size() == 2);
    CHECK(b.be.doorbells[0].item.kind == uint8_t(hw::DbKind::Cq));
    CHECK(b.be.doorbells[0].item.index == 1);
    CHECK(b.be.doorbells[1].item.kind == uint8_t(hw::DbKind::Srq));
    CHECK(out.empty());  // applied, and nothing for the requester
}

// A CQ doorbell's consumer index is taken when it is rung (Pipeline::doorbell,
// which leaves Nic::cq_ci_rung); an arm goes on through the block, mmio_ns
// and its cycle later, alone: with the CQ's consumer index then, never its
// own older one, and with the driver's cq_seen, so a CQE written in between
// fires it at once (hw-spec 7.3).
TEST_CASE("doorbell: a CQ arm is carried out by the block with the latest consumer index, its event kept",
          "[model][block][doorbell]") {
    ModelConfig cfg;
    cfg.doorbell.mmio_ns = 150;
    const uint64_t P = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
    tb::BlockBench<DoorbellBlock> b(cfg);
    // The datapath: an arm that finds a CQE written since cq_seen fires at
    // once (its event, for the requester to play); a CI-only doorbell nothing.
    b.be.on_doorbell = [](const Doorbell& db, OpRecord& rec) {
        if (db.kind == uint8_t(hw::DbKind::Cq) && db.cq_cmd != 0)
            rec.add(Op::Kind::Eqe, uint32_t(hw::EventType::Completion), 0, db.num);
    };
    // Arm rung with CI 8 (seen 8); then a CI-only doorbell moved the CI to
    // 12 before the block got to the arm. Both were taken at ring time.
    auto arm = doorbell(hw::DbKind::Cq, 3, 8);
    arm->db.cq_cmd = uint8_t(hw::CqArm::Next);
    arm->db.cq_seen = 8;
    auto ci_only = doorbell(hw::DbKind::Cq, 3, 12);
    ci_only->executed = true;
    b.nic().cq_ci_rung[3] = 12;
    b.drive(b.nic().db_in, {{0, arm}, {0, ci_only}});
    const auto& out = b.watch(b.nic().wqe_to_req);
    b.run();
    // The arm alone reached the datapath, mmio_ns and a cycle after it was rung...
    REQUIRE(b.be.doorbells.size() == 1);
    const Doorbell& d = b.be.doorbells[0].item;
    CHECK(b.be.doorbells[0].t_ps == 150000 + P);
    CHECK(d.cq_cmd == uint8_t(hw::CqArm::Next));
    CHECK(d.index == 12);  // the CQ's consumer index now, not the arm's older 8
    CHECK(d.cq_seen == 8);  // what the driver saw: CQEs written since fire the arm
    CHECK(b.nic().cq_arms == 1);
    // ... and the event it raised goes on to be written (no wake-up lost).
    REQUIRE(out.size() == 1);
    REQUIRE(out[0].item->rec.ops.size() == 1);
    CHECK(out[0].item->rec.ops[0].kind == Op::Kind::Eqe);
    // Both doorbells cost their cycle.
    CHECK(b.nic().blk[Nic::kDoorbell].items == 2);
}
