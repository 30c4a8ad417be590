// The requester alone: it waits for a doorbell's WQEs (the wait is its
// stall), then per request packet does its MR lookups (waited for), issues
// its payload reads without waiting for them, and sends the packet on
// requester.cycles_per_packet later with the time its payload will be in;
// packets leave in order; CQEs and EQEs go to their writers. With
// req_seg.impl = rtl: each packet at the segmentation RTL's own cycles,
// checked against the datapath's segmentation, a disagreement counted and
// dumped and the frame made to carry the RTL's descriptor (or, where it
// cannot, sent as built and counted), one's own design with a planted bug
// caught and followed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "block_harness.h"
#include "blocks/requester.h"
#include "own_rtl.h"
#include "req_seg_rtl.h"
#include "req_seg_testkit.h"
#include "simnic/roce/icrc.h"
#include "simnic/roce/packet.h"
#include "simnic/transport/segmentation.h"

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

namespace {

// The frame the datapath's requester builds of `s`, as its records keep
// it (not padded to the Ethernet minimum).
std::vector<uint8_t> request_frame(const transport::SegPacket& s) {
    return rtl::testkit::request_frame(s, false, false, false);
}

// A frame that left the requester, decoded by the packet core, its ICRC
// the one compute_icrc gives over it.
roce::Packet sent(const std::vector<uint8_t>& f) {
    roce::Packet p;
    REQUIRE(roce::decode_frame(f.data(), f.size(), p).ok());
    CHECK(p.icrc == roce::compute_icrc(f.data(), f.size(), p.l3_off, p.l4_off, p.ip_version));
    return p;
}

// A doorbell's record whose packets carry their segmentation step, as the
// datapath's requester records them (transport::seg_packet): `w`'s packets
// start_pkt .. start_pkt + count - 1, each a frame built from it (no
// payload reads: the timing is segmentation's alone).
TxnPtr segmented(const transport::SegWqe& w) {
    auto t = std::make_shared<Txn>();
    t->kind = Txn::Kind::Doorbell;
    t->db.num = t->qpn = 7;
    OpRecord& r = t->rec;
    uint32_t noack = w.noack;
    for (uint32_t k = w.start_pkt; k < w.start_pkt + w.count; ++k) {
        TxFrameRec f;
        f.qpn = 7;
        f.has_seg = true;
        f.seg_wqe = w;
        f.seg_wqe.start_pkt = k;
        f.seg_wqe.count = 1;
        f.seg_wqe.noack = noack;
        f.seg = transport::seg_packet(w, k, noack);
        f.psn = f.seg.psn;
        f.opcode = f.seg.opcode;
        f.payload = f.seg.payload_len;
        f.bytes = request_frame(f.seg);
        r.add(Op::Kind::TxFrame, 0, 0, uint32_t(r.frames.size()));
        r.frames.push_back(std::move(f));
    }
    return t;
}

transport::SegWqe write_wqe(uint32_t length, roce::IbMtu pmtu) {
    transport::SegWqe w;
    w.opcode = hw::WrOpcode::RdmaWrite;
    w.length = length;
    w.pmtu = pmtu;
    w.first_psn = 0xfffffe;  // crossing 2^24
    w.remote_addr = 0x7f0000001000;
    w.rkey = 0x1234;
    w.count = transport::seg_npkts(w.opcode, length, roce::ib_mtu_bytes(pmtu));
    return w;
}

struct SegRun {
    std::vector<tb::Seen<FrameTok>> out;
    uint64_t wqes = 0, packets = 0, mismatches = 0, skipped = 0, latency = 0;
    std::vector<std::string> dumps;
    bool cache_hit = false;
};

// One run of `work`, all entering at time 0.
SegRun run_seg(const ModelConfig& cfg, std::vector<TxnPtr> work) {
    tb::BlockBench<RequesterBlock> b(cfg);
    std::vector<std::pair<uint64_t, TxnPtr>> in;
    for (TxnPtr& t : work) in.emplace_back(0, std::move(t));
    b.drive(b.nic().wqe_to_req, std::move(in));
    const auto& out = b.watch(b.nic().req_to_txb);
    b.run();
    SegRun r;
    r.out = out;
    r.wqes = b.nic().req_seg_rtl_wqes;
    r.packets = b.nic().req_seg_rtl_packets;
    r.mismatches = b.nic().req_seg_rtl_mismatch;
    r.skipped = b.nic().req_seg_rtl_skipped;
    r.latency = b.nic().req_seg_rtl_latency;
    r.dumps = b.nic().rtl_mismatch_log;
    r.cache_hit = b.nic().req_seg_rtl_cache_hit;
    return r;
}

// The same over fresh records of `wqes` (the block moves the frames out of
// the records it plays).
SegRun run_seg(const ModelConfig& cfg, const std::vector<transport::SegWqe>& wqes) {
    std::vector<TxnPtr> work;
    for (const transport::SegWqe& w : wqes) work.push_back(segmented(w));
    return run_seg(cfg, std::move(work));
}

}  // namespace

