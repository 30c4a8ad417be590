// A set-associative, LRU cache of device-table entries (QPC, MPT, MTT) that
// live in host memory, ICM-style (issue 5). It holds only tags: the entries
// themselves are the firmware's tables, which the functional datapath reads.
// What the cache decides is time: a hit costs hit_cycles, a miss a DMA read
// of entry_bytes first (the caller asks the DMA engine). Plain C++.
#pragma once

#include <cstdint>
#include <vector>

#include "simnic/model/config.h"

namespace simnic::model {

class TableCache {
public:
    explicit TableCache(const CacheConfig& cfg);

    // Looks `key` up and makes it most recently used; on a miss, installs it
    // (evicting the set's least recently used entry if the set is full).
    bool access(uint32_t key);
    // access() for a key that is cached (true); for one that is not, false
    // and nothing changes (no miss counted, nothing installed).
    bool touch(uint32_t key);
    // Drops `key` (the firmware changed or destroyed the entry).
    void invalidate(uint32_t key);

    struct Stats {
        uint64_t hits = 0, misses = 0, evictions = 0;
        double hit_rate() const { return hits + misses ? double(hits) / double(hits + misses) : 0.0; }
    };
    const Stats& stats() const { return st_; }
    void reset_stats() { st_ = Stats{}; }
    const CacheConfig& config() const { return cfg_; }

private:
    struct Way {
        bool valid = false;
        uint32_t key = 0;
        uint64_t used = 0;  // LRU stamp
    };
    Way* set_of(uint32_t key);
    // The way holding `key` in `set`, or null.
    Way* find(Way* set, uint32_t key);
    CacheConfig cfg_;
    uint32_t sets_;
    std::vector<Way> ways_;
    uint64_t clock_ = 0;
    Stats st_;
};

}  // namespace simnic::model
