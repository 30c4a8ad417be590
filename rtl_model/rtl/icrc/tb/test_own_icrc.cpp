// One's own ICRC engine (own_rtl.h): the port check against the stage's
// interface (icrc_engine_interface.cc), every difference of a wrong design
// in one error, the docs' table; and the reference engine named as one's own
// (icrc.rtl_sources): built at run time, cached, and giving the built-in
// engine's results and cycles on the same frames.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "icrc_engine_interface.h"
#include "icrc_engine_rtl.h"
#include "own_icrc.h"
#include "own_rtl.h"
#include "own_rtl_testkit.h"

using namespace simnic::rtl;
namespace fs = std::filesystem;

namespace {

const std::string kDir = SIMNIC_ICRC_SRC_DIR;
const std::string kWork = SIMNIC_OWN_ICRC_TEST_DIR;

using testkit::read;
using testkit::replaced;

// A RoCE v2 frame (Ethernet, IPv4, UDP 4791, BTH, payload, ICRC) of
// `payload` bytes; the ICRC field is whatever the bytes say: what matters
// here is that both engines say the same.
std::vector<uint8_t> frame(size_t payload, uint8_t seed) {
    std::vector<uint8_t> f(14 + 20 + 8 + 12 + payload + 4);
    for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<uint8_t>(seed * 31 + i * 7);
    f[12] = 0x08, f[13] = 0x00;  // IPv4
    f[14] = 0x45;                // version 4, IHL 5
    const size_t ip_len = f.size() - 14;
    f[16] = static_cast<uint8_t>(ip_len >> 8), f[17] = static_cast<uint8_t>(ip_len);
    f[23] = 17;                     // UDP
    f[36] = 0x12, f[37] = 0xb7;     // port 4791
    return f;
}

}  // namespace

TEST_CASE("own icrc: the reference engine has exactly the stage's ports, a wrong one gets every difference",
          "[rtl][own_rtl]") {
    CHECK(check_own_rtl_ports(own_icrc_stage(), {{kDir + "/icrc_engine.sv"}, "icrc_engine"}).empty());
    // icrc_engine with m_icrc_o 16 bits wide and no m_err_o.
    std::string t = read(kDir + "/icrc_engine.sv");
    t = replaced(t, "module icrc_engine", "module my_icrc");
    t = replaced(t, "output logic [31:0]            m_icrc_o", "output logic [15:0]            m_icrc_o");
    fs::create_directories(kWork);
    const std::string bad = kWork + "/bad_icrc.sv";
    std::ofstream(bad) << t;
    const auto d = check_own_rtl_ports(own_icrc_stage(), {{bad}, "my_icrc"});
    CHECK(d == std::vector<std::string>{"port m_icrc_o is 16 bits, expected 32"});
}

TEST_CASE("own icrc: docs/model.md's ICRC port table is the interface's", "[rtl][own_rtl]") {
    const std::string table = ports_markdown(icrc_engine_ports());
    INFO("docs/model.md, Your own RTL, should hold this table:\n" << table);
    CHECK(read(std::string(SIMNIC_SOURCE_DIR) + "/docs/model.md").find(table) != std::string::npos);
}

TEST_CASE("own icrc: the reference named at run time equals the built-in engine, and is cached", "[rtl][own_rtl]") {
    const std::string cache = kWork + "/cache";
    fs::remove_all(cache);
    setenv("XDG_CACHE_HOME", cache.c_str(), 1);
    std::vector<std::vector<uint8_t>> frames;
    for (size_t n : {0, 1, 9, 60, 200, 1024, 4000}) frames.push_back(frame(n, static_cast<uint8_t>(n)));
    frames.back()[14] = 0x44;  // IHL 4: an error
    IcrcEngineRtl built_in;
    IcrcRunStats s0, s1;
    const auto want = built_in.run(frames, &s0);

    const OwnRtl own{{kDir + "/icrc_engine.sv"}, "icrc_engine"};
    OwnRtlBuildInfo info;
    const uint64_t runs = verilator_runs();
    IcrcEngineRtl mine(own, &info);
    CHECK_FALSE(info.cache_hit);
    CHECK(verilator_runs() == runs + 2);
    const auto got = mine.run(frames, &s1);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
        INFO("frame " << i);
        CHECK(got[i].icrc == want[i].icrc);
        CHECK(got[i].ok == want[i].ok);
        CHECK(got[i].err == want[i].err);
        CHECK(got[i].valid_cycle - got[i].last_beat_cycle == want[i].valid_cycle - want[i].last_beat_cycle);
    }
    CHECK(want.back().err);
    CHECK(s1.cycles == s0.cycles);

    // Again: from the cache, no Verilator run.
    setenv("SIMNIC_VERILATOR", "/nonexistent/verilator", 1);
    OwnRtlBuildInfo again;
    IcrcEngineRtl cached(own, &again);
    unsetenv("SIMNIC_VERILATOR");
    CHECK(again.cache_hit);
    CHECK(again.dir == info.dir);
    CHECK(verilator_runs() == runs + 2);
    CHECK(cached.run(frames).at(3).icrc == want[3].icrc);
}

TEST_CASE("own icrc: the reference named at run time at DataWidth 256 moves 32-byte beats, with the same ICRCs",
          "[rtl][own_rtl]") {
    // A device with mac.width_bytes = 32 builds its own engine at
    // -GDataWidth=256 (OwnRtl::data_width); its driver takes 32 bytes a
    // beat from the model's s_axis_tdata_i. The cache is kept between runs.
    setenv("XDG_CACHE_HOME", (kWork + "/cache_w256").c_str(), 1);
    std::vector<std::vector<uint8_t>> frames;
    for (size_t n : {0, 1, 9, 60, 200, 1024, 4000}) frames.push_back(frame(n, static_cast<uint8_t>(n)));
    frames.back()[14] = 0x44;  // IHL 4: an error
    IcrcEngineRtl built_in;
    IcrcRunStats s512, s256;
    const auto want = built_in.run(frames, &s512);
    IcrcEngineRtl mine({{kDir + "/icrc_engine.sv"}, "icrc_engine", 256});
    CHECK(built_in.beat_bytes() == 64);
    CHECK(mine.beat_bytes() == 32);
    const auto got = mine.run(frames, &s256);
    REQUIRE(got.size() == want.size());
    uint64_t beats32 = 0, beats64 = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        INFO("frame " << i << ", " << frames[i].size() << " bytes");
        CHECK(got[i].icrc == want[i].icrc);
        CHECK(got[i].ok == want[i].ok);
        CHECK(got[i].err == want[i].err);
        // Its beats went in one per edge: ceil(len / 32) of them, where the
        // built-in engine took ceil(len / 64).
        const uint64_t b32 = (frames[i].size() + 31) / 32, b64 = (frames[i].size() + 63) / 64;
        CHECK(got[i].last_beat_cycle - got[i].first_beat_cycle + 1 == b32);
        CHECK(want[i].last_beat_cycle - want[i].first_beat_cycle + 1 == b64);
        beats32 += b32;
        beats64 += b64;
    }
    CHECK(want.back().err);
    CHECK(s256.beats == beats32);
    CHECK(s512.beats == beats64);
    CHECK(beats32 > beats64 + beats64 / 2);
}
