// Each flow's bytes over simulated time, for `simnic fabric rates`
// (fabrics.h): a fabric's tap counts every frame as it leaves its sender,
// by (from, to) host, in bins of simulated time. The record stays within a
// bound: at it, every flow's bins are merged in pairs and the bin doubles,
// so a long run, or a large fabric, keeps its whole history, more coarsely.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace simnic::daemon {

class RateRecord {
public:
    // `bin_ps`: the first bin; `max_cells`: the bound, in bins of all flows
    // together (8 bytes each).
    RateRecord(std::uint64_t bin_ps, std::size_t max_cells) : bin_ps_(bin_ps), max_cells_(max_cells) {}

    void count(std::size_t from, std::size_t to, std::uint64_t ps, std::size_t bytes);

    struct Flow {
        std::size_t from, to;
        std::uint64_t bytes;       // in all
        std::vector<double> gbps;  // per bin
    };
    struct Rates {
        std::uint64_t bin_ps = 0;  // as given: whole bins of the record's
        std::vector<Flow> flows;   // by (from, to); every one `bins` long
        std::size_t bins = 0;
    };
    // Gb/s per `want_ps` rounded up to whole bins of the record, widened
    // so that all flows together hold at most `max_points` numbers.
    Rates rates(std::uint64_t want_ps, std::size_t max_points) const;

    std::uint64_t bin_ps() const { return bin_ps_; }
    std::size_t cells() const { return cells_; }

private:
    std::uint64_t bin_ps_;
    std::size_t max_cells_, cells_ = 0;
    std::map<std::pair<std::size_t, std::size_t>, std::vector<std::uint64_t>> bins_;
};

}  // namespace simnic::daemon
