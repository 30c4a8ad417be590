// Each switch egress queue's depth over simulated time (depth_record.h).
#include "depth_record.h"

#include <algorithm>

#include "simnic/base/time_bins.h"

namespace simnic::daemon {

void DepthRecord::set(std::size_t sw, std::uint32_t port, unsigned prio, std::uint64_t ps, std::uint64_t bytes) {
    Kept& k = kept_[{sw, port, prio}];
    const std::size_t bin = std::size_t(ps / bin_ps_);
    if (bin >= k.peak.size()) {
        // The bins since the last change held that depth throughout (an
        // empty queue before its first frame), and so does this one's start.
        cells_ += bin + 1 - k.peak.size();
        k.peak.resize(bin + 1, k.now);
    }
    // (A change told for a bin before the last one's, which a switch does
    // not do, counts in the last bin.)
    std::uint64_t& b = k.peak[std::min(bin, k.peak.size() - 1)];
    b = std::max(b, bytes);
    k.now = bytes;
    // Over the bound: every queue's bins merge in pairs, the deeper of the
    // two kept.
    while (cells_ > max_cells_) {
        cells_ = 0;
        for (auto& [key, q] : kept_) {
            base::merge_bin_pairs(q.peak, [](std::uint64_t x, std::uint64_t y) { return std::max(x, y); });
            cells_ += q.peak.size();
        }
        bin_ps_ *= 2;
    }
}

DepthRecord::Depths DepthRecord::depths(std::uint64_t want_ps, std::size_t max_points, std::uint64_t now_ps) const {
    Depths d;
    std::size_t span = std::size_t(now_ps / bin_ps_) + 1;
    for (const auto& [key, q] : kept_) span = std::max(span, q.peak.size());
    const std::uint64_t per = base::bins_per_table_bin(want_ps, bin_ps_, span, kept_.size(), max_points);
    d.bin_ps = per * bin_ps_;
    if (kept_.empty()) return d;  // no queue ever held a frame: no rows
    d.bins = std::size_t((span + per - 1) / per);
    for (const auto& [key, q] : kept_) {
        Queue out{std::get<0>(key), std::get<1>(key), std::get<2>(key), q.now, std::vector<std::uint64_t>(d.bins, 0)};
        for (std::size_t i = 0; i < span; ++i) {
            // Past its last change a queue holds its depth to now.
            const std::uint64_t v = i < q.peak.size() ? q.peak[i] : q.now;
            std::uint64_t& o = out.peak[i / per];
            o = std::max(o, v);
        }
        d.queues.push_back(std::move(out));
    }
    return d;
}

}  // namespace simnic::daemon
