// MapSpans: which of a process's memory is private, from /proc/PID/maps
// (this process's own mappings, made here).
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdint>

#include "map_spans.h"

using simnic::soft_engine::MapSpans;

namespace {

uintptr_t map(size_t len, int flags, void* at = nullptr) {
    void* p = mmap(at, len, PROT_READ | PROT_WRITE, flags | MAP_ANONYMOUS | (at ? MAP_FIXED : 0), -1, 0);
    REQUIRE(p != MAP_FAILED);
    return reinterpret_cast<uintptr_t>(p);
}

}  // namespace

TEST_CASE("MapSpans: private, shared, across both, and not mapped", "[soft_engine][maps]") {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    // Three pages: private, shared, private (each its own mapping).
    const uintptr_t base = map(3 * page, MAP_PRIVATE);
    map(page, MAP_SHARED, reinterpret_cast<void*>(base + page));
    const pid_t me = getpid();
    MapSpans m;
    CHECK(m.all_private(me, base, page));
    CHECK(m.all_private(me, base + 2 * page + 100, 200));
    CHECK_FALSE(m.all_private(me, base + page, 8));
    CHECK_FALSE(m.all_private(me, base + page - 8, 16));  // the private page's end and the shared one's start
    // A hole: not mapped, so not known to be private.
    const uintptr_t hole = map(page, MAP_PRIVATE);
    REQUIRE(munmap(reinterpret_cast<void*>(hole), page) == 0);
    CHECK_FALSE(m.all_private(me, hole, page));
    // A process that does not exist.
    CHECK_FALSE(m.all_private(0x7ffffff0, base, page));
    // Kept until cleared: the first page made shared is seen after clear().
    CHECK(m.all_private(me, base, page));
    map(page, MAP_SHARED, reinterpret_cast<void*>(base));
    m.clear();
    CHECK_FALSE(m.all_private(me, base, page));
    CHECK(m.all_private(me, base + 2 * page, page));
    munmap(reinterpret_cast<void*>(base), 3 * page);
}

TEST_CASE("MapSpans: a range over several private mappings in a row", "[soft_engine][maps]") {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    const uintptr_t base = map(4 * page, MAP_PRIVATE);
    // Different protections keep the kernel from merging them into one.
    REQUIRE(mprotect(reinterpret_cast<void*>(base + page), page, PROT_READ) == 0);
    REQUIRE(mprotect(reinterpret_cast<void*>(base + 3 * page), page, PROT_READ) == 0);
    MapSpans m;
    CHECK(m.all_private(getpid(), base, 4 * page));
    munmap(reinterpret_cast<void*>(base), 4 * page);
}
