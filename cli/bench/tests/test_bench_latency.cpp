// Latency that adds up: each latency a designer adds to the model (PHY and
// cable, the doorbell's MMIO write, a doorbell that carries its WQE, inline
// data, receive-WQE prefetch, the application's poll) changes a 2-byte
// message's latency by exactly what it says, and together by the sum of
// each alone. The figures are the bench's (doorbell rung to the send CQE
// seen by the host), one QP, one message in flight.
#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "bench_checks.h"

using namespace simnic;
using namespace simnic::model;

namespace {

struct Knobs {
    uint32_t phy_ns = 0, cable_ns = 0, mmio_ns = 0, wqe_by_mmio = 0, prefetch = 0, poll_ns = 0, cut_through = 0, msix_ns = 0;
    uint32_t place_before_verdict = 0;
    bool inline_data = false, events = false;
};

BenchResult run(BenchOp op, const Knobs& k, uint32_t size = 2) {
    BenchSpec s;
    s.op = op;
    s.size = size;
    s.depth = 1;
    s.messages = 200;
    s.inline_data = k.inline_data;
    s.cfg.mac.phy_latency_ns = k.phy_ns;
    s.cfg.mac.cable_ns = k.cable_ns;
    s.cfg.doorbell.mmio_ns = k.mmio_ns;
    s.cfg.doorbell.wqe_by_mmio_bytes = k.wqe_by_mmio;
    s.cfg.doorbell.recv_wqe_prefetch = k.prefetch;
    s.cfg.cq.poll_ns = k.poll_ns;
    s.cfg.pipeline.cut_through = k.cut_through;
    s.cfg.pipeline.place_before_verdict = k.place_before_verdict;
    s.cfg.cq.msix_ns = k.msix_ns;
    s.events = k.events;
    const BenchResult r = bench_checks::run_ok(s);
    // One message at a time: every message takes the same time.
    REQUIRE(r.lat_min_ns == Approx(r.lat_p99_ns).margin(0.01));
    return r;
}

// A statistic of the run; per-purpose byte counts are listed only when not 0.
double stat(const BenchResult& r, const std::string& name) { return bench_checks::stat_or(r, name, 0); }

// A DMA read of `bytes` that finds the link idle: the round trip, then its
// completion on the inbound link with one TLP overhead (bytes <= MPS).
double read_ns(const ModelConfig& c, double bytes) {
    return c.dma.read_latency_ns + (bytes + c.dma.tlp_overhead_bytes) * 8 / c.dma.bandwidth_gbps;
}

}  // namespace

TEST_CASE("latency: each added latency changes a 2-byte WRITE by what it says", "[model][bench][latency]") {
    const ModelConfig c;
    const BenchResult base = run(BenchOp::Write, {});
    const double l0 = base.lat_median_ns;
    const double wqe_bytes = stat(base, "dma.read_bytes.wqe_fetch") / double(base.messages);
    REQUIRE(wqe_bytes >= 64);

    Knobs k;
    k.phy_ns = 100;
    k.cable_ns = 5;
    // The WRITE crosses TX PHY, cable and RX PHY, and so does its ACK.
    CHECK(run(BenchOp::Write, k).lat_median_ns == Approx(l0 + 2 * (2 * 100 + 5)).margin(0.5));
    k = {};
    k.mmio_ns = 150;
    CHECK(run(BenchOp::Write, k).lat_median_ns == Approx(l0 + 150).margin(0.5));
    k = {};
    k.poll_ns = 50;
    CHECK(run(BenchOp::Write, k).lat_median_ns == Approx(l0 + 50).margin(0.5));
    // The WQE comes with the doorbell: its fetch is gone.
    k = {};
    k.wqe_by_mmio = 256;
    const BenchResult by_mmio = run(BenchOp::Write, k);
    CHECK(by_mmio.lat_median_ns == Approx(l0 - read_ns(c, wqe_bytes)).margin(0.5));
    CHECK(stat(by_mmio, "doorbell.wqe_by_mmio") == by_mmio.messages);
    // A doorbell whose WQE is larger than the MMIO write carries is fetched.
    k.wqe_by_mmio = uint32_t(wqe_bytes) - 1;
    CHECK(run(BenchOp::Write, k).lat_median_ns == Approx(l0).margin(0.5));
    // Inline data: the payload's read is gone (2 bytes, one completion).
    k = {};
    k.inline_data = true;
    const BenchResult inl = run(BenchOp::Write, k);
    CHECK(inl.lat_median_ns == Approx(l0 - read_ns(c, 2)).margin(0.5));
    CHECK(stat(inl, "dma.read_bytes.payload") == 0);
}

