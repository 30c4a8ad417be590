// The CQE writer alone: a CQE costs one cycle and a posted DMA write of
// cq.cqe_bytes; it is visible when the DmaEngine says the write is, and not
// before the payload writes it follows; at visibility the message latency
// sample (visible - WQE start) is taken for a send CQE and on_cqe is called.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "block_harness.h"
#include "blocks/cqe_writer.h"

using namespace simnic;
using namespace simnic::model;

namespace {

CqeTok cqe(uint32_t cqn, uint32_t qpn, uint32_t wqe, bool is_send, uint64_t not_before = 0) {
    CqeTok c;
    c.cqn = cqn;
    c.qpn = qpn;
    c.wqe_index = wqe;
    c.is_send = is_send;
    c.not_before_ps = not_before;
    return c;
}

}  // namespace

TEST_CASE("cqe_writer: a CQE is visible after its DMA write, latency = visible - WQE start, on_cqe then",
          "[model][block][cqe_writer]") {
    ModelConfig slow;
    slow.dma.write_latency_ns = 900;
    slow.dma.bandwidth_gbps = 16;
    slow.cq.cqe_bytes = 128;
    for (const ModelConfig& cfg : {ModelConfig{}, slow}) {
        INFO("write latency " << cfg.dma.write_latency_ns << " ns, cqe " << cfg.cq.cqe_bytes << " B");
        const uint64_t P = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
        tb::BlockBench<CqeWriterBlock> b(cfg);
        std::vector<std::pair<uint64_t, uint32_t>> seen;  // (when, cqn) of on_cqe
        b.nic().on_cqe = [&seen](uint32_t cqn) { seen.emplace_back(sim::now_ps(), cqn); };
        const uint64_t wqe_started = 0;
        b.nic().wqe_start[wqe_key(7, 11)] = wqe_started;
        // Three CQEs at once: a send, a receive, a send whose WQE start is unknown.
        b.drive(b.nic().cq_in, {{0, cqe(4, 7, 11, true)}, {0, cqe(5, 7, 3, false)}, {0, cqe(4, 8, 1, true)}});
        b.run();

        DmaEngine dma(cfg.dma);
        std::vector<uint64_t> visible;
        for (uint64_t i = 1; i <= 3; ++i) visible.push_back(dma.write(i * P, cfg.cq.cqe_bytes, DmaPurpose::Cqe));
        REQUIRE(seen.size() == 3);
        for (size_t i = 0; i < 3; ++i) CHECK(seen[i].first == visible[i]);
        CHECK(seen[0].second == 4);
        CHECK(seen[1].second == 5);
        CHECK(seen[2].second == 4);
        // One latency sample: the send CQE whose WQE start is known.
        REQUIRE(b.nic().latency_ps.count() == 1);
        CHECK(b.nic().latency_ps.kept()[0] == visible[0] - wqe_started);
        CHECK(b.nic().wqe_start.count(wqe_key(7, 11)) == 0);  // taken
        const sim::BlockStats& st = b.nic().blk[Nic::kCqeWriter];
        CHECK(st.items == 3);
        CHECK(st.busy_ps == 3 * P);  // posted writes do not hold the block
        CHECK(b.nic().dma.stats().write_bytes[size_t(DmaPurpose::Cqe)] == 3 * cfg.cq.cqe_bytes);
    }
}

TEST_CASE("cqe_writer: a CQE is not visible before the payload writes it completes", "[model][block][cqe_writer]") {
    const ModelConfig cfg;
    const uint64_t P = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
    tb::BlockBench<CqeWriterBlock> b(cfg);
    std::vector<uint64_t> seen;
    b.nic().on_cqe = [&seen](uint32_t) { seen.push_back(sim::now_ps()); };
    const uint64_t start = 500 * P;
    b.nic().wqe_start[wqe_key(7, 1)] = start;
    DmaEngine dma(cfg.dma);
    const uint64_t own = dma.write(start + P, cfg.cq.cqe_bytes, DmaPurpose::Cqe);
    const uint64_t payload_visible = own + 12345;
    b.drive(b.nic().cq_in, start, cqe(1, 7, 1, true, payload_visible));
    b.run();
    REQUIRE(seen.size() == 1);
    CHECK(seen[0] == payload_visible);
    REQUIRE(b.nic().latency_ps.count() == 1);
    CHECK(b.nic().latency_ps.kept()[0] == payload_visible - start);
}

