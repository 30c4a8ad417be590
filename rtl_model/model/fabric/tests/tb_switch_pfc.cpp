// PFC (802.1Qbb) in the switch: the PAUSE frames it sends (when, and their
// bytes), lossless 2:1 overload within the headroom, drops when the headroom
// is too small, XOFF refresh, and its own egress honouring the PAUSE frames
// it receives, one priority at a time.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "switch_harness.h"

using namespace simnic::model::fabric;
using tb::FrameSpec;

namespace {

constexpr uint32_t kLen = 1098;       // a 1 KiB RDMA WRITE Only frame over IPv4 (BTH, RETH, ICRC)
constexpr uint64_t kT = 89'440;       // (1098 + 20) * 8 bits at 100 Gb/s, ps
constexpr uint64_t kTpfc = 6'400;   // a PFC frame (60 + 20 bytes) at 100 Gb/s, ps
constexpr uint64_t kLat = 500'000;

std::vector<std::pair<uint64_t, std::vector<uint8_t>>> flow(unsigned src, unsigned dst, int n, uint64_t at = 0,
                                                            uint8_t dscp = 26) {
    std::vector<std::pair<uint64_t, std::vector<uint8_t>>> v;
    for (int i = 0; i < n; ++i) {
        FrameSpec s;
        s.src = src;
        s.dst = dst;
        s.psn = uint32_t(i);
        s.dscp = dscp;
        v.emplace_back(at, tb::roce_frame(s));
    }
    return v;
}

// Priority 3 lossless, no ECN; every other priority lossy.
SwitchConfig lossless(unsigned ports, uint64_t xoff, uint64_t xon, uint64_t headroom) {
    SwitchConfig c = tb::small_switch(ports);
    for (auto& p : c.priority) p.ecn = p.pfc = false;
    c.priority[3].pfc = true;
    c.priority[3].xoff_bytes = xoff;
    c.priority[3].xon_bytes = xon;
    c.priority[3].headroom_bytes = headroom;
    return c;
}

// The PFC frame port `port` sends for priority 3, written out byte by byte
// from 802.1Qbb (not by encode_pfc, which it checks).
std::vector<uint8_t> expected_pfc(uint32_t port, uint16_t quanta) {
    std::vector<uint8_t> f = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01,      // MAC control multicast
                              0x02, 0x53, 0x57, 0x00, 0x00, uint8_t(port),  // the port's address
                              0x88, 0x08,                              // MAC control
                              0x01, 0x01,                              // PFC
                              0x00, 0x08};                             // class-enable: priority 3
    for (unsigned i = 0; i < 8; ++i) {
        f.push_back(i == 3 ? uint8_t(quanta >> 8) : 0);
        f.push_back(i == 3 ? uint8_t(quanta) : 0);
    }
    f.resize(60, 0);
    return f;
}

PfcFrame pfc_for(unsigned prio, uint16_t quanta) {
    PfcFrame p;
    p.src = tb::host_mac(99);
    p.class_enable = uint16_t(1u << prio);
    p.time[prio] = quanta;
    return p;
}

}  // namespace

TEST_CASE("pfc: PFC frames encode and decode as 802.1Qbb lays them out", "[model][switch][pfc]") {
    PfcFrame p;
    p.src = {0x02, 0x53, 0x57, 0, 0, 7};
    p.class_enable = 0x08;
    p.time[3] = 0xFFFF;
    CHECK(encode_pfc(p) == expected_pfc(7, 0xFFFF));
    PfcFrame back;
    const auto f = encode_pfc(p);
    REQUIRE(decode_pfc(f.data(), f.size(), back));
    CHECK(back.src == p.src);
    CHECK(back.class_enable == p.class_enable);
    CHECK(back.time == p.time);
    auto not_pfc = f;
    not_pfc[14] = 0x00;  // opcode 0x0001: 802.3x PAUSE
    CHECK_FALSE(decode_pfc(not_pfc.data(), not_pfc.size(), back));
    CHECK(is_mac_control(not_pfc.data(), not_pfc.size()));
}

