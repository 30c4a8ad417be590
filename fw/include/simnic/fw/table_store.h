// SPDX-License-Identifier: Apache-2.0
// simnic firmware: device table storage (hw-spec.md 9): the tables in
// process memory, behind the contract's TableStore (simnic/hw/tables.h).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "simnic/fw/types.h"

namespace simnic::fw {

// Capacities the CAP_BLOCK implies: QPC indexed by QPN up to first_qpn +
// max_qp - 1; CQC, SRQC, MPT, PD, AH and DOMAIN by numbers 1..max (index 0
// unused); MTT max_mtt; GID gid_tbl_len.
std::array<std::uint32_t, kTableCount> table_capacities(const std::uint8_t* cap_block,
                                                        std::uint32_t gid_tbl_len);

// Tables in process memory, allocated in zeroed chunks on first touch so that
// rxe-sized limits (a million QPs) cost nothing until used. Entry pointers
// never move; chunk allocation is safe against concurrent readers.
class MemTableStore final : public TableStore {
public:
    explicit MemTableStore(const std::array<std::uint32_t, kTableCount>& capacities);
    ~MemTableStore() override;
    MemTableStore(const MemTableStore&) = delete;
    MemTableStore& operator=(const MemTableStore&) = delete;

    std::uint32_t capacity(Table t) const override;
    std::uint8_t* entry(Table t, std::uint32_t index) override;
    bool release(Table t, std::uint32_t index, bool (*is_free)(const std::uint8_t* entry)) override;
    // Blocks of table t holding memory now.
    std::uint32_t chunks_held(Table t) const;

    static constexpr std::uint32_t kChunkEntries = 1024;

private:
    struct Tab {
        std::uint32_t capacity = 0;
        std::uint32_t esize = 0;
        std::unique_ptr<std::atomic<std::uint8_t*>[]> chunks;
        std::uint32_t nchunks = 0;
    };
    std::array<Tab, kTableCount> tabs_;
};

}  // namespace simnic::fw
