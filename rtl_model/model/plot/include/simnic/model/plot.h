// Line plots as SVG and tables as CSV, for `simnic bench --sweep`: e.g.
// throughput (left axis) and hit rate (right axis) against the number of
// QPs on a log x axis, one series per cache size.
//
//   PlotSpec p;
//   p.title = "RX throughput vs QPs";
//   p.x = {"QPs", true};
//   p.y_left = {"throughput (Gb/s)"};
//   p.y_right = {"QP cache hit rate (%)", false, 0, 100};
//   p.left.push_back({"throughput, 1k-entry cache", qps, gbps_1k});
//   p.right.push_back({"hit rate, 1k-entry cache", qps, hit_1k});
//   std::string svg = render_svg(p);
#pragma once

#include <limits>
#include <string>
#include <vector>

namespace simnic::model {

struct Series {
    std::string name;
    std::vector<double> x, y;  // points (x[i], y[i]); extra elements of the longer are ignored
};

struct Axis {
    std::string label;
    bool log = false;  // log10 scale: ticks at powers of ten
    // Range; NaN: from the data, widened to the next tick (linear) or the
    // next power of ten (log).
    double min = std::numeric_limits<double>::quiet_NaN();
    double max = std::numeric_limits<double>::quiet_NaN();
    // Named values (x axis only): point x = i + 1 is categories[i]; the axis
    // then spans 0.5..N+0.5 with a tick labelled with each name (`log`, min
    // and max do not apply).
    std::vector<std::string> categories = {};
};

struct PlotSpec {
    std::string title;
    Axis x;
    Axis y_left;
    Axis y_right;  // drawn only if `right` has series
    std::vector<Series> left, right;
    int width = 800;   // SVG size in px
    int height = 480;
};

// A self-contained SVG 1.1 document (no scripts, no external fonts or
// styles): frame, ticks (linear: 1-2-5 steps; log: powers of ten, with
// unlabelled minor ticks at 2..9), grid, axis labels, title, and a legend
// below the plot. Every series has its own colour and marker shape; left-axis
// series are solid lines with filled markers, right-axis series dashed with
// open markers. Each series is a <g class="series left|right"> holding its
// <title> (the name), one <polyline class="line"> whose points are the
// series' plottable points in order (finite, and > 0 on log axes; others are
// left out) and a <g class="markers"> with one marker per such point.
// Tick labels are <text class="tick-x|tick-yl|tick-yr"> holding the tick's
// value as a plain number ("0.25", "1000", "1e6"). All text is XML-escaped
// (control characters and invalid UTF-8 become U+FFFD).
std::string render_svg(const PlotSpec& spec);

// A CSV document per RFC 4180: CRLF line ends, a field is quoted when it
// holds a comma, a double quote, CR or LF (quotes doubled inside). The
// header line is left out when `header` is empty. Rows are written as
// given (no padding to the header's width).
std::string render_csv(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows);

// XML text/attribute escaping as render_svg() uses it.
std::string xml_escape(const std::string& text);

// An axis' range and ticks as render_svg() computes them from the data's
// range [data_lo, data_hi] (NaN: no data) and the axis' fixed ends.
struct AxisScale {
    double lo = 0, hi = 1;
    std::vector<double> ticks;  // labelled, increasing
    std::vector<double> minor;  // log axes: 2..9 x 10^k inside the range
};
AxisScale axis_scale(double data_lo, double data_hi, const Axis& axis);

}  // namespace simnic::model
