// The fabric (issue 15): a 2:1 incast of RDMA WRITE streams through the
// switch model, every device a whole model device, all in one simulated
// time (fabric_bench.h). Each case checks what its switch settings must
// show in the counters.
#include <catch2/catch.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "simnic/bench/fabric_bench.h"
#include "simnic/congestion/rp_record.h"
#include "simnic/roce/pcap_io.h"

using namespace simnic::model;

namespace {

fabric::Topology incast2() {
    fabric::Topology t;
    std::string err;
    REQUIRE(fabric::load_topology(std::string(SIMNIC_SOURCE_DIR) + "/docs/examples/fabric/incast2.toml", t, err));
    return t;
}

FabricBenchResult run(const FabricBenchSpec& s) {
    FabricBenchResult r;
    std::string err;
    const bool ok = run_fabric_bench(s, r, err);
    INFO(err);
    REQUIRE(ok);
    for (const FabricFlow& f : r.flows)
        std::printf("  %s: %llu msgs, %.1f Gb/s, retx %llu, naks %llu, pfc rx %llu held %llu, drops %llu, ce %llu\n",
                    f.host.c_str(), (unsigned long long)f.messages, f.gbps, (unsigned long long)f.retransmits,
                    (unsigned long long)f.naks_received, (unsigned long long)f.pfc_received,
                    (unsigned long long)f.pfc_held, (unsigned long long)f.drops, (unsigned long long)f.ce_marked);
    std::printf("  switch: drops %llu marks %llu pauses %llu resumes %llu, max queue %llu B, shared peak %llu B; "
                "%.1f us simulated in %.2f s\n",
                (unsigned long long)r.switch_drops, (unsigned long long)r.switch_marks,
                (unsigned long long)r.switch_pauses, (unsigned long long)r.switch_resumes,
                (unsigned long long)r.max_queue_bytes, (unsigned long long)r.shared_peak, r.sim_ns / 1000, r.wall_s);
    return r;
}

FabricBenchSpec spec(const fabric::Topology& t) {
    FabricBenchSpec s;
    s.topo = t;
    s.size = 32768;
    s.depth = 8;
    s.messages = 48;
    return s;
}

void all_complete(const FabricBenchResult& r, const FabricBenchSpec& s) {
    REQUIRE(r.flows.size() == 2);
    for (const FabricFlow& f : r.flows) {
        CHECK(f.messages == s.messages);
        CHECK(f.errors == 0);
    }
}

}  // namespace

TEST_CASE("fabric: 2:1 incast with ECN only: marks, the queue bounded by the buffer, no drops", "[fabric]") {
    fabric::Topology t = incast2();
    t.sw.priority[3].pfc = false;
    t.sw.priority[3].ecn = true;
    FabricBenchSpec s = spec(t);
    char dir[] = "/tmp/simnic-fabric-XXXXXX";
    REQUIRE(mkdtemp(dir));
    s.pcap = std::string(dir) + "/fabric.pcap";
    const FabricBenchResult r = run(s);
    all_complete(r, s);
    CHECK(r.switch_marks > 0);
    // The capture has each frame leaving its sender (ECT(0)) and reaching
    // its receiver: the CE marks are exactly those the fabric counted.
    std::string err;
    auto rd = simnic::roce::PcapReader::open(s.pcap, err);
    REQUIRE(rd);
    simnic::roce::PcapRecord rec;
    uint64_t frames = 0, ce = 0, ect0 = 0;
    while (rd->next(rec)) {
        ++frames;
        if (rec.data.size() < 16 || rec.data[12] != 0x08 || rec.data[13] != 0x00) continue;
        const unsigned ecn = rec.data[15] & 3;
        ce += ecn == 3;
        ect0 += ecn == 2;
    }
    std::remove(s.pcap.c_str());
    rmdir(dir);
    CHECK(ce == r.flows[0].ce_marked + r.flows[1].ce_marked);
    CHECK(ce == r.switch_marks);
    CHECK(ect0 > 0);
    CHECK(frames > 2 * 2 * s.messages);
    CHECK(r.flows[0].ce_marked + r.flows[1].ce_marked > 0);
    CHECK(r.switch_drops == 0);
    CHECK(r.switch_pauses == 0);
    CHECK(r.max_queue_bytes > t.sw.priority[3].kmin_bytes);
    CHECK(r.max_queue_bytes <= t.sw.buffer_bytes);
    // Without congestion control the senders' windows bound the queue:
    // 2 senders x depth x size, less what the line drains.
    CHECK(r.max_queue_bytes <= 2ull * s.depth * s.size);
    for (const FabricFlow& f : r.flows) CHECK(f.retransmits == 0);
}