// A device that runs for hours (the soak) must not grow with the messages it
// carried or the QPs it had: the latency samples are a bounded reservoir
// with exact count, minimum and maximum, and a QP's WQE starts go with it.
TEST_CASE("cqe_writer: latency samples and WQE starts stay bounded", "[model][block][cqe_writer]") {
    LatencySamples lat;
    const uint64_t n = 3 * LatencySamples::kCapacity + 17;
    for (uint64_t i = 0; i < n; ++i) lat.add(1000 + i);
    CHECK(lat.count() == n);
    CHECK(lat.min() == 1000);
    CHECK(lat.max() == 1000 + n - 1);
    REQUIRE(lat.kept().size() == LatencySamples::kCapacity);
    // A uniform sample of 1000..1000+n-1: its median near the middle, and
    // samples from the last third kept too (not only the first ones).
    std::vector<uint64_t> v = lat.kept();
    std::sort(v.begin(), v.end());
    const double mid = 1000.0 + double(n) / 2;
    CHECK(std::abs(double(v[v.size() / 2]) - mid) < 0.02 * double(n));
    CHECK(v.back() > 1000 + 2 * n / 3);
    lat.clear();
    CHECK(lat.count() == 0);
    CHECK(lat.kept().empty());

    WqeStartTable t;
    for (uint32_t qpn = 100; qpn < 110; ++qpn)
        for (uint32_t i = 0; i < 50; ++i) t[wqe_key(qpn, i)] = qpn * 1000 + i;
    CHECK(t.size() == 500);
    uint64_t when = 0;
    REQUIRE(t.take(wqe_key(105, 7), when));
    CHECK(when == 105007);
    CHECK_FALSE(t.take(wqe_key(105, 7), when));
    t.drop_qp(103);  // reset, error or destroyed: unsignaled WQEs never close their entries
    CHECK(t.size() == 449);  // 500, one taken, 50 dropped
    CHECK(t.count(wqe_key(103, 0)) == 0);
    CHECK(t.qps() == 9);
    // Unsignaled WQEs of QPs that stay: the table starts over at its bound.
    for (uint32_t i = 0; i < WqeStartTable::kMaxEntries; ++i) t[wqe_key(200 + i / 1000, i % 1000)] = i;
    CHECK(t.size() <= WqeStartTable::kMaxEntries);
}

namespace {

CqeTok armed(uint32_t cqn, uint32_t qpn, uint32_t wqe, bool is_send) {
    CqeTok c = cqe(cqn, qpn, wqe, is_send);
    c.event = true;
    return c;
}

}  // namespace

