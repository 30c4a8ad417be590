// SPDX-License-Identifier: Apache-2.0
// simnic hardware spec: the completion and event entry codec (hw-spec.md 7,
// 8).
//
// CQEs and EQEs as values, their one encoder and decoder on layout.h's field
// descriptors, and the phase protocol both rings follow (7.2, 8.1): the
// device writes entry number `p` (free-running) in slot p & (2^n - 1) with
// owner = ((p >> n) & 1) ^ 1, body first and the owner dword last (release);
// the driver at consumer index `c` owns the slot when its owner bit equals
// ((c >> n) & 1) ^ 1, read with acquire before the rest (3.3 rule 2).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>

#include "simnic/hw/field.h"
#include "simnic/hw/field_map.h"
#include "simnic/hw/layout.h"
#include "simnic/hw/mmio.h"

namespace simnic::hw {

// ---------------------------------------------------------------------------
// The phase protocol, for any ring of entries with an owner bit.
// ---------------------------------------------------------------------------
struct PhaseRing {
    std::uint32_t entry_size;
    Field owner;  // in the entry's last dword, which the device writes last
};
constexpr PhaseRing kCqRing{cqe::kSize, cqe::owner};
constexpr PhaseRing kEqRing{eqe::kSize, eqe::owner};
static_assert(kCqRing.owner.offset == kCqRing.entry_size - 4 && kEqRing.owner.offset == kEqRing.entry_size - 4,
              "the owner bit lives in the dword written last");

// Byte offset of entry `index` in a ring of 2^log_size entries.
constexpr std::size_t ring_entry_offset(PhaseRing r, std::uint32_t index, std::uint8_t log_size) noexcept {
    return std::size_t{ring_slot(index, log_size)} * r.entry_size;
}

// Sets the owner bit of `entry` for entry number `index` (the device's side;
// also what a CQ resize does to the entries it copies into the new ring).
inline void stamp_owner(PhaseRing r, std::uint8_t* entry, std::uint32_t index, std::uint8_t log_size) noexcept {
    set(entry, r.entry_size, r.owner, phase_of(index, log_size));
}

// The entry at consumer index `ci` if the driver owns it, else null. The
// owner dword is read with acquire, so the rest of the entry may be read
// after this returns it.
inline const std::uint8_t* peek_owned(PhaseRing r, const std::uint8_t* ring, std::uint32_t ci,
                                      std::uint8_t log_size) noexcept {
    const std::uint8_t* e = ring + ring_entry_offset(r, ci, log_size);
    const std::uint32_t ow = mmio_load32(e, r.owner.offset);
    return ((ow >> r.owner.lo) & 1u) == phase_of(ci, log_size) ? e : nullptr;
}

// ---------------------------------------------------------------------------
// CQE (hw-spec.md 7.1)
// ---------------------------------------------------------------------------
struct Cqe {
    std::uint64_t wr_id = 0;
    WcStatus status = WcStatus::Success;
    WcOpcode opcode = WcOpcode::Send;
    std::uint8_t wc_flags = 0;  // wc_flags::
    std::uint8_t sl = 0;
    std::uint32_t vendor_err = 0;  // ErrorCause for any status but SUCCESS
    std::uint32_t byte_len = 0;
    std::uint32_t imm_inv = 0;  // the immediate (host order) with WITH_IMM; the rkey with WITH_INV
    std::uint32_t qp_num = 0;
    std::uint32_t src_qp = 0;
    std::uint16_t pkey_index = 0;
    std::uint16_t slid = 0;
    std::uint8_t dlid_path_bits = 0;
    bool is_send = false;
    std::uint32_t wqe_index = 0;  // free-running index of the completed WQE in its ring
};

constexpr auto field_map_of(const Cqe*) noexcept {
    namespace q = cqe;
    return field_map(q::kSize, member_field(&Cqe::wr_id, q::wr_id), member_field(&Cqe::status, q::status),
                     member_field(&Cqe::opcode, q::opcode), member_field(&Cqe::wc_flags, q::wc_flags),
                     member_field(&Cqe::sl, q::sl), member_field(&Cqe::vendor_err, q::vendor_err),
                     member_field(&Cqe::byte_len, q::byte_len), member_field(&Cqe::imm_inv, q::imm_inv),
                     member_field(&Cqe::qp_num, q::qp_num), member_field(&Cqe::src_qp, q::src_qp),
                     member_field(&Cqe::pkey_index, q::pkey_index), member_field(&Cqe::slid, q::slid),
                     member_field(&Cqe::dlid_path_bits, q::dlid_path_bits), member_field(&Cqe::is_send, q::is_send),
                     member_field(&Cqe::wqe_index, q::wqe_index));
}

// The 64 bytes of CQE number `index` of a CQ of 2^log_size entries, owner
// bit included. Values wider than their field (QPNs) are truncated to it.
inline void encode_cqe(const Cqe& c, std::uint32_t index, std::uint8_t log_size, std::uint8_t* out) noexcept {
    std::memset(out, 0, cqe::kSize);
    encode_value(out, c);
    stamp_owner(kCqRing, out, index, log_size);
}

// The fields of the CQE at `e` (kCqeSize bytes; the owner bit is the ring's,
// see cqe_peek).
inline Cqe decode_cqe(const std::uint8_t* e) noexcept { return decode_value<Cqe>(e); }

// The CQE at consumer index `ci` of the CQ ring at `ring` (2^log_size
// entries) if the driver owns it, else null (7.2).
inline const std::uint8_t* cqe_peek(const std::uint8_t* ring, std::uint32_t ci, std::uint8_t log_size) noexcept {
    return peek_owned(kCqRing, ring, ci, log_size);
}

// ---------------------------------------------------------------------------
// EQE (hw-spec.md 8.1)
// ---------------------------------------------------------------------------
struct Eqe {
    EventType event_type = EventType::CqErr;
    std::uint32_t obj_num = 0;  // CQN, QPN, SRQN or port, per event type (8.2)
    std::uint32_t token = 0;    // CMD_COMPLETION: the command's token
    CmdStatus cmd_status = CmdStatus::Ok;  // CMD_COMPLETION: the command's status
    std::uint32_t aux = 0;      // GID_CHANGE: GID index; QP and SRQ errors: the ErrorCause
};

constexpr auto field_map_of(const Eqe*) noexcept {
    return field_map(eqe::kSize, member_field(&Eqe::event_type, eqe::event_type),
                     member_field(&Eqe::obj_num, eqe::obj_num), member_field(&Eqe::token, eqe::token),
                     member_field(&Eqe::cmd_status, eqe::cmd_status), member_field(&Eqe::aux, eqe::aux));
}

// The 32 bytes of an EQE, owner bit 0: the owner belongs to whoever writes
// the EQ ring (stamp_owner with kEqRing), not to the event's source. Values
// wider than their field (object numbers) are truncated to it.
inline void encode_eqe(const Eqe& v, std::uint8_t* out) noexcept {
    std::memset(out, 0, eqe::kSize);
    encode_value(out, v);
}

inline Eqe decode_eqe(const std::uint8_t* e) noexcept { return decode_value<Eqe>(e); }

// The EQE at consumer index `ci` of the EQ ring at `ring` if the driver owns
// it, else null (8.1).
inline const std::uint8_t* eqe_peek(const std::uint8_t* ring, std::uint32_t ci, std::uint8_t log_size) noexcept {
    return peek_owned(kEqRing, ring, ci, log_size);
}

}  // namespace simnic::hw
