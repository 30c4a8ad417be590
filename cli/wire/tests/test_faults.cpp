// The fault model alone: parsing, rates, directions and replay.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "simnic/wire/faults.h"

using namespace simnic::wire;

namespace {

// A RoCE v2 frame as far as the rules look: Ethernet, IPv4 with UDP, UDP
// destination port 4791; the rest is filler.
std::vector<uint8_t> frame(uint8_t dst_last, uint8_t src_last, size_t len = 100) {
    std::vector<uint8_t> f(len, 0xAB);
    const uint8_t dst[6] = {0x52, 0x54, 0, 0x12, 0x34, dst_last};
    const uint8_t src[6] = {0x52, 0x54, 0, 0x12, 0x34, src_last};
    std::copy(dst, dst + 6, f.begin());
    std::copy(src, src + 6, f.begin() + 6);
    f[12] = 0x08, f[13] = 0x00;
    f[14] = 0x45, f[20] = 0x40, f[21] = 0x00, f[23] = 17;  // IPv4, DF, no fragment offset, UDP
    f[36] = 0x12, f[37] = 0xB7;                           // UDP destination port 4791
    return f;
}

FaultRule rule(const std::string& text) {
    FaultRule r;
    std::string err;
    REQUIRE(parse_rule(text, r, err));
    return r;
}

}  // namespace

