// SPDX-License-Identifier: Apache-2.0
// simnic hardware spec: field descriptors and little-endian accessors.
//
// A Field names a run of bits inside a byte buffer (a register block, a WQE, a
// CQE, a table entry, a command mailbox). There are two shapes, and docs/hw-spec.md
// uses the same two:
//
//   dword field  width <= 32: bits [lo + width - 1 : lo] of the 32-bit
//                little-endian dword at byte `offset` (offset is 4-byte aligned).
//   wide field   width > 32:  lo == 0, width a multiple of 8; the field fills
//                width / 8 bytes starting at `offset` (4-byte aligned; 8-byte
//                aligned when width == 64). Up to 64 bits it reads as a
//                little-endian integer; wider fields (GIDs) and MAC addresses
//                are byte arrays kept in wire order, accessed with get_bytes /
//                set_bytes.
//
// All accessors take the buffer length and refuse (return false / 0) any access
// that would leave the buffer. No bitfields, no casts of structs onto buffers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace simnic::hw {

struct Field {
    std::uint16_t offset;  // byte offset of the dword (or of the first byte of a wide field)
    std::uint8_t lo;       // lowest bit within the dword; 0 for wide fields
    std::uint8_t width;    // bits

    constexpr bool is_wide() const noexcept { return width > 32; }
    constexpr std::uint8_t hi() const noexcept {
        return static_cast<std::uint8_t>(lo + width - 1);
    }
    // Bytes of the buffer the field's container occupies.
    constexpr std::size_t span() const noexcept {
        return is_wide() ? static_cast<std::size_t>(width / 8) : 4u;
    }
    // First and one-past-last absolute bit positions (offset * 8 + bit).
    constexpr std::uint32_t bit_begin() const noexcept {
        return static_cast<std::uint32_t>(offset) * 8u + lo;
    }
    constexpr std::uint32_t bit_end() const noexcept { return bit_begin() + width; }
};

// Shape rules shared by the header, the doc and the test.
constexpr bool valid(Field f) noexcept {
    if (f.width == 0 || f.offset % 4 != 0) return false;
    if (!f.is_wide()) return f.lo + f.width <= 32;
    if (f.lo != 0 || f.width % 8 != 0) return false;
    if (f.width == 64 && f.offset % 8 != 0) return false;
    return true;
}

constexpr bool fits(Field f, std::size_t buf_len) noexcept {
    return valid(f) && static_cast<std::size_t>(f.offset) + f.span() <= buf_len;
}

// Integer access is defined for dword fields and wide fields up to 64 bits.
constexpr bool is_integer(Field f) noexcept { return valid(f) && f.width <= 64; }

constexpr std::uint64_t mask_of(std::uint8_t width) noexcept {
    return width >= 64 ? ~std::uint64_t{0} : ((std::uint64_t{1} << width) - 1);
}

struct NamedField {
    const char* name;
    Field field;
};

struct LayoutDesc {
    const char* name;
    std::uint32_t size;
    const NamedField* fields;
    std::size_t count;
};

// Compile-time layout check: every field valid, inside `size`, none overlapping.
template <std::size_t N>
constexpr bool layout_ok(const NamedField (&fs)[N], std::uint32_t size) noexcept {
    for (std::size_t i = 0; i < N; ++i) {
        if (!fits(fs[i].field, size)) return false;
        for (std::size_t j = i + 1; j < N; ++j) {
            const Field a = fs[i].field;
            const Field b = fs[j].field;
            if (a.bit_begin() < b.bit_end() && b.bit_begin() < a.bit_end()) return false;
        }
    }
    return true;
}

// The accessors below are forced inline. Nearly every call names a Field
// constant of layout.h and a buffer of a layout's constant size, so once
// inlined the checks fold away and an access is a load, a shift and a
// mask; called out of line (GCC's choice for the field maps' long runs of
// calls) each one paid the whole check: hw::get and hw::set were 6.8% of
// the instructions of a one-deep 2-byte SEND loop (`simnic bench --op send
// --size 2 --depth 1`, callgrind), a CQE's encode 640 and its decode 550.
#if defined(__GNUC__)
#define SIMNIC_HW_INLINE inline __attribute__((always_inline))
#else
#define SIMNIC_HW_INLINE inline
#endif

