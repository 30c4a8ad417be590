#include "simnic/congestion/fluid/series.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <istream>
#include <limits>
#include <ostream>
#include <sstream>

namespace simnic::congestion::fluid {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<std::string> split(const std::string& line) {
    std::vector<std::string> f;
    std::string cur;
    std::istringstream in(line);
    while (std::getline(in, cur, ',')) {
        // Trim blanks and a trailing CR (a CSV written on Windows).
        const auto b = cur.find_first_not_of(" \t\r");
        const auto e = cur.find_last_not_of(" \t\r");
        f.push_back(b == std::string::npos ? std::string() : cur.substr(b, e - b + 1));
    }
    if (!line.empty() && line.back() == ',') f.emplace_back();
    return f;
}

bool number(const std::string& s, double& v) {
    if (s.empty()) return false;
    char* end = nullptr;
    v = std::strtod(s.c_str(), &end);
    return end == s.c_str() + s.size() && std::isfinite(v);
}

// The time-weighted mean of v over [t0, t1), sample k holding over
// (t[k-1], t[k]] (the first from 0, or from t[0] minus the next interval).
double weighted_mean(const std::vector<double>& t, const std::vector<double>& v, double t0, double t1) {
    double sum = 0, covered = 0;
    for (std::size_t k = 0; k < t.size(); ++k) {
        const double a = k ? t[k - 1] : std::max(0.0, t.size() > 1 ? t[0] - (t[1] - t[0]) : 0.0);
        const double b = t[k];
        const double lo = std::max(a, t0), hi = std::min(b, t1);
        if (hi > lo) {
            sum += v[k] * (hi - lo);
            covered += hi - lo;
        }
        if (a >= t1) break;
    }
    return covered > 0 ? sum / covered : kNaN;
}

}  // namespace

void write_csv(std::ostream& out, const Series& s) {
    out << "t_us";
    for (std::size_t f = 0; f < s.flows(); ++f) out << ",rate_gbps_" << f;
    const bool q = !s.queue_bytes.empty();
    if (q) out << ",queue_bytes";
    out << "\n";
    char buf[64];
    for (std::size_t k = 0; k < s.samples(); ++k) {
        std::snprintf(buf, sizeof buf, "%.3f", s.t_s[k] * 1e6);
        out << buf;
        for (std::size_t f = 0; f < s.flows(); ++f) {
            std::snprintf(buf, sizeof buf, ",%.6f", s.rate_bps[f][k] * 1e-9);
            out << buf;
        }
        if (q) {
            std::snprintf(buf, sizeof buf, ",%.1f", s.queue_bytes[k]);
            out << buf;
        }
        out << "\n";
    }
}

