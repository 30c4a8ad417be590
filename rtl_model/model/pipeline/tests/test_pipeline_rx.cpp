// The pipeline's RX blocks (MAC RX, parser, ICRC check, RX transport) on
// kernel rxe's golden frames, with a stand-in datapath: what reaches the
// transport stage, what is dropped where, and that swapping the Verilated
// parser and ICRC engine in for their C++ twins changes no verdict, and
// that their timing is then their own cycles.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "simnic/hw/layout.h"
#include "simnic/model/pipeline.h"
#include "simnic/roce/header_vector.h"
#include "simnic/roce/opcode.h"
#include "simnic/roce/packet.h"
#include "simnic/roce/pcap_io.h"

using namespace simnic;

namespace {

struct FakeDatapath final : model::Datapath {
    std::vector<std::vector<uint8_t>> rx;
    std::vector<std::vector<uint8_t>> wire;
    void exec_doorbell(const model::Doorbell&, model::OpRecord&) override {}
    void exec_rx(const uint8_t* f, size_t n, bool, model::OpRecord&, const roce::Packet*) override { rx.emplace_back(f, f + n); }
    void rx_dropped(bool bad_icrc) override { ++(bad_icrc ? dropped_icrc : dropped_hdr); }
    uint64_t dropped_hdr = 0, dropped_icrc = 0;
    void exec_timer(uint32_t, uint8_t, model::OpRecord&) override {}
    void wire_tx(const uint8_t* f, size_t n) override { wire.emplace_back(f, f + n); }
};

// A golden capture at MTU 4096 of a reference kernel ("6.1", "6.12").
std::vector<std::vector<uint8_t>> golden(const std::string& kernel, const char* name) {
    std::string err;
    auto r = roce::PcapReader::open(std::string(SIMNIC_GOLDEN_DIR) + "/" + kernel + "/mtu4096/" + name, err);
    REQUIRE(r);
    std::vector<std::vector<uint8_t>> out;
    roce::PcapRecord rec;
    // The RoCE frames (the captures also hold the tools' TCP exchange).
    while (r->next(rec)) {
        roce::Packet p;
        if (roce::decode_frame(rec.data.data(), rec.data.size(), p).ok()) out.push_back(rec.data);
    }
    return out;
}

double stat(const model::Pipeline& p, const std::string& name) {
    for (const model::ModelStat& s : p.stats())
        if (s.name == name) return s.value;
    FAIL("no statistic " << name);
    return 0;
}

struct Run {
    std::vector<std::vector<uint8_t>> rx;
    uint64_t cycles = 0;
    double drops_parser = 0, drops_parser_ip_length = 0, drops_icrc = 0, rtl_mismatch = 0, rtl_icrc_rx_mismatch = 0;
    uint64_t told_hdr = 0, told_icrc = 0;  // the drops the datapath was told of (its stats block's)
};

Run run(model::BlockImpl impl, const std::vector<std::vector<uint8_t>>& frames, uint32_t parser_latency = 4) {
    model::ModelConfig cfg;
    cfg.parser.latency_cycles = parser_latency;
    cfg.parser.impl = impl;
    cfg.icrc.impl = impl;
    FakeDatapath be;
    std::string err;
    auto p = model::Pipeline::create("tb", cfg, be, false, err);
    REQUIRE(p);
    for (const auto& f : frames) p->rx_frame(f.data(), f.size());
    Run r;
    r.cycles = p->run();
    r.rx = be.rx;
    r.drops_parser = stat(*p, "rx.drops_parser");
    r.drops_parser_ip_length = stat(*p, "rx.drops_parser.ip_length");
    r.drops_icrc = stat(*p, "rx.drops_icrc");
    r.told_hdr = be.dropped_hdr;
    r.told_icrc = be.dropped_icrc;
    if (impl == model::BlockImpl::rtl) {
        r.rtl_mismatch = stat(*p, "rtl.parser_mismatches");
        r.rtl_icrc_rx_mismatch = stat(*p, "rtl.icrc_rx_mismatches");
    }
    return r;
}

}  // namespace

