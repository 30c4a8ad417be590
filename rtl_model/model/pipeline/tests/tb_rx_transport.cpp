// The RX transport stage alone: request packets are the responder's work,
// responses and timers the completer's; each costs the QPC lookup (a miss
// adds the entry's DMA read) and its stage's cycles_per_packet before what
// the datapath recorded is played: ACKs and READ responses to TX build,
// CQEs to the CQE writer; request packets the completer releases go, with
// their payload reads, to the requester's queue behind what is there, in
// order. The responder and completer are stages of their own and work at
// the same time; each plays its packets in contexts (per QP, in order), so
// one QP's wait for a receive WQE does not hold up another QP's packets;
// a CQ's CQEs leave in the order the datapath wrote them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "block_harness.h"
#include "blocks/rx_transport.h"

using namespace simnic;
using namespace simnic::model;

namespace {

TxnPtr packet(uint8_t opcode, uint32_t qpn, uint32_t psn, uint64_t ready_ps = 0) {
    auto t = tb::rx_txn(tb::bytes_frame(64, uint8_t(psn)), ready_ps);
    t->opcode = opcode;
    t->qpn = qpn;
    t->psn = psn;
    return t;
}

void add_frame(OpRecord& r, uint8_t opcode, uint32_t psn, size_t len = 100) {
    r.add(Op::Kind::TxFrame, 0, 0, uint32_t(r.frames.size()));
    TxFrameRec f;
    f.bytes = tb::bytes_frame(len, uint8_t(psn));
    f.opcode = opcode;
    f.psn = psn;
    r.frames.push_back(std::move(f));
}

}  // namespace

TEST_CASE("rx_transport: requests are the responder's, responses the completer's, QPC lookup + cycles_per_packet",
          "[model][block][rx_transport]") {
    using namespace roce::op;
    ModelConfig other;
    other.responder.cycles_per_packet = 5;
    other.completer.cycles_per_packet = 3;
    other.qpc_cache.hit_cycles = 4;
    for (const ModelConfig& cfg : {ModelConfig{}, other}) {
        INFO("responder " << cfg.responder.cycles_per_packet << ", completer " << cfg.completer.cycles_per_packet);
        const uint64_t P = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
        const uint64_t hit = cfg.qpc_cache.hit_cycles * P;
        tb::BlockBench<RxTransportBlock> b(cfg);
        // The datapath: a WRITE is written to memory and ACKed; the ACK
        // completes a send WQE.
        b.be.on_rx = [](const std::vector<uint8_t>& f, OpRecord& rec) {
            if (f[0] == 1) {
                rec.add(Op::Kind::DmaWrite, 0, 1024, 0, DmaPurpose::Payload);
                add_frame(rec, RC_ACKNOWLEDGE, 1);
            } else {
                rec.add(Op::Kind::Cqe, 3, 0, 4, DmaPurpose::Payload, true);
            }
        };
        const uint64_t ack_at = 200 * P;  // after the WRITE is through
        b.drive(b.nic().rx_in, {{0, packet(RC_RDMA_WRITE_ONLY, 7, 1)}, {ack_at, packet(RC_ACKNOWLEDGE, 7, 2)}});
        const auto& to_txb = b.watch(b.nic().rxt_to_txb);
        const auto& cqes = b.watch(b.nic().cq_in);
        b.run();

        DmaEngine dma(cfg.dma);
        const uint64_t ctx = dma.read(hit, cfg.qpc_cache.entry_bytes, DmaPurpose::Context);  // first: a miss
        const uint64_t write_end = ctx + cfg.responder.cycles_per_packet * P;
        REQUIRE(ack_at > write_end);
        const uint64_t write_visible = dma.write(write_end, 1024, DmaPurpose::Payload);
        const uint64_t ack_end = ack_at + hit + cfg.completer.cycles_per_packet * P;  // second: a hit

        REQUIRE(b.be.rx.size() == 2);
        CHECK(b.be.rx[0].t_ps == ctx);           // the datapath runs once the QPC is in
        CHECK(b.be.rx[1].t_ps == ack_at + hit);
        REQUIRE(to_txb.size() == 1);
        CHECK(to_txb[0].t_ps == write_end);
        CHECK(to_txb[0].item.ready_ps == write_end);  // no payload to read for an ACK
        CHECK(to_txb[0].item.f.opcode == RC_ACKNOWLEDGE);
        REQUIRE(cqes.size() == 1);
        CHECK(cqes[0].t_ps == ack_end);
        CHECK(cqes[0].item.cqn == 3);
        CHECK(cqes[0].item.qpn == 7);
        CHECK(cqes[0].item.wqe_index == 4);
        CHECK(cqes[0].item.not_before_ps == ack_end);  // no payload writes to wait for here
        CHECK(b.nic().dma.stats().write_bytes[size_t(DmaPurpose::Payload)] == 1024);
        CHECK(write_visible > write_end);

        const Nic& n = b.nic();
        CHECK(n.blk[Nic::kResponder].items == 1);
        CHECK(n.blk[Nic::kCompleter].items == 1);
        CHECK(n.blk[Nic::kResponder].busy_ps == write_end);
        CHECK(n.blk[Nic::kResponder].stall_ps == ctx - hit);  // the QPC miss
        CHECK(n.blk[Nic::kCompleter].busy_ps == ack_end - ack_at);
        CHECK(n.blk[Nic::kCompleter].stall_ps == 0);
        CHECK(n.qpc.stats().misses == 1);
        CHECK(n.qpc.stats().hits == 1);
    }
}

