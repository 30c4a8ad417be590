// DCQCN's reaction point against values worked out by hand from the
// paper's rules (Zhu et al., SIGCOMM 2015, section 3.2, as dcqcn.h cites
// them).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "simnic/congestion/dcqcn.h"

using namespace simnic::congestion;

namespace {
constexpr double kG = 100e9;
constexpr uint64_t kUs = 1000;
}  // namespace

TEST_CASE("RP: defaults are the published ones and pass the check", "[dcqcn]") {
    const DcqcnConfig c;
    CHECK(check(c) == nullptr);
    CHECK(c.g == 1.0 / 256);
    CHECK(c.initial_alpha == 1.0);
    CHECK(c.alpha_timer_ns == 55 * kUs);
    CHECK(c.rate_timer_ns == 55 * kUs);
    CHECK(c.fast_recovery_steps == 5);
    CHECK(c.rai_bps == 40e6);
    CHECK(c.rhai_bps == 200e6);                    // the authors' ns-3 sample configuration
    CHECK(c.byte_counter_bytes == 10'000'000);     // 10 MB, as the authors' fluid model
    DcqcnConfig bad = c;
    bad.g = 0;
    CHECK(check(bad) != nullptr);
    bad = c;
    bad.min_rate_bps = 2 * c.line_rate_bps;
    CHECK(check(bad) != nullptr);
    bad = c;
    bad.rate_timer_ns = 0;
    CHECK(check(bad) != nullptr);
}

TEST_CASE("RP: one CNP from line rate with alpha = 1 halves the rate", "[dcqcn]") {
    DcqcnRp rp;  // 100 Gb/s, alpha 1
    CHECK(rp.rate_bps() == kG);
    CHECK_FALSE(rp.rate_limited());
    rp.on_cnp(10 * kUs);
    // Rt = Rc = 100G; Rc = 100G (1 - 1/2) = 50G; alpha = (1 - g) 1 + g = 1.
    CHECK(rp.target_rate_bps() == kG);
    CHECK(rp.rate_bps() == kG / 2);
    CHECK(rp.alpha() == Approx(1.0).epsilon(1e-15));
    CHECK(rp.rate_limited());
    CHECK(rp.counters().cnps_received == 1);
    // A second CNP right away: Rt = 50G, Rc = 25G.
    rp.on_cnp(10 * kUs + 1);
    CHECK(rp.target_rate_bps() == kG / 2);
    CHECK(rp.rate_bps() == kG / 4);
}