TEST_CASE("pipeline RX: golden frames reach the transport stage, bad ones are dropped where they fail",
          "[model][pipeline]") {
    const std::string kernel = GENERATE("6.1", "6.12");
    INFO("kernel " << kernel);
    std::vector<std::vector<uint8_t>> frames = golden(kernel, "rc_pingpong_s10000.pcap");
    REQUIRE(frames.size() > 20);
    const size_t good = frames.size();
    std::vector<uint8_t> bad_icrc = frames[3];
    bad_icrc[bad_icrc.size() - 10] ^= 0x5A;  // payload byte: only the ICRC can tell
    std::vector<uint8_t> truncated(frames[4].begin(), frames[4].begin() + 40);  // ends inside the UDP header
    frames.push_back(bad_icrc);
    frames.push_back(truncated);

    const Run cpp = run(model::BlockImpl::cpp, frames);
    CHECK(cpp.rx.size() == good);
    CHECK(cpp.drops_icrc == 1);
    CHECK(cpp.drops_parser == 1);
    CHECK(cpp.drops_parser_ip_length == 1);  // the IP header says there is more
    // The engine hears of each drop, for the device's rx_drops_bad_hdr and
    // icrc_errors (what `simnic stats` shows for a soft device too).
    CHECK(cpp.told_hdr == 1);
    CHECK(cpp.told_icrc == 1);
    // The responder (requests) and the completer (responses) are stages of
    // their own: each takes its packets in arrival order, and the two may
    // interleave otherwise (a QPC miss holds up only its own stage).
    auto of_role = [](const std::vector<std::vector<uint8_t>>& v, size_t n, bool request) {
        std::vector<std::vector<uint8_t>> out;
        for (size_t i = 0; i < n && i < v.size(); ++i) {
            const roce::HeaderVector hv = roce::parse_header_vector(v[i].data(), v[i].size());
            if (hv.accepted() && roce::opcode_info(hv.opcode).has(roce::kRequest) == request) out.push_back(v[i]);
        }
        return out;
    };
    for (const bool request : {true, false}) {
        INFO((request ? "requests" : "responses"));
        CHECK(of_role(cpp.rx, cpp.rx.size(), request) == of_role(frames, good, request));
    }
    // Every frame crosses the MAC at line rate at least.
    CHECK(cpp.cycles > good);

    const Run rtl = run(model::BlockImpl::rtl, frames);
    CHECK(rtl.rx == cpp.rx);
    CHECK(rtl.drops_icrc == 1);
    CHECK(rtl.drops_parser == 1);
    CHECK(rtl.drops_parser_ip_length == 1);
    CHECK(rtl.told_hdr == 1);
    CHECK(rtl.told_icrc == 1);
    CHECK(rtl.rtl_mismatch == 0);
    CHECK(rtl.rtl_icrc_rx_mismatch == 0);  // the bad ICRC included: both drop it
    // The RTL blocks bring their own timing: the parser's 3 cycles of
    // latency, not the configured 4 (the ICRC engine's 7 are the default).
    CHECK(rtl.cycles != cpp.cycles);
    CHECK(rtl.cycles == run(model::BlockImpl::cpp, frames, 3).cycles);
}

TEST_CASE("pipeline: a Verilated block in a datapath of another width is refused, with the way out",
          "[model][pipeline][rtl]") {
    FakeDatapath be;
    std::string err;
    model::ModelConfig cfg;
    cfg.mac.width_bytes = 32;
    cfg.mac.line_rate_gbps = 50;  // within what 32 bytes at 250 MHz carry
    cfg.icrc.impl = model::BlockImpl::rtl;
    CHECK(!model::Pipeline::create("tb", cfg, be, false, err));
    CHECK(err == "icrc.impl = \"rtl\": the Verilated ICRC engine moves 64 bytes per cycle (DataWidth 512), the "
                 "datapath mac.width_bytes = 32; set mac.width_bytes = 64 or name the RTL in icrc.rtl_sources and "
                 "icrc.rtl_top to build it at DataWidth 256 (docs/model.md, Your own RTL)");
    cfg.icrc.impl = model::BlockImpl::cpp;
    cfg.parser.impl = model::BlockImpl::rtl;
    err.clear();
    CHECK(!model::Pipeline::create("tb", cfg, be, false, err));
    CHECK(err.find("parser.impl = \"rtl\"") == 0);  // no RTL parser, or its width
    cfg.mac.width_bytes = 64;
    cfg.icrc.impl = model::BlockImpl::rtl;
    err.clear();
    CHECK(model::Pipeline::create("tb", cfg, be, false, err) != nullptr);
    CHECK(err.empty());
}

