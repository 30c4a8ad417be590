// The soft engine: the data path of a `soft` simnic device (hw-spec 1.1).
//
// One thread per device. It consumes the contexts' doorbell FIFOs (hw-spec
// 3.4), fetches WQEs from the applications' rings, drives the shared
// transport core (protocol/transport) for every QP, moves data by DMA
// (process_vm_readv/writev) after the MPT check of hw-spec 11, writes CQEs
// and EQEs, and carries RoCE v2 over its port: UDP port 4791 on the netdev's
// addresses, or an Ethernet segment of whole frames where the device has
// addresses of its own (WireConfig).
//
// The firmware (control thread) and the engine share the device tables. The
// engine caches nothing it cannot rebuild: fence() takes the engine's device
// lock, so the firmware writes an entry only between two engine batches, and
// unfence() on a QPC entry re-reads it (hw-spec 9.1).
#pragma once

#include <array>
#include <atomic>
#include <mutex>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "simnic/congestion/dcqcn.h"
#include "simnic/congestion/notification_point.h"
#include "simnic/hw/tables.h"
#include "simnic/soft_engine/timing.h"

namespace simnic::soft_engine {

class Port;  // the engine's port (src/port.h)
struct EngineGroup;  // the engines of one fabric (below)

// A port on an Ethernet segment of whole frames (`simnic wire`, the rig's
// wire: one frame per UDP datagram to a hub) instead of the host's UDP
// stack. The device is then a NIC on that segment: its own MAC and
// addresses, ARP and IPv6 neighbour discovery of its own, IP headers written
// as kernel rxe writes them (soft_engine/src/wire_port.cc).
struct WireConfig {
    std::uint32_t hub_ip = 0;      // IPv4, host order (127.0.0.1)
    std::uint16_t hub_port = 0;    // 0: no wire (the netdev's UDP port)
    std::array<std::uint8_t, 6> mac{};
    std::uint32_t ipv4 = 0;        // host order
    std::uint8_t prefix = 24;      // of ipv4: the segment's subnet
    // IPv6 addresses besides the link-local one (fe80::EUI-64 of the MAC,
    // which the port always has), and their prefix lengths.
    std::vector<std::pair<std::array<std::uint8_t, 16>, std::uint8_t>> ipv6;
    std::uint32_t mtu = 1500;      // the segment's MTU (rxe: active MTU 1024)
    bool on() const { return hub_port != 0; }
};

// RoCE v2 congestion control (docs/model.md, "Congestion control"): DCQCN's
// notification point for the device, a reaction point per RC/UC/UD QP. Off
// by default; on, every QP the device builds takes part: its request packets
// are ECT(0) and paced at its rate, CE-marked packets for it are answered
// with CNPs, and CNPs for it lower its rate.
struct CongestionControl {
    bool on = false;
    congestion::DcqcnConfig rp;  // rp.line_rate_bps: the port's line rate
    congestion::NpConfig np;
    // Set: every QP's reaction point reports its changes to it, as its
    // QPN, and the QP's end (a fabric's record, `simnic fabric dcqcn`).
    // Called under the engine's lock; must outlive the engine.
    congestion::RpObserver* observer = nullptr;
};

// What `simnic stats` shows of one QP's reaction point.
struct QpCongestionStats {
    std::uint32_t qpn = 0;
    double rate_bps = 0;         // Rc
    double target_rate_bps = 0;  // Rt
    double alpha = 0;
    bool rate_limited = false;
    congestion::RpCounters counters;  // cnps_received, rate_limited_ns, the increase steps
};

struct EngineConfig {
    std::string device;    // device name, for messages
    std::string netdev;    // the port's netdev; its first IPv4 address is used
    WireConfig wire;       // on: the port is on this wire instead (netdev unused)
    std::string pcap;      // empty: no capture
    // Frames to the device's own address skip the kernel (see Device). A wire
    // port always does this, as rxe always does: no host stack is behind it.
    bool loopback = false;
    // How long an RC ACK may wait at the port for its flow's reply, so that
    // both leave in one system call (src/ack_hold.h); 0: never. The engine
    // thread spins while one waits, so create() takes at most
    // kMaxAckHoldNs. A driven engine (create_driven) holds on the clock
    // poll() is given.
    std::uint64_t ack_hold_ns = 50'000;
    static constexpr std::uint64_t kMaxAckHoldNs = 100'000;
    // SHM domains (hw-spec 1.3): the local mapping of shared object `handle`
    // of context `ctx` and its size; null if there is none. Called by the
    // engine thread; the mapping must stay until the context is removed.
    std::function<std::uint8_t*(std::uint16_t ctx, std::uint32_t handle, std::uint64_t& size)> shm;
    CongestionControl congestion;  // off unless the device's config turns it on
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
    // Set: a device of a fabric in the daemon (docs/model.md, "The fabric"):
    // standalone (the fabric is its wire), but with its thread. Every
    // member's pass may simulate the whole fabric, and with it the other
    // members' datapaths, so the members share one device lock (the
    // group's): their passes take it in turn, and a pass ends every
    // member's batch (CQ waiters woken, EQEs posted), not only its own.
    std::shared_ptr<EngineGroup> group;
    // The GSI (QP1) belongs to the host's CM (the daemon's cm::Agent), not to
    // an application: each UD SEND ONLY to QP1 that arrives with a valid ICRC
    // and the GSI Q_Key is handed here, on the engine thread, with the
    // sender's and our GID (IPv4-mapped for IPv4). Unset: such packets drop.
    // `traffic_class`: the packet's IPv4 TOS or IPv6 traffic class.
    std::function<void(const std::uint8_t* mad, std::size_t len, const std::array<std::uint8_t, 16>& src,
                       const std::array<std::uint8_t, 16>& dst, std::uint8_t traffic_class)>
        gsi_rx;
};

class SoftEngine final : public hw::EngineHooks {
public:
    // Binds the UDP port and starts the engine thread. Null and `err` on
    // failure (port 4791 taken, netdev without IPv4 address, ...).
    static std::unique_ptr<SoftEngine> create(const EngineConfig& cfg, std::string& err);
    // The same device on `port` (src/port.h), with no thread: its driver
    // runs the engine one pass at a time with poll(), in its own thread (the
    // receive path's fuzzer, testbench/fuzz/fuzz_engine_rx.cc). The wire and
    // netdev settings of `cfg` are unused.
    static std::unique_ptr<SoftEngine> create_driven(const EngineConfig& cfg, std::unique_ptr<Port> port,
                                                     std::string& err);
    // One pass of the engine thread's loop: the doorbells, what the port
    // holds, the timers due at `now_ns` (mono_ns's clock), the end of the
    // batch. True if it did anything. Only on an engine from create_driven,
    // whose ACK hold (EngineConfig::ack_hold_ns) runs on this clock alone.
    bool poll(std::uint64_t now_ns);
    ~SoftEngine() override;  // stops the thread
    // Stops the engine thread now (the destructor does too). A fabric's
    // engines are all stopped before any of them goes: any of them may be
    // simulating the others' devices.
    void stop();
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
                  const std::array<std::uint8_t, 6>& dmac, const std::uint8_t* mad, std::size_t len,
                  std::uint8_t traffic_class = 0);

