// A stage's RTL interface as data: its ports (name, direction, width,
// meaning), so that one table drives the port checker of one's own RTL
// (own_rtl.cc), the docs' port table (ports_markdown, kept equal to
// docs/model.md by a test) and nothing is written twice.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace simnic::rtl {

enum class PortDir : uint8_t { In, Out };

struct PortSpec {
    const char* name;
    PortDir dir;
    // The width: `bits` if not 0, else DataWidth / data_div.
    uint32_t bits;
    uint32_t data_div;
    const char* meaning;

    uint32_t width(uint32_t data_width) const { return bits ? bits : data_width / data_div; }
};

// "1", "DataWidth", "DataWidth/8".
std::string width_text(const PortSpec& p);

// A port as a design declares it.
struct FoundPort {
    std::string name;
    PortDir dir = PortDir::In;
    uint32_t width = 0;  // 0: not a plain packed vector (a struct, an array...)
    bool inout = false;
};

// The ports of module `top` in the output of `verilator --xml-only` (after
// parameters are applied). False if the XML has no such module.
bool xml_ports(const std::string& xml, const std::string& top, std::vector<FoundPort>& out);

// Every difference between `want` (at `data_width`) and `have`, one line
// each: missing ports, extra ports, wrong directions, wrong widths. Empty if
// the design fits.
std::vector<std::string> port_differences(const std::vector<PortSpec>& want, uint32_t data_width,
                                          const std::vector<FoundPort>& have);

// The ports as a Markdown table: | Port | Dir | Width | Meaning |.
std::string ports_markdown(const std::vector<PortSpec>& ports);

}  // namespace simnic::rtl
