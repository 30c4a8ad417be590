// The ICRC check alone: a frame starts when the parser's result is out (its
// ready time), moves on ceil(L / W) cycles later with its verdict ready
// icrc.latency_cycles after that; a frame with one payload bit flipped, or a
// wrong ICRC, is dropped and counted (and still costs its beats); the
// Verilated engine gives the same verdicts and the same timing.
#include <catch2/catch.hpp>

#include <algorithm>
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
    uint64_t drops = 0, busy_ps = 0, items = 0;
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
    }
    r.drops = b.nic().rx_drops_icrc;
    r.busy_ps = b.nic().blk[Nic::kIcrcCheck].busy_ps;
    r.items = b.nic().blk[Nic::kIcrcCheck].items;
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
        CHECK(r.drops == bad);
        CHECK(r.drops == 2);
        CHECK(r.items == s.size());
        CHECK(r.busy_ps == busy);
    }
}

TEST_CASE("icrc_check: the Verilated ICRC engine gives the C++ verdicts and timing", "[model][block][icrc_check][rtl]") {
    ModelConfig cpp_cfg, rtl_cfg;
    rtl_cfg.icrc.impl = BlockImpl::rtl;
    const std::vector<Stim> s = stimulus(uint64_t(1e6 / cpp_cfg.clock.freq_mhz + 0.5));
    const Result cpp = run(cpp_cfg, s);
    const Result rtl = run(rtl_cfg, s);
    REQUIRE(rtl.out.size() == cpp.out.size());
    for (size_t i = 0; i < cpp.out.size(); ++i) {
        CHECK(rtl.out[i].t_ps == cpp.out[i].t_ps);
        CHECK(rtl.out[i].item == cpp.out[i].item);
    }
    CHECK(rtl.ready == cpp.ready);
    CHECK(rtl.drops == cpp.drops);
    CHECK(rtl.busy_ps == cpp.busy_ps);
}
