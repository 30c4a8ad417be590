// The pipeline's RX blocks (MAC RX, parser, ICRC check, RX transport) on
// kernel rxe's golden frames, with a stand-in datapath: what reaches the
// transport stage, what is dropped where, and that swapping the Verilated
// parser and ICRC engine in for their C++ twins changes neither the verdicts
// nor the timing.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "simnic/hw/layout.h"
#include "simnic/model/pipeline.h"
#include "simnic/roce/packet.h"
#include "simnic/roce/pcap_io.h"

using namespace simnic;

namespace {

struct FakeDatapath final : model::Datapath {
    std::vector<std::vector<uint8_t>> rx;
    std::vector<std::vector<uint8_t>> wire;
    void exec_doorbell(const model::Doorbell&, model::OpRecord&) override {}
    void exec_rx(const uint8_t* f, size_t n, model::OpRecord&) override { rx.emplace_back(f, f + n); }
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
    double drops_parser = 0, drops_parser_ip_length = 0, drops_icrc = 0, rtl_mismatch = 0;
};

Run run(model::BlockImpl impl, const std::vector<std::vector<uint8_t>>& frames) {
    model::ModelConfig cfg;
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
    if (impl == model::BlockImpl::rtl) r.rtl_mismatch = stat(*p, "rtl.parser_mismatches");
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
    for (size_t i = 0; i < good && i < cpp.rx.size(); ++i) CHECK(cpp.rx[i] == frames[i]);
    // Every frame crosses the MAC at line rate at least.
    CHECK(cpp.cycles > good);

    const Run rtl = run(model::BlockImpl::rtl, frames);
    CHECK(rtl.rx == cpp.rx);
    CHECK(rtl.drops_icrc == 1);
    CHECK(rtl.drops_parser == 1);
    CHECK(rtl.drops_parser_ip_length == 1);
    CHECK(rtl.rtl_mismatch == 0);
    // The RTL blocks replace their twins without changing the pipeline's timing.
    CHECK(rtl.cycles == cpp.cycles);
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
        void exec_rx(const uint8_t*, size_t, model::OpRecord&) override { log.push_back("rx"); }
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