TEST_CASE("wire faults: rules parse rates, times and directions, mistakes are refused") {
    FaultRule r = rule("from=52:54:00:12:34:01,to=52:54:00:12:34:02,drop=1%,dup=0.5%,reorder=0.02,"
                       "corrupt=0.1%,delay=50us,jitter=2ms,hold=5ms");
    REQUIRE(r.from);
    CHECK((*r.from)[5] == 1);
    CHECK((*r.to)[5] == 2);
    CHECK(r.drop == Approx(0.01));
    CHECK(r.dup == Approx(0.005));
    CHECK(r.reorder == Approx(0.02));
    CHECK(r.corrupt == Approx(0.001));
    CHECK(r.delay_ns == 50'000);
    CHECK(r.jitter_ns == 2'000'000);
    CHECK(r.reorder_hold_ns == 5'000'000);
    CHECK(rule("delay=1s").delay_ns == 1'000'000'000);
    CHECK(rule("delay=7ns").delay_ns == 7);

    std::string err;
    FaultRule bad;
    CHECK_FALSE(parse_rule("", bad, err));
    CHECK_FALSE(parse_rule("drop", bad, err));
    CHECK(err.find("KEY=VALUE") != std::string::npos);
    CHECK_FALSE(parse_rule("drop=150%", bad, err));
    CHECK_FALSE(parse_rule("drop=-1", bad, err));
    CHECK_FALSE(parse_rule("drop=x", bad, err));
    CHECK_FALSE(parse_rule("delay=5", bad, err));     // a time needs its unit
    CHECK_FALSE(parse_rule("delay=5ks", bad, err));
    CHECK_FALSE(parse_rule("from=52:54:00:12:34", bad, err));
    CHECK_FALSE(parse_rule("loss=1%", bad, err));
    CHECK(err.find("unknown key") != std::string::npos);
    CHECK_FALSE(parse_rule("drop=60%,dup=50%", bad, err));
}

TEST_CASE("wire faults: delayed= makes only that share of frames late, by delay + jitter") {
    FaultRule r = rule("delay=20ms,jitter=1ms,delayed=5%");
    CHECK(r.delayed == Approx(0.05));
    CHECK(r.describe() == "from any to any: delay 20000+1000us for 5%");
    std::string err;
    FaultRule bad;
    CHECK_FALSE(parse_rule("delay=1ms,delayed=150%", bad, err));
    FaultInjector inj({r}, 9);
    const std::vector<uint8_t> f = frame(2, 1);
    constexpr int kN = 100'000;
    int late = 0;
    for (int i = 0; i < kN; ++i) {
        const Decision d = inj.decide(f.data(), f.size());
        if (d.delay_ns == 0) continue;
        ++late;
        CHECK(d.delay_ns >= 20'000'000);
        CHECK(d.delay_ns <= 21'000'000);
    }
    const double sd = std::sqrt(kN * 0.05 * 0.95);
    CHECK(std::abs(late - kN * 0.05) < 5 * sd);
    CHECK(inj.counters()[0].delayed == uint64_t(late));
}

TEST_CASE("wire faults: each fault happens at its rate, and the exclusive ones never together") {
    FaultInjector inj({rule("drop=5%,dup=3%,reorder=2%,corrupt=1%,delay=10us,jitter=10us")}, 42);
    const std::vector<uint8_t> f = frame(2, 1);
    constexpr int kN = 200'000;
    int drop = 0, dup = 0, reorder = 0, corrupt = 0, both = 0;
    for (int i = 0; i < kN; ++i) {
        const Decision d = inj.decide(f.data(), f.size());
        REQUIRE(d.rule == 0);
        drop += d.drop;
        dup += d.copies == 2;
        reorder += d.reorder;
        corrupt += d.corrupt;
        both += int(d.drop) + int(d.copies == 2) + int(d.reorder) + int(d.corrupt) > 1;
        if (!d.drop) {
            CHECK(d.delay_ns >= 10'000);
            CHECK(d.delay_ns <= 20'000);
        }
        if (d.corrupt) CHECK(d.flip_bit < (f.size() - 14) * 8);
    }
    // Binomial: 5 standard deviations either side.
    auto near = [](int got, double p) {
        const double mean = kN * p, sd = std::sqrt(kN * p * (1 - p));
        return got > mean - 5 * sd && got < mean + 5 * sd;
    };
    CHECK(near(drop, 0.05));
    CHECK(near(dup, 0.03));
    CHECK(near(reorder, 0.02));
    CHECK(near(corrupt, 0.01));
    CHECK(both == 0);
    const FaultCounters& c = inj.counters()[0];
    CHECK(c.frames == uint64_t(kN));
    CHECK(c.dropped == uint64_t(drop));
    CHECK(c.duplicated == uint64_t(dup));
    CHECK(c.reordered == 0);  // the wire counts a frame it actually holds back
    CHECK(c.corrupted == uint64_t(corrupt));
}

TEST_CASE("wire faults: the first matching rule decides, by source and destination MAC") {
    FaultInjector inj({rule("from=52:54:00:12:34:01,drop=100%"), rule("to=52:54:00:12:34:01,dup=100%")}, 1);
    const std::vector<uint8_t> a_to_b = frame(2, 1), b_to_a = frame(1, 2), c_to_b = frame(2, 3);
    Decision d = inj.decide(a_to_b.data(), a_to_b.size());
    CHECK(d.rule == 0);
    CHECK(d.drop);
    d = inj.decide(b_to_a.data(), b_to_a.size());
    CHECK(d.rule == 1);
    CHECK(d.copies == 2);
    d = inj.decide(c_to_b.data(), c_to_b.size());
    CHECK(d.rule == -1);
    CHECK_FALSE(d.drop);
    CHECK(d.copies == 1);
    // A runt frame has no MACs and is no RoCE frame: only a rule without
    // direction that takes every frame applies to it.
    const uint8_t runt[4] = {1, 2, 3, 4};
    CHECK(inj.decide(runt, sizeof runt).rule == -1);
    FaultInjector any({rule("drop=100%"), rule("frames=all,dup=100%")}, 1);
    CHECK(any.decide(runt, sizeof runt).rule == 1);
}

TEST_CASE("wire faults: rules take RoCE v2 frames only unless frames=all, ARP, ND and other UDP pass untouched") {
    // An ARP reply: a bit flipped in its sender MAC would teach the peer a
    // wrong address for tens of seconds (the QP stuck in the user guide's
    // example), so a default rule leaves it alone and does not count it.
    std::vector<uint8_t> arp = frame(2, 1, 60);
    arp[12] = 0x08, arp[13] = 0x06;
    // An IPv6 neighbour advertisement (ICMPv6, next header 58).
    std::vector<uint8_t> nd = frame(2, 1, 86);
    nd[12] = 0x86, nd[13] = 0xDD, nd[14] = 0x60, nd[20] = 58;
    // UDP to another port (a VXLAN frame, 4789).
    std::vector<uint8_t> vxlan = frame(2, 1);
    vxlan[37] = 0xB5;
    // A later IPv4 fragment: no UDP header in it.
    std::vector<uint8_t> frag = frame(2, 1);
    frag[21] = 0x10;
    // RoCE v2 over IPv6, and over IPv4 behind an 802.1Q tag with IP options.
    std::vector<uint8_t> v6 = frame(2, 1, 120);
    v6[12] = 0x86, v6[13] = 0xDD, v6[14] = 0x60, v6[20] = 17, v6[56] = 0x12, v6[57] = 0xB7;
    std::vector<uint8_t> tagged(frame(2, 1, 110));
    tagged[12] = 0x81, tagged[13] = 0x00, tagged[14] = 0x00, tagged[15] = 0x05, tagged[16] = 0x08, tagged[17] = 0x00;
    std::fill(tagged.begin() + 18, tagged.begin() + 42, 0);
    tagged[18] = 0x46, tagged[27] = 17, tagged[44] = 0x12, tagged[45] = 0xB7;

    FaultInjector inj({rule("drop=100%")}, 3);
    for (const auto* f : {&arp, &nd, &vxlan, &frag}) {
        const Decision d = inj.decide(f->data(), f->size());
        CHECK(d.rule == -1);
        CHECK_FALSE(d.drop);
    }
    CHECK(inj.counters()[0].frames == 0);
    for (const auto* f : {&v6, &tagged, &frag}) {
        if (f == &frag) continue;
        CHECK(inj.decide(f->data(), f->size()).drop);
    }
    CHECK(inj.counters()[0].frames == 2);

    FaultRule all = rule("to=52:54:00:12:34:02,frames=all,corrupt=100%");
    CHECK(all.all_frames);
    CHECK(all.describe() == "from any to 52:54:00:12:34:02, all frames: corrupt 100%");
    CHECK_FALSE(rule("frames=roce,drop=1%").all_frames);
    FaultInjector everything({all}, 3);
    for (const auto* f : {&arp, &nd, &vxlan, &frag, &v6}) CHECK(everything.decide(f->data(), f->size()).corrupt);

    std::string err;
    FaultRule bad;
    CHECK_FALSE(parse_rule("frames=arp,drop=1%", bad, err));
    CHECK(err == "bad value for frames: 'arp' (roce or all)");
}

TEST_CASE("wire faults: a seed replays the same decisions, rules draw from their own streams") {
    auto run = [](uint64_t seed, bool other_traffic) {
        FaultInjector inj({rule("from=52:54:00:12:34:01,drop=10%,corrupt=10%"), rule("drop=50%")}, seed);
        const std::vector<uint8_t> mine = frame(2, 1), other = frame(1, 2);
        std::vector<int> fate;
        for (int i = 0; i < 2000; ++i) {
            if (other_traffic) inj.decide(other.data(), other.size());
            const Decision d = inj.decide(mine.data(), mine.size());
            fate.push_back(d.drop ? -1 : d.corrupt ? int(d.flip_bit) : 0);
        }
        return fate;
    };
    CHECK(run(7, false) == run(7, false));
    CHECK(run(7, false) == run(7, true));  // traffic in the other direction changes nothing here
    CHECK(run(7, false) != run(8, false));
}

TEST_CASE("wire faults: corruption flips exactly one bit after the Ethernet header") {
    std::vector<uint8_t> f = frame(2, 1, 64);
    const std::vector<uint8_t> orig = f;
    Decision d;
    d.corrupt = true;
    d.flip_bit = 8 * 20 + 3;
    FaultInjector::corrupt(f, d);
    int diff = 0;
    for (size_t i = 0; i < f.size(); ++i)
        if (f[i] != orig[i]) {
            ++diff;
            CHECK(i == 14 + 20);
            CHECK((f[i] ^ orig[i]) == (1 << 3));
        }
    CHECK(diff == 1);
}

TEST_CASE("wire faults: ce= marks ECN-capable frames CE at its rate and leaves Not-ECT ones alone") {
    FaultRule r = rule("to=52:54:00:12:34:02,ce=25%");
    CHECK(r.ce == Approx(0.25));
    CHECK(r.describe().find("ce 25") != std::string::npos);
    // An IPv4 header after the Ethernet one, with a valid checksum.
    auto ipv4 = [](uint8_t tos) {
        std::vector<uint8_t> f = frame(2, 1, 80);
        f[12] = 0x08, f[13] = 0x00;
        uint8_t* ip = f.data() + 14;
        std::fill(ip, ip + 20, 0);
        ip[0] = 0x45, ip[1] = tos, ip[3] = 66, ip[8] = 64, ip[9] = 17;
        ip[12] = 10, ip[15] = 1, ip[16] = 10, ip[19] = 2;
        uint32_t sum = 0;
        for (int i = 0; i < 20; i += 2) sum += uint32_t(ip[i] << 8 | ip[i + 1]);
        while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
        ip[10] = uint8_t(~sum >> 8), ip[11] = uint8_t(~sum);
        return f;
    };
    auto checksum_ok = [](const std::vector<uint8_t>& f) {
        uint32_t sum = 0;
        for (int i = 0; i < 20; i += 2) sum += uint32_t(f[14 + i] << 8 | f[14 + i + 1]);
        while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
        return sum == 0xFFFF;
    };
    FaultInjector inj({r}, 7);
    int marked = 0, decided = 0;
    const int n = 4000;
    for (int i = 0; i < n; ++i) {
        std::vector<uint8_t> f = ipv4(0x02);  // ECT(0)
        const Decision d = inj.decide(f.data(), f.size());
        decided += d.ce;
        inj.mark_ce(f, d);
        CHECK((f[15] & 3) == (d.ce ? 3 : 2));
        CHECK(checksum_ok(f));
        marked += (f[15] & 3) == 3;
    }
    CHECK(marked == decided);
    CHECK(std::abs(marked - n / 4) < n / 20);
    CHECK(inj.counters()[0].ce_marked == uint64_t(marked));
    // Not-ECT: never marked, never counted.
    for (int i = 0; i < 100; ++i) {
        std::vector<uint8_t> f = ipv4(0x00);
        const std::vector<uint8_t> orig = f;
        inj.mark_ce(f, inj.decide(f.data(), f.size()));
        CHECK(f == orig);
    }
    CHECK(inj.counters()[0].ce_marked == uint64_t(marked));
}
