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

TEST_CASE("icrc_check: with icrc.impl = rtl a full queue to the RX transport holds the frame back from the "
          "engine, which has no output ready, and the held edges are the stall",
          "[model][block][icrc_check][rtl][backpressure]") {
    // 18 good ACKs of b beats, all there at 0; the RX transport (the
    // monitor) takes nothing before `open`. Frames 0..15 fill the queue
    // (16 entries); frame 16 would be offered to the engine at 16b cycles
    // with the queue full: s_axis_tvalid_i stays low on the 41 edges before
    // `open` and it is offered on the first after. Frames 16 and 17 go on
    // exactly 41 cycles later than with room, verdicts unchanged; the 41
    // edges are the stage's stall and counted in icrc_rtl_ready_low. The
    // C++ engine, which needs no such care, checks frame 16 at once and
    // hands it on at `open` (its write was blocked), as before.
    using namespace roce::op;
    const ModelConfig base;
    const uint64_t P = uint64_t(1e6 / base.clock.freq_mhz + 0.5);
    std::vector<std::vector<uint8_t>> frames;
    for (uint32_t k = 0; k < 18; ++k) frames.push_back(tb::roce_frame(RC_ACKNOWLEDGE, 0x13, 10 + k, 0));
    const uint64_t b = base.beats(uint32_t(frames[0].size()));
    const uint64_t open = (16 * b + 40) * P + 11, low = 41;
    struct Run {
        std::vector<uint64_t> t, ready, psn;
        uint64_t held = 0, stall_ps = 0, mismatches = 0, depth = 0;
    };
    auto run_from = [&](const ModelConfig& cfg, uint64_t from) {
        tb::BlockBench<IcrcCheckBlock> bench(cfg);
        Run r;
        r.depth = bench.nic().rx_in.depth();
        std::vector<std::pair<uint64_t, TxnPtr>> in;
        for (const auto& f : frames) in.emplace_back(0, tb::rx_txn(f));
        bench.drive(bench.nic().parser_to_icrc, std::move(in));
        const auto& seen = bench.watch(bench.nic().rx_in, from);
        bench.run();
        for (const auto& o : seen) {
            r.t.push_back(o.t_ps);
            r.ready.push_back(o.item->ready_ps);
            const uint8_t* bth = o.item->frame.data() + 14 + 20 + 8;  // Ethernet, IPv4, UDP
            r.psn.push_back(uint64_t(bth[9]) << 16 | uint64_t(bth[10]) << 8 | bth[11]);
        }
        r.held = bench.nic().icrc_rtl_ready_low;
        r.stall_ps = bench.nic().blk[Nic::kIcrcCheck].stall_ps;
        r.mismatches = bench.nic().icrc_rx_rtl_mismatch;
        return r;
    };
    for (int cut : {0, 1}) {
        INFO((cut ? "cut-through" : "store-and-forward"));
        ModelConfig cfg = base, cpp_cfg = base;
        cfg.pipeline.cut_through = cpp_cfg.pipeline.cut_through = uint32_t(cut);
        cfg.icrc.impl = BlockImpl::rtl;
        const Run free = run_from(cfg, 0), full = run_from(cfg, open), cpp = run_from(cpp_cfg, open);
        REQUIRE(full.depth == 16);  // what the timeline assumes
        REQUIRE(free.t.size() == 18);
        REQUIRE(full.t.size() == 18);
        REQUIRE(cpp.t.size() == 18);
        CHECK(free.held == 0);
        CHECK(free.stall_ps == 0);
        CHECK(full.held == low);
        CHECK(full.stall_ps == low * P);
        CHECK(cpp.held == 0);
        CHECK(full.mismatches == 0);
        for (size_t k = 0; k < 18; ++k) {
            INFO("frame " << k);
            CHECK(full.psn[k] == 10 + k);  // in order, none lost
            const uint64_t shift = k < 16 ? 0 : low * P;
            CHECK(full.t[k] == std::max(open, free.t[k] + shift));
            CHECK(full.ready[k] == free.ready[k] + shift);
        }
        CHECK(cpp.t[16] == open);  // checked at once, handed on when the queue had room
    }
}

TEST_CASE("icrc_check: placing before the verdict, a SEND or WRITE goes on with its header vector and carries "
          "its verdict, other frames wait for theirs",
          "[model][block][icrc_check][cut_through][place_before_verdict]") {
    using namespace roce::op;
    ModelConfig cfg;
    cfg.pipeline.cut_through = 1;
    cfg.pipeline.place_before_verdict = 1;
    const uint64_t P = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
    const uint64_t L = cfg.icrc.latency_cycles;
    struct In {
        uint64_t head, tail, hdr;
        uint8_t opcode;
        std::vector<uint8_t> frame;
    };
    std::vector<In> s;
    s.push_back({100 * P, 200 * P, 104 * P, RC_RDMA_WRITE_ONLY, tb::roce_frame(RC_RDMA_WRITE_ONLY, 0x11, 1, 4096)});
    std::vector<uint8_t> flipped = tb::roce_frame(RC_SEND_ONLY, 0x11, 2, 4096);
    flipped[flipped.size() - 4 - 500] ^= 0x08;
    s.push_back({300 * P, 400 * P, 304 * P, RC_SEND_ONLY, flipped});
    s.push_back({500 * P, 500 * P, 600 * P, RC_ACKNOWLEDGE, tb::roce_frame(RC_ACKNOWLEDGE, 0x13, 3, 0)});
    tb::BlockBench<IcrcCheckBlock> b(cfg);
    std::vector<std::pair<uint64_t, TxnPtr>> in;
    for (const In& x : s) {
        TxnPtr t = tb::rx_txn(x.frame, x.tail);
        t->head_ps = x.head;
        t->hdr_ps = x.hdr;
        t->opcode = x.opcode;
        in.emplace_back(x.head, t);
    }
    b.drive(b.nic().parser_to_icrc, std::move(in));
    const auto& seen = b.watch(b.nic().rx_in);
    b.run();
    // The bad SEND goes on too: its responder places its payload, then
    // drops it at the verdict (and tells the datapath then, not here).
    REQUIRE(seen.size() == 3);
    CHECK(b.nic().rx_drops_icrc == 1);
    CHECK(b.be.dropped_icrc == 0);
    for (int k = 0; k < 2; ++k) {
        INFO("frame " << k);
        const Txn& t = *seen[k].item;
        CHECK(seen[k].t_ps == s[k].head);        // handed on when the check starts on it
        CHECK(t.ready_ps == s[k].hdr);           // the responder starts on the header vector
        CHECK(t.payload_in_ps == s[k].tail + P);  // its last beat in the check
        CHECK(t.verdict_ps == s[k].tail + P + L * P);
        CHECK(t.icrc_bad == (k == 1));
    }
    // A response has nothing to place: it comes with its verdict, as before.
    CHECK(seen[2].item->verdict_ps == 0);
    CHECK(seen[2].item->ready_ps == 600 * P);
}