TEST_CASE("fabric: 2:1 incast with PFC: the switch pauses, the senders' MAC TX honours it, no drops", "[fabric]") {
    fabric::Topology t = incast2();
    t.sw.priority[3].pfc = true;
    t.sw.priority[3].ecn = false;
    // XOFF low enough that the senders' windows cross it.
    t.sw.priority[3].xoff_bytes = 64 * 1024;
    t.sw.priority[3].xon_bytes = 56 * 1024;
    FabricBenchSpec s = spec(t);
    const FabricBenchResult r = run(s);
    all_complete(r, s);
    CHECK(r.switch_pauses > 0);
    CHECK(r.switch_resumes > 0);
    CHECK(r.switch_drops == 0);
    CHECK(r.switch_marks == 0);
    uint64_t received = 0, held = 0;
    for (const FabricFlow& f : r.flows) {
        received += f.pfc_received;
        held += f.pfc_held;
        CHECK(f.retransmits == 0);
    }
    CHECK(received > 0);
    CHECK(held > 0);
}

// Goodput collapses: the same workload through the file's lossless switch
// (PFC) moves its 3 MiB in 264 us, 95 Gb/s of the 100 Gb/s bottleneck;
// with neither PFC nor ECN and a 48 KiB buffer it takes 4.3 ms, 5.8 Gb/s.
// A message whose last packets were dropped has nothing behind it to
// reveal the gap (no NAK), so its sender waits out the local ACK timeout
// (4.096 us * 2^10) and goes back N; meanwhile the senders' links carried
// the retransmissions too.
TEST_CASE("fabric: 2:1 incast with neither and a small buffer: drops, go-back-N, goodput collapses, every "
          "message completes",
          "[fabric]") {
    fabric::Topology t = incast2();
    const FabricBenchSpec lossless_spec = spec(t);
    const FabricBenchResult lossless = run(lossless_spec);
    all_complete(lossless, lossless_spec);
    CHECK(lossless.switch_drops == 0);
    t.sw.priority[3].pfc = false;
    t.sw.priority[3].ecn = false;
    t.sw.buffer_bytes = 48 * 1024;
    FabricBenchSpec s = spec(t);
    const FabricBenchResult r = run(s);
    all_complete(r, s);
    CHECK(r.switch_drops > 0);
    uint64_t retx = 0, naks = 0;
    for (const FabricFlow& f : r.flows) {
        retx += f.retransmits;
        naks += f.naks_received;
    }
    CHECK(retx > 0);
    CHECK(naks > 0);
    CHECK(r.receiver_naks_sent > 0);
    std::printf("  goodput: %.2f Gb/s lossless, %.2f Gb/s with drops (their links %.2f Gb/s)\n", lossless.goodput_gbps,
                r.goodput_gbps, r.wire_gbps);
    CHECK(lossless.goodput_gbps > 0.85 * t.hosts[0].rate_gbps);  // h0's link, the bottleneck
    CHECK(r.goodput_gbps < 0.25 * lossless.goodput_gbps);
    // What the links carried beyond the goodput: the retransmissions and
    // the dropped frames, not only the headers (1.5% more: 96.82 against
    // 95.42 Gb/s through the lossless switch).
    CHECK(r.wire_gbps > 1.2 * r.goodput_gbps);
}

