// The parser alone: a frame moves on ceil(L / W) cycles after it started,
// its header vector is out parser.latency_cycles later (the frame's ready
// time), malformed frames are dropped and counted per reason (and still
// cost their beats), and the Verilated parser gives the same verdicts as
// the C++ twin with its own cycles as the stage's timing.
#include <catch2/catch.hpp>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "block_harness.h"
#include "blocks/parser.h"
#ifdef SIMNIC_HAVE_RTL_PARSER
#include "own_rtl.h"
#include "roce_parser_rtl.h"
#endif
#include "simnic/model/pipeline.h"
#include "simnic/roce/header_vector.h"
#include "simnic/roce/packet.h"

using namespace simnic;
using namespace simnic::model;
using roce::ParseVerdict;

namespace {

struct Stim {
    std::vector<uint8_t> frame;
    ParseVerdict verdict;
    uint32_t qpn = 0, psn = 0;
    uint8_t opcode = 0;
};

// Good frames and one of each kind of malformed frame, interleaved.
std::vector<Stim> stimulus() {
    using namespace roce::op;
    std::vector<Stim> s;
    auto good = [&](uint8_t op, uint32_t qpn, uint32_t psn, size_t payload) {
        s.push_back({tb::roce_frame(op, qpn, psn, payload), ParseVerdict::Accept, qpn, psn, op});
    };
    auto bad = [&](ParseVerdict v, std::vector<uint8_t> f) { s.push_back({std::move(f), v}); };
    const std::vector<uint8_t> base = tb::roce_frame(RC_SEND_ONLY, 0x21, 7, 300);

    good(RC_RDMA_WRITE_ONLY, 0x11, 100, 1000);
    bad(ParseVerdict::TooShort, std::vector<uint8_t>(base.begin(), base.begin() + 14 + 12));  // ends in the IP header
    good(RC_ACKNOWLEDGE, 0x12, 101, 0);
    std::vector<uint8_t> f = base;
    f[12] = 0x88, f[13] = 0xB5;  // an ethertype that is not IP
    bad(ParseVerdict::NotIp, f);
    f = base;
    f[14 + 8] ^= 1;  // the TTL, without fixing the header checksum
    bad(ParseVerdict::BadIpHeader, f);
    bad(ParseVerdict::IpFragment, tb::roce_frame(RC_SEND_ONLY, 0x21, 7, 300, [](roce::Packet& p) { p.ip4.frag = 0x2000; }));
    f = base;
    f[14 + 9] = 6;  // TCP, with the header checksum fixed up
    f[14 + 10] = f[14 + 11] = 0;
    const uint16_t cs = roce::ipv4_checksum(&f[14], 20);
    f[14 + 10] = uint8_t(cs >> 8), f[14 + 11] = uint8_t(cs);
    bad(ParseVerdict::NotUdp, f);
    bad(ParseVerdict::NotRoceV2, tb::roce_frame(RC_SEND_ONLY, 0x21, 7, 300, [](roce::Packet& p) { p.udp.dport = 4792; }));
    bad(ParseVerdict::BadBth, tb::roce_frame(RC_SEND_ONLY, 0x21, 7, 300, [](roce::Packet& p) { p.hdr.bth.tver = 1; }));
    good(RC_SEND_ONLY, 0x13, 102, 4000);
    bad(ParseVerdict::TooShort, std::vector<uint8_t>(base.begin(), base.begin() + 10));  // inside the Ethernet header
    bad(ParseVerdict::IpLengthMismatch, std::vector<uint8_t>(base.begin(), base.begin() + 14 + 20 + 8 + 6));
    good(RC_RDMA_READ_REQUEST, 0x14, 103, 0);
    return s;
}

struct Out {
    uint64_t t_ps, ready_ps;
    uint32_t qpn, psn;
    uint8_t opcode;
    bool operator==(const Out& o) const {
        return t_ps == o.t_ps && ready_ps == o.ready_ps && qpn == o.qpn && psn == o.psn && opcode == o.opcode;
    }
};

struct Result {
    std::vector<Out> out;
    std::array<uint64_t, roce::kNumParseVerdicts> drops{};
    uint64_t drops_total = 0, busy_ps = 0, items = 0, rtl_mismatch = 0, rtl_latency = 0;
    bool ran = true;
};

Result run(const ModelConfig& cfg, const std::vector<Stim>& s) {
    tb::BlockBench<ParserBlock> b(cfg);
    Result r;
    if (cfg.parser.impl == BlockImpl::rtl && !b.nic().parser_rtl) {
        r.ran = false;  // this build has no Verilated parser
        return r;
    }
    std::vector<std::pair<uint64_t, TxnPtr>> in;
    for (const Stim& x : s) in.emplace_back(0, tb::rx_txn(x.frame));
    b.drive(b.nic().mac_to_parser, std::move(in));
    const auto& seen = b.watch(b.nic().parser_to_icrc);
    b.run();
    for (const auto& o : seen)
        r.out.push_back({o.t_ps, o.item->ready_ps, o.item->qpn, o.item->psn, o.item->opcode});
    r.drops = b.nic().rx_drops_parser_reason;
    r.drops_total = b.nic().rx_drops_parser;
    r.busy_ps = b.nic().blk[Nic::kParser].busy_ps;
    r.items = b.nic().blk[Nic::kParser].items;
    r.rtl_mismatch = b.nic().parser_rtl_mismatch;
    r.rtl_latency = b.nic().parser_rtl_latency;
    return r;
}

}  // namespace

