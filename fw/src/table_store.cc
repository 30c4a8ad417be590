// SPDX-License-Identifier: Apache-2.0
#include "simnic/fw/table_store.h"

#include <algorithm>
#include <cstring>

#include "simnic/hw/field.h"
#include "simnic/hw/layout.h"

namespace simnic::fw {

std::array<std::uint32_t, kTableCount> table_capacities(const std::uint8_t* cap,
                                                        std::uint32_t gid_tbl_len) {
    namespace cb = hw::cap_block;
    auto g = [cap](hw::Field f) { return static_cast<std::uint32_t>(hw::get(cap, cb::kSize, f)); };
    auto plus1 = [](std::uint32_t v) { return v == 0xFFFFFFFFu ? v : v + 1; };
    std::array<std::uint32_t, kTableCount> c{};
    c[static_cast<std::size_t>(Table::Qpc)] = g(cb::first_qpn) + g(cb::max_qp);
    c[static_cast<std::size_t>(Table::Cqc)] = plus1(g(cb::max_cq));
    c[static_cast<std::size_t>(Table::Srqc)] = plus1(g(cb::max_srq));
    // MRs take MPT indices 1..max_mr, windows the next max_mw (hw-spec.md 9.5).
    const std::uint64_t mpt = std::uint64_t{g(cb::max_mr)} + g(cb::max_mw) + 1;
    c[static_cast<std::size_t>(Table::Mpt)] = static_cast<std::uint32_t>(std::min<std::uint64_t>(mpt, 0xFFFFFFFFu));
    c[static_cast<std::size_t>(Table::Mtt)] = g(cb::max_mtt);
    c[static_cast<std::size_t>(Table::Pd)] = plus1(g(cb::max_pd));
    c[static_cast<std::size_t>(Table::Ah)] = plus1(g(cb::max_ah));
    c[static_cast<std::size_t>(Table::Gid)] = gid_tbl_len;
    c[static_cast<std::size_t>(Table::Domain)] = plus1(g(cb::max_domain));
    c[static_cast<std::size_t>(Table::Mcg)] = g(cb::max_mcast_grp);
    return c;
}

MemTableStore::MemTableStore(const std::array<std::uint32_t, kTableCount>& capacities) {
    for (std::size_t i = 0; i < kTableCount; ++i) {
        Tab& t = tabs_[i];
        t.capacity = capacities[i];
        t.esize = entry_size(static_cast<Table>(i));
        t.nchunks = (t.capacity + kChunkEntries - 1) / kChunkEntries;
        t.chunks = std::make_unique<std::atomic<std::uint8_t*>[]>(t.nchunks);
        for (std::uint32_t k = 0; k < t.nchunks; ++k) t.chunks[k].store(nullptr);
    }
}

MemTableStore::~MemTableStore() {
    for (Tab& t : tabs_)
        for (std::uint32_t k = 0; k < t.nchunks; ++k) delete[] t.chunks[k].load();
}

std::uint32_t MemTableStore::capacity(Table t) const {
    return tabs_[static_cast<std::size_t>(t)].capacity;
}

std::uint8_t* MemTableStore::entry(Table t, std::uint32_t index) {
    Tab& tab = tabs_[static_cast<std::size_t>(t)];
    if (index >= tab.capacity) return nullptr;
    std::atomic<std::uint8_t*>& slot = tab.chunks[index / kChunkEntries];
    std::uint8_t* chunk = slot.load(std::memory_order_acquire);
    if (chunk == nullptr) {
        auto* fresh = new std::uint8_t[std::size_t{kChunkEntries} * tab.esize]();
        if (slot.compare_exchange_strong(chunk, fresh, std::memory_order_acq_rel)) {
            chunk = fresh;
        } else {
            delete[] fresh;  // another thread won; `chunk` now holds its pointer
        }
    }
    return chunk + std::size_t{index % kChunkEntries} * tab.esize;
}

// The QPC table is where this matters: QPNs are handed out cyclically over
// max_qp (a million numbers, as rxe's), so without it every 1,024 QPs ever
// created kept a 256 KiB block until the numbers wrapped (the soak's daemon
// grew by 0.2-0.4 MiB a minute with QPs created and destroyed).
bool MemTableStore::release(Table t, std::uint32_t index, bool (*is_free)(const std::uint8_t* entry)) {
    Tab& tab = tabs_[static_cast<std::size_t>(t)];
    if (index >= tab.capacity) return false;
    std::atomic<std::uint8_t*>& slot = tab.chunks[index / kChunkEntries];
    std::uint8_t* chunk = slot.load(std::memory_order_acquire);
    if (chunk == nullptr) return false;
    const std::uint32_t first = index / kChunkEntries * kChunkEntries;
    const std::uint32_t n = std::min(kChunkEntries, tab.capacity - first);
    for (std::uint32_t i = 0; i < n; ++i)
        if (!is_free(chunk + std::size_t{i} * tab.esize)) return false;
    slot.store(nullptr, std::memory_order_release);
    delete[] chunk;
    return true;
}

std::uint32_t MemTableStore::chunks_held(Table t) const {
    const Tab& tab = tabs_[static_cast<std::size_t>(t)];
    std::uint32_t n = 0;
    for (std::uint32_t k = 0; k < tab.nchunks; ++k) n += tab.chunks[k].load(std::memory_order_relaxed) != nullptr;
    return n;
}

}  // namespace simnic::fw
