// TX build alone: a frame waits for its payload (ready time; the wait is
// the block's stall), streams through at one beat per cycle and leaves with
// its ICRC ready icrc.latency_cycles after its last beat; responses go
// before requests; with icrc.impl = rtl the ICRC on the frame is the one
// roce::compute_icrc gives, at the C++ model's timing; a full MAC queue
// stalls the block, which counts the stall; streamed (cut-through), a
// frame starts on its payload's first bytes and paces its beats to the rest.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "block_harness.h"
#include "blocks/tx_build.h"
#include "own_rtl.h"
#include "simnic/model/pipeline.h"
#include "simnic/roce/icrc.h"
#include "simnic/roce/packet.h"
#include "tx_build_rtl.h"

using namespace simnic;
using namespace simnic::model;

namespace {

uint64_t beats_ps(const ModelConfig& c, size_t len) {
    const uint64_t period = uint64_t(1e6 / c.clock.freq_mhz + 0.5);
    return (len + c.mac.width_bytes - 1) / c.mac.width_bytes * period;
}

FrameTok tok(std::vector<uint8_t> bytes, uint64_t ready_ps = 0, uint32_t psn = 0) {
    FrameTok f;
    f.f.bytes = std::move(bytes);
    f.f.psn = psn;
    f.ready_ps = ready_ps;
    return f;
}

uint32_t icrc_on(const std::vector<uint8_t>& f) {
    const size_t n = f.size();
    return uint32_t(f[n - 4]) | uint32_t(f[n - 3]) << 8 | uint32_t(f[n - 2]) << 16 | uint32_t(f[n - 1]) << 24;
}

}  // namespace

TEST_CASE("tx_build: waits for the payload, then one beat per cycle, ICRC out icrc.latency_cycles later",
          "[model][block][tx_build]") {
    ModelConfig narrow;
    narrow.mac.width_bytes = 32;
    narrow.mac.line_rate_gbps = 50;
    narrow.icrc.latency_cycles = 3;
    for (const ModelConfig& cfg : {ModelConfig{}, narrow}) {
        INFO("width " << cfg.mac.width_bytes << ", icrc latency " << cfg.icrc.latency_cycles);
        const uint64_t period = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
        const uint64_t payload_at = 50 * period + 3;  // the first frame's payload DMA
        const size_t l1 = 1078, l2 = 300;

        tb::BlockBench<TxBuildBlock> b(cfg);
        b.drive(b.nic().req_to_txb, {{0, tok(tb::bytes_frame(l1), payload_at, 1)}, {0, tok(tb::bytes_frame(l2), 0, 2)}});
        const auto& out = b.watch(b.nic().txb_to_mac);
        b.run();

        REQUIRE(out.size() == 2);
        const uint64_t t1 = payload_at + beats_ps(cfg, l1);
        const uint64_t t2 = t1 + beats_ps(cfg, l2);  // its payload was there: right behind
        CHECK(out[0].t_ps == t1);
        CHECK(out[0].item.ready_ps == t1 + cfg.icrc.latency_cycles * period);
        CHECK(out[0].item.f.psn == 1);
        CHECK(out[1].t_ps == t2);
        CHECK(out[1].item.ready_ps == t2 + cfg.icrc.latency_cycles * period);
        CHECK(out[1].item.f.bytes == tb::bytes_frame(l2));  // C++ model: the datapath's ICRC stays
        const sim::BlockStats& st = b.nic().blk[Nic::kTxBuild];
        CHECK(st.stall_ps == payload_at);  // waiting for host memory
        CHECK(st.busy_ps == beats_ps(cfg, l1) + beats_ps(cfg, l2));
        CHECK(st.items == 2);
    }
}

namespace {

// A payload of `bytes` coming in from host memory over [from, to), in two
// requests back to back (as the DMA engine's spans are).
std::vector<DmaArrival> arriving(uint64_t from, uint64_t to, uint32_t bytes) {
    const uint32_t first = bytes / 2;
    const uint64_t mid = from + (to - from) * first / bytes;
    return {{from, mid, first}, {mid, to, bytes - first}};
}

}  // namespace