TEST_CASE("parser: the test frames have the verdicts they are meant to have", "[model][block][parser]") {
    for (const Stim& x : stimulus()) CHECK(roce::parse_header_vector(x.frame.data(), x.frame.size()).verdict == x.verdict);
}

TEST_CASE("parser: good frames out after their beats, headers parser.latency_cycles later, bad ones dropped per reason",
          "[model][block][parser]") {
    const std::vector<Stim> s = stimulus();
    for (uint32_t latency : {4u, 0u, 11u}) {
        ModelConfig cfg;
        cfg.parser.latency_cycles = latency;
        INFO("parser.latency_cycles = " << latency);
        const uint64_t period = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
        const Result r = run(cfg, s);

        // All frames were there at 0: each starts when the previous one's
        // beats are through, dropped or not.
        std::vector<Out> want;
        std::array<uint64_t, roce::kNumParseVerdicts> drops{};
        uint64_t t = 0, n_bad = 0;
        for (const Stim& x : s) {
            t += (x.frame.size() + cfg.mac.width_bytes - 1) / cfg.mac.width_bytes * period;
            if (x.verdict == ParseVerdict::Accept) {
                want.push_back({t, t + latency * period, x.qpn, x.psn, x.opcode});
            } else {
                ++drops[size_t(x.verdict)];
                ++n_bad;
            }
        }
        REQUIRE(r.out.size() == want.size());
        for (size_t i = 0; i < want.size(); ++i) {
            INFO("good frame " << i);
            CHECK(r.out[i].t_ps == want[i].t_ps);
            CHECK(r.out[i].ready_ps == want[i].ready_ps);
            CHECK(r.out[i].qpn == want[i].qpn);
            CHECK(r.out[i].psn == want[i].psn);
            CHECK(r.out[i].opcode == want[i].opcode);
        }
        CHECK(r.drops == drops);
        CHECK(r.drops[size_t(ParseVerdict::TooShort)] == 2);
        CHECK(r.drops[size_t(ParseVerdict::Accept)] == 0);
        CHECK(r.drops_total == n_bad);
        CHECK(r.items == s.size());
        CHECK(r.busy_ps == t);  // every frame costs its beats, the latency is pipelined
    }
}