TEST_CASE("pipeline: two devices simulate independently in one process", "[model][pipeline]") {
    const std::string kernel = GENERATE("6.1", "6.12");
    INFO("kernel " << kernel);
    const std::vector<std::vector<uint8_t>> frames = golden(kernel, "rc_pingpong.pcap");
    model::ModelConfig slow;
    slow.mac.line_rate_gbps = 10;
    FakeDatapath a, b;
    std::string err;
    auto pa = model::Pipeline::create("a", model::ModelConfig{}, a, false, err);
    auto pb = model::Pipeline::create("b", slow, b, false, err);
    REQUIRE(pa);
    REQUIRE(pb);
    for (const auto& f : frames) {
        pa->rx_frame(f.data(), f.size());
        pb->rx_frame(f.data(), f.size());
    }
    const uint64_t ca = pa->run(), cb = pb->run();
    CHECK(a.rx.size() == frames.size());
    CHECK(b.rx.size() == frames.size());
    // The slower line takes longer in simulated time; each kept its own clock.
    CHECK(cb > ca);
    CHECK(pa->cycle() == ca);
    CHECK(pb->cycle() == cb);
}

namespace {
bool has_stat(const model::Pipeline& p, const std::string& name) {
    for (const model::ModelStat& s : p.stats())
        if (s.name == name) return true;
    return false;
}
}  // namespace

TEST_CASE("pipeline: the time a frame spends in each stage adds up to its time through the device",
          "[model][pipeline][stats]") {
    const std::vector<std::vector<uint8_t>> frames = golden("6.1", "rc_pingpong_s10000.pcap");
    const std::vector<uint8_t>& f = frames[5];
    model::ModelConfig cfg;
    FakeDatapath be;
    std::string err;
    auto p = model::Pipeline::create("tb", cfg, be, false, err);
    REQUIRE(p);
    p->rx_frame(f.data(), f.size());
    const uint64_t cycles = p->run();
    const double P = cfg.clock_period_ps() / 1000.0;  // ns
    const double beats = cfg.beats(uint32_t(f.size()));
    // MAC RX: the longer of its beats and its time on the line.
    CHECK(stat(*p, "stage.mac_rx.median") == Approx(std::max(beats * P, cfg.line_time_ps(uint32_t(f.size())) / 1000)).margin(0.001));
    // Parser and ICRC check: the frame's beats and their latency.
    CHECK(stat(*p, "stage.parser.median") == Approx((beats + cfg.parser.latency_cycles) * P));
    CHECK(stat(*p, "stage.icrc_check.median") == Approx((beats + cfg.icrc.latency_cycles) * P));
    for (const char* s : {"mac_rx", "parser", "icrc_check"}) CHECK(stat(*p, std::string("stage.") + s + ".samples") == 1);
    // The transport stage: a frame to a QP whose context misses the cache.
    const std::string transport = has_stat(*p, "stage.responder.median") ? "responder" : "completer";
    CHECK(stat(*p, "stage." + transport + ".median") > cfg.dma.read_latency_ns);
    // Along its path the stages add up to its time through the device.
    const double sum = stat(*p, "stage.mac_rx.median") + stat(*p, "stage.parser.median") +
                       stat(*p, "stage.icrc_check.median") + stat(*p, "stage." + transport + ".median");
    CHECK(sum == Approx(double(cycles) * P).margin(P));
    // A stage no item passed is not listed.
    CHECK_FALSE(has_stat(*p, "stage.mac_tx.samples"));
}

TEST_CASE("pipeline: with cut-through the parser and ICRC check overlap the frame's arrival, and still add up",
          "[model][pipeline][stats][cut_through]") {
    const std::vector<std::vector<uint8_t>> frames = golden("6.1", "rc_pingpong_s10000.pcap");
    const std::vector<uint8_t>& f = frames[5];
    model::ModelConfig cfg;
    const double P = cfg.clock_period_ps() / 1000.0;  // ns
    const double beats = cfg.beats(uint32_t(f.size()));
    REQUIRE(beats > 2);
    uint64_t cycles[2] = {};
    for (uint32_t ct : {0u, 1u}) {
        cfg.pipeline.cut_through = ct;
        FakeDatapath be;
        std::string err;
        auto p = model::Pipeline::create("tb", cfg, be, false, err);
        REQUIRE(p);
        p->rx_frame(f.data(), f.size());
        cycles[ct] = p->run();
        if (!ct) continue;
        // From a real wire the frame came whole: MAC RX still takes its
        // line time. The parser and the ICRC check started on its first
        // beat: each adds one cycle to its last beat, the ICRC check its
        // latency for the verdict.
        CHECK(stat(*p, "stage.mac_rx.median") ==
              Approx(std::max(beats * P, cfg.line_time_ps(uint32_t(f.size())) / 1000)).margin(0.001));
        CHECK(stat(*p, "stage.parser.median") == Approx(P));
        CHECK(stat(*p, "stage.icrc_check.median") == Approx((1 + cfg.icrc.latency_cycles) * P));
        const std::string transport = has_stat(*p, "stage.responder.median") ? "responder" : "completer";
        const double sum = stat(*p, "stage.mac_rx.median") + stat(*p, "stage.parser.median") +
                           stat(*p, "stage.icrc_check.median") + stat(*p, "stage." + transport + ".median");
        CHECK(sum == Approx(double(cycles[1]) * P).margin(P));
    }
    // What cut-through took off: the parser's and the ICRC check's beats
    // (but one cycle each) and the parser's latency (its header vector is
    // out long before the verdict).
    CHECK(double(cycles[0] - cycles[1]) == Approx(2 * (beats - 1) + cfg.parser.latency_cycles).margin(1));
}

