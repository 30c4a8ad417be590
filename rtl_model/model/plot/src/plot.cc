// SVG line plots with one or two y axes, and RFC 4180 CSV.
#include "simnic/model/plot.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace simnic::model {

namespace {

// Locale-independent number text. `decimals` < 0: shortest round trip.
std::string num(double v, int decimals) {
    char buf[64];
    std::to_chars_result r =
        decimals < 0 ? std::to_chars(buf, buf + sizeof buf, v)
                     : std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, decimals);
    return std::string(buf, r.ptr);
}

// A coordinate: two decimals at most, no trailing zeros, no "-0".
std::string coord(double v) {
    if (std::fabs(v) < 0.005) return "0";
    std::string s = num(v, 2);
    if (s.find('.') != std::string::npos) {
        while (s.back() == '0') s.pop_back();
        if (s.back() == '.') s.pop_back();
    }
    return s;
}

double pow10i(int e) { return std::pow(10.0, e); }

// 1, 2 or 5 times a power of ten, at least `raw`.
double nice_step(double raw) {
    double e = std::floor(std::log10(raw));
    double f = raw / std::pow(10.0, e);
    double nf = f <= 1.0 + 1e-9 ? 1 : f <= 2.0 + 1e-9 ? 2 : f <= 5.0 + 1e-9 ? 5 : 10;
    return nf * std::pow(10.0, e);
}

// The label of a tick: powers of ten on log axes as "1000" or "1e6", linear
// ticks with as many decimals as the step needs.
std::string tick_label(double v, bool log, double step) {
    if (log) {
        int e = static_cast<int>(std::lround(std::log10(v)));
        if (e >= 0 && e <= 5) return num(pow10i(e), 0);
        if (e < 0 && e >= -4) return num(pow10i(e), -e);
        return "1e" + std::to_string(e);
    }
    if (std::fabs(v) < step * 1e-9) return "0";
    if (std::fabs(v) >= 1e7 || step < 1e-6) return num(v, -1);
    int dec = std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9)));
    return num(v, dec);
}

const char* const kColours[] = {"#1f5fa8", "#d9480f", "#2b8a3e", "#9c36b5",
                                "#c92a2a", "#0c8599", "#e67700", "#495057"};
constexpr int kNumColours = sizeof kColours / sizeof kColours[0];
constexpr int kNumMarkers = 6;

// Marker `shape` centred at (cx, cy); filled, or open (white fill).
std::string marker(int shape, double cx, double cy, const char* colour, bool open) {
    std::string fill = open ? "#ffffff" : colour;
    std::string paint = " fill=\"" + fill + "\" stroke=\"" + colour + "\" stroke-width=\"1.5\"/>";
    auto pt = [](double x, double y) { return coord(x) + "," + coord(y); };
    switch (shape % kNumMarkers) {
    case 0:
        return "<circle cx=\"" + coord(cx) + "\" cy=\"" + coord(cy) + "\" r=\"3.5\"" + paint;
    case 1:
        return "<rect x=\"" + coord(cx - 3.5) + "\" y=\"" + coord(cy - 3.5) +
               "\" width=\"7\" height=\"7\"" + paint;
    case 2:
        return "<polygon points=\"" + pt(cx, cy - 4.5) + " " + pt(cx + 4.5, cy + 3.5) + " " +
               pt(cx - 4.5, cy + 3.5) + "\"" + paint;
    case 3:
        return "<polygon points=\"" + pt(cx, cy - 5) + " " + pt(cx + 5, cy) + " " +
               pt(cx, cy + 5) + " " + pt(cx - 5, cy) + "\"" + paint;
    case 4:
        return "<polygon points=\"" + pt(cx, cy + 4.5) + " " + pt(cx + 4.5, cy - 3.5) + " " +
               pt(cx - 4.5, cy - 3.5) + "\"" + paint;
    default:  // a cross; open or not, it is strokes only
        return "<path d=\"M" + pt(cx - 4, cy - 4) + "L" + pt(cx + 4, cy + 4) + "M" +
               pt(cx - 4, cy + 4) + "L" + pt(cx + 4, cy - 4) + "\" fill=\"none\" stroke=\"" +
               colour + "\" stroke-width=\"2\"/>";
    }
}

