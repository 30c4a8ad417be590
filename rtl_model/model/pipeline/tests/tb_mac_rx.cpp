// MAC RX alone: a frame is handed to the parser when its last byte is in,
// max(ceil(L / W) cycles, (L + ifg) * 8 / line_rate) after it started;
// frames that arrive faster queue in front of the MAC; and a full parser
// queue stalls the MAC, which counts the stall.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "block_harness.h"
#include "blocks/mac_rx.h"

using namespace simnic::model;

namespace {

uint64_t frame_ps(const ModelConfig& c, uint32_t len) {
    const uint64_t period = uint64_t(1e6 / c.clock.freq_mhz + 0.5);
    const uint64_t beats = (len + c.mac.width_bytes - 1) / c.mac.width_bytes * period;
    const uint64_t rate = uint64_t(c.mac.line_rate_gbps);
    REQUIRE((len + c.mac.ifg_bytes) * 8000ull % rate == 0);
    return std::max<uint64_t>(beats, (len + c.mac.ifg_bytes) * 8000ull / rate);
}

}  // namespace

TEST_CASE("mac_rx: a frame is out when its last byte is in, arrivals queue at line rate",
          "[model][block][mac_rx]") {
    const ModelConfig cfg;
    const uint32_t len = 1078;
    const uint64_t per_frame = frame_ps(cfg, len);

    tb::BlockBench<MacRxBlock> b(cfg);
    // Three frames arrive at once (the wire input is never pushed back), a
    // fourth long after.
    const uint64_t late = 100 * per_frame;
    b.drive(b.nic().wire_in, {{0, tb::bytes_frame(len, 1)},
                              {0, tb::bytes_frame(len, 2)},
                              {0, tb::bytes_frame(len, 3)},
                              {late, tb::bytes_frame(len, 4)}});
    const auto& out = b.watch(b.nic().mac_to_parser);
    b.run();

    REQUIRE(out.size() == 4);
    const uint64_t want[] = {per_frame, 2 * per_frame, 3 * per_frame, late + per_frame};
    for (size_t i = 0; i < 4; ++i) {
        INFO("frame " << i);
        CHECK(out[i].t_ps == want[i]);
        const Txn& t = *out[i].item;
        CHECK(t.kind == Txn::Kind::Rx);
        CHECK(t.frame == tb::bytes_frame(len, uint8_t(i + 1)));
        CHECK(t.ready_ps == want[i]);
        CHECK(t.t_in == want[i] - per_frame);  // when the MAC started on it
    }
    CHECK(b.nic().rx_frames == 4);
    const sim::BlockStats& st = b.nic().blk[Nic::kMacRx];
    CHECK(st.items == 4);
    CHECK(st.busy_ps == 4 * per_frame);
    CHECK(st.stall_ps == 0);
}

TEST_CASE("mac_rx: a slower line or a narrower datapath changes the pace as computed", "[model][block][mac_rx]") {
    ModelConfig slow;
    slow.mac.line_rate_gbps = 25;
    ModelConfig narrow;  // 32 B at 250 MHz carries 64 Gb/s
    narrow.mac.width_bytes = 32;
    narrow.mac.line_rate_gbps = 64;
    for (const ModelConfig& cfg : {slow, narrow}) {
        for (uint32_t len : {65u, 1025u, 1078u}) {
            INFO("width " << cfg.mac.width_bytes << " rate " << cfg.mac.line_rate_gbps << " len " << len);
            const uint64_t per_frame = frame_ps(cfg, len);
            tb::BlockBench<MacRxBlock> b(cfg);
            b.drive(b.nic().wire_in, {{0, tb::bytes_frame(len)}, {0, tb::bytes_frame(len)}});
            const auto& out = b.watch(b.nic().mac_to_parser);
            b.run();
            REQUIRE(out.size() == 2);
            CHECK(out[0].t_ps == per_frame);
            CHECK(out[1].t_ps == 2 * per_frame);
        }
    }
}