TEST_CASE("latency: receive-WQE prefetch takes the responder's WQE read off a SEND's path", "[model][bench][latency]") {
    const ModelConfig c;
    const BenchResult base = run(BenchOp::Send, {});
    const double rwqe_bytes = stat(base, "dma.read_bytes.recv_wqe") / double(base.messages);
    Knobs k;
    k.prefetch = 1;
    const BenchResult pf = run(BenchOp::Send, k);
    CHECK(pf.lat_median_ns == Approx(base.lat_median_ns - read_ns(c, rwqe_bytes)).margin(0.5));
    // Every receive WQE was read when posted, none when its SEND came.
    CHECK(stat(pf, "doorbell.recv_wqe_prefetch_misses") == 0);
    CHECK(stat(pf, "doorbell.recv_wqe_prefetch_hits") == pf.messages);
    // The same reads, earlier: in the measured window, the receive WQE
    // posted for the message after the last is read already.
    CHECK(stat(pf, "dma.read_bytes.recv_wqe") >= stat(base, "dma.read_bytes.recv_wqe"));
    CHECK(stat(pf, "dma.read_bytes.recv_wqe") <= stat(base, "dma.read_bytes.recv_wqe") + rwqe_bytes);
    // A WRITE consumes no receive WQE: nothing changes.
    CHECK(run(BenchOp::Write, k).lat_median_ns == Approx(run(BenchOp::Write, {}).lat_median_ns).margin(0.01));
}

TEST_CASE("latency: together, the added latencies are the sum of each alone", "[model][bench][latency]") {
    // What docs/model.md builds a ConnectX-class latency from.
    for (BenchOp op : {BenchOp::Write, BenchOp::Send}) {
        INFO(to_string(op));
        const double l0 = run(op, {}).lat_median_ns;
        Knobs all;
        all.phy_ns = 100;
        all.cable_ns = 5;
        all.mmio_ns = 150;
        all.wqe_by_mmio = 256;
        all.prefetch = 1;
        all.poll_ns = 50;
        all.inline_data = true;
        double sum = 0;
        for (int i = 0; i < 7; ++i) {
            Knobs one;
            if (i == 0) one.phy_ns = all.phy_ns, one.cable_ns = all.cable_ns;
            if (i == 1) one.mmio_ns = all.mmio_ns;
            if (i == 2) one.wqe_by_mmio = all.wqe_by_mmio;
            if (i == 3) one.prefetch = all.prefetch;
            if (i == 4) one.poll_ns = all.poll_ns;
            if (i == 5) one.inline_data = true;
            if (i == 6) continue;
            sum += run(op, one).lat_median_ns - l0;
        }
        CHECK(run(op, all).lat_median_ns == Approx(l0 + sum).margin(1.0));
    }
}

namespace {

// The time from TX build starting on a frame of `bytes` to the ICRC
// check's verdict on it (looped back, nothing else in the way), ps, as
// docs/model.md says each stage costs.
struct FramePath {
    uint64_t store_and_forward, cut_through;
};
FramePath frame_path(const ModelConfig& c, uint32_t bytes) {
    const uint64_t P = uint64_t(c.clock_period_ps() + 0.5);
    const uint64_t B = c.beats(bytes) * P;
    const uint64_t line = std::max<uint64_t>(B, uint64_t(c.line_time_ps(bytes) + 0.5));
    const uint64_t Li = c.icrc.latency_cycles * P, Lp = c.parser.latency_cycles * P;
    FramePath f;
    // Each stage when all of the frame is there: TX build's beats and ICRC,
    // the line out of MAC TX and again into MAC RX, the parser's beats and
    // latency, the ICRC check's.
    f.store_and_forward = (B + Li) + line + line + (B + Lp) + (B + Li);
    // Streamed: MAC TX starts on TX build's first beat (late enough that the
    // last beat, ICRC in, is there a cycle before the line needs it) and MAC
    // RX receives while it sends; the parser and the ICRC check each pass
    // the last beat a cycle later, and the verdict is the ICRC latency after
    // that (the parser's header vector is out long before).
    f.cut_through = std::max(P + line, B + Li + P) + 2 * P + Li;
    return f;
}

// Frame bytes of a RoCE v2 packet over IPv4 (as the bench's GIDs are):
// Ethernet, IPv4, UDP, BTH, `ext` bytes of extension headers, the payload
// padded to 4, the ICRC.
uint32_t frame_bytes(uint32_t ext, uint32_t payload) { return 14 + 20 + 8 + 12 + ext + (payload + 3) / 4 * 4 + 4; }

}  // namespace