TEST_CASE("requester: with req_seg.impl = rtl each packet costs the segmentation RTL's own cycles, checked against "
          "the datapath's",
          "[model][block][requester][rtl]") {
    // A 4 KiB + 1 WRITE at PMTU 1024 (five packets, the PSN wrapping) and a
    // one-packet one behind it.
    const std::vector<transport::SegWqe> work = {write_wqe(4097, roce::IbMtu::Mtu1024),
                                                  write_wqe(100, roce::IbMtu::Mtu256)};
    ModelConfig cpp, rtl, rtl_slow_cpp;
    rtl.req_seg.impl = rtl_slow_cpp.req_seg.impl = BlockImpl::rtl;
    rtl_slow_cpp.requester.cycles_per_packet = 9;  // the C++ model's figure: not used with the RTL
    const uint64_t P = uint64_t(1e6 / cpp.clock.freq_mhz + 0.5);
    const SegRun c = run_seg(cpp, work), r = run_seg(rtl, work), r9 = run_seg(rtl_slow_cpp, work);
    REQUIRE(c.out.size() == 6);
    REQUIRE(r.out.size() == 6);
    REQUIRE(r9.out.size() == 6);
    CHECK(c.wqes == 0);
    CHECK(r.wqes == 2);
    CHECK(r.packets == 6);
    CHECK(r.mismatches == 0);
    CHECK(r.dumps.empty());
    CHECK(r.latency == 2);  // the descriptor's edge, then the first packet's
    // C++: cycles_per_packet (2) per packet. RTL: the first packet of a WQE
    // 2 edges after its descriptor, the rest one per edge.
    const uint64_t rtl_at[] = {2, 3, 4, 5, 6, 8};
    for (size_t i = 0; i < 6; ++i) {
        INFO("packet " << i);
        CHECK(c.out[i].t_ps == 2 * (i + 1) * P);
        CHECK(r.out[i].t_ps == rtl_at[i] * P);
        CHECK(r9.out[i].t_ps == r.out[i].t_ps);
        CHECK(r.out[i].item.f.bytes == c.out[i].item.f.bytes);  // the datapath's packets go out
    }
}

