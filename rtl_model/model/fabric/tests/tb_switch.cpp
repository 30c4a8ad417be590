// The switch alone: forwarding, line rate and latency to the picosecond,
// queue growth under a 2:1 overload, ECN marking against its curve, tail
// drop, scheduling between priorities, classification and the depth series.
// PFC is tb_switch_pfc.cpp's.
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "simnic/roce/ecn.h"
#include "switch_harness.h"

// libsystemc calls sc_main from its own main(); this program has Catch's
// (the pipeline library carries the same stub for its programs).
int sc_main(int, char**) { return 0; }

using namespace simnic::model::fabric;
namespace roce = simnic::roce;
using tb::FrameSpec;

namespace {

constexpr uint32_t kLen = 1098;       // a 1 KiB RDMA WRITE Only frame over IPv4 (BTH, RETH, ICRC)
constexpr uint64_t kT = 89'440;       // (1098 + 20) * 8 bits at 100 Gb/s, ps
constexpr uint64_t kLat = 500'000;    // the default forwarding latency, ps

// `n` frames from host `src` to host `dst`, all ready at once (a source
// sends them back to back), PSNs from 0.
std::vector<std::pair<uint64_t, std::vector<uint8_t>>> flow(unsigned src, unsigned dst, int n, uint64_t at = 0,
                                                            FrameSpec spec = {}) {
    std::vector<std::pair<uint64_t, std::vector<uint8_t>>> v;
    spec.src = src;
    spec.dst = dst;
    for (int i = 0; i < n; ++i) {
        spec.psn = uint32_t(i);
        v.emplace_back(at, tb::roce_frame(spec));
    }
    return v;
}

// The default switch with PFC and ECN off everywhere: a plain output-queued switch.
SwitchConfig plain(unsigned ports) {
    SwitchConfig c = tb::small_switch(ports);
    for (auto& p : c.priority) p.ecn = p.pfc = false;
    return c;
}

}  // namespace

TEST_CASE("switch: the frame and its time on the line are what the test assumes", "[model][switch]") {
    REQUIRE(tb::roce_frame(FrameSpec{}).size() == kLen);
    const SwitchConfig c = plain(2);
    CHECK(c.frame_time_ps(0, kLen) == kT);
    CHECK(c.forwarding_latency_ps == kLat);
    CHECK(c.pause_time_ps(0, 0xFFFF) == 335'539'200);  // 65535 * 512 bits at 100 Gb/s
}

TEST_CASE("switch: one flow at line rate: every frame out forwarding latency plus one frame time after it arrived",
          "[model][switch]") {
    tb::SwitchBench b(plain(2));
    const int n = 50;
    auto& s = b.source(0, flow(1, 2, n));
    b.run();

    const auto out = b.data_out(1);
    REQUIRE(out.size() == size_t(n));
    REQUIRE(s.arrived_ps.size() == size_t(n));
    for (int i = 0; i < n; ++i) {
        INFO("frame " << i);
        CHECK(s.arrived_ps[size_t(i)] == uint64_t(i + 1) * kT);  // the source at line rate
        CHECK(out[size_t(i)].t_ps == s.arrived_ps[size_t(i)] + kLat + kT);
        CHECK(tb::decode(out[size_t(i)].bytes).psn == uint32_t(i));
    }
    const PortPrioCounters& in = b.sw().counters(0, 3);
    const PortPrioCounters& eg = b.sw().counters(1, 3);
    CHECK(in.rx_frames == uint64_t(n));
    CHECK(in.rx_bytes == uint64_t(n) * kLen);
    CHECK(eg.tx_frames == uint64_t(n));
    CHECK(eg.tx_bytes == uint64_t(n) * kLen);
    // The frame on the line, and for an instant the next, which arrives as
    // it leaves (both at (k + 1) * T + latency).
    CHECK(eg.max_depth_bytes == 2 * kLen);
    CHECK(in.drops == 0);
    CHECK(b.sw().shared_used() == 0);
}