TEST_CASE("parser: the Verilated parser gives the C++ twin's verdicts, with its own cycles as the timing",
          "[model][block][parser][rtl]") {
    // roce_parser.sv answers 3 edges after a frame's last beat; the default
    // parser.latency_cycles is 4. With impl = rtl the RTL's 3 are the
    // stage's latency and the configured value (11 here) is not used: the
    // outputs equal the C++ twin's at latency 3, and differ from its at 4.
    const std::vector<Stim> s = stimulus();
    ModelConfig cpp3, cpp4, rtl_cfg;
    cpp3.parser.latency_cycles = 3;
    rtl_cfg.parser.impl = BlockImpl::rtl;
    rtl_cfg.parser.latency_cycles = 11;
    const Result rtl = run(rtl_cfg, s);
    if (!rtl.ran) {
        WARN("this build has no Verilated parser: skipped");
        return;
    }
    const Result cpp = run(cpp3, s);
    CHECK(rtl.out == cpp.out);
    CHECK(!(rtl.out == run(cpp4, s).out));
    CHECK(rtl.rtl_latency == 3);
    CHECK(rtl.drops == cpp.drops);
    CHECK(rtl.drops_total == cpp.drops_total);
    CHECK(rtl.busy_ps == cpp.busy_ps);
    CHECK(rtl.rtl_mismatch == 0);
}

TEST_CASE("parser: with parser.impl = rtl a full queue to the ICRC check holds the RTL's m_ready_i low, the RTL "
          "holds its header vector, and the low edges are the parser's stall",
          "[model][block][parser][rtl][backpressure]") {
    // 12 ACKs, back to back, each `b` beats. The queue to the ICRC check
    // holds 8, and the ICRC check (the monitor) takes nothing before
    // T = 9b + 21 cycles. Frames 0..7 go on at b..8b cycles; frame 8's
    // beats are in at 9b with the queue full: its header vector waits on
    // the RTL's port with m_ready_i low on the 21 edges up to T, the RTL
    // holding it (m_valid_o high, the record unchanged), each edge a cycle
    // of the parser's stall; frames 8..11 go on at T, T + b, ... : exactly
    // 21 cycles later than with room. Nothing lost, nothing reordered.
    ModelConfig cfg;
    cfg.parser.impl = BlockImpl::rtl;
    const uint64_t P = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
    std::vector<std::vector<uint8_t>> frames;
    for (uint32_t k = 0; k < 12; ++k) frames.push_back(tb::roce_frame(roce::op::RC_ACKNOWLEDGE, 0x40 + k, 500 + k, 0));
    const uint64_t b = cfg.beats(uint32_t(frames[0].size()));
    const uint64_t T = (9 * b + 21) * P;
    struct Run {
        std::vector<tb::Seen<TxnPtr>> out;
        uint64_t ready_low = 0, stall_ps = 0, mismatches = 0, depth = 0;
        bool ran = true;
    };
    auto run_from = [&](uint64_t from) {
        Run r;
        tb::BlockBench<ParserBlock> bench(cfg);
        if (!bench.nic().parser_rtl) {
            r.ran = false;
            return r;
        }
        std::vector<std::pair<uint64_t, TxnPtr>> in;
        for (const auto& f : frames) in.emplace_back(0, tb::rx_txn(f));
        bench.drive(bench.nic().mac_to_parser, std::move(in));
        const auto& seen = bench.watch(bench.nic().parser_to_icrc, from);
        bench.run();
        r.out = seen;
        r.ready_low = bench.nic().parser_rtl_ready_low;
        r.stall_ps = bench.nic().blk[Nic::kParser].stall_ps;
        r.mismatches = bench.nic().parser_rtl_mismatch;
        r.depth = bench.nic().parser_to_icrc.depth();
        return r;
    };
    const Run free = run_from(0);
    if (!free.ran) {
        WARN("this build has no Verilated parser: skipped");
        return;
    }
    const Run full = run_from(T);
    REQUIRE(full.depth == 8);  // what the timeline assumes
    REQUIRE(free.out.size() == 12);
    REQUIRE(full.out.size() == 12);
    CHECK(free.ready_low == 0);
    CHECK(free.stall_ps == 0);
    CHECK(full.ready_low == 21);
    CHECK(full.stall_ps == 21 * P);
    CHECK(free.mismatches == 0);
    CHECK(full.mismatches == 0);  // the RTL held its header vector on all 21 edges
    for (size_t k = 0; k < 12; ++k) {
        INFO("frame " << k);
        CHECK(full.out[k].item->qpn == 0x40 + k);  // in order, none lost
        CHECK(full.out[k].item->psn == 500 + k);
        CHECK(free.out[k].t_ps == (k + 1) * b * P);
        const uint64_t handed = k < 8 ? (k + 1) * b * P : (k + 1) * b * P + 21 * P;
        CHECK(full.out[k].t_ps == std::max(handed, T));
    }
}