bool plottable(double v, bool log) { return std::isfinite(v) && (!log || v > 0); }

// The data's range over the plottable points of `series` (NaN if none).
void data_range(const std::vector<Series>& series, bool want_x, bool xlog, bool ylog,
                double& lo, double& hi) {
    lo = hi = std::numeric_limits<double>::quiet_NaN();
    for (const Series& s : series) {
        size_t n = std::min(s.x.size(), s.y.size());
        for (size_t i = 0; i < n; ++i) {
            if (!plottable(s.x[i], xlog) || !plottable(s.y[i], ylog)) continue;
            double v = want_x ? s.x[i] : s.y[i];
            if (std::isnan(lo) || v < lo) lo = v;
            if (std::isnan(hi) || v > hi) hi = v;
        }
    }
}

// Maps a value to a pixel along [p0, p1].
struct Mapper {
    double lo, hi, p0, p1;
    bool log;
    double operator()(double v) const {
        double a = log ? std::log10(v) : v;
        double l = log ? std::log10(lo) : lo;
        double h = log ? std::log10(hi) : hi;
        return p0 + (a - l) / (h - l) * (p1 - p0);
    }
};

// Rough width of text in the 12 px sans-serif face.
double text_width(const std::string& s, double px = 12) {
    size_t chars = 0;
    for (unsigned char c : s)
        if ((c & 0xc0) != 0x80) ++chars;  // count UTF-8 lead bytes
    return static_cast<double>(chars) * px * 0.6;
}

}  // namespace

std::string xml_escape(const std::string& text) {
    static const char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD
    std::string out;
    out.reserve(text.size());
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    size_t n = text.size();
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        if (c < 0x80) {
            switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&apos;"; break;
            default:
                if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
                    out += kReplacement;  // not allowed in XML 1.0
                else
                    out += static_cast<char>(c);
            }
            ++i;
            continue;
        }
        // A UTF-8 sequence: check its length, continuation bytes, and that
        // it is neither overlong, a surrogate, beyond U+10FFFF, nor U+FFFE/F.
        size_t len = 0;
        uint32_t cp = 0;
        unsigned char lo2 = 0x80, hi2 = 0xbf;
        if (c >= 0xc2 && c <= 0xdf) {
            len = 2;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            len = 3;
            cp = c & 0x0f;
            if (c == 0xe0) lo2 = 0xa0;
            if (c == 0xed) hi2 = 0x9f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            len = 4;
            cp = c & 0x07;
            if (c == 0xf0) lo2 = 0x90;
            if (c == 0xf4) hi2 = 0x8f;
        }
        bool valid = len != 0 && i + len <= n;
        for (size_t k = 1; valid && k < len; ++k) {
            unsigned char b = p[i + k];
            unsigned char l = k == 1 ? lo2 : 0x80, h = k == 1 ? hi2 : 0xbf;
            if (b < l || b > h) valid = false;
            cp = (cp << 6) | (b & 0x3f);
        }
        if (valid && (cp == 0xfffe || cp == 0xffff)) valid = false;
        if (valid) {
            out.append(text, i, len);
            i += len;
        } else {
            out += kReplacement;
            ++i;
        }
    }
    return out;
}