    // The MAC of the next hop to `gid` (IPv4-mapped or IPv6) on a wire port,
    // from the port's neighbour table; nullopt while it is unknown (having
    // started resolution: ARP or a neighbour solicitation), or if `gid` is
    // not on the segment. Always nullopt for the netdev's UDP port, whose
    // neighbours the kernel resolves. Any thread.
    std::optional<std::array<std::uint8_t, 6>> neighbour(const std::array<std::uint8_t, 16>& gid);

    // The reaction point of every QP that has one (none with congestion
    // control off), brought up to now. Takes the device lock.
    std::vector<QpCongestionStats> congestion_stats();

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
    void srq_resizing(std::uint32_t srqn) override;
    void ah_destroying(std::uint32_t ahn) override;
    bool cq_copy_entries(const std::uint8_t* cqc, std::uint16_t new_domain, std::uint64_t new_base,
                         std::uint8_t new_log_size) override;

    struct Impl;
    Impl& impl() { return *impl_; }  // for drivers that include src/engine_internal.h

private:
    explicit SoftEngine(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// The engines of one fabric's devices (EngineConfig::group): one device
// lock for all of them, and who they are.
struct EngineGroup {
    std::recursive_mutex mu;
    std::atomic<int> fence_waiters{0};
    std::vector<SoftEngine::Impl*> members;  // under mu
    // `simnic fabric hold`: the fabric's simulated time stands still. The
    // engines still take every doorbell into the simulation (stamped with
    // the time it stands at) and the firmware still executes commands, but
    // no pass simulates, so flows whose applications start at different
    // wall times can start at one simulated instant. Destroying an AH still
    // simulates until the doorbells rung before it are carried out
    // (SoftEngine::ah_destroying): correctness comes first. Under mu.
    bool held = false;
    // Pacing of quiet gaps (TimingModel::quiet_gap_ns): the fabric
    // simulates about a hundred times slower than real time while busy, but
    // jumps a gap with nothing but a timer in it at once, so a timer could
    // expire (an RNR wait, a retransmit, DCQCN's rate increase) while the
    // application that would have acted before it, in any real time, is
    // still between two calls. A gap is jumped only once as long has passed
    // in wall time with nothing new; a doorbell or frame meanwhile is taken
    // at the time the fabric stands at. The wall-clock time (the engines'
    // monotonic ns) the current gap may be jumped at; 0: none. Under mu.
    std::uint64_t quiet_until_ns = 0;
    // Gaps waited out (the applications were slower than the gap: their
    // time between calls became simulated time) and gaps cut short by a
    // doorbell or frame (`simnic fabric show`). Under mu.
    std::uint64_t gaps_waited_out = 0, gaps_cut_short = 0;
    // Holds or releases the fabric; released, every member's engine
    // simulates on at its next pass. Returns whether it was held.
    bool hold(bool on);
    // Runs `f` with every member between two batches (as
    // SoftEngine::exclusive does for one).
    void exclusive(const std::function<void()>& f) {
        ++fence_waiters;
        std::lock_guard<std::recursive_mutex> lk(mu);
        --fence_waiters;
        f();
    }
};

// STATS_BLOCK counters of a BAR0 global page, by field name (hw-spec 2.6),
// then CC_STATS_BLOCK's (2.6.1), TX_STATS_BLOCK's (2.6.2),
// DMA_STATS_BLOCK's (2.6.3) and RX_STATS_BLOCK's (2.6.4).
std::vector<std::pair<std::string, std::uint64_t>> read_stats(const std::uint8_t* bar);

}  // namespace simnic::soft_engine