TEST_CASE("parser: with parser.impl = rtl and pipeline.cut_through a full queue to the ICRC check holds the "
          "RTL's m_ready_i low from when its header vector is out, and the RTL holds it",
          "[model][block][parser][rtl][backpressure][cut_through]") {
    // 12 ACKs of one beat, back to back. With cut-through frame k starts
    // at k cycles and goes on to the ICRC check with its first beat, a
    // cycle later; its header vector is on the RTL's port L cycles after
    // its header's beat (L the RTL's latency). The queue holds 8 and the
    // ICRC check (the monitor) takes nothing before T = (9 + L + 21)
    // cycles: frame 8 waits from 9 cycles on, its header vector on the
    // port from 9 + L, so m_ready_i is low on the 21 edges from then to T
    // (the RTL holding it, unchanged), while the parser's stall is the
    // whole wait, L + 21 cycles, as before. Frames 8..11 go on at T, T + 1,
    // ... cycles; nothing lost or reordered.
    ModelConfig cfg;
    cfg.parser.impl = BlockImpl::rtl;
    cfg.pipeline.cut_through = 1;
    const uint64_t P = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
    std::vector<std::vector<uint8_t>> frames;
    for (uint32_t k = 0; k < 12; ++k) frames.push_back(tb::roce_frame(roce::op::RC_ACKNOWLEDGE, 0x40 + k, 500 + k, 0));
    REQUIRE(cfg.beats(uint32_t(frames[0].size())) == 1);
    struct Run {
        std::vector<tb::Seen<TxnPtr>> out;
        uint64_t ready_low = 0, stall_ps = 0, mismatches = 0, latency = 0;
        bool ran = true;
    };
    auto run_from = [&](uint64_t from) {
        Run r;
        tb::BlockBench<ParserBlock> bench(cfg);
        if (!bench.nic().parser_rtl) {
            r.ran = false;
            return r;
        }
        std::vector<std::pair<uint64_t, TxnPtr>> in;
        for (const auto& f : frames) in.emplace_back(0, tb::rx_txn(f));
        bench.drive(bench.nic().mac_to_parser, std::move(in));
        const auto& seen = bench.watch(bench.nic().parser_to_icrc, from);
        bench.run();
        r.out = seen;
        r.ready_low = bench.nic().parser_rtl_ready_low;
        r.stall_ps = bench.nic().blk[Nic::kParser].stall_ps;
        r.mismatches = bench.nic().parser_rtl_mismatch;
        r.latency = bench.nic().parser_rtl_latency;
        return r;
    };
    const Run free = run_from(0);
    if (!free.ran) {
        WARN("this build has no Verilated parser: skipped");
        return;
    }
    const uint64_t L = free.latency;
    REQUIRE(L > 0);
    const uint64_t T = (9 + L + 21) * P;
    const Run full = run_from(T);
    REQUIRE(free.out.size() == 12);
    REQUIRE(full.out.size() == 12);
    CHECK(free.ready_low == 0);
    CHECK(free.stall_ps == 0);
    CHECK(full.ready_low == 21);
    CHECK(full.stall_ps == (L + 21) * P);
    CHECK(free.mismatches == 0);
    CHECK(full.mismatches == 0);  // the RTL held its header vector on all 21 edges
    for (size_t k = 0; k < 12; ++k) {
        INFO("frame " << k);
        CHECK(full.out[k].item->qpn == 0x40 + k);  // in order, none lost
        CHECK(full.out[k].item->psn == 500 + k);
        CHECK(free.out[k].t_ps == (k + 1) * P);
        CHECK(full.out[k].t_ps == (k < 8 ? T : T + (k - 8) * P));
    }
}

