// The ICRC check alone: a frame starts when the parser's result is out (its
// ready time), moves on ceil(L / W) cycles later with its verdict ready
// icrc.latency_cycles after that; a frame with one payload bit flipped, or a
// wrong ICRC, is dropped and counted (and still costs its beats); the
// Verilated engine gives the same verdicts, with its own cycles as the
// stage's timing, and a verdict of the RTL that differs from the C++ one
// is counted and dumped with its frame.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "block_harness.h"
#include "blocks/icrc_check.h"

using namespace simnic;
using namespace simnic::model;

namespace {

struct Stim {
    uint64_t ready_ps;  // when the parser's header vector is out
    std::vector<uint8_t> frame;
    bool good;
};

std::vector<Stim> stimulus(uint64_t period) {
    using namespace roce::op;
    std::vector<Stim> s;
    s.push_back({0, tb::roce_frame(RC_RDMA_WRITE_ONLY, 0x11, 1, 1024), true});
    std::vector<uint8_t> flipped = tb::roce_frame(RC_RDMA_WRITE_ONLY, 0x11, 2, 1024);
    flipped[flipped.size() - 4 - 500] ^= 0x08;  // one payload bit
    s.push_back({0, flipped, false});
    // Its parser result is late: the check waits for it.
    s.push_back({1000 * period + 17, tb::roce_frame(RC_SEND_ONLY, 0x12, 3, 2000), true});
    std::vector<uint8_t> bad_icrc = tb::roce_frame(RC_ACKNOWLEDGE, 0x13, 4, 0);
    bad_icrc.back() ^= 0xFF;  // the ICRC itself
    s.push_back({0, bad_icrc, false});
    s.push_back({0, tb::roce_frame(RC_ACKNOWLEDGE, 0x13, 5, 0), true});
    return s;
}

struct Result {
    std::vector<tb::Seen<std::vector<uint8_t>>> out;
    std::vector<uint64_t> ready;
    std::vector<bool> icrc_good;  // what the check told the datapath (exec_rx need not check again)
    uint64_t drops = 0, busy_ps = 0, items = 0, rtl_mismatch = 0, rtl_latency = 0;
    std::vector<std::string> dumps;
};

Result run(const ModelConfig& cfg, const std::vector<Stim>& s) {
    tb::BlockBench<IcrcCheckBlock> b(cfg);
    std::vector<std::pair<uint64_t, TxnPtr>> in;
    for (const Stim& x : s) in.emplace_back(0, tb::rx_txn(x.frame, x.ready_ps));
    b.drive(b.nic().parser_to_icrc, std::move(in));
    const auto& seen = b.watch(b.nic().rx_in);
    b.run();
    Result r;
    for (const auto& o : seen) {
        r.out.push_back({o.t_ps, o.item->frame});
        r.ready.push_back(o.item->ready_ps);
        r.icrc_good.push_back(o.item->icrc_good);
    }
    r.drops = b.nic().rx_drops_icrc;
    r.busy_ps = b.nic().blk[Nic::kIcrcCheck].busy_ps;
    r.items = b.nic().blk[Nic::kIcrcCheck].items;
    r.rtl_mismatch = b.nic().icrc_rx_rtl_mismatch;
    r.rtl_latency = b.nic().icrc_rtl_latency;
    r.dumps = b.nic().rtl_mismatch_log;
    return r;
}

}  // namespace

TEST_CASE("icrc_check: good frames pass after their beats, bad ICRCs are dropped", "[model][block][icrc_check]") {
    for (uint32_t latency : {7u, 0u, 20u}) {
        ModelConfig cfg;
        cfg.icrc.latency_cycles = latency;
        INFO("icrc.latency_cycles = " << latency);
        const uint64_t period = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
        const std::vector<Stim> s = stimulus(period);
        const Result r = run(cfg, s);

        std::vector<uint64_t> want_t, want_ready;
        std::vector<std::vector<uint8_t>> want_frames;
        uint64_t t = 0, busy = 0, bad = 0;
        for (const Stim& x : s) {
            const uint64_t beats = (x.frame.size() + cfg.mac.width_bytes - 1) / cfg.mac.width_bytes * period;
            t = std::max(t, x.ready_ps) + beats;  // waits for the parser's result, then streams
            busy += beats;
            if (x.good) {
                want_t.push_back(t);
                want_ready.push_back(t + latency * period);
                want_frames.push_back(x.frame);
            } else {
                ++bad;
            }
        }
        REQUIRE(r.out.size() == want_t.size());
        for (size_t i = 0; i < want_t.size(); ++i) {
            INFO("good frame " << i);
            CHECK(r.out[i].t_ps == want_t[i]);
            CHECK(r.ready[i] == want_ready[i]);
            CHECK(r.out[i].item == want_frames[i]);
        }
        // Every frame it passed had its ICRC checked and right, so the
        // datapath is told it need not compute it again.
        CHECK(r.icrc_good == std::vector<bool>(want_t.size(), true));
        CHECK(r.drops == bad);
        CHECK(r.drops == 2);
        CHECK(r.items == s.size());
        CHECK(r.busy_ps == busy);
    }
}

