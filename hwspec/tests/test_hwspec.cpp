// SPDX-License-Identifier: Apache-2.0
// Keeps docs/hw-spec.md and hwspec/include/simnic/hw/layout.h in lock-step:
// every "#### Layout: NAME (SIZE bytes)" table in the document must match the
// descriptors of the same name, row by row, and the reverse. Likewise the QP
// state machine table of section 5.7 and simnic/hw/qp_fsm.h.
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
#include "simnic/hw/qp_fsm.h"

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

// ---------------------------------------------------------------------------
// QP state machine (hw-spec.md 5.7) and attribute mask bits (5.6.7)
// ---------------------------------------------------------------------------
using simnic::hw::QpState;
using simnic::hw::QpType;
namespace qam = simnic::hw::qp_attr_mask;

const QpState kEveryState[] = {QpState::Reset, QpState::Init, QpState::Rtr, QpState::Rts,
                               QpState::Sqd,   QpState::Sqe,  QpState::Err};
const QpType kEveryType[] = {QpType::Rc, QpType::Uc, QpType::Ud};

// The names the document uses (IBA / libibverbs), mapped here independently of
// qp_fsm.h; the attribute names are themselves checked against the document.
const std::map<std::string, QpState> kStateNames = {
    {"RESET", QpState::Reset}, {"INIT", QpState::Init}, {"RTR", QpState::Rtr},
    {"RTS", QpState::Rts},     {"SQD", QpState::Sqd},   {"SQE", QpState::Sqe},
    {"ERR", QpState::Err},
};
const std::map<std::string, QpType> kTypeNames = {
    {"RC", QpType::Rc}, {"UC", QpType::Uc}, {"UD", QpType::Ud}};
const std::map<std::string, std::uint32_t> kAttrNames = {
    {"STATE", qam::kState},
    {"CUR_STATE", qam::kCurState},
    {"EN_SQD_ASYNC_NOTIFY", qam::kEnSqdAsyncNotify},
    {"ACCESS_FLAGS", qam::kAccessFlags},
    {"PKEY_INDEX", qam::kPkeyIndex},
    {"PORT", qam::kPort},
    {"QKEY", qam::kQkey},
    {"AV", qam::kAv},
    {"PATH_MTU", qam::kPathMtu},
    {"TIMEOUT", qam::kTimeout},
    {"RETRY_CNT", qam::kRetryCnt},
    {"RNR_RETRY", qam::kRnrRetry},
    {"RQ_PSN", qam::kRqPsn},
    {"MAX_QP_RD_ATOMIC", qam::kMaxQpRdAtomic},
    {"ALT_PATH", qam::kAltPath},
    {"MIN_RNR_TIMER", qam::kMinRnrTimer},
    {"SQ_PSN", qam::kSqPsn},
    {"MAX_DEST_RD_ATOMIC", qam::kMaxDestRdAtomic},
    {"PATH_MIG_STATE", qam::kPathMigState},
    {"CAP", qam::kCap},
    {"DEST_QPN", qam::kDestQpn},
    {"RATE_LIMIT", qam::kRateLimit},
};

std::string state_name(QpState s) {
    for (const auto& kv : kStateNames)
        if (kv.second == s) return kv.first;
    return "?";
}
std::string type_name(QpType t) {
    for (const auto& kv : kTypeNames)
        if (kv.second == t) return kv.first;
    return "?";
}

std::vector<std::string> read_lines(const std::string& path, std::vector<std::string>& errors) {
    std::vector<std::string> out;
    std::ifstream in(path);
    if (!in) errors.push_back("cannot open " + path);
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        out.push_back(line);
    }
    return out;
}

// "A, B, C" -> {"A", "B", "C"}.
std::vector<std::string> split_list(const std::string& cell) {
    std::vector<std::string> out;
    std::istringstream is(cell);
    std::string item;
    while (std::getline(is, item, ',')) out.push_back(trim(item));
    return out;
}

struct DocTransition {
    std::uint8_t from = 0;  // qp_state_bit set
    QpState to = QpState::Reset;
    std::uint8_t types = 0;  // qp_type_bit set
    std::uint32_t required = 0;
    std::uint32_t optional = 0;
    int line = 0;
};

// A set cell: `every` (all of `all`), or a comma list of names.
template <typename E, typename BitOf>
bool parse_set(const std::string& cell, const char* every, std::uint8_t all,
               const std::map<std::string, E>& names, BitOf bit_of, std::uint8_t& out) {
    out = 0;
    if (cell == every) {
        out = all;
        return true;
    }
    for (const auto& n : split_list(cell)) {
        const auto it = names.find(n);
        if (it == names.end()) return false;
        out |= bit_of(it->second);
    }
    return out != 0;
}