TEST_CASE("tx_build: streamed (pipeline.cut_through), a frame starts on its payload's first bytes and each beat "
          "waits for the payload it carries",
          "[model][block][tx_build][cut_through]") {
    ModelConfig cfg;
    cfg.pipeline.cut_through = 1;
    cfg.tx_build.latency_cycles = 2;
    const uint64_t P = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
    const uint64_t W = cfg.mac.width_bytes, Li = cfg.icrc.latency_cycles * P, Lh = cfg.tx_build.latency_cycles * P;
    const uint32_t payload = 1024;
    const size_t hdr = 54, len = hdr + payload + 4;  // headers, payload (a multiple of 4), ICRC
    const uint64_t B = (len + W - 1) / W;
    const uint64_t t0 = 100 * P + 7;
    // The last beat, unrolled: each beat j is out a cycle after both the
    // beat before it and the last payload byte it carries, so the last is
    // out at the latest of (the start + all the beats) and, per beat, (its
    // payload in + the beats from it to the end).
    auto last_beat = [&](const std::vector<DmaArrival>& in) {
        uint64_t last = t0 + B * P;
        for (uint64_t j = 0; j < B; ++j) {
            const uint64_t end = (j + 1) * W;
            if (end <= hdr) continue;
            const uint64_t need = std::min<uint64_t>(payload, end - hdr);
            last = std::max(last, arrival_of(in, need) + (B - j) * P);
        }
        return last;
    };
    // The payload faster than the datapath (a beat's bytes in 1.5 ns of its
    // 4): the beats are paced by the cycle, less what the first beat's bytes
    // took; and slower (in 3 times a beat's time): the last beat follows the
    // last payload byte by a cycle.
    for (const uint64_t span : {uint64_t(B) * 3 * P / 8, uint64_t(B) * 3 * P}) {
        INFO("payload in over " << span << " ps, " << B << " beats of " << P << " ps");
        const std::vector<DmaArrival> in = arriving(t0, t0 + span, payload);
        tb::BlockBench<TxBuildBlock> b(cfg);
        FrameTok f = tok(tb::bytes_frame(len), t0 + span, 1);
        f.payload = in;
        b.drive(b.nic().req_to_txb, {{0, std::move(f)}});
        const auto& out = b.watch(b.nic().txb_to_mac);
        b.run();
        REQUIRE(out.size() == 1);
        const uint64_t last = last_beat(in);
        // The first beat goes to MAC TX a cycle (and the header latency)
        // after the first payload bytes began to come in, not after the last.
        CHECK(out[0].t_ps == t0 + P + Lh);
        CHECK(out[0].item.head_ps == t0 + P + Lh);
        CHECK(out[0].item.ready_ps == last + Lh + Li);
        if (span > B * P) {
            CHECK(last == t0 + span + P);  // paced by the payload
        } else {
            CHECK(last < t0 + B * P + P);  // paced by the clock (the first beat's 10 bytes cost a fraction of one)
            CHECK(last > t0 + B * P);
        }
        CHECK(b.nic().blk[Nic::kTxBuild].stall_ps == t0);  // waited for the first payload only
    }
    // Store-and-forward waits for the last byte, spans or not.
    cfg.pipeline.cut_through = 0;
    tb::BlockBench<TxBuildBlock> b(cfg);
    FrameTok f = tok(tb::bytes_frame(len), t0 + 500 * P, 1);
    f.payload = arriving(t0, t0 + 500 * P, payload);
    b.drive(b.nic().req_to_txb, {{0, std::move(f)}});
    const auto& out = b.watch(b.nic().txb_to_mac);
    b.run();
    REQUIRE(out.size() == 1);
    CHECK(out[0].t_ps == t0 + 500 * P + B * P);
    CHECK(out[0].item.ready_ps == t0 + 500 * P + B * P + Lh + Li);
}

TEST_CASE("tx_build: responses go before queued requests", "[model][block][tx_build]") {
    const ModelConfig cfg;
    tb::BlockBench<TxBuildBlock> b(cfg);
    // Both queued before the block looks.
    b.nic().req_to_txb.push_input(tok(tb::bytes_frame(1000), 0, 10));
    b.nic().req_to_txb.push_input(tok(tb::bytes_frame(1000), 0, 11));
    b.nic().rxt_to_txb.push_input(tok(tb::bytes_frame(62), 0, 90));
    const auto& out = b.watch(b.nic().txb_to_mac);
    b.run();
    REQUIRE(out.size() == 3);
    CHECK(out[0].item.f.psn == 90);
    CHECK(out[1].item.f.psn == 10);
    CHECK(out[2].item.f.psn == 11);
    CHECK(out[0].t_ps == beats_ps(cfg, 62));
    CHECK(out[1].t_ps == beats_ps(cfg, 62) + beats_ps(cfg, 1000));
}

