#include "req_seg_rtl.h"

#include <stdexcept>
#include <string>

#include "Vroce_req_seg.h"
#include "Vroce_req_seg___024root.h"
#include "own_req_seg.h"
#include "req_seg_driver.h"

namespace simnic::rtl {

ReqSegRtl::ReqSegRtl() : impl_(std::make_unique<ReqSegDriver<Vroce_req_seg, true>>()) {}
ReqSegRtl::ReqSegRtl(const OwnRtl& own, OwnRtlBuildInfo* info) : impl_(load_own_req_seg(own, info)) {}
ReqSegRtl::~ReqSegRtl() = default;

uint64_t ReqSegRtl::cycles() const { return impl_->cycles(); }

void ReqSegRtl::offer(const transport::SegWqe& w) {
    impl_->offer(w);
    taken_ = false;
    since_ = packets_ = 0;
}

ReqSegEdge ReqSegRtl::step(bool ready) {
    // Edges with m_ready_i low do not count towards the limit: the block
    // waits on its consumer then, not on itself.
    if (ready && ++since_ > kMaxCyclesPerPacket)
        throw std::runtime_error(taken_ ? "req_seg: no packet descriptor (m_valid_o) for " +
                                              std::to_string(kMaxCyclesPerPacket) + " edges"
                                        : "req_seg: the descriptor was never taken (s_ready_o low)");
    const bool was_taken = taken_;
    const ReqSegEdge e = impl_->step(ready);
    ready_low_ += !ready;
    held_ += e.held;
    if (e.packet && !was_taken) throw std::runtime_error("req_seg: a packet descriptor came before the WQE was taken");
    if (e.desc_taken) {
        taken_ = true;
        since_ = 0;
    }
    if (e.packet) {
        ++packets_;
        since_ = 0;
    }
    return e;
}

ReqSegResult ReqSegRtl::run(const transport::SegWqe& w, const std::function<bool(uint64_t)>& ready) {
    offer(w);
    ReqSegResult r;
    uint64_t since = cycles();  // the last event: offered, taken, a packet
    for (uint64_t edge = 0;; ++edge) {
        const bool rdy = !ready || ready(edge);
        const ReqSegEdge e = step(rdy);
        r.ready_low += !rdy;
        r.held += e.held;
        if (e.desc_taken) {
            r.desc_cycles = cycles() - since;
            since = cycles();
        }
        if (e.packet) {
            r.packets.push_back(e.p);
            r.gaps.push_back(cycles() - since);
            since = cycles();
            if (e.last || r.packets.size() > w.count) break;
        }
    }
    // The first packet's time includes the descriptor's.
    if (!r.gaps.empty()) r.gaps[0] += r.desc_cycles;
    return r;
}

}  // namespace simnic::rtl
