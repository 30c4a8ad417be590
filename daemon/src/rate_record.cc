// Each flow's bytes over simulated time (rate_record.h).
#include "rate_record.h"

#include <algorithm>
#include <cmath>

#include "simnic/base/time_bins.h"

namespace simnic::daemon {

void RateRecord::count(std::size_t from, std::size_t to, std::uint64_t ps, std::size_t bytes) {
    std::vector<std::uint64_t>& b = bins_[{from, to}];
    const std::size_t bin = std::size_t(ps / bin_ps_);
    if (bin >= b.size()) {
        cells_ += bin + 1 - b.size();
        b.resize(bin + 1);
    }
    b[bin] += bytes;
    // Over the bound: every flow's bins merge in pairs, their bytes added.
    while (cells_ > max_cells_) {
        cells_ = 0;
        for (auto& [k, v] : bins_) {
            base::merge_bin_pairs(v, [](std::uint64_t x, std::uint64_t y) { return x + y; });
            cells_ += v.size();
        }
        bin_ps_ *= 2;
    }
}

RateRecord::Rates RateRecord::rates(std::uint64_t want_ps, std::size_t max_points) const {
    std::size_t span = 0;
    for (const auto& [k, b] : bins_) span = std::max(span, b.size());
    const std::uint64_t per = base::bins_per_table_bin(want_ps, bin_ps_, span, bins_.size(), max_points);
    Rates r;
    r.bin_ps = per * bin_ps_;
    r.bins = std::size_t((span + per - 1) / per);
    for (const auto& [k, b] : bins_) {
        Flow f{k.first, k.second, 0, {}};
        for (std::size_t i = 0; i < r.bins; ++i) {
            std::uint64_t sum = 0;
            for (std::size_t j = i * per; j < std::min<std::size_t>(b.size(), (i + 1) * per); ++j) sum += b[j];
            f.bytes += sum;
            // Gb/s to the kb/s: numbers no longer than they need.
            f.gbps.push_back(std::round(double(sum) * 8 / double(r.bin_ps) * 1e3 * 1e6) / 1e6);
        }
        r.flows.push_back(std::move(f));
    }
    return r;
}

}  // namespace simnic::daemon