TEST_CASE("fabric: two senders into one receiver get roughly equal shares", "[fabric]") {
    fabric::Topology t = incast2();
    FabricBenchSpec s = spec(t);
    const FabricBenchResult r = run(s);
    all_complete(r, s);
    const double a = r.flows[0].gbps, b = r.flows[1].gbps;
    CHECK(a > 0);
    CHECK(b > 0);
    CHECK(std::fabs(a - b) / std::max(a, b) < 0.15);
    // Together they fill the receiver's 100 Gb/s link, not more.
    CHECK(a + b > 70);
    CHECK(a + b < 101);
}

TEST_CASE("fabric: with PFC, a victim flow to an uncongested receiver is slowed by head-of-line blocking",
          "[fabric]") {
    // h1 to h4 write to h0 (4:1, congested: a 25 Gb/s share each); h1 also
    // writes to h5, whose port is idle otherwise. PFC pauses h1's link for
    // the congestion at h0, and the device has one TX queue: the frames to
    // h5 wait too, so h1's two flows move at about the congested one's pace.
    fabric::Topology t;
    std::string err;
    REQUIRE(fabric::load_topology(std::string(SIMNIC_SOURCE_DIR) + "/docs/examples/fabric/incast8.toml", t, err));
    FabricBenchSpec s = spec(t);
    s.flows = {{"h1", "h0"}, {"h2", "h0"}, {"h3", "h0"}, {"h4", "h0"}, {"h1", "h5"}};
    auto victim = [](const FabricBenchResult& r) {
        for (const FabricFlow& f : r.flows)
            if (f.to == "h5") return f.gbps;
        return 0.0;
    };
    // Without PFC (ECN only, a buffer deep enough for every window): no
    // pause, the victim has its share of h1's line.
    s.topo.sw.priority[3].pfc = false;
    const FabricBenchResult free_run = run(s);
    CHECK(free_run.switch_pauses == 0);
    CHECK(free_run.switch_drops == 0);
    // With PFC at a low XOFF: h1 is paused, and the flow to h5 with it.
    s.topo.sw.priority[3].pfc = true;
    s.topo.sw.priority[3].xoff_bytes = 64 * 1024;
    s.topo.sw.priority[3].xon_bytes = 56 * 1024;
    const FabricBenchResult blocked = run(s);
    REQUIRE(blocked.flows.size() == 5);
    for (const FabricFlow& f : blocked.flows) {
        CHECK(f.messages == s.messages);
        CHECK(f.errors == 0);
    }
    CHECK(blocked.switch_pauses > 0);
    CHECK(blocked.switch_drops == 0);
    std::printf("  victim h1 -> h5: %.1f Gb/s without PFC, %.1f Gb/s with\n", victim(free_run), victim(blocked));
    CHECK(victim(blocked) < 0.7 * victim(free_run));
}