TEST_CASE("icrc_check: the Verilated ICRC engine gives the C++ verdicts, with its own cycles as the timing",
          "[model][block][icrc_check][rtl]") {
    // The engine at DataWidth 512 answers 7 edges after a frame's last beat
    // (icrc_engine.sv: Latency = log2(64) + 1). With impl = rtl the
    // configured latency is not used: 20 here changes nothing.
    ModelConfig cpp_cfg, rtl_cfg;
    cpp_cfg.icrc.latency_cycles = 7;
    rtl_cfg.icrc.impl = BlockImpl::rtl;
    rtl_cfg.icrc.latency_cycles = 20;
    const std::vector<Stim> s = stimulus(uint64_t(1e6 / cpp_cfg.clock.freq_mhz + 0.5));
    const Result cpp = run(cpp_cfg, s);
    const Result rtl = run(rtl_cfg, s);
    REQUIRE(rtl.out.size() == cpp.out.size());
    for (size_t i = 0; i < cpp.out.size(); ++i) {
        CHECK(rtl.out[i].t_ps == cpp.out[i].t_ps);
        CHECK(rtl.out[i].item == cpp.out[i].item);
    }
    CHECK(rtl.ready == cpp.ready);
    CHECK(rtl.icrc_good == cpp.icrc_good);
    CHECK(rtl.drops == cpp.drops);
    CHECK(rtl.busy_ps == cpp.busy_ps);
    CHECK(rtl.rtl_latency == 7);
    CHECK(rtl.rtl_mismatch == 0);  // bad ICRCs included: both say bad
    CHECK(rtl.dumps.empty());
    // And the configured latency does move the C++ model's timing.
    cpp_cfg.icrc.latency_cycles = 20;
    CHECK(run(cpp_cfg, s).ready != rtl.ready);
}

TEST_CASE("icrc_check: an RTL verdict that differs from the C++ one is counted and dumped with its frame",
          "[model][block][icrc_check][rtl]") {
    // A frame the two judge differently: one that is not IP at all (the
    // parser drops such frames before the check in the pipeline). The RTL
    // flags it (m_err_o: bad), the C++ decoder fails it for another reason
    // than the ICRC (good, as far as the ICRC goes).
    ModelConfig cfg;
    cfg.icrc.impl = BlockImpl::rtl;
    std::vector<uint8_t> not_ip = tb::roce_frame(roce::op::RC_SEND_ONLY, 0x21, 7, 100);
    not_ip[12] = 0x88, not_ip[13] = 0xB5;
    const std::vector<Stim> s = {{0, tb::roce_frame(roce::op::RC_SEND_ONLY, 0x21, 6, 100), true}, {0, not_ip, false}};
    const Result r = run(cfg, s);
    CHECK(r.out.size() == 1);  // the pipeline follows the RTL's verdict
    // The C++ check alone lets the frame by (its ICRC is not what fails
    // it), but does not tell the datapath its ICRC was checked: the
    // datapath decodes it in full, and drops it there.
    const Result c = run(ModelConfig{}, s);
    CHECK(c.out.size() == 2);
    CHECK(c.icrc_good == std::vector<bool>{true, false});
    CHECK(r.rtl_mismatch == 1);
    REQUIRE(r.dumps.size() == 1);
    CHECK(r.dumps[0].find("icrc_check") == 0);
    CHECK(r.dumps[0].find("RTL verdict bad, C++ verdict good") != std::string::npos);
    CHECK(r.dumps[0].find("(" + std::to_string(not_ip.size()) + " bytes)") != std::string::npos);
    CHECK(r.dumps[0].find(" 88 b5") != std::string::npos);  // the frame itself
}

TEST_CASE("icrc_check: with cut-through it starts on the first beat, and a bad ICRC still stops the frame",
          "[model][block][icrc_check]") {
    using namespace roce::op;
    ModelConfig cfg;
    cfg.pipeline.cut_through = 1;
    const uint64_t P = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
    const uint64_t L = cfg.icrc.latency_cycles;
    // Each frame's first beat is there at head, its last (streamed in at the
    // line's pace, slower than the datapath's) at tail, its header vector
    // at hdr.
    struct In {
        uint64_t head, tail, hdr;
        std::vector<uint8_t> frame;
        bool good;
    };
    std::vector<In> s;
    s.push_back({100 * P, 200 * P, 104 * P, tb::roce_frame(RC_RDMA_WRITE_ONLY, 0x11, 1, 4096), true});
    std::vector<uint8_t> flipped = tb::roce_frame(RC_RDMA_WRITE_ONLY, 0x11, 2, 4096);
    flipped[flipped.size() - 4 - 500] ^= 0x08;
    s.push_back({300 * P, 400 * P, 304 * P, flipped, false});
    // A frame whose beats all came long before its header vector: the
    // verdict waits for the header vector.
    s.push_back({500 * P, 500 * P, 600 * P, tb::roce_frame(RC_ACKNOWLEDGE, 0x13, 3, 0), true});
    tb::BlockBench<IcrcCheckBlock> b(cfg);
    std::vector<std::pair<uint64_t, TxnPtr>> in;
    for (const In& x : s) {
        TxnPtr t = tb::rx_txn(x.frame, x.tail);
        t->head_ps = x.head;
        t->hdr_ps = x.hdr;
        in.emplace_back(x.head, t);
    }
    b.drive(b.nic().parser_to_icrc, std::move(in));
    const auto& seen = b.watch(b.nic().rx_in);
    b.run();
    REQUIRE(seen.size() == 2);
    CHECK(b.nic().rx_drops_icrc == 1);
    CHECK(seen[0].item->frame == s[0].frame);
    CHECK(seen[1].item->frame == s[2].frame);
    // Started at the first beat; its own beats (65) end before the last
    // one comes, so the verdict is a cycle after the last beat + latency.
    const uint64_t beats0 = cfg.beats(uint32_t(s[0].frame.size()));
    REQUIRE(100 * P + beats0 * P < 200 * P);
    CHECK(seen[0].item->ready_ps == 200 * P + P + L * P);
    // The ACK: its beats were all there, its verdict waits for its header
    // vector. (The bad frame between them went nowhere.)
    CHECK(seen[1].item->ready_ps == 600 * P);
    CHECK(seen[1].t_ps <= seen[1].item->ready_ps);
}
