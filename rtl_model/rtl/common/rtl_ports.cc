#include "rtl_ports.h"

#include <map>

namespace simnic::rtl {

namespace {

const char* dir_text(PortDir d) { return d == PortDir::In ? "in" : "out"; }

// The value of attribute `name` in the XML element starting at `pos` (up to
// its '>'), or empty.
std::string attr(const std::string& xml, size_t pos, const std::string& name) {
    const size_t end = xml.find('>', pos);
    const std::string key = " " + name + "=\"";
    const size_t at = xml.find(key, pos);
    if (at == std::string::npos || at > end) return {};
    const size_t v = at + key.size();
    const size_t q = xml.find('"', v);
    return q == std::string::npos ? std::string{} : xml.substr(v, q - v);
}

}  // namespace

std::string width_text(const PortSpec& p) {
    if (p.bits) return std::to_string(p.bits);
    return p.data_div == 1 ? "DataWidth" : "DataWidth/" + std::to_string(p.data_div);
}

bool xml_ports(const std::string& xml, const std::string& top, std::vector<FoundPort>& out) {
    // The type table: id -> width of plain logic/bit vectors. Verilator
    // writes `<basicdtype id=".." name="logic" left="7" right="0"/>`, no
    // left/right for one bit; a refdtype (a typedef) points at another.
    std::map<std::string, uint32_t> width;
    std::map<std::string, std::string> ref;
    for (size_t p = xml.find("<basicdtype "); p != std::string::npos; p = xml.find("<basicdtype ", p + 1)) {
        const std::string id = attr(xml, p, "id"), l = attr(xml, p, "left"), r = attr(xml, p, "right");
        uint32_t w = 1;
        if (!l.empty() && !r.empty()) {
            const long a = std::stol(l), b = std::stol(r);
            w = static_cast<uint32_t>((a > b ? a - b : b - a) + 1);
        }
        width[id] = w;
    }
    for (size_t p = xml.find("<refdtype "); p != std::string::npos; p = xml.find("<refdtype ", p + 1))
        ref[attr(xml, p, "id")] = attr(xml, p, "sub_dtype_id");
    auto width_of = [&](std::string id) -> uint32_t {
        for (int hop = 0; hop < 16; ++hop) {
            if (auto w = width.find(id); w != width.end()) return w->second;
            auto r = ref.find(id);
            if (r == ref.end()) return 0;
            id = r->second;
        }
        return 0;
    };
    // The top module: `<module ... name="top" ... topModule="1">`.
    size_t m = std::string::npos;
    for (size_t p = xml.find("<module "); p != std::string::npos; p = xml.find("<module ", p + 1))
        if (attr(xml, p, "name") == top && attr(xml, p, "topModule") == "1") m = p;
    if (m == std::string::npos) return false;
    const size_t end = xml.find("</module>", m);
    out.clear();
    for (size_t p = xml.find("<var ", m); p != std::string::npos && p < end; p = xml.find("<var ", p + 1)) {
        // A port has a direction and a pin number; a function's or a task's
        // arguments have a direction only.
        const std::string dir = attr(xml, p, "dir");
        if (dir.empty() || attr(xml, p, "pinIndex").empty()) continue;
        FoundPort f;
        f.name = attr(xml, p, "name");
        f.dir = dir == "output" ? PortDir::Out : PortDir::In;
        f.inout = dir == "inout";
        f.width = width_of(attr(xml, p, "dtype_id"));
        out.push_back(f);
    }
    return true;
}

std::vector<std::string> port_differences(const std::vector<PortSpec>& want, uint32_t data_width,
                                          const std::vector<FoundPort>& have) {
    std::vector<std::string> d;
    std::map<std::string, const FoundPort*> by_name;
    for (const FoundPort& f : have) by_name[f.name] = &f;
    std::map<std::string, bool> known;
    for (const PortSpec& p : want) {
        known[p.name] = true;
        const std::string head = std::string(p.name) + " (" + dir_text(p.dir) + ", " + width_text(p) + " = " +
                                 std::to_string(p.width(data_width)) + " bits)";
        auto it = by_name.find(p.name);
        if (it == by_name.end()) {
            d.push_back("missing port " + head);
            continue;
        }
        const FoundPort& f = *it->second;
        if (f.inout || f.dir != p.dir)
            d.push_back("port " + std::string(p.name) + " is " + (f.inout ? "inout" : dir_text(f.dir)) + ", expected " +
                        dir_text(p.dir));
        if (f.width != p.width(data_width))
            d.push_back("port " + std::string(p.name) + " is " +
                        (f.width ? std::to_string(f.width) + " bits" : std::string("not a packed vector")) +
                        ", expected " + std::to_string(p.width(data_width)) +
                        (p.bits ? std::string() : " (" + width_text(p) + ")"));
    }
    for (const FoundPort& f : have)
        if (!known.count(f.name))
            d.push_back("extra port " + f.name + " (" + (f.inout ? "inout" : dir_text(f.dir)) + ", " +
                        std::to_string(f.width) + " bits): the stage does not drive or read it");
    return d;
}

std::string ports_markdown(const std::vector<PortSpec>& ports) {
    std::string s = "| Port | Dir | Width | Meaning |\n|---|---|---|---|\n";
    for (const PortSpec& p : ports)
        s += std::string("| `") + p.name + "` | " + dir_text(p.dir) + " | " + width_text(p) + " | " + p.meaning + " |\n";
    return s;
}

}  // namespace simnic::rtl
