// Latency that adds up: each latency a designer adds to the model (PHY and
// cable, the doorbell's MMIO write, a doorbell that carries its WQE, inline
// data, receive-WQE prefetch, the application's poll) changes a 2-byte
// message's latency by exactly what it says, and together by the sum of
// each alone. The figures are the bench's (doorbell rung to the send CQE
// seen by the host), one QP, one message in flight.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "simnic/bench/bench.h"

using namespace simnic;
using namespace simnic::model;

namespace {

struct Knobs {
    uint32_t phy_ns = 0, cable_ns = 0, mmio_ns = 0, wqe_by_mmio = 0, prefetch = 0, poll_ns = 0;
    bool inline_data = false;
};

BenchResult run(BenchOp op, const Knobs& k) {
    BenchSpec s;
    s.op = op;
    s.size = 2;
    s.depth = 1;
    s.messages = 200;
    s.inline_data = k.inline_data;
    s.cfg.mac.phy_latency_ns = k.phy_ns;
    s.cfg.mac.cable_ns = k.cable_ns;
    s.cfg.doorbell.mmio_ns = k.mmio_ns;
    s.cfg.doorbell.wqe_by_mmio_bytes = k.wqe_by_mmio;
    s.cfg.doorbell.recv_wqe_prefetch = k.prefetch;
    s.cfg.cq.poll_ns = k.poll_ns;
    BenchResult r;
    std::string err;
    REQUIRE(run_bench(s, r, err));
    REQUIRE(r.errors == 0);
    REQUIRE(r.messages == 200);
    // One message at a time: every message takes the same time.
    REQUIRE(r.lat_min_ns == Approx(r.lat_p99_ns).margin(0.01));
    return r;
}

// A statistic of the run; per-purpose byte counts are listed only when not 0.
double stat(const BenchResult& r, const std::string& name) {
    for (const ModelStat& s : r.stats)
        if (s.name == name) return s.value;
    return 0;
}

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
