// The `model` device's configuration: defaults, round trips, overrides and
// the exact text of every class of error.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "simnic/model/config.h"

using simnic::model::BlockImpl;
using simnic::model::describe;
using simnic::model::load_config;
using simnic::model::ModelConfig;
using simnic::model::parse_config;
using simnic::model::render_config;
using simnic::model::validate_config;

namespace {

// The error of parsing `text` as "t.toml" (empty if it parses).
std::string error_of(const std::string& text) {
    ModelConfig c;
    std::string err;
    if (parse_config(text, "t.toml", c, err)) return {};
    return err;
}

ModelConfig parsed(const std::string& text) {
    ModelConfig c;
    std::string err;
    INFO(text);
    REQUIRE(parse_config(text, "t.toml", c, err));
    CHECK(err.empty());
    return c;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace

TEST_CASE("model config: defaults are the documented values and valid", "[model][config]") {
    const ModelConfig c;
    CHECK(c.clock.freq_mhz == 250);
    CHECK(c.mac.width_bytes == 64);
    CHECK(c.mac.line_rate_gbps == 100);
    CHECK(c.mac.ifg_bytes == 20);
    // Latencies a designer adds (docs/model.md, Where the nanoseconds go):
    // off by default, so the figures stay those of the pipeline alone.
    CHECK(c.mac.phy_latency_ns == 0);
    CHECK(c.mac.cable_ns == 0);
    CHECK(c.doorbell.mmio_ns == 0);
    CHECK(c.doorbell.wqe_by_mmio_bytes == 0);
    CHECK(c.doorbell.recv_wqe_prefetch == 0);
    CHECK(c.cq.poll_ns == 0);
    CHECK(c.cq.msix_ns == 0);
    // Store-and-forward by default: the figures in docs/model.md assume it.
    CHECK(c.pipeline.cut_through == 0);
    CHECK(c.parser.impl == BlockImpl::cpp);
    CHECK(c.parser.latency_cycles == 4);
    CHECK(c.icrc.impl == BlockImpl::cpp);
    CHECK(c.icrc.latency_cycles == 7);
    CHECK(c.qpc_cache.entries == 256);
    CHECK(c.qpc_cache.ways == 4);
    CHECK(c.qpc_cache.hit_cycles == 2);
    CHECK(c.qpc_cache.entry_bytes == 256);
    CHECK(c.mpt_cache.entries == 1024);
    CHECK(c.mpt_cache.ways == 4);
    CHECK(c.mpt_cache.hit_cycles == 2);
    CHECK(c.mpt_cache.entry_bytes == 64);
    CHECK(c.mtt_cache.entries == 4096);
    CHECK(c.mtt_cache.ways == 8);
    CHECK(c.mtt_cache.hit_cycles == 2);
    CHECK(c.mtt_cache.entry_bytes == 8);
    CHECK(c.dma.read_latency_ns == 600);
    CHECK(c.dma.write_latency_ns == 200);
    CHECK(c.dma.bandwidth_gbps == 200);
    CHECK(c.dma.max_payload_bytes == 256);
    CHECK(c.dma.max_read_request_bytes == 512);
    CHECK(c.dma.outstanding_reads == 32);
    CHECK(c.dma.tlp_overhead_bytes == 24);
    CHECK(c.requester.cycles_per_packet == 2);
    CHECK(c.requester.retransmit_queue_entries == 1024);
    CHECK(c.responder.cycles_per_packet == 2);
    CHECK(c.completer.cycles_per_packet == 2);
    CHECK(c.cq.cqe_bytes == 64);  // hw-spec 7.1
    CHECK(c.eq.eqe_bytes == 32);  // hw-spec 8.1
    CHECK(c.fw.core_mhz == 500);
    CHECK(c.fw.command_cycles == 2000);

    std::string err;
    CHECK(validate_config(c, err));
    CHECK(err.empty());
}

TEST_CASE("model config: the key set is exactly the documented one, in table order", "[model][config]") {
    const char* expected[] = {
        "clock.freq_mhz",
        "mac.width_bytes", "mac.line_rate_gbps", "mac.ifg_bytes", "mac.phy_latency_ns", "mac.cable_ns",
        "doorbell.mmio_ns", "doorbell.wqe_by_mmio_bytes", "doorbell.recv_wqe_prefetch",
        "pipeline.cut_through", "pipeline.place_before_verdict",
        "parser.impl", "parser.latency_cycles", "parser.rtl_sources", "parser.rtl_top",
        "icrc.impl", "icrc.latency_cycles", "icrc.rtl_sources", "icrc.rtl_top",
        "tx_build.impl", "tx_build.latency_cycles", "tx_build.rtl_sources", "tx_build.rtl_top",
        "req_seg.impl", "req_seg.rtl_sources", "req_seg.rtl_top",
        "qpc_cache.entries", "qpc_cache.ways", "qpc_cache.hit_cycles", "qpc_cache.entry_bytes",
        "mpt_cache.entries", "mpt_cache.ways", "mpt_cache.hit_cycles", "mpt_cache.entry_bytes",
        "mtt_cache.entries", "mtt_cache.ways", "mtt_cache.hit_cycles", "mtt_cache.entry_bytes",
        "dma.read_latency_ns", "dma.write_latency_ns", "dma.bandwidth_gbps",
        "dma.max_payload_bytes", "dma.max_read_request_bytes", "dma.outstanding_reads",
        "dma.tlp_overhead_bytes",
        "requester.cycles_per_packet", "requester.retransmit_queue_entries",
        "responder.cycles_per_packet", "responder.contexts",
        "completer.cycles_per_packet", "completer.contexts",
        "cq.cqe_bytes", "cq.poll_ns", "cq.msix_ns", "cq.moderation_count", "cq.moderation_period_ns",
        "eq.eqe_bytes",
        "fw.core_mhz", "fw.command_cycles",
        "wire.quantum_cycles",
        "congestion.enable", "congestion.line_rate_gbps", "congestion.min_rate_mbps", "congestion.g",
        "congestion.initial_alpha", "congestion.alpha_timer_ns", "congestion.rate_timer_ns",
        "congestion.byte_counter_bytes", "congestion.fast_recovery_steps", "congestion.rai_mbps",
        "congestion.rhai_mbps", "congestion.min_cnp_interval_ns", "congestion.cnp_dscp",
    };
    auto d = describe(ModelConfig{});
    REQUIRE(d.size() == std::size(expected));
    for (std::size_t i = 0; i < d.size(); ++i) CHECK(d[i].first == expected[i]);
}

TEST_CASE("model config: derived values", "[model][config]") {
    ModelConfig c;
    CHECK(c.clock_period_ps() == 4000);
    CHECK(c.raw_mac_gbps() == 128);
    CHECK(c.beats(0) == 0);
    CHECK(c.beats(64) == 1);
    CHECK(c.beats(65) == 2);
    CHECK(c.line_time_ps(64) == Approx(6720));  // (64 + 20) bytes * 8 / 100 Gb/s
    CHECK(c.ns_to_cycles(600) == 150);
    CHECK(c.ns_to_cycles(601) == 151);
    CHECK(c.ns_to_cycles(0) == 0);
    CHECK(c.fw_command_ns() == 4000);
    CHECK(c.qpc_cache.sets() == 64);
    CHECK(c.mtt_cache.sets() == 512);
}

TEST_CASE("model config: render then parse gives the same configuration", "[model][config]") {
    SECTION("defaults") {
        const ModelConfig d;
        CHECK(parsed(render_config(d)) == d);
    }
    SECTION("every key changed") {
        ModelConfig c;
        c.clock.freq_mhz = 322.265625;
        c.mac = {256, 400, 24, 90, 15};
        c.doorbell = {120, 64, 1};
        c.pipeline = {1, 1};
        c.parser = {BlockImpl::rtl, 9, {"a.sv", "b c.sv"}, "my_top"};
        c.icrc = {BlockImpl::rtl, 3, {"e.sv"}, "my_engine"};
        c.tx_build = {BlockImpl::rtl, 2, {"t.sv"}, "my_tx_build"};
        c.req_seg = {BlockImpl::rtl, 0, {"s.sv"}, "my_req_seg"};
        c.qpc_cache = {512, 8, 3, 512};
        c.mpt_cache = {2048, 2, 1, 128};
        c.mtt_cache = {8192, 16, 4, 16};
        c.dma = {900, 300, 126.5, 512, 1024, 64, 20};
        c.requester = {3, 2048};
        c.responder = {4, 8};
        c.completer = {5, 2};
        c.cq = {128, 40, 3000, 8, 16000};
        c.eq = {64};
        c.fw = {1200.5, 1500};
        c.wire = {0};
        c.congestion = {1, 40, 5, 0.125, 0.5, 60000, 70000, 1 << 20, 3, 50, 500, 20000, 26};
        std::string err;
        INFO(err);
        REQUIRE(validate_config(c, err));
        const ModelConfig back = parsed(render_config(c));
        CHECK(back == c);
        CHECK(back != ModelConfig{});
        // Each changed key differs from its default in describe().
        auto a = describe(back), b = describe(ModelConfig{});
        for (std::size_t i = 0; i < a.size(); ++i) {
            INFO(a[i].first);
            CHECK(a[i].second != b[i].second);
        }
    }
}

TEST_CASE("model config: render has a comment with unit and range before every key", "[model][config]") {
    const std::string r = render_config(ModelConfig{});
    CHECK(r.find("[mac]\n# Datapath width: bytes the MAC and the pipeline move per cycle "
                 "[8..256 bytes, a power of two]\nwidth_bytes = 64\n") != std::string::npos);
    CHECK(r.find("# Implementation: the C++ model or the Verilated RTL [\"cpp\" or \"rtl\"]\n"
                 "impl = \"cpp\"\n") != std::string::npos);
    CHECK(r.find("freq_mhz = 250\n") != std::string::npos);
    CHECK(r.find("[1..2000 MHz, fractions allowed]\nfreq_mhz") != std::string::npos);
    CHECK(r.find("cqe_bytes = 64\n") != std::string::npos);
    CHECK(r.find("[sim]") == std::string::npos);
    // Every key line follows a comment line.
    std::istringstream in(r);
    std::string line, prev;
    int keys = 0;
    while (std::getline(in, line)) {
        if (line.find(" = ") != std::string::npos && line[0] != '#') {
            ++keys;
            INFO(line);
            CHECK(prev.rfind("# ", 0) == 0);
        }
        prev = line;
    }
    CHECK(keys == static_cast<int>(describe(ModelConfig{}).size()));
}

TEST_CASE("model config: describe gives key and plain value", "[model][config]") {
    ModelConfig c;
    c.icrc.impl = BlockImpl::rtl;
    c.mac.line_rate_gbps = 25.78125;
    auto d = describe(c);
    CHECK(d.front() == std::pair<std::string, std::string>{"clock.freq_mhz", "250"});
    CHECK(std::find(d.begin(), d.end(), std::pair<std::string, std::string>{"icrc.impl", "rtl"}) !=
          d.end());
    CHECK(std::find(d.begin(), d.end(),
                    std::pair<std::string, std::string>{"mac.line_rate_gbps", "25.78125"}) !=
          d.end());
    CHECK(std::find(d.begin(), d.end(),
                    std::pair<std::string, std::string>{"cq.cqe_bytes", "64"}) != d.end());
}

TEST_CASE("model config: empty and comment-only files are the defaults", "[model][config]") {
    CHECK(parsed("") == ModelConfig{});
    CHECK(parsed("# nothing here\n\n") == ModelConfig{});
    CHECK(parsed("[mac]\n[dma]\n") == ModelConfig{});
}

TEST_CASE("model config: a partial file overrides only what it sets", "[model][config]") {
    const ModelConfig c = parsed(
        "[mac]\n"
        "width_bytes = 128\n"
        "[qpc_cache]\n"
        "ways = 8\n"
        "[icrc]\n"
        "impl = \"rtl\"\n"
        "[fw]\n"
        "core_mhz = 812.5\n"
        "[dma]\n"
        "bandwidth_gbps = 63\n");  // an integer where a real is expected is fine
    ModelConfig expected;
    expected.mac.width_bytes = 128;
    expected.qpc_cache.ways = 8;
    expected.icrc.impl = BlockImpl::rtl;
    expected.fw.core_mhz = 812.5;
    expected.dma.bandwidth_gbps = 63;
    CHECK(c == expected);

    // Dotted keys and inline tables are the same TOML.
    CHECK(parsed("mac.width_bytes = 128\nqpc_cache = { ways = 8 }\n").qpc_cache.ways == 8);
}

TEST_CASE("model config: unknown keys, with the nearest valid key suggested", "[model][config]") {
    CHECK(error_of("[qpc_cache]\nway = 2\n") ==
          "t.toml:2:1: unknown key 'qpc_cache.way' (did you mean 'qpc_cache.ways'?)");
    CHECK(error_of("[dma]\nmax_payload_byte = 512\n") ==
          "t.toml:2:1: unknown key 'dma.max_payload_byte' (did you mean 'dma.max_payload_bytes'?)");
    CHECK(error_of("[mac]\nbogus_thing = 1\n") == "t.toml:2:1: unknown key 'mac.bogus_thing'");
    // A key of another table is found by its name.
    CHECK(error_of("[mac]\nfreq_mhz = 300\n") ==
          "t.toml:2:1: unknown key 'mac.freq_mhz' (did you mean 'clock.freq_mhz'?)");
    CHECK(error_of("freq_mhz = 300\n") ==
          "t.toml:1:1: unknown key 'freq_mhz' outside any table (did you mean 'clock.freq_mhz'?)");
    // A table inside a known table is an unknown key.
    CHECK(error_of("[mac.extra]\nx = 1\n") == "t.toml:1:6: unknown key 'mac.extra'");
}

TEST_CASE("model config: unknown tables", "[model][config]") {
    CHECK(error_of("[qpc_cach]\nways = 2\n") ==
          "t.toml:1:2: unknown table [qpc_cach] (did you mean [qpc_cache]?)");
    CHECK(error_of("[sim]\nmax_idle_gap_us = 1000\n") ==
          "t.toml:1:2: unknown table [sim] (tables: clock, mac, doorbell, pipeline, parser, icrc, tx_build, req_seg, "
          "qpc_cache, "
          "mpt_cache, mtt_cache, dma, requester, responder, completer, cq, eq, fw, wire, congestion)");
    CHECK(error_of("mac = 5\n") == "t.toml:1:7: 'mac' must be a table ([mac]), got an integer 5");
    CHECK(error_of("[[mac]]\nwidth_bytes = 64\n").find("'mac' must be a table ([mac]), got an array") !=
          std::string::npos);
}

TEST_CASE("model config: wrong types", "[model][config]") {
    CHECK(error_of("[mac]\nwidth_bytes = 64.0\n") ==
          "t.toml:2:15: mac.width_bytes: expected an integer, got a floating-point number 64.0");
    CHECK(error_of("[mac]\nwidth_bytes = \"64\"\n") ==
          "t.toml:2:15: mac.width_bytes: expected an integer, got a string \"64\"");
    CHECK(error_of("[dma]\noutstanding_reads = true\n") ==
          "t.toml:2:21: dma.outstanding_reads: expected an integer, got a boolean true");
    CHECK(error_of("[parser]\nimpl = 1\n") ==
          "t.toml:2:8: parser.impl: expected a string (\"cpp\" or \"rtl\" or \"rtl_example_slow\" or "
          "\"rtl_example_buggy\"), got an integer 1");
    CHECK(error_of("[clock]\nfreq_mhz = \"250\"\n") ==
          "t.toml:2:12: clock.freq_mhz: expected a number, got a string \"250\"");
    CHECK(error_of("[clock]\nfreq_mhz = [250]\n") ==
          "t.toml:2:12: clock.freq_mhz: expected a number, got an array");
}

TEST_CASE("model config: the parser's worked examples of one's own RTL are parser choices only", "[model][config]") {
    CHECK(parsed("[parser]\nimpl = \"rtl_example_slow\"\n").parser.impl == BlockImpl::rtl_example_slow);
    CHECK(parsed("[parser]\nimpl = \"rtl_example_buggy\"\n").parser.impl == BlockImpl::rtl_example_buggy);
    CHECK(error_of("[icrc]\nimpl = \"rtl_example_slow\"\n") ==
          "t.toml:2:8: icrc.impl = \"rtl_example_slow\" is not a valid choice (allowed: \"cpp\" or \"rtl\")");
    ModelConfig c;
    c.icrc.impl = BlockImpl::rtl_example_buggy;  // set in code
    std::string err;
    CHECK(!validate_config(c, err));
    CHECK(err == "icrc.impl = \"rtl_example_buggy\" is not a valid choice (allowed: \"cpp\" or \"rtl\")");
}

TEST_CASE("model config: values out of range, not a power of two, not a choice", "[model][config]") {
    CHECK(error_of("[dma]\noutstanding_reads = 0\n") ==
          "t.toml:2:21: dma.outstanding_reads = 0 is out of range (allowed: 1..1024 requests)");
    CHECK(error_of("[mac]\nifg_bytes = -1\n") ==
          "t.toml:2:13: mac.ifg_bytes = -1 is out of range (allowed: 0..255 bytes)");
    CHECK(error_of("[mac]\nwidth_bytes = 512\n") ==
          "t.toml:2:15: mac.width_bytes = 512 is out of range (allowed: 8..256 bytes, a power of two)");
    CHECK(error_of("[qpc_cache]\nentries = 99999999999\n") ==
          "t.toml:2:11: qpc_cache.entries = 99999999999 is out of range (allowed: 1..1048576 entries)");
    CHECK(error_of("[clock]\nfreq_mhz = 0.5\n") ==
          "t.toml:2:12: clock.freq_mhz = 0.5 is out of range (allowed: 1..2000 MHz)");
    CHECK(error_of("[clock]\nfreq_mhz = nan\n") ==
          "t.toml:2:12: clock.freq_mhz = nan is out of range (allowed: 1..2000 MHz)");
    CHECK(error_of("[mac]\nwidth_bytes = 48\n") ==
          "t.toml:2:15: mac.width_bytes = 48 is not a power of two (allowed: 8..256 bytes, a power of two)");
    CHECK(error_of("[dma]\nmax_read_request_bytes = 768\n") ==
          "t.toml:2:26: dma.max_read_request_bytes = 768 is not a power of two (allowed: 128..4096 "
          "bytes, a power of two)");
    // The hw-spec entry sizes are the floors.
    CHECK(error_of("[cq]\ncqe_bytes = 32\n") ==
          "t.toml:2:13: cq.cqe_bytes = 32 is out of range (allowed: 64..256 bytes, a power of two)");
    CHECK(error_of("[mpt_cache]\nentry_bytes = 32\n") ==
          "t.toml:2:15: mpt_cache.entry_bytes = 32 is out of range (allowed: 64..4096 bytes, a power "
          "of two)");
    CHECK(error_of("[icrc]\nimpl = \"vhdl\"\n") ==
          "t.toml:2:8: icrc.impl = \"vhdl\" is not a valid choice (allowed: \"cpp\" or \"rtl\")");
    CHECK(error_of("[icrc]\nimpl = 'C\"\\'\n") ==
          "t.toml:2:8: icrc.impl = \"C\\\"\\\\\" is not a valid choice (allowed: \"cpp\" or \"rtl\")");
    CHECK(error_of("[icrc]\nimpl = \"a\\nb\"\n") ==
          "t.toml:2:8: icrc.impl = \"a\\u000ab\" is not a valid choice (allowed: \"cpp\" or \"rtl\")");
}

TEST_CASE("model config: cross-field rules", "[model][config]") {
    CHECK(error_of("[mpt_cache]\nentries = 1000\nways = 16\n") ==
          "t.toml:2:11: mpt_cache.entries = 1000 is not a multiple of mpt_cache.ways = 16");
    // Only ways set: the message points at it.
    CHECK(error_of("[qpc_cache]\nways = 512\n") ==
          "t.toml:2:8: qpc_cache.entries = 256 is not a multiple of qpc_cache.ways = 512");
    CHECK(error_of("[mac]\nline_rate_gbps = 200\n") ==
          "t.toml:2:18: mac.line_rate_gbps = 200 exceeds the raw MAC rate of 128 Gb/s "
          "(mac.width_bytes 64 * 8 bits * clock.freq_mhz 250 MHz)");
    // A narrower datapath lowers the raw rate below the default line rate.
    CHECK(error_of("[mac]\nwidth_bytes = 32\n") ==
          "t.toml:2:15: mac.line_rate_gbps = 100 exceeds the raw MAC rate of 64 Gb/s "
          "(mac.width_bytes 32 * 8 bits * clock.freq_mhz 250 MHz)");
    // Placing a payload before its ICRC verdict needs the frame streamed.
    CHECK(error_of("[pipeline]\nplace_before_verdict = 1\n") ==
          "t.toml:2:24: pipeline.place_before_verdict = 1 needs pipeline.cut_through = 1 (with "
          "store-and-forward the verdict is out before the responder sees the frame)");
    CHECK(parsed("[pipeline]\ncut_through = 1\nplace_before_verdict = 1\n").pipeline.place_before_verdict == 1);
    // A faster clock makes room.
    CHECK(parsed("[clock]\nfreq_mhz = 400\n[mac]\nline_rate_gbps = 200\n").mac.line_rate_gbps == 200);

    ModelConfig c;
    c.mtt_cache.entries = 100;
    std::string err;
    CHECK_FALSE(validate_config(c, err));
    CHECK(err == "mtt_cache.entries = 100 is not a multiple of mtt_cache.ways = 8");
}

TEST_CASE("model config: validate_config checks ranges of a configuration built in code", "[model][config]") {
    ModelConfig c;
    c.mac.width_bytes = 48;
    std::string err;
    CHECK_FALSE(validate_config(c, err));
    CHECK(err == "mac.width_bytes = 48 is not a power of two (allowed: 8..256 bytes, a power of two)");
    c = ModelConfig{};
    c.dma.bandwidth_gbps = 0;
    CHECK_FALSE(validate_config(c, err));
    CHECK(err == "dma.bandwidth_gbps = 0 is out of range (allowed: 1..4096 Gb/s)");
}

TEST_CASE("model config: TOML syntax errors are one line with a position", "[model][config]") {
    std::string e = error_of("[mac]\nwidth_bytes = \n");
    CHECK(e.rfind("t.toml:2:", 0) == 0);
    CHECK(e.find('\n') == std::string::npos);
    e = error_of("[mac]\nwidth_bytes = 64\nwidth_bytes = 128\n");
    CHECK(e.rfind("t.toml:3:", 0) == 0);
    CHECK(e.find('\n') == std::string::npos);
}

TEST_CASE("model config: every problem is reported, in file order, a failed parse leaves the output alone",
          "[model][config]") {
    // toml++ iterates keys alphabetically; the report follows the file.
    CHECK(error_of("[mac]\nzzz = 1\n[dma]\naaa = 2\n") ==
          "t.toml:2:1: unknown key 'mac.zzz'\nt.toml:4:1: unknown key 'dma.aaa'");
    CHECK(error_of("[dma]\noutstanding_reads = 0\nbandwidth_gbps = 0\n[qpc_cach]\n") ==
          "t.toml:2:21: dma.outstanding_reads = 0 is out of range (allowed: 1..1024 requests)\n"
          "t.toml:3:18: dma.bandwidth_gbps = 0 is out of range (allowed: 1..4096 Gb/s)\n"
          "t.toml:4:2: unknown table [qpc_cach] (did you mean [qpc_cache]?)");
    // Every rule across keys that fails.
    CHECK(error_of("[qpc_cache]\nways = 512\n[mac]\nline_rate_gbps = 200\n") ==
          "t.toml:2:8: qpc_cache.entries = 256 is not a multiple of qpc_cache.ways = 512\n"
          "t.toml:4:18: mac.line_rate_gbps = 200 exceeds the raw MAC rate of 128 Gb/s "
          "(mac.width_bytes 64 * 8 bits * clock.freq_mhz 250 MHz)");
    ModelConfig c;
    c.fw.command_cycles = 7;
    std::string err;
    CHECK_FALSE(parse_config("[fw]\ncommand_cycles = 3\ncore_mhz = 0\n", "t.toml", c, err));
    CHECK(c.fw.command_cycles == 7);

    ModelConfig v;
    v.dma.bandwidth_gbps = 0;
    v.mac.width_bytes = 48;
    CHECK_FALSE(validate_config(v, err));
    CHECK(err == "mac.width_bytes = 48 is not a power of two (allowed: 8..256 bytes, a power of two)\n"
                 "dma.bandwidth_gbps = 0 is out of range (allowed: 1..4096 Gb/s)");
}

TEST_CASE("model config: overrides apply over the file and are cited by their place", "[model][config]") {
    ModelConfig c;
    std::string err;
    REQUIRE(parse_config("[qpc_cache]\nentries = 64\n", "f.toml",
                         {"qpc_cache.entries=128", "parser.impl=rtl", "mac.line_rate_gbps=25.5", "icrc.impl=\"rtl\""},
                         c, err));
    CHECK(c.qpc_cache.entries == 128);
    CHECK(c.parser.impl == BlockImpl::rtl);
    CHECK(c.icrc.impl == BlockImpl::rtl);
    CHECK(c.mac.line_rate_gbps == 25.5);

    // The first override is #1, and every bad one is reported after the file's problems.
    c = ModelConfig{};
    CHECK_FALSE(parse_config("[mac]\nwidth_bytes = 7\n", "f.toml",
                             {"qpc_cache.entries=0", "mac.ifg_bytes=20", "qpc_cache.wayz=4", "nodot=1", "mac.width_bytes",
                              "dma.bandwidth_gbps=[1", "parser.impl=vhdl"},
                             c, err));
    CHECK(err ==
          "f.toml:2:15: mac.width_bytes = 7 is out of range (allowed: 8..256 bytes, a power of two)\n"
          "--set #1: qpc_cache.entries = 0 is out of range (allowed: 1..1048576 entries)\n"
          "--set #3: unknown key 'qpc_cache.wayz' (did you mean 'qpc_cache.ways'?)\n"
          "--set #4: 'nodot=1': expected TABLE.KEY=VALUE, e.g. qpc_cache.entries=64\n"
          "--set #5: 'mac.width_bytes': expected TABLE.KEY=VALUE, e.g. qpc_cache.entries=64\n"
          "--set #6: dma.bandwidth_gbps: '[1' is not a TOML value (" +
              err.substr(err.find("is not a TOML value (") + 21, err.find(")\n--set #7") - err.find("is not a TOML value (") - 21) +
              ")\n"
          "--set #7: parser.impl = \"vhdl\" is not a valid choice (allowed: \"cpp\" or \"rtl\" or "
          "\"rtl_example_slow\" or \"rtl_example_buggy\")");
    CHECK(c == ModelConfig{});

    // A rule across keys names the override that broke it.
    CHECK_FALSE(parse_config("", "f.toml", {"mac.ifg_bytes=8", "mac.width_bytes=32"}, c, err));
    CHECK(err == "--set #2: mac.line_rate_gbps = 100 exceeds the raw MAC rate of 64 Gb/s "
                 "(mac.width_bytes 32 * 8 bits * clock.freq_mhz 250 MHz)");
    // ... or the file, when the file set one of its keys.
    CHECK_FALSE(parse_config("[qpc_cache]\nentries = 100\n", "f.toml", {"qpc_cache.ways=8"}, c, err));
    CHECK(err == "f.toml:2:11: qpc_cache.entries = 100 is not a multiple of qpc_cache.ways = 8");
    // Interrupt moderation by count needs its timer, or an event could wait for ever.
    CHECK_FALSE(parse_config("", "f.toml", {"cq.moderation_count=8"}, c, err));
    CHECK(err == "--set #1: cq.moderation_count = 8 needs cq.moderation_period_ns > 0: without it an event "
                 "waits for ever when fewer CQEs come");
    CHECK(parse_config("", "f.toml", {"cq.moderation_count=8", "cq.moderation_period_ns=16000"}, c, err));
    CHECK(c.cq.moderation_count == 8);
    CHECK(c.cq.moderation_period_ns == 16000);
}

TEST_CASE("model config: load_config reads a file and names it in errors", "[model][config]") {
    const std::string dir = SIMNIC_CONFIG_TEST_BINARY_DIR;
    const std::string good = dir + "/test_good.toml", bad = dir + "/test_bad.toml";
    std::ofstream(good) << "[requester]\nretransmit_queue_entries = 4096\n";
    std::ofstream(bad) << "\n[requester]\ncycles_per_packet = 0\n";
    ModelConfig c;
    std::string err;
    REQUIRE(load_config(good, c, err));
    CHECK(c.requester.retransmit_queue_entries == 4096);
    CHECK_FALSE(load_config(bad, c, err));
    CHECK(err == bad + ":3:21: requester.cycles_per_packet = 0 is out of range (allowed: 1..1024 cycles)");
    CHECK_FALSE(load_config(dir + "/no-such.toml", c, err));
    CHECK(err == dir + "/no-such.toml: cannot open: No such file or directory");
    CHECK_FALSE(load_config(dir, c, err));
    CHECK(err == dir + ": cannot read: Is a directory");
}

TEST_CASE("model config: docs/model-config.toml is render_config of the defaults", "[model][config]") {
    const std::string path = std::string(SIMNIC_SOURCE_DIR) + "/docs/model-config.toml";
    const std::string expected = render_config(ModelConfig{});
    const std::string actual = read_file(path);
    if (actual != expected) {
        const std::string fresh = std::string(SIMNIC_CONFIG_TEST_BINARY_DIR) + "/model-config.toml";
        std::ofstream(fresh, std::ios::binary) << expected;
        FAIL("docs/model-config.toml is stale or missing; the current text is in " << fresh
                                                                                    << ": copy it over");
    }
    ModelConfig c;
    std::string err;
    CHECK(load_config(path, c, err));
    CHECK(c == ModelConfig{});
}

TEST_CASE("model config: [congestion] gives the DCQCN and NP configurations", "[model][config][congestion]") {
    ModelConfig c;
    CHECK(c.congestion.enable == 0);  // off by default
    // The defaults are the congestion core's.
    const simnic::congestion::DcqcnConfig d = c.congestion.dcqcn(100), core;
    CHECK(d.line_rate_bps == core.line_rate_bps);
    CHECK(d.min_rate_bps == core.min_rate_bps);
    CHECK(d.g == core.g);
    CHECK(d.initial_alpha == core.initial_alpha);
    CHECK(d.alpha_timer_ns == core.alpha_timer_ns);
    CHECK(d.rate_timer_ns == core.rate_timer_ns);
    CHECK(d.byte_counter_bytes == core.byte_counter_bytes);
    CHECK(d.fast_recovery_steps == core.fast_recovery_steps);
    CHECK(d.rai_bps == core.rai_bps);
    CHECK(d.rhai_bps == core.rhai_bps);
    CHECK(c.congestion.np().min_cnp_interval_ns == simnic::congestion::NpConfig{}.min_cnp_interval_ns);
    CHECK(c.congestion.np().cnp_dscp == simnic::congestion::NpConfig{}.cnp_dscp);
    CHECK(c.congestion.np().cnp_dscp == 48);

    c = parsed("[mac]\nline_rate_gbps = 25\n[congestion]\nenable = 1\nrai_mbps = 5\nmin_cnp_interval_ns = 4000\n");
    CHECK(c.congestion.enable == 1);
    CHECK(c.congestion.dcqcn(c.mac.line_rate_gbps).line_rate_bps == 25e9);  // 0: the port's
    CHECK(c.congestion.dcqcn(c.mac.line_rate_gbps).rai_bps == 5e6);
    CHECK(c.congestion.np().min_cnp_interval_ns == 4000);
    CHECK(c.congestion.np().cnp_dscp == 48);
    c = parsed("[congestion]\ncnp_dscp = 26\n");
    CHECK(c.congestion.np().cnp_dscp == 26);
    CHECK(error_of("[congestion]\ncnp_dscp = 64\n").find("congestion.cnp_dscp = 64 is out of range") != std::string::npos);
    c = parsed("[congestion]\nline_rate_gbps = 10\n");
    CHECK(c.congestion.dcqcn(c.mac.line_rate_gbps).line_rate_bps == 10e9);

    CHECK(error_of("[congestion]\nenable = 2\n").find("congestion.enable = 2 is out of range") != std::string::npos);
    CHECK(error_of("[congestion]\nline_rate_gbps = 1\nmin_rate_mbps = 2000\n")
              .find("[congestion]: minimum rate must be positive and at most the line rate") != std::string::npos);
}

TEST_CASE("model config: a soft device's config holds [congestion] only", "[model][config][congestion]") {
    simnic::model::CongestionConfig cc;
    std::string err;
    REQUIRE(simnic::model::parse_soft_config("[congestion]\nenable = 1\ng = 0.5\n", "s.toml", cc, err));
    CHECK(cc.enable == 1);
    CHECK(cc.g == 0.5);
    simnic::model::CongestionConfig before = cc;
    CHECK_FALSE(simnic::model::parse_soft_config("[congestion]\nenable = 1\n[dma]\nread_latency_ns = 5\n", "s.toml", cc, err));
    CHECK(err == "s.toml:3:1: [dma] is a model device's; a soft device's config holds [congestion] only");
    CHECK(cc.g == before.g);
    // A model device's table is refused for being one, before its values.
    CHECK_FALSE(simnic::model::parse_soft_config("[qpc_cache]\nways = 3\n", "s.toml", cc, err));
    CHECK(err == "s.toml:1:1: [qpc_cache] is a model device's; a soft device's config holds [congestion] only");
    CHECK_FALSE(simnic::model::parse_soft_config("[congestion\n", "s.toml", cc, err));
    CHECK(err.rfind("s.toml:1:", 0) == 0);
    CHECK_FALSE(simnic::model::parse_soft_config("[congestion]\nenable = 3\n", "s.toml", cc, err));
    CHECK(err.find("congestion.enable = 3 is out of range") != std::string::npos);
}

TEST_CASE("model config: [tx_build] names its RTL as the parser does, impl is cpp or rtl", "[model][config]") {
    const ModelConfig d;
    CHECK(d.tx_build.impl == BlockImpl::cpp);
    CHECK(d.tx_build.latency_cycles == 0);  // the C++ model's TX build: the frame's beats alone
    const ModelConfig c = parsed(
        "[tx_build]\nimpl = \"rtl\"\nlatency_cycles = 2\nrtl_sources = [\"my_tx.sv\"]\nrtl_top = \"my_tx_build\"\n");
    CHECK(c.tx_build.impl == BlockImpl::rtl);
    CHECK(c.tx_build.latency_cycles == 2);
    CHECK(c.tx_build.rtl_sources == std::vector<std::string>{"my_tx.sv"});
    CHECK(c.tx_build.rtl_top == "my_tx_build");
    CHECK(error_of("[tx_build]\nrtl_sources = [\"a.sv\"]\nrtl_top = \"a\"\n") ==
          "t.toml:2:15: tx_build.rtl_sources is set but tx_build.impl = \"cpp\" (one's own RTL needs tx_build.impl = "
          "\"rtl\")");
    // The worked examples selectable by impl are parsers.
    CHECK(error_of("[tx_build]\nimpl = \"rtl_example_buggy\"\n").find("tx_build.impl") != std::string::npos);
}

TEST_CASE("model config: [req_seg] names its RTL as the others do, impl is cpp or rtl, no latency key",
          "[model][config]") {
    CHECK(ModelConfig{}.req_seg.impl == BlockImpl::cpp);
    const ModelConfig c = parsed("[req_seg]\nimpl = \"rtl\"\nrtl_sources = [\"seg.sv\"]\nrtl_top = \"my_req_seg\"\n");
    CHECK(c.req_seg.impl == BlockImpl::rtl);
    CHECK(c.req_seg.rtl_sources == std::vector<std::string>{"seg.sv"});
    CHECK(c.req_seg.rtl_top == "my_req_seg");
    CHECK(error_of("[req_seg]\nrtl_sources = [\"a.sv\"]\nrtl_top = \"a\"\n") ==
          "t.toml:2:15: req_seg.rtl_sources is set but req_seg.impl = \"cpp\" (one's own RTL needs req_seg.impl = "
          "\"rtl\")");
    CHECK(error_of("[req_seg]\nimpl = \"rtl\"\nrtl_sources = [\"a.sv\"]\n") ==
          "t.toml:3:15: req_seg.rtl_sources is set but req_seg.rtl_top is empty (name the top module)");
    CHECK(error_of("[req_seg]\nimpl = \"rtl_example_slow\"\n").find("req_seg.impl") != std::string::npos);
    // The C++ model's time per packet is requester.cycles_per_packet.
    CHECK(error_of("[req_seg]\nlatency_cycles = 2\n").find("unknown key 'req_seg.latency_cycles'") !=
          std::string::npos);
}

TEST_CASE("model config: one's own parser RTL is named by its files and top module", "[model][config]") {
    const ModelConfig c =
        parsed("[parser]\nimpl = \"rtl\"\nrtl_sources = [\"my_pkg.sv\", \"rtl/my_parser.sv\"]\nrtl_top = \"my_parser\"\n");
    CHECK(c.parser.rtl_sources == std::vector<std::string>{"my_pkg.sv", "rtl/my_parser.sv"});
    CHECK(c.parser.rtl_top == "my_parser");
    // Each rule at once: sources without impl = "rtl", without a top; a top without sources.
    CHECK(error_of("[parser]\nrtl_sources = [\"a.sv\"]\n") ==
          "t.toml:2:15: parser.rtl_sources is set but parser.impl = \"cpp\" (one's own RTL needs parser.impl = "
          "\"rtl\")\nt.toml:2:15: parser.rtl_sources is set but parser.rtl_top is empty (name the top module)");
    CHECK(error_of("[parser]\nimpl = \"rtl\"\nrtl_top = \"x\"\n") ==
          "t.toml:3:11: parser.rtl_top = \"x\" is set but parser.rtl_sources is empty (list the top's files)");
    CHECK(error_of("[parser]\nrtl_sources = [\"a.sv\", 3]\n") ==
          "t.toml:2:15: parser.rtl_sources: expected an array of strings, element 2 is an integer 3");
    CHECK(error_of("[parser]\nrtl_top = 3\n") == "t.toml:2:11: parser.rtl_top: expected a string, got an integer 3");
    // --set takes a path as typed, and one file as a list of one.
    ModelConfig o;
    std::string err;
    REQUIRE(parse_config("", "t.toml", {"parser.impl=rtl", "parser.rtl_sources=../x/my_parser.sv", "parser.rtl_top=my_parser"},
                         o, err));
    CHECK(o.parser.rtl_sources == std::vector<std::string>{"../x/my_parser.sv"});
    CHECK(o.parser.rtl_top == "my_parser");
    // A file names its sources relative to itself.
    const std::string dir = std::string(SIMNIC_CONFIG_TEST_BINARY_DIR) + "/own_rtl_cfg";
    std::filesystem::create_directories(dir);
    {
        std::ofstream f(dir + "/dev.toml");
        f << "[parser]\nimpl = \"rtl\"\nrtl_sources = [\"p.sv\", \"/abs/q.sv\"]\nrtl_top = \"p\"\n";
    }
    ModelConfig l;
    REQUIRE(load_config(dir + "/dev.toml", l, err));
    CHECK(l.parser.rtl_sources == std::vector<std::string>{dir + "/p.sv", "/abs/q.sv"});
    // So does the text of a file given with its path (as the daemon gets it);
    // an override stays as typed.
    ModelConfig d;
    REQUIRE(parse_config("[parser]\nimpl = \"rtl\"\nrtl_sources = [\"p.sv\"]\nrtl_top = \"p\"\n", "/etc/simnic/dev.toml",
                         {"icrc.impl=rtl", "icrc.rtl_sources=e.sv", "icrc.rtl_top=e"}, d, err));
    CHECK(d.parser.rtl_sources == std::vector<std::string>{"/etc/simnic/p.sv"});
    CHECK(d.icrc.rtl_sources == std::vector<std::string>{"e.sv"});
    // The ICRC engine takes its own the same way.
    CHECK(error_of("[icrc]\nrtl_top = \"e\"\n") ==
          "t.toml:2:11: icrc.rtl_top = \"e\" is set but icrc.rtl_sources is empty (list the top's files)");
    CHECK(parsed("[icrc]\nimpl = \"rtl\"\nrtl_sources = [\"e.sv\"]\nrtl_top = \"e\"\n").icrc.rtl_top == "e");
}