TEST_CASE("pipeline: statistics reset, a waveform cannot start in the past", "[model][pipeline][stats][trace]") {
    const std::vector<std::vector<uint8_t>> frames = golden("6.1", "rc_pingpong.pcap");
    FakeDatapath be;
    std::string err;
    auto p = model::Pipeline::create("tb", model::ModelConfig{}, be, false, err);
    REQUIRE(p);
    for (const auto& f : frames) p->rx_frame(f.data(), f.size());
    const uint64_t cycles = p->run();
    REQUIRE(cycles > 100);
    CHECK(stat(*p, "sim.stats_cycles") == double(cycles));
    CHECK(stat(*p, "chan.mac_rx_to_parser.transfers") == double(frames.size()));
    CHECK(stat(*p, "block.parser.utilisation") > 0);

    p->reset_stats();
    CHECK(stat(*p, "sim.cycles") == double(cycles));  // the clock runs on
    CHECK(stat(*p, "sim.stats_cycles") == 0);
    CHECK(stat(*p, "block.parser.items") == 0);
    CHECK(stat(*p, "block.parser.utilisation") == 0);
    CHECK(stat(*p, "chan.mac_rx_to_parser.transfers") == 0);
    CHECK(stat(*p, "mac.rx_frames") == 0);
    CHECK_FALSE(has_stat(*p, "stage.parser.samples"));
    // Figures after a reset cover the time since it.
    p->rx_frame(frames[0].data(), frames[0].size());
    const uint64_t more = p->run();
    CHECK(stat(*p, "sim.stats_cycles") == double(more));
    CHECK(stat(*p, "block.mac_rx.items") == 1);
    CHECK(stat(*p, "stage.parser.samples") == 1);

    const std::string path = "/tmp/simnic-pipeline-trace-" + std::to_string(getpid()) + ".vcd";
    const uint64_t now = p->cycle();
    CHECK_FALSE(p->trace(path, "vcd", 10, 100, err));
    CHECK(err == "--from 10: the device is at cycle " + std::to_string(now) +
                     " already, and a waveform cannot start in the past (leave --from out to start now, or give a "
                     "cycle from " +
                     std::to_string(now) + " on)");
    CHECK(p->trace_state() == "idle");
    REQUIRE(p->trace(path, "vcd", now + 5, 100, err));
    CHECK(p->trace_state() ==
          "armed " + path + " cycles " + std::to_string(now + 5) + ".." + std::to_string(now + 105));
    REQUIRE(p->trace(path, "vcd", std::nullopt, 100, err));  // now
    CHECK(p->trace_state() == "armed " + path + " cycles " + std::to_string(now) + ".." + std::to_string(now + 100));
    p->trace_stop();
    CHECK(p->trace_state() == "done " + path);
    std::remove(path.c_str());
}

namespace {
// A datapath that answers every received frame with a 60-byte frame to the
// wire (as an ACK would go), and records when frames reach the wire.
struct AnsweringDatapath final : model::Datapath {
    std::vector<uint64_t> wire_at_cycle;
    const model::Pipeline* p = nullptr;
    void exec_doorbell(const model::Doorbell&, model::OpRecord&) override {}
    void exec_rx(const uint8_t*, size_t, bool, model::OpRecord& rec, const roce::Packet*) override {
        model::TxFrameRec f;
        f.bytes.assign(60, 0x5A);
        f.opcode = 0x11;  // RC ACKNOWLEDGE: a response, TX build's first queue
        rec.add(model::Op::Kind::TxFrame, 0, 60, uint32_t(rec.frames.size()));
        rec.frames.push_back(std::move(f));
    }
    void rx_dropped(bool) override {}
    void exec_timer(uint32_t, uint8_t, model::OpRecord&) override {}
    void wire_tx(const uint8_t*, size_t) override { wire_at_cycle.push_back(p->cycle()); }
};
}  // namespace

