// One device inside the daemon: its firmware and device tables, its BAR0
// global area, and the contexts processes have opened on it.
//
// A context is what one process's ibv_open_device gets: a context page
// (hw-spec 2.7) in shared memory, an interrupt eventfd (its MSI-X vector,
// hw-spec 8.3) and a command doorbell eventfd that the driver signals after
// writing CMDQ_REGS.pi, so that an idle daemon sleeps instead of polling.
// The command ring and mailboxes stay in the process's own memory, read and
// written with process_vm_readv/writev, as a NIC's DMA would.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <array>
#include <string>
#include <utility>
#include <vector>
#include <utility>
#include <vector>

#include "simnic/daemon/devices.h"
#include "simnic/model/pipeline.h"
#include "simnic/soft_engine/engine.h"

namespace simnic::fw {
class Firmware;
class MemTableStore;
class LinuxNetdev;
}  // namespace simnic::fw

namespace simnic::model::fabric {
class Fabric;
}
namespace simnic::congestion {
class RpObserver;
}

namespace simnic::daemon {

// Which objects a listing of DeviceRuntime gives: the `limit` smallest
// numbers above `after`, ascending (all of them by default). A range costs
// the range, not the list (`simnic resource show` pages long lists). (At
// namespace scope: its member initializers serve default arguments.)
struct ListingRange {
    std::optional<uint32_t> after;
    std::size_t limit = SIZE_MAX;
};

class DeviceRuntime {
public:
    struct OpenedContext {
        uint16_t ctx_id = 0;
        uint16_t boot_domain = 0;
        int page_fd = -1;   // context page, 4 KiB, read-write
        int bar_fd = -1;    // BAR0 global area, 4 KiB, read-only for the process
        int irq_fd = -1;    // eventfd: the context's interrupt
        int db_fd = -1;     // eventfd: command doorbell
        int engine_fd = -1; // eventfd: wakes the engine (hw-spec 3.4 step 4)
    };

    // A MAD that arrived for the device's QP1 (engine thread): the MAD, the
    // sender's GID and ours.
    using GsiHandler = std::function<void(const uint8_t* mad, size_t len, const std::array<uint8_t, 16>& src,
                                          const std::array<uint8_t, 16>& dst, uint8_t traffic_class)>;
    struct Options {
        // False: no engine at all (no data path, no wire, no thread, no
        // capture): the firmware and its contexts only, which is all the
        // control protocol reaches (its tests and fuzzer).
        bool engine = true;
        // A fabric's host (Device::fabric): the fabric, whose factory builds
        // the device's pipeline in its context, and the device lock its
        // engines share (soft_engine::EngineGroup).
        model::fabric::Fabric* fabric = nullptr;
        std::shared_ptr<soft_engine::EngineGroup> group;
        // Where its QPs' reaction points report their changes (the
        // fabric's record, `simnic fabric dcqcn`); null: nowhere.
        congestion::RpObserver* rp_observer = nullptr;
    };
    // Creates the firmware for `dev`; on failure returns null and sets err.
    // `gsi` receives the device's QP1 traffic (the daemon's CM agent).
    static std::unique_ptr<DeviceRuntime> create(const Device& dev, std::string& err, GsiHandler gsi = {});
    static std::unique_ptr<DeviceRuntime> create(const Device& dev, std::string& err, GsiHandler gsi,
                                                 const Options& opt);
    ~DeviceRuntime();
    DeviceRuntime(const DeviceRuntime&) = delete;
    DeviceRuntime& operator=(const DeviceRuntime&) = delete;

    const Device& device() const;
    // Stops the engine's thread (before a fabric's devices go: any of its
    // engines may be simulating the others').
    void stop_engine();
    size_t context_count() const;

    // Opens a context for process `pid`. The returned descriptors are the
    // daemon's; send them, they stay owned here until close_context().
    bool open_context(uint32_t pid, OpenedContext& out, std::string& err, int& err_no);
    // Destroys the context and every object in it.
    void close_context(uint16_t ctx_id);
    // Maps a sealed memfd the context's process shares (takes `fd`) and makes
    // it an SHM object of the context; `handle` names it for ATTACH_DOMAIN.
    bool add_shm(uint16_t ctx_id, int fd, uint64_t size, uint32_t& handle, std::string& err, int& err_no);
    // The shared memory objects context `ctx_id` holds.
    size_t shm_count(uint16_t ctx_id) const;
    // The driver rang the command doorbell: run every posted command.
    void command_doorbell(uint16_t ctx_id);
    // The device is going away (the daemon stops): a DEVICE_FATAL event
    // (hw-spec 8.2) to every context, so that each driver learns it from
    // the device before its connection closes.
    void device_fatal();
    // The netdev changed (the daemon heard it from rtnetlink): read it again,
    // as rxe does on its netdev events, so that the port's state, MTU and
    // GID table in BAR0 follow it (PORT_ACTIVE / PORT_ERR and GID_CHANGE go
    // to every context). Nothing for a device on a wire.
    void refresh_netdev();

