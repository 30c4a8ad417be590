// The DMA engine and its PCIe link (issue 5): a transaction-level model,
// exact to the picosecond, of how long host memory accesses take.
//
// A read is cut into requests of at most max_read_request_bytes. Each
// request needs one of `outstanding_reads` tags; its completion data comes
// back read_latency_ns after the request and then occupies the inbound link
// for its bytes plus one TLP overhead per max_payload_bytes. The tag is free
// again when its last completion has arrived. Writes are posted: their TLPs
// occupy the outbound link, and the data is visible in host memory
// write_latency_ns after the last TLP left. Both directions run at
// bandwidth_gbps independently (PCIe is full duplex).
//
// Plain C++ (no SystemC): the blocks ask it "when will this be done?" and
// wait until then, which keeps the model fast and this class testable alone.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "simnic/model/config.h"
#include "simnic/soft_engine/timing.h"

namespace simnic::model {

using soft_engine::DmaPurpose;  // what the datapath records each transfer for

// Where a read's data comes in: one span of the inbound link per request,
// in link order, and the bytes its completions bring. A stage that streams
// (TX build with pipeline.cut_through) starts on the first bytes instead of
// waiting for the last.
struct DmaArrival {
    uint64_t start_ps = 0, end_ps = 0;
    uint32_t bytes = 0;
};
// When the first `bytes` of the data in `spans` are in: within a request
// they come in at the link's rate (its TLP overheads spread evenly, a
// fraction of a nanosecond at most); past the spans' total, the last end.
uint64_t arrival_of(const std::vector<DmaArrival>& spans, uint64_t bytes);

class DmaEngine {
public:
    explicit DmaEngine(const DmaConfig& cfg);

    // A read of `bytes` issued at `now_ps`; returns when its last byte has
    // arrived. Requests are issued in order, each as soon as a tag is free.
    // With `arrivals`, each request's span of the inbound link is appended.
    uint64_t read(uint64_t now_ps, uint32_t bytes, DmaPurpose p, std::vector<DmaArrival>* arrivals = nullptr);
    // A posted write of `bytes` at `now_ps`; returns when it is visible.
    uint64_t write(uint64_t now_ps, uint32_t bytes, DmaPurpose p);

    // Sees when each read request holds its tag and when each link carries
    // data (the waveform's DMA signals); every interval is [from, to) in ps,
    // and may lie ahead of the caller's current time.
    class Observer {
    public:
        virtual ~Observer() = default;
        virtual void tag_held(uint64_t from_ps, uint64_t to_ps) = 0;
        virtual void link_in(uint64_t from_ps, uint64_t to_ps) = 0;
        virtual void link_out(uint64_t from_ps, uint64_t to_ps) = 0;
    };
    void observe(Observer* o) { obs_ = o; }
    // Per tag, when it is free again (ps); and when each link is free again.
    const std::vector<uint64_t>& tag_free() const { return tag_free_; }
    uint64_t link_in_free() const { return in_free_; }
    uint64_t link_out_free() const { return out_free_; }

    // Link time of `bytes` of data cut into TLPs of at most max_payload_bytes.
    uint64_t link_ps(uint32_t bytes) const {
        const uint32_t mps = std::max<uint32_t>(1, cfg_.max_payload_bytes);
        const uint32_t tlps = std::max<uint32_t>(1, (bytes + mps - 1) / mps);
        return uint64_t(std::ceil((double(bytes) + double(tlps) * cfg_.tlp_overhead_bytes) * ps_per_byte_));
    }

    struct Stats {
        std::array<uint64_t, size_t(DmaPurpose::kCount)> read_bytes{}, write_bytes{};
        uint64_t reads = 0, writes = 0, read_requests = 0;
        uint64_t read_latency_sum_ps = 0, read_latency_max_ps = 0;  // issue to last byte
        uint64_t tag_wait_ps = 0;      // requests waiting for a free tag
        uint64_t in_busy_ps = 0, out_busy_ps = 0;  // link occupancy per direction
    };
    const Stats& stats() const { return st_; }
    void reset_stats() { st_ = Stats{}; }

private:
    DmaConfig cfg_;
    double ps_per_byte_;
    std::vector<uint64_t> tag_free_;  // per tag: when it is free again
    size_t next_tag_ = 0;             // the tag given out least recently (read())
    uint64_t in_free_ = 0, out_free_ = 0;
    Stats st_;
    Observer* obs_ = nullptr;
};

const char* to_string(DmaPurpose p);

}  // namespace simnic::model
