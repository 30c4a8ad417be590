// SPDX-License-Identifier: Apache-2.0
// A first-fit allocator of contiguous runs of units out of [0, total): MTT
// entries in the firmware, bytes of a context's queue arena in the verbs
// provider.
//
// The free space is a set of disjoint extents, kept coalesced: a freed run
// merges with the free extents that touch it on either side, so the set never
// holds two adjacent extents and its size measures fragmentation. alloc()
// takes the lowest-addressed extent long enough (first fit) and hands out its
// beginning; the rest stays free.
//
// Not thread-safe; the owner locks. free() trusts its caller: it must give
// back exactly a run alloc() handed out (or a part of one that is not yet
// free), as the owners do from their own records.
#pragma once

#include <cstddef>
#include <iterator>
#include <map>
#include <optional>
#include <type_traits>

namespace simnic::base {

template <typename T>
class RangeAllocator {
    static_assert(std::is_unsigned_v<T>, "RangeAllocator counts in an unsigned type");

public:
    // Nothing to hand out until assigned one with units.
    RangeAllocator() = default;
    // [0, total) free.
    explicit RangeAllocator(T total) {
        if (total > 0) free_[0] = total;
    }

    // The first run of `count` units, lowest address first; nullopt when no
    // free extent is that long. An empty run is never handed out.
    std::optional<T> alloc(T count) {
        if (count == 0) return std::nullopt;
        for (auto it = free_.begin(); it != free_.end(); ++it) {
            if (it->second < count) continue;
            const T base = it->first, rest = it->second - count;
            free_.erase(it);
            if (rest > 0) free_[base + count] = rest;
            used_ += count;
            return base;
        }
        return std::nullopt;
    }

    // Gives back [base, base + count), merged with the free extents it
    // touches on either side.
    void free(T base, T count) {
        if (count == 0) return;
        used_ -= count;
        T start = base, len = count;
        auto next = free_.lower_bound(base);
        if (next != free_.end() && base + count == next->first) {
            len += next->second;
            next = free_.erase(next);
        }
        if (next != free_.begin()) {
            auto prev = std::prev(next);
            if (prev->first + prev->second == start) {
                start = prev->first;
                len += prev->second;
                free_.erase(prev);
            }
        }
        free_[start] = len;
    }

    // Units handed out and not given back.
    T used() const noexcept { return used_; }
    // The free extents, start -> length, in address order; never two adjacent.
    const std::map<T, T>& free_extents() const noexcept { return free_; }

private:
    std::map<T, T> free_;
    T used_ = 0;
};

}  // namespace simnic::base
