// RangeAllocator: first fit, coalescing on both sides, exhaustion and
// fragmentation, checked through the free extents it keeps.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <vector>

#include "simnic/base/range_allocator.h"

using simnic::base::RangeAllocator;
using Extents = std::map<std::uint32_t, std::uint32_t>;

TEST_CASE("range allocator: runs come out in address order, first fit", "[base][range]") {
    RangeAllocator<std::uint32_t> a(100);
    CHECK(a.free_extents() == Extents{{0, 100}});
    CHECK(a.alloc(10) == std::optional<std::uint32_t>(0));
    CHECK(a.alloc(20) == std::optional<std::uint32_t>(10));
    CHECK(a.alloc(5) == std::optional<std::uint32_t>(30));
    CHECK(a.used() == 35);
    CHECK(a.free_extents() == Extents{{35, 65}});

    // A hole at [10, 30): a run that fits goes there, the lowest fit.
    a.free(10, 20);
    CHECK(a.free_extents() == Extents{{10, 20}, {35, 65}});
    CHECK(a.alloc(8) == std::optional<std::uint32_t>(10));
    CHECK(a.free_extents() == Extents{{18, 12}, {35, 65}});
    // Too long for the hole: taken from the next extent that fits.
    CHECK(a.alloc(13) == std::optional<std::uint32_t>(35));
    CHECK(a.free_extents() == Extents{{18, 12}, {48, 52}});
    // Exactly the hole's length: the extent disappears.
    CHECK(a.alloc(12) == std::optional<std::uint32_t>(18));
    CHECK(a.free_extents() == Extents{{48, 52}});
    CHECK(a.used() == 48);
}

TEST_CASE("range allocator: a freed run merges with its free neighbours", "[base][range]") {
    RangeAllocator<std::uint32_t> a(40);
    const auto r0 = a.alloc(10), r1 = a.alloc(10), r2 = a.alloc(10), r3 = a.alloc(10);
    REQUIRE((r0 && r1 && r2 && r3));
    CHECK(a.free_extents().empty());

    SECTION("left neighbour only") {
        a.free(*r0, 10);
        a.free(*r1, 10);
        CHECK(a.free_extents() == Extents{{0, 20}});
    }
    SECTION("right neighbour only") {
        a.free(*r2, 10);
        a.free(*r1, 10);
        CHECK(a.free_extents() == Extents{{10, 20}});
    }
    SECTION("both sides: three extents become one") {
        a.free(*r0, 10);
        a.free(*r2, 10);
        CHECK(a.free_extents() == Extents{{0, 10}, {20, 10}});
        a.free(*r1, 10);
        CHECK(a.free_extents() == Extents{{0, 30}});
        a.free(*r3, 10);
        CHECK(a.free_extents() == Extents{{0, 40}});
        CHECK(a.used() == 0);
        // The whole range is one run again.
        CHECK(a.alloc(40) == std::optional<std::uint32_t>(0));
    }
    SECTION("no neighbour: a separate extent") {
        a.free(*r1, 10);
        a.free(*r3, 10);
        CHECK(a.free_extents() == Extents{{10, 10}, {30, 10}});
    }
}

TEST_CASE("range allocator: exhaustion", "[base][range]") {
    RangeAllocator<std::uint32_t> a(16);
    CHECK_FALSE(a.alloc(17).has_value());
    CHECK(a.alloc(16) == std::optional<std::uint32_t>(0));
    CHECK_FALSE(a.alloc(1).has_value());
    CHECK(a.used() == 16);
    // A failed alloc changes nothing.
    CHECK(a.free_extents().empty());
    a.free(0, 16);
    CHECK(a.alloc(16) == std::optional<std::uint32_t>(0));

    // Empty allocators and empty runs.
    RangeAllocator<std::uint32_t> none;
    CHECK_FALSE(none.alloc(1).has_value());
    CHECK(none.free_extents().empty());
    RangeAllocator<std::uint32_t> zero(0);
    CHECK_FALSE(zero.alloc(1).has_value());
    RangeAllocator<std::uint32_t> b(8);
    CHECK_FALSE(b.alloc(0).has_value());
    b.free(3, 0);  // giving back nothing is harmless
    CHECK(b.free_extents() == Extents{{0, 8}});
    CHECK(b.used() == 0);
}

TEST_CASE("range allocator: fragmentation refuses a run the free total would hold", "[base][range]") {
    RangeAllocator<std::uint32_t> a(64);
    std::vector<std::uint32_t> runs;
    for (int i = 0; i < 16; ++i) runs.push_back(*a.alloc(4));
    // Free every other run: 32 units free, in 8 extents of 4.
    for (std::size_t i = 0; i < runs.size(); i += 2) a.free(runs[i], 4);
    CHECK(a.free_extents().size() == 8);
    CHECK(a.used() == 32);
    CHECK_FALSE(a.alloc(5).has_value());
    CHECK(a.alloc(4) == std::optional<std::uint32_t>(0));
    // Giving back the rest joins everything into one extent again.
    for (std::size_t i = 1; i < runs.size(); i += 2) a.free(runs[i], 4);
    a.free(0, 4);
    CHECK(a.free_extents() == Extents{{0, 64}});
}

TEST_CASE("range allocator: random alloc/free against a unit map", "[base][range]") {
    // Byte-sized units, the queue arena's type; a model marks each unit.
    constexpr std::size_t kTotal = 4096;
    RangeAllocator<std::size_t> a(kTotal);
    std::vector<bool> taken(kTotal, false);
    std::vector<std::pair<std::size_t, std::size_t>> live;
    std::mt19937 rng(13);
    int refused = 0, refused_with_room = 0;
    for (int step = 0; step < 5000; ++step) {
        // Two allocations for each free: the range fills up and fragments.
        if (live.empty() || rng() % 3 != 0) {
            const std::size_t len = 1 + rng() % 200;
            const auto got = a.alloc(len);
            // First fit: the lowest start whose units [s, s + len) are all free.
            std::optional<std::size_t> want;
            for (std::size_t s = 0; s + len <= kTotal && !want; ++s) {
                std::size_t n = 0;
                while (n < len && !taken[s + n]) ++n;
                if (n == len) want = s;
                else s += n;
            }
            REQUIRE(got == want);
            if (!got) {
                ++refused;
                if (kTotal - a.used() >= len) ++refused_with_room;  // fragmentation
            }
            if (got) {
                for (std::size_t i = 0; i < len; ++i) taken[*got + i] = true;
                live.emplace_back(*got, len);
            }
        } else {
            const std::size_t k = rng() % live.size();
            a.free(live[k].first, live[k].second);
            for (std::size_t i = 0; i < live[k].second; ++i) taken[live[k].first + i] = false;
            live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
        }
        // The extents are exactly the maximal runs of free units.
        std::map<std::size_t, std::size_t> want_free;
        std::size_t used = 0;
        for (std::size_t i = 0; i < kTotal;) {
            if (taken[i]) {
                ++used;
                ++i;
                continue;
            }
            std::size_t n = 0;
            while (i + n < kTotal && !taken[i + n]) ++n;
            want_free[i] = n;
            i += n;
        }
        REQUIRE(a.used() == used);
        REQUIRE(a.free_extents() == want_free);
    }
    // The run got fragmented enough to refuse runs the free total would hold.
    INFO(refused << " refused, " << refused_with_room << " of them for fragmentation");
    CHECK(refused_with_room > 0);
}
