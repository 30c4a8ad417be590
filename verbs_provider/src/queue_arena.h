// Queue memory of one context (hw-spec 1.3, 6, 7): where SQs, RQs, SRQs and
// CQs live.
//
// Rings go into one arena per context: a sealed memfd that this process maps
// and shares with the device (share_memory, then ATTACH_DOMAIN of kind SHM),
// so the device fetches WQEs and writes CQEs with loads and stores instead
// of a system call each — on the send path of a small message those were
// most of the engine's time. The arena reserves address space, not memory:
// pages exist once a ring touches them and go back when it is freed. When
// the arena cannot be made (no memfd, a device without SHM support, a full
// arena), rings fall back to ordinary memory in the boot domain.
//
// A ring smaller than a page (a CQ of a few entries, an SRQ or a QP's queue
// with few WRs: 128 bytes for the smallest CQ) shares a page with rings of its
// size class, each at an offset that is a multiple of its size: a page each
// made a million small CQs take 7 GiB of the application's memory (a page in
// the arena, a page-aligned allocation past it) for 128 MiB of rings. The page goes back once its last ring is freed. Out of the arena
// (ordinary memory) such a ring is aligned to its slot's size, not a page.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "simnic/base/range_allocator.h"
#include "simnic/host/context.h"

namespace simnic::verbs {

class QueueArena {
public:
    QueueArena() = default;
    ~QueueArena();
    QueueArena(const QueueArena&) = delete;
    QueueArena& operator=(const QueueArena&) = delete;

    // `bytes` of zeroed, page-aligned queue memory and the DMA domain the
    // device must be told it is in; null when out of memory.
    // `shared` false: ordinary memory even when the arena exists.
    std::uint8_t* alloc(host::Context& hc, std::size_t bytes, std::uint16_t& domain, bool shared = true);
    // Gives back what alloc() returned (null is ignored).
    void free(std::uint8_t* p);

    static constexpr std::size_t kArenaBytes = std::size_t{1} << 30;

private:
    bool init_locked(host::Context& hc);
    // Small rings: size classes of 64 .. 2048 bytes (a power of two each).
    static constexpr std::size_t kMinSlot = 64;
    static constexpr int kClasses = 6;
    struct SlotClass {
        std::map<std::size_t, std::uint64_t> pages;  // page offset -> slots in use (a bit each)
        std::set<std::size_t> partial;               // pages with a free slot
    };
    static std::size_t slot_size(std::size_t bytes);
    std::optional<std::size_t> alloc_slot_locked(std::size_t len);
    void free_slot_locked(std::size_t off, std::size_t len);
    std::array<SlotClass, kClasses> slots_;
    std::mutex mu_;
    bool tried_ = false;
    std::uint8_t* base_ = nullptr;
    std::uint16_t domain_ = 0;
    base::RangeAllocator<std::size_t> free_;   // offsets into the arena, in pages' bytes
    std::map<std::size_t, std::size_t> used_;  // offset -> length of each ring handed out
};

}  // namespace simnic::verbs