TEST_CASE("requester: with req_seg.impl = rtl a full queue to TX build holds the segmentation RTL's m_ready_i low, "
          "the low edges are the requester's stall, and the packets later by exactly them",
          "[model][block][requester][rtl][backpressure]") {
    // One 20-packet WRITE (PMTU 256). The queue to TX build holds 16; TX
    // build (the monitor) takes nothing before 40.5 cycles. With room,
    // packet k leaves on edge k + 2 (the descriptor's edge, then one per
    // edge): packets 0..15 at 2..17 cycles fill the queue. Packet 16's edges
    // start at 17 with the queue full: m_ready_i is low on every edge before
    // TX build takes an entry (edges 18..40: 23 of them), the RTL holding
    // packet 16 on its outputs, and the edge at 41 takes it: packets 16..19
    // leave on edges 41..44, each exactly 23 later than with room (18..21).
    // With TX build starting on an edge (40) the edge at 40 sees the room
    // (queues hand over in zero time): 22 low edges. Nothing lost, nothing
    // reordered. (With m_ready_i held high, as before, packet 16 went the
    // moment TX build took one, at 40.5, after a 22.5-cycle stall.)
    const transport::SegWqe w = write_wqe(20 * 256, roce::IbMtu::Mtu256);
    ModelConfig rtl;
    rtl.req_seg.impl = BlockImpl::rtl;
    const uint64_t P = uint64_t(1e6 / rtl.clock.freq_mhz + 0.5);
    struct Run {
        std::vector<tb::Seen<FrameTok>> out;
        uint64_t ready_low = 0, rtl_low = 0, rtl_held = 0, stall_ps = 0, busy_ps = 0, mismatches = 0, depth = 0;
    };
    auto run = [&](uint64_t txb_from) {
        tb::BlockBench<RequesterBlock> b(rtl);
        b.drive(b.nic().wqe_to_req, 0, segmented(w));
        const auto& out = b.watch(b.nic().req_to_txb, txb_from);
        b.run();
        Run r;
        r.out = out;
        r.ready_low = b.nic().req_seg_rtl_ready_low;
        r.rtl_low = b.nic().req_seg_rtl->ready_low_edges();
        r.rtl_held = b.nic().req_seg_rtl->held_edges();
        r.stall_ps = b.nic().blk[Nic::kRequester].stall_ps;
        r.busy_ps = b.nic().blk[Nic::kRequester].busy_ps;
        r.mismatches = b.nic().req_seg_rtl_mismatch;
        r.depth = b.nic().req_to_txb.depth();
        return r;
    };
    const Run free = run(0);
    REQUIRE(free.out.size() == 20);
    CHECK(free.mismatches == 0);
    // With room: m_ready_i never low, no stall.
    CHECK(free.ready_low == 0);
    CHECK(free.rtl_low == 0);
    CHECK(free.stall_ps == 0);
    for (const auto& [from, low] : {std::pair<uint64_t, uint64_t>{40 * P + P / 2, 23}, {40 * P, 22}}) {
        INFO("TX build from " << from << " ps");
        const Run full = run(from);
        REQUIRE(full.depth == 16);  // what the timeline above assumes
        REQUIRE(full.out.size() == 20);
        CHECK(full.mismatches == 0);
        // Full: `low` edges with m_ready_i low, the RTL holding its packet on
        // each, each a cycle of the requester's stall.
        CHECK(full.ready_low == low);
        CHECK(full.rtl_low == low);
        CHECK(full.rtl_held == low);
        CHECK(full.stall_ps == low * P);
        CHECK(full.busy_ps == free.busy_ps + low * P);  // the stall is inside the busy time, as a blocked write's is
        for (size_t k = 0; k < 20; ++k) {
            INFO("packet " << k);
            CHECK(free.out[k].item.f.psn == ((w.first_psn + k) & 0xffffff));
            CHECK(full.out[k].item.f.psn == free.out[k].item.f.psn);  // in order
            CHECK(full.out[k].item.f.bytes == free.out[k].item.f.bytes);
            CHECK(free.out[k].t_ps == (k + 2) * P);
            // Taken by TX build when it starts (those already queued), or
            // as they leave: the held ones exactly `low` cycles later.
            const uint64_t leave = k < 16 ? (k + 2) * P : (k + 2 + low) * P;
            CHECK(full.out[k].t_ps == std::max(leave, from));
        }
    }
}

TEST_CASE("requester: a segmentation RTL that disagrees with the datapath is counted and dumped with the frame",
          "[model][block][requester][rtl]") {
    ModelConfig rtl;
    rtl.req_seg.impl = BlockImpl::rtl;
    // The datapath's record says the third packet went without AckReq and
    // with another PSN: the RTL (which agrees with transport::seg_packet)
    // disagrees there.
    TxnPtr t = segmented(write_wqe(3 * 1024, roce::IbMtu::Mtu1024));
    const transport::SegPacket right = t->rec.frames[2].seg;
    t->rec.frames[2].seg.ack_req = false;
    t->rec.frames[2].bytes = request_frame(t->rec.frames[2].seg);
    const std::vector<uint8_t> built = t->rec.frames[2].bytes;
    const SegRun r = run_seg(rtl, std::vector<TxnPtr>{t});
    CHECK(r.wqes == 1);
    CHECK(r.mismatches == 1);
    CHECK(r.skipped == 0);
    // The pipeline follows the RTL: the frame that left carries its AckReq,
    // the ICRC recomputed, the rest as built.
    REQUIRE(r.out.size() == 3);
    CHECK(r.out[2].item.f.bytes != built);
    CHECK(r.out[2].item.f.bytes == request_frame(right));
    CHECK(sent(r.out[2].item.f.bytes).hdr.bth.ack_req);
    REQUIRE(r.dumps.size() == 1);
    CHECK(r.dumps[0].rfind("req_seg at cycle ", 0) == 0);
    CHECK(r.dumps[0].find("WQE opcode 0, 3072 bytes, PMTU 1024, packets 0+3: packet 2 from the RTL opcode 08 psn "
                          "000000 payload 2048+1024 reth 0 va 0000000000000000 rkey 00000000 dma_len 0 ack_req 1 se 0, "
                          "from the datapath opcode 08 psn 000000 payload 2048+1024 reth 0 va 0000000000000000 rkey "
                          "00000000 dma_len 0 ack_req 0 se 0") != std::string::npos);
    CHECK(r.dumps[0].find("frame (" + std::to_string(1024 + 58) + " bytes)") != std::string::npos);
}

