#include "simnic/model/table_cache.h"

#include <algorithm>

namespace simnic::model {

TableCache::TableCache(const CacheConfig& cfg)
    : cfg_(cfg), sets_(std::max<uint32_t>(1, cfg.ways ? cfg.entries / cfg.ways : 1)),
      ways_(size_t(sets_) * std::max<uint32_t>(1, cfg.ways)) {}

TableCache::Way* TableCache::set_of(uint32_t key) {
    // A multiplicative hash spreads consecutive numbers (QPNs, MPT indexes)
    // evenly; real designs index with low bits, which this matches for
    // sequential keys while not aliasing strided ones.
    const uint32_t h = (key * 0x9E3779B1u) >> 7;
    return &ways_[size_t(h % sets_) * std::max<uint32_t>(1, cfg_.ways)];
}

TableCache::Way* TableCache::find(Way* set, uint32_t key) {
    const uint32_t nw = std::max<uint32_t>(1, cfg_.ways);
    for (uint32_t i = 0; i < nw; ++i)
        if (set[i].valid && set[i].key == key) return &set[i];
    return nullptr;
}

bool TableCache::touch(uint32_t key) {
    Way* w = find(set_of(key), key);
    if (!w) return false;
    w->used = ++clock_;
    ++st_.hits;
    return true;
}

bool TableCache::access(uint32_t key) {
    if (touch(key)) return true;
    ++clock_;
    Way* set = set_of(key);
    const uint32_t nw = std::max<uint32_t>(1, cfg_.ways);
    ++st_.misses;
    Way* victim = set;
    for (uint32_t i = 0; i < nw; ++i) {
        if (!set[i].valid) {
            victim = &set[i];
            break;
        }
        if (set[i].used < victim->used) victim = &set[i];
    }
    if (victim->valid) ++st_.evictions;
    *victim = Way{true, key, clock_};
    return false;
}

void TableCache::invalidate(uint32_t key) {
    Way* set = set_of(key);
    for (uint32_t i = 0; i < std::max<uint32_t>(1, cfg_.ways); ++i)
        if (set[i].valid && set[i].key == key) set[i].valid = false;
}

}  // namespace simnic::model