TEST_CASE("latency: cut-through takes the streamed stages' frame time off, store-and-forward is unchanged",
          "[model][bench][latency][cut_through]") {
    const ModelConfig c;
    REQUIRE(c.pipeline.cut_through == 0);  // store-and-forward stays the default
    Knobs ct;
    ct.cut_through = 1;
    const double sf2 = run(BenchOp::Send, {}).lat_median_ns, ct2 = run(BenchOp::Send, ct).lat_median_ns;
    const double sf4k = run(BenchOp::Send, {}, 4096).lat_median_ns, ct4k = run(BenchOp::Send, ct, 4096).lat_median_ns;
    const FramePath small = frame_path(c, frame_bytes(0, 2));  // a 2-byte SEND, and an ACK (AETH, no payload)
    const FramePath ack = frame_path(c, frame_bytes(4, 0));
    const FramePath big = frame_path(c, frame_bytes(0, 4096));
    // Store-and-forward: the 4 KiB SEND's frame crosses five stages whole.
    // This is the 1.67 us that docs/model.md cites, and cut-through = 0
    // keeps it.
    CHECK(sf4k - sf2 == Approx(1667.0).margin(1.0));
    // A 2-byte SEND: its frame and its ACK each save exactly what the model
    // says.
    CHECK(sf2 - ct2 ==
          Approx(double(small.store_and_forward - small.cut_through + ack.store_and_forward - ack.cut_through) / 1000)
              .margin(0.01));
    // A 4 KiB SEND: its frame saves what the model says, and TX build,
    // streaming the payload as it comes in (faster than its beats: PCIe at
    // 200 Gb/s, the datapath 128), starts on its first bytes instead of its
    // last: it saves the payload's time on the inbound PCIe link too (its
    // 4096 bytes in 16 TLPs of 256, back to back). The ACK's saving does
    // not show, the send CQE waiting for the payload's write to the receive
    // buffer on the outbound PCIe link either way.
    const double pcie_ns = (4096 + 16.0 * c.dma.tlp_overhead_bytes) * 8 / c.dma.bandwidth_gbps;
    REQUIRE(c.dma.max_payload_bytes == 256);
    REQUIRE(c.dma.bandwidth_gbps > c.raw_mac_gbps());
    CHECK(sf4k - ct4k == Approx(double(big.store_and_forward - big.cut_through) / 1000 + pcie_ns).margin(0.01));
    // So with cut-through a 4 KiB SEND costs about one frame time more than
    // a 2-byte one, plus what cannot overlap: the payload's write after the
    // ICRC verdict (the payload waits on chip for it).
    const double frame_ns = c.line_time_ps(frame_bytes(0, 4096)) / 1000;
    INFO("4 KiB - 2 bytes: store-and-forward " << sf4k - sf2 << " ns, cut-through " << ct4k - ct2 << " ns");
    CHECK(ct4k - ct2 > frame_ns);
    CHECK(ct4k - ct2 < frame_ns + pcie_ns);
    CHECK(sf4k - sf2 > 3 * (ct4k - ct2));
}

