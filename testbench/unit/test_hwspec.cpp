// SPDX-License-Identifier: Apache-2.0
// Keeps docs/hw-spec.md and hwspec/include/simnic/hw/layout.h in lock-step:
// every "#### Layout: NAME (SIZE bytes)" table in the document must match the
// descriptors of the same name, row by row, and the reverse.
#include <catch2/catch.hpp>

#include <cstdint>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "simnic/hw/field.h"
#include "simnic/hw/layout.h"

#ifndef SIMNIC_SOURCE_DIR
#error "SIMNIC_SOURCE_DIR must name the source tree"
#endif

namespace {

using simnic::hw::Field;
using simnic::hw::LayoutDesc;

struct DocRow {
    unsigned offset = 0;
    unsigned hi = 0;
    unsigned lo = 0;
    std::string name;
    int line = 0;
};

struct DocLayout {
    std::string name;
    unsigned size = 0;
    int line = 0;
    std::vector<DocRow> rows;
};

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t`");
    if (b == std::string::npos) return "";
    const auto e = s.find_last_not_of(" \t`");
    return s.substr(b, e - b + 1);
}

// Splits a markdown table row "| a | b | c |" into cells; "\|" stays inside a cell.
std::vector<std::string> cells(const std::string& line) {
    std::vector<std::string> out;
    std::string cur;
    bool started = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (c == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
            cur += '|';
            ++i;
        } else if (c == '|') {
            if (started) out.push_back(trim(cur));
            started = true;
            cur.clear();
        } else {
            cur += c;
        }
    }
    return out;
}

bool parse_heading(const std::string& line, std::string& name, unsigned& size) {
    static const std::string tag = "#### Layout: ";
    if (line.compare(0, tag.size(), tag) != 0) return false;
    std::istringstream is(line.substr(tag.size()));
    std::string paren, bytes;
    if (!(is >> name >> paren >> bytes)) return false;
    if (paren.size() < 2 || paren[0] != '(' || bytes != "bytes)") return false;
    size = static_cast<unsigned>(std::stoul(paren.substr(1), nullptr, 0));
    return true;
}

bool parse_bits(const std::string& cell, unsigned& hi, unsigned& lo) {
    std::string s = cell;
    if (!s.empty() && s.front() == '[') s.erase(0, 1);
    if (!s.empty() && s.back() == ']') s.pop_back();
    const auto colon = s.find(':');
    if (colon == std::string::npos) return false;
    try {
        hi = static_cast<unsigned>(std::stoul(s.substr(0, colon)));
        lo = static_cast<unsigned>(std::stoul(s.substr(colon + 1)));
    } catch (...) {
        return false;
    }
    return hi >= lo;
}

std::vector<DocLayout> parse_doc(const std::string& path, std::vector<std::string>& errors) {
    std::ifstream in(path);
    std::vector<DocLayout> out;
    if (!in) {
        errors.push_back("cannot open " + path);
        return out;
    }
    std::string line;
    int n = 0;
    DocLayout* cur = nullptr;
    bool in_table = false;
    while (std::getline(in, line)) {
        ++n;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        std::string name;
        unsigned size = 0;
        if (line.rfind("#### Layout:", 0) == 0) {
            if (!parse_heading(line, name, size)) {
                errors.push_back("line " + std::to_string(n) + ": malformed layout heading");
                cur = nullptr;
                continue;
            }
            out.push_back(DocLayout{name, size, n, {}});
            cur = &out.back();
            in_table = false;
            continue;
        }
        if (cur == nullptr) continue;
        const std::string t = trim(line);
        if (t.empty()) {
            if (in_table) cur = nullptr;  // a blank line ends the table
            continue;
        }
        if (t[0] != '|') {
            if (in_table) cur = nullptr;
            continue;
        }
        const auto c = cells(t);
        if (!in_table) {  // header row
            if (c.size() < 4 || c[0] != "Offset" || c[1] != "Bits" || c[2] != "Field") {
                errors.push_back("line " + std::to_string(n) + ": layout table header must be "
                                 "| Offset | Bits | Field | Description |");
                cur = nullptr;
                continue;
            }
            in_table = true;
            continue;
        }
        if (c.size() >= 1 && c[0].find("---") != std::string::npos) continue;  // separator
        if (c.size() < 4) {
            errors.push_back("line " + std::to_string(n) + ": short table row");
            continue;
        }
        DocRow r;
        r.line = n;
        try {
            std::size_t used = 0;
            r.offset = static_cast<unsigned>(std::stoul(c[0], &used, 16));
            if (c[0].rfind("0x", 0) != 0 || used != c[0].size()) throw 0;
        } catch (...) {
            errors.push_back("line " + std::to_string(n) + ": bad offset '" + c[0] + "'");
            continue;
        }
        if (!parse_bits(c[1], r.hi, r.lo)) {
            errors.push_back("line " + std::to_string(n) + ": bad bits '" + c[1] + "'");
            continue;
        }
        r.name = c[2];
        cur->rows.push_back(r);
    }
    return out;
}