TEST_CASE("requester: a segmentation RTL descriptor the frame cannot carry is counted, and the frame goes as built",
          "[model][block][requester][rtl]") {
    ModelConfig rtl;
    rtl.req_seg.impl = BlockImpl::rtl;
    // The datapath's record (and the frames built from it) says packet 1 of
    // a three-packet WRITE was a FIRST with a RETH, and packet 2 carried
    // 1000 bytes: the RTL's MIDDLE has no RETH to put the frame's in (the
    // header layouts differ), and its 1024-byte payload is not the frame's.
    // Packet 0 agrees and goes as built too.
    TxnPtr t = segmented(write_wqe(3 * 1024, roce::IbMtu::Mtu1024));
    transport::SegPacket& first = t->rec.frames[1].seg;
    first.opcode = roce::op::RC_RDMA_WRITE_FIRST;
    first.reth = true;
    first.reth_va = 0x1000;
    first.reth_rkey = 7;
    first.reth_dma_len = 3 * 1024;
    t->rec.frames[2].seg.payload_len = 1000;
    std::vector<std::vector<uint8_t>> built;
    for (TxFrameRec& f : t->rec.frames) built.push_back(f.bytes = request_frame(f.seg));
    const SegRun r = run_seg(rtl, std::vector<TxnPtr>{t});
    CHECK(r.wqes == 1);
    CHECK(r.mismatches == 1);  // one WQE, dumped once, with the first packet sent as built and why
    REQUIRE(r.dumps.size() == 1);
    CHECK(r.dumps[0].find("; packet 1 sent as built: the RTL's opcode has another header layout than the frame's") !=
          std::string::npos);
    CHECK(r.skipped == 2);
    REQUIRE(r.out.size() == 3);
    for (size_t k = 0; k < 3; ++k) CHECK(r.out[k].item.f.bytes == built[k]);
}