TEST_CASE("switch: a slower egress port paces the frames at its own rate", "[model][switch]") {
    SwitchConfig c = plain(2);
    c.ports[1].line_rate_bps = 25'000'000'000ull;
    const uint64_t t25 = 4 * kT;
    REQUIRE(c.frame_time_ps(1, kLen) == t25);
    tb::SwitchBench b(c);
    const int n = 20;
    b.source(0, flow(1, 2, n));
    b.run();
    const auto out = b.data_out(1);
    REQUIRE(out.size() == size_t(n));
    // The first frame is there at T + latency; the queue keeps the egress busy.
    for (int i = 0; i < n; ++i) CHECK(out[size_t(i)].t_ps == kT + kLat + uint64_t(i + 1) * t25);
    CHECK(b.sw().counters(1, 3).max_depth_bytes > uint64_t(n / 2) * kLen);
}

TEST_CASE("switch: two ingress ports at line rate into one egress: the queue grows by one frame per frame time",
          "[model][switch]") {
    SwitchConfig c = plain(3);
    c.depth_sample_ps = 1'000'000;  // 1 us
    tb::SwitchBench b(c);
    const int n = 200;
    auto& s0 = b.source(0, flow(1, 3, n));
    // Half a frame behind, so that no two frames arrive at the same instant.
    auto& s1 = b.source(1, flow(2, 3, n, kT / 2));
    b.run();

    REQUIRE(s0.arrived_ps.size() == size_t(n));
    REQUIRE(s1.arrived_ps.size() == size_t(n));
    CHECK(s1.arrived_ps[0] == kT / 2 + kT);
    const auto out = b.data_out(2);
    REQUIRE(out.size() == size_t(2 * n));
    // The egress never idles once the first frame is in: the line rate.
    for (size_t j = 0; j < out.size(); ++j) CHECK(out[j].t_ps == 2 * kT + kLat + j * kT);
    // The frames leave in the order they arrived, alternating.
    for (size_t j = 0; j < out.size(); ++j) CHECK(tb::decode(out[j].bytes).src == (j % 2 ? 2u : 1u));

    // Depth at t: frames enqueued (arrived + latency) minus frames out, the
    // frame on the line counted until its last bit is out.
    auto expected = [&](uint64_t t) {
        uint64_t in = 0, gone = 0;
        for (uint64_t a : s0.arrived_ps) in += a + kLat <= t;
        for (uint64_t a : s1.arrived_ps) in += a + kLat <= t;
        for (const auto& o : out) gone += o.t_ps <= t;
        return (in - gone) * kLen;
    };
    const auto& series = b.sw().depth_series(2, 3);
    REQUIRE(series.size() >= 30);  // 36.4 us
    for (size_t k = 0; k < series.size(); ++k) {
        INFO("sample " << k);
        CHECK(series[k] == expected(k * c.depth_sample_ps));
    }
    // While both send, the slope: 2 frames in, 1 out per frame time.
    const uint64_t t1 = 5'000'000, t2 = 15'000'000;
    const double grown = double(series[t2 / c.depth_sample_ps]) - double(series[t1 / c.depth_sample_ps]);
    const double predicted = double(t2 - t1) / double(kT) * kLen;  // 10 us: 111.8 frames
    CHECK(std::abs(grown - predicted) <= 2 * kLen);  // the depth moves in whole frames
    // The peak: when the last frame is in, n frames have gone (about).
    CHECK(b.sw().counters(2, 3).max_depth_bytes >= uint64_t(n - 7) * kLen);
    CHECK(b.sw().counters(2, 3).max_depth_bytes <= uint64_t(n + 1) * kLen);
}

TEST_CASE("switch: frames arriving together on two ports join the queue in turn, whichever process ran first",
          "[model][switch]") {
    // Both sources send at the line rate from the same instant: every frame
    // of port 0 arrives with one of port 1. The order they are queued in
    // must rotate among the ports (RED marks the second one by a deeper
    // queue), and must not depend on which source's process the kernel
    // runs first: here, the one made first.
    const int n = 20;
    auto order = [&](bool port1_made_first) {
        tb::SwitchBench b(plain(3));
        if (port1_made_first) {
            b.source(1, flow(2, 3, n));
            b.source(0, flow(1, 3, n));
        } else {
            b.source(0, flow(1, 3, n));
            b.source(1, flow(2, 3, n));
        }
        b.run();
        const auto out = b.data_out(2);
        std::vector<unsigned> src;
        for (const auto& o : out) src.push_back(unsigned(tb::decode(o.bytes).src));
        return src;
    };
    const std::vector<unsigned> a = order(false), b = order(true);
    REQUIRE(a.size() == size_t(2 * n));
    CHECK(a == b);
    for (size_t k = 0; k + 1 < a.size(); k += 2) {
        INFO("pair " << k / 2);
        CHECK(a[k] != a[k + 1]);       // one of each port
        if (k >= 2) CHECK(a[k] != a[k - 2]);  // the other port first this time
    }
}