// Interrupt moderation (cq.moderation_count, cq.moderation_period_ns): the
// event an armed CQ's CQE raised waits for N CQEs of that CQ or T ns after
// that CQE, whichever is first; its EQE and MSI-X message go then.
TEST_CASE("cqe_writer: interrupt moderation, one interrupt per N CQEs or per period", "[model][block][cqe_writer]") {
    ModelConfig cfg;
    cfg.cq.moderation_count = 4;
    cfg.cq.moderation_period_ns = 5000;
    const uint64_t P = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
    const uint64_t T = uint64_t(cfg.cq.moderation_period_ns) * 1000;

    SECTION("N CQEs: the event goes behind the Nth, the CQEs held are seen when woken") {
        tb::BlockBench<CqeWriterBlock> b(cfg);
        std::vector<std::pair<uint64_t, uint32_t>> woken;
        b.nic().on_cq_event = [&woken](uint32_t cqn) { woken.emplace_back(sim::now_ps(), cqn); };
        for (uint32_t i = 0; i < 6; ++i) b.nic().wqe_start[wqe_key(7, i)] = 0;
        // CQ 4 armed: its first CQE raises the event; five more follow, one
        // of CQ 5 among them (not counted for CQ 4).
        b.drive(b.nic().cq_in, {{0, armed(4, 7, 0, true)}, {0, cqe(4, 7, 1, true)}, {0, cqe(5, 8, 9, false)},
                                {0, cqe(4, 7, 2, true)}, {0, cqe(4, 7, 3, true)}, {0, cqe(4, 7, 4, true)}});
        b.run();
        DmaEngine dma(cfg.dma);
        std::vector<uint64_t> vis;
        for (uint64_t i = 1; i <= 5; ++i) vis.push_back(dma.write(i * P, cfg.cq.cqe_bytes, DmaPurpose::Cqe));
        // The 4th CQE of CQ 4 is the 5th written: the EQE and message behind it.
        dma.write(5 * P, cfg.eq.eqe_bytes, DmaPurpose::Eqe);
        const uint64_t msg = dma.write(5 * P, CqeWriterBlock::kMsixMessageBytes, DmaPurpose::Eqe);
        REQUIRE(woken.size() == 1);
        CHECK(woken[0].first == msg);
        CHECK(woken[0].second == 4);
        CHECK(b.nic().interrupts == 1);
        CHECK(b.nic().eqes == 1);
        const uint64_t sixth = dma.write(6 * P, cfg.cq.cqe_bytes, DmaPurpose::Cqe);
        CHECK(b.nic().moderated_cqes == 3);  // CQ 4's 2nd to 4th; its 5th, after the event, is not held
        CHECK(b.nic().interrupt_wake_ps == msg - vis[0]);
        // Latency (WQEs started at 0): the four CQEs of the interrupt when
        // woken, CQ 4's fifth when visible (polled).
        CHECK(b.nic().latency_ps.count() == 5);
        CHECK(b.nic().latency_ps.min() == msg);
        CHECK(b.nic().latency_ps.max() == sixth);
        std::vector<uint64_t> lat = b.nic().latency_ps.kept();
        CHECK(std::count(lat.begin(), lat.end(), msg) == 4);
    }
    SECTION("fewer CQEs: the event goes moderation_period_ns after the CQE that raised it") {
        tb::BlockBench<CqeWriterBlock> b(cfg);
        std::vector<uint64_t> woken;
        b.nic().on_cq_event = [&woken](uint32_t) { woken.push_back(sim::now_ps()); };
        b.drive(b.nic().cq_in, {{0, armed(4, 7, 0, false)}, {0, cqe(4, 7, 1, false)}});
        b.run();
        DmaEngine dma(cfg.dma);
        const uint64_t first = dma.write(P, cfg.cq.cqe_bytes, DmaPurpose::Cqe);
        REQUIRE(woken.size() == 1);
        // The link is idle by then: the message is its own write's latency after the deadline.
        DmaEngine later(cfg.dma);
        later.write(first + T, cfg.eq.eqe_bytes, DmaPurpose::Eqe);
        CHECK(woken[0] == later.write(first + T, CqeWriterBlock::kMsixMessageBytes, DmaPurpose::Eqe));
        CHECK(b.nic().interrupts == 1);
        CHECK(b.nic().moderated_cqes == 1);
    }
    SECTION("two CQs held at once each get their own interrupt") {
        tb::BlockBench<CqeWriterBlock> b(cfg);
        std::vector<uint32_t> woken;
        b.nic().on_cq_event = [&woken](uint32_t cqn) { woken.push_back(cqn); };
        b.drive(b.nic().cq_in, {{0, armed(4, 7, 0, false)}, {0, armed(5, 8, 0, false)}});
        b.run();
        CHECK(woken == std::vector<uint32_t>{4, 5});
        CHECK(b.nic().interrupts == 2);
    }
    SECTION("an arm that finds CQEs fires at once, moderation or not") {
        tb::BlockBench<CqeWriterBlock> b(cfg);
        std::vector<uint64_t> woken;
        b.nic().on_cq_event = [&woken](uint32_t) { woken.push_back(sim::now_ps()); };
        CqeTok only = armed(4, 7, 0, false);
        only.event_only = true;
        b.drive(b.nic().cq_in, 0, only);
        b.run();
        REQUIRE(woken.size() == 1);
        CHECK(woken[0] < T);
    }
    SECTION("no moderation (0/0): every event at once, as before") {
        ModelConfig none;
        tb::BlockBench<CqeWriterBlock> b(none);
        std::vector<uint64_t> woken;
        b.nic().on_cq_event = [&woken](uint32_t) { woken.push_back(sim::now_ps()); };
        b.drive(b.nic().cq_in, {{0, armed(4, 7, 0, false)}, {0, cqe(4, 7, 1, false)}});
        b.run();
        DmaEngine dma(none.dma);
        dma.write(P, none.cq.cqe_bytes, DmaPurpose::Cqe);
        dma.write(P, none.eq.eqe_bytes, DmaPurpose::Eqe);
        const uint64_t msg = dma.write(P, CqeWriterBlock::kMsixMessageBytes, DmaPurpose::Eqe);
        REQUIRE(woken.size() == 1);
        CHECK(woken[0] == msg);
        CHECK(b.nic().moderated_cqes == 0);
    }
}