TEST_CASE("rx_transport: a CQE follows the payload writes of its packet", "[model][block][rx_transport]") {
    using namespace roce::op;
    const ModelConfig cfg;
    const uint64_t P = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
    tb::BlockBench<RxTransportBlock> b(cfg);
    b.nic().qpc.access(7);
    b.be.on_rx = [](const std::vector<uint8_t>&, OpRecord& rec) {
        rec.add(Op::Kind::DmaWrite, 0, 4096, 0, DmaPurpose::Payload);
        add_frame(rec, RC_ACKNOWLEDGE, 1);
        rec.add(Op::Kind::Cqe, 3, 0, 0, DmaPurpose::Payload, false);
    };
    b.drive(b.nic().rx_in, 0, packet(RC_SEND_ONLY, 7, 1));
    const auto& cqes = b.watch(b.nic().cq_in);
    b.run();
    const uint64_t end = (cfg.qpc_cache.hit_cycles + cfg.responder.cycles_per_packet) * P;
    DmaEngine dma(cfg.dma);
    REQUIRE(cqes.size() == 1);
    CHECK(cqes[0].t_ps == end);
    CHECK(cqes[0].item.not_before_ps == dma.write(end, 4096, DmaPurpose::Payload));
}

TEST_CASE("rx_transport: request packets the completer releases go to the requester's queue, in order",
          "[model][block][rx_transport]") {
    using namespace roce::op;
    const ModelConfig cfg;
    const uint64_t P = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
    tb::BlockBench<RxTransportBlock> b(cfg);
    b.nic().qpc.access(7);
    // An ACK reopens the send window: the datapath sends the next two
    // WRITE packets (each with its payload read) and completes a WQE.
    b.be.on_rx = [](const std::vector<uint8_t>&, OpRecord& rec) {
        rec.add(Op::Kind::WqeFetched, 7, 0, 41);
        rec.add(Op::Kind::Mpt, 2);
        rec.add(Op::Kind::DmaRead, 0, 2048, 0, DmaPurpose::Payload);
        add_frame(rec, RC_RDMA_WRITE_MIDDLE, 20);
        rec.add(Op::Kind::DmaRead, 0, 1024, 0, DmaPurpose::Payload);
        add_frame(rec, RC_RDMA_WRITE_LAST, 21);
        rec.add(Op::Kind::Cqe, 3, 0, 40, DmaPurpose::Payload, true);
    };
    // The requester already has work queued: the released packets go behind it.
    auto queued = std::make_shared<Txn>();
    queued->qpn = 9;
    b.nic().wqe_to_req.push_input(queued);
    b.drive(b.nic().rx_in, 0, packet(RC_ACKNOWLEDGE, 7, 19));
    const auto& to_txb = b.watch(b.nic().rxt_to_txb);
    const auto& cqes = b.watch(b.nic().cq_in);
    const uint64_t later = 1000 * P;  // the requester looks after everything is done
    const auto& to_req = b.watch(b.nic().wqe_to_req, later);
    b.run();

    CHECK(to_txb.empty());  // nothing for the response path
    REQUIRE(to_req.size() == 2);
    CHECK(to_req[0].item == queued);
    const Txn& r = *to_req[1].item;
    CHECK(r.qpn == 7);
    CHECK(r.db.num == 7);
    REQUIRE(r.rec.frames.size() == 2);
    CHECK(r.rec.frames[0].psn == 20);
    CHECK(r.rec.frames[1].psn == 21);
    // Each frame travels with the memory ops just before it (the MR lookup
    // and the payload read of the first, the payload read of the second).
    REQUIRE(r.rec.ops.size() == 5);
    CHECK(r.rec.ops[0].kind == Op::Kind::Mpt);
    CHECK(r.rec.ops[1].kind == Op::Kind::DmaRead);
    CHECK(r.rec.ops[1].bytes == 2048);
    CHECK(r.rec.ops[2].kind == Op::Kind::TxFrame);
    CHECK(r.rec.ops[2].aux == 0);
    CHECK(r.rec.ops[3].kind == Op::Kind::DmaRead);
    CHECK(r.rec.ops[3].bytes == 1024);
    CHECK(r.rec.ops[4].kind == Op::Kind::TxFrame);
    CHECK(r.rec.ops[4].aux == 1);
    // They are the requester's to play: nothing of them happened here.
    CHECK(b.nic().dma.stats().read_bytes[size_t(DmaPurpose::Payload)] == 0);
    CHECK(b.nic().mpt.stats().misses + b.nic().mpt.stats().hits == 0);

    // Released when the completer is done with the ACK, after its CQE.
    const uint64_t done = (cfg.qpc_cache.hit_cycles + cfg.completer.cycles_per_packet) * P;
    REQUIRE(cqes.size() == 1);
    CHECK(cqes[0].t_ps == done);
    CHECK(to_req[1].t_ps == later);
    CHECK(r.t_in == done);
    // The restarted WQE's start time, for the latency figure.
    CHECK(b.nic().wqe_start.at(wqe_key(7, 41)) == done);
}