TEST_CASE("parser: one's own RTL, worked example: a slower parser brings its own 5 cycles",
          "[model][block][parser][rtl]") {
    // examples/roce_parser_slow.sv: roce_parser and two more output
    // register slices. The stage's latency is the RTL's 5 edges, whatever
    // parser.latency_cycles says; verdicts and records are the twin's.
    const std::vector<Stim> s = stimulus();
    ModelConfig cpp5, slow;
    cpp5.parser.latency_cycles = 5;
    slow.parser.impl = BlockImpl::rtl_example_slow;
    const Result r = run(slow, s);
    if (!r.ran) {
        WARN("this build has no Verilated parser: skipped");
        return;
    }
    const Result cpp = run(cpp5, s);
    CHECK(r.rtl_latency == 5);
    CHECK(r.out == cpp.out);
    CHECK(r.drops == cpp.drops);
    CHECK(r.busy_ps == cpp.busy_ps);  // same throughput: a beat per cycle
    CHECK(r.rtl_mismatch == 0);
}

TEST_CASE("parser: one's own RTL, worked example: a planted bug is caught and dumped with its frame",
          "[model][block][parser][rtl]") {
    // examples/roce_parser_buggy.sv inverts bit 0 of the PSN of RC SEND
    // Only packets: the one SEND Only frame of the stimulus is a mismatch,
    // dumped with both PSNs and the frame; the others are not.
    const std::vector<Stim> s = stimulus();
    ModelConfig buggy;
    buggy.parser.impl = BlockImpl::rtl_example_buggy;
    tb::BlockBench<ParserBlock> b(buggy);
    if (!b.nic().parser_rtl) {
        WARN("this build has no Verilated parser: skipped");
        return;
    }
    std::vector<std::pair<uint64_t, TxnPtr>> in;
    size_t sends = 0;
    uint32_t send_psn = 0;
    for (const Stim& x : s) {
        in.emplace_back(0, tb::rx_txn(x.frame));
        if (x.verdict == ParseVerdict::Accept && x.opcode == roce::op::RC_SEND_ONLY) ++sends, send_psn = x.psn;
    }
    REQUIRE(sends == 1);
    b.drive(b.nic().mac_to_parser, std::move(in));
    const auto& seen = b.watch(b.nic().parser_to_icrc);
    b.run();
    CHECK(b.nic().parser_rtl_mismatch == sends);
    REQUIRE(b.nic().rtl_mismatch_log.size() == 1);
    const std::string& d = b.nic().rtl_mismatch_log[0];
    CHECK(d.find("parser") == 0);
    CHECK(d.find("psn " + std::to_string(send_psn ^ 1) + ", C++") != std::string::npos);
    CHECK(d.find("psn " + std::to_string(send_psn) + "; frame") != std::string::npos);
    // The pipeline follows the RTL's record.
    bool found = false;
    for (const auto& o : seen) {
        if (o.item->opcode != roce::op::RC_SEND_ONLY) continue;
        found = true;
        CHECK(o.item->psn == (send_psn ^ 1));
    }
    CHECK(found);
}

