// One's own parser, the checks before anything is built (own_rtl.h): the
// port checker against the stage's interface (roce_parser_interface.cc),
// the template passing it, and a clear error for every way a design named
// in the config can be wrong. Each runs Verilator's XML pass only, no
// compiler. The build, the cache and the designs in the pipeline are
// tb_parser.cpp's (rtl_model/model/pipeline/tests).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "axis_top.h"
#include "own_parser.h"
#include "own_rtl.h"
#include "own_rtl_testkit.h"
#include "roce_parser_interface.h"

using namespace simnic::rtl;
namespace fs = std::filesystem;

namespace {

const std::string kDir = SIMNIC_PARSER_SRC_DIR;
const std::string kWork = SIMNIC_OWN_PARSER_TEST_DIR;

using testkit::read;
using testkit::replaced;

// A variant of a design, in this test's work directory.
std::string write(const std::string& name, const std::string& text) { return testkit::write_in(kWork, name, text); }

std::string load_error(const OwnRtl& own) { return testkit::load_error(own_parser_stage(), own, kWork); }

}  // namespace

TEST_CASE("own parser: the template has exactly the stage's ports", "[rtl][own_rtl]") {
    const OwnRtl t{{kDir + "/template/my_parser.sv"}, "my_parser"};
    CHECK(check_own_rtl_ports(own_parser_stage(), t).empty());
    // So do the worked examples and the reference.
    CHECK(check_own_rtl_ports(own_parser_stage(), {{kDir + "/examples/roce_parser_slow.sv"}, "roce_parser_slow"}).empty());
    CHECK(check_own_rtl_ports(own_parser_stage(), {{kDir + "/roce_parser.sv"}, "roce_parser"}).empty());
}

TEST_CASE("own parser: every port difference in one error, before anything is built", "[rtl][own_rtl]") {
    // The template with m_psn_o gone, m_dqpn_o 16 bits wide, m_ready_i an
    // output, s_axis_tkeep_i DataWidth/16 wide and a port the stage lacks.
    std::string t = read(kDir + "/template/my_parser.sv");
    t = replaced(t, "  output logic [23:0]            m_psn_o,\n", "");
    t = replaced(t, "  assign m_psn_o             = '0;\n", "");
    t = replaced(t, "output logic [23:0]            m_dqpn_o", "output logic [15:0]            m_dqpn_o");
    t = replaced(t, "input  logic                   m_ready_i,", "output logic                   m_ready_i,");
    t = replaced(t, "    else if (m_ready_i) valid_q <= 1'b0;", "    else valid_q <= 1'b0;\n  assign m_ready_i = 1'b1;");
    t = replaced(t, "input  logic [DataWidth/8-1:0] s_axis_tkeep_i", "input  logic [DataWidth/16-1:0] s_axis_tkeep_i");
    t = replaced(t, "  input  logic                   rst_ni,\n", "  input  logic                   rst_ni,\n  input  logic                   debug_i,\n");
    t = replaced(t, "assign unused = ^{hdr_q,", "assign unused = ^{debug_i, hdr_q,");
    const OwnRtl bad{{write("bad_ports.sv", t)}, "my_parser"};
    const auto d = check_own_rtl_ports(own_parser_stage(), bad);
    CHECK(d == std::vector<std::string>{
                   "port s_axis_tkeep_i is 32 bits, expected 64 (DataWidth/8)",
                   "port m_ready_i is out, expected in",
                   "port m_dqpn_o is 16 bits, expected 24",
                   "missing port m_psn_o (out, 24 = 24 bits)",
                   "extra port debug_i (in, 1 bits): the stage does not drive or read it",
               });
    // Building it stops there, with all of them in one error and nothing in the cache.
    const uint64_t runs = verilator_runs();
    const std::string e = load_error(bad);
    CHECK(verilator_runs() == runs + 1);
    CHECK(e.rfind("parser: my_parser does not have the parser's ports (DataWidth 512; docs/model.md, Your own RTL), "
                  "5 differences:\n  port s_axis_tkeep_i is 32 bits",
                  0) == 0);
    CHECK(e.find("\n  missing port m_psn_o") != std::string::npos);
    CHECK(e.find("\n  port m_dqpn_o is 16 bits, expected 24") != std::string::npos);
    for (const auto& entry : fs::directory_iterator(kWork + "/cache/simnic/rtl"))
        CHECK(entry.path().filename().string().rfind(".build-", 0) != 0);
}