TEST_CASE("rx_transport: timers are the completer's, responder and completer work at the same time",
          "[model][block][rx_transport]") {
    using namespace roce::op;
    const ModelConfig cfg;
    const uint64_t P = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
    REQUIRE(cfg.responder.cycles_per_packet == cfg.completer.cycles_per_packet);
    tb::BlockBench<RxTransportBlock> b(cfg);
    b.nic().qpc.access(7);
    b.nic().qpc.access(8);
    b.be.on_timer = [](uint32_t, uint8_t, OpRecord& rec) { add_frame(rec, RC_RDMA_WRITE_ONLY, 30); };
    // A request and a timer at the same instant.
    b.drive(b.nic().rx_in, 0, packet(RC_SEND_ONLY, 7, 1));
    b.drive(b.nic().timer_in, 0, [] {
        auto t = std::make_shared<Txn>();
        t->kind = Txn::Kind::Timer;
        t->qpn = 8;
        t->timer = 2;
        return t;
    }());
    const auto& to_req = b.watch(b.nic().wqe_to_req);
    b.run();

    REQUIRE(b.be.rx.size() == 1);
    REQUIRE(b.be.timers.size() == 1);
    CHECK(b.be.timers[0].item.first == 8);
    CHECK(b.be.timers[0].item.second == 2);
    // Each stage looks its QP up at once: neither waits for the other.
    CHECK(b.be.rx[0].t_ps == cfg.qpc_cache.hit_cycles * P);
    CHECK(b.be.timers[0].t_ps == cfg.qpc_cache.hit_cycles * P);
    CHECK(b.nic().blk[Nic::kResponder].items == 1);
    CHECK(b.nic().blk[Nic::kCompleter].items == 1);
    // A retransmission the timer produced goes the requester's way.
    REQUIRE(to_req.size() == 1);
    CHECK(to_req[0].item->rec.frames.at(0).psn == 30);
}