bool read_csv(std::istream& in, Series& s, std::string& err) {
    s = Series{};
    std::string line;
    std::size_t lineno = 0;
    std::vector<std::string> header;
    int queue_col = -1;
    std::vector<int> flow_col;  // column of rate_gbps_<f>
    while (std::getline(in, line)) {
        ++lineno;
        if (line.empty() || line[0] == '#' || line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const std::vector<std::string> f = split(line);
        auto fail = [&](const std::string& what) {
            err = "line " + std::to_string(lineno) + ": " + what;
            return false;
        };
        if (header.empty()) {
            header = f;
            if (header[0] != "t_us") return fail("the header must start with t_us");
            for (std::size_t c = 1; c < header.size(); ++c) {
                const std::string& h = header[c];
                if (h == "queue_bytes") {
                    if (queue_col >= 0) return fail("queue_bytes twice");
                    queue_col = int(c);
                } else if (h.rfind("rate_gbps_", 0) == 0) {
                    char* end = nullptr;
                    const std::string num = h.substr(10);
                    const unsigned long idx = std::strtoul(num.c_str(), &end, 10);
                    if (num.empty() || end != num.c_str() + num.size() || idx > 4095)
                        return fail("bad flow column '" + h + "'");
                    if (flow_col.size() <= idx) flow_col.resize(idx + 1, -1);
                    if (flow_col[idx] >= 0) return fail("column '" + h + "' twice");
                    flow_col[idx] = int(c);
                } else {
                    return fail("unknown column '" + h + "' (t_us, rate_gbps_<flow>, queue_bytes)");
                }
            }
            if (flow_col.empty()) return fail("no rate_gbps_<flow> column");
            for (std::size_t i = 0; i < flow_col.size(); ++i)
                if (flow_col[i] < 0) return fail("flows must be numbered from 0 without gaps: no rate_gbps_" + std::to_string(i));
            s.rate_bps.assign(flow_col.size(), {});
            continue;
        }
        if (f.size() != header.size())
            return fail(std::to_string(f.size()) + " fields, the header has " + std::to_string(header.size()));
        double t;
        if (!number(f[0], t) || t < 0) return fail("bad time '" + f[0] + "'");
        t *= 1e-6;
        if (!s.t_s.empty() && !(t > s.t_s.back())) return fail("times must increase");
        s.t_s.push_back(t);
        for (std::size_t i = 0; i < flow_col.size(); ++i) {
            double v;
            if (!number(f[std::size_t(flow_col[i])], v) || v < 0) return fail("bad rate '" + f[std::size_t(flow_col[i])] + "'");
            s.rate_bps[i].push_back(v * 1e9);
        }
        if (queue_col >= 0) {
            double v;
            if (!number(f[std::size_t(queue_col)], v) || v < 0) return fail("bad queue depth '" + f[std::size_t(queue_col)] + "'");
            s.queue_bytes.push_back(v);
        }
    }
    if (header.empty()) {
        err = "no header (t_us,rate_gbps_0,...)";
        return false;
    }
    if (s.t_s.empty()) {
        err = "no samples";
        return false;
    }
    return true;
}

double mean_rate(const Series& s, std::size_t flow, double t0, double t1) {
    return weighted_mean(s.t_s, s.rate_bps.at(flow), t0, t1);
}

double mean_queue(const Series& s, double t0, double t1) {
    if (s.queue_bytes.empty()) return kNaN;
    return weighted_mean(s.t_s, s.queue_bytes, t0, t1);
}

double max_queue(const Series& s, double t0, double t1) {
    double m = kNaN;
    for (std::size_t k = 0; k < s.queue_bytes.size(); ++k)
        if (s.t_s[k] > t0 && s.t_s[k] <= t1) m = std::isnan(m) ? s.queue_bytes[k] : std::max(m, s.queue_bytes[k]);
    return m;
}

double convergence_time(const Series& s, double fair_bps, double window_s, double tolerance) {
    if (s.samples() == 0 || !(window_s > 0)) return kNaN;
    const double end = s.t_s.back();
    const std::size_t windows = std::size_t(end / window_s);
    // Walk back from the end: the last window that misses, and the one after it.
    double from = kNaN;
    for (std::size_t w = windows; w-- > 0;) {
        const double t0 = double(w) * window_s;
        bool ok = true;
        for (std::size_t f = 0; f < s.flows() && ok; ++f) {
            const double m = mean_rate(s, f, t0, t0 + window_s);
            ok = !std::isnan(m) && std::fabs(m - fair_bps) <= tolerance * fair_bps;
        }
        if (!ok) break;
        from = t0;
    }
    return from;
}

Series mean_of_flows(const Series& s) {
    Series m;
    m.t_s = s.t_s;
    m.queue_bytes = s.queue_bytes;
    m.rate_bps.assign(1, std::vector<double>(s.samples(), 0.0));
    if (s.flows() == 0) return m;
    for (std::size_t k = 0; k < s.samples(); ++k) {
        double sum = 0;
        for (std::size_t f = 0; f < s.flows(); ++f) sum += s.rate_bps[f][k];
        m.rate_bps[0][k] = sum / double(s.flows());
    }
    return m;
}

bool ensemble_mean(const std::vector<Series>& runs, Series& mean, std::string& err) {
    if (runs.empty()) {
        err = "no runs";
        return false;
    }
    const Series& first = runs.front();
    mean = first;
    for (std::size_t r = 1; r < runs.size(); ++r) {
        const Series& s = runs[r];
        if (s.flows() != first.flows() || s.samples() != first.samples() ||
            s.queue_bytes.size() != first.queue_bytes.size()) {
            err = "run " + std::to_string(r) + " differs from run 0 in flows or samples";
            return false;
        }
        for (std::size_t k = 0; k < s.samples(); ++k) {
            if (std::fabs(s.t_s[k] - first.t_s[k]) > 1e-12) {
                err = "run " + std::to_string(r) + " has other sample times";
                return false;
            }
            for (std::size_t f = 0; f < s.flows(); ++f) mean.rate_bps[f][k] += s.rate_bps[f][k];
            if (!s.queue_bytes.empty()) mean.queue_bytes[k] += s.queue_bytes[k];
        }
    }
    const double n = double(runs.size());
    for (auto& v : mean.rate_bps)
        for (double& x : v) x /= n;
    for (double& x : mean.queue_bytes) x /= n;
    return true;
}

Agreement compare(const Series& ref, const Series& meas, double from_s, double window_s, double scale_bps) {
    Agreement a;
    if (ref.flows() != meas.flows()) {
        a.error = "the series have " + std::to_string(ref.flows()) + " and " + std::to_string(meas.flows()) + " flows";
        return a;
    }
    if (ref.samples() == 0 || meas.samples() == 0) {
        a.error = "an empty series";
        return a;
    }
    if (!(window_s > 0)) {
        a.error = "the window must be positive";
        return a;
    }
    if (!(scale_bps >= 0)) {
        a.error = "the scale must be 0 (relative to the reference) or positive";
        return a;
    }
    const double end = std::min(ref.t_s.back(), meas.t_s.back());
    double sum = 0;
    std::size_t terms = 0;
    for (double t0 = from_s; t0 + window_s <= end + 1e-12; t0 += window_s) {
        ++a.windows;
        for (std::size_t f = 0; f < ref.flows(); ++f) {
            const double r = mean_rate(ref, f, t0, t0 + window_s);
            const double m = mean_rate(meas, f, t0, t0 + window_s);
            if (std::isnan(r) || std::isnan(m) || !(r > 0 || scale_bps > 0)) {
                a.error = "flow " + std::to_string(f) + " has no reference rate in the window at " +
                          std::to_string(t0 * 1e6) + " us";
                return a;
            }
            const double e = std::fabs(m - r) / (scale_bps > 0 ? scale_bps : r);
            sum += e;
            ++terms;
            if (e > a.max_error) {
                a.max_error = e;
                a.worst_t_s = t0;
                a.worst_flow = f;
            }
        }
    }
    if (a.windows == 0) {
        a.error = "no whole window between the start and the end of both series";
        return a;
    }
    a.mean_error = sum / double(terms);
    return a;
}

}  // namespace simnic::congestion::fluid