TEST_CASE("pfc: 2:1 overload: XOFF when an ingress's bytes cross XOFF, XON at XON, nothing dropped",
          "[model][switch][pfc]") {
    const uint64_t xoff = 20'000, xon = 15'000;
    SwitchConfig c = lossless(3, xoff, xon, 32 * 1024);
    tb::SwitchBench b(c);
    tb::SourceOptions opt;
    opt.cable_ps = 100'000;  // 20 m
    const int n = 300;
    auto& s0 = b.source(0, flow(1, 3, n), opt);
    auto& s1 = b.source(1, flow(2, 3, n, kT / 2), opt);
    b.run();

    const auto out = b.data_out(2);
    REQUIRE(out.size() == size_t(2 * n));  // lossless
    CHECK(b.sw().counters(0, 3).drops + b.sw().counters(1, 3).drops == 0);
    // PFC keeps the congested egress busy: back to back from first to last.
    for (size_t j = 1; j < out.size(); ++j) CHECK(out[j].t_ps - out[j - 1].t_ps == kT);

    // Each ingress's bytes, from what the test saw arrive and leave: the
    // PAUSE frames each sent must be exactly the crossings, each out one
    // PFC frame time after (the port's egress carries nothing else).
    for (unsigned port : {0u, 1u}) {
        INFO("ingress port " << port);
        const tb::Source& s = port == 0 ? s0 : s1;
        std::vector<std::tuple<uint64_t, int, int64_t>> ev;  // (time, departures first, bytes)
        for (uint64_t a : s.arrived_ps) ev.emplace_back(a, 1, int64_t(kLen));
        for (const auto& o : out)
            if (tb::decode(o.bytes).src == port + 1) ev.emplace_back(o.t_ps, 0, -int64_t(kLen));
        std::sort(ev.begin(), ev.end());
        std::vector<tb::Seen> expect;
        int64_t bytes = 0;
        bool paused = false;
        for (size_t i = 0; i < ev.size(); ++i) {
            const auto [t, kind, d] = ev[i];
            if (i + 1 < ev.size()) REQUIRE(std::get<0>(ev[i + 1]) != t);  // no ties to order
            bytes += d;
            if (!paused && bytes > int64_t(xoff)) {
                paused = true;
                expect.push_back({t + kTpfc, expected_pfc(port, 0xFFFF)});
            } else if (paused && bytes <= int64_t(xon)) {
                paused = false;
                expect.push_back({t + kTpfc, expected_pfc(port, 0)});
            }
        }
        const auto sent = b.pfc_out(port);
        REQUIRE(expect.size() >= 2);
        REQUIRE(sent.size() == expect.size());
        for (size_t i = 0; i < sent.size(); ++i) {
            INFO("PFC frame " << i);
            CHECK(sent[i].t_ps == expect[i].t_ps);
            CHECK(sent[i].bytes == expect[i].bytes);
        }
        const PortPrioCounters& k = b.sw().counters(port, 3);
        CHECK(k.pause_sent + k.resume_sent == sent.size());
        CHECK(k.max_ingress_bytes > xoff);
        CHECK(k.max_headroom_bytes <= c.priority[3].headroom_bytes);
        CHECK(k.max_headroom_bytes > 0);
    }
    CHECK(b.sw().ingress_bytes(0, 3) == 0);
    CHECK_FALSE(b.sw().pausing(0, 3));
}

TEST_CASE("pfc: a headroom smaller than what is in flight after XOFF drops, a source that ignores PFC fills it",
          "[model][switch][pfc]") {
    SECTION("headroom of one frame, a 1 us cable") {
        SwitchConfig c = lossless(3, 20'000, 15'000, kLen);
        tb::SwitchBench b(c);
        tb::SourceOptions opt;
        opt.cable_ps = 1'000'000;
        b.source(0, flow(1, 3, 200), opt);
        b.source(1, flow(2, 3, 200, kT / 2), opt);
        b.run();
        const uint64_t drops = b.sw().counters(0, 3).drops + b.sw().counters(1, 3).drops;
        CHECK(drops > 0);
        CHECK(b.data_out(2).size() + drops == 400);
        CHECK(b.sw().counters(2, 3).tx_drops == drops);
        CHECK(b.sw().counters(0, 3).max_headroom_bytes <= kLen);
    }
    SECTION("the default headroom, a sender that does not pause") {
        SwitchConfig c = lossless(3, 20'000, 15'000, 32 * 1024);
        tb::SwitchBench b(c);
        tb::SourceOptions deaf;
        deaf.honour_pfc = false;
        b.source(0, flow(1, 3, 200), deaf);
        b.source(1, flow(2, 3, 200, kT / 2));
        b.run();
        CHECK(b.sw().counters(0, 3).drops > 0);
        CHECK(b.sw().counters(1, 3).drops == 0);
        CHECK(b.sw().counters(0, 3).max_headroom_bytes > 32 * 1024 - kLen);
    }
}