TEST_CASE("rx_transport: a READ request released by a READ response leaves the response's memory ops here",
          "[model][block][rx_transport]") {
    using namespace roce::op;
    const ModelConfig cfg;
    const uint64_t P = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
    tb::BlockBench<RxTransportBlock> b(cfg);
    b.nic().qpc.access(7);
    b.nic().mpt.access(2);
    b.nic().mpt.access(6);
    // A READ response's data is written (after its MR lookup); that reopens
    // the outstanding-read window, and the datapath sends the next READ
    // request (no payload of its own), then a WRITE (its lookup and read).
    b.be.on_rx = [](const std::vector<uint8_t>&, OpRecord& rec) {
        rec.add(Op::Kind::Mpt, 2);
        rec.add(Op::Kind::DmaWrite, 0, 4096, 0, DmaPurpose::Payload);
        add_frame(rec, RC_RDMA_READ_REQUEST, 50);
        rec.add(Op::Kind::Mpt, 6);
        rec.add(Op::Kind::DmaRead, 0, 512, 0, DmaPurpose::Payload);
        add_frame(rec, RC_RDMA_WRITE_ONLY, 51);
        rec.add(Op::Kind::Cqe, 3, 0, 40, DmaPurpose::Payload, true);
    };
    b.drive(b.nic().rx_in, 0, packet(RC_RDMA_READ_RESPONSE_MIDDLE, 7, 19));
    const auto& to_req = b.watch(b.nic().wqe_to_req);
    const auto& cqes = b.watch(b.nic().cq_in);
    b.run();

    REQUIRE(to_req.size() == 1);
    const OpRecord& r = to_req[0].item->rec;
    REQUIRE(r.frames.size() == 2);
    CHECK(r.frames[0].psn == 50);
    CHECK(r.frames[1].psn == 51);
    // The READ request takes nothing along; the WRITE its own lookup and read.
    REQUIRE(r.ops.size() == 4);
    CHECK(r.ops[0].kind == Op::Kind::TxFrame);
    CHECK(r.ops[1].kind == Op::Kind::Mpt);
    CHECK(r.ops[1].id == 6);
    CHECK(r.ops[2].kind == Op::Kind::DmaRead);
    CHECK(r.ops[3].kind == Op::Kind::TxFrame);
    // The response's data write and its lookup were played here, and the
    // CQE follows the data.
    CHECK(b.nic().mpt.stats().hits == 1);
    CHECK(b.nic().dma.stats().write_bytes[size_t(DmaPurpose::Payload)] == 4096);
    const uint64_t play = (cfg.qpc_cache.hit_cycles + cfg.completer.cycles_per_packet) * P;
    const uint64_t lookup_done = play + cfg.mpt_cache.hit_cycles * P;
    DmaEngine dma(cfg.dma);
    REQUIRE(cqes.size() == 1);
    CHECK(cqes[0].t_ps == lookup_done);
    CHECK(cqes[0].item.not_before_ps == dma.write(lookup_done, 4096, DmaPurpose::Payload));
}

namespace {

// SENDs that each need their receive WQE read from host memory (600 ns),
// then write 64 bytes, send an ACK and complete a receive WQE into CQ
// `cq_base + qpn`; on the harness' datapath.
void recv_wqe_sends(tb::BlockBench<RxTransportBlock>& b, uint32_t cq_base) {
    b.be.on_rx = [cq_base](const std::vector<uint8_t>& f, OpRecord& rec) {
        const uint32_t qpn = f[1];
        rec.add(Op::Kind::DmaRead, 0, 64, 0, DmaPurpose::RecvWqe);
        rec.add(Op::Kind::DmaWrite, 0, 64, 0, DmaPurpose::Payload);
        add_frame(rec, roce::op::RC_ACKNOWLEDGE, f[0]);
        rec.add(Op::Kind::Cqe, cq_base + qpn, 0, f[0], DmaPurpose::Payload, false);
    };
}

TxnPtr send_to(uint32_t qpn, uint32_t psn) {
    auto t = packet(roce::op::RC_SEND_ONLY, qpn, psn);
    t->frame[0] = uint8_t(psn);
    t->frame[1] = uint8_t(qpn);
    return t;
}

}  // namespace