TEST_CASE("RP: alpha decays by (1 - g) every K without a CNP", "[dcqcn]") {
    DcqcnConfig c;
    DcqcnRp rp(c, 0);
    const double g = c.g;
    double a = 1.0;
    rp.advance(c.alpha_timer_ns - 1);
    CHECK(rp.alpha() == 1.0);  // not yet
    for (int n = 1; n <= 20; ++n) {
        rp.advance(uint64_t(n) * c.alpha_timer_ns);
        a = (1 - g) * a;
        INFO("period " << n);
        CHECK(rp.alpha() == Approx(a).epsilon(1e-12));
    }
    CHECK(rp.counters().alpha_decays == 20);
    // Several periods in one call count each.
    rp.advance(25 * c.alpha_timer_ns + 7);
    for (int n = 21; n <= 25; ++n) a = (1 - g) * a;
    CHECK(rp.alpha() == Approx(a).epsilon(1e-12));
    // A CNP: alpha = (1 - g) alpha + g, and the alpha timer restarts from it.
    rp.on_cnp(25 * c.alpha_timer_ns + 100);
    a = (1 - g) * a + g;
    CHECK(rp.alpha() == Approx(a).epsilon(1e-12));
    rp.advance(26 * c.alpha_timer_ns + 99);  // K after the CNP, minus 1 ns
    CHECK(rp.alpha() == Approx(a).epsilon(1e-12));
    rp.advance(26 * c.alpha_timer_ns + 100);
    CHECK(rp.alpha() == Approx((1 - g) * a).epsilon(1e-12));
    // A long idle gap does not loop forever and leaves alpha near 0.
    rp.advance(uint64_t(3600) * 1'000'000'000);
    CHECK(rp.alpha() >= 0.0);
    CHECK(rp.alpha() < 1e-12);
}

TEST_CASE("RP: fast recovery for F timer periods, then additive increase", "[dcqcn]") {
    DcqcnConfig c;
    c.byte_counter_bytes = 0;  // the timer alone
    DcqcnRp rp(c, 0);
    rp.on_cnp(0);  // Rt 100G, Rc 50G
    rp.on_cnp(0);  // Rt 50G, Rc 25G, alpha still 1
    REQUIRE(rp.target_rate_bps() == 50e9);
    REQUIRE(rp.rate_bps() == 25e9);
    // Rc = (Rt + Rc) / 2 five times: 37.5, 43.75, 46.875, 48.4375, 49.21875 Gb/s.
    const double fr[] = {37.5e9, 43.75e9, 46.875e9, 48.4375e9, 49.21875e9};
    for (int i = 0; i < 5; ++i) {
        CHECK(rp.stage() == (i == 0 ? IncreaseStage::FastRecovery : IncreaseStage::FastRecovery));
        rp.advance(uint64_t(i + 1) * c.rate_timer_ns - 1);
        CHECK(rp.timer_count() == unsigned(i));
        rp.advance(uint64_t(i + 1) * c.rate_timer_ns);
        INFO("step " << i + 1);
        CHECK(rp.rate_bps() == fr[i]);
        CHECK(rp.target_rate_bps() == 50e9);
    }
    CHECK(rp.counters().fast_recovery_steps == 5);
    // The sixth expiry: additive increase, Rt = 50.04G, Rc = (50.04 + 49.21875) / 2.
    rp.advance(6 * c.rate_timer_ns);
    CHECK(rp.counters().additive_steps == 1);
    CHECK(rp.target_rate_bps() == Approx(50.04e9).epsilon(1e-12));
    CHECK(rp.rate_bps() == Approx(49.629375e9).epsilon(1e-12));
    rp.advance(7 * c.rate_timer_ns);
    CHECK(rp.target_rate_bps() == Approx(50.08e9).epsilon(1e-12));
    CHECK(rp.rate_bps() == Approx(49.8546875e9).epsilon(1e-12));
    // Without the byte counter, never hyper increase.
    rp.advance(100 * c.rate_timer_ns);
    CHECK(rp.counters().hyper_steps == 0);
    CHECK(rp.counters().additive_steps == 95);
}

TEST_CASE("RP: a short scenario, timer and byte counter, by hand", "[dcqcn]") {
    // Small numbers that are easy to follow: 10 Gb/s, F = 2, B = 1000 bytes,
    // T = 10 us, R_AI = 100 Mb/s, R_HAI = 1 Gb/s; K long enough to stay out.
    DcqcnConfig c;
    c.line_rate_bps = 10e9;
    c.fast_recovery_steps = 2;
    c.byte_counter_bytes = 1000;
    c.rate_timer_ns = 10 * kUs;
    c.rai_bps = 100e6;
    c.rhai_bps = 1e9;
    c.alpha_timer_ns = 1'000 * kUs;
    REQUIRE(check(c) == nullptr);
    DcqcnRp rp(c, 0);

    rp.on_cnp(0);      // Rt 10G, Rc 5G
    rp.on_cnp(1'000);  // Rt 5G, Rc 2.5G; the timer restarts: next at 11 us
    CHECK(rp.rate_bps() == 2.5e9);
    // 2000 bytes: two byte counter events (BC 1, 2), both fast recovery.
    rp.on_bytes_sent(2'000, 2'000);
    CHECK(rp.byte_count() == 2);
    CHECK(rp.rate_bps() == 4.375e9);  // 3.75G, then 4.375G
    // 11 us: timer T_cnt 1; max(1, 2) <= F: fast recovery.
    rp.advance(11'000);
    CHECK(rp.rate_bps() == 4.6875e9);
    CHECK(rp.target_rate_bps() == 5e9);
    // BC 3 > F, T_cnt 1 <= F: additive. Rt 5.1G, Rc (5.1 + 4.6875) / 2.
    CHECK(rp.stage() == IncreaseStage::FastRecovery);  // before the event: BC 2, T 1
    rp.on_bytes_sent(1'000, 12'000);
    CHECK(rp.target_rate_bps() == Approx(5.1e9).epsilon(1e-12));
    CHECK(rp.rate_bps() == Approx(4.89375e9).epsilon(1e-12));
    // 21 us: T_cnt 2, still <= F: additive. Rt 5.2G, Rc 5.046875G.
    rp.advance(21'000);
    CHECK(rp.target_rate_bps() == Approx(5.2e9).epsilon(1e-12));
    CHECK(rp.rate_bps() == Approx(5.046875e9).epsilon(1e-12));
    // 31 us: T_cnt 3 and BC 3 both > F: hyper. Rt 6.2G, Rc 5.6234375G.
    rp.advance(31'000);
    CHECK(rp.stage() == IncreaseStage::Hyper);
    CHECK(rp.target_rate_bps() == Approx(6.2e9).epsilon(1e-12));
    CHECK(rp.rate_bps() == Approx(5.6234375e9).epsilon(1e-12));
    // 41 us: T_cnt 4, BC 3: min(4, 3) - F = 1, one R_HAI again. Rt 7.2G,
    // Rc (7.2 + 5.6234375) / 2.
    rp.advance(41'000);
    CHECK(rp.target_rate_bps() == Approx(7.2e9).epsilon(1e-12));
    CHECK(rp.rate_bps() == Approx(6.41171875e9).epsilon(1e-12));
    // BC 4: min(4, 4) - F = 2: the step grows to 2 R_HAI, as QCN's
    // hyperactive increase (and the DCQCN authors' ns-3). Rt 9.2G.
    rp.on_bytes_sent(1'000, 42'000);
    CHECK(rp.target_rate_bps() == Approx(9.2e9).epsilon(1e-12));
    CHECK(rp.rate_bps() == Approx(7.805859375e9).epsilon(1e-12));
    const RpCounters& k = rp.counters();
    CHECK(k.cnps_received == 2);
    CHECK(k.fast_recovery_steps == 3);
    CHECK(k.additive_steps == 2);
    CHECK(k.hyper_steps == 3);
    CHECK(k.rate_limited_ns == 42'000);
    CHECK(k.alpha_decays == 0);
}

TEST_CASE("RP: the rate recovers to line rate and stays within its bounds", "[dcqcn]") {
    DcqcnConfig c;
    c.min_rate_bps = 1e9;
    DcqcnRp rp(c, 0);
    // A storm of CNPs: Rc halves (alpha stays near 1) down to the floor.
    uint64_t t = 0;
    for (int i = 0; i < 40; ++i, t += 1'000) {
        rp.on_cnp(t);
        CHECK(rp.rate_bps() >= c.min_rate_bps);
        CHECK(rp.target_rate_bps() >= c.min_rate_bps);
    }
    CHECK(rp.rate_bps() == c.min_rate_bps);
    // Then quiet: the timer brings it back, never past line rate, and the
    // QP is no longer rate-limited once there.
    double last = rp.rate_bps();
    uint64_t limited_until = 0;
    for (; t < 2'000'000'000; t += 5 * kUs) {
        rp.on_bytes_sent(4096, t);  // some traffic: the byte counter runs too
        CHECK(rp.rate_bps() <= c.line_rate_bps);
        CHECK(rp.target_rate_bps() <= c.line_rate_bps);
        CHECK(rp.rate_bps() >= last);  // no CNP: never down
        last = rp.rate_bps();
        if (!rp.rate_limited()) {
            limited_until = t;
            break;
        }
    }
    REQUIRE(limited_until != 0);
    CHECK(rp.rate_bps() == c.line_rate_bps);
    CHECK(rp.target_rate_bps() == c.line_rate_bps);
    CHECK(rp.counters().hyper_steps > 0);
    CHECK(rp.counters().rate_limited_ns <= limited_until);
    CHECK(rp.counters().rate_limited_ns + 10 * kUs >= limited_until - 55 * kUs);
    // Limited time stops counting.
    const uint64_t before = rp.counters().rate_limited_ns;
    rp.advance(limited_until + 1'000'000);
    CHECK(rp.counters().rate_limited_ns == before);
}

TEST_CASE("RP: the rate limiter spaces packets at the current rate", "[dcqcn]") {
    DcqcnRp rp;
    // At line rate, 1000 bytes take 80 ns.
    CHECK(rp.earliest_send_ns(1000, 5) == 5);  // nothing sent yet
    rp.on_bytes_sent(1000, 100);
    CHECK(rp.earliest_send_ns(1000, 100) == 180);
    rp.on_cnp(200);  // 50 Gb/s: 1000 bytes take 160 ns
    CHECK(rp.earliest_send_ns(1000, 200) == 260);  // from the last departure at 100
    // A train of 100 packets, each sent as soon as the limiter allows.
    uint64_t t = 1'000;
    rp.on_bytes_sent(1000, t);
    const uint64_t first = t;
    for (int i = 1; i < 100; ++i) {
        const uint64_t next = rp.earliest_send_ns(1000, t);
        CHECK(next - t == 160);
        t = next;
        rp.on_bytes_sent(1000, t);
    }
    // 99 gaps of 1000 bytes at 50 Gb/s (well within T: no increase yet).
    CHECK(rp.rate_bps() == 50e9);
    CHECK(t - first == 99 * 160);
    // The packet's own size sets its gap; a late caller is not held back.
    CHECK(rp.earliest_send_ns(4000, t) == t + 640);
    CHECK(rp.earliest_send_ns(1000, t + 10'000) == t + 10'000);
}

namespace {

// What an observed RP tells, in order.
struct Report {
    char kind;  // 'b'egin, 'r'ate, 'a'lpha
    uint64_t t_ns;
    double x, y;
};
class Log final : public RpObserver {
public:
    std::vector<Report> r;
    void rp_begin(uint32_t id, uint64_t t) override { add(id, {'b', t, 0, 0}); }
    void rp_rate(uint32_t id, uint64_t t, double rc, double rt) override { add(id, {'r', t, rc, rt}); }
    void rp_alpha(uint32_t id, uint64_t t, double a) override { add(id, {'a', t, a, 0}); }
    void rp_end(uint32_t, uint64_t) override { FAIL("an RP does not tell its own end"); }

private:
    void add(uint32_t id, Report x) {
        CHECK(id == 42);
        r.push_back(x);
    }
};

}  // namespace

TEST_CASE("RP: an observed RP tells every change at the time it takes effect, and behaves as one unobserved",
          "[dcqcn]") {
    DcqcnConfig c;
    c.byte_counter_bytes = 1'000'000;  // byte counter events too
    Log log;
    DcqcnRp seen(c, 5 * kUs), plain(c, 5 * kUs);
    seen.observe(&log, 42);
    REQUIRE(log.r.size() == 3);
    CHECK(log.r[0].kind == 'b');
    CHECK(log.r[1].kind == 'r');
    CHECK(log.r[1].x == kG);
    CHECK(log.r[2].kind == 'a');
    CHECK(log.r[2].x == 1.0);
    // CNPs, packets, a long idle gap (thousands of alpha expiries at once),
    // read at odd times: the same calls on both.
    uint64_t t = 5 * kUs;
    const auto both = [&](auto f) {
        f(seen);
        f(plain);
    };
    for (int i = 0; i < 3; ++i) {
        t += 60 * kUs;
        both([&](DcqcnRp& rp) { rp.on_cnp(t); });
        for (int p = 0; p < 200; ++p) {
            t += 1 * kUs;
            both([&](DcqcnRp& rp) { rp.on_bytes_sent(4096, t); });
        }
    }
    t += 700 * kUs;
    both([&](DcqcnRp& rp) { rp.advance(t); });
    t += 400'000 * kUs;  // 0.4 s: 7,272 alpha expiries
    both([&](DcqcnRp& rp) { rp.advance(t); });
    CHECK(seen.rate_bps() == plain.rate_bps());
    CHECK(seen.target_rate_bps() == plain.target_rate_bps());
    CHECK(seen.alpha() == plain.alpha());
    CHECK(seen.counters().additive_steps == plain.counters().additive_steps);
    // Each kind in time order; a change of each kind, and CNP cuts among them.
    uint64_t last_rate = 0, last_alpha = 0;
    size_t cuts = 0, rises = 0, decays = 0;
    double rc = kG, a = 1;
    for (size_t i = 3; i < log.r.size(); ++i) {
        const Report& e = log.r[i];
        REQUIRE(e.kind != 'b');
        uint64_t& last = e.kind == 'r' ? last_rate : last_alpha;
        CHECK(e.t_ns >= last);
        last = e.t_ns;
        if (e.kind == 'r') {
            cuts += e.x < rc;
            rises += e.x > rc;
            rc = e.x;
            CHECK(e.x <= e.y);
        } else {
            decays += e.x < a;
            a = e.x;
        }
    }
    CHECK(cuts == 3);
    CHECK(rises > 5);
    CHECK(decays > 4096);  // one per expiry up to 4,096 at once, then the rest in one
    CHECK(rc == seen.rate_bps());
    CHECK(a == seen.alpha());
    // Replayed from the start, every report is the state an unobserved RP
    // shows when brought to that time by the same calls up to it: checked
    // at each report's time with a fresh RP driven to it.
    // (A report followed by one of its kind at the same time, a timer's
    // step then a CNP's, is an intermediate state the twin cannot stop at.)
    const auto last_at_its_time = [&](size_t i) {
        for (size_t j = i + 1; j < log.r.size(); ++j)
            if (log.r[j].kind == log.r[i].kind) return log.r[j].t_ns != log.r[i].t_ns;
        return true;
    };
    size_t checked = 0;
    for (size_t i = 3; i < log.r.size(); i += 37) {
        const Report& e = log.r[i];
        if (!last_at_its_time(i)) continue;
        DcqcnRp twin(c, 5 * kUs);
        uint64_t u = 5 * kUs;
        bool done = false;
        const auto step = [&](uint64_t at, auto f) {
            if (done) return;
            if (at > e.t_ns) {
                twin.advance(e.t_ns);
                done = true;
                return;
            }
            f(at);
        };
        for (int k = 0; k < 3 && !done; ++k) {
            u += 60 * kUs;
            step(u, [&](uint64_t at) { twin.on_cnp(at); });
            for (int p = 0; p < 200 && !done; ++p) {
                u += 1 * kUs;
                step(u, [&](uint64_t at) { twin.on_bytes_sent(4096, at); });
            }
        }
        if (!done) twin.advance(std::min(e.t_ns, u + 700 * kUs));
        if (!done && e.t_ns > u + 700 * kUs) twin.advance(e.t_ns);
        INFO("report " << i << " (" << e.kind << ") at " << e.t_ns << " ns");
        if (e.kind == 'r') {
            CHECK(twin.rate_bps() == e.x);
            CHECK(twin.target_rate_bps() == e.y);
        } else if (e.t_ns < t - 2 * c.alpha_timer_ns) {
            // (The last report of the long gap is its final alpha, applied at once.)
            CHECK(twin.alpha() == Approx(e.x).epsilon(1e-12));
        }
        ++checked;
    }
    CHECK(checked > 100);
}