namespace {

// One run of TX build over `in`, all entering at time 0: what left it, and
// the counters of its RTL (header builder and ICRC engine).
struct TxRun {
    std::vector<tb::Seen<FrameTok>> out;
    uint64_t mismatches = 0, skipped = 0, latency = 0, busy_ps = 0;
    uint64_t icrc_mismatches = 0;  // the Verilated ICRC engine's against compute_icrc
    std::vector<std::string> dumps;
    bool cache_hit = false;
};

TxRun run_tx(const ModelConfig& cfg, const std::vector<std::vector<uint8_t>>& in) {
    tb::BlockBench<TxBuildBlock> b(cfg);
    std::vector<std::pair<uint64_t, FrameTok>> v;
    for (size_t i = 0; i < in.size(); ++i) v.emplace_back(0, tok(in[i], 0, uint32_t(i)));
    b.drive(b.nic().req_to_txb, std::move(v));
    const auto& out = b.watch(b.nic().txb_to_mac);
    b.run();
    TxRun r;
    r.out = out;
    r.mismatches = b.nic().tx_build_rtl_mismatch;
    r.icrc_mismatches = b.nic().icrc_rtl_mismatch;
    r.skipped = b.nic().tx_build_rtl_skipped;
    r.latency = b.nic().tx_build_rtl_latency;
    r.busy_ps = b.nic().blk[Nic::kTxBuild].busy_ps;
    r.dumps = b.nic().rtl_mismatch_log;
    r.cache_hit = b.nic().tx_build_rtl_cache_hit;
    return r;
}

}  // namespace

TEST_CASE("tx_build: with icrc.impl = rtl the ICRC on the frame is compute_icrc's, at the RTL's own timing",
          "[model][block][tx_build][rtl]") {
    // The engine answers 7 edges after the last beat, the default
    // icrc.latency_cycles; with impl = rtl a configured 30 is not used.
    using namespace roce::op;
    // Frames as the datapath built them, two with their ICRC left out (zero).
    std::vector<std::vector<uint8_t>> good = {tb::roce_frame(RC_RDMA_WRITE_ONLY, 0x11, 1, 1024),
                                              tb::roce_frame(RC_SEND_ONLY, 0x11, 2, 17),
                                              tb::roce_frame(RC_ACKNOWLEDGE, 0x11, 3, 0)};
    std::vector<std::vector<uint8_t>> in = good;
    for (size_t i : {size_t(0), size_t(2)})
        for (size_t k = 1; k <= 4; ++k) in[i][in[i].size() - k] = 0;

    auto run = [&](BlockImpl impl) {
        ModelConfig cfg;
        cfg.icrc.impl = impl;
        if (impl == BlockImpl::rtl) cfg.icrc.latency_cycles = 30;
        return run_tx(cfg, in);
    };
    const TxRun cpp_run = run(BlockImpl::cpp), rtl_run = run(BlockImpl::rtl);
    const auto& cpp = cpp_run.out;
    const auto& rtl = rtl_run.out;
    const uint64_t cpp_mm = cpp_run.icrc_mismatches, rtl_mm = rtl_run.icrc_mismatches;
    const std::vector<std::string>& dumps = rtl_run.dumps;
    REQUIRE(cpp.size() == in.size());
    REQUIRE(rtl.size() == in.size());
    for (size_t i = 0; i < in.size(); ++i) {
        INFO("frame " << i);
        const std::vector<uint8_t>& f = rtl[i].item.f.bytes;
        const uint32_t want = roce::compute_icrc(f.data(), f.size(), 14, 14 + 20, roce::IpVersion::V4);
        CHECK(icrc_on(f) == want);
        CHECK(f == good[i]);
        CHECK(cpp[i].item.f.bytes == in[i]);  // the C++ model leaves the frame as built
        CHECK(rtl[i].t_ps == cpp[i].t_ps);
        CHECK(rtl[i].item.ready_ps == cpp[i].item.ready_ps);
    }
    CHECK(rtl_mm == 2);  // the two the datapath left out
    CHECK(cpp_mm == 0);
    // Each dumped with its frame, as the datapath built it.
    REQUIRE(dumps.size() == 2);
    CHECK(dumps[0].find("tx_build") == 0);
    CHECK(dumps[0].find("from the datapath 00000000") != std::string::npos);
    CHECK(dumps[1].find("(" + std::to_string(in[2].size()) + " bytes)") != std::string::npos);
}

