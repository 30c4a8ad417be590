// The fault model alone: parsing, rates, directions and replay.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "simnic/wire/faults.h"

using namespace simnic::wire;

namespace {

std::vector<uint8_t> frame(uint8_t dst_last, uint8_t src_last, size_t len = 100) {
    std::vector<uint8_t> f(len, 0xAB);
    const uint8_t dst[6] = {0x52, 0x54, 0, 0x12, 0x34, dst_last};
    const uint8_t src[6] = {0x52, 0x54, 0, 0x12, 0x34, src_last};
    std::copy(dst, dst + 6, f.begin());
    std::copy(src, src + 6, f.begin() + 6);
    return f;
}

FaultRule rule(const std::string& text) {
    FaultRule r;
    std::string err;
    REQUIRE(parse_rule(text, r, err));
    return r;
}

}  // namespace

TEST_CASE("wire faults: rules parse rates, times and directions; mistakes are refused") {
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
    // A runt frame has no MACs: only a rule without direction applies to it.
    const uint8_t runt[4] = {1, 2, 3, 4};
    CHECK(inj.decide(runt, sizeof runt).rule == -1);
}

TEST_CASE("wire faults: a seed replays the same decisions; rules draw from their own streams") {
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