// Little-endian loads and stores of n <= 8 bytes. A dword field (n = 4) and a
// 64-bit field (n = 8) are one memcpy on a little-endian host. Every WQE,
// CQE, QPC and table field the engine and the model touch comes through
// here; the byte loop cost 6% of the instructions of a one-deep 2-byte SEND
// loop (`simnic bench --depth 1 --size 2`, callgrind). Other sizes and
// big-endian hosts take the loop.
SIMNIC_HW_INLINE std::uint64_t load_le(const std::uint8_t* p, std::size_t n) noexcept {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n == 4) {
        std::uint32_t v;
        __builtin_memcpy(&v, p, 4);
        return v;
    }
    if (n == 8) {
        std::uint64_t v;
        __builtin_memcpy(&v, p, 8);
        return v;
    }
#endif
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v |= std::uint64_t{p[i]} << (8 * i);
    return v;
}

SIMNIC_HW_INLINE void store_le(std::uint8_t* p, std::size_t n, std::uint64_t v) noexcept {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n == 4) {
        const auto w = static_cast<std::uint32_t>(v);
        __builtin_memcpy(p, &w, 4);
        return;
    }
    if (n == 8) {
        __builtin_memcpy(p, &v, 8);
        return;
    }
#endif
    for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

// Reads an integer field. Returns false (and leaves `out` alone) if the field is
// not an integer field or does not fit in the buffer.
SIMNIC_HW_INLINE bool get(const std::uint8_t* buf, std::size_t len, Field f, std::uint64_t& out) noexcept {
    if (buf == nullptr || !is_integer(f) || !fits(f, len)) return false;
    const std::uint64_t raw = load_le(buf + f.offset, f.span());
    out = (raw >> f.lo) & mask_of(f.width);
    return true;
}

// Convenience form: 0 when the access is refused.
SIMNIC_HW_INLINE std::uint64_t get(const std::uint8_t* buf, std::size_t len, Field f) noexcept {
    std::uint64_t v = 0;
    return get(buf, len, f, v) ? v : 0;
}

// Writes an integer field, leaving the other bits of its dword untouched.
// Returns false (buffer unchanged) if the access is refused or `value` does not
// fit in the field's width.
SIMNIC_HW_INLINE bool set(std::uint8_t* buf, std::size_t len, Field f, std::uint64_t value) noexcept {
    if (buf == nullptr || !is_integer(f) || !fits(f, len)) return false;
    if ((value & ~mask_of(f.width)) != 0) return false;
    const std::size_t n = f.span();
    std::uint64_t raw = load_le(buf + f.offset, n);
    const std::uint64_t m = mask_of(f.width) << f.lo;
    raw = (raw & ~m) | (value << f.lo);
    store_le(buf + f.offset, n, raw);
    return true;
}

// Byte-array access for wide fields (GIDs, MACs): out_len must equal width / 8.
inline bool get_bytes(const std::uint8_t* buf, std::size_t len, Field f, std::uint8_t* out,
                      std::size_t out_len) noexcept {
    if (buf == nullptr || out == nullptr || !f.is_wide() || !fits(f, len) || out_len != f.span())
        return false;
    for (std::size_t i = 0; i < out_len; ++i) out[i] = buf[f.offset + i];
    return true;
}

inline bool set_bytes(std::uint8_t* buf, std::size_t len, Field f, const std::uint8_t* in,
                      std::size_t in_len) noexcept {
    if (buf == nullptr || in == nullptr || !f.is_wide() || !fits(f, len) || in_len != f.span())
        return false;
    for (std::size_t i = 0; i < in_len; ++i) buf[f.offset + i] = in[i];
    return true;
}

// Array conveniences.
template <std::size_t N>
inline std::uint64_t get(const std::uint8_t (&buf)[N], Field f) noexcept {
    return get(buf, N, f);
}
template <std::size_t N>
inline bool set(std::uint8_t (&buf)[N], Field f, std::uint64_t value) noexcept {
    return set(buf, N, f, value);
}

}  // namespace simnic::hw
