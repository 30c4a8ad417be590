// The soft engine: the data path of a `soft` simnic device (hw-spec 1.1).
//
// One thread per device. It consumes the contexts' doorbell FIFOs (hw-spec
// 3.4), fetches WQEs from the applications' rings, drives the shared
// transport core (protocol/transport) for every QP, moves data by DMA
// (process_vm_readv/writev) after the MPT check of hw-spec 11, writes CQEs
// and EQEs, and carries RoCE v2 over UDP port 4791 on the netdev's address.
//
// The firmware (control thread) and the engine share the device tables. The
// engine caches nothing it cannot rebuild: fence() takes the engine's device
// lock, so the firmware writes an entry only between two engine batches, and
// unfence() on a QPC entry re-reads it (hw-spec 9.1).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "simnic/hw/tables.h"
#include "simnic/soft_engine/timing.h"

namespace simnic::soft_engine {

struct EngineConfig {
    std::string device;    // device name, for messages
    std::string netdev;    // the port's netdev; its first IPv4 address is used
    std::string pcap;      // empty: no capture
    bool loopback = false; // frames to the device's own address skip the kernel (see Device)
    // SHM domains (hw-spec 1.3): the local mapping of shared object `handle`
    // of context `ctx` and its size; null if there is none. Called by the
    // engine thread; the mapping must stay until the context is removed.
    std::function<std::uint8_t*(std::uint16_t ctx, std::uint32_t handle, std::uint64_t& size)> shm;
    hw::TableStore* tables = nullptr;
    hw::EventSink* events = nullptr;  // posts EQEs (thread-safe)
    std::uint8_t* bar = nullptr;      // BAR0 global page (STATS_BLOCK, PORT_BLOCK)
    // Set: a `model` device. The same datapath runs every protocol step, but
    // inside the timing model this builds (the cycle-level pipeline,
    // rtl_model/model), which decides when each step happens and when each
    // frame leaves (timing.h).
    TimingFactory timing;
    // No wire and no thread: the timing model loops MAC TX to MAC RX and the
    // caller drives it (`simnic bench`). Needs `timing`.
    bool standalone = false;
    // The GSI (QP1) belongs to the host's CM (the daemon's cm::Agent), not to
    // an application: each UD SEND ONLY to QP1 that arrives with a valid ICRC
    // and the GSI Q_Key is handed here, on the engine thread, with the
    // sender's and our GID (IPv4-mapped for IPv4). Unset: such packets drop.
    std::function<void(const std::uint8_t* mad, std::size_t len, const std::array<std::uint8_t, 16>& src,
                       const std::array<std::uint8_t, 16>& dst)>
        gsi_rx;
};

class SoftEngine final : public hw::EngineHooks {
public:
    // Binds the UDP port and starts the engine thread. Null and `err` on
    // failure (port 4791 taken, netdev without IPv4 address, ...).
    static std::unique_ptr<SoftEngine> create(const EngineConfig& cfg, std::string& err);
    ~SoftEngine() override;  // stops the thread
    SoftEngine(const SoftEngine&) = delete;
    SoftEngine& operator=(const SoftEngine&) = delete;

    // A context was opened / is about to be closed (control thread). `page`
    // is its context page; `engine_fd` the eventfd drivers signal (3.4).
    void add_context(std::uint16_t ctx_id, std::uint8_t* page, int engine_fd);
    void remove_context(std::uint16_t ctx_id);

    // A firmware command ran (a model device charges its management core).
    void note_command(std::uint16_t opcode);

    // Sends a MAD from QP1 as kernel rxe does: UD SEND ONLY to QP1 with the
    // GSI Q_Key, AckReq set, the next QP1 PSN, from QP1's UDP source port.
    // Thread-safe. False if the GIDs are not of one IP version or the frame
    // cannot be built.
    bool gsi_send(const std::array<std::uint8_t, 16>& sgid, const std::array<std::uint8_t, 16>& dgid,
                  const std::array<std::uint8_t, 6>& dmac, const std::uint8_t* mad, std::size_t len);

    // Runs `f` between two engine batches, with the device to itself (the
    // engine's lock held): how a timing model's owner reads its statistics
    // or starts a waveform while the engine runs.
    void exclusive(const std::function<void()>& f);

    // hw::EngineHooks
    void fence(hw::Table t, std::uint32_t index) override;
    void unfence(hw::Table t, std::uint32_t index) override;
    void qp_modified(std::uint32_t qpn, hw::QpState from, hw::QpState to) override;
    void qp_destroying(std::uint32_t qpn) override;
    void cq_destroying(std::uint32_t cqn) override;
    void srq_destroying(std::uint32_t srqn) override;
    bool cq_copy_entries(const std::uint8_t* cqc, std::uint16_t new_domain, std::uint64_t new_base,
                         std::uint8_t new_log_size) override;

    struct Impl;

private:
    explicit SoftEngine(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// STATS_BLOCK counters of a BAR0 global page, by field name (hw-spec 2.6).
std::vector<std::pair<std::string, std::uint64_t>> read_stats(const std::uint8_t* bar);

}  // namespace simnic::soft_engine
