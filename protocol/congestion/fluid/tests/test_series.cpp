// Rates over time: the CSV form a fabric run exports, its errors, the
// windowed means and the comparison, against values worked out by hand.
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>

#include "simnic/congestion/fluid/series.h"

using namespace simnic::congestion::fluid;

namespace {

// Two flows sampled every 100 us for 1 ms: flow 0 at 10 Gb/s, flow 1 at
// 20 Gb/s, then 30 Gb/s from 500 us; the queue at k * 1000 bytes.
Series hand_made() {
    Series s;
    s.rate_bps.assign(2, {});
    for (int k = 1; k <= 10; ++k) {
        s.t_s.push_back(k * 100e-6);
        s.rate_bps[0].push_back(10e9);
        s.rate_bps[1].push_back(k <= 5 ? 20e9 : 30e9);
        s.queue_bytes.push_back(k * 1000.0);
    }
    return s;
}

bool read(const std::string& text, Series& s, std::string& err) {
    std::istringstream in(text);
    return read_csv(in, s, err);
}

}  // namespace

TEST_CASE("series: the CSV round trip", "[fluid][csv]") {
    const Series s = hand_made();
    std::ostringstream out;
    write_csv(out, s);
    const std::string text = out.str();
    CHECK(text.rfind("t_us,rate_gbps_0,rate_gbps_1,queue_bytes\n100.000,10.000000,20.000000,1000.0\n", 0) == 0);
    Series back;
    std::string err;
    REQUIRE(read("# a comment\n\n" + text, back, err));
    REQUIRE(back.flows() == 2);
    REQUIRE(back.samples() == 10);
    CHECK(back.t_s[9] == Approx(1e-3));
    CHECK(back.rate_bps[1][9] == Approx(30e9));
    CHECK(back.queue_bytes[4] == 5000);
    // Columns in any order, no queue, CRLF line ends.
    Series other;
    REQUIRE(read("t_us,rate_gbps_1,rate_gbps_0\r\n10,2.5,1.5\r\n20,3,4\r\n", other, err));
    CHECK(other.rate_bps[0][1] == Approx(4e9));
    CHECK(other.rate_bps[1][0] == Approx(2.5e9));
    CHECK(other.queue_bytes.empty());
}

TEST_CASE("series: bad CSV says what and where", "[fluid][csv]") {
    Series s;
    std::string err;
    CHECK_FALSE(read("", s, err));
    CHECK(err.find("no header") != std::string::npos);
    CHECK_FALSE(read("time,rate_gbps_0\n", s, err));
    CHECK(err == "line 1: the header must start with t_us");
    CHECK_FALSE(read("t_us,rate_gbps_0,rate_gbps_2\n", s, err));
    CHECK(err.find("no rate_gbps_1") != std::string::npos);
    CHECK_FALSE(read("t_us,rate_gbps_0,speed\n", s, err));
    CHECK(err.find("unknown column 'speed'") != std::string::npos);
    CHECK_FALSE(read("t_us,rate_gbps_0\n1,2\n1,3\n", s, err));
    CHECK(err == "line 3: times must increase");
    CHECK_FALSE(read("t_us,rate_gbps_0\n1,2,3\n", s, err));
    CHECK(err == "line 2: 3 fields, the header has 2");
    CHECK_FALSE(read("t_us,rate_gbps_0\n1,fast\n", s, err));
    CHECK(err == "line 2: bad rate 'fast'");
    CHECK_FALSE(read("t_us,rate_gbps_0\n1,-2\n", s, err));
    CHECK_FALSE(read("t_us,rate_gbps_0\n", s, err));
    CHECK(err == "no samples");
}

TEST_CASE("series: windowed means weigh each sample by its interval", "[fluid][csv]") {
    const Series s = hand_made();
    CHECK(mean_rate(s, 0, 0, 1e-3) == Approx(10e9));
    CHECK(mean_rate(s, 1, 0, 1e-3) == Approx(25e9));
    // [450, 650) us: 50 us at 20, 150 us at 30.
    CHECK(mean_rate(s, 1, 450e-6, 650e-6) == Approx((50 * 20 + 150 * 30) / 200.0 * 1e9));
    CHECK(std::isnan(mean_rate(s, 0, 2e-3, 3e-3)));
    CHECK(mean_queue(s, 0, 1e-3) == Approx(5500));
    CHECK(max_queue(s, 0, 500e-6) == 5000);
    // Flow 1 is within 10% of 30 Gb/s from 500 us on, flow 0 never.
    Series one = s;
    one.rate_bps.erase(one.rate_bps.begin());
    CHECK(convergence_time(one, 30e9, 100e-6, 0.1) == Approx(500e-6));
    CHECK(std::isnan(convergence_time(s, 30e9, 100e-6, 0.1)));
    // The mean of the flows.
    const Series m = mean_of_flows(s);
    REQUIRE(m.flows() == 1);
    CHECK(m.rate_bps[0][0] == Approx(15e9));
    CHECK(m.rate_bps[0][9] == Approx(20e9));
}

TEST_CASE("series: compare gives the worst window's relative error", "[fluid][csv]") {
    const Series ref = hand_made();
    Series meas = hand_made();
    meas.rate_bps[0][7] = 13e9;  // 700..800 us: flow 0 30% high in that sample
    const Agreement a = compare(ref, meas, 0, 200e-6);
    REQUIRE(a.error.empty());
    CHECK(a.windows == 5);
    // The window [600, 800) us averages 10 and 13: 11.5, 15% above 10.
    CHECK(a.max_error == Approx(0.15));
    CHECK(a.worst_flow == 0);
    CHECK(a.worst_t_s == Approx(600e-6));
    CHECK(a.mean_error == Approx(0.015));
    // The same against a scale (a fair share of 50 Gb/s): 1.5 Gb/s apart
    // in that window is 3% of it; a window whose reference rate is 0 is
    // compared too.
    const Agreement share = compare(ref, meas, 0, 200e-6, 50e9);
    REQUIRE(share.error.empty());
    CHECK(share.max_error == Approx(0.03));
    CHECK(share.worst_t_s == Approx(600e-6));
    Series stalled = ref;
    for (double& x : stalled.rate_bps[1]) x = 0;
    CHECK_FALSE(compare(stalled, meas, 0, 200e-6).error.empty());
    REQUIRE(compare(stalled, stalled, 0, 200e-6, 50e9).error.empty());
    CHECK(compare(stalled, stalled, 0, 200e-6, 50e9).max_error == 0);
    CHECK_FALSE(compare(ref, meas, 0, 200e-6, -1).error.empty());
    // Several runs: their mean.
    Series mean;
    std::string err;
    REQUIRE(ensemble_mean({ref, meas}, mean, err));
    CHECK(mean.rate_bps[0][7] == Approx(11.5e9));
    Series shorter = ref;
    shorter.t_s.pop_back();
    CHECK_FALSE(ensemble_mean({ref, shorter}, mean, err));
    // Different flow counts do not compare.
    CHECK_FALSE(compare(ref, mean_of_flows(meas), 0, 1e-4).error.empty());
    CHECK_FALSE(compare(ref, meas, 0, 0).error.empty());
}