TEST_CASE("tx_build: a full MAC queue stalls the block and the stall is counted",
          "[model][block][tx_build][backpressure]") {
    const ModelConfig cfg;
    const size_t len = 1078;
    const uint64_t per_frame = beats_ps(cfg, len);
    tb::BlockBench<TxBuildBlock> b(cfg);
    const size_t depth = b.nic().txb_to_mac.depth();
    const size_t n = depth + 2;
    std::vector<std::pair<uint64_t, FrameTok>> v;
    for (size_t i = 0; i < n; ++i) v.emplace_back(0, tok(tb::bytes_frame(len), 0, uint32_t(i)));
    b.drive(b.nic().req_to_txb, std::move(v));
    const uint64_t blocked_at = (depth + 1) * per_frame;  // the (depth+1)th frame is built
    const uint64_t open = blocked_at + 5 * per_frame + 11;
    const auto& out = b.watch(b.nic().txb_to_mac, open);
    b.run();
    REQUIRE(out.size() == n);
    for (size_t i = 0; i < n; ++i) CHECK(out[i].item.f.psn == i);
    CHECK(out[n - 1].t_ps == open + per_frame);
    const sim::BlockStats& st = b.nic().blk[Nic::kTxBuild];
    CHECK(st.stall_ps == open - blocked_at);
    CHECK(st.busy_ps == n * per_frame);
}

TEST_CASE("tx_build: with an RTL a full MAC queue holds the frame's first beat (the header builder's "
          "m_axis_tready_i low, the ICRC engine not offered the frame), and the low edges are the stall",
          "[model][block][tx_build][rtl][backpressure]") {
    // depth + 2 SEND frames of b beats, none waiting for payload; MAC TX
    // (the monitor) takes nothing before `open`. Frames 0..7 fill the
    // queue; frame 8 starts at 8b cycles with it full, so its first beat
    // (the RTL header builder's: the edge 2 cycles in, descriptor then
    // latency 1; with the C++ header and the ICRC RTL: 1 cycle in) waits on
    // every edge before `open`: `low` edges, the first edge after `open`
    // takes it. Frames 8 and 9 go on exactly `low` cycles later than with
    // room, with the same bytes; each low edge is a cycle of TX build's
    // stall and counted as the RTL's. Both modes: store-and-forward hands
    // the frame on after its last beat, cut-through at its first.
    using namespace roce::op;
    const ModelConfig base;
    const uint64_t P = uint64_t(1e6 / base.clock.freq_mhz + 0.5);
    const std::vector<uint8_t> frame = tb::roce_frame(RC_SEND_ONLY, 0x11, 1, 1000);
    const uint64_t b = base.beats(uint32_t(frame.size()));
    struct Run {
        std::vector<tb::Seen<FrameTok>> out;
        uint64_t tx_low = 0, icrc_low = 0, stall_ps = 0, mismatches = 0, depth = 0;
    };
    auto run_from = [&](const ModelConfig& cfg, uint64_t open) {
        tb::BlockBench<TxBuildBlock> bench(cfg);
        Run r;
        r.depth = bench.nic().txb_to_mac.depth();
        std::vector<std::pair<uint64_t, FrameTok>> v;
        for (size_t i = 0; i < r.depth + 2; ++i) v.emplace_back(0, tok(frame, 0, uint32_t(i)));
        bench.drive(bench.nic().req_to_txb, std::move(v));
        const auto& out = bench.watch(bench.nic().txb_to_mac, open);
        bench.run();
        r.out = out;
        r.tx_low = bench.nic().tx_build_rtl_ready_low;
        r.icrc_low = bench.nic().icrc_rtl_ready_low;
        r.stall_ps = bench.nic().blk[Nic::kTxBuild].stall_ps;
        r.mismatches = bench.nic().tx_build_rtl_mismatch + bench.nic().icrc_rtl_mismatch;
        return r;
    };
    for (int cut : {0, 1})
        for (int which : {0, 1, 2}) {  // the header builder's RTL, the ICRC engine's, both
            ModelConfig cfg = base;
            cfg.pipeline.cut_through = uint32_t(cut);
            if (which != 1) cfg.tx_build.impl = BlockImpl::rtl;
            if (which != 0) cfg.icrc.impl = BlockImpl::rtl;
            INFO((cut ? "cut-through" : "store-and-forward") << ", RTL: "
                                                               << (which == 0   ? "header builder"
                                                                   : which == 1 ? "ICRC engine"
                                                                                : "both"));
            const uint64_t first = which == 1 ? 1 : 2;  // the edge of frame 8's first beat, in cycles from its start
            const uint64_t open = (8 * b + first + 40) * P + 11;  // 41 edges low, the last 11 ps before it
            const uint64_t low = 41;
            const Run free = run_from(cfg, 0), full = run_from(cfg, open);
            REQUIRE(full.depth == 8);  // what the timeline assumes
            REQUIRE(free.out.size() == 10);
            REQUIRE(full.out.size() == 10);
            CHECK(free.tx_low == 0);
            CHECK(free.icrc_low == 0);
            CHECK(free.stall_ps == 0);
            CHECK(full.tx_low == (which != 1 ? low : 0));
            CHECK(full.icrc_low == (which != 0 ? low : 0));
            CHECK(full.stall_ps == low * P);
            CHECK(free.mismatches == 0);
            CHECK(full.mismatches == 0);  // the RTL held its first beat on all of them
            for (size_t k = 0; k < 10; ++k) {
                INFO("frame " << k);
                CHECK(full.out[k].item.f.psn == k);
                CHECK(full.out[k].item.f.bytes == free.out[k].item.f.bytes);
                const uint64_t shift = k < 8 ? 0 : low * P;
                CHECK(full.out[k].t_ps == std::max(open, free.out[k].t_ps + shift));
                CHECK(full.out[k].item.ready_ps == free.out[k].item.ready_ps + shift);
                if (cut) CHECK(full.out[k].item.head_ps == free.out[k].item.head_ps + shift);
            }
        }
}

