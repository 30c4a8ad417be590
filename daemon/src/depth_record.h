// Each switch egress queue's depth over simulated time, for `simnic fabric
// depth` (fabrics.h): the switches tell every change of a queue's depth
// (Switch::depth_tap), and the record keeps, per queue and bin of
// simulated time, the deepest the queue was within the bin. A peak is
// exact under merging (the deeper of two bins), so the record stays within
// a bound as RateRecord does: at it, every queue's bins merge in pairs and
// the bin doubles, and the deepest the queue ever was stays in it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

namespace simnic::daemon {

class DepthRecord {
public:
    // `bin_ps`: the first bin; `max_cells`: the bound, in bins of all
    // queues together (8 bytes each).
    DepthRecord(std::uint64_t bin_ps, std::size_t max_cells) : bin_ps_(bin_ps), max_cells_(max_cells) {}

    // Queue (sw, port, prio) holds `bytes` from `ps` on (in time order).
    void set(std::size_t sw, std::uint32_t port, unsigned prio, std::uint64_t ps, std::uint64_t bytes);

    struct Queue {
        std::size_t sw;
        std::uint32_t port;
        unsigned prio;
        std::uint64_t now_bytes;           // its depth at the time read
        std::vector<std::uint64_t> peak;   // per bin, bytes
    };
    struct Depths {
        std::uint64_t bin_ps = 0;   // whole bins of the record's
        std::vector<Queue> queues;  // every queue that ever held a frame, by (sw, port, prio)
        std::size_t bins = 0;       // every queue's `peak` this long
    };
    // The peak per `want_ps` (rounded up to whole bins of the record,
    // widened so that all queues together hold at most `max_points`
    // numbers), from 0 to `now_ps`: a queue holds its last depth to then.
    Depths depths(std::uint64_t want_ps, std::size_t max_points, std::uint64_t now_ps) const;

    std::uint64_t bin_ps() const { return bin_ps_; }
    std::size_t cells() const { return cells_; }

private:
    struct Kept {
        std::uint64_t now = 0;            // the depth since the last change
        std::vector<std::uint64_t> peak;  // to the bin of the last change
    };
    std::uint64_t bin_ps_;
    std::size_t max_cells_, cells_ = 0;
    std::map<std::tuple<std::size_t, std::uint32_t, unsigned>, Kept> kept_;
};

}  // namespace simnic::daemon