AxisScale axis_scale(double data_lo, double data_hi, const Axis& axis) {
    AxisScale sc;
    if (!axis.categories.empty()) {
        sc.lo = 0.5;
        sc.hi = double(axis.categories.size()) + 0.5;
        for (size_t i = 1; i <= axis.categories.size(); ++i) sc.ticks.push_back(double(i));
        return sc;
    }
    bool log = axis.log;
    bool fix_lo = std::isfinite(axis.min) && (!log || axis.min > 0);
    bool fix_hi = std::isfinite(axis.max) && (!log || axis.max > 0);
    double lo = fix_lo ? axis.min : data_lo;
    double hi = fix_hi ? axis.max : data_hi;
    if (std::isnan(lo) && std::isnan(hi)) {
        lo = log ? 1 : 0;
        hi = log ? 10 : 1;
    } else if (std::isnan(lo)) {
        lo = log ? hi / 10 : hi - 1;
    } else if (std::isnan(hi)) {
        hi = log ? lo * 10 : lo + 1;
    }
    if (lo > hi) {
        std::swap(lo, hi);
        std::swap(fix_lo, fix_hi);
    }
    if (log) {
        int elo = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
        int ehi = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
        if (ehi <= elo) {
            if (!fix_hi) ehi = elo + 1;
            else if (!fix_lo) elo = ehi - 1;
        }
        if (!fix_lo) lo = pow10i(elo);
        if (!fix_hi) hi = pow10i(ehi);
        if (!(hi > lo)) hi = lo * 10;  // both fixed and equal
        // Labelled decades: every one, or every k-th so that at most 11 show.
        int first = static_cast<int>(std::ceil(std::log10(lo) - 1e-9));
        int last = static_cast<int>(std::floor(std::log10(hi) + 1e-9));
        int k = std::max(1, (last - first + 1 + 10) / 11);
        for (int e = first; e <= last; ++e) {
            if (((e % k) + k) % k == 0) sc.ticks.push_back(pow10i(e));
        }
        if (k == 1) {
            for (int e = first - 1; e <= last; ++e)
                for (int m = 2; m <= 9; ++m) {
                    double v = m * pow10i(e);
                    if (v > lo * (1 + 1e-9) && v < hi * (1 - 1e-9)) sc.minor.push_back(v);
                }
        }
    } else {
        if (hi == lo) {
            double d = lo == 0 ? 1 : std::fabs(lo) * 0.1;
            if (!fix_lo) lo -= d;
            if (!fix_hi) hi += d;
            if (hi == lo) hi = lo + d;
        }
        double step = nice_step((hi - lo) / 6);
        if (!fix_lo) lo = std::floor(lo / step + 1e-9) * step;
        if (!fix_hi) hi = std::ceil(hi / step - 1e-9) * step;
        for (double i = std::ceil(lo / step - 1e-9); i * step <= hi + step * 1e-9; i += 1) {
            double v = i * step;
            if (std::fabs(v) < step * 1e-9) v = 0;
            sc.ticks.push_back(v);
        }
    }
    sc.lo = lo;
    sc.hi = hi;
    return sc;
}