TEST_CASE("latency: placing the payload before the ICRC verdict overlaps its write with the frame",
          "[model][bench][latency][cut_through][place_before_verdict]") {
    const ModelConfig c;
    REQUIRE(c.pipeline.place_before_verdict == 0);  // "buffer until checked" stays the default
    Knobs ct;
    ct.cut_through = 1;
    Knobs pv = ct;
    pv.place_before_verdict = 1;
    const BenchResult ct_send = run(BenchOp::Send, ct, 4096), pv_send = run(BenchOp::Send, pv, 4096);
    const BenchResult ct_write = run(BenchOp::Write, ct, 4096), pv_write = run(BenchOp::Write, pv, 4096);
    const BenchResult ct_small = run(BenchOp::Write, ct, 2), pv_small = run(BenchOp::Write, pv, 2);
    Knobs ct_pf = ct, pv_pf = pv;
    ct_pf.prefetch = pv_pf.prefetch = 1;
    const BenchResult ct_send_pf = run(BenchOp::Send, ct_pf, 4096), pv_send_pf = run(BenchOp::Send, pv_pf, 4096);
    INFO("SEND 4096: " << ct_send.lat_median_ns << " -> " << pv_send.lat_median_ns << "; with prefetch "
                       << ct_send_pf.lat_median_ns << " -> " << pv_send_pf.lat_median_ns << "; WRITE 4096: "
                       << ct_write.lat_median_ns << " -> " << pv_write.lat_median_ns << "; WRITE 2: "
                       << ct_small.lat_median_ns << " -> " << pv_small.lat_median_ns);
    // The responder decides on the header vector instead of the verdict:
    // a 2-byte WRITE's verdict comes later than the decision takes (QPC
    // lookup and cycles_per_packet), so it saves exactly that, its ACK and
    // CQE still waiting for the verdict.
    const double decide_ns = double(c.qpc_cache.hit_cycles + c.responder.cycles_per_packet) * c.clock_period_ps() / 1000;
    CHECK(ct_small.lat_median_ns - pv_small.lat_median_ns == Approx(decide_ns).margin(0.01));
    // A 4 KiB WRITE also has its payload's write mostly done by the
    // verdict: the send CQE (on the same outbound link, the bench being
    // looped back) no longer queues behind it. At most the whole write's
    // link time more.
    const double pcie_ns = (4096 + 16.0 * c.dma.tlp_overhead_bytes) * 8 / c.dma.bandwidth_gbps;
    const double write_saved = ct_write.lat_median_ns - pv_write.lat_median_ns;
    CHECK(write_saved > decide_ns + pcie_ns / 2);
    CHECK(write_saved <= decide_ns + pcie_ns + 0.01);
    // A 4 KiB SEND whose receive WQE is on chip (prefetch) saves the same
    // way; without prefetch, its receive WQE's read also starts on the
    // header, overlapping the frame's stream, and it saves more.
    const double send_pf_saved = ct_send_pf.lat_median_ns - pv_send_pf.lat_median_ns;
    CHECK(send_pf_saved > decide_ns + pcie_ns / 2);
    CHECK(send_pf_saved <= decide_ns + pcie_ns + 0.01);
    CHECK(ct_send.lat_median_ns - pv_send.lat_median_ns > write_saved + c.line_time_ps(frame_bytes(0, 4096)) / 1000 / 2);
    // Every request's payload was placed before its verdict, none dropped.
    CHECK(stat(pv_send, "rx.placed_before_verdict") == pv_send.messages);
    CHECK(stat(pv_send, "rx.dropped_after_placement") == 0);
    CHECK(stat(pv_write, "rx.placed_before_verdict") == pv_write.messages);
}