#ifdef SIMNIC_HAVE_RTL_PARSER
TEST_CASE("parser: one's own RTL named in the config is verilated at run time and cached by content",
          "[model][block][parser][rtl][own_rtl]") {
    // The worked examples again, this time named by their files
    // (parser.rtl_sources, parser.rtl_top) as a designer names theirs:
    // port-checked, verilated, compiled with the stage's driver into a
    // shared object in the cache, loaded. A fresh cache, so the first
    // device of each builds it; the third finds it there and does not run
    // Verilator (pointed at nothing to prove it).
    namespace fs = std::filesystem;
    const std::string cache = SIMNIC_OWN_RTL_TEST_CACHE;
    fs::remove_all(cache);
    setenv("XDG_CACHE_HOME", cache.c_str(), 1);
    const std::string examples = std::string(SIMNIC_PARSER_RTL_DIR) + "/examples/";
    const std::vector<Stim> s = stimulus();

    ModelConfig cpp5, slow, buggy;
    cpp5.parser.latency_cycles = 5;
    slow.parser.impl = buggy.parser.impl = BlockImpl::rtl;
    slow.parser.rtl_sources = {examples + "roce_parser_slow.sv"};
    slow.parser.rtl_top = "roce_parser_slow";
    buggy.parser.rtl_sources = {examples + "roce_parser_buggy.sv"};
    buggy.parser.rtl_top = "roce_parser_buggy";
    const Result cpp = run(cpp5, s);

    // The slow one: its own 5 cycles, every record the twin's.
    uint64_t runs = rtl::verilator_runs();
    {
        tb::BlockBench<ParserBlock> b(slow);
        CHECK_FALSE(b.nic().parser_rtl_cache_hit);
        CHECK(fs::is_regular_file(b.nic().parser_rtl_dir + "/design.so"));
    }
    CHECK(rtl::verilator_runs() == runs + 2);  // the port check's pass and the build's
    const Result r = run(slow, s);
    CHECK(r.rtl_latency == 5);
    CHECK(r.out == cpp.out);
    CHECK(r.drops == cpp.drops);
    CHECK(r.rtl_mismatch == 0);

    // The buggy one: its planted bug, the one SEND Only frame's PSN.
    size_t sends = 0;
    for (const Stim& x : s) sends += x.verdict == ParseVerdict::Accept && x.opcode == roce::op::RC_SEND_ONLY;
    REQUIRE(sends == 1);
    const Result rb = run(buggy, s);
    CHECK(rb.rtl_mismatch == sends);
    CHECK(rb.out.size() == cpp.out.size());

    // The slow one again: from the cache, with no Verilator to run (the
    // compiler is part of the key, so it stays).
    runs = rtl::verilator_runs();
    setenv("SIMNIC_VERILATOR", "/nonexistent/verilator", 1);
    {
        tb::BlockBench<ParserBlock> b(slow);
        CHECK(b.nic().parser_rtl_cache_hit);
    }
    const Result again = run(slow, s);
    CHECK(rtl::verilator_runs() == runs);
    // The key is the files' text, not their names: a copy elsewhere is the
    // same design; one changed byte (a comment) is another, to be built.
    const std::string copy_dir = cache + "/../own_rtl_copy";
    fs::create_directories(copy_dir);
    fs::copy_file(slow.parser.rtl_sources[0], copy_dir + "/same.sv", fs::copy_options::overwrite_existing);
    ModelConfig moved = slow;
    moved.parser.rtl_sources = {copy_dir + "/same.sv"};
    {
        tb::BlockBench<ParserBlock> b(moved);
        CHECK(b.nic().parser_rtl_cache_hit);
    }
    {
        std::ofstream(copy_dir + "/same.sv", std::ios::app) << "// one more line\n";
        try {
            tb::BlockBench<ParserBlock> b(moved);
            FAIL("a changed design was taken from the cache");
        } catch (const rtl::OwnRtlError& e) {
            CHECK(std::string(e.what()).find("cannot run /nonexistent/verilator") != std::string::npos);
        }
    }
    unsetenv("SIMNIC_VERILATOR");
    CHECK(again.rtl_latency == 5);
    CHECK(again.out == cpp.out);
    CHECK(again.rtl_mismatch == 0);
}

