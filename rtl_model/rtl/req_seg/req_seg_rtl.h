// The requester segmentation stage's RTL (roce_req_seg.sv, or one's own
// design with its ports) behind a plain C++ interface: a WQE descriptor in,
// its packet descriptors out, with the edges each took. The cycle model's
// requester runs it on every WQE it sends packets of and compares it with
// transport::seg_packet(), which made the packets (blocks/requester.cc);
// the tests in tb/ compare it with transport::segment().
#pragma once

#include <cstdint>
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
    // the packet descriptors taken as they come (m_ready_i held high) until
    // m_last_o, or until w.count of them came without it (the result then
    // has one more, the block's count being wrong). Throws
    // std::runtime_error if the RTL takes more than kMaxCyclesPerPacket
    // edges for the descriptor or a packet.
    ReqSegResult run(const transport::SegWqe& w);

    // Clock cycles simulated so far, reset included.
    uint64_t cycles() const;

    // The driver of one design (req_seg_driver.h).
    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace simnic::rtl
