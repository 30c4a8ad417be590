// The requester segmentation stage's RTL (roce_req_seg.sv, or one's own
// design with its ports) behind a plain C++ interface: a WQE descriptor in,
// its packet descriptors out, with the edges each took. The cycle model's
// requester runs it on every WQE it sends packets of and compares it with
// transport::seg_packet(), which made the packets (blocks/requester.cc);
// the tests in tb/ compare it with transport::segment().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "simnic/transport/segmentation.h"

namespace simnic::rtl {

struct OwnRtl;
struct OwnRtlBuildInfo;

// What one transaction gave.
struct ReqSegResult {
    std::vector<transport::SegPacket> packets;  // in order, up to the one with m_last_o
    // Edges from the one the descriptor was first offered on through the one
    // that took it: 1 if s_ready_o was high (more: the RTL stalled it).
    uint64_t desc_cycles = 0;
    // Per packet, the edges from the previous one's (the first: the
    // descriptor's) through the one that took it: the time each packet costs.
    std::vector<uint64_t> gaps;
    // Edges m_ready_i was low, and of those the ones where the block held a
    // packet descriptor (m_valid_o high): the backpressure it saw.
    uint64_t ready_low = 0, held = 0;
};

// What one edge did (ReqSegRtl::step): the model steps a transaction edge
// by edge, driving m_ready_i from its output queue's room.
struct ReqSegEdge {
    bool desc_taken = false;  // s_valid_i and s_ready_o: the descriptor went in
    bool packet = false;      // m_valid_o and m_ready_i: `p` came out (`last`: with m_last_o)
    bool last = false;
    bool held = false;  // m_valid_o with m_ready_i low: the block holds its output
    transport::SegPacket p;
};

class ReqSegRtl {
public:
    // Edges from the descriptor's to the first packet's (roce_req_seg.sv).
    static constexpr uint64_t kLatency = 1;
    // The most edges a design swapped in may take for one packet.
    static constexpr uint64_t kMaxCyclesPerPacket = 1024;

    ReqSegRtl();  // roce_req_seg.sv, verilated with simnic
    // One's own design, named by its sources and top: port-checked,
    // verilated and compiled into a shared object (or found in the cache),
    // then loaded (own_rtl.h). Throws OwnRtlError with every problem found.
    explicit ReqSegRtl(const OwnRtl& own, OwnRtlBuildInfo* info = nullptr);
    ~ReqSegRtl();
    ReqSegRtl(const ReqSegRtl&) = delete;
    ReqSegRtl& operator=(const ReqSegRtl&) = delete;

    // One transaction on the idle block: the descriptor offered until taken,
    // the packet descriptors taken as they come until m_last_o, or until
    // w.count of them came without it (the result then has one more, the
    // block's count being wrong). m_ready_i is `ready(edge)` on each edge
    // (0: the edge the descriptor is first offered on), high without it.
    // Throws std::runtime_error if the RTL takes more than
    // kMaxCyclesPerPacket edges with m_ready_i high for the descriptor or a
    // packet.
    ReqSegResult run(const transport::SegWqe& w, const std::function<bool(uint64_t edge)>& ready = {});

    // The same, edge by edge, for a caller that keeps its own time (the
    // cycle model's requester): offer() puts the descriptor on the s_*
    // ports (s_valid_i until an edge takes it); each step() is one edge with
    // m_ready_i = `ready`. Throws as run() does, and if a packet descriptor
    // comes before the descriptor was taken.
    void offer(const transport::SegWqe& w);
    ReqSegEdge step(bool ready);
    // Packets taken since the last offer().
    uint64_t packets() const { return packets_; }
    // Edges stepped with m_ready_i low, and with the block holding its
    // output then (m_valid_o high), since construction.
    uint64_t ready_low_edges() const { return ready_low_; }
    uint64_t held_edges() const { return held_; }

    // Clock cycles simulated so far, reset included.
    uint64_t cycles() const;

    // The driver of one design (req_seg_driver.h).
    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
    bool taken_ = false;     // the offered descriptor went in
    uint64_t since_ = 0;     // edges with m_ready_i high since the last event
    uint64_t packets_ = 0, ready_low_ = 0, held_ = 0;
};

}  // namespace simnic::rtl