namespace {

struct EcnRun {
    std::vector<uint8_t> marked;  // per PSN: the frame left with CE
    uint64_t counted = 0;
    bool all_valid = true, non_ect_untouched = true;
};

// Priority 3's egress on port 1 paused (a PFC frame from downstream), then
// `n` frames from port 0: frame k finds exactly k frames queued. Then the
// pause is lifted and the queue drains. Every third frame is not
// ECN-capable; the others alternate ECT(0), ECT(1).
EcnRun ecn_run(const SwitchConfig& c, int n) {
    tb::SwitchBench b(c);
    PfcFrame pause;
    pause.src = tb::host_mac(2);
    pause.class_enable = 1 << 3;
    pause.time[3] = 0xFFFF;
    PfcFrame resume = pause;
    resume.time[3] = 0;
    b.inject(1, {{0, encode_pfc(pause)}, {200'000'000, encode_pfc(resume)}});
    std::vector<std::pair<uint64_t, std::vector<uint8_t>>> in;
    std::vector<std::vector<uint8_t>> sent;
    for (int k = 0; k < n; ++k) {
        FrameSpec s;
        s.src = 1;
        s.dst = 2;
        s.psn = uint32_t(k);
        s.ecn = k % 3 == 2 ? 0 : k % 3 == 0 ? 0b10 : 0b01;
        in.emplace_back(1000, tb::roce_frame(s));
        sent.push_back(in.back().second);
    }
    tb::SourceOptions deaf;
    deaf.honour_pfc = false;
    b.source(0, std::move(in), deaf);
    b.run();
    EcnRun r;
    r.marked.assign(size_t(n), 0);
    const auto out = b.data_out(1);
    REQUIRE(out.size() == size_t(n));
    for (const auto& o : out) {
        const tb::Decoded d = tb::decode(o.bytes);
        r.all_valid = r.all_valid && d.ok;  // ICRC and IPv4 checksum
        if (d.psn % 3 == 2) r.non_ect_untouched = r.non_ect_untouched && o.bytes == sent[d.psn];
        r.marked[d.psn] = d.ecn == 3;
    }
    r.counted = b.sw().counters(1, 3).ecn_marked;
    return r;
}

}  // namespace

TEST_CASE("switch: ECN marks ECN-capable frames with the RED probability of the depth they find", "[model][switch][ecn]") {
    SwitchConfig c = tb::small_switch(2);
    SwitchPriorityConfig& p3 = c.priority[3];
    p3.ecn = true;
    p3.pfc = true;  // so that the downstream PAUSE holds the queue
    p3.xoff_bytes = 8 * 1024 * 1024;  // and the ingress never pauses the source
    p3.xon_bytes = p3.xoff_bytes;
    p3.kmin_bytes = 100'000;
    p3.kmax_bytes = 1'100'000;
    p3.pmax = 0.2;
    c.buffer_bytes = 16 * 1024 * 1024;
    c.seed = 42;
    const int n = 1200;  // depths 0 .. 1.29 MB
    const EcnRun r = ecn_run(c, n);

    CHECK(r.all_valid);
    CHECK(r.non_ect_untouched);
    uint64_t total = 0, below = 0, above = 0, above_n = 0;
    double e_lo = 0, v_lo = 0, e_hi = 0, v_hi = 0;
    uint64_t m_lo = 0, m_hi = 0;
    const uint64_t mid = (p3.kmin_bytes + p3.kmax_bytes) / 2;
    for (int k = 0; k < n; ++k) {
        const bool m = r.marked[size_t(k)];
        total += m;
        const uint64_t d = uint64_t(k) * kLen;  // the depth frame k found
        if (k % 3 == 2) {
            CHECK_FALSE(m);  // not ECN-capable: never marked
            continue;
        }
        if (d < p3.kmin_bytes) {
            below += m;
        } else if (d > p3.kmax_bytes) {
            above += m;
            ++above_n;
        } else {
            const double p = p3.pmax * double(d - p3.kmin_bytes) / double(p3.kmax_bytes - p3.kmin_bytes);
            (d < mid ? e_lo : e_hi) += p;
            (d < mid ? v_lo : v_hi) += p * (1 - p);
            (d < mid ? m_lo : m_hi) += m;
        }
    }
    CHECK(total == r.counted);
    CHECK(below == 0);          // below Kmin: never
    CHECK(above == above_n);    // above Kmax: always
    REQUIRE(above_n > 50);
    // Between: a binomial sum; within four standard deviations, in each half
    // of the ramp (the probability rises with the depth).
    INFO("lower half: " << m_lo << " marked, " << e_lo << " expected; upper half: " << m_hi << ", " << e_hi);
    CHECK(std::abs(double(m_lo) - e_lo) <= 4 * std::sqrt(v_lo));
    CHECK(std::abs(double(m_hi) - e_hi) <= 4 * std::sqrt(v_hi));
    CHECK(e_hi > 2 * e_lo);

    // The same seed marks the same frames; another seed, others.
    CHECK(ecn_run(c, n).marked == r.marked);
    SwitchConfig c2 = c;
    c2.seed = 43;
    CHECK(ecn_run(c2, n).marked != r.marked);
}