TEST_CASE("own parser: missing files, Verilator's errors and a missing top are reported clearly", "[rtl][own_rtl]") {
    // Every missing file at once, before Verilator runs.
    const uint64_t runs = verilator_runs();
    CHECK(load_error({{kWork + "/nope.sv", kDir + "/template/my_parser.sv", kWork + "/nope2.sv"}, "my_parser"}) ==
          "parser: one's own RTL:\n  parser.rtl_sources: no such file: " + kWork +
              "/nope.sv\n  parser.rtl_sources: no such file: " + kWork + "/nope2.sv");
    CHECK(verilator_runs() == runs);
    // Verilator's own words, with the file and line.
    std::string t = read(kDir + "/template/my_parser.sv");
    const std::string broken = write("broken.sv", replaced(t, "  assign m_se_o              = 1'b0;\n",
                                                           "  assign m_se_o              = 1'b0\n"));
    const std::string e = load_error({{broken}, "my_parser"});
    CHECK(e.rfind("parser: Verilator rejected my_parser (reading its ports, exit ", 0) == 0);
    CHECK(e.find("broken.sv:") != std::string::npos);
    CHECK(e.find("syntax error") != std::string::npos);
    // A top the sources do not have.
    const std::string m = load_error({{kDir + "/template/my_parser.sv"}, "their_parser"});
    CHECK(m.rfind("parser.rtl_top = \"their_parser\": no module of that name in parser.rtl_sources", 0) == 0);
    // No Verilator where it is looked for.
    setenv("SIMNIC_VERILATOR", "/nonexistent/verilator", 1);
    const std::string v = load_error({{kDir + "/template/my_parser.sv"}, "my_parser"});
    unsetenv("SIMNIC_VERILATOR");
    CHECK(v == "parser: cannot run /nonexistent/verilator: Verilator is needed to build one's own RTL (install "
               "Verilator 5, e.g. scripts/setup.sh, or set SIMNIC_VERILATOR)");
}

TEST_CASE("own parser: docs/model.md's port table is the interface's", "[rtl][own_rtl]") {
    const std::string table = ports_markdown(roce_parser_ports());
    const std::string doc = read(std::string(SIMNIC_SOURCE_DIR) + "/docs/model.md");
    INFO("docs/model.md, Your own RTL, should hold this table:\n" << table);
    CHECK(doc.find(table) != std::string::npos);
}

TEST_CASE("own parser: checked at the DataWidth it is built at (the device's mac.width_bytes * 8)",
          "[rtl][own_rtl]") {
    // The template follows DataWidth: its ports fit at 256 as at 512.
    const std::string tmpl = kDir + "/template/my_parser.sv";
    CHECK(check_own_rtl_ports(own_parser_stage(), {{tmpl}, "my_parser", 256}).empty());
    CHECK(check_own_rtl_ports(own_parser_stage(), {{kDir + "/examples/roce_parser_slow.sv"}, "roce_parser_slow", 256})
              .empty());
    // One whose stream does not follow DataWidth (512 bits, whatever it is
    // built at) fits at 512 and not at 256: the widths that derive from
    // DataWidth are checked against the width it is built at.
    std::string t = read(tmpl);
    t = replaced(t, "input  logic [DataWidth-1:0]   s_axis_tdata_i", "input  logic [511:0]           s_axis_tdata_i");
    t = replaced(t, "input  logic [DataWidth/8-1:0] s_axis_tkeep_i", "input  logic [63:0]            s_axis_tkeep_i");
    const std::string fixed = write("fixed_512.sv", t);
    CHECK(check_own_rtl_ports(own_parser_stage(), {{fixed}, "my_parser"}).empty());
    CHECK(check_own_rtl_ports(own_parser_stage(), {{fixed}, "my_parser", 256}) ==
          std::vector<std::string>{"port s_axis_tdata_i is 512 bits, expected 256 (DataWidth)",
                                   "port s_axis_tkeep_i is 64 bits, expected 32 (DataWidth/8)"});
    CHECK(load_error({{fixed}, "my_parser", 256})
              .rfind("parser: my_parser does not have the parser's ports (DataWidth 256; docs/model.md, Your own "
                     "RTL), 2 differences:\n  port s_axis_tdata_i is 512 bits, expected 256 (DataWidth)",
                     0) == 0);
    // A width the drivers cannot take, or a stage without a datapath:
    // refused before Verilator runs.
    const uint64_t runs = verilator_runs();
    const std::string pow2 =
        ": a datapath is a power of two from 64 to 2048 bits (mac.width_bytes 8 to 256)";
    CHECK(load_error({{tmpl}, "my_parser", 384}) == "parser: one's own RTL at DataWidth 384" + pow2);
    CHECK(load_error({{tmpl}, "my_parser", 32}) == "parser: one's own RTL at DataWidth 32" + pow2);
    CHECK(load_error({{tmpl}, "my_parser", 4096}) == "parser: one's own RTL at DataWidth 4096" + pow2);
    OwnRtlStage no_datapath = own_parser_stage();
    no_datapath.block = "req_seg";
    no_datapath.data_width = 0;
    CHECK(testkit::load_error(no_datapath, {{tmpl}, "my_parser", 256}, kWork) ==
          "req_seg: one's own RTL at DataWidth 256: the stage has no datapath, and no DataWidth parameter");
    CHECK(verilator_runs() == runs);
}