std::string render_svg(const PlotSpec& spec_in) {
    // A categorical x axis is linear in the categories' positions.
    PlotSpec named;
    if (!spec_in.x.categories.empty()) {
        named = spec_in;
        named.x.log = false;
    }
    const PlotSpec& spec = spec_in.x.categories.empty() ? spec_in : named;
    const double W = std::max(spec.width, 200);
    const double H = std::max(spec.height, 150);
    const bool has_right = !spec.right.empty();

    // Ranges.
    std::vector<const Series*> all;
    for (const Series& s : spec.left) all.push_back(&s);
    for (const Series& s : spec.right) all.push_back(&s);
    double xlo, xhi, ylo, yhi, rlo, rhi;
    {
        // x over every series (each point judged against its own y axis).
        double a, b, c, d;
        data_range(spec.left, true, spec.x.log, spec.y_left.log, a, b);
        data_range(spec.right, true, spec.x.log, spec.y_right.log, c, d);
        xlo = std::isnan(a) ? c : std::isnan(c) ? a : std::min(a, c);
        xhi = std::isnan(b) ? d : std::isnan(d) ? b : std::max(b, d);
    }
    data_range(spec.left, false, spec.x.log, spec.y_left.log, ylo, yhi);
    data_range(spec.right, false, spec.x.log, spec.y_right.log, rlo, rhi);
    AxisScale xs = axis_scale(xlo, xhi, spec.x);
    AxisScale ls = axis_scale(ylo, yhi, spec.y_left);
    AxisScale rs = axis_scale(rlo, rhi, spec.y_right);
    auto step_of = [](const AxisScale& s) {
        return s.ticks.size() >= 2 ? s.ticks[1] - s.ticks[0] : (s.hi - s.lo);
    };
    std::vector<std::string> xl, ll, rl;
    for (double t : xs.ticks)
        xl.push_back(spec.x.categories.empty() ? tick_label(t, spec.x.log, step_of(xs))
                                               : xml_escape(spec.x.categories[size_t(t) - 1]));
    for (double t : ls.ticks) ll.push_back(tick_label(t, spec.y_left.log, step_of(ls)));
    for (double t : rs.ticks) rl.push_back(tick_label(t, spec.y_right.log, step_of(rs)));

    // Legend entries and their rows.
    struct Entry {
        const Series* s;
        int index;
        bool right;
        double x, y;
    };
    std::vector<Entry> entries;
    for (size_t i = 0; i < all.size(); ++i)
        entries.push_back({all[i], static_cast<int>(i), i >= spec.left.size(), 0, 0});
    const double legend_row_h = 18;
    double legend_w_avail = W - 32;
    int rows = 0;
    {
        double cx = legend_w_avail + 1;
        for (Entry& e : entries) {
            double w = 30 + text_width(e.s->name) + 20;
            if (cx + w > legend_w_avail && cx > 0) {
                ++rows;
                cx = 0;
            }
            e.x = cx;
            e.y = rows - 1;
            cx += w;
        }
    }
    double legend_h = rows ? rows * legend_row_h + 8 : 0;

    // Layout.
    auto widest = [](const std::vector<std::string>& v) {
        double w = 0;
        for (const auto& s : v) w = std::max(w, text_width(s));
        return w;
    };
    double ml = 10 + (spec.y_left.label.empty() ? 0 : 20) + widest(ll) + 8;
    double mr = has_right ? 10 + (spec.y_right.label.empty() ? 0 : 20) + widest(rl) + 8
                          : std::max(16.0, widest(xl) / 2 + 4);
    double mt = spec.title.empty() ? 16 : 40;
    double mb = 22 + (spec.x.label.empty() ? 0 : 22) + legend_h + 8;
    double px0 = ml, py0 = mt;
    double pw = std::max(40.0, W - ml - mr), ph = std::max(40.0, H - mt - mb);
    double px1 = px0 + pw, py1 = py0 + ph;
    Mapper mx{xs.lo, xs.hi, px0, px1, spec.x.log};
    Mapper my{ls.lo, ls.hi, py1, py0, spec.y_left.log};
    Mapper mrr{rs.lo, rs.hi, py1, py0, spec.y_right.log};

    std::string o;
    o.reserve(16384);
    o += "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n";
    o += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + coord(W) +
         "\" height=\"" + coord(H) + "\" viewBox=\"0 0 " + coord(W) + " " + coord(H) +
         "\" font-family=\"sans-serif\" font-size=\"12\">\n";
    o += "<title>" + xml_escape(spec.title) + "</title>\n";
    o += "<defs><clipPath id=\"plot-area\"><rect x=\"" + coord(px0 - 6) + "\" y=\"" +
         coord(py0 - 6) + "\" width=\"" + coord(pw + 12) + "\" height=\"" + coord(ph + 12) +
         "\"/></clipPath></defs>\n";
    o += "<rect x=\"0\" y=\"0\" width=\"" + coord(W) + "\" height=\"" + coord(H) +
         "\" fill=\"#ffffff\"/>\n";

    // Grid: minor (log) then major, for x and the left axis (the right one
    // when there is no left series).
    const bool grid_right = spec.left.empty() && has_right;
    const AxisScale& gy = grid_right ? rs : ls;
    const Mapper& gmy = grid_right ? mrr : my;
    o += "<g class=\"grid\" stroke=\"#eeeeee\" stroke-width=\"1\">\n";
    for (double v : xs.minor)
        o += "<line x1=\"" + coord(mx(v)) + "\" y1=\"" + coord(py0) + "\" x2=\"" + coord(mx(v)) +
             "\" y2=\"" + coord(py1) + "\"/>\n";
    for (double v : gy.minor)
        o += "<line x1=\"" + coord(px0) + "\" y1=\"" + coord(gmy(v)) + "\" x2=\"" + coord(px1) +
             "\" y2=\"" + coord(gmy(v)) + "\"/>\n";
    o += "</g>\n<g class=\"grid\" stroke=\"#d0d0d0\" stroke-width=\"1\">\n";
    for (double v : xs.ticks)
        o += "<line x1=\"" + coord(mx(v)) + "\" y1=\"" + coord(py0) + "\" x2=\"" + coord(mx(v)) +
             "\" y2=\"" + coord(py1) + "\"/>\n";
    for (double v : gy.ticks)
        o += "<line x1=\"" + coord(px0) + "\" y1=\"" + coord(gmy(v)) + "\" x2=\"" + coord(px1) +
             "\" y2=\"" + coord(gmy(v)) + "\"/>\n";
    o += "</g>\n";

    // Frame, ticks, tick labels.
    o += "<rect class=\"frame\" x=\"" + coord(px0) + "\" y=\"" + coord(py0) + "\" width=\"" +
         coord(pw) + "\" height=\"" + coord(ph) + "\" fill=\"none\" stroke=\"#333333\"/>\n";
    o += "<g class=\"ticks\" stroke=\"#333333\" stroke-width=\"1\">\n";
    for (double v : xs.ticks)
        o += "<line x1=\"" + coord(mx(v)) + "\" y1=\"" + coord(py1) + "\" x2=\"" + coord(mx(v)) +
             "\" y2=\"" + coord(py1 + 5) + "\"/>\n";
    for (double v : xs.minor)
        o += "<line x1=\"" + coord(mx(v)) + "\" y1=\"" + coord(py1) + "\" x2=\"" + coord(mx(v)) +
             "\" y2=\"" + coord(py1 + 3) + "\"/>\n";
    for (double v : ls.ticks)
        o += "<line x1=\"" + coord(px0 - 5) + "\" y1=\"" + coord(my(v)) + "\" x2=\"" +
             coord(px0) + "\" y2=\"" + coord(my(v)) + "\"/>\n";
    for (double v : ls.minor)
        o += "<line x1=\"" + coord(px0 - 3) + "\" y1=\"" + coord(my(v)) + "\" x2=\"" +
             coord(px0) + "\" y2=\"" + coord(my(v)) + "\"/>\n";
    if (has_right) {
        for (double v : rs.ticks)
            o += "<line x1=\"" + coord(px1) + "\" y1=\"" + coord(mrr(v)) + "\" x2=\"" +
                 coord(px1 + 5) + "\" y2=\"" + coord(mrr(v)) + "\"/>\n";
        for (double v : rs.minor)
            o += "<line x1=\"" + coord(px1) + "\" y1=\"" + coord(mrr(v)) + "\" x2=\"" +
                 coord(px1 + 3) + "\" y2=\"" + coord(mrr(v)) + "\"/>\n";
    }
    o += "</g>\n<g class=\"tick-labels\" fill=\"#333333\">\n";
    for (size_t i = 0; i < xs.ticks.size(); ++i)
        o += "<text class=\"tick-x\" x=\"" + coord(mx(xs.ticks[i])) + "\" y=\"" +
             coord(py1 + 18) + "\" text-anchor=\"middle\">" + xl[i] + "</text>\n";
    for (size_t i = 0; i < ls.ticks.size(); ++i)
        o += "<text class=\"tick-yl\" x=\"" + coord(px0 - 8) + "\" y=\"" +
             coord(my(ls.ticks[i]) + 4) + "\" text-anchor=\"end\">" + ll[i] + "</text>\n";
    if (has_right) {
        for (size_t i = 0; i < rs.ticks.size(); ++i)
            o += "<text class=\"tick-yr\" x=\"" + coord(px1 + 8) + "\" y=\"" +
                 coord(mrr(rs.ticks[i]) + 4) + "\" text-anchor=\"start\">" + rl[i] + "</text>\n";
    }
    o += "</g>\n";

    // Axis labels and title.
    if (!spec.x.label.empty())
        o += "<text class=\"label-x\" x=\"" + coord(px0 + pw / 2) + "\" y=\"" +
             coord(py1 + 40) + "\" text-anchor=\"middle\" font-size=\"13\">" +
             xml_escape(spec.x.label) + "</text>\n";
    if (!spec.y_left.label.empty()) {
        double x = 16, y = py0 + ph / 2;
        o += "<text class=\"label-yl\" x=\"" + coord(x) + "\" y=\"" + coord(y) +
             "\" text-anchor=\"middle\" font-size=\"13\" transform=\"rotate(-90 " + coord(x) +
             " " + coord(y) + ")\">" + xml_escape(spec.y_left.label) + "</text>\n";
    }
    if (has_right && !spec.y_right.label.empty()) {
        double x = W - 16, y = py0 + ph / 2;
        o += "<text class=\"label-yr\" x=\"" + coord(x) + "\" y=\"" + coord(y) +
             "\" text-anchor=\"middle\" font-size=\"13\" transform=\"rotate(90 " + coord(x) +
             " " + coord(y) + ")\">" + xml_escape(spec.y_right.label) + "</text>\n";
    }
    if (!spec.title.empty())
        o += "<text class=\"title\" x=\"" + coord(W / 2) +
             "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">" +
             xml_escape(spec.title) + "</text>\n";

    // Series.
    o += "<g clip-path=\"url(#plot-area)\">\n";
    for (const Entry& e : entries) {
        const Series& s = *e.s;
        const char* colour = kColours[e.index % kNumColours];
        const Axis& yax = e.right ? spec.y_right : spec.y_left;
        const Mapper& m = e.right ? mrr : my;
        std::vector<std::pair<double, double>> pts;
        size_t n = std::min(s.x.size(), s.y.size());
        for (size_t i = 0; i < n; ++i)
            if (plottable(s.x[i], spec.x.log) && plottable(s.y[i], yax.log))
                pts.push_back({mx(s.x[i]), m(s.y[i])});
        o += e.right ? "<g class=\"series right\">\n" : "<g class=\"series left\">\n";
        o += "<title>" + xml_escape(s.name) + "</title>\n";
        o += "<polyline class=\"line\" fill=\"none\" stroke=\"" + std::string(colour) +
             "\" stroke-width=\"2\" stroke-linejoin=\"round\"";
        if (e.right) o += " stroke-dasharray=\"7,4\"";
        o += " points=\"";
        for (size_t i = 0; i < pts.size(); ++i) {
            if (i) o += ' ';
            o += coord(pts[i].first) + "," + coord(pts[i].second);
        }
        o += "\"/>\n<g class=\"markers\">\n";
        for (const auto& [x, y] : pts) o += marker(e.index, x, y, colour, e.right) + "\n";
        o += "</g>\n</g>\n";
    }
    o += "</g>\n";

    // Legend below the x axis label.
    if (!entries.empty()) {
        double ly0 = H - legend_h - 4;
        o += "<g class=\"legend\">\n";
        for (const Entry& e : entries) {
            const char* colour = kColours[e.index % kNumColours];
            double x = 16 + e.x, y = ly0 + 6 + e.y * legend_row_h + legend_row_h / 2;
            o += "<line x1=\"" + coord(x) + "\" y1=\"" + coord(y) + "\" x2=\"" + coord(x + 24) +
                 "\" y2=\"" + coord(y) + "\" stroke=\"" + colour + "\" stroke-width=\"2\"";
            if (e.right) o += " stroke-dasharray=\"7,4\"";
            o += "/>\n";
            o += marker(e.index, x + 12, y, colour, e.right) + "\n";
            o += "<text x=\"" + coord(x + 30) + "\" y=\"" + coord(y + 4) + "\">" +
                 xml_escape(e.s->name) + "</text>\n";
        }
        o += "</g>\n";
    }
    o += "</svg>\n";
    return o;
}

std::string render_csv(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows) {
    std::string out;
    auto line = [&out](const std::vector<std::string>& fields) {
        for (size_t i = 0; i < fields.size(); ++i) {
            if (i) out += ',';
            const std::string& f = fields[i];
            if (f.find_first_of(",\"\r\n") == std::string::npos) {
                out += f;
                continue;
            }
            out += '"';
            for (char c : f) {
                if (c == '"') out += '"';
                out += c;
            }
            out += '"';
        }
        out += "\r\n";
    };
    if (!header.empty()) line(header);
    for (const auto& r : rows) line(r);
    return out;
}

}  // namespace simnic::model
