// render_svg(): well-formed XML (a small checking parser here), one line
// and one marker per plottable point per series, 1-2-5 and power-of-ten
// ticks, escaping. render_csv(): RFC 4180 quoting, read back by a parser.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "simnic/model/plot.h"

using namespace simnic::model;

namespace {

// ------------------------------------------------------------ XML checker

struct XmlNode {
    std::string name;
    std::map<std::string, std::string> attrs;  // decoded values
    std::vector<XmlNode> kids;
    std::string text;  // decoded character data directly inside

    std::string attr(const std::string& n) const {
        auto it = attrs.find(n);
        return it == attrs.end() ? std::string() : it->second;
    }
    bool has_class(const std::string& c) const {
        std::istringstream ss(attr("class"));
        std::string w;
        while (ss >> w)
            if (w == c) return true;
        return false;
    }
    // Every descendant (not this node) with element name `n` ("" = any) and
    // class `c` ("" = any), in document order.
    void find(const std::string& n, const std::string& c,
              std::vector<const XmlNode*>& out) const {
        for (const XmlNode& k : kids) {
            if ((n.empty() || k.name == n) && (c.empty() || k.has_class(c))) out.push_back(&k);
            k.find(n, c, out);
        }
    }
    std::vector<const XmlNode*> all(const std::string& n, const std::string& c = "") const {
        std::vector<const XmlNode*> v;
        find(n, c, v);
        return v;
    }
};

// Well-formedness as XML 1.0 has it, for what an SVG writer produces: an
// optional declaration, comments and processing instructions, one root
// element, matching tags, unique and quoted attributes, no '<' in values,
// only defined or numeric entity references, no "]]>" in text, CDATA,
// valid UTF-8 without forbidden control characters.
class XmlChecker {
public:
    explicit XmlChecker(const std::string& s) : s_(s) {}