TEST_CASE("switch: CE over IPv6, and frames already CE or not ECN-capable left as they are", "[model][switch][ecn]") {
    SwitchConfig c = plain(2);
    c.priority[3].ecn = true;
    c.priority[3].kmin_bytes = c.priority[3].kmax_bytes = 0;
    c.priority[3].pmax = 1;  // every ECN-capable frame
    tb::SwitchBench b(c);
    FrameSpec v6;
    v6.ipv6 = true;
    v6.ecn = 0b01;
    FrameSpec ce;
    ce.ecn = 0b11;
    ce.psn = 1;
    FrameSpec none;
    none.ecn = 0;
    none.psn = 2;
    const auto f6 = tb::roce_frame(v6), fce = tb::roce_frame(ce), fnone = tb::roce_frame(none);
    b.inject(0, {{0, f6}, {1'000'000, fce}, {2'000'000, fnone}});
    b.run();
    const auto out = b.data_out(1);
    REQUIRE(out.size() == 3);
    const tb::Decoded d6 = tb::decode(out[0].bytes);
    CHECK(d6.ok);  // the ICRC masks the traffic class
    CHECK(d6.ecn == 3);
    // Only the traffic class's ECN bits changed.
    std::vector<uint8_t> expect = f6;
    expect[14 + 1] |= 0x30;
    CHECK(out[0].bytes == expect);
    CHECK(out[1].bytes == fce);
    CHECK(out[2].bytes == fnone);
    CHECK(b.sw().counters(1, 3).ecn_marked == 1);
}

TEST_CASE("switch: tail drop when the shared buffer is full and PFC is off", "[model][switch]") {
    SwitchConfig c = plain(3);
    c.buffer_bytes = 20 * kLen;
    tb::SwitchBench b(c);
    const int n = 100;
    b.source(0, flow(1, 3, n));
    b.source(1, flow(2, 3, n, kT / 2));
    b.run();
    const auto out = b.data_out(2);
    const PortPrioCounters &a = b.sw().counters(0, 3), &bb = b.sw().counters(1, 3), &e = b.sw().counters(2, 3);
    CHECK(a.rx_frames == uint64_t(n));
    CHECK(a.drops + bb.drops > 0);
    CHECK(a.drops + bb.drops == e.tx_drops);
    CHECK(out.size() + e.tx_drops == size_t(2 * n));
    CHECK(b.sw().shared_peak() <= c.buffer_bytes);
    CHECK(b.sw().shared_peak() > c.buffer_bytes - kLen);
    CHECK(e.max_depth_bytes <= c.buffer_bytes);
    // The egress stays busy from its first frame to its last.
    for (size_t j = 1; j < out.size(); ++j) CHECK(out[j].t_ps - out[j - 1].t_ps == kT);
    // While both send (about n frame times), the egress sends one frame per
    // frame time, less the first frame's latency and time on the line, and
    // the buffer keeps 20 frames: those in the forwarding pipeline (at two
    // per frame time) and in the queue. The rest is dropped.
    const double expect = n - 20 + 2 + double(kLat) / double(kT);
    CHECK(std::abs(double(e.tx_drops) - expect) <= 2);
}