bool parse_state_set(const std::string& cell, std::uint8_t& out) {
    return parse_set(cell, "any", simnic::hw::qp_fsm::kAnyState, kStateNames,
                     simnic::hw::qp_state_bit, out);
}

bool parse_type_set(const std::string& cell, std::uint8_t& out) {
    return parse_set(cell, "all", simnic::hw::qp_fsm::kAllTypes, kTypeNames,
                     simnic::hw::qp_type_bit, out);
}

bool parse_attrs(const std::string& cell, std::uint32_t& out) {
    out = 0;
    if (cell == "-") return true;
    for (const auto& n : split_list(cell)) {
        const auto it = kAttrNames.find(n);
        if (it == kAttrNames.end() || (out & it->second) != 0) return false;
        out |= it->second;
    }
    return out != 0;
}

// Rows of every "| From | To | Type | Required | Optional |" table in the
// "### N.N QP state machine" section.
std::vector<DocTransition> parse_fsm(const std::vector<std::string>& lines,
                                     std::vector<std::string>& errors) {
    std::vector<DocTransition> out;
    bool in_section = false, found_section = false, in_table = false;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::string& line = lines[i];
        const std::string where = "line " + std::to_string(i + 1) + ": ";
        if (line.rfind("## ", 0) == 0 || line.rfind("### ", 0) == 0) {
            static const std::string title = " QP state machine";
            in_section = line.rfind("### ", 0) == 0 && line.size() > title.size() &&
                         line.compare(line.size() - title.size(), title.size(), title) == 0;
            found_section = found_section || in_section;
            in_table = false;
            continue;
        }
        if (!in_section) continue;
        const std::string t = trim(line);
        if (t.empty() || t[0] != '|') {
            in_table = false;
            continue;
        }
        const auto c = cells(t);
        if (!in_table) {
            in_table = c == std::vector<std::string>{"From", "To", "Type", "Required", "Optional"};
            if (!in_table) errors.push_back(where + "unexpected table in the QP state machine section");
            continue;
        }
        if (!c.empty() && c[0].find("---") != std::string::npos) continue;  // separator
        if (c.size() != 5) {
            errors.push_back(where + "QP state machine row needs 5 cells");
            continue;
        }
        DocTransition r;
        r.line = static_cast<int>(i + 1);
        const auto to = kStateNames.find(c[1]);
        if (!parse_state_set(c[0], r.from)) errors.push_back(where + "bad From '" + c[0] + "'");
        if (to == kStateNames.end()) {
            errors.push_back(where + "bad To '" + c[1] + "'");
        } else {
            r.to = to->second;
        }
        if (!parse_type_set(c[2], r.types)) errors.push_back(where + "bad Type '" + c[2] + "'");
        if (!parse_attrs(c[3], r.required)) errors.push_back(where + "bad Required '" + c[3] + "'");
        if (!parse_attrs(c[4], r.optional)) errors.push_back(where + "bad Optional '" + c[4] + "'");
        out.push_back(r);
    }
    if (!found_section) errors.push_back("no '### ... QP state machine' section");
    else if (out.empty()) errors.push_back("no QP state machine table");
    return out;
}

// "Attribute mask bits (ibv_qp_attr_mask): STATE 0x1, CUR_STATE 0x2, ... RATE_LIMIT 0x2000000."
std::map<std::string, std::uint32_t> parse_attr_bits(const std::vector<std::string>& lines,
                                                     std::vector<std::string>& errors) {
    static const std::string tag = "Attribute mask bits (ibv_qp_attr_mask):";
    std::map<std::string, std::uint32_t> out;
    std::size_t i = 0;
    while (i < lines.size() && lines[i].rfind(tag, 0) != 0) ++i;
    if (i == lines.size()) {
        errors.push_back("no '" + tag + "' paragraph");
        return out;
    }
    std::string para;
    for (; i < lines.size() && !trim(lines[i]).empty(); ++i) para += lines[i] + " ";
    para = para.substr(tag.size());
    para = para.substr(0, para.find('.'));
    for (const auto& item : split_list(para)) {
        std::istringstream is(item);
        std::string name, value, rest;
        if (!(is >> name >> value) || (is >> rest) || value.rfind("0x", 0) != 0) {
            errors.push_back("attribute mask paragraph: bad item '" + item + "'");
            continue;
        }
        std::size_t used = 0;
        const auto v = std::stoul(value, &used, 16);
        if (used != value.size() || !out.emplace(name, static_cast<std::uint32_t>(v)).second)
            errors.push_back("attribute mask paragraph: bad item '" + item + "'");
    }
    return out;
}

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

