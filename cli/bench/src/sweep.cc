#include "simnic/bench/sweep.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace simnic::model {

std::vector<Column> bench_columns(const BenchResult& r) {
    std::vector<Column> c = {
        {"gbps", "Gb/s", r.gbps},
        {"line_utilisation_pct", "%", r.line_utilisation},
        {"msg_rate_mps", "M/s", r.msg_rate_mps},
        {"latency_min_ns", "ns", r.lat_min_ns},
        {"latency_median_ns", "ns", r.lat_median_ns},
        {"latency_p99_ns", "ns", r.lat_p99_ns},
        {"qpc_hit_pct", "%", r.qpc_hit},
        {"mpt_hit_pct", "%", r.mpt_hit},
        {"mtt_hit_pct", "%", r.mtt_hit},
        {"messages", "", double(r.messages)},
        {"errors", "", double(r.errors)},
        {"warmup", "", double(r.warmup)},
        {"rd_atomic", "", double(r.rd_atomic)},
        {"completions", "", double(r.completions)},
        {"events", "", double(r.events)},
        {"completions_per_event", "", r.events ? double(r.completions) / double(r.events) : 0.0},
        {"sim_cycles", "cycles", double(r.sim_cycles)},
        {"sim_ns", "ns", r.sim_ns},
        {"wall_s", "s", r.wall_s},
        {"sim_cycles_per_s", "cycles/s", r.cycles_per_s},
    };
    for (const ModelStat& s : r.stats) c.push_back({s.name, s.unit, s.value});
    return c;
}

namespace {

std::string num(double d) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.4f", d);
    return buf;
}

// The whole text is a finite number.
bool number(const std::string& s, double& v) {
    char* e = nullptr;
    v = std::strtod(s.c_str(), &e);
    return !s.empty() && e && *e == 0 && std::isfinite(v);
}

}  // namespace

SweepTable sweep_table(const std::string& param, const std::string& series_param, const std::vector<SweepPoint>& pts) {
    SweepTable t;
    t.header = {param, series_param.empty() ? "series" : series_param};
    std::map<std::string, size_t> col;  // name -> index into the header
    std::vector<std::vector<Column>> per(pts.size());
    for (size_t i = 0; i < pts.size(); ++i) {
        per[i] = bench_columns(pts[i].r);
        for (const Column& c : per[i])
            if (col.emplace(c.name, t.header.size()).second) t.header.push_back(c.name);
    }
    for (size_t i = 0; i < pts.size(); ++i) {
        std::vector<std::string> row(t.header.size());
        row[0] = pts[i].value;
        row[1] = pts[i].series;
        for (const Column& c : per[i]) row[col[c.name]] = num(c.value);
        t.rows.push_back(std::move(row));
    }
    return t;
}

bool sweep_plot(const SweepPlotSpec& s, const std::vector<SweepPoint>& pts, PlotSpec& out, std::string& err) {
    out = PlotSpec{};
    out.title = s.title;
    out.x.label = s.param;
    // x: numbers (a log axis over a wide range of positive ones), else names.
    bool numeric = !s.values.empty(), positive = true;
    double lo = 0, hi = 0;
    for (size_t i = 0; i < s.values.size(); ++i) {
        double v = 0;
        numeric = numeric && number(s.values[i], v);
        positive = positive && v > 0;
        lo = i ? std::min(lo, v) : v;
        hi = i ? std::max(hi, v) : v;
    }
    if (numeric) {
        out.x.log = positive && s.values.size() > 2 && hi / lo >= 16;
    } else {
        out.x.categories = s.values;
    }
    auto x_of = [&](const std::string& v) {
        if (numeric) return std::strtod(v.c_str(), nullptr);
        for (size_t i = 0; i < s.values.size(); ++i)
            if (s.values[i] == v) return double(i + 1);
        return std::nan("");
    };
    // Each column asked for: one series per --series value.
    auto add = [&](const std::vector<std::string>& cols, std::vector<Series>& to, Axis& axis) -> bool {
        std::string label;
        for (const std::string& name : cols) {
            std::string unit;
            bool found = false;
            for (const SweepPoint& p : pts)
                for (const Column& c : bench_columns(p.r))
                    if (c.name == name) {
                        found = true;
                        unit = c.unit;
                    }
            if (!found) {
                std::string names;
                if (!pts.empty())
                    for (const Column& c : bench_columns(pts.front().r)) names += (names.empty() ? "" : ", ") + c.name;
                err = "no column '" + name + "' (columns: " + names + ")";
                return false;
            }
            label += (label.empty() ? "" : ", ") + name + (unit.empty() ? "" : " (" + unit + ")");
            for (const std::string& sv : s.series_values) {
                Series ser;
                ser.name = name + (s.series_param.empty() ? "" : " (" + s.series_param + "=" + sv + ")");
                for (const SweepPoint& p : pts) {
                    if (p.series != sv) continue;
                    for (const Column& c : bench_columns(p.r))
                        if (c.name == name) {
                            ser.x.push_back(x_of(p.value));
                            ser.y.push_back(c.value);
                        }
                }
                to.push_back(std::move(ser));
            }
        }
        axis.label = label;
        return true;
    };
    return add(s.y, out.left, out.y_left) && add(s.y2, out.right, out.y_right);
}

}  // namespace simnic::model