TEST_CASE("fabric: a leaf-spine, where PFC pauses propagate hop by hop back to the sender", "[fabric]") {
    // h1 (leaf 1) and h2 (leaf 0) write to h0 (leaf 0): the congestion is at
    // leaf 0's port to h0. Leaf 0 pauses the spine (its uplink ingress is
    // over XOFF), the spine's queue to leaf 0 grows until it pauses leaf 1,
    // whose queue to the spine grows until it pauses h1.
    fabric::Topology t;
    std::string err;
    REQUIRE(fabric::load_topology(std::string(SIMNIC_SOURCE_DIR) + "/docs/examples/fabric/leafspine.toml", t, err));
    REQUIRE(t.leaves == 2);
    REQUIRE(t.spines == 1);
    t.sw.priority[3].ecn = false;
    t.sw.priority[3].xoff_bytes = 64 * 1024;
    t.sw.priority[3].xon_bytes = 56 * 1024;
    FabricBenchSpec s = spec(t);
    s.flows = {{"h1", "h0"}, {"h2", "h0"}};
    const FabricBenchResult r = run(s);
    all_complete(r, s);
    CHECK(r.switch_drops == 0);
    REQUIRE(r.switches.size() == 3);
    for (const auto& sw : r.switches) {
        std::printf("  %s pauses sent per port:", sw.name.c_str());
        for (uint64_t p : sw.pauses_sent) std::printf(" %llu", (unsigned long long)p);
        std::printf("\n");
    }
    // Leaf 0: h0 port 0, h2 port 1, uplink port 2. Leaf 1: h1 port 0, h3
    // port 1, uplink 2. Spine: port k to leaf k.
    CHECK(r.switches[0].pauses_sent[2] > 0);  // leaf 0 pauses the spine
    CHECK(r.switches[2].pauses_sent[1] > 0);  // the spine pauses leaf 1
    CHECK(r.switches[1].pauses_sent[0] > 0);  // leaf 1 pauses h1
    CHECK(r.switches[0].pauses_sent[1] > 0);  // leaf 0 pauses h2 (local)
    CHECK(r.switches[1].pauses_sent[1] == 0); // h3 sends nothing
    for (const FabricFlow& f : r.flows) CHECK(f.pfc_received > 0);
    // The two flows share h0's link.
    CHECK(r.flows[0].gbps + r.flows[1].gbps > 70);
}

namespace {

// The bin of flow f's first frame on the wire (its series from the start).
size_t first_bin(const FabricBenchResult& r, size_t f) {
    const auto& s = r.flows[f].wire_gbps_series;
    for (size_t b = 0; b < s.size(); ++b)
        if (s[b] > 0) return b;
    return s.size();
}

}  // namespace

TEST_CASE("fabric: --start-jitter-us starts each flow at its own time, drawn from the switch's seed", "[fabric]") {
    fabric::Topology t = incast2();
    FabricBenchSpec s = spec(t);
    s.bin_ns = 1'000;  // 1 us bins: the starts are tens of us apart
    const FabricBenchResult together = run(s);
    all_complete(together, s);
    // Together: both flows' first frames in one bin, a doorbell's way into
    // the pipeline (a few us) after the start.
    const size_t lead = first_bin(together, 0);
    CHECK(first_bin(together, 1) == lead);
    CHECK(lead < 10);
    s.start_jitter_us = 200;
    std::vector<std::pair<size_t, size_t>> starts;
    for (uint64_t seed : {1, 2, 3}) {
        s.topo.sw.seed = seed;
        const FabricBenchResult r = run(s);
        all_complete(r, s);  // every message still completes
        starts.emplace_back(first_bin(r, 0), first_bin(r, 1));
        std::printf("  seed %llu: flows start in bins %zu and %zu (1 us)\n", (unsigned long long)seed,
                    starts.back().first, starts.back().second);
        CHECK(starts.back().first < 200 + lead + 1);
        CHECK(starts.back().second < 200 + lead + 1);
        CHECK(starts.back().first != starts.back().second);
    }
    // Different seeds, different starts; the same seed, the same.
    CHECK((starts[0] != starts[1] || starts[1] != starts[2]));
    s.topo.sw.seed = 1;
    const FabricBenchResult again = run(s);
    CHECK(std::make_pair(first_bin(again, 0), first_bin(again, 1)) == starts[0]);
}