TEST_CASE("mac_rx: a full parser queue stalls the MAC and the stall is counted", "[model][block][mac_rx][backpressure]") {
    const ModelConfig cfg;
    const uint32_t len = 1078;
    const uint64_t per_frame = frame_ps(cfg, len);

    tb::BlockBench<MacRxBlock> b(cfg);
    const size_t depth = b.nic().mac_to_parser.depth();
    // depth + 2 frames: the first `depth` fill the queue, the next one waits
    // for room, the last one is received after that.
    const size_t n = depth + 2;
    std::vector<std::pair<uint64_t, std::vector<uint8_t>>> in;
    for (size_t i = 0; i < n; ++i) in.emplace_back(0, tb::bytes_frame(len, uint8_t(i)));
    b.drive(b.nic().wire_in, std::move(in));
    // Nobody takes from the queue until `open`, well after the (depth+1)th
    // frame is in.
    const uint64_t blocked_at = (depth + 1) * per_frame;
    const uint64_t open = blocked_at + 7 * per_frame + 1000;
    const auto& out = b.watch(b.nic().mac_to_parser, open);
    b.run();

    REQUIRE(out.size() == n);
    for (size_t i = 0; i <= depth; ++i) CHECK(out[i].t_ps == open);  // queued, then the stalled one
    CHECK(out[n - 1].t_ps == open + per_frame);  // the MAC resumed only at `open`
    for (size_t i = 0; i < n; ++i) CHECK(out[i].item->frame == tb::bytes_frame(len, uint8_t(i)));
    const sim::BlockStats& st = b.nic().blk[Nic::kMacRx];
    CHECK(st.stall_ps == open - blocked_at);
    CHECK(st.busy_ps == n * per_frame);  // stalled is not busy
    CHECK(st.items == n);
}

TEST_CASE("mac_rx: a PFC frame pauses MAC TX's priorities and goes no further", "[model][block][mac_rx][pfc]") {
    const ModelConfig cfg;  // 100 Gb/s: a pause quantum (512 bits) is 5120 ps
    // 802.1Qbb: dst 01:80:C2:00:00:01, EtherType 0x8808, opcode 0x0101,
    // class-enable vector, eight times; 60 bytes.
    std::vector<uint8_t> pfc(60, 0);
    const uint8_t head[] = {0x01, 0x80, 0xC2, 0, 0, 1, 0x02, 0x53, 0x57, 0, 0, 3, 0x88, 0x08, 0x01, 0x01};
    std::copy(std::begin(head), std::end(head), pfc.begin());
    pfc[16] = 0x00;
    pfc[17] = 0x09;   // priorities 0 and 3
    pfc[18] = 0x00;
    pfc[19] = 0x00;   // priority 0: time 0, a resume
    pfc[24] = 0x01;
    pfc[25] = 0x00;   // priority 3: 256 quanta
    pfc[26] = 0xFF;
    pfc[27] = 0xFF;   // priority 4: not enabled, ignored
    tb::BlockBench<MacRxBlock> b(cfg);
    b.nic().pause_until_ps[0] = 1'000'000'000;  // paused earlier: the resume ends it
    b.drive(b.nic().wire_in, {{0, pfc}, {0, tb::bytes_frame(1078, 1)}});
    const auto& out = b.watch(b.nic().mac_to_parser);
    b.run();
    const uint64_t in = b.nic().rx_path_ps + frame_ps(cfg, 60);  // its last bit in
    CHECK(b.nic().pause_until_ps[3] == in + 256 * 5120);
    CHECK(b.nic().pause_until_ps[0] == in);
    CHECK(b.nic().pause_until_ps[4] == 0);
    CHECK(b.nic().pfc_rx_frames == 1);
    // Only the data frame reaches the parser, after the PFC frame's time on
    // the line.
    REQUIRE(out.size() == 1);
    CHECK(out[0].item->frame == tb::bytes_frame(1078, 1));
    CHECK(out[0].t_ps == in + frame_ps(cfg, 1078));
    CHECK(b.nic().rx_drops_parser == 0);
}
