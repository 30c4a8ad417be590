// Reaction points' state over time (`simnic fabric dcqcn`): what
// RpObserver is told by the RPs of several sources (a fabric's devices),
// kept per RP as Rc, Rt and alpha at the end of each bin of time.
//
// A bin holds the last value told within it, or nothing, and a value holds
// until the next: so a bin's value is the RP's state at the bin's end,
// exactly, with no one sampling the RPs. Each QP's life is one track, from
// its first rp_begin to rp_end or, while it lives, to the time read: a QPN
// used again after its QP was destroyed starts a track of its own.
//
// The record stays within a bound: at it, every track's bins are merged in
// pairs (the later one's value wins where it has one) and the bin doubles,
// so a long run keeps its whole history, more coarsely.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "simnic/congestion/dcqcn.h"

namespace simnic::congestion {

class RpRecord {
public:
    // `bin_ns`: the first bin; `max_cells`: the bound, in numbers kept
    // (a track's bin is three: Rc, Rt, alpha).
    RpRecord(uint64_t bin_ns, size_t max_cells);
    ~RpRecord();
    RpRecord(const RpRecord&) = delete;
    RpRecord& operator=(const RpRecord&) = delete;

    // The observer to give the RPs of source `source` (a device); its
    // reports are kept as that source's. Lives as long as the record.
    RpObserver* source(uint32_t source);

    struct Track {
        uint32_t source = 0, id = 0;  // the device, the RP's id (its QPN)
        unsigned life = 1;             // 1 for the id's first track, 2 for its next...
        uint64_t begin_ns = 0;
        bool ended = false;
        uint64_t end_ns = 0;  // if ended
        // Per bin of the table, from its first: NaN where the RP did not
        // yet, or no longer, exist.
        std::vector<double> rc_bps, rt_bps, alpha;
    };
    struct Table {
        uint64_t bin_ns = 0;  // whole bins of the record's
        size_t bins = 0;      // every track's length
        std::vector<Track> tracks;  // in order of rp_begin
    };
    // The state at the end of each bin of `want_ns` (rounded up to whole
    // bins of the record, widened so that all tracks together hold at most
    // `max_points` numbers), up to `now_ns`: a track that has not ended
    // goes on to it; no bins at all before any RP began. Each RP's reports
    // up to `now_ns` must have been made (DcqcnRp::advance) for the last
    // bins to be exact.
    Table table(uint64_t want_ns, size_t max_points, uint64_t now_ns) const;

    uint64_t bin_ns() const { return bin_ns_; }
    size_t cells() const { return cells_; }

private:
    class Source;
    struct Kept {
        uint32_t source, id;
        unsigned life;
        uint64_t begin_ns;
        uint64_t first = 0;  // the record's bin of rc[0], rt[0] and alpha[0]
        uint64_t last = 0;   // the record's last bin with a report, or the end's
        bool ended = false;
        uint64_t end_ns = 0;
        std::vector<double> rc, rt, alpha;  // NaN: no report in that bin
    };
    void begin(uint32_t source, uint32_t id, uint64_t t_ns);
    void rate(uint32_t source, uint32_t id, uint64_t t_ns, double rc, double rt);
    void alpha(uint32_t source, uint32_t id, uint64_t t_ns, double a);
    void end(uint32_t source, uint32_t id, uint64_t t_ns);
    Kept* current(uint32_t source, uint32_t id);
    void put(Kept& k, std::vector<double> Kept::*v, uint64_t t_ns, double x);
    void halve();

    uint64_t bin_ns_;
    size_t max_cells_, cells_ = 0;
    std::vector<Kept> kept_;
    std::map<std::pair<uint32_t, uint32_t>, size_t> current_;  // (source, id) -> its last track in kept_
    std::vector<std::unique_ptr<Source>> sources_;  // stable: the RPs hold them
};

}  // namespace simnic::congestion
