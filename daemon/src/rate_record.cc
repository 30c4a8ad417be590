// Each flow's bytes over simulated time (rate_record.h).
#include "rate_record.h"

#include <algorithm>
#include <cmath>

namespace simnic::daemon {

void RateRecord::count(std::size_t from, std::size_t to, std::uint64_t ps, std::size_t bytes) {
    std::vector<std::uint64_t>& b = bins_[{from, to}];
    const std::size_t bin = std::size_t(ps / bin_ps_);
    if (bin >= b.size()) {
        cells_ += bin + 1 - b.size();
        b.resize(bin + 1);
    }
    b[bin] += bytes;
    // Over the bound: bins 2k and 2k+1 of every flow become bin k. (In
    // place: bin k is written only after bins k and below were read.)
    while (cells_ > max_cells_) {
        cells_ = 0;
        for (auto& [k, v] : bins_) {
            for (std::size_t i = 0; i < v.size(); ++i) v[i / 2] = (i % 2 ? v[i / 2] : 0) + v[i];
            v.resize((v.size() + 1) / 2);
            cells_ += v.size();
        }
        bin_ps_ *= 2;
    }
}

RateRecord::Rates RateRecord::rates(std::uint64_t want_ps, std::size_t max_points) const {
    std::size_t span = 0;
    for (const auto& [k, b] : bins_) span = std::max(span, b.size());
    std::uint64_t per = std::max<std::uint64_t>(1, (want_ps + bin_ps_ - 1) / bin_ps_);
    if (!bins_.empty()) {
        const std::uint64_t most = std::max<std::size_t>(1, max_points / bins_.size());
        per = std::max<std::uint64_t>(per, (span + most - 1) / most);
    }
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