TEST_CASE("latency: a CQ armed for events costs its EQE and MSI-X message, then cq.msix_ns", "[model][bench][latency][msix]") {
    const ModelConfig c;
    REQUIRE(c.cq.msix_ns == 0);
    const BenchResult polled = run(BenchOp::Write, {});
    CHECK(stat(polled, "cq.interrupts") == 0);
    Knobs k;
    k.events = true;
    const BenchResult woken = run(BenchOp::Write, k);
    // Every send CQE found its CQ armed (the host re-arms as it drains, one
    // message at a time): one interrupt each, and its completion EQE.
    CHECK(stat(woken, "cq.interrupts") == woken.messages);
    CHECK(stat(woken, "eq.eqes") == woken.messages);
    // The EQE and the MSI-X message are posted writes behind the CQE on the
    // outbound link: the application is woken their link time after the
    // CQE is in host memory (the write latency overlaps).
    auto link_ns = [&](double bytes) { return (bytes + c.dma.tlp_overhead_bytes) * 8 / c.dma.bandwidth_gbps; };
    const double msg_ns = link_ns(c.eq.eqe_bytes) + link_ns(4);
    CHECK(woken.lat_median_ns == Approx(polled.lat_median_ns + msg_ns).margin(0.01));
    CHECK(stat(woken, "cq.interrupt_wake_avg") == Approx(msg_ns).margin(0.01));
    // cq.msix_ns adds exactly itself, and shows in the interrupt's figure;
    // a polling host does not see it.
    for (uint32_t ns : {250u, 1000u, 4000u}) {
        INFO("cq.msix_ns = " << ns);
        k.msix_ns = ns;
        const BenchResult r = run(BenchOp::Write, k);
        CHECK(r.lat_median_ns == Approx(woken.lat_median_ns + ns).margin(0.01));
        CHECK(stat(r, "cq.interrupt_wake_avg") == Approx(msg_ns + ns).margin(0.01));
        CHECK(stat(r, "cq.interrupts") == r.messages);
        Knobs p;
        p.msix_ns = ns;
        CHECK(run(BenchOp::Write, p).lat_median_ns == Approx(polled.lat_median_ns).margin(0.01));
    }
    // With the poll's own cost on top, the two add.
    k.msix_ns = 1000;
    k.poll_ns = 50;
    CHECK(run(BenchOp::Write, k).lat_median_ns == Approx(woken.lat_median_ns + 1050).margin(0.01));
}

TEST_CASE("latency: an event-driven host keeps many messages in flight without losing a wake-up", "[model][bench][msix]") {
    for (BenchOp op : {BenchOp::Write, BenchOp::Read, BenchOp::Send}) {
        INFO(to_string(op));
        BenchSpec s;
        s.op = op;
        s.size = 64;
        s.qps = 4;
        s.depth = 16;
        s.messages = 2000;
        s.events = true;
        s.cfg.cq.msix_ns = 500;
        BenchResult r;
        std::string err;
        REQUIRE(run_bench(s, r, err));
        CHECK(r.errors == 0);
        CHECK(r.messages == 2000);
        // Fewer interrupts than CQEs: a woken host drains what came while
        // it was waking.
        CHECK(stat(r, "cq.interrupts") > 0);
        CHECK(stat(r, "cq.interrupts") < 2000);
    }
}

namespace {

BenchResult run_rate(BenchOp op, uint32_t qps, uint32_t contexts) {
    BenchSpec s;
    s.op = op;
    s.size = 64;
    s.qps = qps;
    s.depth = 16;
    s.messages = 1000;
    s.cfg.responder.contexts = contexts;
    s.cfg.completer.contexts = contexts;
    BenchResult r;
    std::string err;
    REQUIRE(run_bench(s, r, err));
    REQUIRE(r.errors == 0);
    return r;
}

}  // namespace

// Without receive-WQE prefetch a SEND's responder waits for its receive
// WQE's DMA read (the round trip, dma.read_latency_ns, and its completion)
// before the packet is done; a QP's packets wait in turn (IBA order), so
// one QP's SENDs are at most one per read. Different QPs' reads overlap in
// the responder's contexts: four QPs come close to four times one QP's
// rate. With one context (the serialisation the responder had before) they
// do not.
TEST_CASE("rates: small SENDs scale with QPs, the responder's receive-WQE reads overlap across QPs",
          "[model][bench][rate]") {
    const ModelConfig c;
    REQUIRE(c.responder.contexts >= 4);
    const double read = read_ns(c, 64);  // one receive WQE's read alone
    const BenchResult one = run_rate(BenchOp::Send, 1, c.responder.contexts);
    const BenchResult four = run_rate(BenchOp::Send, 4, c.responder.contexts);
    INFO("1 QP " << one.msg_rate_mps << " M/s, 4 QPs " << four.msg_rate_mps << " M/s, read " << read << " ns");
    // One QP: bound by one read per SEND (a little more: the decision, the ACK).
    CHECK(one.msg_rate_mps <= 1000.0 / read);
    CHECK(one.msg_rate_mps > 0.8 * 1000.0 / read);
    // Four QPs: their reads overlap, nearly four times the rate.
    CHECK(four.msg_rate_mps > 3.5 * one.msg_rate_mps);
    // One context: the QPs' reads are in series again, as one QP's.
    const BenchResult serial = run_rate(BenchOp::Send, 4, 1);
    INFO("4 QPs, one context: " << serial.msg_rate_mps << " M/s");
    CHECK(serial.msg_rate_mps < 1.2 * one.msg_rate_mps);
    // WRITEs need no receive WQE: one context or many, about the same.
    const BenchResult w16 = run_rate(BenchOp::Write, 4, c.responder.contexts);
    const BenchResult w1 = run_rate(BenchOp::Write, 4, 1);
    CHECK(w16.msg_rate_mps == Approx(w1.msg_rate_mps).epsilon(0.1));
}