TEST_CASE("pfc: an XOFF is refreshed every half pause time while the ingress stays above XON", "[model][switch][pfc]") {
    SwitchConfig c = lossless(3, 20'000, 15'000, 32 * 1024);
    c.pause_quanta = 1000;  // 5.12 us at 100 Gb/s: refresh every 2.56 us
    const uint64_t tp = c.pause_time_ps(0, 1000);
    REQUIRE(tp == 5'120'000);
    tb::SwitchBench b(c);
    // Downstream pauses port 2's egress for priority 3 from the start, for
    // longer than the test, then resumes at 20 us.
    b.inject(2, {{0, encode_pfc(pfc_for(3, 0xFFFF))}, {20'000'000, encode_pfc(pfc_for(3, 0))}});
    auto& s = b.source(0, flow(1, 3, 40));
    b.run();

    const auto sent = b.pfc_out(0);
    REQUIRE(sent.size() >= 3);
    // The frame that crossed XOFF: the 19th (19 * 1098 > 20000).
    const uint64_t crossed = s.arrived_ps[18];
    CHECK(sent[0].t_ps == crossed + kTpfc);
    CHECK(sent[0].bytes == expected_pfc(0, 1000));
    size_t i = 1;
    for (; i < sent.size() && sent[i].bytes == expected_pfc(0, 1000); ++i)
        CHECK(sent[i].t_ps == crossed + i * (tp / 2) + kTpfc);
    // While refreshed, the source never resumed: nothing arrived between
    // the first pause reaching it and the resume downstream.
    const uint64_t paused_at = sent[0].t_ps;
    for (uint64_t a : s.arrived_ps) CHECK((a <= paused_at + kT || a > 20'000'000));
    // Resumed downstream at 20 us, the queue drains, XON below 15000 bytes.
    REQUIRE(i == sent.size() - 1);
    CHECK(sent[i].bytes == expected_pfc(0, 0));
    CHECK(sent[i].t_ps > 20'000'000);
    CHECK(b.data_out(2).size() == 40);
    CHECK(b.sw().counters(0, 3).pause_sent == i);
    CHECK(b.sw().counters(0, 3).resume_sent == 1);
}