TEST_CASE("rx_transport: receive-WQE reads of different QPs overlap, a QP's packets stay in order",
          "[model][block][rx_transport]") {
    ModelConfig cfg;
    const uint64_t P = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
    const uint64_t decide = (cfg.qpc_cache.hit_cycles + cfg.responder.cycles_per_packet) * P;
    // Four SENDs at once, on four QPs (0..3) or all on QP 0.
    auto run = [&](const ModelConfig& c, bool one_qp) {
        tb::BlockBench<RxTransportBlock> b(c);
        for (uint32_t q = 0; q < 4; ++q) b.nic().qpc.access(q);
        recv_wqe_sends(b, 10);
        std::vector<std::pair<uint64_t, TxnPtr>> in;
        for (uint32_t k = 0; k < 4; ++k) in.push_back({0, send_to(one_qp ? 0 : k, k + 1)});
        b.drive(b.nic().rx_in, in);
        auto& acks = b.watch(b.nic().rxt_to_txb);
        b.run();
        std::vector<std::pair<uint64_t, uint32_t>> r;  // (ACK out, its PSN)
        for (const auto& a : acks) r.push_back({a.t_ps, a.item.f.psn});
        return r;
    };
    DmaEngine dma(cfg.dma);
    const uint64_t wqe_read = dma.read(0, 64, DmaPurpose::RecvWqe);  // one read alone: its round trip

    SECTION("four QPs: the reads overlap, the last ACK a few cycles after the first") {
        const auto r = run(cfg, false);
        REQUIRE(r.size() == 4);
        // Packet k is decided at (k + 1) * decide and issues its read then;
        // the reads' completions queue on the inbound link, each a few ns.
        for (size_t k = 0; k < 4; ++k) {
            CHECK(r[k].second == k + 1);
            CHECK(r[k].first >= (k + 1) * decide + wqe_read);
            CHECK(r[k].first < (k + 1) * decide + wqe_read + 100 * P);
        }
        CHECK(r[3].first - r[0].first < wqe_read / 4);
    }
    SECTION("one QP: each packet waits for the one before it, in PSN order") {
        const auto r = run(cfg, true);
        REQUIRE(r.size() == 4);
        for (size_t k = 0; k < 4; ++k) CHECK(r[k].second == k + 1);
        for (size_t k = 1; k < 4; ++k) CHECK(r[k].first - r[k - 1].first >= wqe_read);
    }
    SECTION("responder.contexts = 1: four QPs are played one at a time, as before") {
        ModelConfig one = cfg;
        one.responder.contexts = 1;
        const auto r = run(one, false);
        REQUIRE(r.size() == 4);
        for (size_t k = 1; k < 4; ++k) CHECK(r[k].first - r[k - 1].first >= wqe_read);
    }
    SECTION("four QPs in two contexts: QPs 0 and 2 share one, 1 and 3 the other") {
        ModelConfig two = cfg;
        two.responder.contexts = 2;
        const auto r = run(two, false);
        REQUIRE(r.size() == 4);
        CHECK(r[1].first - r[0].first < wqe_read / 4);  // QPs 0 and 1 overlap
        CHECK(r[2].first - r[0].first >= wqe_read);     // QP 2 waits for QP 0
        CHECK(r[3].first - r[1].first >= wqe_read);
    }
}

TEST_CASE("rx_transport: a CQ's CQEs leave in ring order when a later packet is played first",
          "[model][block][rx_transport]") {
    using namespace roce::op;
    const ModelConfig cfg;
    const uint64_t P = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
    for (const bool same_cq : {true, false}) {
        INFO((same_cq ? "one CQ" : "two CQs"));
        tb::BlockBench<RxTransportBlock> b(cfg);
        b.nic().qpc.access(1);
        b.nic().qpc.access(2);
        // A SEND on QP 1 waits 600 ns for its receive WQE, then completes
        // into CQ 5; an ACK on QP 2 right behind it completes a send WQE
        // into CQ 5 (or 6) at once.
        b.be.on_rx = [same_cq](const std::vector<uint8_t>& f, OpRecord& rec) {
            if (f[1] == 1) {
                rec.add(Op::Kind::DmaRead, 0, 64, 0, DmaPurpose::RecvWqe);
                rec.add(Op::Kind::Cqe, 5, 0, 0, DmaPurpose::Payload, false);
            } else {
                rec.add(Op::Kind::Cqe, same_cq ? 5 : 6, 0, 9, DmaPurpose::Payload, true);
            }
        };
        auto ack = packet(RC_ACKNOWLEDGE, 2, 7);
        ack->frame[1] = 2;
        b.drive(b.nic().rx_in, {{0, send_to(1, 1)}, {P, ack}});  // the ACK is decided after the SEND
        const auto& cqes = b.watch(b.nic().cq_in);
        b.run();
        REQUIRE(cqes.size() == 2);
        DmaEngine dma(cfg.dma);
        const uint64_t hit = cfg.qpc_cache.hit_cycles * P;
        const uint64_t recv_cqe = dma.read(hit + cfg.responder.cycles_per_packet * P, 64, DmaPurpose::RecvWqe);
        const uint64_t send_ready = P + hit + cfg.completer.cycles_per_packet * P;
        if (same_cq) {
            // The send CQE waited for the receive CQE ahead of it in the ring.
            CHECK(cqes[0].item.wqe_index == 0);
            CHECK(cqes[0].t_ps == recv_cqe);
            CHECK(cqes[1].item.wqe_index == 9);
            CHECK(cqes[1].t_ps == recv_cqe);
            CHECK(b.nic().blk[Nic::kCompleter].stall_ps == recv_cqe - send_ready);
        } else {
            CHECK(cqes[0].item.wqe_index == 9);
            CHECK(cqes[0].t_ps == send_ready);
            CHECK(cqes[1].t_ps == recv_cqe);
        }
    }
}