TEST_CASE("switch: strict priority sends the higher priority first, round robin alternates", "[model][switch]") {
    for (const Scheduling sched : {Scheduling::strict, Scheduling::round_robin}) {
        INFO(to_string(sched));
        SwitchConfig c = plain(2);
        c.scheduling = sched;
        tb::SwitchBench b(c);
        std::vector<std::pair<uint64_t, std::vector<uint8_t>>> in;
        for (int i = 0; i < 8; ++i) {
            FrameSpec s;
            s.psn = uint32_t(i);
            s.dscp = i % 2 ? 40 : 8;  // priorities 5 and 1, alternating
            in.emplace_back(0, tb::roce_frame(s));
        }
        b.inject(0, std::move(in));  // all eight at once
        b.run();
        const auto out = b.data_out(1);
        REQUIRE(out.size() == 8);
        std::vector<uint32_t> psns;
        for (const auto& o : out) psns.push_back(tb::decode(o.bytes).psn);
        if (sched == Scheduling::strict)
            CHECK(psns == std::vector<uint32_t>{1, 3, 5, 7, 0, 2, 4, 6});
        else
            CHECK(psns == std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7});
        for (size_t j = 0; j < out.size(); ++j) CHECK(out[j].t_ps == kLat + (j + 1) * kT);
        CHECK(b.sw().counters(1, 5).tx_frames == 4);
        CHECK(b.sw().counters(1, 1).tx_frames == 4);
    }
}

TEST_CASE("switch: forwarding by the static table, priority by DSCP, MAC control frames kept", "[model][switch]") {
    SwitchConfig c = plain(3);
    CHECK(c.dscp_to_priority[26] == 3);  // RoCE
    CHECK(c.dscp_to_priority[48] == 6);  // CNPs
    CHECK(c.dscp_to_priority[0] == 0);
    tb::SwitchBench b(c);
    FrameSpec to3;
    to3.dst = 3;
    to3.dscp = 48;
    FrameSpec unknown;
    unknown.dst = 9;
    FrameSpec self;
    self.dst = 1;  // host 1 is on port 0, where it comes from
    std::vector<uint8_t> arp(60, 0);
    const auto m2 = tb::host_mac(2);
    std::copy(m2.begin(), m2.end(), arp.begin());
    arp[12] = 0x08;
    arp[13] = 0x06;
    std::vector<uint8_t> pause8023(60, 0);  // an 802.3x PAUSE (opcode 0x0001): not PFC
    pause8023[12] = 0x88;
    pause8023[13] = 0x08;
    pause8023[15] = 0x01;
    b.inject(0, {{0, tb::roce_frame(to3)},
                 {0, tb::roce_frame(FrameSpec{})},
                 {0, tb::roce_frame(unknown)},
                 {0, tb::roce_frame(self)},
                 {0, arp},
                 {0, pause8023},
                 {0, std::vector<uint8_t>(10, 0)}});
    b.run();
    CHECK(b.data_out(2).size() == 1);
    CHECK(b.sw().counters(2, 6).tx_frames == 1);
    CHECK(b.data_out(1).size() == 2);
    CHECK(b.sw().counters(1, 3).tx_frames == 1);
    CHECK(b.sw().counters(1, 0).tx_frames == 1);  // non-IP: non_ip_priority
    CHECK(b.data_out(0).empty());
    CHECK(b.sw().port_counters(0).no_route == 2);
    CHECK(b.sw().port_counters(0).mac_control == 1);
    CHECK(b.sw().port_counters(0).runts == 1);
}