namespace {

// A CQE (or armed CQE) of a CQ that ibv_modify_cq gave its own moderation.
CqeTok own(CqeTok c, uint32_t count, uint32_t period_us) {
    c.mod_own = true;
    c.mod_count = count;
    c.mod_period_us = period_us;
    return c;
}

}  // namespace

// Per-CQ moderation (ibv_modify_cq, MODIFY_CQ): each CQ's event follows its
// own count and period, which the CQE carries from the CQC; a CQ without
// one follows the device keys.
TEST_CASE("cqe_writer: two CQs with their own moderation get their own interrupts", "[model][block][cqe_writer]") {
    ModelConfig cfg;  // the device: no moderation
    const uint64_t P = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);

    SECTION("counts 2 and 4 on one device: CQ 4 an interrupt per 2 CQEs, CQ 5 per 4, CQ 6 (device) per CQE") {
        tb::BlockBench<CqeWriterBlock> b(cfg);
        std::vector<std::pair<uint64_t, uint32_t>> woken;
        b.nic().on_cq_event = [&woken](uint32_t cqn) { woken.emplace_back(sim::now_ps(), cqn); };
        // Each CQ armed by its first CQE, then three more, interleaved
        // (4, 5, 6, 4, 5, 6, ...). Long periods: only the counts act.
        std::vector<std::pair<uint64_t, CqeTok>> in;
        for (uint32_t i = 0; i < 4; ++i) {
            in.push_back({0, own(i == 0 ? armed(4, 7, i, false) : cqe(4, 7, i, false), 2, 4000)});
            in.push_back({0, own(i == 0 ? armed(5, 8, i, false) : cqe(5, 8, i, false), 4, 4000)});
            in.push_back({0, i == 0 ? armed(6, 9, i, false) : cqe(6, 9, i, false)});
        }
        b.drive(b.nic().cq_in, std::move(in));
        b.run();
        // CQE k (1-based) is written in cycle k; the event goes behind the
        // CQE that completes its count: CQ 6 at once (the 3rd CQE), CQ 4
        // behind its 2nd (the 4th CQE), CQ 5 behind its 4th (the 11th).
        REQUIRE(woken.size() == 3);
        CHECK(woken[0].second == 6);
        CHECK(woken[1].second == 4);
        CHECK(woken[2].second == 5);
        DmaEngine dma(cfg.dma);
        uint64_t msg4 = 0, msg5 = 0, msg6 = 0;
        for (uint64_t k = 1; k <= 12; ++k) {
            dma.write(k * P, cfg.cq.cqe_bytes, DmaPurpose::Cqe);
            if (k == 3 || k == 4 || k == 11) {
                dma.write(k * P, cfg.eq.eqe_bytes, DmaPurpose::Eqe);
                const uint64_t m = dma.write(k * P, CqeWriterBlock::kMsixMessageBytes, DmaPurpose::Eqe);
                (k == 3 ? msg6 : k == 4 ? msg4 : msg5) = m;
            }
        }
        CHECK(woken[0].first == msg6);
        CHECK(woken[1].first == msg4);
        CHECK(woken[2].first == msg5);
        CHECK(b.nic().interrupts == 3);
        // Held behind the events: CQ 4's 2nd, CQ 5's 2nd to 4th.
        CHECK(b.nic().moderated_cqes == 4);
    }
    SECTION("periods 2 and 5 us: each event waits its own CQ's period; the device keys do not apply") {
        ModelConfig dev = cfg;  // the device moderates by 8 CQEs or 1 us: the CQs' own win
        dev.cq.moderation_count = 8;
        dev.cq.moderation_period_ns = 1000;
        tb::BlockBench<CqeWriterBlock> b(dev);
        std::vector<std::pair<uint64_t, uint32_t>> woken;
        b.nic().on_cq_event = [&woken](uint32_t cqn) { woken.emplace_back(sim::now_ps(), cqn); };
        b.drive(b.nic().cq_in, {{0, own(armed(4, 7, 0, false), 64, 5)},
                                {0, own(armed(5, 8, 0, false), 64, 2)},
                                {0, armed(6, 9, 0, false)}});
        b.run();
        DmaEngine dma(dev.dma);
        const uint64_t v4 = dma.write(1 * P, dev.cq.cqe_bytes, DmaPurpose::Cqe);
        const uint64_t v5 = dma.write(2 * P, dev.cq.cqe_bytes, DmaPurpose::Cqe);
        const uint64_t v6 = dma.write(3 * P, dev.cq.cqe_bytes, DmaPurpose::Cqe);
        REQUIRE(woken.size() == 3);
        // In deadline order: CQ 6 (device, 1 us), CQ 5 (2 us), CQ 4 (5 us);
        // each message is written at its deadline on an idle link.
        CHECK(woken[0].second == 6);
        CHECK(woken[1].second == 5);
        CHECK(woken[2].second == 4);
        auto at = [&](uint64_t deadline) {
            DmaEngine later(dev.dma);
            later.write(deadline, dev.eq.eqe_bytes, DmaPurpose::Eqe);
            return later.write(deadline, CqeWriterBlock::kMsixMessageBytes, DmaPurpose::Eqe);
        };
        CHECK(woken[0].first == at(v6 + 1'000'000));
        CHECK(woken[1].first == at(v5 + 2'000'000));
        CHECK(woken[2].first == at(v4 + 5'000'000));
    }
    SECTION("a CQ set back to 0/0 by ibv_modify_cq is not moderated on a moderating device") {
        ModelConfig dev = cfg;
        dev.cq.moderation_count = 8;
        dev.cq.moderation_period_ns = 100000;
        tb::BlockBench<CqeWriterBlock> b(dev);
        std::vector<uint64_t> woken;
        b.nic().on_cq_event = [&woken](uint32_t) { woken.push_back(sim::now_ps()); };
        b.drive(b.nic().cq_in, 0, own(armed(4, 7, 0, false), 0, 0));
        b.run();
        DmaEngine dma(dev.dma);
        dma.write(P, dev.cq.cqe_bytes, DmaPurpose::Cqe);
        dma.write(P, dev.eq.eqe_bytes, DmaPurpose::Eqe);
        REQUIRE(woken.size() == 1);
        CHECK(woken[0] == dma.write(P, CqeWriterBlock::kMsixMessageBytes, DmaPurpose::Eqe));
        CHECK(b.nic().moderated_cqes == 0);
    }
    SECTION("a count without a period waits for its count, and an idle model does not run on to a timer") {
        tb::BlockBench<CqeWriterBlock> b(cfg);
        std::vector<uint32_t> woken;
        b.nic().on_cq_event = [&woken](uint32_t cqn) { woken.push_back(cqn); };
        b.drive(b.nic().cq_in, {{0, own(armed(4, 7, 0, false), 3, 0)}, {0, own(cqe(4, 7, 1, false), 3, 0)}});
        const uint64_t end = b.run();
        CHECK(woken.empty());           // two of three CQEs: still held
        CHECK(end < 1'000'000);         // and the simulation stopped, idle, within a microsecond
        CHECK(b.nic().interrupts == 0);
    }
}

