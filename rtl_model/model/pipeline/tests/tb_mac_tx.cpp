// MAC TX alone: a frame of L bytes occupies the MAC for
// max(ceil(L / W) cycles, (L + ifg) * 8 / line_rate), frames leave back to
// back at that pace (the line rate when the line is the bottleneck), a
// frame waits for its ICRC, and in loopback frames go to MAC RX's input.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "block_harness.h"
#include "blocks/mac_tx.h"

using namespace simnic::model;

namespace {

// What the configuration says a frame of `len` bytes costs, ps, computed
// here in integers: the datapath's beats, and the line time (exact for the
// rates used below).
uint64_t beats_ps(const ModelConfig& c, uint32_t len) {
    const uint64_t period = uint64_t(1e6 / c.clock.freq_mhz + 0.5);
    return (len + c.mac.width_bytes - 1) / c.mac.width_bytes * period;
}
uint64_t line_ps(const ModelConfig& c, uint32_t len) {
    const uint64_t rate = uint64_t(c.mac.line_rate_gbps);
    REQUIRE(double(rate) == c.mac.line_rate_gbps);
    REQUIRE((len + c.mac.ifg_bytes) * 8000ull % rate == 0);  // the case is chosen exact
    return (len + c.mac.ifg_bytes) * 8000ull / rate;
}

FrameTok frame(uint32_t len, uint32_t payload = 0, uint64_t ready_ps = 0) {
    FrameTok f;
    f.f.bytes = tb::bytes_frame(len);
    f.f.payload = payload;
    f.ready_ps = ready_ps;
    return f;
}

}  // namespace

TEST_CASE("mac_tx: back-to-back frames leave at the line rate", "[model][block][mac_tx]") {
    const ModelConfig cfg;
    const uint32_t len = 1078, payload = 1024;  // a 1 KiB RDMA WRITE packet
    const uint64_t per_frame = line_ps(cfg, len);
    REQUIRE(per_frame > beats_ps(cfg, len));  // the line is the bottleneck

    tb::BlockBench<MacTxBlock> b(cfg);
    const int n = 20;
    std::vector<std::pair<uint64_t, FrameTok>> in;
    for (int i = 0; i < n; ++i) in.emplace_back(0, frame(len, payload));
    b.drive(b.nic().txb_to_mac, std::move(in));
    b.run();

    const auto& out = b.be.wire;
    REQUIRE(out.size() == size_t(n));
    for (int i = 0; i < n; ++i) {
        CHECK(out[size_t(i)].t_ps == uint64_t(i + 1) * per_frame);
        CHECK(out[size_t(i)].item.size() == len);
    }
    // Wire bits (frame + preamble/SFD/gap) over the time they took: the line rate.
    const double gbps = double(n) * (len + cfg.mac.ifg_bytes) * 8.0 / (double(out.back().t_ps) / 1000.0);
    CHECK(gbps == Approx(cfg.mac.line_rate_gbps));

    const Nic& nic = b.nic();
    CHECK(nic.tx_frames == uint64_t(n));
    CHECK(nic.tx_wire_bytes == uint64_t(n) * (len + cfg.mac.ifg_bytes));
    CHECK(nic.tx_payload_bytes == uint64_t(n) * payload);
    CHECK(nic.first_tx_ps == 0);
    CHECK(nic.last_tx_ps == out.back().t_ps);
    const sim::BlockStats& st = nic.blk[Nic::kMacTx];
    CHECK(st.items == uint64_t(n));
    CHECK(st.busy_ps == uint64_t(n) * per_frame);
    CHECK(st.stall_ps == 0);
}

TEST_CASE("mac_tx: a frame costs the longer of its beats and its line time", "[model][block][mac_tx]") {
    struct Case {
        const char* what;
        uint32_t width, ifg, len;
        double rate, mhz;
        bool datapath_bound;
    };
    const Case cases[] = {
        {"default, full frame: the line", 64, 20, 1078, 100, 250, false},
        {"default, one byte past a beat: the datapath", 64, 20, 65, 100, 250, true},
        {"slower line", 64, 20, 1078, 25, 250, false},
        {"slower line, short frame", 64, 20, 65, 10, 250, false},
        {"narrower datapath at its own rate", 32, 20, 1025, 64, 250, true},
        {"narrower datapath, slower line", 16, 20, 1078, 25, 250, false},
        {"faster clock", 64, 20, 65, 100, 500, false},
        {"no gap, line as fast as the datapath: equal", 64, 0, 1088, 128, 250, false},
    };
    for (const Case& k : cases) {
        INFO(k.what);
        ModelConfig cfg;
        cfg.mac.width_bytes = k.width;
        cfg.mac.ifg_bytes = k.ifg;
        cfg.mac.line_rate_gbps = k.rate;
        cfg.clock.freq_mhz = k.mhz;
        std::string err;
        REQUIRE(validate_config(cfg, err));
        const uint64_t dp = beats_ps(cfg, k.len), line = line_ps(cfg, k.len);
        REQUIRE((dp > line) == k.datapath_bound);
        const uint64_t per_frame = std::max(dp, line);

        tb::BlockBench<MacTxBlock> b(cfg);
        b.drive(b.nic().txb_to_mac, {{0, frame(k.len)}, {0, frame(k.len)}, {0, frame(k.len)}});
        b.run();
        REQUIRE(b.be.wire.size() == 3);
        for (size_t i = 0; i < 3; ++i) CHECK(b.be.wire[i].t_ps == (i + 1) * per_frame);
        CHECK(b.nic().blk[Nic::kMacTx].busy_ps == 3 * per_frame);
    }
}

