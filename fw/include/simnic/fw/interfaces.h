// SPDX-License-Identifier: Apache-2.0
// simnic firmware: what the firmware needs from the outside world, as narrow
// interfaces. The soft device's daemon and the cycle model's management core
// each implement them; tests implement fakes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "simnic/fw/types.h"

namespace simnic::fw {

// ---------------------------------------------------------------------------
// The Ethernet interface the port is bound to.
// ---------------------------------------------------------------------------
struct NetdevSnapshot {
    std::string name;
    std::uint32_t ifindex = 0;
    Mac mac{};                  // all zero for lo (its address is 6 zero bytes)
    std::uint32_t mtu = 1500;
    bool up = false;            // IFF_UP
    bool running = false;       // IFF_RUNNING (carrier)
    // Addresses in the order the netdev lists them.
    std::vector<std::array<std::uint8_t, 4>> ipv4;
    std::vector<Gid> ipv6;
};

class NetdevInfo {
public:
    virtual ~NetdevInfo() = default;
    // The netdev's current attributes; nullopt if it no longer exists.
    virtual std::optional<NetdevSnapshot> query() = 0;
    // Next-hop MAC for a remote GID (IPv4-mapped or IPv6) on this netdev;
    // nullopt if it is not (yet) known. The firmware answers local GIDs
    // itself and never asks for them.
    virtual std::optional<Mac> resolve_neighbor(const Gid& dgid) = 0;
};

// ---------------------------------------------------------------------------
// Event delivery. The firmware builds a complete EQE image (hw-spec.md 8.1)
// except the owner/phase bit, which belongs to whoever writes the EQ ring.
// Events for a context whose EQ is not enabled are the sink's to drop.
// ---------------------------------------------------------------------------
class EventSink {
public:
    virtual ~EventSink() = default;
    virtual void post_eqe(std::uint16_t ctx_id, const std::uint8_t* eqe, std::size_t len) = 0;
};

// ---------------------------------------------------------------------------
// Engine coordination (hw-spec.md 9.1). Every method has a do-nothing
// default, which is right for an engine that caches nothing.
// ---------------------------------------------------------------------------
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
    virtual void qp_modified(std::uint32_t /*qpn*/, hw::QpState /*from*/, hw::QpState /*to*/) {}
    // The object is about to be destroyed (called inside the fence): stop
    // using it. For a QP: outstanding WQEs get no CQE.
    virtual void qp_destroying(std::uint32_t /*qpn*/) {}
    virtual void cq_destroying(std::uint32_t /*cqn*/) {}
    virtual void srq_destroying(std::uint32_t /*srqn*/) {}
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

// ---------------------------------------------------------------------------
// Host memory of the command path: the mailboxes of one command, in the
// context's bootstrap domain. Used only by Firmware::run_entry().
// ---------------------------------------------------------------------------
class MailboxIo {
public:
    virtual ~MailboxIo() = default;
    virtual bool read(std::uint64_t addr, std::uint8_t* dst, std::size_t len) = 0;
    virtual bool write(std::uint64_t addr, const std::uint8_t* src, std::size_t len) = 0;
};

}  // namespace simnic::fw