TEST_CASE("pfc: a received PAUSE stops the egress for its priority for exactly the pause time, others go on",
          "[model][switch][pfc]") {
    SwitchConfig c = lossless(2, 1'000'000, 900'000, 32 * 1024);
    const uint16_t q = 1000;
    const uint64_t tp = c.pause_time_ps(1, q);
    REQUIRE(tp == 5'120'000);

    SECTION("the pause runs out") {
        tb::SwitchBench b(c);
        std::vector<std::pair<uint64_t, std::vector<uint8_t>>> in = flow(1, 2, 5);  // priority 3
        for (auto& f : flow(1, 2, 5, 0, 8)) in.push_back(std::move(f));         // priority 1
        b.inject(0, std::move(in));
        // Downstream pauses priority 3 while the second priority-3 frame is on the line.
        const uint64_t at = kLat + kT + kT / 2;
        b.inject(1, {{at, encode_pfc(pfc_for(3, q))}});
        b.run();
        const auto out = b.data_out(1);
        REQUIRE(out.size() == 10);
        std::vector<uint64_t> t3, t1;
        for (const auto& o : out) (o.bytes[15] >> 2 == 26 ? t3 : t1).push_back(o.t_ps);  // DSCP 26: priority 3
        REQUIRE(t3.size() == 5);
        REQUIRE(t1.size() == 5);
        // Strict priority: 3 first; the frame on the line finishes.
        CHECK(t3[0] == kLat + kT);
        CHECK(t3[1] == kLat + 2 * kT);
        // Priority 1 is not paused: it takes the line at once.
        for (size_t i = 0; i < 5; ++i) CHECK(t1[i] == kLat + (3 + i) * kT);
        // Priority 3 again exactly when the pause ends.
        for (size_t i = 2; i < 5; ++i) CHECK(t3[i] == at + tp + (i - 1) * kT);
        const PortPrioCounters& k = b.sw().counters(1, 3);
        CHECK(k.pause_received == 1);
        CHECK(k.paused_ps == tp);
        CHECK(b.sw().counters(1, 1).pause_received == 0);
    }
    SECTION("a resume ends it early") {
        tb::SwitchBench b(c);
        b.inject(0, flow(1, 2, 5));
        const uint64_t at = kLat + kT / 2, resume = at + 2'000'000;
        b.inject(1, {{at, encode_pfc(pfc_for(3, 0xFFFF))}, {resume, encode_pfc(pfc_for(3, 0))}});
        b.run();
        const auto out = b.data_out(1);
        REQUIRE(out.size() == 5);
        CHECK(out[0].t_ps == kLat + kT);
        for (size_t i = 1; i < 5; ++i) CHECK(out[i].t_ps == resume + i * kT);
        CHECK(b.sw().counters(1, 3).resume_received == 1);
        CHECK(b.sw().counters(1, 3).paused_ps == resume - at);
    }
    SECTION("a PAUSE for a priority without PFC is not honoured") {
        tb::SwitchBench b(c);
        b.inject(0, flow(1, 2, 3, 0, 8));  // priority 1, lossy
        b.inject(1, {{kLat + kT / 2, encode_pfc(pfc_for(1, 0xFFFF))}});
        b.run();
        const auto out = b.data_out(1);
        REQUIRE(out.size() == 3);
        for (size_t i = 0; i < 3; ++i) CHECK(out[i].t_ps == kLat + (i + 1) * kT);
        CHECK(b.sw().counters(1, 1).pause_received == 1);
        CHECK(b.sw().counters(1, 1).paused_ps == 0);
    }
}

TEST_CASE("pfc: an XOFF names only the congested priority, another from the same ingress is neither paused nor dropped",
          "[model][switch][pfc]") {
    // Port 0 sends priority 3 (lossless, congested 2:1 with port 1) and
    // priority 1 to an idle port. (The source is one FIFO, as a MAC with one
    // queue: paused for priority 3, it holds its priority-1 frames too; the
    // switch's own egress keeps priorities apart, tested above.)
    SwitchConfig c = lossless(4, 20'000, 15'000, 32 * 1024);
    tb::SwitchBench b(c);
    std::vector<std::pair<uint64_t, std::vector<uint8_t>>> mix;
    auto a = flow(1, 3, 150), v = flow(1, 4, 150, 0, 8);
    for (size_t i = 0; i < 150; ++i) {
        mix.push_back(std::move(a[i]));
        mix.push_back(std::move(v[i]));
    }
    tb::SourceOptions opt;
    opt.cable_ps = 100'000;
    b.source(0, std::move(mix), opt);
    b.source(1, flow(2, 3, 300, kT / 2), opt);
    b.run();
    const auto sent = b.pfc_out(0);
    REQUIRE_FALSE(sent.empty());
    for (const auto& s : sent) CHECK((s.bytes[16] == 0 && s.bytes[17] == 0x08));  // priority 3 only
    CHECK(b.data_out(3).size() == 150);
    CHECK(b.data_out(2).size() == 450);
    CHECK(b.sw().counters(0, 1).drops + b.sw().counters(0, 3).drops + b.sw().counters(1, 3).drops == 0);
    CHECK(b.sw().counters(0, 1).pause_sent == 0);
}

TEST_CASE("pfc: 8:1 incast on the default configuration: lossless, the egress at line rate, simulation speed",
          "[model][switch][pfc]") {
    // The defaults (priority 3 lossless and marked, 12 MiB, 100 Gb/s), nine
    // ports, eight senders that honour PFC over 100 m of cable (500 ns) and
    // do not react to ECN (no DCQCN yet): PFC alone keeps it lossless.
    const SwitchConfig c = tb::small_switch(9);
    tb::SwitchBench b(c);
    tb::SourceOptions opt;
    opt.cable_ps = 500'000;
    const int n = 5000;
    for (unsigned h = 1; h <= 8; ++h) b.source(h - 1, flow(h, 9, n, (h - 1) * kT / 8), opt);
    const auto t0 = std::chrono::steady_clock::now();
    const uint64_t end = b.run();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    const auto out = b.data_out(8);
    for (unsigned p = 0; p < 8; ++p)
        UNSCOPED_INFO("port " << p << " drops " << b.sw().counters(p, 3).drops << " rx " << b.sw().counters(p, 3).rx_frames
                      << " xoff " << b.sw().counters(p, 3).pause_sent << " xon " << b.sw().counters(p, 3).resume_sent
                      << " ingress " << b.sw().ingress_bytes(p, 3) << " end " << end);
    REQUIRE(out.size() == size_t(8 * n));
    for (size_t j = 1; j < out.size(); ++j) REQUIRE(out[j].t_ps - out[j - 1].t_ps == kT);
    uint64_t pauses = 0, marks = b.sw().counters(8, 3).ecn_marked, headroom = 0;
    for (unsigned p = 0; p < 8; ++p) {
        const PortPrioCounters& k = b.sw().counters(p, 3);
        CHECK(k.drops == 0);
        pauses += k.pause_sent;
        headroom = std::max(headroom, k.max_headroom_bytes);
        CHECK(k.max_headroom_bytes <= c.priority[3].headroom_bytes);
    }
    CHECK(pauses > 0);
    CHECK(marks > 0);
    // Each ingress is paused near its XOFF, so the queue settles near
    // 8 * 256 KiB.
    CHECK(b.sw().counters(8, 3).max_depth_bytes > 8 * c.priority[3].xoff_bytes);
    CHECK(b.sw().counters(8, 3).max_depth_bytes < 8 * (c.priority[3].xoff_bytes + c.priority[3].headroom_bytes));
    WARN("8:1 incast: " << 8 * n << " frames (" << 2 * 8 * n << " frame events in and out) in "
                        << double(end) / 1e6 << " us simulated, " << wall * 1e3 << " ms wall: "
                        << double(8 * n) / wall << " frames/s; " << pauses << " XOFFs, " << marks
                        << " CE marks, headroom peak " << headroom << " bytes");
}