TEST_CASE("parser: one's own RTL in a 32-byte datapath is built at DataWidth 256 and moves 32-byte beats",
          "[model][block][parser][rtl][own_rtl]") {
    // The slower worked example named in the config of a device with
    // mac.width_bytes = 32: verilated at -GDataWidth=256, its driver takes
    // 32 bytes a beat (the width of the model's s_axis_tdata_i), and the
    // stage's timing is its own cycles: ceil(len / 32) edges in, then its
    // 5. The cache is kept between runs (one build per design and width).
    namespace fs = std::filesystem;
    setenv("XDG_CACHE_HOME", (std::string(SIMNIC_OWN_RTL_TEST_CACHE) + "_w256").c_str(), 1);
    const std::string examples = std::string(SIMNIC_PARSER_RTL_DIR) + "/examples/";
    const std::vector<Stim> s = stimulus();
    ModelConfig cpp5, slow;
    cpp5.mac.width_bytes = slow.mac.width_bytes = 32;
    cpp5.mac.line_rate_gbps = slow.mac.line_rate_gbps = 50;  // within what 32 bytes at 250 MHz carry
    cpp5.parser.latency_cycles = 5;
    slow.parser.impl = BlockImpl::rtl;
    slow.parser.rtl_sources = {examples + "roce_parser_slow.sv"};
    slow.parser.rtl_top = "roce_parser_slow";

    // In the stage: every record the twin's, every frame out when the C++
    // twin at 32 bytes a beat and latency 5 has it out.
    const Result r = run(slow, s), cpp = run(cpp5, s);
    CHECK(r.rtl_mismatch == 0);
    CHECK(r.rtl_latency == 5);
    REQUIRE(r.out.size() == cpp.out.size());
    CHECK(r.out == cpp.out);
    CHECK(r.drops == cpp.drops);
    CHECK(r.busy_ps == cpp.busy_ps);

    // The design itself: a frame of 4066 bytes is 128 beats of 32 (the
    // last one 2 bytes), where the same design at 512 (built in) takes 64.
    const std::vector<uint8_t> f = tb::roce_frame(roce::op::RC_SEND_ONLY, 0x13, 102, 4008);
    REQUIRE(f.size() == 4066);
    uint64_t total = 0, in = 0, total512 = 0, in512 = 0;
    {
        tb::BlockBench<ParserBlock> b(slow);
        REQUIRE(b.nic().parser_rtl);
        CHECK(b.nic().parser_rtl_cache_hit);  // built by the run above
        CHECK(b.nic().parser_rtl->beat_bytes() == 32);
        const roce::HeaderVector hv = b.nic().parser_rtl->parse(f.data(), f.size(), &total, &in);
        CHECK(hv == roce::parse_header_vector(f.data(), f.size()));
    }
    rtl::RoceParserRtl wide(rtl::RoceParserRtl::Design::ExampleSlow);
    CHECK(wide.beat_bytes() == 64);
    wide.parse(f.data(), f.size(), &total512, &in512);
    CHECK(in == 128);
    CHECK(total == 128 + 5);
    CHECK(in512 == 64);
    CHECK(total512 == 64 + 5);

    // A device at 32 takes it; the same design built in (at 512) is refused,
    // with the way out.
    struct Nop final : Datapath {
        void exec_doorbell(const Doorbell&, OpRecord&) override {}
        void exec_rx(const uint8_t*, size_t, bool, OpRecord&, const roce::Packet*) override {}
        void rx_dropped(bool) override {}
        void exec_timer(uint32_t, uint8_t, OpRecord&) override {}
        void wire_tx(const uint8_t*, size_t) override {}
    } dp;
    std::string err;
    CHECK(Pipeline::create("own256", slow, dp, false, err) != nullptr);
    CHECK(err.empty());
    ModelConfig built_in = slow;
    built_in.parser.impl = BlockImpl::rtl_example_slow;
    built_in.parser.rtl_sources.clear();
    built_in.parser.rtl_top.clear();
    CHECK(Pipeline::create("builtin", built_in, dp, false, err) == nullptr);
    CHECK(err == "parser.impl = \"rtl_example_slow\": the Verilated parser moves 64 bytes per cycle (DataWidth 512), "
                 "the datapath mac.width_bytes = 32; set mac.width_bytes = 64 or name the RTL in parser.rtl_sources "
                 "and parser.rtl_top to build it at DataWidth 256 (docs/model.md, Your own RTL)");
}
#endif  // SIMNIC_HAVE_RTL_PARSER
