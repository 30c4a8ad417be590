// Each switch egress queue's depth over simulated time (depth_record.h).
#include "depth_record.h"

#include <algorithm>

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
    // Over the bound: bins 2i and 2i+1 of every queue become bin i, the
    // deeper of the two. (In place: bin i is written only after bins i and
    // below were read.)
    while (cells_ > max_cells_) {
        cells_ = 0;
        for (auto& [key, q] : kept_) {
            for (std::size_t i = 0; i < q.peak.size(); ++i)
                q.peak[i / 2] = i % 2 ? std::max(q.peak[i / 2], q.peak[i]) : q.peak[i];
            q.peak.resize((q.peak.size() + 1) / 2);
            cells_ += q.peak.size();
        }
        bin_ps_ *= 2;
    }
}

DepthRecord::Depths DepthRecord::depths(std::uint64_t want_ps, std::size_t max_points, std::uint64_t now_ps) const {
    Depths d;
    std::uint64_t per = std::max<std::uint64_t>(1, (want_ps + bin_ps_ - 1) / bin_ps_);
    d.bin_ps = per * bin_ps_;
    if (kept_.empty()) return d;  // no queue ever held a frame: no rows
    std::size_t span = std::size_t(now_ps / bin_ps_) + 1;
    for (const auto& [key, q] : kept_) span = std::max(span, q.peak.size());
    const std::uint64_t most = std::max<std::size_t>(1, max_points / kept_.size());
    per = std::max<std::uint64_t>(per, (span + most - 1) / most);
    d.bin_ps = per * bin_ps_;
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