namespace {

// Stand-ins for a Verilated model's stream ports, as Verilator declares
// them: up to 64 bits an integer, wider an array of 32-bit words.
struct Wide8 {
    uint32_t w[8];
    uint32_t& operator[](size_t i) { return w[i]; }
    const uint32_t& operator[](size_t i) const { return w[i]; }
};
struct Sink64 {  // DataWidth 64: tdata a QData, tkeep a CData
    uint64_t s_axis_tdata_i = 0;
    uint8_t s_axis_tkeep_i = 0;
};
struct Sink256 {  // DataWidth 256: tdata 8 words, tkeep an IData
    Wide8 s_axis_tdata_i{};
    uint32_t s_axis_tkeep_i = 0;
};
struct Source2048 {  // DataWidth 2048: tkeep itself 8 words
    Wide8 m_axis_tkeep_o{};
};

}  // namespace

TEST_CASE("own RTL: the drivers' beat follows the Verilated model's data port, integer or words",
          "[rtl][own_rtl]") {
    STATIC_REQUIRE(kSinkBeatBytes<Sink64> == 8);
    STATIC_REQUIRE(kSinkBeatBytes<Sink256> == 32);
    const uint8_t bytes[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    // DataWidth 64: the beat is the integer's bytes, lane 0 its low byte.
    Sink64 n;
    load_beat(n, kSinkBeatBytes<Sink64>, bytes, 5);
    CHECK(n.s_axis_tdata_i == 0x0504030201ull);
    CHECK(n.s_axis_tkeep_i == 0x1f);
    load_beat(n, kSinkBeatBytes<Sink64>, bytes, 8);
    CHECK(n.s_axis_tdata_i == 0x0807060504030201ull);
    CHECK(n.s_axis_tkeep_i == 0xff);
    load_beat(n, kSinkBeatBytes<Sink64>, bytes, 3, [] { return 0xaau; });
    CHECK(n.s_axis_tdata_i == 0xaaaaaaaaaa030201ull);
    CHECK(port_byte(n.s_axis_tdata_i, 2) == 3);
    CHECK(port_bit(n.s_axis_tkeep_i, 2));
    CHECK_FALSE(port_bit(n.s_axis_tkeep_i, 3));
    // DataWidth 256: words, zeros past the bytes.
    Sink256 w;
    std::fill(std::begin(w.s_axis_tdata_i.w), std::end(w.s_axis_tdata_i.w), 0xffffffffu);
    load_beat(w, kSinkBeatBytes<Sink256>, bytes, 9);
    CHECK(w.s_axis_tdata_i[0] == 0x04030201u);
    CHECK(w.s_axis_tdata_i[2] == 0x00000009u);
    CHECK(w.s_axis_tdata_i[7] == 0u);
    CHECK(w.s_axis_tkeep_i == 0x1ffu);
    CHECK(port_byte(w.s_axis_tdata_i, 8) == 9);
    // A tkeep wider than 64 bits (DataWidth 2048) set and read word by word.
    Source2048 k;
    set_keep(k.m_axis_tkeep_o, 70);
    CHECK(k.m_axis_tkeep_o[0] == 0xffffffffu);
    CHECK(k.m_axis_tkeep_o[1] == 0xffffffffu);
    CHECK(k.m_axis_tkeep_o[2] == 0x3fu);
    CHECK(k.m_axis_tkeep_o[3] == 0u);
    CHECK(port_bit(k.m_axis_tkeep_o, 69));
    CHECK_FALSE(port_bit(k.m_axis_tkeep_o, 70));
    set_keep(k.m_axis_tkeep_o, 256);
    CHECK(k.m_axis_tkeep_o[7] == 0xffffffffu);
}