namespace {

// Frames the datapath built: each header kind the stage sends, two padded
// payloads, IPv6 with a VLAN tag.
std::vector<std::vector<uint8_t>> sent_frames() {
    using namespace roce::op;
    auto v6 = [](roce::Packet& p) {
        p.ip_version = roce::IpVersion::V6;
        p.eth.has_vlan = true;
        p.eth.vlan_tci = 0x2005;
        p.ip6.src[15] = 1;
        p.ip6.dst[15] = 2;
    };
    return {tb::roce_frame(RC_RDMA_WRITE_ONLY, 0x11, 1, 1024), tb::roce_frame(RC_SEND_ONLY, 0x11, 2, 17),
            tb::roce_frame(RC_ACKNOWLEDGE, 0x11, 3, 0), tb::roce_frame(RC_RDMA_READ_REQUEST, 0x12, 4, 0),
            tb::roce_frame(RC_SEND_ONLY_WITH_IMMEDIATE, 0x13, 5, 4000, v6), tb::roce_frame(RC_SEND_ONLY, 0x13, 6, 6, v6)};
}

bool icrc_good(const std::vector<uint8_t>& f) {
    roce::Packet p;
    return bool(roce::decode_frame(f.data(), f.size(), p));
}

}  // namespace

TEST_CASE("tx_build: with tx_build.impl = rtl the headers are the RTL's, the datapath's byte for byte, at its own "
          "timing", "[model][block][tx_build][rtl]") {
    // The reference builder takes a descriptor at once and sends the first
    // beat one edge later: the C++ model with tx_build.latency_cycles = 1
    // to the picosecond, one cycle more than its default 0; a configured 9
    // is not used.
    const std::vector<std::vector<uint8_t>> in = sent_frames();
    ModelConfig cpp0, cpp1, rtl_cfg;
    cpp1.tx_build.latency_cycles = 1;
    rtl_cfg.tx_build.impl = BlockImpl::rtl;
    rtl_cfg.tx_build.latency_cycles = 9;
    const TxRun c0 = run_tx(cpp0, in), c1 = run_tx(cpp1, in), r = run_tx(rtl_cfg, in);
    REQUIRE(r.out.size() == in.size());
    REQUIRE(c1.out.size() == in.size());
    const uint64_t period = uint64_t(1e6 / rtl_cfg.clock.freq_mhz + 0.5);
    for (size_t i = 0; i < in.size(); ++i) {
        INFO("frame " << i);
        CHECK(r.out[i].item.f.bytes == in[i]);
        CHECK(r.out[i].t_ps == c1.out[i].t_ps);
        CHECK(r.out[i].item.ready_ps == c1.out[i].item.ready_ps);
        CHECK(r.out[i].item.ready_ps == c0.out[i].item.ready_ps + period);
    }
    CHECK(r.mismatches == 0);
    CHECK(r.skipped == 0);
    CHECK(r.latency == 1);
    CHECK(r.busy_ps == c0.busy_ps);  // the header's beats are the frame's first beats
    // With the Verilated ICRC engine behind it too (7 cycles, the default
    // icrc.latency_cycles): the same frames, the same times.
    ModelConfig both = rtl_cfg;
    both.icrc.impl = BlockImpl::rtl;
    const TxRun rb = run_tx(both, in);
    REQUIRE(rb.out.size() == in.size());
    for (size_t i = 0; i < in.size(); ++i) {
        INFO("frame " << i << ", ICRC engine too");
        CHECK(rb.out[i].item.f.bytes == in[i]);
        CHECK(rb.out[i].item.ready_ps == r.out[i].item.ready_ps);
    }
    CHECK(rb.mismatches == 0);
    // A frame the descriptor cannot carry goes as built, at the C++ model's
    // timing (tx_build.latency_cycles included).
    const std::vector<uint8_t> junk = tb::bytes_frame(300);
    ModelConfig cpp9;
    cpp9.tx_build.latency_cycles = 9;
    const TxRun j = run_tx(rtl_cfg, {junk}), jc = run_tx(cpp9, {junk});
    REQUIRE(j.out.size() == 1);
    CHECK(j.skipped == 1);
    CHECK(j.mismatches == 0);
    CHECK(j.out[0].item.f.bytes == junk);
    CHECK(j.out[0].item.ready_ps == jc.out[0].item.ready_ps);
}

