// The device tables (hw-spec.md 9) and how the device's two halves share
// them: the firmware writes entries, the engine (soft or model) reads them to
// move data. Both sides see only this, so neither includes the other.
#pragma once

#include <cstddef>
#include <cstdint>

#include "simnic/hw/layout.h"

namespace simnic::hw {

// Each table is an array of fixed-size entries indexed by object number.
enum class Table : std::uint8_t { Qpc, Cqc, Srqc, Mpt, Mtt, Pd, Ah, Gid, Domain, Mcg };
inline constexpr std::size_t kTableCount = 10;

// Entry size of each table, straight from layout.h (the one source of truth).
constexpr std::uint32_t entry_size(Table t) noexcept {
    switch (t) {
        case Table::Qpc: return qpc::kSize;
        case Table::Cqc: return cqc::kSize;
        case Table::Srqc: return srqc::kSize;
        case Table::Mpt: return mpt_entry::kSize;
        case Table::Mtt: return mtt_entry::kSize;
        case Table::Pd: return pd_entry::kSize;
        case Table::Ah: return ah_entry::kSize;
        case Table::Gid: return gid_entry::kSize;
        case Table::Domain: return domain_entry::kSize;
        case Table::Mcg: return mcg_entry::kSize;
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
        case Table::Mcg: return "MCG";
    }
    return "?";
}

// Where the tables live. Entries are byte buffers of entry_size(t) bytes;
// fields are read and written only through layout.h's descriptors.
class TableStore {
public:
    virtual ~TableStore() = default;
    // Entries in table t (valid indices are 0 .. capacity - 1).
    virtual std::uint32_t capacity(Table t) const = 0;
    // The entry_size(t) bytes of entry `index`, or nullptr if out of range.
    // The pointer stays valid for the store's lifetime, or until release()
    // gives back its entry's memory. A never-written entry reads as zeros.
    virtual std::uint8_t* entry(Table t, std::uint32_t index) = 0;
    // The firmware freed entry `index`. A store that holds entries in
    // blocks may give back the block around it when `is_free` holds for
    // every entry of the block (its entries read as zeros again after).
    // Only for blocks no engine reads any more: the caller holds every
    // entry of the block free, and a freed QPC is never read by the
    // engine. Returns whether memory was given back.
    virtual bool release(Table t, std::uint32_t index, bool (*is_free)(const std::uint8_t* entry)) {
        (void)t;
        (void)index;
        (void)is_free;
        return false;
    }
};

// Event delivery. The firmware and the engine build complete EQE images
// (hw-spec.md 8.1) except the owner/phase bit, which belongs to whoever
// writes the EQ ring. Events for a context whose EQ is not enabled are the
// sink's to drop.
class EventSink {
public:
    virtual ~EventSink() = default;
    virtual void post_eqe(std::uint16_t ctx_id, const std::uint8_t* eqe, std::size_t len) = 0;
};

// Engine coordination (hw-spec.md 9.1): what the firmware tells the engine.
// Every method has a do-nothing default, which is right for an engine that
// caches nothing.
class EngineHooks {
public:
    virtual ~EngineHooks() = default;
    // Before the firmware writes an entry the engine may hold: the engine
    // finishes its current step on the object, writes back and drops its
    // cached copy. unfence() releases it after the write.
    virtual void fence(Table, std::uint32_t /*index*/) {}
    virtual void unfence(Table, std::uint32_t /*index*/) {}
    // A MODIFY_QP took effect (called after unfence). The engine acts on the
    // transition (flush on ERR, drop WQEs on RESET, start the requester on
    // RTS, drain on SQD).
    virtual void qp_modified(std::uint32_t /*qpn*/, QpState /*from*/, QpState /*to*/) {}
    // The object is about to be destroyed (called inside the fence): stop
    // using it. For a QP: outstanding WQEs get no CQE.
    virtual void qp_destroying(std::uint32_t /*qpn*/) {}
    virtual void cq_destroying(std::uint32_t /*cqn*/) {}
    virtual void srq_destroying(std::uint32_t /*srqn*/) {}
    // MODIFY_SRQ with MAX_WR (inside the fence, before the firmware reads
    // the SRQC's indices): take the SRQ doorbells rung before the command,
    // so that the producer index the checks read is the driver's.
    virtual void srq_resizing(std::uint32_t /*srqn*/) {}
    // An AH is about to be destroyed (inside the fence): UD WQEs posted
    // before the command name it, and go out with it first.
    virtual void ah_destroying(std::uint32_t /*ahn*/) {}
    virtual void mr_deregistering(std::uint32_t /*mpt_index*/) {}
    // RESIZE_CQ (inside the fence): copy CQEs [ci, pi) of the CQ described by
    // `cqc` (the current entry) to the same indices of the new ring, with
    // owner bits for the new size. Return false if host memory failed; the
    // command then fails with BAD_DOMAIN and nothing changes.
    virtual bool cq_copy_entries(const std::uint8_t* /*cqc*/, std::uint16_t /*new_domain*/,
                                 std::uint64_t /*new_base*/, std::uint8_t /*new_log_size*/) {
        return true;
    }
};

}  // namespace simnic::hw