const LayoutDesc* find_layout(const std::string& name) {
    for (const auto& l : simnic::hw::kLayouts)
        if (name == l.name) return &l;
    return nullptr;
}

std::string doc_path() { return std::string(SIMNIC_SOURCE_DIR) + "/docs/hw-spec.md"; }

}  // namespace

TEST_CASE("hw-spec.md layout tables match layout.h", "[hwspec]") {
    std::vector<std::string> errors;
    const auto doc = parse_doc(doc_path(), errors);
    for (const auto& e : errors) FAIL_CHECK(e);
    REQUIRE(errors.empty());
    REQUIRE(!doc.empty());

    std::set<std::string> seen;
    for (const auto& dl : doc) {
        INFO("layout " << dl.name << " (doc line " << dl.line << ")");
        CHECK(seen.insert(dl.name).second);  // each layout documented once
        const LayoutDesc* hl = find_layout(dl.name);
        if (hl == nullptr) {
            FAIL_CHECK("layout in doc but not in layout.h");
            continue;
        }
        CHECK(dl.size == hl->size);
        REQUIRE(dl.rows.size() == hl->count);
        for (std::size_t i = 0; i < hl->count; ++i) {
            const DocRow& r = dl.rows[i];
            const auto& hf = hl->fields[i];
            INFO("row " << i << " (doc line " << r.line << "): doc '" << r.name << "', header '"
                        << hf.name << "'");
            CHECK(r.name == hf.name);
            CHECK(r.offset == hf.field.offset);
            CHECK(r.lo == hf.field.lo);
            CHECK(r.hi == hf.field.hi());
        }
    }
    for (const auto& hl : simnic::hw::kLayouts) {
        INFO("layout " << hl.name);
        CHECK(seen.count(hl.name) == 1);  // every header layout is documented
    }
}

TEST_CASE("layout.h descriptors are well formed", "[hwspec]") {
    std::set<std::string> names;
    for (const auto& l : simnic::hw::kLayouts) {
        INFO("layout " << l.name);
        CHECK(names.insert(l.name).second);
        CHECK(l.size % 4 == 0);
        std::set<std::string> fnames;
        for (std::size_t i = 0; i < l.count; ++i) {
            const Field a = l.fields[i].field;
            INFO("field " << l.fields[i].name);
            CHECK(fnames.insert(l.fields[i].name).second);
            CHECK(simnic::hw::valid(a));
            CHECK(a.offset + a.span() <= l.size);
            CHECK(a.bit_end() <= l.size * 8u);
            if (i > 0) {  // tables are in ascending order
                CHECK(l.fields[i - 1].field.bit_begin() < a.bit_begin());
            }
            for (std::size_t j = i + 1; j < l.count; ++j) {
                const Field b = l.fields[j].field;
                const bool overlap = a.bit_begin() < b.bit_end() && b.bit_begin() < a.bit_end();
                INFO("against " << l.fields[j].name);
                CHECK_FALSE(overlap);
            }
        }
    }
}

TEST_CASE("get/set round-trip on every integer field", "[hwspec][field]") {
    for (const auto& l : simnic::hw::kLayouts) {
        for (std::size_t i = 0; i < l.count; ++i) {
            const Field f = l.fields[i].field;
            if (!simnic::hw::is_integer(f)) continue;
            INFO(l.name << "." << l.fields[i].name);
            std::vector<std::uint8_t> buf(l.size, 0xA5);
            const std::vector<std::uint8_t> before = buf;
            const std::uint64_t m = simnic::hw::mask_of(f.width);
            const std::uint64_t pattern = std::uint64_t{0x0123456789ABCDEF} & m;
            const std::uint64_t values[] = {0, 1, m, m >> 1, pattern};
            for (const std::uint64_t v : values) {
                REQUIRE(simnic::hw::set(buf.data(), buf.size(), f, v));
                CHECK(simnic::hw::get(buf.data(), buf.size(), f) == v);
            }
            // Bits outside the field are untouched.
            REQUIRE(simnic::hw::set(buf.data(), buf.size(), f, pattern));
            for (std::size_t bit = 0; bit < buf.size() * 8; ++bit) {
                if (bit >= f.bit_begin() && bit < f.bit_end()) continue;
                const bool now = (buf[bit / 8] >> (bit % 8)) & 1;
                const bool was = (before[bit / 8] >> (bit % 8)) & 1;
                if (now != was) {
                    FAIL_CHECK("bit " << bit << " outside the field changed");
                    break;
                }
            }
        }
    }
}