TEST_CASE("tx_build: a device with tx_build.impl = rtl is refused at another datapath width",
          "[model][block][tx_build][rtl]") {
    ModelConfig cfg;
    cfg.tx_build.impl = BlockImpl::rtl;
    cfg.mac.width_bytes = 32;
    cfg.mac.line_rate_gbps = 50;
    struct Nop final : Datapath {
        void exec_doorbell(const Doorbell&, OpRecord&) override {}
        void exec_rx(const uint8_t*, size_t, bool, OpRecord&, const roce::Packet*) override {}
        void rx_dropped(bool) override {}
        void exec_timer(uint32_t, uint8_t, OpRecord&) override {}
        void wire_tx(const uint8_t*, size_t) override {}
    } dp;
    std::string err;
    CHECK(Pipeline::create("t", cfg, dp, false, err) == nullptr);
    CHECK(err.rfind("tx_build.impl = \"rtl\": the Verilated TX header builder moves 64 bytes per cycle (DataWidth "
                    "512), the datapath mac.width_bytes = 32",
                    0) == 0);
}

TEST_CASE("tx_build: one's own RTL named in the config, the worked example's planted bug caught, dumped and sent",
          "[model][block][tx_build][rtl][own_rtl]") {
    // examples/roce_tx_build_buggy.sv named as a designer names theirs
    // (tx_build.rtl_sources, tx_build.rtl_top): built at run time into a
    // fresh cache, then found there. Its bug: a padded packet's BTH pad
    // count goes out as 0.
    namespace fs = std::filesystem;
    const std::string cache = SIMNIC_OWN_TX_BUILD_TEST_CACHE;
    fs::remove_all(cache);
    setenv("XDG_CACHE_HOME", cache.c_str(), 1);
    ModelConfig buggy, ref;
    buggy.tx_build.impl = ref.tx_build.impl = BlockImpl::rtl;
    buggy.tx_build.rtl_sources = {std::string(SIMNIC_TX_BUILD_RTL_DIR) + "/examples/roce_tx_build_buggy.sv"};
    buggy.tx_build.rtl_top = "roce_tx_build_buggy";
    const std::vector<std::vector<uint8_t>> in = sent_frames();
    size_t padded = 0;
    for (const auto& f : in) {
        roce::Packet p;
        REQUIRE(roce::decode_frame(f.data(), f.size(), p));
        padded += p.hdr.bth.pad != 0;
    }
    REQUIRE(padded == 2);

    const uint64_t runs = rtl::verilator_runs();
    const TxRun r = run_tx(buggy, in), want = run_tx(ref, in);
    CHECK(rtl::verilator_runs() == runs + 2);  // the port check's pass and the build's
    CHECK_FALSE(r.cache_hit);
    CHECK(r.mismatches == padded);
    REQUIRE(r.dumps.size() == padded);
    // The SEND Only of 17 bytes (pad 3): byte 43 is the BTH's second
    // (Ethernet 14 + IPv4 20 + UDP 8, then the opcode).
    CHECK(r.dumps[0].rfind("tx_build at cycle ", 0) == 0);
    CHECK(r.dumps[0].find("header byte 43 from the RTL 00, from the datapath 30 (54 header bytes)") !=
          std::string::npos);
    CHECK(r.dumps[0].find("frame (" + std::to_string(in[1].size()) + " bytes)") != std::string::npos);
    REQUIRE(r.out.size() == in.size());
    for (size_t i = 0; i < in.size(); ++i) {
        INFO("frame " << i);
        const std::vector<uint8_t>& f = r.out[i].item.f.bytes;
        // Every frame decodes with a good ICRC: a padded one's covers the
        // header the RTL sent, so the peer takes its pad as payload (the
        // bug on the wire).
        CHECK(icrc_good(f));
        if (i == 1 || i == 5) {
            CHECK(f != in[i]);
            CHECK((f[i == 1 ? 43 : 14 + 4 + 40 + 8 + 1] & 0x30) == 0);
            const bool v6 = i == 5;
            const size_t l3 = v6 ? 18 : 14, l4 = l3 + (v6 ? 40 : 20);
            const uint32_t icrc = roce::compute_icrc(f.data(), f.size(), l3, l4, v6 ? roce::IpVersion::V6 : roce::IpVersion::V4);
            CHECK(icrc_on(f) == icrc);
        } else {
            CHECK(f == in[i]);
        }
        CHECK(r.out[i].t_ps == want.out[i].t_ps);  // the reference's timing
        CHECK(r.out[i].item.ready_ps == want.out[i].item.ready_ps);
    }
    CHECK(want.mismatches == 0);
    // Again: from the cache, with no Verilator to run.
    setenv("SIMNIC_VERILATOR", "/nonexistent/verilator", 1);
    const TxRun again = run_tx(buggy, in);
    unsetenv("SIMNIC_VERILATOR");
    CHECK(again.cache_hit);
    CHECK(again.mismatches == padded);
}

