// The fluid model's known properties (Zhu et al., CoNEXT 2016, section 3):
// N flows converge to C/N, the queue settles in the marking region at the
// model's unique fixed point, a late flow's rate difference shrinks.
#include <catch2/catch.hpp>

#include <cmath>

#include "simnic/congestion/fluid/fluid_model.h"

using namespace simnic::congestion::fluid;

namespace {

Scenario incast(unsigned n, double ms) {
    Scenario s;  // 100 Gb/s, the published DCQCN and RED parameters
    s.flows = n;
    s.duration_s = ms * 1e-3;
    s.sample_s = 100e-6;
    REQUIRE(check(s).empty());
    return s;
}

}  // namespace

TEST_CASE("fluid: RED marking as the model and the switch have it", "[fluid]") {
    const RedConfig red;  // 5 KB, 200 KB, 1%
    CHECK(red_probability(0, red) == 0);
    CHECK(red_probability(5'000, red) == 0);
    CHECK(red_probability(102'500, red) == Approx(0.005));
    CHECK(red_probability(200'000, red) == Approx(0.01));
    CHECK(red_probability(200'001, red) == 1);
}

TEST_CASE("fluid: N flows converge to C/N, the queue to the model's fixed point", "[fluid]") {
    for (unsigned n : {2u, 8u}) {
        INFO(n << " flows");
        const Scenario s = incast(n, 80);
        const Series out = integrate_fluid(s);
        REQUIRE(out.flows() == n);
        REQUIRE(out.samples() == 800);
        const double fair = s.bottleneck_bps / n;
        // All start at line rate: the queue overshoots past Kmax, then
        // every flow has cut its rate below C/N (the queue drains).
        CHECK(max_queue(out, 0, 1e-3) > s.red.kmax_bytes);
        CHECK(mean_rate(out, 0, 1e-3, 2e-3) < 0.9 * fair);
        // Converged: each flow within 1% of C/N over every 5 ms from 40 ms.
        const double tc = convergence_time(out, fair, 5e-3, 0.01);
        CHECK(tc <= 40e-3);
        double sum = 0;
        for (unsigned f = 0; f < n; ++f) sum += mean_rate(out, f, 40e-3, 80e-3);
        CHECK(sum == Approx(s.bottleneck_bps).epsilon(0.01));
        // The queue stays in the marking region, near the fixed point that
        // CoNEXT 2016's Theorem 1 gives (within 3%: it approaches it slowly,
        // as alpha settles with gain g).
        const FixedPoint fp = fixed_point(s);
        REQUIRE(fp.found);
        CHECK(fp.queue_bytes > s.red.kmin_bytes);
        CHECK(fp.queue_bytes < s.red.kmax_bytes);
        CHECK(max_queue(out, 40e-3, 80e-3) < s.red.kmax_bytes);
        CHECK(mean_queue(out, 40e-3, 80e-3) > s.red.kmin_bytes);
        CHECK(out.queue_bytes.back() == Approx(fp.queue_bytes).epsilon(0.03));
    }
}

TEST_CASE("fluid: the fixed point's marking rises with the number of flows", "[fluid]") {
    // More flows at a smaller share each need more marking to hold their
    // sum at C (the authors' numerical table: p* grows with N).
    double last = 0;
    for (unsigned n : {2u, 4u, 8u, 16u}) {
        Scenario s;
        s.flows = n;
        const FixedPoint fp = fixed_point(s);
        REQUIRE(fp.found);
        CHECK(fp.p > last);
        last = fp.p;
    }
    // A tiny Pmax cannot hold it inside the marking region.
    Scenario s;
    s.red.pmax = 1e-6;
    CHECK_FALSE(fixed_point(s).found);
}

TEST_CASE("fluid: a late flow's rate difference shrinks toward the fair share", "[fluid]") {
    Scenario s = incast(2, 150);
    s.start_s = {0, 5e-3};
    const Series out = integrate_fluid(s);
    // Alone, flow 0 runs at line rate without a queue.
    CHECK(mean_rate(out, 0, 1e-3, 5e-3) == Approx(s.rp.line_rate_bps).epsilon(1e-6));
    CHECK(mean_rate(out, 1, 1e-3, 5e-3) == 0);
    CHECK(max_queue(out, 0, 5e-3) == 0);
    // Flow 0's alpha has decayed while alone, flow 1 starts at 1: flow 1
    // cuts harder, and the two part.
    const double d1 = mean_rate(out, 0, 10e-3, 15e-3) - mean_rate(out, 1, 10e-3, 15e-3);
    CHECK(d1 > 0.1 * s.bottleneck_bps);
    // Then the difference shrinks (CoNEXT 2016, Theorem 3: exponentially)
    // and both reach their fair share.
    double last = d1;
    for (double t = 40e-3; t < 150e-3; t += 30e-3) {
        const double d = mean_rate(out, 0, t, t + 5e-3) - mean_rate(out, 1, t, t + 5e-3);
        INFO("at " << t * 1e3 << " ms");
        CHECK(std::fabs(d) < last);
        last = std::fabs(d);
    }
    CHECK(convergence_time(out, s.bottleneck_bps / 2, 5e-3, 0.1) < 100e-3);
}

TEST_CASE("fluid: a flow alone settles at a slower bottleneck's rate", "[fluid]") {
    Scenario s = incast(1, 60);
    s.bottleneck_bps = 40e9;  // line rate stays 100 Gb/s
    const Series out = integrate_fluid(s);
    CHECK(mean_rate(out, 0, 40e-3, 60e-3) == Approx(40e9).epsilon(0.01));
    CHECK(mean_queue(out, 40e-3, 60e-3) > s.red.kmin_bytes);
    CHECK(max_queue(out, 40e-3, 60e-3) < s.red.kmax_bytes);
    // And at the line rate's own bottleneck, nothing is ever marked.
    Scenario same = incast(1, 5);
    const Series flat = integrate_fluid(same);
    CHECK(max_queue(flat, 0, 5e-3) == 0);
    CHECK(mean_rate(flat, 0, 0, 5e-3) == Approx(same.rp.line_rate_bps));
}

TEST_CASE("fluid: the scenario check names what is wrong", "[fluid]") {
    Scenario s;
    CHECK(check(s).empty());
    s.flows = 0;
    s.start_s = {0, 1};
    s.red.kmax_bytes = 1;
    s.sample_s = 0;
    const std::string e = check(s);
    CHECK(e.find("at least one flow") != std::string::npos);
    CHECK(e.find("one start time per flow") != std::string::npos);
    CHECK(e.find("Kmin < Kmax") != std::string::npos);
    CHECK(e.find("sample interval") != std::string::npos);
    Scenario r;
    r.rp.g = 0;
    CHECK(check(r).find("reaction point: g must be") != std::string::npos);
    // tau*, derived: four link delays and two serializations.
    Scenario d;
    CHECK(loop_delay_s(d) == Approx(4e-6 + 2 * 80e-9));
    d.feedback_delay_s = 20e-6;
    CHECK(loop_delay_s(d) == 20e-6);
}