TEST_CASE("field accessors: little-endian placement", "[hwspec][field]") {
    std::uint8_t buf[16] = {};
    REQUIRE(simnic::hw::set(buf, Field{0x04, 8, 16}, 0xBEEF));
    CHECK(buf[4] == 0x00);
    CHECK(buf[5] == 0xEF);
    CHECK(buf[6] == 0xBE);
    CHECK(buf[7] == 0x00);
    REQUIRE(simnic::hw::set(buf, Field{0x08, 0, 64}, std::uint64_t{0x1122334455667788}));
    CHECK(buf[8] == 0x88);
    CHECK(buf[15] == 0x11);
    CHECK(simnic::hw::get(buf, Field{0x08, 0, 32}) == 0x55667788u);
    CHECK(simnic::hw::get(buf, Field{0x0C, 28, 4}) == 0x1u);
}

TEST_CASE("field accessors refuse bad accesses", "[hwspec][field]") {
    std::uint8_t buf[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    const std::uint8_t copy[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    std::uint64_t out = 77;

    // Past the end of the buffer.
    CHECK_FALSE(simnic::hw::set(buf, sizeof buf, Field{0x08, 0, 8}, 1));
    CHECK_FALSE(simnic::hw::get(buf, sizeof buf, Field{0x08, 0, 8}, out));
    CHECK(out == 77);
    CHECK(simnic::hw::get(buf, sizeof buf, Field{0x08, 0, 8}) == 0);
    CHECK_FALSE(simnic::hw::set(buf, 7, Field{0x04, 0, 8}, 1));  // dword needs 4 bytes
    CHECK_FALSE(simnic::hw::set(buf, sizeof buf, Field{0x04, 0, 64}, 1));
    // Value wider than the field.
    CHECK_FALSE(simnic::hw::set(buf, sizeof buf, Field{0x00, 4, 4}, 0x10));
    // Malformed descriptors.
    CHECK_FALSE(simnic::hw::set(buf, sizeof buf, Field{0x02, 0, 8}, 1));   // unaligned
    CHECK_FALSE(simnic::hw::set(buf, sizeof buf, Field{0x00, 30, 4}, 1));  // crosses dword
    CHECK_FALSE(simnic::hw::set(buf, sizeof buf, Field{0x04, 0, 64}, 1));  // 64-bit unaligned
    CHECK_FALSE(simnic::hw::set(buf, sizeof buf, Field{0x00, 0, 0}, 0));   // empty
    CHECK_FALSE(simnic::hw::set(nullptr, 8, Field{0x00, 0, 8}, 1));
    for (int i = 0; i < 8; ++i) CHECK(buf[i] == copy[i]);

    // Byte arrays: only wide fields, exact length.
    std::uint8_t gid[16];
    std::uint8_t big[32] = {};
    for (int i = 0; i < 16; ++i) gid[i] = static_cast<std::uint8_t>(0xF0 + i);
    const Field dgid = simnic::hw::av::dgid;
    CHECK(simnic::hw::set_bytes(big, sizeof big, dgid, gid, sizeof gid));
    CHECK(big[0] == 0xF0);  // wire order: raw[0] at the lowest address
    CHECK(big[15] == 0xFF);
    std::uint8_t back[16] = {};
    CHECK(simnic::hw::get_bytes(big, sizeof big, dgid, back, sizeof back));
    for (int i = 0; i < 16; ++i) CHECK(back[i] == gid[i]);
    CHECK_FALSE(simnic::hw::get_bytes(big, 15, dgid, back, sizeof back));
    CHECK_FALSE(simnic::hw::get_bytes(big, sizeof big, dgid, back, 8));
    CHECK_FALSE(simnic::hw::set_bytes(big, sizeof big, Field{0x00, 0, 32}, gid, 4));
    CHECK_FALSE(simnic::hw::is_integer(dgid));
    CHECK_FALSE(simnic::hw::set(big, sizeof big, dgid, 1));
}

TEST_CASE("ring and key helpers", "[hwspec]") {
    using namespace simnic::hw;
    CHECK(ring_slot(0xFFFFFFFFu, 4) == 15u);
    CHECK(ring_used(2u, 0xFFFFFFFEu) == 4u);  // wrap of the free-running indices
    CHECK(phase_of(0, 3) == 1u);
    CHECK(phase_of(7, 3) == 1u);
    CHECK(phase_of(8, 3) == 0u);
    CHECK(phase_of(16, 3) == 1u);
    CHECK(make_key(0x123, 0x45) == 0x12345u);
    CHECK(key_index(0x12345u) == 0x123u);
    CHECK(key_byte(0x12345u) == 0x45u);
    CHECK(status_errno(CmdStatus::Busy) == 16);
    CHECK(status_errno(CmdStatus::NoResources) == 12);
}