TEST_CASE("fabric: the mean of runs averages each flow's series bin by bin over the bins every run has", "[fabric]") {
    FabricBenchResult a, b;
    a.bin_ns = b.bin_ns = 10'000;
    a.congestion_on = b.congestion_on = true;
    a.flows.resize(2);
    b.flows.resize(2);
    a.flows[0].wire_gbps_series = {10, 20, 30, 40};
    b.flows[0].wire_gbps_series = {30, 40, 50};
    a.flows[1].wire_gbps_series = {0, 100, 0};
    b.flows[1].wire_gbps_series = {100, 0, 100, 7};
    a.flows[0].wire_frames = 3, a.flows[0].wire_bytes = 300;
    b.flows[0].wire_frames = 1, b.flows[0].wire_bytes = 500;
    a.dest_depth_bytes = {1000, 3000};
    b.dest_depth_bytes = {3000, 5000, 9};
    a.switch_marks = 5;
    const FabricBenchResult m = mean_of_runs({a, b});
    REQUIRE(m.flows.size() == 2);
    CHECK(m.flows[0].wire_gbps_series == std::vector<double>{20, 30, 40});
    CHECK(m.flows[1].wire_gbps_series == std::vector<double>{50, 50, 50});
    CHECK(m.flows[0].wire_frames == 4);
    CHECK(m.flows[0].wire_bytes == 800);
    CHECK(m.dest_depth_bytes == std::vector<double>{2000, 4000});
    CHECK(m.bin_ns == 10'000);
    CHECK(m.switch_marks == 5);  // the rest: the first run's
    CHECK(mean_of_runs({}).flows.empty());
    // Another fabric's run (one flow) takes no part.
    FabricBenchResult other;
    other.flows.resize(1);
    other.flows[0].wire_gbps_series = {1000, 1000, 1000};
    const FabricBenchResult m2 = mean_of_runs({a, b, other});
    CHECK(m2.flows[0].wire_gbps_series == std::vector<double>{20, 30, 40});
}

TEST_CASE("fabric: each flow's DCQCN state over time: sampled at each bin's end, averaged over runs, "
          "written as CSV with Rc, Rt and alpha per flow",
          "[fabric]") {
    FabricBenchResult a, b;
    a.bin_ns = b.bin_ns = 10'000;
    a.congestion_on = b.congestion_on = true;
    a.flows.resize(2);
    b.flows.resize(2);
    a.flows[0].host = "h1", a.flows[0].to = "h0";
    a.flows[1].host = "h2", a.flows[1].to = "h0";
    a.flows[0].rc_gbps_series = {100, 50, 60};
    b.flows[0].rc_gbps_series = {100, 30};
    a.flows[0].rt_gbps_series = {100, 100, 100};
    b.flows[0].rt_gbps_series = {100, 80};
    a.flows[0].alpha_series = {1, 1, 0.9};
    b.flows[0].alpha_series = {1, 0.5};
    for (FabricBenchResult* r : {&a, &b}) {
        r->flows[1].rc_gbps_series = {100, 100};
        r->flows[1].rt_gbps_series = {100, 100};
        r->flows[1].alpha_series = {1, 1};
    }
    const FabricBenchResult m = mean_of_runs({a, b});
    REQUIRE(m.flows.size() == 2);
    CHECK(m.flows[0].rc_gbps_series == std::vector<double>{100, 40});
    CHECK(m.flows[0].rt_gbps_series == std::vector<double>{100, 90});
    CHECK(m.flows[0].alpha_series == std::vector<double>{1, 0.75});
    // The CSV: a comment, the header, a row per bin stamped with its end.
    const std::string csv = fabric_dcqcn_csv(a);
    std::vector<std::string> lines;
    for (size_t at = 0, nl; (nl = csv.find('\n', at)) != std::string::npos; at = nl + 1)
        lines.push_back(csv.substr(at, nl - at));
    REQUIRE(lines.size() == 5);
    CHECK(lines[0].rfind("# ", 0) == 0);
    CHECK(lines[1] == "t_us,h1_h0_rc_gbps,h1_h0_rt_gbps,h1_h0_alpha,h2_h0_rc_gbps,h2_h0_rt_gbps,h2_h0_alpha");
    CHECK(lines[2] == "10,100,100,1,100,100,1");
    CHECK(lines[3] == "20,50,100,1,100,100,1");
    CHECK(lines[4] == "30,60,100,0.9,,,");  // the second flow's series ends earlier: empty cells
    const std::string svg = fabric_dcqcn_svg(a, "t");
    CHECK(svg.find("<title>h1 -&gt; h0, Rc</title>") != std::string::npos);
    CHECK(svg.find("<title>h2 -&gt; h0, alpha</title>") != std::string::npos);
}

TEST_CASE("fabric: with DCQCN on, a run samples each flow's reaction point at every bin's end, "
          "and sampling changes nothing simulated",
          "[fabric]") {
    FabricBenchSpec s;
    s.topo = incast2();
    s.size = 65536;
    s.depth = 16;
    s.duration_us = 1000;
    s.cfg.congestion.enable = 0;
    const FabricBenchResult off = run(s);
    s.cfg.congestion.enable = 1;
    const FabricBenchResult on = run(s);
    REQUIRE(on.flows.size() == 2);
    for (const FabricFlow& f : off.flows) CHECK(f.rc_gbps_series.empty());
    for (const FabricFlow& f : on.flows) {
        // A sample per bin to the end of the run (posting stops at 1 ms,
        // then what was posted completes).
        CHECK(f.rc_gbps_series.size() >= 100);
        CHECK(double(f.rc_gbps_series.size()) <= on.sim_ns / on.bin_ns + 1);
        CHECK(f.rt_gbps_series.size() == f.rc_gbps_series.size());
        CHECK(f.alpha_series.size() == f.rc_gbps_series.size());
        // At the line rate until the first CNP, then cut by the incast.
        CHECK(f.rc_gbps_series.front() == Approx(100));
        CHECK(*std::min_element(f.rc_gbps_series.begin(), f.rc_gbps_series.end()) < 50);
        for (size_t b = 0; b < f.rc_gbps_series.size(); ++b) {
            CHECK(f.rc_gbps_series[b] <= f.rt_gbps_series[b] + 1e-9);
            CHECK(f.alpha_series[b] >= 0);
            CHECK(f.alpha_series[b] <= 1);
        }
    }
    // The same run sampled at another bin: the same messages, bytes and
    // marks, so stopping the simulation to sample moved nothing.
    s.bin_ns = 7'000;
    const FabricBenchResult other = run(s);
    REQUIRE(other.flows.size() == 2);
    for (size_t i = 0; i < 2; ++i) {
        CHECK(other.flows[i].messages == on.flows[i].messages);
        CHECK(other.flows[i].wire_bytes == on.flows[i].wire_bytes);
        CHECK(other.flows[i].cnp_received == on.flows[i].cnp_received);
    }
    CHECK(other.switch_marks == on.switch_marks);
    CHECK(other.sim_ns == on.sim_ns);
}

namespace {

// Every report of every host's reaction points, in the order told, and each
// passed on to a record as well (as a daemon's fabric keeps them).
struct Told {
    size_t host;
    uint32_t id;
    uint64_t t_ns;
    char kind;  // 'b'egin, 'r'ate, 'a'lpha, 'e'nd
    double x, y;
};
class Teller final : public simnic::congestion::RpObserver {
public:
    Teller(std::vector<Told>& log, size_t host, simnic::congestion::RpObserver* also)
        : log_(log), host_(host), also_(also) {}
    void rp_begin(uint32_t id, uint64_t t) override {
        log_.push_back({host_, id, t, 'b', 0, 0});
        also_->rp_begin(id, t);
    }
    void rp_rate(uint32_t id, uint64_t t, double rc, double rt) override {
        log_.push_back({host_, id, t, 'r', rc, rt});
        also_->rp_rate(id, t, rc, rt);
    }
    void rp_alpha(uint32_t id, uint64_t t, double a) override {
        log_.push_back({host_, id, t, 'a', a, 0});
        also_->rp_alpha(id, t, a);
    }
    void rp_end(uint32_t id, uint64_t t) override {
        log_.push_back({host_, id, t, 'e', 0, 0});
        also_->rp_end(id, t);
    }

private:
    std::vector<Told>& log_;
    size_t host_;
    simnic::congestion::RpObserver* also_;
};

// RP (host, id)'s last report of `kind` at or before t_ns: {x, y}, or
// nothing (NaN) if it told none.
std::pair<double, double> told_at(const std::vector<Told>& log, size_t host, uint32_t id, char kind, uint64_t t_ns) {
    std::pair<double, double> v{std::nan(""), std::nan("")};
    for (const Told& e : log)
        if (e.host == host && e.id == id && e.kind == kind && e.t_ns <= t_ns) v = {e.x, e.y};
    return v;
}

}  // namespace

TEST_CASE("fabric: each QP's reaction point, as it tells its changes, is what the bench samples at every "
          "bin's end, and a record of them holds the state at each of its bins' ends",
          "[fabric]") {
    namespace cg = simnic::congestion;
    FabricBenchSpec s;
    s.topo = incast2();
    s.size = 65536;
    s.depth = 16;
    s.duration_us = 500;
    s.cfg.congestion.enable = 1;
    std::vector<Told> log;
    cg::RpRecord record(10'000, size_t{1} << 20);
    std::vector<std::unique_ptr<Teller>> tellers;
    s.rp_observer = [&](size_t host) {
        tellers.push_back(std::make_unique<Teller>(log, host, record.source(uint32_t(host))));
        return tellers.back().get();
    };
    const FabricBenchResult r = run(s);
    REQUIRE(r.flows.size() == 2);
    REQUIRE(tellers.size() == 3);
    // Each kind of report in time order, per RP; every RP began first.
    std::map<std::pair<size_t, uint32_t>, std::map<char, uint64_t>> last;
    for (const Told& e : log) {
        auto& l = last[{e.host, e.id}];
        if (e.kind != 'b') CHECK(l.count('b'));
        if (l.count(e.kind)) CHECK(e.t_ns >= l[e.kind]);
        l[e.kind] = e.t_ns;
    }
    // The senders' QPs: h1 and h2 (hosts 1 and 2), one QP each.
    const double start_ns = r.start_ns;
    size_t cuts = 0;
    for (size_t f = 0; f < 2; ++f) {
        const size_t host = f + 1;
        std::set<uint32_t> ids;
        for (const Told& e : log)
            if (e.host == host && e.kind == 'r' && e.x < 99e9) ids.insert(e.id);
        REQUIRE(ids.size() == 1);  // the sender's one QP, cut by CNPs
        const uint32_t id = *ids.begin();
        const FabricFlow& fl = r.flows[f];
        REQUIRE(fl.rc_gbps_series.size() >= 50);
        for (size_t k = 0; k < fl.rc_gbps_series.size(); ++k) {
            const uint64_t t = uint64_t(std::llround(start_ns)) + (k + 1) * r.bin_ns;
            const auto [rc, rt] = told_at(log, host, id, 'r', t);
            const double alpha = told_at(log, host, id, 'a', t).first;
            INFO("flow " << f << " bin " << k << " at " << t << " ns");
            CHECK(rc / 1e9 == Approx(fl.rc_gbps_series[k]).epsilon(1e-12));
            CHECK(rt / 1e9 == Approx(fl.rt_gbps_series[k]).epsilon(1e-12));
            CHECK(alpha == Approx(fl.alpha_series[k]).epsilon(1e-12));
        }
        for (const Told& e : log) cuts += e.host == host && e.id == id && e.kind == 'r' && e.x < e.y;
    }
    CHECK(cuts > 0);
    // The record: at each of its 10 us bins' ends (from simulated time 0),
    // the last state told by then; before a QP began, nothing.
    const uint64_t now_ns = uint64_t(std::llround(start_ns + r.sim_ns));
    const cg::RpRecord::Table tab = record.table(10'000, size_t{1} << 22, now_ns);
    CHECK(tab.bin_ns == 10'000);
    size_t compared = 0;
    for (const cg::RpRecord::Track& k : tab.tracks) {
        REQUIRE(k.rc_bps.size() == tab.bins);
        for (size_t b = 0; b < tab.bins; ++b) {
            const uint64_t end = (b + 1) * tab.bin_ns - 1;  // the bin's last nanosecond
            const auto [rc, rt] = told_at(log, k.source, k.id, 'r', end);
            const double alpha = told_at(log, k.source, k.id, 'a', end).first;
            INFO("host " << k.source << " qp " << k.id << " bin " << b);
            if (end < k.begin_ns) {
                CHECK(std::isnan(k.rc_bps[b]));
                continue;
            }
            CHECK(k.rc_bps[b] == rc);
            CHECK(k.rt_bps[b] == rt);
            CHECK(k.alpha[b] == alpha);
            ++compared;
        }
    }
    CHECK(compared > 100);
}

TEST_CASE("fabric: the fluid plot draws each flow on the wire (solid) and in the fluid model (dashed), "
          "one point per bin, one scale",
          "[fabric]") {
    FabricBenchResult r;
    r.flows.resize(2);
    r.flows[0].host = "h1", r.flows[0].to = "h0";
    r.flows[1].host = "h2", r.flows[1].to = "h0";
    FabricFluid ff;
    // The fabric: two bins of 1 ms; the model: a step every 0.1 ms.
    ff.fabric.t_s = {1e-3, 2e-3};
    ff.fabric.rate_bps = {{40e9, 50e9}, {60e9, 50e9}};
    for (int k = 0; k <= 20; ++k) ff.fluid.t_s.push_back(k * 1e-4);
    ff.fluid.rate_bps.assign(2, std::vector<double>(21, 50e9));
    ff.fluid.rate_bps[1][0] = 80e9;  // the highest of either: the shared top
    const std::string svg = fabric_fluid_svg(r, ff, "t");
    auto count = [&](const std::string& what) {
        size_t n = 0;
        for (size_t at = svg.find(what); at != std::string::npos; at = svg.find(what, at + 1)) ++n;
        return n;
    };
    CHECK(count("<g class=\"series left\"") == 2);
    CHECK(count("<g class=\"series right\"") == 2);
    CHECK(svg.find("<title>h1 -&gt; h0, fabric</title>") != std::string::npos);
    CHECK(svg.find("<title>h2 -&gt; h0, fluid model</title>") != std::string::npos);
    // 21 model steps thinned to a point per millisecond: 0, 1 and 2 ms.
    const size_t right = svg.find("<g class=\"series right\"");
    REQUIRE(right != std::string::npos);
    const size_t line = svg.find("points=\"", right);
    REQUIRE(line != std::string::npos);
    const std::string pts = svg.substr(line + 8, svg.find('"', line + 8) - line - 8);
    CHECK(std::count(pts.begin(), pts.end(), ',') == 3);
    // Both axes have the same ticks, up to the highest rate, 80 Gb/s.
    auto ticks = [&](const std::string& cls) {
        std::vector<std::string> t;
        const std::string tag = "<text class=\"" + cls + "\"";
        for (size_t at = svg.find(tag); at != std::string::npos; at = svg.find(tag, at + 1)) {
            const size_t b = svg.find('>', at) + 1;
            t.push_back(svg.substr(b, svg.find('<', b) - b));
        }
        return t;
    };
    CHECK(ticks("tick-yl") == ticks("tick-yr"));
    REQUIRE_FALSE(ticks("tick-yl").empty());
    CHECK(ticks("tick-yl").front() == "0");
    CHECK(ticks("tick-yl").back() == "80");
}