TEST_CASE("requester: one's own segmentation RTL with a planted bug, named in the config, is caught on every WQE "
          "it gets wrong",
          "[model][block][requester][rtl][own_rtl]") {
    // examples/roce_req_seg_buggy.sv named as a designer names theirs
    // (req_seg.rtl_sources, req_seg.rtl_top): built at run time into a
    // fresh cache, then found there. Its bug: a message that fills its last
    // packet exactly is segmented as one byte longer.
    namespace fs = std::filesystem;
    const std::string cache = SIMNIC_OWN_REQ_SEG_TEST_CACHE;
    fs::remove_all(cache);
    setenv("XDG_CACHE_HOME", cache.c_str(), 1);
    ModelConfig buggy, ref;
    buggy.req_seg.impl = ref.req_seg.impl = BlockImpl::rtl;
    buggy.req_seg.rtl_sources = {std::string(SIMNIC_REQ_SEG_RTL_DIR) + "/examples/roce_req_seg_buggy.sv"};
    buggy.req_seg.rtl_top = "roce_req_seg_buggy";
    // Exact multiples of the PMTU (caught) and not (fine).
    const std::vector<transport::SegWqe> work = {
        write_wqe(4096, roce::IbMtu::Mtu1024), write_wqe(4097, roce::IbMtu::Mtu1024),
        write_wqe(256, roce::IbMtu::Mtu256), write_wqe(255, roce::IbMtu::Mtu256), write_wqe(1, roce::IbMtu::Mtu4096)};
    const uint64_t runs = rtl::verilator_runs();
    const SegRun r = run_seg(buggy, work), want = run_seg(ref, work);
    CHECK(rtl::verilator_runs() == runs + 2);  // the port check's pass and the build's
    CHECK_FALSE(r.cache_hit);
    CHECK(r.wqes == 5);
    CHECK(r.mismatches == 2);
    REQUIRE(r.dumps.size() == 2);
    // The 4 KiB WRITE: its RETH asks for a byte too many (and its fourth
    // packet would go out as a MIDDLE); the 256-byte one is a FIRST where
    // the datapath sent an ONLY.
    CHECK(r.dumps[0].find("WQE opcode 0, 4096 bytes, PMTU 1024, packets 0+4: packet 0 from the RTL opcode 06") !=
          std::string::npos);
    CHECK(r.dumps[0].find("dma_len 4097 ack_req 0 se 0, from the datapath opcode 06") != std::string::npos);
    CHECK(r.dumps[1].find("WQE opcode 0, 256 bytes, PMTU 256, packets 0+1: packet 0 from the RTL opcode 06") !=
          std::string::npos);
    CHECK(want.mismatches == 0);
    REQUIRE(r.out.size() == want.out.size());
    for (size_t i = 0; i < r.out.size(); ++i) CHECK(r.out[i].t_ps == want.out[i].t_ps);  // the reference's timing
    // The pipeline follows the RTL: those WQEs' frames carry its fields,
    // every ICRC valid; the others, and the reference's, are the datapath's.
    std::vector<std::vector<uint8_t>> built;
    for (const transport::SegWqe& w : work) {
        const TxnPtr t = segmented(w);
        for (const TxFrameRec& f : t->rec.frames) built.push_back(f.bytes);
    }
    REQUIRE(r.out.size() == 12);
    REQUIRE(built.size() == 12);
    CHECK(r.skipped == 0);
    CHECK(want.skipped == 0);
    for (size_t i = 0; i < 12; ++i) {
        INFO("packet " << i);
        CHECK(want.out[i].item.f.bytes == built[i]);
        const bool followed = i == 0 || i == 3 || i == 9;
        CHECK((r.out[i].item.f.bytes == built[i]) == !followed);
        sent(r.out[i].item.f.bytes);
    }
    // The 4 KiB WRITE: its FIRST asks for 4097 bytes, its last packet is a
    // MIDDLE without AckReq; the 256-byte one a FIRST for 257 bytes.
    const roce::Packet first = sent(r.out[0].item.f.bytes), last = sent(r.out[3].item.f.bytes),
                       only = sent(r.out[9].item.f.bytes);
    CHECK(first.hdr.bth.opcode == roce::op::RC_RDMA_WRITE_FIRST);
    CHECK(first.hdr.reth.dma_len == 4097);
    CHECK(first.hdr.reth.va == 0x7f0000001000);
    CHECK(last.hdr.bth.opcode == roce::op::RC_RDMA_WRITE_MIDDLE);
    CHECK_FALSE(last.hdr.bth.ack_req);
    CHECK(last.hdr.bth.psn == 0x000001);
    CHECK(r.out[3].item.f.opcode == roce::op::RC_RDMA_WRITE_MIDDLE);  // what the waveform shows
    CHECK(only.hdr.bth.opcode == roce::op::RC_RDMA_WRITE_FIRST);
    CHECK(only.hdr.reth.dma_len == 257);
    CHECK_FALSE(only.hdr.bth.ack_req);
    // Again: from the cache, with no Verilator to run.
    const SegRun again = run_seg(buggy, work);
    CHECK(rtl::verilator_runs() == runs + 2);
    CHECK(again.cache_hit);
    CHECK(again.mismatches == 2);
    // A retry: the transport resends the 4 KiB WRITE from its third packet
    // (Requester::retry, its ACK timer having fired: the wrong last packet
    // had no AckReq). The engine rebuilds the packets, which pass the RTL
    // again as a transaction resumed mid-message: the same wrong fields go
    // out again.
    transport::SegWqe retry = write_wqe(4096, roce::IbMtu::Mtu1024);
    retry.start_pkt = 2;
    retry.count = 2;
    const SegRun r2 = run_seg(buggy, std::vector<transport::SegWqe>{retry});
    CHECK(r2.wqes == 1);
    CHECK(r2.mismatches == 1);
    CHECK(r2.skipped == 0);
    REQUIRE(r2.out.size() == 2);
    CHECK(r2.out[0].item.f.bytes == built[2]);
    const roce::Packet resent = sent(r2.out[1].item.f.bytes);
    CHECK(resent.hdr.bth.opcode == roce::op::RC_RDMA_WRITE_MIDDLE);
    CHECK_FALSE(resent.hdr.bth.ack_req);
    CHECK(r2.out[1].item.f.bytes == r.out[3].item.f.bytes);
}