// A model device's application gets its real completion event from the
// model's interrupt (issue 17): the block hands each event to the datapath
// (Datapath::cq_event) when the interrupt wakes the application, one per
// interrupt, with the period that held it when the timer sent it, so that
// the engine posts what the model modelled.
TEST_CASE("cqe_writer: the application's event goes to the datapath at its interrupt, with the period that held it",
          "[model][block][cqe_writer]") {
    ModelConfig cfg;
    cfg.cq.moderation_count = 4;
    cfg.cq.moderation_period_ns = 5000;
    cfg.cq.poll_ns = 200;
    tb::BlockBench<CqeWriterBlock> b(cfg);
    std::vector<std::pair<uint64_t, uint32_t>> woken;
    b.nic().on_cq_event = [&woken](uint32_t cqn) { woken.emplace_back(sim::now_ps(), cqn); };
    // CQ 4 meets its count of 4; CQ 5's single CQE waits out the period;
    // CQ 6 has its own moderation, none (0/0): at once.
    b.drive(b.nic().cq_in, {{0, armed(5, 8, 0, false)}, {0, armed(4, 7, 0, false)}, {0, cqe(4, 7, 1, false)},
                            {0, own(armed(6, 9, 0, false), 0, 0)}, {0, cqe(4, 7, 2, false)},
                            {0, cqe(4, 7, 3, false)}});
    b.run();
    REQUIRE(woken.size() == 3);
    const auto& ev = b.be.cq_events;
    REQUIRE(ev.size() == 3);
    // In the order of the interrupts, each when the application is woken
    // and polls (with on_cq_event), the period only where the timer sent it.
    for (size_t i = 0; i < 3; ++i) {
        CHECK(ev[i].item.first == woken[i].second);
        CHECK(ev[i].t_ps == woken[i].first);
    }
    CHECK(ev[0].item == std::pair<uint32_t, uint64_t>{6, 0});
    CHECK(ev[1].item == std::pair<uint32_t, uint64_t>{4, 0});
    CHECK(ev[2].item == std::pair<uint32_t, uint64_t>{5, 5000});
    // What the count still wanted goes with a period's event (CQ 5: one
    // CQE of four), for the engine to count on in wall-clock time; nothing
    // with the count's or an unmoderated one.
    CHECK(b.be.cq_event_counts == std::vector<uint32_t>{0, 0, 3});
    CHECK(b.nic().interrupts == 3);
}