TEST_CASE("switch: a CNP is queued by the DSCP its notification point gave it, ahead of the data",
          "[model][switch][ecn]") {
    // The notification point's CNP (roce::make_cnp, with the DSCP of
    // [congestion] cnp_dscp) answering a CE-marked WRITE of host 1 to host 2:
    // it goes from host 2 back to host 1. DSCP 48 (the default, mlx5's) is
    // priority 6 in the default map, strict-priority ahead of the RoCE data
    // (DSCP 26, priority 3) queued on the same port; DSCP 26 puts it behind
    // them, in their queue.
    for (const uint8_t dscp : {uint8_t{48}, uint8_t{26}}) {
        INFO("cnp_dscp " << int(dscp));
        const unsigned prio = dscp >> 3;
        SwitchConfig c = plain(3);
        tb::SwitchBench b(c);
        FrameSpec marked;  // host 1 -> host 2, CE
        marked.ecn = 0b11;
        roce::Packet m;
        const std::vector<uint8_t> mf = tb::roce_frame(marked);
        REQUIRE(roce::decode_frame(mf.data(), mf.size(), m).ok());
        roce::Packet cp = roce::make_cnp(m, 0x12, dscp);
        std::vector<uint8_t> cnp;
        REQUIRE(roce::encode_frame(cp, cnp));
        // Four data frames of host 3 to host 1 (port 0), then the CNP from
        // host 2 (port 1), all at once: the CNP finds them queued.
        std::vector<std::pair<uint64_t, std::vector<uint8_t>>> data;
        for (uint32_t i = 0; i < 4; ++i) {
            FrameSpec d;
            d.src = 3;
            d.dst = 1;
            d.psn = i;
            data.emplace_back(0, tb::roce_frame(d));
        }
        b.inject(2, std::move(data));
        b.inject(1, {{1, cnp}});
        b.run();
        const auto out = b.data_out(0);
        REQUIRE(out.size() == 5);
        CHECK(b.sw().counters(0, prio).tx_frames == (prio == 3 ? 5u : 1u));
        size_t at = out.size();
        for (size_t i = 0; i < out.size(); ++i)
            if (out[i].bytes == cnp) at = i;
        REQUIRE(at < out.size());  // unchanged: Not-ECT, never marked
        // The first data frame is on the line when the CNP arrives: with
        // its own priority the CNP is next, in the data's queue it is last.
        CHECK(at == (prio == 6 ? 1u : 4u));
        CHECK(roce::read_frame_ecn(cnp.data(), cnp.size()) == roce::Ecn::NotEct);
    }
}

TEST_CASE("switch: an 802.1Q-tagged frame is classified and marked by the IP header behind the tag",
          "[model][switch][ecn]") {
    SwitchConfig c = plain(2);
    c.priority[6].ecn = true;
    c.priority[6].kmin_bytes = c.priority[6].kmax_bytes = 0;
    c.priority[6].pmax = 1;
    tb::SwitchBench b(c);
    roce::Packet p;
    p.eth.dst = tb::host_mac(2);
    p.eth.src = tb::host_mac(1);
    p.eth.has_vlan = true;
    p.eth.vlan_tci = 0x0005;  // PCP 0: the DSCP decides, not the PCP
    p.ip4.tos = 48 << 2 | 0b10;
    p.ip4.src = 0x0A000001;
    p.ip4.dst = 0x0A000002;
    p.hdr.bth.opcode = roce::op::RC_SEND_ONLY;
    p.hdr.bth.dqpn = 0x11;
    const uint8_t data[64] = {1, 2, 3};
    p.payload = data;
    p.payload_len = sizeof data;
    std::vector<uint8_t> f;
    REQUIRE(roce::encode_frame(p, f));
    b.inject(0, {{0, f}});
    b.run();
    const auto out = b.data_out(1);
    REQUIRE(out.size() == 1);
    CHECK(b.sw().counters(1, 6).tx_frames == 1);
    CHECK(b.sw().counters(1, 6).ecn_marked == 1);
    const tb::Decoded d = tb::decode(out[0].bytes);
    CHECK(d.ok);  // ICRC and the recomputed IPv4 checksum
    CHECK(d.ecn == 3);
}

TEST_CASE("switch: the depth series as CSV", "[model][switch]") {
    SwitchConfig c = plain(2);
    c.depth_sample_ps = 100'000;
    tb::SwitchBench b(c);
    b.inject(0, flow(1, 2, 3));
    b.run();  // the last frame out at 500 + 3 * 89.44 ns
    std::ostringstream os;
    b.sw().write_depth_csv(os);
    std::istringstream is(os.str());
    std::string line;
    std::getline(is, line);
    CHECK(line == "time_ns,port1_prio3");
    std::vector<std::string> rows;
    while (std::getline(is, line)) rows.push_back(line);
    REQUIRE(rows.size() == 8);  // 0, 100, ... 700 ns
    CHECK(rows[4] == "400,0");
    CHECK(rows[5] == "500,3294");  // all three in at 500 ns
    CHECK(rows[6] == "600,2196");  // one out at 589.44
    CHECK(rows[7] == "700,1098");
}
