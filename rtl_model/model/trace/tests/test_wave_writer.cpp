// WaveWriter: VCD files parsed back by a small reader here, FST files read
// back with fstapi's reader; declarations, nesting and every value change are
// checked against a reference model of the documented rules.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "fstapi.h"
#include "simnic/model/wave_writer.h"

using simnic::model::WaveWriter;
namespace fs = std::filesystem;

namespace {

// A scratch directory per test process, removed at the end.
struct TempDir {
    fs::path dir;
    explicit TempDir(const std::string& tag) {
        dir = fs::temp_directory_path() /
              ("simnic_wave_" + tag + "_" + std::to_string(::getpid()));
        fs::remove_all(dir);
        fs::create_directories(dir);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    std::string file(const std::string& name) const { return (dir / name).string(); }
};

struct Decl {
    std::string scope;
    std::string name;
    unsigned width;
};

// What the file must hold: per signal, (time, value) where the value is a
// string of `width` characters '0'/'1'/'x', MSB first.
using Timeline = std::vector<std::pair<uint64_t, std::string>>;

// "#t:v #t:v ..." for comparisons that print readably.
std::string show(const Timeline& tl) {
    std::string s;
    for (const auto& [t, v] : tl) s += "#" + std::to_string(t) + ":" + v + " ";
    return s;
}

std::string bits(uint64_t v, unsigned width) {
    std::string s;
    for (unsigned i = width; i-- > 0;) s += ((v >> i) & 1) ? '1' : '0';
    return s;
}

struct Call {
    uint64_t t;
    uint32_t sig;
    uint64_t v;
};

// The documented rules: last value at a time wins, the dump starts at the
// first time with every signal (x if unset), and unchanged values are left
// out afterwards.
std::vector<Timeline> expected_timelines(const std::vector<Decl>& decls,
                                         const std::vector<Call>& calls) {
    std::map<uint64_t, std::map<uint32_t, uint64_t>> at;
    for (const Call& c : calls) {
        unsigned w = decls[c.sig].width;
        uint64_t mask = w == 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1;
        at[c.t][c.sig] = c.v & mask;
    }
    std::vector<Timeline> out(decls.size());
    uint64_t t0 = at.empty() ? 0 : at.begin()->first;
    for (uint32_t i = 0; i < decls.size(); ++i) {
        std::string cur(decls[i].width, 'x');
        bool first = true;
        for (const auto& [t, vals] : at) {
            auto it = vals.find(i);
            std::string v = it == vals.end() ? cur : bits(it->second, decls[i].width);
            if (first || v != cur) out[i].push_back({t, v});
            cur = v;
            first = false;
        }
        if (at.empty()) out[i].push_back({t0, cur});
    }
    return out;
}

// ------------------------------------------------------------ VCD reader

struct VcdVar {
    std::string scope;  // dotted
    std::string ref;    // the reference as written, e.g. "qpn [23:0]"
    unsigned width;
    std::string id;
};

struct VcdFile {
    std::string timescale;
    std::vector<VcdVar> vars;
    std::vector<std::string> scopes_opened;  // dotted path of every $scope, in order
    std::map<std::string, Timeline> changes;  // by identifier code
    bool well_formed = true;
    std::string problem;
};

// Extends a VCD vector value to `width` as IEEE 1364 18.2.1 says: a leading
// 0 or 1 extends with 0, x with x, z with z.
std::string extend(const std::string& v, unsigned width) {
    if (v.size() >= width) return v.substr(v.size() - width);
    char fill = v[0] == 'x' || v[0] == 'z' ? v[0] : '0';
    return std::string(width - v.size(), fill) + v;
}

VcdFile read_vcd(const std::string& path) {
    VcdFile f;
    std::ifstream in(path);
    std::vector<std::string> tok;
    std::string w;
    while (in >> w) tok.push_back(w);
    auto bad = [&](const std::string& why) {
        if (f.well_formed) f.problem = why;
        f.well_formed = false;
    };
    std::vector<std::string> stack;
    auto dotted = [&] {
        std::string s;
        for (const auto& p : stack) s += (s.empty() ? "" : ".") + p;
        return s;
    };
    size_t i = 0;
    // Header.
    bool defs_done = false;
    while (i < tok.size() && !defs_done) {
        const std::string& t = tok[i++];
        if (t == "$scope") {
            if (i + 2 >= tok.size() || tok[i] != "module" || tok[i + 2] != "$end")
                bad("bad $scope");
            stack.push_back(tok[i + 1]);
            f.scopes_opened.push_back(dotted());
            i += 3;
        } else if (t == "$upscope") {
            if (i >= tok.size() || tok[i] != "$end" || stack.empty()) bad("bad $upscope");
            if (!stack.empty()) stack.pop_back();
            i += 1;
        } else if (t == "$var") {
            // $var wire W ID REF [RANGE] $end
            if (i + 4 > tok.size() || tok[i] != "wire") bad("bad $var");
            VcdVar v;
            v.width = static_cast<unsigned>(std::stoul(tok[i + 1]));
            v.id = tok[i + 2];
            v.ref = tok[i + 3];
            v.scope = dotted();
            i += 4;
            if (i < tok.size() && tok[i] != "$end") v.ref += " " + tok[i++];
            if (i >= tok.size() || tok[i] != "$end") bad("$var without $end");
            ++i;
            if (stack.empty()) bad("$var outside a scope");
            f.vars.push_back(v);
        } else if (t == "$timescale") {
            while (i < tok.size() && tok[i] != "$end") f.timescale += tok[i++];
            ++i;
        } else if (t == "$enddefinitions") {
            if (i >= tok.size() || tok[i] != "$end") bad("bad $enddefinitions");
            ++i;
            defs_done = true;
        } else if (t == "$version" || t == "$date" || t == "$comment") {
            while (i < tok.size() && tok[i] != "$end") ++i;
            ++i;
        } else {
            bad("unexpected token in header: " + t);
        }
    }
    if (!defs_done) bad("no $enddefinitions");
    if (!stack.empty()) bad("unbalanced scopes");
    std::map<std::string, unsigned> width_of;
    for (const auto& v : f.vars) width_of[v.id] = v.width;
    // Value changes.
    bool have_time = false;
    uint64_t now = 0;
    bool in_dumpvars = false;
    auto record = [&](const std::string& id, const std::string& val) {
        auto it = width_of.find(id);
        if (it == width_of.end()) return bad("unknown id " + id);
        if (!have_time) return bad("value before any #time");
        f.changes[id].push_back({now, extend(val, it->second)});
    };
    while (i < tok.size()) {
        const std::string& t = tok[i++];
        if (t[0] == '#') {
            uint64_t nt = std::stoull(t.substr(1));
            if (have_time && nt <= now) bad("time not increasing: " + t);
            now = nt;
            have_time = true;
        } else if (t == "$dumpvars") {
            if (in_dumpvars) bad("nested $dumpvars");
            in_dumpvars = true;
        } else if (t == "$end") {
            if (!in_dumpvars) bad("stray $end");
            in_dumpvars = false;
        } else if (t[0] == 'b' || t[0] == 'B') {
            if (i >= tok.size()) return bad("vector value without id"), f;
            record(tok[i++], t.substr(1));
        } else if (t[0] == '0' || t[0] == '1' || t[0] == 'x' || t[0] == 'z') {
            record(t.substr(1), t.substr(0, 1));
        } else {
            bad("unexpected token in values: " + t);
        }
    }
    if (in_dumpvars) bad("$dumpvars without $end");
    return f;
}

std::string ref_of(const Decl& d) {
    return d.width == 1 ? d.name : d.name + " [" + std::to_string(d.width - 1) + ":0]";
}

// ------------------------------------------------------------ FST reader

struct FstVar {
    std::string scope;
    std::string name;
    unsigned width;
    fstHandle handle;
    bool alias;
};

struct FstFile {
    bool opened = false;
    int timescale = 0;
    uint64_t start = 0, end = 0;
    std::vector<FstVar> vars;
    std::vector<std::string> scopes_opened;
    std::map<fstHandle, std::vector<std::pair<uint64_t, std::string>>> raw;
};

void on_fst_change(void* user, uint64_t time, fstHandle h, const unsigned char* value) {
    auto* f = static_cast<FstFile*>(user);
    f->raw[h].push_back({time, reinterpret_cast<const char*>(value)});
}

FstFile read_fst(const std::string& path) {
    FstFile f;
    void* ctx = fstReaderOpen(path.c_str());
    if (!ctx) return f;
    f.opened = true;
    f.timescale = fstReaderGetTimescale(ctx);
    f.start = fstReaderGetStartTime(ctx);
    f.end = fstReaderGetEndTime(ctx);
    std::vector<std::string> stack;
    auto dotted = [&] {
        std::string s;
        for (const auto& p : stack) s += (s.empty() ? "" : ".") + p;
        return s;
    };
    while (fstHier* h = fstReaderIterateHier(ctx)) {
        if (h->htyp == FST_HT_SCOPE) {
            stack.push_back(h->u.scope.name);
            f.scopes_opened.push_back(dotted());
        } else if (h->htyp == FST_HT_UPSCOPE) {
            stack.pop_back();
        } else if (h->htyp == FST_HT_VAR) {
            f.vars.push_back({dotted(), h->u.var.name, h->u.var.length, h->u.var.handle,
                              h->u.var.is_alias != 0});
        }
    }
    fstReaderSetFacProcessMaskAll(ctx);
    fstReaderIterBlocks(ctx, on_fst_change, &f, nullptr);
    fstReaderClose(ctx);
    return f;
}

// The reader reports the initial frame (unless the first block has changes
// at its start) and then every change, several at one time possibly; what a
// viewer shows is the last value at each time, and a repeated value is no
// change. The writer gives every signal a value (maybe x) at the start, so
// nothing is implied here.
Timeline collapse(const std::vector<std::pair<uint64_t, std::string>>& raw) {
    Timeline out;
    for (const auto& [t, v] : raw) {
        if (!out.empty() && out.back().first == t) {
            out.back().second = v;
            if (out.size() >= 2 && out[out.size() - 2].second == v) out.pop_back();
        } else if (out.empty() || out.back().second != v) {
            out.push_back({t, v});
        }
    }
    return out;
}

// ------------------------------------------------------------ scenario

const std::vector<Decl> kDecls = {
    {"nic.rx.parser", "valid", 1},  {"nic.rx.parser", "qpn", 24},
    {"nic.tx.sched", "valid", 1},   {"nic.rx.parser", "ready", 1},
    {"nic.rx", "psn", 24},          {"nic", "opcode", 8},
    {"nic.tx.sched", "bytes", 64},  {"host", "doorbell", 32},
    {"nic.rx.parser", "never", 16},  // never changed: x throughout
};

// Cycles of 4 ns from 1000 ps on, random changes, some at the same time to
// the same signal, some with bits above the width.
std::vector<Call> random_calls(uint32_t seed, int cycles) {
    std::mt19937_64 rng(seed);
    std::vector<Call> calls;
    for (int c = 0; c < cycles; ++c) {
        uint64_t t = 1000 + 4000 * static_cast<uint64_t>(c);
        int n = static_cast<int>(rng() % 6);
        if (c == 0) n = 4;
        for (int k = 0; k < n; ++k) {
            uint32_t sig = static_cast<uint32_t>(rng() % (kDecls.size() - 1));
            uint64_t v = rng();
            if (kDecls[sig].width == 1) v = rng() % 3 == 0 ? (v | 2) : (v & 1);  // some with junk bits
            if (rng() % 4 == 0) v = 0;
            calls.push_back({t, sig, v});
        }
    }
    // The top bit of a 64-bit signal, and a repeat of an unchanged value.
    uint64_t t = 1000 + 4000 * static_cast<uint64_t>(cycles);
    calls.push_back({t, 6, uint64_t{1} << 63});
    calls.push_back({t + 4000, 6, uint64_t{1} << 63});
    calls.push_back({t + 8000, 6, ~uint64_t{0}});
    return calls;
}

std::unique_ptr<WaveWriter> write_scenario(const std::string& path, WaveWriter::Format fmt,
                                           const std::vector<Call>& calls,
                                           std::vector<uint32_t>& ids) {
    std::string err;
    auto w = WaveWriter::open(path, fmt, err);
    REQUIRE(w);
    ids.clear();
    for (const Decl& d : kDecls) ids.push_back(w->add_signal(d.scope, d.name, d.width));
    for (uint32_t i = 0; i < ids.size(); ++i) REQUIRE(ids[i] == i);
    for (const Call& c : calls) w->change(c.t, ids[c.sig], c.v);
    REQUIRE(w->ok());
    return w;
}

// Scopes in the order the writer emits them: first appearance, each once.
const std::vector<std::string> kScopes = {"nic",          "nic.rx",   "nic.rx.parser",
                                          "nic.tx",       "nic.tx.sched", "host"};

}  // namespace

TEST_CASE("wave: VCD declarations, nesting and every value change", "[wave]") {
    TempDir tmp("vcd");
    auto calls = random_calls(7, 300);
    std::vector<uint32_t> ids;
    auto w = write_scenario(tmp.file("a.vcd"), WaveWriter::Format::Vcd, calls, ids);
    std::string err;
    REQUIRE(w->close(err));

    VcdFile f = read_vcd(tmp.file("a.vcd"));
    INFO(f.problem);
    REQUIRE(f.well_formed);
    CHECK(f.timescale == "1ps");
    CHECK(f.scopes_opened == kScopes);
    REQUIRE(f.vars.size() == kDecls.size());
    std::map<std::string, size_t> by_path;  // "scope|ref" -> decl index
    for (size_t i = 0; i < kDecls.size(); ++i) by_path[kDecls[i].scope + "|" + ref_of(kDecls[i])] = i;
    std::map<std::string, int> ids_seen;
    auto want = expected_timelines(kDecls, calls);
    size_t total = 0;
    for (const VcdVar& v : f.vars) {
        auto it = by_path.find(v.scope + "|" + v.ref);
        REQUIRE(it != by_path.end());
        const Decl& d = kDecls[it->second];
        CHECK(v.width == d.width);
        CHECK(++ids_seen[v.id] == 1);
        INFO(d.scope << "." << d.name);
        CHECK(show(f.changes[v.id]) == show(want[it->second]));
        total += want[it->second].size();
    }
    CHECK(total > 300);  // the scenario did exercise something
    // The never-changed signal is x from the first time on.
    CHECK(show(want[8]) == show(Timeline{{1000, std::string(16, 'x')}}));
}

TEST_CASE("wave: FST declarations, nesting and every value change", "[wave]") {
    TempDir tmp("fst");
    auto calls = random_calls(11, 2000);
    std::vector<uint32_t> ids;
    auto w = write_scenario(tmp.file("a.fst"), WaveWriter::Format::Fst, calls, ids);
    std::string err;
    REQUIRE(w->close(err));
    CHECK_FALSE(fs::exists(tmp.file("a.fst.hier")));

    FstFile f = read_fst(tmp.file("a.fst"));
    REQUIRE(f.opened);
    CHECK(f.timescale == -12);
    CHECK(f.start == 1000);
    CHECK(f.end == calls.back().t);
    CHECK(f.scopes_opened == kScopes);
    REQUIRE(f.vars.size() == kDecls.size());
    std::map<std::string, size_t> by_path;
    for (size_t i = 0; i < kDecls.size(); ++i) by_path[kDecls[i].scope + "|" + ref_of(kDecls[i])] = i;
    auto want = expected_timelines(kDecls, calls);
    for (const FstVar& v : f.vars) {
        CHECK_FALSE(v.alias);
        auto it = by_path.find(v.scope + "|" + v.name);
        REQUIRE(it != by_path.end());
        const Decl& d = kDecls[it->second];
        CHECK(v.width == d.width);
        INFO(d.scope << "." << d.name);
        CHECK(show(collapse(f.raw[v.handle])) == show(want[it->second]));
    }
}

TEST_CASE("wave: VCD and FST agree on a small hand-written trace", "[wave]") {
    TempDir tmp("small");
    for (auto fmt : {WaveWriter::Format::Vcd, WaveWriter::Format::Fst}) {
        std::string path = tmp.file(fmt == WaveWriter::Format::Vcd ? "s.vcd" : "s.fst");
        std::string err;
        auto w = WaveWriter::open(path, fmt, err);
        REQUIRE(w);
        uint32_t v = w->add_signal("top.a", "valid", 1);
        uint32_t q = w->add_signal("top.a", "qpn", 24);
        w->change(0, v, 0);
        w->change(0, q, 0xabcdef12);  // masked to 0xcdef12
        w->change(4000, v, 1);
        w->change(4000, v, 0);        // last wins: no change at 4000
        w->change(8000, v, 1);
        w->change(8000, q, 0xcdef12); // unchanged: not recorded
        w->change(12000, q, 0);
        REQUIRE(w->close(err));
        std::map<std::string, Timeline> got;
        if (fmt == WaveWriter::Format::Vcd) {
            VcdFile f = read_vcd(path);
            REQUIRE(f.well_formed);
            for (const auto& var : f.vars) got[var.ref] = f.changes[var.id];
        } else {
            FstFile f = read_fst(path);
            REQUIRE(f.opened);
            for (const auto& var : f.vars) got[var.name] = collapse(f.raw[var.handle]);
        }
        CHECK(show(got["valid"]) == show(Timeline{{0, "0"}, {8000, "1"}}));
        CHECK(show(got["qpn [23:0]"]) ==
              show(Timeline{{0, bits(0xcdef12, 24)}, {12000, bits(0, 24)}}));
    }
}

TEST_CASE("wave: the VCD text is as IEEE 1364 shows it", "[wave]") {
    TempDir tmp("text");
    std::string err;
    auto w = WaveWriter::open(tmp.file("t.vcd"), WaveWriter::Format::Vcd, err);
    REQUIRE(w);
    uint32_t a = w->add_signal("nic.rx", "valid", 1);
    uint32_t b = w->add_signal("nic", "opcode", 8);
    w->change(5, a, 1);
    w->change(9, b, 0x04);
    REQUIRE(w->close(err));
    std::ifstream in(tmp.file("t.vcd"));
    std::stringstream ss;
    ss << in.rdbuf();
    CHECK(ss.str() ==
          "$version\n   simnic wave writer\n$end\n"
          "$timescale\n   1ps\n$end\n"
          "$scope module nic $end\n"
          "$var wire 8 \" opcode [7:0] $end\n"
          "$scope module rx $end\n"
          "$var wire 1 ! valid $end\n"
          "$upscope $end\n"
          "$upscope $end\n"
          "$enddefinitions $end\n"
          "#5\n$dumpvars\n1!\nbx \"\n$end\n"
          "#9\nb100 \"\n");
}

TEST_CASE("wave: many signals get distinct VCD identifiers", "[wave]") {
    TempDir tmp("many");
    std::string err;
    auto w = WaveWriter::open(tmp.file("m.vcd"), WaveWriter::Format::Vcd, err);
    REQUIRE(w);
    const uint32_t n = 94 * 94 + 5;  // three-character codes too
    for (uint32_t i = 0; i < n; ++i)
        REQUIRE(w->add_signal("s" + std::to_string(i % 7), "n" + std::to_string(i), 1 + i % 64) == i);
    for (uint32_t i = 0; i < n; ++i) w->change(10, i, i);
    for (uint32_t i = 0; i < n; i += 3) w->change(20, i, i + 1);
    REQUIRE(w->close(err));
    VcdFile f = read_vcd(tmp.file("m.vcd"));
    REQUIRE(f.well_formed);
    REQUIRE(f.vars.size() == n);
    std::map<std::string, int> seen;
    for (const auto& v : f.vars) {
        CHECK(++seen[v.id] == 1);
        uint32_t i = static_cast<uint32_t>(std::stoul(v.ref.substr(1)));
        unsigned wd = 1 + i % 64;
        Timeline want{{10, bits(i, wd)}};
        if (i % 3 == 0 && bits(i + 1, wd) != bits(i, wd)) want.push_back({20, bits(i + 1, wd)});
        CHECK(show(f.changes[v.id]) == show(want));
    }
}

TEST_CASE("wave: a file closed without changes has every signal x at time 0", "[wave]") {
    TempDir tmp("empty");
    std::string err;
    {
        auto w = WaveWriter::open(tmp.file("e.vcd"), WaveWriter::Format::Vcd, err);
        REQUIRE(w);
        w->add_signal("a", "v", 4);
        REQUIRE(w->close(err));
        VcdFile f = read_vcd(tmp.file("e.vcd"));
        REQUIRE(f.well_formed);
        REQUIRE(f.vars.size() == 1);
        CHECK(show(f.changes[f.vars[0].id]) == show(Timeline{{0, "xxxx"}}));
    }
    {
        auto w = WaveWriter::open(tmp.file("e.fst"), WaveWriter::Format::Fst, err);
        REQUIRE(w);
        w->add_signal("a", "v", 4);
        REQUIRE(w->close(err));
        FstFile f = read_fst(tmp.file("e.fst"));
        REQUIRE(f.opened);
        REQUIRE(f.vars.size() == 1);
        CHECK(show(collapse(f.raw[f.vars[0].handle])) == show(Timeline{{0, "xxxx"}}));
    }
    for (auto fmt : {WaveWriter::Format::Vcd, WaveWriter::Format::Fst}) {
        // No signals at all.
        auto w = WaveWriter::open(tmp.file("none"), fmt, err);
        REQUIRE(w);
        CHECK(w->close(err));
    }
}

TEST_CASE("wave: the destructor closes the file", "[wave]") {
    TempDir tmp("dtor");
    std::string err;
    for (auto fmt : {WaveWriter::Format::Vcd, WaveWriter::Format::Fst}) {
        std::string path = tmp.file(fmt == WaveWriter::Format::Vcd ? "d.vcd" : "d.fst");
        {
            auto w = WaveWriter::open(path, fmt, err);
            REQUIRE(w);
            uint32_t s = w->add_signal("x", "y", 3);
            w->change(1, s, 5);
            w->change(2, s, 2);
        }
        Timeline got;
        if (fmt == WaveWriter::Format::Vcd) {
            VcdFile f = read_vcd(path);
            REQUIRE(f.well_formed);
            got = f.changes[f.vars.at(0).id];
        } else {
            FstFile f = read_fst(path);
            REQUIRE(f.opened);
            got = collapse(f.raw[f.vars.at(0).handle]);
        }
        CHECK(show(got) == show(Timeline{{1, "101"}, {2, "010"}}));
    }
}

TEST_CASE("wave: errors are reported", "[wave]") {
    TempDir tmp("err");
    std::string err;
    const auto both = {WaveWriter::Format::Vcd, WaveWriter::Format::Fst};

    SECTION("unwritable path") {
        for (auto fmt : both) {
            err.clear();
            CHECK_FALSE(WaveWriter::open(tmp.file("no/such/dir/w"), fmt, err));
            CHECK(err.find("cannot create") != std::string::npos);
            err.clear();
            CHECK_FALSE(WaveWriter::open("", fmt, err));
            CHECK_FALSE(err.empty());
        }
    }
    SECTION("bad declarations") {
        for (auto fmt : both) {
            auto w = WaveWriter::open(tmp.file("d"), fmt, err);
            REQUIRE(w);
            CHECK(w->add_signal("a", "w0", 0) == WaveWriter::kInvalidSignal);
            CHECK(w->error().find("width 0") != std::string::npos);
            CHECK(w->add_signal("a", "w65", 65) == WaveWriter::kInvalidSignal);
            CHECK(w->add_signal("", "n", 1) == WaveWriter::kInvalidSignal);
            CHECK(w->add_signal("a..b", "n", 1) == WaveWriter::kInvalidSignal);
            CHECK(w->add_signal("a.", "n", 1) == WaveWriter::kInvalidSignal);
            CHECK(w->add_signal("a b", "n", 1) == WaveWriter::kInvalidSignal);
            CHECK(w->add_signal("a", "n.m", 1) == WaveWriter::kInvalidSignal);
            CHECK(w->add_signal("a", "", 1) == WaveWriter::kInvalidSignal);
            CHECK(w->add_signal("a", "ok", 64) == 0);
            CHECK(w->add_signal("a", "ok", 1) == WaveWriter::kInvalidSignal);
            CHECK(w->add_signal("b", "ok", 1) == 1);
            CHECK(w->signal_count() == 2);
            CHECK_FALSE(w->ok());
            // The first error is the one kept.
            CHECK_FALSE(w->close(err));
            CHECK(err.find("width 0") != std::string::npos);
        }
    }
    SECTION("declaring after the first change") {
        for (auto fmt : both) {
            auto w = WaveWriter::open(tmp.file("late"), fmt, err);
            REQUIRE(w);
            uint32_t a = w->add_signal("s", "a", 1);
            w->change(0, a, 1);
            CHECK(w->ok());
            CHECK(w->add_signal("s", "b", 1) == WaveWriter::kInvalidSignal);
            CHECK_FALSE(w->ok());
            CHECK(w->error().find("after the first change") != std::string::npos);
            w->change(10, a, 0);  // still recorded
            CHECK_FALSE(w->close(err));
            CHECK(err.find("after the first change") != std::string::npos);
        }
        // What was declared in time is still written.
        auto w = WaveWriter::open(tmp.file("late.vcd"), WaveWriter::Format::Vcd, err);
        REQUIRE(w);
        uint32_t a = w->add_signal("s", "a", 1);
        w->change(0, a, 1);
        w->add_signal("s", "b", 1);
        w->change(10, a, 0);
        CHECK_FALSE(w->close(err));
        VcdFile g = read_vcd(tmp.file("late.vcd"));
        REQUIRE(g.well_formed);
        REQUIRE(g.vars.size() == 1);
        CHECK(show(g.changes[g.vars[0].id]) == show(Timeline{{0, "1"}, {10, "0"}}));
    }
    SECTION("unknown signal, time going backwards") {
        for (auto fmt : both) {
            auto w = WaveWriter::open(tmp.file("t"), fmt, err);
            REQUIRE(w);
            uint32_t a = w->add_signal("s", "a", 1);
            w->change(100, a, 1);
            w->change(100, 7, 1);
            CHECK(w->error().find("unknown signal") != std::string::npos);
            auto w2 = WaveWriter::open(tmp.file("t2"), fmt, err);
            uint32_t b = w2->add_signal("s", "b", 1);
            w2->change(100, b, 1);
            w2->change(99, b, 0);
            CHECK(w2->error().find("before time 100") != std::string::npos);
            CHECK_FALSE(w2->close(err));
            w->change(50, WaveWriter::kInvalidSignal, 0);
            CHECK_FALSE(w->close(err));
            CHECK(err.find("unknown signal") != std::string::npos);
        }
    }
    SECTION("use after close") {
        for (auto fmt : both) {
            auto w = WaveWriter::open(tmp.file("c"), fmt, err);
            REQUIRE(w);
            uint32_t a = w->add_signal("s", "a", 1);
            w->change(0, a, 1);
            REQUIRE(w->close(err));
            REQUIRE(w->close(err));  // closing again is fine
            w->change(5, a, 0);
            CHECK_FALSE(w->ok());
            CHECK_FALSE(w->close(err));
            CHECK(err.find("after close") != std::string::npos);
            CHECK(w->add_signal("s", "b", 1) == WaveWriter::kInvalidSignal);
        }
    }
}

TEST_CASE("wave: VCD write errors surface at close", "[wave]") {
    if (!fs::exists("/dev/full")) return;
    std::string err;
    auto w = WaveWriter::open("/dev/full", WaveWriter::Format::Vcd, err);
    REQUIRE(w);
    uint32_t a = w->add_signal("s", "a", 32);
    for (uint64_t t = 0; t < 100000; ++t) w->change(t, a, t);
    CHECK_FALSE(w->close(err));
    CHECK(err.find("cannot write") != std::string::npos);
}

TEST_CASE("wave: format names", "[wave]") {
    WaveWriter::Format f = WaveWriter::Format::Vcd;
    CHECK(WaveWriter::parse_format("fst", f));
    CHECK(f == WaveWriter::Format::Fst);
    CHECK(WaveWriter::parse_format("VCD", f));
    CHECK(f == WaveWriter::Format::Vcd);
    CHECK_FALSE(WaveWriter::parse_format("ghw", f));
    CHECK_FALSE(WaveWriter::parse_format("", f));
}
