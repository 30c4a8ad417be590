// SPDX-License-Identifier: Apache-2.0
// simnic firmware: small value types shared by the firmware's interfaces.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "simnic/hw/layout.h"

namespace simnic::fw {

using Gid = std::array<std::uint8_t, 16>;  // wire order
using Mac = std::array<std::uint8_t, 6>;   // wire order

// The device tables of hw-spec.md section 9, each an array of fixed-size
// entries indexed by object number.
enum class Table : std::uint8_t { Qpc, Cqc, Srqc, Mpt, Mtt, Pd, Ah, Gid, Domain };
inline constexpr std::size_t kTableCount = 9;

// Entry size of each table, straight from layout.h (the one source of truth).
constexpr std::uint32_t entry_size(Table t) noexcept {
    switch (t) {
        case Table::Qpc: return hw::qpc::kSize;
        case Table::Cqc: return hw::cqc::kSize;
        case Table::Srqc: return hw::srqc::kSize;
        case Table::Mpt: return hw::mpt_entry::kSize;
        case Table::Mtt: return hw::mtt_entry::kSize;
        case Table::Pd: return hw::pd_entry::kSize;
        case Table::Ah: return hw::ah_entry::kSize;
        case Table::Gid: return hw::gid_entry::kSize;
        case Table::Domain: return hw::domain_entry::kSize;
    }
    return 0;
}

constexpr const char* table_name(Table t) noexcept {
    switch (t) {
        case Table::Qpc: return "QPC";
        case Table::Cqc: return "CQC";
        case Table::Srqc: return "SRQC";
        case Table::Mpt: return "MPT";
        case Table::Mtt: return "MTT";
        case Table::Pd: return "PD";
        case Table::Ah: return "AH";
        case Table::Gid: return "GID";
        case Table::Domain: return "DOMAIN";
    }
    return "?";
}

// Result of one command: status, diagnostic syndrome (CMDQ_ENTRY.syndrome) and
// the output mailbox bytes (their count is CMDQ_ENTRY.out_bytes).
struct CmdResult {
    hw::CmdStatus status = hw::CmdStatus::Ok;
    std::uint32_t syndrome = 0;
    std::array<std::uint8_t, 256> out{};  // largest output layout: CAP_BLOCK
    std::uint32_t out_bytes = 0;

    bool ok() const noexcept { return status == hw::CmdStatus::Ok; }
    int err() const noexcept { return hw::status_errno(status); }
};

}  // namespace simnic::fw