TEST_CASE("pipeline: a device with a wire simulates in quanta, and stops where frames left for it",
          "[model][pipeline][quantum]") {
    const std::vector<std::vector<uint8_t>> frames = golden("6.1", "rc_pingpong.pcap");
    auto make = [&](uint32_t quantum, AnsweringDatapath& be) {
        model::ModelConfig cfg;
        cfg.wire.quantum_cycles = quantum;
        std::string err;
        auto p = model::Pipeline::create("tb", cfg, be, false, err);
        REQUIRE(p);
        be.p = p.get();
        return p;
    };
    // Until idle at once: the reference.
    AnsweringDatapath ref_be;
    auto ref = make(0, ref_be);
    for (const auto& f : frames) ref->rx_frame(f.data(), f.size());
    CHECK_FALSE(ref->run_quantum());
    REQUIRE(ref_be.wire_at_cycle.size() == frames.size());

    // In quanta of 16 cycles (a QPC miss alone takes 150): the engine's loop.
    AnsweringDatapath be;
    auto p = make(16, be);
    for (const auto& f : frames) p->rx_frame(f.data(), f.size());
    size_t calls = 0, returned_after_frames = 0;
    for (bool more = true; more; ++calls) {
        const size_t before = be.wire_at_cycle.size();
        more = p->run_quantum();
        if (be.wire_at_cycle.size() > before) {
            // It stopped at the end of the quantum in which the frame left.
            CHECK(p->cycle() - be.wire_at_cycle.back() < 16);
            ++returned_after_frames;
        }
        REQUIRE(calls < 100000);
    }
    // Nothing came in between: the same simulation, cut into pieces.
    CHECK(be.wire_at_cycle == ref_be.wire_at_cycle);
    CHECK(p->cycle() == ref->cycle());
    CHECK(returned_after_frames >= 1);
    CHECK(calls > 1);
    CHECK(stat(*p, "wire.quantum_cycles") == 16);
    CHECK(stat(*p, "wire.quanta") >= double(calls));

    // Work that never reaches the wire runs to the end in one call, however
    // far its events lie beyond a quantum.
    AnsweringDatapath fw_be;
    auto q = make(16, fw_be);
    for (int i = 0; i < 5; ++i) q->fw_command(0x51);
    CHECK_FALSE(q->run_quantum());
    CHECK(q->cycle() == 5 * 1000);  // 5 commands of 4 us at 250 MHz
}

TEST_CASE("pipeline: a receive doorbell takes effect before a frame that comes after it",
          "[model][pipeline]") {
    // The RX path reads a QP's RQ producer index when a packet arrives; a
    // doorbell rung before the packet came must be in it, even with the
    // doorbell block busy with a queue of other doorbells (here 32 SQ
    // doorbells of distinct QPs, each a QPC miss). Else a UD or UC SEND
    // meets an empty RQ and is dropped (found by simnic-workload).
    struct Ordered final : model::Datapath {
        std::vector<std::string> log;
        void exec_doorbell(const model::Doorbell& db, model::OpRecord&) override {
            log.push_back(db.kind == uint8_t(hw::DbKind::Rq) ? "rq" : "db");
        }
        void exec_rx(const uint8_t*, size_t, bool, model::OpRecord&, const roce::Packet*) override { log.push_back("rx"); }
        void rx_dropped(bool) override {}
        void exec_timer(uint32_t, uint8_t, model::OpRecord&) override {}
        void wire_tx(const uint8_t*, size_t) override {}
    } be;
    model::ModelConfig cfg;
    std::string err;
    auto p = model::Pipeline::create("tb", cfg, be, false, err);
    REQUIRE(p);
    for (uint32_t q = 0; q < 32; ++q) p->doorbell(model::Doorbell{0, uint8_t(hw::DbKind::Sq), 100 + q, 1, 0});
    p->doorbell(model::Doorbell{0, uint8_t(hw::DbKind::Rq), 17, 1, 0});
    const auto frames = golden("6.1", "ud_pingpong.pcap");
    REQUIRE(!frames.empty());
    p->rx_frame(frames[0].data(), frames[0].size());
    p->run();
    const auto rq = std::find(be.log.begin(), be.log.end(), "rq");
    const auto rx = std::find(be.log.begin(), be.log.end(), "rx");
    REQUIRE(rq != be.log.end());
    REQUIRE(rx != be.log.end());
    CHECK(rq < rx);
    // Executed once, not again when the block reaches it.
    CHECK(std::count(be.log.begin(), be.log.end(), "rq") == 1);
    CHECK(std::count(be.log.begin(), be.log.end(), "db") == 32);
}