TEST_CASE("rx_transport: placed before the ICRC verdict, a payload's write follows the frame in, CQE and ACK wait "
          "for the verdict, a bad ICRC is placed, then dropped",
          "[model][block][rx_transport][place_before_verdict]") {
    using namespace roce::op;
    ModelConfig cfg;
    cfg.pipeline.cut_through = 1;
    cfg.pipeline.place_before_verdict = 1;
    const uint64_t P = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
    tb::BlockBench<RxTransportBlock> b(cfg);
    b.nic().qpc.access(7);
    b.nic().qpc.access(8);
    b.be.on_rx = [](const std::vector<uint8_t>&, OpRecord& rec) {
        rec.add(Op::Kind::DmaWrite, 0, 4096, 0, DmaPurpose::Payload);
        add_frame(rec, RC_ACKNOWLEDGE, 1);
        rec.add(Op::Kind::Cqe, 3, 0, 0, DmaPurpose::Payload, false);
    };
    // The bad frame: what the responder's checks validated (its MR's MPT
    // entry looked up), 4096 bytes placed.
    b.be.on_probe = [](const std::vector<uint8_t>&, OpRecord& rec) {
        rec.add(Op::Kind::Mpt, 5);
        return 4096u;
    };
    TxnPtr good = packet(RC_SEND_ONLY, 7, 1);
    good->payload_in_ps = 1000 * P;
    good->verdict_ps = 1007 * P;
    TxnPtr bad = packet(RC_RDMA_WRITE_ONLY, 8, 2);
    bad->payload_in_ps = 3000 * P;
    bad->verdict_ps = 3007 * P;
    bad->icrc_bad = true;
    b.drive(b.nic().rx_in, {{0, good}, {0, bad}});
    const auto& cqes = b.watch(b.nic().cq_in);
    const auto& frames = b.watch(b.nic().rxt_to_txb);
    b.run();
    // The good SEND: executed; its write left as the payload came in (its
    // last TLP once the last byte was in), its ACK and CQE at the verdict.
    REQUIRE(b.be.rx.size() == 1);
    REQUIRE(cqes.size() == 1);
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].t_ps == 1007 * P);
    CHECK(cqes[0].t_ps == 1007 * P);
    DmaEngine dma(cfg.dma);
    const uint64_t ahead = dma.link_ps(4096) - dma.link_ps(cfg.dma.max_payload_bytes);
    CHECK(cqes[0].item.not_before_ps == dma.write(1000 * P - ahead, 4096, DmaPurpose::Payload));
    // Visible sooner than a write that waits for the verdict.
    CHECK(cqes[0].item.not_before_ps < DmaEngine(cfg.dma).write(1007 * P, 4096, DmaPurpose::Payload));
    // The bad WRITE: not executed, asked what was placed, its payload
    // written, then dropped at the verdict: no CQE, no ACK.
    REQUIRE(b.be.probes.size() == 1);
    CHECK(b.be.dropped_icrc == 1);
    CHECK(b.nic().rx_placed_before_verdict == 2);
    CHECK(b.nic().rx_dropped_after_placement == 1);
    CHECK(b.nic().dma.stats().write_bytes[size_t(DmaPurpose::Payload)] == 2 * 4096);
    CHECK(b.nic().mpt.stats().misses + b.nic().mpt.stats().hits == 1);
}