TEST_CASE("tx_build: one's own RTL named in the config, the slower example: its backpressure and latency are the "
          "stage's timing", "[model][block][tx_build][rtl][own_rtl]") {
    // examples/roce_tx_build_slow.sv: a descriptor is taken after two
    // cycles offered (2 more busy cycles per frame), the header leaves
    // through a one-entry register (latency 2, a bubble between two beats).
    // A cache of its own beside the other tests' (not inside one: the
    // buggy example's test empties its cache first, and ctest may run the
    // two at once).
    const std::string cache = std::string(SIMNIC_OWN_TX_BUILD_TEST_CACHE) + "_slow";
    std::filesystem::remove_all(cache);
    setenv("XDG_CACHE_HOME", cache.c_str(), 1);
    ModelConfig slow;
    slow.tx_build.impl = BlockImpl::rtl;
    slow.tx_build.rtl_sources = {std::string(SIMNIC_TX_BUILD_RTL_DIR) + "/examples/roce_tx_build_slow.sv"};
    slow.tx_build.rtl_top = "roce_tx_build_slow";
    const std::vector<std::vector<uint8_t>> in = sent_frames();
    const TxRun r = run_tx(slow, in), c = run_tx(ModelConfig{}, in);
    REQUIRE(r.out.size() == in.size());
    REQUIRE(c.out.size() == in.size());
    CHECK(r.mismatches == 0);
    CHECK(r.latency == 2);
    const uint64_t period = uint64_t(1e6 / slow.clock.freq_mhz + 0.5);
    const ModelConfig d;
    uint64_t t = 0, extra_total = 0;
    for (size_t i = 0; i < in.size(); ++i) {
        INFO("frame " << i);
        roce::Packet p;
        REQUIRE(roce::decode_frame(in[i].data(), in[i].size(), p));
        const uint64_t hdr_beats = d.beats(uint32_t(p.payload_off));
        // Two cycles for the descriptor, a bubble between header beats.
        const uint64_t extra = 2 + (hdr_beats - 1);
        extra_total += extra;
        t += (d.beats(uint32_t(in[i].size())) + extra) * period;
        CHECK(r.out[i].item.f.bytes == in[i]);
        CHECK(r.out[i].t_ps == t);
        CHECK(r.out[i].item.ready_ps == t + (2 + d.icrc.latency_cycles) * period);
    }
    CHECK(extra_total == 2 * in.size() + 4);  // four headers are over 64 bytes: those with a RETH, the IPv6 ones
    CHECK(r.busy_ps == c.busy_ps + extra_total * period);
}