TEST_CASE("hw-spec.md attribute mask bits match layout.h", "[hwspec][qp_fsm]") {
    std::vector<std::string> errors;
    const auto lines = read_lines(doc_path(), errors);
    const auto doc = parse_attr_bits(lines, errors);
    for (const auto& e : errors) FAIL_CHECK(e);
    REQUIRE(errors.empty());
    for (const auto& kv : doc) {
        INFO("doc: " << kv.first);
        const auto it = kAttrNames.find(kv.first);
        REQUIRE(it != kAttrNames.end());
        CHECK(kv.second == it->second);
    }
    for (const auto& kv : kAttrNames) {
        INFO("header: " << kv.first);
        CHECK(doc.count(kv.first) == 1);
    }
}

TEST_CASE("hw-spec.md 5.7 QP state machine matches qp_fsm.h", "[hwspec][qp_fsm]") {
    using simnic::hw::qp_fsm::kTransitions;
    std::vector<std::string> errors;
    const auto lines = read_lines(doc_path(), errors);
    const auto doc = parse_fsm(lines, errors);
    for (const auto& e : errors) FAIL_CHECK(e);
    REQUIRE(errors.empty());

    // Row by row, in order.
    CHECK(doc.size() == simnic::hw::qp_fsm::kTransitionCount);
    for (std::size_t i = 0; i < doc.size() && i < simnic::hw::qp_fsm::kTransitionCount; ++i) {
        const DocTransition& d = doc[i];
        const simnic::hw::QpTransitionRow& h = kTransitions[i];
        INFO("row " << i << " (doc line " << d.line << ")");
        CHECK(unsigned{d.from} == unsigned{h.from});
        CHECK(state_name(d.to) == state_name(h.to));
        CHECK(unsigned{d.types} == unsigned{h.types});
        CHECK(d.required == h.required);
        CHECK(d.optional == h.optional);
    }

    // Every (from, to, type), through the lookup function.
    for (const QpState from : kEveryState) {
        for (const QpState to : kEveryState) {
            for (const QpType type : kEveryType) {
                INFO(state_name(from) << " -> " << state_name(to) << " on " << type_name(type));
                const DocTransition* d = nullptr;
                int hits = 0;
                for (const auto& r : doc) {
                    if ((r.from & simnic::hw::qp_state_bit(from)) != 0 && r.to == to &&
                        (r.types & simnic::hw::qp_type_bit(type)) != 0) {
                        d = &r;
                        ++hits;
                    }
                }
                CHECK(hits <= 1);  // the doc names each transition at most once
                const auto h = simnic::hw::qp_transition(from, to, type);
                CHECK(h.legal == (d != nullptr));
                if (d != nullptr && h.legal) {
                    INFO("doc line " << d->line);
                    CHECK(h.required == d->required);
                    CHECK(h.optional == d->optional);
                }
            }
        }
    }
}

