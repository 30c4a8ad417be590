// The table cache's hit, miss, LRU and eviction behaviour.
#include <catch2/catch.hpp>

#include "simnic/model/table_cache.h"

using namespace simnic::model;

namespace {
CacheConfig cfg(uint32_t entries, uint32_t ways) {
    CacheConfig c;
    c.entries = entries;
    c.ways = ways;
    c.hit_cycles = 2;
    c.entry_bytes = 256;
    return c;
}
}  // namespace

TEST_CASE("cache: first touch misses, second hits", "[model][cache]") {
    TableCache c(cfg(64, 4));
    for (uint32_t k = 0; k < 16; ++k) CHECK_FALSE(c.access(k));
    for (uint32_t k = 0; k < 16; ++k) CHECK(c.access(k));
    CHECK(c.stats().hits == 16);
    CHECK(c.stats().misses == 16);
    CHECK(c.stats().hit_rate() == Approx(0.5));
}

TEST_CASE("cache: a working set larger than the cache thrashes under LRU", "[model][cache]") {
    TableCache c(cfg(8, 8));  // fully associative, 8 entries
    for (int round = 0; round < 4; ++round)
        for (uint32_t k = 0; k < 9; ++k) c.access(k);  // 9 keys cycled: LRU always evicts the next one
    CHECK(c.stats().hits == 0);
    CHECK(c.stats().misses == 36);
    CHECK(c.stats().evictions == 36 - 8);
}

TEST_CASE("cache: a working set that fits stays resident", "[model][cache]") {
    TableCache c(cfg(8, 8));
    for (int round = 0; round < 4; ++round)
        for (uint32_t k = 100; k < 108; ++k) c.access(k);
    CHECK(c.stats().misses == 8);
    CHECK(c.stats().hits == 24);
    CHECK(c.stats().evictions == 0);
}

TEST_CASE("cache: LRU keeps the recently used entry", "[model][cache]") {
    TableCache c(cfg(2, 2));  // one set of two ways
    c.access(1);
    c.access(2);
    c.access(1);                // 2 is now least recently used
    CHECK_FALSE(c.access(3));   // evicts 2
    CHECK(c.access(1));
    CHECK_FALSE(c.access(2));
}

TEST_CASE("cache: invalidate forces a miss", "[model][cache]") {
    TableCache c(cfg(64, 4));
    c.access(7);
    c.invalidate(7);
    CHECK_FALSE(c.access(7));
}

// touch() is the hit half of access(): a lookup decided at its issue
// (Nic::lookup_ahead) touches first and only waits on a miss, where
// access() then installs the entry at the lookup's data-out time.
TEST_CASE("cache: touch hits like access and leaves a miss to it", "[model][cache]") {
    TableCache c(cfg(2, 2));  // one set of two ways
    CHECK_FALSE(c.touch(1));  // not cached: nothing counted, nothing installed
    CHECK(c.stats().misses == 0);
    CHECK(c.stats().hits == 0);
    CHECK_FALSE(c.access(1));  // still a miss for access(), which installs it
    CHECK_FALSE(c.access(2));
    CHECK(c.touch(1));  // a hit, counted, and 1 is now the most recently used
    CHECK(c.stats().hits == 1);
    CHECK(c.stats().misses == 2);
    CHECK_FALSE(c.access(3));  // evicts 2, the least recently used
    CHECK(c.touch(1));
    CHECK_FALSE(c.touch(2));
    CHECK(c.stats().evictions == 1);
}
