// SPDX-License-Identifier: Apache-2.0
// Register access on a register page shared between the driver and the
// device (BAR0 and the context pages, hw-spec.md 2 and 3).
//
// The layouts in layout.h say where a register is; these say how it is
// accessed when the other side may be looking: the single-register writes
// of hw-spec 3.1 (CMDQ_REGS.pi, EQ_REGS.ci, EQ_REGS.arm, the doorbells) are
// atomic stores with release semantics, and the other side reads them with
// acquire loads. Fields written only while their block's `enable` is 0 use
// plain read-modify-write through reg_set().
#pragma once

#include <cstddef>
#include <cstdint>

#include "simnic/hw/field.h"

namespace simnic::hw {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "register pages are little-endian and accessed natively");

// A register dword at byte `off` of a mapped page (4-byte aligned).
inline std::uint32_t mmio_load32(const std::uint8_t* page, std::uint32_t off) noexcept {
    return __atomic_load_n(reinterpret_cast<const std::uint32_t*>(page + off), __ATOMIC_ACQUIRE);
}
inline void mmio_store32(std::uint8_t* page, std::uint32_t off, std::uint32_t v) noexcept {
    __atomic_store_n(reinterpret_cast<std::uint32_t*>(page + off), v, __ATOMIC_RELEASE);
}
// A doorbell quadword (8-byte aligned), stored with one atomic 64-bit store.
inline void mmio_store64(std::uint8_t* page, std::uint32_t off, std::uint64_t v) noexcept {
    __atomic_store_n(reinterpret_cast<std::uint64_t*>(page + off), v, __ATOMIC_RELEASE);
}
inline std::uint64_t mmio_load64(const std::uint8_t* page, std::uint32_t off) noexcept {
    return __atomic_load_n(reinterpret_cast<const std::uint64_t*>(page + off), __ATOMIC_ACQUIRE);
}

// Field `f` of the register block at byte `block` of a page: an acquire load
// of its dword (wide fields: low dword, then high).
inline std::uint64_t reg_get(const std::uint8_t* page, std::uint32_t block, Field f) noexcept {
    const std::uint32_t off = block + f.offset;
    if (f.is_wide())
        return mmio_load32(page, off) | (std::uint64_t{mmio_load32(page, off + 4)} << 32);
    return (mmio_load32(page, off) >> f.lo) & mask_of(f.width);
}

// Read-modify-write of field `f` (the dword is stored with release). Only
// for registers one side owns, or that change only while their block is
// disabled.
inline void reg_set(std::uint8_t* page, std::uint32_t block, Field f, std::uint64_t v) noexcept {
    const std::uint32_t off = block + f.offset;
    if (f.is_wide()) {
        mmio_store32(page, off, static_cast<std::uint32_t>(v));
        mmio_store32(page, off + 4, static_cast<std::uint32_t>(v >> 32));
        return;
    }
    const std::uint32_t m = static_cast<std::uint32_t>(mask_of(f.width)) << f.lo;
    const std::uint32_t old = mmio_load32(page, off);
    mmio_store32(page, off, (old & ~m) | ((static_cast<std::uint32_t>(v) << f.lo) & m));
}

}  // namespace simnic::hw