TEST_CASE("QP state machine: IBA facts", "[hwspec][qp_fsm]") {
    using simnic::hw::qp_transition;
    constexpr auto Rc = QpType::Rc, Uc = QpType::Uc, Ud = QpType::Ud;

    // RESET -> INIT.
    CHECK(qp_transition(QpState::Reset, QpState::Init, Rc).required ==
          (qam::kPkeyIndex | qam::kPort | qam::kAccessFlags));
    CHECK(qp_transition(QpState::Reset, QpState::Init, Uc).required ==
          (qam::kPkeyIndex | qam::kPort | qam::kAccessFlags));
    CHECK(qp_transition(QpState::Reset, QpState::Init, Ud).required ==
          (qam::kPkeyIndex | qam::kPort | qam::kQkey));
    // INIT -> RTR.
    CHECK(qp_transition(QpState::Init, QpState::Rtr, Rc).required ==
          (qam::kAv | qam::kPathMtu | qam::kDestQpn | qam::kRqPsn | qam::kMaxDestRdAtomic |
           qam::kMinRnrTimer));
    CHECK(qp_transition(QpState::Init, QpState::Rtr, Uc).required ==
          (qam::kAv | qam::kPathMtu | qam::kDestQpn | qam::kRqPsn));
    CHECK(qp_transition(QpState::Init, QpState::Rtr, Ud).legal);
    CHECK(qp_transition(QpState::Init, QpState::Rtr, Ud).required == 0);
    // RTR -> RTS.
    CHECK(qp_transition(QpState::Rtr, QpState::Rts, Rc).required ==
          (qam::kSqPsn | qam::kTimeout | qam::kRetryCnt | qam::kRnrRetry | qam::kMaxQpRdAtomic));
    CHECK(qp_transition(QpState::Rtr, QpState::Rts, Uc).required == qam::kSqPsn);
    CHECK(qp_transition(QpState::Rtr, QpState::Rts, Ud).required == qam::kSqPsn);

    for (const QpType type : kEveryType) {
        INFO(type_name(type));
        // Any state may go to RESET or ERR, with nothing but (optionally) CUR_STATE.
        for (const QpState from : kEveryState) {
            INFO("from " << state_name(from));
            for (const QpState to : {QpState::Reset, QpState::Err}) {
                const auto t = qp_transition(from, to, type);
                CHECK(t.legal);
                CHECK(t.required == 0);
                CHECK((t.optional & ~qam::kCurState) == 0);
            }
        }
        // Skipping a step, or going backwards other than to RESET/ERR, is illegal.
        CHECK_FALSE(qp_transition(QpState::Reset, QpState::Rtr, type).legal);
        CHECK_FALSE(qp_transition(QpState::Reset, QpState::Rts, type).legal);
        CHECK_FALSE(qp_transition(QpState::Init, QpState::Rts, type).legal);
        CHECK_FALSE(qp_transition(QpState::Rtr, QpState::Init, type).legal);
        CHECK_FALSE(qp_transition(QpState::Rts, QpState::Rtr, type).legal);
        CHECK_FALSE(qp_transition(QpState::Err, QpState::Init, type).legal);
        CHECK_FALSE(qp_transition(QpState::Err, QpState::Rts, type).legal);
        CHECK_FALSE(qp_transition(QpState::Reset, QpState::Sqe, type).legal);  // engine only
        CHECK_FALSE(qp_transition(QpState::Rts, QpState::Sqe, type).legal);
        CHECK(qp_transition(QpState::Rts, QpState::Sqd, type).legal);
        CHECK(qp_transition(QpState::Sqd, QpState::Rts, type).legal);

        for (const QpState from : kEveryState) {
            for (const QpState to : kEveryState) {
                const auto t = qp_transition(from, to, type);
                const std::uint32_t all = t.required | t.optional;
                INFO(state_name(from) << " -> " << state_name(to));
                CHECK((t.required & qam::kCurState) == 0);  // CUR_STATE is never required
                if (type == Ud) {  // unconnected: no path, remote QP, PSN check or RDMA
                    CHECK((all & (qam::kAv | qam::kPathMtu | qam::kDestQpn | qam::kRqPsn |
                                  qam::kAccessFlags | qam::kMaxQpRdAtomic |
                                  qam::kMaxDestRdAtomic)) == 0);
                } else {  // Q_Key is a datagram attribute
                    CHECK((all & qam::kQkey) == 0);
                }
                if (type != Rc) {  // no ACKs, so no timeouts, retries or RNR
                    CHECK((all & (qam::kTimeout | qam::kRetryCnt | qam::kRnrRetry |
                                  qam::kMinRnrTimer | qam::kMaxQpRdAtomic |
                                  qam::kMaxDestRdAtomic)) == 0);
                }
            }
        }
    }
    // SQE exists for UC and UD only.
    CHECK_FALSE(qp_transition(QpState::Sqe, QpState::Rts, Rc).legal);
    CHECK(qp_transition(QpState::Sqe, QpState::Rts, Uc).legal);
    CHECK(qp_transition(QpState::Sqe, QpState::Rts, Ud).legal);

    // The attr_mask rule.
    constexpr auto init = qp_transition(QpState::Reset, QpState::Init, Rc);
    static_assert(init.allows(qam::kState | qam::kPkeyIndex | qam::kPort | qam::kAccessFlags),
                  "RESET->INIT with its required attributes");
    CHECK_FALSE(init.allows(qam::kPkeyIndex | qam::kPort | qam::kAccessFlags));  // no STATE
    CHECK_FALSE(init.allows(qam::kState | qam::kPkeyIndex | qam::kPort));        // one missing
    CHECK_FALSE(init.allows(qam::kState | qam::kPkeyIndex | qam::kPort | qam::kAccessFlags |
                            qam::kQkey));  // one not allowed
    CHECK(qp_transition(QpState::Rts, QpState::Err, Rc).allows(qam::kState));
    CHECK(qp_transition(QpState::Rts, QpState::Err, Rc).allows(qam::kState | qam::kCurState));
    CHECK_FALSE(qp_transition(QpState::Reset, QpState::Rts, Rc).allows(qam::kState));
}