    // Counts for `simnic resource show` and tests.
    struct Counts {
        uint32_t qps = 0, cqs = 0, mrs = 0, pds = 0, srqs = 0, ahs = 0, mws = 0;
    };
    Counts counts() const;

    // Which objects a listing below gives (see ListingRange).
    using Range = ListingRange;
    // One QP as `simnic resource show qp` lists it (read from the QPC).
    struct QpInfo {
        uint32_t qpn = 0;
        uint8_t type = 0;   // hw::QpType numbering
        uint8_t state = 0;  // hw::QpState numbering
        uint32_t sq_psn = 0, rq_psn = 0, dest_qpn = 0;
        uint32_t pid = 0;   // the process whose context owns it
    };
    std::vector<QpInfo> qps(const Range& r = {}) const;
    // CQs, MRs, PDs and SRQs as `simnic resource show cq|mr|pd|srq` lists
    // them (the firmware's listings: see fw::Firmware::cq_list and the rest),
    // ascending by number; ctx_id is the owning context, pid its process.
    struct CqInfo {
        uint32_t cqn = 0, cqe = 0, users = 0;
        uint16_t ctx_id = 0;
        uint32_t pid = 0;
    };
    struct MrInfo {
        uint32_t mrn = 0, key = 0;
        uint64_t iova = 0, length = 0;
        uint32_t pdn = 0;
        uint16_t ctx_id = 0;
        uint32_t pid = 0;
    };
    struct MwInfo {  // a memory window (hw-spec 9.5)
        uint32_t mwn = 0, rkey = 0;
        uint8_t type = 0, state = 0;  // hw::MwType; hw::MwState
        uint32_t pdn = 0, mr_key = 0, qpn = 0;
        uint64_t addr = 0, length = 0;
        uint16_t ctx_id = 0;
        uint32_t pid = 0;
    };
    struct PdInfo {
        uint32_t pdn = 0, users = 0;
        uint16_t ctx_id = 0;
        uint32_t pid = 0;
    };
    struct SrqInfo {
        uint32_t srqn = 0, pdn = 0, max_wr = 0, max_sge = 0, limit = 0;
        std::vector<uint32_t> qpns;
        uint16_t ctx_id = 0;
        uint32_t pid = 0;
    };
    std::vector<CqInfo> cqs(const Range& r = {}) const;
    std::vector<MrInfo> mrs(const Range& r = {}) const;
    std::vector<MwInfo> mws(const Range& r = {}) const;
    std::vector<PdInfo> pds(const Range& r = {}) const;
    std::vector<SrqInfo> srqs(const Range& r = {}) const;
    // QP1's side of the CM: what the agent needs to know of the port, and
    // sending a MAD (the destination's MAC from the neighbour table).
    struct GsiPort {
        uint64_t node_guid = 0;
        uint8_t active_mtu = 3;  // IB MTU code
    };
    GsiPort gsi_port() const;
    bool gsi_send(const std::array<uint8_t, 16>& sgid, const std::array<uint8_t, 16>& dgid, uint8_t traffic_class,
                  const uint8_t* mad, size_t len);
    // Whether the port knows the next hop's MAC for `dgid`: a device on a
    // wire asks its own neighbour table (starting ARP or neighbour
    // discovery if needed); through the host's stack the kernel resolves as
    // frames leave, and this is always true.
    bool neighbour_ready(const std::array<uint8_t, 16>& dgid) const;
    // GID table entries in use: index and the 16 bytes.
    std::vector<std::pair<uint32_t, std::array<uint8_t, 16>>> gids() const;
    // STATS_BLOCK counters (hw-spec 2.6) by field name, for `stats`.
    std::vector<std::pair<std::string, uint64_t>> stats() const;
    // A model device's pipeline figures (empty for a soft device); with
    // `reset`, the figures are reset right after they are read, in one step
    // (no sample falls between). And its waveform window (see
    // model::Pipeline::trace; `from` none: now).
    std::vector<model::ModelStat> model_stats(bool reset = false) const;
    // Congestion control (docs/model.md): whether it is on, and each QP's
    // reaction point (none when off).
    bool congestion_on() const;
    std::vector<soft_engine::QpCongestionStats> congestion_stats() const;
    bool trace(const std::string& file, const std::string& format, std::optional<uint64_t> from, uint64_t cycles,
               std::string& err);
    void trace_stop();
    std::string trace_state() const;

    struct Impl;

private:
    explicit DeviceRuntime(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace simnic::daemon