    bool parse(XmlNode& root) {
        if (!utf8_ok()) return false;
        if (s_.compare(0, 5, "<?xml") == 0) {
            size_t e = s_.find("?>");
            if (e == std::string::npos) return fail("unterminated XML declaration");
            i_ = e + 2;
        }
        if (!misc()) return false;
        if (!at('<')) return fail("no root element");
        if (!element(root)) return false;
        if (!misc()) return false;
        if (i_ != s_.size()) return fail("content after the root element");
        return true;
    }
    const std::string& error() const { return err_; }

private:
    bool fail(const std::string& why) {
        if (err_.empty()) err_ = why + " at offset " + std::to_string(i_);
        return false;
    }
    bool at(char c) const { return i_ < s_.size() && s_[i_] == c; }
    bool starts(const char* p) const { return s_.compare(i_, std::strlen(p), p) == 0; }
    void ws() {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
            ++i_;
    }
    static bool name_start(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    }
    static bool name_char(char c) {
        return name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.';
    }
    bool name(std::string& out) {
        if (i_ >= s_.size() || !name_start(s_[i_])) return fail("bad name");
        size_t b = i_;
        while (i_ < s_.size() && name_char(s_[i_])) ++i_;
        out = s_.substr(b, i_ - b);
        return true;
    }
    bool comment_or_pi() {
        if (starts("<!--")) {
            size_t e = s_.find("-->", i_ + 4);
            if (e == std::string::npos) return fail("unterminated comment");
            if (s_.substr(i_ + 4, e - i_ - 4).find("--") != std::string::npos)
                return fail("-- inside a comment");
            i_ = e + 3;
            return true;
        }
        if (starts("<?")) {
            size_t e = s_.find("?>", i_ + 2);
            if (e == std::string::npos) return fail("unterminated PI");
            i_ = e + 2;
            return true;
        }
        return fail("expected comment or PI");
    }
    bool misc() {
        for (;;) {
            ws();
            if (starts("<!--") || starts("<?")) {
                if (!comment_or_pi()) return false;
            } else {
                return true;
            }
        }
    }
    // An entity reference at i_ ('&'), appended decoded to `out`.
    bool reference(std::string& out) {
        size_t e = s_.find(';', i_);
        if (e == std::string::npos || e - i_ > 12) return fail("bare &");
        std::string ref = s_.substr(i_ + 1, e - i_ - 1);
        i_ = e + 1;
        static const std::map<std::string, std::string> kNamed = {
            {"lt", "<"}, {"gt", ">"}, {"amp", "&"}, {"quot", "\""}, {"apos", "'"}};
        auto it = kNamed.find(ref);
        if (it != kNamed.end()) {
            out += it->second;
            return true;
        }
        if (ref.size() >= 2 && ref[0] == '#') {
            bool hex = ref[1] == 'x';
            std::string digits = ref.substr(hex ? 2 : 1);
            if (digits.empty()) return fail("empty character reference");
            for (char c : digits)
                if (!(hex ? std::isxdigit(static_cast<unsigned char>(c)) : std::isdigit(static_cast<unsigned char>(c))))
                    return fail("bad character reference");
            unsigned long cp = std::stoul(digits, nullptr, hex ? 16 : 10);
            if (cp == 0 || cp > 0x10ffff || (cp < 0x20 && cp != 9 && cp != 10 && cp != 13))
                return fail("character reference to a forbidden character");
            // Encode as UTF-8.
            if (cp < 0x80) {
                out += static_cast<char>(cp);
            } else if (cp < 0x800) {
                out += static_cast<char>(0xc0 | (cp >> 6));
                out += static_cast<char>(0x80 | (cp & 0x3f));
            } else if (cp < 0x10000) {
                out += static_cast<char>(0xe0 | (cp >> 12));
                out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
                out += static_cast<char>(0x80 | (cp & 0x3f));
            } else {
                out += static_cast<char>(0xf0 | (cp >> 18));
                out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
                out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
                out += static_cast<char>(0x80 | (cp & 0x3f));
            }
            return true;
        }
        return fail("undefined entity &" + ref + ";");
    }
    bool element(XmlNode& node) {
        ++i_;  // '<'
        if (!name(node.name)) return false;
        for (;;) {
            size_t before = i_;
            ws();
            if (at('/')) {
                if (!starts("/>")) return fail("bad empty-element tag");
                i_ += 2;
                return true;
            }
            if (at('>')) {
                ++i_;
                break;
            }
            if (i_ == before) return fail("no space before attribute");
            std::string an;
            if (!name(an)) return false;
            ws();
            if (!at('=')) return fail("attribute without =");
            ++i_;
            ws();
            if (!at('"') && !at('\'')) return fail("unquoted attribute");
            char q = s_[i_++];
            std::string val;
            while (i_ < s_.size() && s_[i_] != q) {
                if (s_[i_] == '<') return fail("< in attribute value");
                if (s_[i_] == '&') {
                    if (!reference(val)) return false;
                } else {
                    val += s_[i_++];
                }
            }
            if (i_ >= s_.size()) return fail("unterminated attribute");
            ++i_;
            if (!node.attrs.emplace(an, val).second) return fail("duplicate attribute " + an);
        }
        // Content.
        for (;;) {
            if (i_ >= s_.size()) return fail("unterminated element " + node.name);
            if (starts("</")) {
                i_ += 2;
                std::string end;
                if (!name(end)) return false;
                if (end != node.name) return fail("</" + end + "> closes <" + node.name + ">");
                ws();
                if (!at('>')) return fail("bad end tag");
                ++i_;
                return true;
            }
            if (starts("<![CDATA[")) {
                size_t e = s_.find("]]>", i_);
                if (e == std::string::npos) return fail("unterminated CDATA");
                node.text += s_.substr(i_ + 9, e - i_ - 9);
                i_ = e + 3;
            } else if (starts("<!--") || starts("<?")) {
                if (!comment_or_pi()) return false;
            } else if (at('<')) {
                node.kids.emplace_back();
                if (!element(node.kids.back())) return false;
            } else if (at('&')) {
                if (!reference(node.text)) return false;
            } else {
                if (starts("]]>")) return fail("]]> in text");
                node.text += s_[i_++];
            }
        }
    }
    bool utf8_ok() {
        const auto* p = reinterpret_cast<const unsigned char*>(s_.data());
        for (size_t k = 0; k < s_.size();) {
            unsigned c = p[k];
            size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
            if (!len || k + len > s_.size()) return i_ = k, fail("invalid UTF-8");
            uint32_t cp = len == 1 ? c : c & (0x7f >> len);
            for (size_t j = 1; j < len; ++j) {
                if ((p[k + j] & 0xc0) != 0x80) return i_ = k, fail("invalid UTF-8");
                cp = (cp << 6) | (p[k + j] & 0x3f);
            }
            static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
            if (cp < kMin[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                return i_ = k, fail("invalid UTF-8");
            if ((cp < 0x20 && cp != 9 && cp != 10 && cp != 13) || cp == 0xfffe || cp == 0xffff)
                return i_ = k, fail("character not allowed in XML");
            k += len;
        }
        return true;
    }

    const std::string& s_;
    size_t i_ = 0;
    std::string err_;
};

XmlNode parse_svg(const std::string& svg) {
    XmlNode root;
    XmlChecker x(svg);
    bool ok = x.parse(root);
    INFO(x.error());
    REQUIRE(ok);
    REQUIRE(root.name == "svg");
    CHECK(root.attr("xmlns") == "http://www.w3.org/2000/svg");
    CHECK(root.attr("version") == "1.1");
    return root;
}

std::vector<std::pair<double, double>> points_of(const XmlNode& polyline) {
    std::vector<std::pair<double, double>> v;
    std::istringstream ss(polyline.attr("points"));
    std::string pair;
    while (ss >> pair) {
        size_t comma = pair.find(',');
        REQUIRE(comma != std::string::npos);
        v.push_back({std::stod(pair.substr(0, comma)), std::stod(pair.substr(comma + 1))});
    }
    return v;
}

std::vector<double> tick_values(const XmlNode& root, const std::string& cls) {
    std::vector<double> v;
    for (const XmlNode* t : root.all("text", cls)) v.push_back(std::stod(t->text));
    return v;
}

bool is_power_of_ten(double v) {
    double e = std::log10(v);
    return v > 0 && std::fabs(e - std::round(e)) < 1e-12 && v == std::pow(10.0, std::round(e));
}

// Consecutive ticks a constant 1, 2 or 5 times 10^k apart.
void check_125(const std::vector<double>& t) {
    REQUIRE(t.size() >= 2);
    double step = t[1] - t[0];
    for (size_t i = 1; i < t.size(); ++i) CHECK(t[i] - t[i - 1] == Approx(step));
    double e = std::floor(std::log10(step) + 1e-9);
    double m = step / std::pow(10.0, e);
    bool ok = std::fabs(m - 1) < 1e-9 || std::fabs(m - 2) < 1e-9 || std::fabs(m - 5) < 1e-9;
    INFO("step " << step);
    CHECK(ok);
}

// A marker's shape: element name, and for polygons the number of corners
// and whether the first corner is above the centre (triangle up or down).
std::string shape_key(const XmlNode& m) {
    if (m.name != "polygon") return m.name;
    auto pts = points_of(m);
    double cy = 0;
    for (auto [x, y] : pts) cy += y / static_cast<double>(pts.size());
    return "polygon" + std::to_string(pts.size()) + (pts[0].second < cy ? "up" : "down");
}

// The sweep `simnic bench --sweep` plots: QPs 1..16384, two cache sizes.
PlotSpec sweep_spec() {
    PlotSpec p;
    p.title = "RX throughput and QP-cache hit rate vs QPs";
    p.x = {"QPs", true};
    p.y_left = {"throughput (Gb/s)"};
    p.y_right = {"hit rate (%)", false, 0, 100};
    std::vector<double> qps;
    for (double q = 1; q <= 16384; q *= 2) qps.push_back(q);
    for (int cache : {1024, 4096}) {
        std::vector<double> gbps, hit;
        for (double q : qps) {
            double h = q <= cache ? 100 : 100.0 * cache / q;
            hit.push_back(h);
            gbps.push_back(93.5 * (0.4 + 0.6 * h / 100));
        }
        std::string c = std::to_string(cache / 1024) + "k";
        p.left.push_back({"throughput, " + c + " cache", qps, gbps});
        p.right.push_back({"hit rate, " + c + " cache", qps, hit});
    }
    return p;
}

}  // namespace

TEST_CASE("plot: the sweep plot is well-formed SVG with every point", "[plot]") {
    PlotSpec p = sweep_spec();
    XmlNode root = parse_svg(render_svg(p));

    auto series = root.all("g", "series");
    REQUIRE(series.size() == 4);
    std::set<std::string> colours, shapes;
    for (size_t i = 0; i < series.size(); ++i) {
        const XmlNode& g = *series[i];
        bool right = i >= 2;
        CHECK(g.has_class(right ? "right" : "left"));
        auto lines = g.all("polyline", "line");
        REQUIRE(lines.size() == 1);
        CHECK(points_of(*lines[0]).size() == 15);
        auto markers = g.all("g", "markers");
        REQUIRE(markers.size() == 1);
        CHECK(markers[0]->kids.size() == 15);
        // Dashed exactly for right-axis series.
        CHECK(lines[0]->attr("stroke-dasharray").empty() == !right);
        colours.insert(lines[0]->attr("stroke"));
        shapes.insert(shape_key(markers[0]->kids[0]));
        // Its name as the title.
        auto titles = g.all("title");
        REQUIRE(titles.size() == 1);
        CHECK(titles[0]->text == (i < 2 ? p.left[i].name : p.right[i - 2].name));
    }
    CHECK(colours.size() == 4);
    CHECK(shapes.size() == 4);

    // x: QPs on a log axis, labelled 1, 10, ..., 100000.
    auto xt = tick_values(root, "tick-x");
    CHECK(xt == std::vector<double>{1, 10, 100, 1000, 10000, 100000});
    for (double v : xt) CHECK(is_power_of_ten(v));
    // Right: hit rate fixed at 0..100 in steps of 20; left: a 1-2-5 scale
    // from a multiple of the step below the data to one above.
    CHECK(tick_values(root, "tick-yr") == std::vector<double>{0, 20, 40, 60, 80, 100});
    auto yl = tick_values(root, "tick-yl");
    check_125(yl);
    CHECK(yl.front() <= 93.5 * (0.4 + 0.6 * 1024.0 / 16384));
    CHECK(yl.back() >= 93.5);

    // Every line point lies inside the frame.
    auto frames = root.all("rect", "frame");
    REQUIRE(frames.size() == 1);
    double fx = std::stod(frames[0]->attr("x")), fy = std::stod(frames[0]->attr("y"));
    double fw = std::stod(frames[0]->attr("width")), fh = std::stod(frames[0]->attr("height"));
    for (const XmlNode* l : root.all("polyline", "line")) {
        for (auto [x, y] : points_of(*l)) {
            CHECK(x >= fx - 0.01);
            CHECK(x <= fx + fw + 0.01);
            CHECK(y >= fy - 0.01);
            CHECK(y <= fy + fh + 0.01);
        }
    }
    // x increases along the line, equal x for equal QPs across series.
    auto l0 = points_of(*root.all("polyline", "line")[0]);
    auto l3 = points_of(*root.all("polyline", "line")[3]);
    for (size_t i = 1; i < l0.size(); ++i) CHECK(l0[i].first > l0[i - 1].first);
    for (size_t i = 0; i < l0.size(); ++i) CHECK(l0[i].first == l3[i].first);
    // Log x: equal spacing for doublings.
    for (size_t i = 2; i < l0.size(); ++i)
        CHECK(l0[i].first - l0[i - 1].first == Approx(l0[1].first - l0[0].first).margin(0.02));
    // The hit rate of the 1k cache: 100 % at the top of the frame.
    auto hit1k = points_of(*root.all("polyline", "line")[2]);
    CHECK(hit1k[0].second == Approx(fy).margin(0.01));

    // Legend: one entry per series, dashed samples for the right axis.
    auto legend = root.all("g", "legend");
    REQUIRE(legend.size() == 1);
    auto texts = legend[0]->all("text");
    REQUIRE(texts.size() == 4);
    CHECK(texts[0]->text == p.left[0].name);
    CHECK(texts[3]->text == p.right[1].name);
    auto samples = legend[0]->all("line");
    REQUIRE(samples.size() == 4);
    CHECK(samples[0]->attr("stroke-dasharray").empty());
    CHECK_FALSE(samples[3]->attr("stroke-dasharray").empty());

    // Self-contained: no scripts, no links, no external references.
    std::string svg = render_svg(p);
    CHECK(svg.find("<script") == std::string::npos);
    CHECK(svg.find("href") == std::string::npos);
    CHECK(svg.find("@import") == std::string::npos);
    CHECK(svg.find("url(") == svg.find("url(#plot-area)"));
}

TEST_CASE("plot: points that cannot be plotted are left out", "[plot]") {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    PlotSpec p;
    p.x = {"x", true};
    p.y_left = {"y", true};
    p.y_right = {"r"};
    p.left.push_back({"a", {0, 1, 2, -3, 4, 5, 6, 7}, {1, 2, 3, 4, nan, 0, 7, 8, 9}});
    p.right.push_back({"b", {1, 2, inf, 4}, {5, -6, 7, 8}});
    p.right.push_back({"c", {}, {}});
    XmlNode root = parse_svg(render_svg(p));
    auto lines = root.all("polyline", "line");
    REQUIRE(lines.size() == 3);
    CHECK(points_of(*lines[0]).size() == 4);  // x=1,2 (y 2,3), x=6,7 (y 7,8); 9 has no x
    CHECK(points_of(*lines[1]).size() == 3);  // right y is linear: -6 is fine
    CHECK(points_of(*lines[2]).empty());
    CHECK(root.all("g", "markers")[0]->kids.size() == 4);
    for (double v : tick_values(root, "tick-x")) CHECK(is_power_of_ten(v));
    for (double v : tick_values(root, "tick-yl")) CHECK(is_power_of_ten(v));
    check_125(tick_values(root, "tick-yr"));
}

TEST_CASE("plot: text is escaped", "[plot]") {
    PlotSpec p;
    p.title = "<b>Q&A</b> \"quoted\" 'single' ]]> \x01 bad\xff utf8 \xc3\xa9";
    p.x = {"x & y < z"};
    p.y_left = {"Gb/s > 0"};
    p.left.push_back({"a&b <series>", {1, 2}, {3, 4}});
    std::string svg = render_svg(p);
    XmlNode root = parse_svg(svg);
    auto titles = root.all("text", "title");
    REQUIRE(titles.size() == 1);
    CHECK(titles[0]->text ==
          "<b>Q&A</b> \"quoted\" 'single' ]]> \xEF\xBF\xBD bad\xEF\xBF\xBD utf8 \xc3\xa9");
    CHECK(root.all("text", "label-x")[0]->text == "x & y < z");
    CHECK(root.all("text", "label-yl")[0]->text == "Gb/s > 0");
    CHECK(root.all("g", "legend")[0]->all("text")[0]->text == "a&b <series>");
    CHECK(root.kids[0].name == "title");
    CHECK(svg.find("<b>") == std::string::npos);

    CHECK(xml_escape("a<b>&\"'") == "a&lt;b&gt;&amp;&quot;&apos;");
    CHECK(xml_escape("tab\tnl\ncr\r") == "tab\tnl\ncr\r");
    CHECK(xml_escape(std::string("nul\0x", 5)) == "nul\xEF\xBF\xBDx");
    CHECK(xml_escape("\xe2\x82\xac \xf0\x9f\x98\x80") == "\xe2\x82\xac \xf0\x9f\x98\x80");
    CHECK(xml_escape("\xc0\xaf") == "\xEF\xBF\xBD\xEF\xBF\xBD");          // overlong
    CHECK(xml_escape("\xed\xa0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
    CHECK(xml_escape("\xef\xbf\xbe") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // U+FFFE
    CHECK(xml_escape("\xe2\x82") == "\xEF\xBF\xBD\xEF\xBF\xBD");          // truncated
}

TEST_CASE("plot: axis scales", "[plot]") {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    SECTION("linear, from the data") {
        AxisScale s = axis_scale(0, 37, Axis{});
        CHECK(s.lo == 0);
        CHECK(s.hi == 40);
        CHECK(s.ticks == std::vector<double>{0, 10, 20, 30, 40});
        s = axis_scale(0.013, 0.087, Axis{});
        check_125(s.ticks);
        CHECK(s.lo <= 0.013);
        CHECK(s.hi >= 0.087);
        s = axis_scale(-3.2, 7.9, Axis{});
        check_125(s.ticks);
        CHECK(std::count(s.ticks.begin(), s.ticks.end(), 0.0) == 1);
        s = axis_scale(1234567, 1234567, Axis{});  // one value: widened
        CHECK(s.lo < 1234567);
        CHECK(s.hi > 1234567);
        check_125(s.ticks);
        s = axis_scale(nan, nan, Axis{});  // no data
        CHECK(s.lo == 0);
        CHECK(s.hi == 1);
    }
    SECTION("linear, fixed ends") {
        AxisScale s = axis_scale(3, 97, Axis{"", false, 0, 100});
        CHECK(s.ticks == std::vector<double>{0, 20, 40, 60, 80, 100});
        s = axis_scale(3, 97, Axis{"", false, 0.5, nan});
        CHECK(s.lo == 0.5);
        CHECK(s.ticks.front() >= 0.5);
        check_125(s.ticks);
    }
    SECTION("log") {
        AxisScale s = axis_scale(3, 16384, Axis{"", true});
        CHECK(s.lo == 1);
        CHECK(s.hi == 100000);
        CHECK(s.ticks == std::vector<double>{1, 10, 100, 1000, 10000, 100000});
        CHECK(s.minor.size() == 5 * 8);
        for (double m : s.minor) CHECK_FALSE(is_power_of_ten(m));
        s = axis_scale(1e-3, 1e12, Axis{"", true});  // 15 decades: every other one
        CHECK(s.ticks.size() <= 8);
        for (double v : s.ticks) CHECK(is_power_of_ten(v));
        CHECK(s.minor.empty());
        s = axis_scale(2, 8, Axis{"", true});  // within one decade
        CHECK(s.ticks == std::vector<double>{1, 10});
        s = axis_scale(5, 5, Axis{"", true});
        CHECK(s.ticks == std::vector<double>{1, 10});
        s = axis_scale(0.002, 0.5, Axis{"", true});
        CHECK(s.ticks == std::vector<double>{0.001, 0.01, 0.1, 1});
        s = axis_scale(nan, nan, Axis{"", true});
        CHECK(s.ticks == std::vector<double>{1, 10});
        s = axis_scale(3, 700, Axis{"", true, -1, nan});  // a non-positive fixed end is ignored
        CHECK(s.lo == 1);
    }
}

TEST_CASE("plot: tick labels of large, small and negative values", "[plot]") {
    PlotSpec p;
    p.x = {"x", true};
    p.y_left = {"y"};
    p.left.push_back({"s", {1e-3, 1e7}, {-0.25, 0.75}});
    XmlNode root = parse_svg(render_svg(p));
    std::vector<std::string> xl;
    for (const XmlNode* t : root.all("text", "tick-x")) xl.push_back(t->text);
    CHECK(xl == std::vector<std::string>{"0.001", "0.01", "0.1", "1", "10", "100", "1000",
                                         "10000", "100000", "1e6", "1e7"});
    std::vector<std::string> yl;
    for (const XmlNode* t : root.all("text", "tick-yl")) yl.push_back(t->text);
    CHECK(yl == std::vector<std::string>{"-0.4", "-0.2", "0", "0.2", "0.4", "0.6", "0.8"});
}

TEST_CASE("plot: an empty spec still renders", "[plot]") {
    XmlNode root = parse_svg(render_svg(PlotSpec{}));
    CHECK(root.all("g", "series").empty());
    CHECK(root.all("g", "legend").empty());
    CHECK_FALSE(tick_values(root, "tick-x").empty());
    CHECK(root.all("text", "tick-yr").empty());
    PlotSpec tiny;
    tiny.width = 10;
    tiny.height = 10;
    tiny.left.push_back({"only", {1}, {1}});
    XmlNode r2 = parse_svg(render_svg(tiny));
    CHECK(points_of(*r2.all("polyline", "line")[0]).size() == 1);
}

TEST_CASE("plot: many series get distinct colour and marker pairs", "[plot]") {
    PlotSpec p;
    for (int i = 0; i < 12; ++i)
        p.left.push_back({"s" + std::to_string(i), {1, 2, 3}, {double(i), double(i + 1), 0}});
    XmlNode root = parse_svg(render_svg(p));
    std::set<std::string> styles;
    for (const XmlNode* g : root.all("g", "series")) {
        const XmlNode& m = g->all("g", "markers")[0]->kids[0];
        styles.insert(g->all("polyline")[0]->attr("stroke") + "/" + shape_key(m));
    }
    CHECK(styles.size() == 12);
}

// ------------------------------------------------------------ CSV

namespace {

// RFC 4180 reader for the round trip.
std::vector<std::vector<std::string>> parse_csv(const std::string& s) {
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> row;
    std::string field;
    size_t i = 0;
    bool in_quotes = false, quoted = false;
    while (i < s.size()) {
        char c = s[i];
        if (in_quotes) {
            if (c == '"') {
                if (i + 1 < s.size() && s[i + 1] == '"') {
                    field += '"';
                    i += 2;
                    continue;
                }
                in_quotes = false;
                ++i;
                continue;
            }
            field += c;
            ++i;
            continue;
        }
        if (c == '"') {
            REQUIRE(field.empty());  // quotes only around a whole field
            REQUIRE_FALSE(quoted);
            in_quotes = quoted = true;
            ++i;
        } else if (c == ',') {
            row.push_back(field);
            field.clear();
            quoted = false;
            ++i;
        } else if (c == '\r') {
            REQUIRE(i + 1 < s.size());
            REQUIRE(s[i + 1] == '\n');  // CR only in CRLF outside quotes
            row.push_back(field);
            rows.push_back(row);
            row.clear();
            field.clear();
            quoted = false;
            i += 2;
        } else {
            REQUIRE(c != '\n');
            REQUIRE_FALSE(quoted);  // nothing after a closing quote
            field += c;
            ++i;
        }
    }
    REQUIRE_FALSE(in_quotes);
    REQUIRE(row.empty());
    REQUIRE(field.empty());
    return rows;
}

}  // namespace

TEST_CASE("csv: RFC 4180 quoting", "[csv]") {
    CHECK(render_csv({"qps", "gbps"}, {{"1", "93.5"}, {"16384", "41.2"}}) ==
          "qps,gbps\r\n1,93.5\r\n16384,41.2\r\n");
    CHECK(render_csv({}, {{"a"}}) == "a\r\n");
    CHECK(render_csv({}, {}).empty());
    CHECK(render_csv({"a,b"}, {}) == "\"a,b\"\r\n");
    CHECK(render_csv({}, {{"say \"hi\""}}) == "\"say \"\"hi\"\"\"\r\n");
    CHECK(render_csv({}, {{"line1\nline2", "cr\rx", "crlf\r\n"}}) ==
          "\"line1\nline2\",\"cr\rx\",\"crlf\r\n\"\r\n");
    CHECK(render_csv({}, {{"", "", ""}}) == ",,\r\n");
    CHECK(render_csv({}, {{" lead", "trail ", "semi;colon", "tab\t"}}) ==
          " lead,trail ,semi;colon,tab\t\r\n");
    CHECK(render_csv({}, {{"\""}}) == "\"\"\"\"\r\n");
    CHECK(render_csv({}, {{"a"}, {"b", "c"}}) == "a\r\nb,c\r\n");  // rows as given
}

TEST_CASE("csv: random fields read back", "[csv]") {
    std::mt19937 rng(5);
    const std::string alphabet = "ab ,\"\r\n;'x1";
    for (int round = 0; round < 200; ++round) {
        std::vector<std::string> header;
        std::vector<std::vector<std::string>> rows;
        size_t cols = 1 + rng() % 5;
        auto field = [&] {
            std::string f;
            size_t n = rng() % 6;
            for (size_t k = 0; k < n; ++k) f += alphabet[rng() % alphabet.size()];
            return f;
        };
        for (size_t c = 0; c < cols; ++c) header.push_back(field());
        for (size_t r = 0, nr = rng() % 5; r < nr; ++r) {
            rows.emplace_back();
            for (size_t c = 0; c < cols; ++c) rows.back().push_back(field());
        }
        auto back = parse_csv(render_csv(header, rows));
        REQUIRE(back.size() == rows.size() + 1);
        CHECK(back[0] == header);
        for (size_t r = 0; r < rows.size(); ++r) CHECK(back[r + 1] == rows[r]);
    }
}
