#include "simnic/model/dma_engine.h"

#include <algorithm>
#include <cmath>

namespace simnic::model {

DmaEngine::DmaEngine(const DmaConfig& cfg)
    : cfg_(cfg), ps_per_byte_(8000.0 / cfg.bandwidth_gbps), tag_free_(std::max<uint32_t>(1, cfg.outstanding_reads), 0) {}

uint64_t DmaEngine::read(uint64_t now, uint32_t bytes, DmaPurpose p, std::vector<DmaArrival>* arrivals) {
    st_.read_bytes[size_t(p)] += bytes;
    ++st_.reads;
    const uint64_t lat = uint64_t(cfg_.read_latency_ns) * 1000;
    const uint32_t mrrs = std::max<uint32_t>(1, cfg_.max_read_request_bytes);
    uint64_t issue = now, done = now;
    uint32_t left = bytes;
    do {
        const uint32_t r = std::min(left, mrrs);
        // The tag that frees first carries this request. Every request
        // ends after the one before it on the inbound link (start is at
        // least in_free_, and in_free_ becomes its end), so tags free in
        // the order they were given: the next in turn is the first free,
        // as the smallest of tag_free_ would be (a search of every tag
        // for every request was 3% of a simulation's instructions).
        uint64_t* tag = &tag_free_[next_tag_];
        next_tag_ = next_tag_ + 1 == tag_free_.size() ? 0 : next_tag_ + 1;
        if (*tag > issue) {
            st_.tag_wait_ps += *tag - issue;
            issue = *tag;
        }
        const uint64_t xfer = link_ps(r);
        const uint64_t start = std::max(issue + lat, in_free_);
        const uint64_t end = start + xfer;
        in_free_ = end;
        st_.in_busy_ps += xfer;
        *tag = end;
        if (__builtin_expect(obs_ != nullptr, 0)) {  // a waveform is armed
            obs_->tag_held(issue, end);
            obs_->link_in(start, end);
        }
        done = std::max(done, end);
        if (arrivals) arrivals->push_back({start, end, r});
        ++st_.read_requests;
        left -= r;
    } while (left > 0);
    st_.read_latency_sum_ps += done - now;
    st_.read_latency_max_ps = std::max(st_.read_latency_max_ps, done - now);
    return done;
}

uint64_t arrival_of(const std::vector<DmaArrival>& spans, uint64_t bytes) {
    uint64_t at = 0;
    for (const DmaArrival& a : spans) {
        if (bytes <= a.bytes) {
            if (a.bytes == 0) return a.end_ps;
            // Rounded up: the byte is not there before.
            return a.start_ps + ((a.end_ps - a.start_ps) * bytes + a.bytes - 1) / a.bytes;
        }
        bytes -= a.bytes;
        at = a.end_ps;
    }
    return at;
}

uint64_t DmaEngine::write(uint64_t now, uint32_t bytes, DmaPurpose p) {
    st_.write_bytes[size_t(p)] += bytes;
    ++st_.writes;
    const uint64_t xfer = link_ps(bytes);
    const uint64_t start = std::max(now, out_free_);
    out_free_ = start + xfer;
    st_.out_busy_ps += xfer;
    if (__builtin_expect(obs_ != nullptr, 0)) obs_->link_out(start, out_free_);
    return out_free_ + uint64_t(cfg_.write_latency_ns) * 1000;
}

const char* to_string(DmaPurpose p) {
    switch (p) {
        case DmaPurpose::WqeFetch: return "wqe_fetch";
        case DmaPurpose::RecvWqe: return "recv_wqe";
        case DmaPurpose::Payload: return "payload";
        case DmaPurpose::Atomic: return "atomic";
        case DmaPurpose::Cqe: return "cqe";
        case DmaPurpose::Eqe: return "eqe";
        case DmaPurpose::Context: return "context";
        case DmaPurpose::kCount: break;
    }
    return "?";
}

}  // namespace simnic::model
