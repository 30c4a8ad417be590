// The sweep's table and plot (sweep.h) on results made up here: every
// measured column in the CSV, any column on either axis, a swept value of 0
// on a numeric axis, non-numeric values as named positions.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "simnic/bench/sweep.h"

using namespace simnic::model;

namespace {

SweepPoint point(const std::string& v, const std::string& series, double gbps, double lat, bool rtl_stat = false) {
    SweepPoint p;
    p.value = v;
    p.series = series;
    p.r.gbps = gbps;
    p.r.lat_median_ns = lat;
    p.r.qpc_hit = 100;
    p.r.stats = {{"block.parser.utilisation", gbps / 2, "%"}, {"stage.parser.p99", lat / 10, "ns"}};
    if (rtl_stat) p.r.stats.push_back({"rtl.parser_mismatches", 0, ""});
    return p;
}

size_t index_of(const std::vector<std::string>& h, const std::string& name) {
    return size_t(std::find(h.begin(), h.end(), name) - h.begin());
}

}  // namespace

TEST_CASE("sweep: the CSV has every measured column, the union over the points", "[bench][sweep]") {
    const std::vector<SweepPoint> pts = {point("1", "cpp", 10, 2000), point("2", "rtl", 20, 1000, true)};
    const SweepTable t = sweep_table("qps", "parser.impl", pts);
    REQUIRE(t.rows.size() == 2);
    CHECK(t.header[0] == "qps");
    CHECK(t.header[1] == "parser.impl");
    // The bench's figures, every statistic, and those only some points have.
    for (const char* c : {"gbps", "latency_median_ns", "latency_p99_ns", "qpc_hit_pct", "msg_rate_mps", "warmup",
                          "rd_atomic", "sim_cycles_per_s", "block.parser.utilisation", "stage.parser.p99",
                          "rtl.parser_mismatches"}) {
        INFO(c);
        CHECK(index_of(t.header, c) < t.header.size());
    }
    for (const auto& row : t.rows) CHECK(row.size() == t.header.size());
    CHECK(t.rows[0][index_of(t.header, "gbps")] == "10.0000");
    CHECK(t.rows[1][index_of(t.header, "stage.parser.p99")] == "100.0000");
    CHECK(t.rows[0][index_of(t.header, "rtl.parser_mismatches")].empty());  // not measured there
    CHECK(t.rows[1][index_of(t.header, "rtl.parser_mismatches")] == "0.0000");
}

TEST_CASE("sweep: any column on either axis, latency included", "[bench][sweep]") {
    const std::vector<SweepPoint> pts = {point("1", "a", 10, 2000), point("4", "a", 40, 1500),
                                         point("1", "b", 12, 1800), point("4", "b", 44, 1200)};
    SweepPlotSpec s{"t", "qps", "set", {"1", "4"}, {"a", "b"}, {"latency_median_ns"}, {"block.parser.utilisation"}};
    PlotSpec p;
    std::string err;
    REQUIRE(sweep_plot(s, pts, p, err));
    REQUIRE(p.left.size() == 2);  // one per series value
    REQUIRE(p.right.size() == 2);
    CHECK(p.left[0].name == "latency_median_ns (set=a)");
    CHECK(p.left[0].y == std::vector<double>{2000, 1500});
    CHECK(p.left[1].y == std::vector<double>{1800, 1200});
    CHECK(p.left[0].x == std::vector<double>{1, 4});
    CHECK(p.right[1].y == std::vector<double>{6, 22});
    CHECK(p.y_left.label == "latency_median_ns (ns)");
    CHECK(p.y_right.label == "block.parser.utilisation (%)");

    // Two columns on one axis; no right axis.
    s.y = {"gbps", "stage.parser.p99"};
    s.y2 = {};
    REQUIRE(sweep_plot(s, pts, p, err));
    CHECK(p.left.size() == 4);
    CHECK(p.right.empty());

    // A column nobody measured: refused, with the columns there are.
    s.y = {"latency_p50"};
    CHECK_FALSE(sweep_plot(s, pts, p, err));
    CHECK(err.find("no column 'latency_p50'") == 0);
    CHECK(err.find("latency_median_ns") != std::string::npos);
    CHECK(err.find("stage.parser.p99") != std::string::npos);
}

TEST_CASE("sweep: the x axis holds the swept values, 0 included, or their names", "[bench][sweep]") {
    PlotSpec p;
    std::string err;
    // 0 is a number like any other: a linear axis at the values themselves.
    SweepPlotSpec s{"t", "dma.read_latency_ns", "", {"0", "300", "600"}, {""}, {"gbps"}, {}};
    REQUIRE(sweep_plot(s, {point("0", "", 90, 1), point("300", "", 80, 1), point("600", "", 70, 1)}, p, err));
    CHECK_FALSE(p.x.log);
    CHECK(p.x.categories.empty());
    CHECK(p.left[0].x == std::vector<double>{0, 300, 600});
    const AxisScale xs = axis_scale(0, 600, p.x);
    CHECK(xs.ticks.front() == 0);
    CHECK(xs.ticks.back() >= 600);

    // Powers of two over a wide range: a log axis.
    s.values = {"1", "4", "16", "64"};
    REQUIRE(sweep_plot(s, {point("1", "", 1, 1), point("64", "", 1, 1)}, p, err));
    CHECK(p.x.log);

    // Names: each at its position, labelled with itself.
    s.param = "op";
    s.values = {"write", "read", "send"};
    REQUIRE(sweep_plot(s, {point("write", "", 98, 1), point("read", "", 60, 1), point("send", "", 97, 1)}, p, err));
    CHECK(p.x.categories == std::vector<std::string>{"write", "read", "send"});
    CHECK(p.left[0].x == std::vector<double>{1, 2, 3});
    const std::string svg = render_svg(p);
    for (const char* label : {">write<", ">read<", ">send<"}) CHECK(svg.find(label) != std::string::npos);
}
