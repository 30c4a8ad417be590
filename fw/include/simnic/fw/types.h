// SPDX-License-Identifier: Apache-2.0
// simnic firmware: small value types shared by the firmware's interfaces.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "simnic/hw/layout.h"
#include "simnic/hw/tables.h"

namespace simnic::fw {

using Gid = std::array<std::uint8_t, 16>;  // wire order
using Mac = std::array<std::uint8_t, 6>;   // wire order

// The device tables and the engine's side of them are the contract's
// (simnic/hw/tables.h); the firmware names them unqualified.
using hw::Table;
using hw::kTableCount;
using hw::entry_size;
using hw::table_name;
using hw::TableStore;
using hw::EventSink;
using hw::EngineHooks;

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
