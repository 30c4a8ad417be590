// The requester alone: it waits for a doorbell's WQEs (the wait is its
// stall), then per request packet does its MR lookups (waited for), issues
// its payload reads without waiting for them, and sends the packet on
// requester.cycles_per_packet later with the time its payload will be in;
// packets leave in order; CQEs and EQEs go to their writers.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "block_harness.h"
#include "blocks/requester.h"

using namespace simnic;
using namespace simnic::model;

namespace {

// A doorbell's record as the datapath leaves it: its WQE fetch (done by the
// doorbell block), an MR lookup, then `n` packets of `payload` bytes each
// with its payload read, then a CQE.
TxnPtr work(uint32_t qpn, uint32_t first_psn, int n, uint32_t payload, uint64_t ready_ps) {
    auto t = std::make_shared<Txn>();
    t->kind = Txn::Kind::Doorbell;
    t->db.num = qpn;
    t->qpn = qpn;
    t->ready_ps = ready_ps;
    OpRecord& r = t->rec;
    r.add(Op::Kind::DmaRead, 0, 64, 0, DmaPurpose::WqeFetch);
    r.add(Op::Kind::WqeFetched, qpn, 0, 0);
    r.add(Op::Kind::Mpt, 3);
    for (int i = 0; i < n; ++i) {
        r.add(Op::Kind::DmaRead, 0, payload, 0, DmaPurpose::Payload);
        r.add(Op::Kind::TxFrame, 0, 0, uint32_t(r.frames.size()));
        TxFrameRec f;
        f.bytes = tb::bytes_frame(payload + 58, uint8_t(i));
        f.qpn = qpn;
        f.psn = first_psn + uint32_t(i);
        f.payload = payload;
        r.frames.push_back(std::move(f));
    }
    r.add(Op::Kind::Cqe, 12, 0, 0, DmaPurpose::Payload, true);
    return t;
}

}  // namespace

TEST_CASE("requester: payload reads are issued without waiting, packets leave in order, cycles_per_packet apart",
          "[model][block][requester]") {
    ModelConfig fast;
    fast.requester.cycles_per_packet = 7;
    fast.dma.outstanding_reads = 4;
    for (const ModelConfig& cfg : {ModelConfig{}, fast}) {
        INFO("cycles_per_packet " << cfg.requester.cycles_per_packet);
        const uint64_t P = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
        const uint64_t per_packet = cfg.requester.cycles_per_packet * P;
        const int n = 6;
        const uint32_t payload = 4096;

        tb::BlockBench<RequesterBlock> b(cfg);
        b.drive(b.nic().wqe_to_req, 0, work(7, 100, n, payload, 0));
        const auto& out = b.watch(b.nic().req_to_txb);
        const auto& cqes = b.watch(b.nic().cq_in);
        b.run();
        REQUIRE(out.size() == size_t(n));

        // The same traffic on a DmaEngine of its own.
        DmaEngine dma(cfg.dma);
        const uint64_t mpt_at = cfg.mpt_cache.hit_cycles * P;  // a miss: its entry is read and waited for
        uint64_t t = dma.read(mpt_at, cfg.mpt_cache.entry_bytes, DmaPurpose::Context);
        for (int i = 0; i < n; ++i) {
            INFO("packet " << i);
            const uint64_t arrives = dma.read(t, payload, DmaPurpose::Payload);  // issued, not waited for
            t += per_packet;
            CHECK(out[size_t(i)].t_ps == t);
            CHECK(out[size_t(i)].item.ready_ps == std::max(arrives, t));
            CHECK(out[size_t(i)].item.f.psn == 100 + uint32_t(i));
            CHECK(out[size_t(i)].item.f.bytes == tb::bytes_frame(payload + 58, uint8_t(i)));
        }
        // The packets went before their payload was in: the reads overlap.
        CHECK(out[1].t_ps < out[0].item.ready_ps);
        REQUIRE(cqes.size() == 1);
        CHECK(cqes[0].t_ps == t);
        CHECK(cqes[0].item.cqn == 12);
        CHECK(cqes[0].item.qpn == 7);
        CHECK(cqes[0].item.is_send);
        const sim::BlockStats& st = b.nic().blk[Nic::kRequester];
        CHECK(st.items == 1);
        CHECK(st.busy_ps == t);
        CHECK(b.nic().dma.stats().read_bytes[size_t(DmaPurpose::WqeFetch)] == 0);  // the doorbell block's
        CHECK(b.nic().dma.stats().read_bytes[size_t(DmaPurpose::Payload)] == uint64_t(n) * payload);
        CHECK(b.nic().mpt.stats().misses == 1);
    }
}

TEST_CASE("requester: work waits for its WQEs, and the wait is stall", "[model][block][requester]") {
    const ModelConfig cfg;
    const uint64_t P = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
    const uint64_t wqe_in = 123 * P + 9;
    tb::BlockBench<RequesterBlock> b(cfg);
    b.nic().mpt.access(3);  // warm: the lookup hits
    // Two doorbells, the second's WQEs already in: it still goes second.
    b.drive(b.nic().wqe_to_req, {{0, work(7, 0, 1, 256, wqe_in)}, {0, work(8, 50, 1, 256, 0)}});
    const auto& out = b.watch(b.nic().req_to_txb);
    b.run();
    REQUIRE(out.size() == 2);
    const uint64_t per_doorbell = cfg.mpt_cache.hit_cycles * P + cfg.requester.cycles_per_packet * P;
    CHECK(out[0].t_ps == wqe_in + per_doorbell);
    CHECK(out[0].item.f.qpn == 7);
    CHECK(out[1].t_ps == wqe_in + 2 * per_doorbell);
    CHECK(out[1].item.f.qpn == 8);
    CHECK(b.nic().blk[Nic::kRequester].stall_ps == wqe_in);
    CHECK(b.nic().blk[Nic::kRequester].busy_ps == 2 * per_doorbell);
}
