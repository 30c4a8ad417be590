// The host driver's view of one opened simnic device: the ibv_context of the
// verbs world, the "PCI function" of the hardware world.
//
// Everything the verbs provider does to a device goes through this interface,
// and everything it exchanges is in docs/hw-spec.md's formats (command
// mailboxes, BAR0 blocks, EQEs), built and read with hwspec/'s layouts and
// codec (EQEs arrive decoded). Two implementations:
//   - the daemon-backed context (open_context): the device lives in the simnic
//     daemon; BAR0 and the context page are shared memory, commands travel
//     through the command ring in this process's memory (hw-spec 5.1);
//   - an in-process context around a Firmware object (open_local_context),
//     for tests that want a device without a daemon, and for `simnic bench`,
//     whose model device takes the context's doorbells.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "simnic/hw/cqe.h"
#include "simnic/hw/layout.h"

namespace simnic::fw {
class Firmware;
}

namespace simnic::host {

struct DeviceEntry {
    std::string name;    // e.g. rxe_lo
    std::string netdev;  // e.g. lo
    std::string type;    // soft | model
};

// The devices the running daemon hosts. No daemon: an empty list and 0.
// Otherwise 0, or an errno if the daemon could not be asked.
int list_devices(std::vector<DeviceEntry>& out);

struct CmdOutcome {
    hw::CmdStatus status = hw::CmdStatus::Ok;
    std::uint32_t syndrome = 0;
    std::vector<std::uint8_t> out;  // the output mailbox, out_bytes long
};

class Context {
public:
    virtual ~Context() = default;

    virtual const std::string& device_name() const = 0;

    // Executes one firmware command (hw-spec 5) synchronously: `in` is the
    // input mailbox, `out_cap` the output mailbox size. Returns 0 with the
    // outcome filled, or an errno when the device could not be reached (the
    // outcome is then meaningless).
    virtual int command(hw::CmdOpcode opcode, const std::uint8_t* in, std::size_t in_len,
                        std::size_t out_cap, CmdOutcome& res) = 0;

    // Reads `len` bytes of BAR0's global area (ID, CAP, PORT, STATS blocks;
    // hw-spec 2.1) at `offset`. Returns false outside it.
    virtual bool read_bar(std::uint32_t offset, std::uint8_t* dst, std::size_t len) = 0;

    // A descriptor that polls POLLHUP / POLLRDHUP once the device is gone
    // (the daemon that hosted it died or stopped: its connection closed),
    // for the event thread to watch beside event_fd(); -1 where the device
    // cannot go away (an in-process context).
    virtual int lost_fd() const { return -1; }

    // Events (hw-spec 8). event_fd() becomes readable (an eventfd counter,
    // non-blocking: several threads may wait on it and only one reads it)
    // when an EQE arrives while the EQ is armed; next_event() pops one EQE,
    // decoded; arm_events() requests the next interrupt. One consumer at a
    // time: the caller serialises next_event() and arm_events().
    virtual int event_fd() const = 0;
    virtual bool next_event(hw::Eqe& eqe) = 0;
    virtual void arm_events() = 0;
    // Takes the interrupts event_fd() holds, so that it polls readable again
    // only for a later one; by the same one consumer. `ready`: a poll just
    // saw event_fd() readable. Default: one non-blocking read. A driver that
    // can tell that no interrupt came since its last read skips the system
    // call (an empty read is most of them on an event-driven round trip).
    virtual void ack_interrupt(bool ready) {
        (void)ready;
        std::uint64_t v = 0;
        [[maybe_unused]] const ssize_t r = ::read(event_fd(), &v, sizeof v);
    }

    // The DMA domain of this process (hw-spec 1.3): what queue memory and MRs
    // name when they live in this process's address space.
    virtual std::uint16_t boot_domain() const = 0;

    // Shares a memory object with the device (hw-spec 1.3, SHM domains): `fd`
    // is a sealed memfd of `size` bytes (F_SEAL_GROW | F_SEAL_SHRINK) that
    // this process maps; the device maps it too and then reaches it without
    // system calls. On success `handle` names it for ATTACH_DOMAIN. The caller
    // keeps its descriptor. EOPNOTSUPP where the device cannot.
    virtual int share_memory(int fd, std::uint64_t size, std::uint32_t& handle) {
        (void)fd;
        (void)size;
        (void)handle;
        return EOPNOTSUPP;
    }

    // Rings a doorbell (hw-spec 3.1, delivered as 3.4 says): `index` is the
    // new producer index (SQ, RQ, SRQ) or consumer index (CQ); `cq_cmd` only
    // for CQ doorbells, and with an arm `cq_seen`, the producer index the
    // driver saw when it armed (hw-spec 7.3). No system call unless the
    // engine sleeps.
    virtual void ring_doorbell(hw::DbKind kind, std::uint32_t num, std::uint32_t index,
                               std::uint8_t cq_cmd = 0, std::uint32_t cq_seen = 0) = 0;

    // Sleeps until the device writes a CQE to any CQ of this context, or for
    // at most `timeout_ns` (hw-spec 3.5). `empty()` is asked once more after
    // the caller is registered as a waiter, and the sleep is skipped if it
    // says false, so a CQE written in between is not slept through. Returns
    // false, at once, where the transport has no such wait (the caller keeps
    // spinning).
    virtual bool wait_cqe(std::uint64_t timeout_ns, const std::function<bool()>& empty) {
        (void)timeout_ns;
        (void)empty;
        return false;
    }
};

// Shares memory object `fd` (a sealed memfd, as share_memory wants it) with
// the device of `ctx` and attaches `len` bytes of it, mapped here at `base`,
// as an SHM domain (hw-spec 1.3, 5.6.3) into `domain`. 0, or an errno:
// share_memory's, the command's transport's, or the refusal's
// (hw::status_errno). The caller keeps `fd` and its mapping.
int attach_shm_domain(Context& ctx, int fd, std::uint64_t base, std::uint64_t len, std::uint16_t& domain);

// Opens `device` in the running daemon. Null and an errno (ENODEV: no such
// device; ECONNREFUSED: no daemon) on failure.
std::unique_ptr<Context> open_context(const std::string& device, int& err);

// An in-process context on `fw`, as context `ctx_id` of process `pid`. For
// tests; the firmware must outlive the context.
std::unique_ptr<Context> open_local_context(fw::Firmware& fw, const std::string& device_name,
                                            std::uint16_t ctx_id, std::uint32_t pid);

}  // namespace simnic::host