TEST_CASE("tx_build: one's own RTL in a 32-byte datapath is built at DataWidth 256: the slower example's header "
          "beats are 32 bytes, and its bubbles the stage's timing", "[model][block][tx_build][rtl][own_rtl]") {
    // The slower example again, in a device with mac.width_bytes = 32:
    // verilated at -GDataWidth=256, its driver takes 32-byte header beats
    // (the width of the model's m_axis_tdata_o). Every header is the
    // datapath's; the bubble between two header beats now comes once per
    // 32 header bytes, so each frame costs 2 + (ceil(header / 32) - 1)
    // cycles more than the C++ model at 32. The cache is kept between runs.
    setenv("XDG_CACHE_HOME", (std::string(SIMNIC_OWN_TX_BUILD_TEST_CACHE) + "_w256").c_str(), 1);
    ModelConfig slow, cpp;
    slow.mac.width_bytes = cpp.mac.width_bytes = 32;
    slow.mac.line_rate_gbps = cpp.mac.line_rate_gbps = 50;
    slow.tx_build.impl = BlockImpl::rtl;
    slow.tx_build.rtl_sources = {std::string(SIMNIC_TX_BUILD_RTL_DIR) + "/examples/roce_tx_build_slow.sv"};
    slow.tx_build.rtl_top = "roce_tx_build_slow";
    const std::vector<std::vector<uint8_t>> in = sent_frames();
    const TxRun r = run_tx(slow, in), c = run_tx(cpp, in);
    REQUIRE(r.out.size() == in.size());
    REQUIRE(c.out.size() == in.size());
    CHECK(r.mismatches == 0);
    CHECK(r.skipped == 0);
    CHECK(r.latency == 2);
    {
        tb::BlockBench<TxBuildBlock> b(slow);
        REQUIRE(b.nic().tx_build_rtl);
        CHECK(b.nic().tx_build_rtl_cache_hit);  // built by the run above
        CHECK(b.nic().tx_build_rtl->beat_bytes() == 32);
    }
    const uint64_t period = uint64_t(1e6 / slow.clock.freq_mhz + 0.5);
    uint64_t t = 0, extra_total = 0, hdr_beats_total = 0;
    for (size_t i = 0; i < in.size(); ++i) {
        INFO("frame " << i);
        roce::Packet p;
        REQUIRE(roce::decode_frame(in[i].data(), in[i].size(), p));
        const uint64_t hdr_beats = (p.payload_off + 31) / 32;
        hdr_beats_total += hdr_beats;
        const uint64_t extra = 2 + (hdr_beats - 1);
        extra_total += extra;
        t += ((in[i].size() + 31) / 32 + extra) * period;
        CHECK(r.out[i].item.f.bytes == in[i]);
        CHECK(r.out[i].t_ps == t);
        CHECK(r.out[i].item.ready_ps == t + (2 + cpp.icrc.latency_cycles) * period);
    }
    // Every header is over 32 bytes (54 to 82 here): two or three beats
    // each, 16 in all, where at 64 bytes four of the six took two (10).
    CHECK(hdr_beats_total == 16);
    CHECK(extra_total == 2 * in.size() + hdr_beats_total - in.size());
    CHECK(r.busy_ps == c.busy_ps + extra_total * period);
}