// Interrupt moderation (cq.moderation_count, cq.moderation_period_ns): an
// armed CQ's event waits for N CQEs or T ns after the CQE that raised it.
TEST_CASE("latency: interrupt moderation holds an event for its count or its period", "[model][bench][msix]") {
    const ModelConfig c;
    REQUIRE(c.cq.moderation_count == 0);
    REQUIRE(c.cq.moderation_period_ns == 0);
    Knobs k;
    k.events = true;
    const BenchResult woken = run(BenchOp::Write, k);
    // One message at a time: no second CQE comes, so the period decides.
    // The EQE and the MSI-X message are written when it ends, so they take
    // the posted write's latency too (without moderation it overlaps the CQE's).
    for (uint32_t period : {1000u, 8000u}) {
        INFO("period " << period << " ns");
        BenchSpec s;
        s.op = BenchOp::Write;
        s.size = 2;
        s.depth = 1;
        s.messages = 200;
        s.events = true;
        s.cfg.cq.moderation_count = 4;
        s.cfg.cq.moderation_period_ns = period;
        BenchResult r;
        std::string err;
        REQUIRE(run_bench(s, r, err));
        CHECK(r.errors == 0);
        CHECK(r.lat_median_ns == Approx(woken.lat_median_ns + period + c.dma.write_latency_ns).margin(0.01));
        CHECK(stat(r, "cq.interrupts") == r.messages);
    }
    // Many in flight: one interrupt per 8 CQEs at most (the host drains what
    // came while it woke, and re-arms).
    BenchSpec s;
    s.op = BenchOp::Write;
    s.size = 64;
    s.qps = 1;
    s.depth = 16;
    s.messages = 2000;
    s.events = true;
    s.cfg.cq.moderation_count = 8;
    s.cfg.cq.moderation_period_ns = 100000;
    BenchResult r;
    std::string err;
    REQUIRE(run_bench(s, r, err));
    CHECK(r.errors == 0);
    CHECK(r.messages == 2000);
    CHECK(stat(r, "cq.interrupts") > 0);
    CHECK(stat(r, "cq.interrupts") <= r.messages / 8 + 1);
    CHECK(stat(r, "cq.moderated_cqes") >= 7 * stat(r, "cq.interrupts") - 7);
    // The same without moderation takes more interrupts.
    s.cfg.cq.moderation_count = 0;
    s.cfg.cq.moderation_period_ns = 0;
    BenchResult u;
    REQUIRE(run_bench(s, u, err));
    CHECK(stat(u, "cq.interrupts") > stat(r, "cq.interrupts"));
}

// Per-CQ moderation (simnic bench --cq-mod): each CQ's own count and period
// set through MODIFY_CQ, as ibv_modify_cq sets them, after the CQ is
// created. The bench reports the completions the host consumed and the
// events (interrupts) that woke it.
namespace {

BenchResult run_mod(uint32_t depth, std::optional<BenchSpec::CqModeration> mod, uint64_t messages,
                    const ModelConfig& cfg = {}) {
    BenchSpec s;  // 64-byte WRITEs (the default op), the host woken by events
    s.cfg = cfg;
    s.size = 64;
    s.depth = depth;
    s.messages = messages;
    s.events = true;
    s.cq_mod = mod;
    const BenchResult r = bench_checks::run_ok(s);
    // A WRITE's one CQE (the requester's): the host consumed every one.
    REQUIRE(r.completions == messages);
    return r;
}

}  // namespace