TEST_CASE("mac_tx: a frame does not start before its ICRC is out", "[model][block][mac_tx]") {
    const ModelConfig cfg;
    const uint32_t len = 500;
    const uint64_t per_frame = std::max(beats_ps(cfg, len), line_ps(cfg, len));
    const uint64_t ready = 10 * per_frame + 123;

    tb::BlockBench<MacTxBlock> b(cfg);
    // The second frame is ready at once but queued behind the first.
    b.drive(b.nic().txb_to_mac, {{0, frame(len, 0, ready)}, {0, frame(len, 0, 0)}});
    b.run();
    REQUIRE(b.be.wire.size() == 2);
    CHECK(b.be.wire[0].t_ps == ready + per_frame);
    CHECK(b.be.wire[1].t_ps == ready + 2 * per_frame);
    CHECK(b.nic().first_tx_ps == ready);
    // Waiting for a frame is not being busy.
    CHECK(b.nic().blk[Nic::kMacTx].busy_ps == 2 * per_frame);
}

TEST_CASE("mac_tx: in loopback frames go to MAC RX's input, not to the wire", "[model][block][mac_tx]") {
    const ModelConfig cfg;
    const uint32_t len = 256;
    const uint64_t per_frame = std::max(beats_ps(cfg, len), line_ps(cfg, len));
    tb::BlockBench<MacTxBlock> b(cfg, /*loopback=*/true);
    FrameTok f = frame(len);
    const std::vector<uint8_t> bytes = f.f.bytes;
    b.drive(b.nic().txb_to_mac, 0, std::move(f));
    const auto& rx = b.watch(b.nic().wire_in);
    b.run();
    CHECK(b.be.wire.empty());
    REQUIRE(rx.size() == 1);
    CHECK(rx[0].t_ps == per_frame);
    CHECK(rx[0].item == bytes);
}

TEST_CASE("mac_tx: a PFC pause holds frames of its priority, and what is behind them", "[model][block][mac_tx][pfc]") {
    const ModelConfig cfg;
    // RoCE frames: priority = DSCP >> 3 of the IPv4 TOS.
    auto prio_frame = [](uint8_t dscp) {
        FrameTok f;
        f.f.bytes = tb::roce_frame(0x0A, 5, 0, 1024, [dscp](simnic::roce::Packet& p) { p.ip4.tos = uint8_t(dscp << 2 | 2); });
        return f;
    };
    const uint32_t len = uint32_t(prio_frame(26).f.bytes.size());
    const uint64_t per_frame = std::max(beats_ps(cfg, len), uint64_t((len + cfg.mac.ifg_bytes) * 8000.0 / cfg.mac.line_rate_gbps + 0.5));
    const uint64_t pause = 2'000'000, resume = 1'200'000;

    SECTION("a pause of priority 3 holds a priority-3 frame until it ends, and a priority-0 frame behind it") {
        tb::BlockBench<MacTxBlock> b(cfg);
        b.nic().pause_until_ps[3] = pause;
        b.drive(b.nic().txb_to_mac, {{0, prio_frame(26)}, {0, prio_frame(0)}});
        b.run();
        const auto& out = b.be.wire;
        REQUIRE(out.size() == 2);
        CHECK(out[0].t_ps == pause + per_frame);
        CHECK(out[1].t_ps == pause + 2 * per_frame);  // one TX queue: it waited behind
        CHECK(b.nic().pfc_paused_frames == 1);
        CHECK(b.nic().pfc_paused_ps == pause);
    }
    SECTION("another priority's pause does not hold it") {
        tb::BlockBench<MacTxBlock> b(cfg);
        b.nic().pause_until_ps[6] = pause;
        b.drive(b.nic().txb_to_mac, 0, prio_frame(26));
        b.run();
        REQUIRE(b.be.wire.size() == 1);
        CHECK(b.be.wire[0].t_ps == per_frame);
        CHECK(b.nic().pfc_paused_frames == 0);
    }
    SECTION("a resume (time 0) ends the pause early") {
        tb::BlockBench<MacTxBlock> b(cfg);
        b.nic().pause_until_ps[3] = pause;
        Nic* n = &b.nic();
        b.thread("resume", [n, resume] {
            simnic::model::sim::wait_until(resume);
            n->pause_until_ps[3] = resume;
            n->pause_changed.notify(sc_core::SC_ZERO_TIME);
        });
        b.drive(b.nic().txb_to_mac, 0, prio_frame(26));
        b.run();
        REQUIRE(b.be.wire.size() == 1);
        CHECK(b.be.wire[0].t_ps == resume + per_frame);
        CHECK(b.nic().pfc_paused_ps == resume);
    }
    SECTION("looped back (simnic bench) there is no PFC") {
        tb::BlockBench<MacTxBlock> b(cfg, true);
        b.nic().pause_until_ps[3] = pause;
        b.drive(b.nic().txb_to_mac, 0, prio_frame(26));
        const auto& out = b.watch(b.nic().wire_in);
        b.run();
        REQUIRE(out.size() == 1);
        CHECK(out[0].t_ps == per_frame);
    }
}