TEST_CASE("cqe_writer: a destroyed CQ's held event goes with it, a CQ given its number is not moderated by it",
          "[model][block][cqe_writer]") {
    const ModelConfig cfg;
    tb::BlockBench<CqeWriterBlock> b(cfg);
    // CQ 5 moderated to 64 CQEs and no period: its event is held, for good.
    b.drive(b.nic().cq_in, {{0, own(armed(5, 8, 0, false), 64, 0)}});
    b.run();
    CHECK(b.nic().interrupts == 0);
    CHECK(b.be.cq_events.empty());
    // Destroyed (the engine's cq_destroying: forget_doorbells), and a new
    // CQ 5 without moderation, armed: its CQE is its own, not held behind
    // the old event, and its event goes at once.
    REQUIRE(b.nic().forget_cq_event);
    b.nic().forget_cq_event(5);
    b.nic().cq_in.push_input(own(armed(5, 9, 0, false), 0, 0));
    b.nic().cq_in.push_input(own(cqe(5, 9, 1, false), 0, 0));
    b.run();
    CHECK(b.nic().moderated_cqes == 0);
    CHECK(b.nic().interrupts == 1);
    REQUIRE(b.be.cq_events.size() == 1);
    CHECK(b.be.cq_events[0].item == std::pair<uint32_t, uint64_t>{5, 0});
}