TEST_CASE("bench --cq-mod: per-CQ moderation through MODIFY_CQ, completions per event", "[model][bench][msix][cq_mod]") {
    const ModelConfig c;
    // One message at a time without moderation: an event per completion.
    const BenchResult none = run_mod(1, std::nullopt, 200);
    CHECK(none.events == none.completions);
    CHECK(stat(none, "cq.moderated_cqes") == 0);
    // 0/0 (moderation off, as ibv_modify_cq(0, 0)): the same.
    const BenchResult off = run_mod(1, BenchSpec::CqModeration{0, 0}, 200);
    CHECK(off.events == off.completions);
    CHECK(off.lat_median_ns == Approx(none.lat_median_ns).margin(0.01));
    // One at a time, a count of 4: no second CQE comes, the period decides,
    // and costs exactly its length and the EQE's posted write.
    for (uint16_t period_us : {uint16_t(2), uint16_t(8)}) {
        INFO("period " << period_us << " us");
        const BenchResult r = run_mod(1, BenchSpec::CqModeration{4, period_us}, 200);
        CHECK(r.events == r.completions);
        CHECK(r.lat_median_ns ==
              Approx(none.lat_median_ns + period_us * 1000.0 + c.dma.write_latency_ns).margin(0.01));
    }

    // 16 in flight on one QP, a long period: each held event waits for its
    // count, so completions per event grow with the count until the host,
    // which drains all it finds when woken, takes the whole depth per event.
    const BenchResult many = run_mod(16, std::nullopt, 2000);
    const double per_none = double(many.completions) / double(many.events);
    double last = per_none;
    INFO("no moderation: " << many.events << " events, " << per_none << " completions per event");
    for (uint16_t n : {uint16_t(2), uint16_t(4), uint16_t(8)}) {
        const BenchResult r = run_mod(16, BenchSpec::CqModeration{n, 1000}, 2000);
        const double per = double(r.completions) / double(r.events);
        INFO("count " << n << ": " << r.events << " events, " << per << " completions per event");
        CHECK(r.events > 0);
        CHECK(r.events <= r.completions / n + 1);  // at least n CQEs behind each event
        CHECK(per >= last);                         // never more events as the count rises
        CHECK(per <= 16.0);                         // never more than the depth per event
        CHECK(stat(r, "cq.moderated_cqes") > 0);
        if (n == 2) CHECK(per > per_none);
        if (n == 4) CHECK(per > last);
        last = per;
    }
    // A count above the depth is never reached: every event waits out the
    // period, and the latency grows by exactly the period's difference.
    const BenchResult p20 = run_mod(16, BenchSpec::CqModeration{32, 20}, 2000);
    const BenchResult p100 = run_mod(16, BenchSpec::CqModeration{32, 100}, 2000);
    CHECK(p20.lat_median_ns > many.lat_median_ns + 20000);
    CHECK(p100.lat_median_ns == Approx(p20.lat_median_ns + 80000).margin(1));
    CHECK(p100.events == p20.events);

    // The CQ's own moderation overrides the device's default
    // (cq.moderation_*): 0/0 on a moderating device is none, and the same
    // count and period through MODIFY_CQ or the keys give the same run.
    ModelConfig moderating;
    moderating.cq.moderation_count = 8;
    moderating.cq.moderation_period_ns = 1'000'000;
    const BenchResult keys = run_mod(16, std::nullopt, 2000, moderating);
    const BenchResult own = run_mod(16, BenchSpec::CqModeration{8, 1000}, 2000);
    CHECK(own.events == keys.events);
    CHECK(own.lat_median_ns == Approx(keys.lat_median_ns).margin(0.01));
    const BenchResult own_off = run_mod(16, BenchSpec::CqModeration{0, 0}, 2000, moderating);
    CHECK(own_off.events == many.events);
    CHECK(own_off.lat_median_ns == Approx(many.lat_median_ns).margin(0.01));
}

TEST_CASE("bench --cq-mod: a period beyond ibv_modify_cq's 4095 us is refused", "[model][bench][cq_mod]") {
    BenchSpec s;
    s.events = true;
    s.cq_mod = BenchSpec::CqModeration{8, 4096};
    BenchResult r;
    std::string err;
    CHECK_FALSE(run_bench(s, r, err));
    CHECK(err.find("4095") != std::string::npos);
}
