// A fabric in the daemon (`simnic fabric add NAME TOPO.toml`; docs/model.md,
// "The fabric", "Real applications on a fabric"): a model::fabric::Fabric
// built from a topology, and one model device per host, named NAME_HOST,
// with the host's MAC and IPv4 address. The devices' engines share one
// device lock (soft_engine::EngineGroup): whichever engine runs a pass
// simulates the whole fabric, the others' devices with it.
//
// The daemon owns it (daemon.cc): DaemonFabric::create parses and builds the
// fabric and lists its devices; the daemon creates their DeviceRuntimes
// (with fabric() and group()), then start(); on delete, the runtimes go
// first (their pipelines live in the fabric's context).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "simnic/control/protocol.h"
#include "simnic/daemon/devices.h"
#include "simnic/roce/packet.h"
#include "simnic/soft_engine/engine.h"

namespace simnic::model::fabric {
class Fabric;
}
namespace simnic::roce {
class PcapWriter;
}
namespace simnic::congestion {
class RpObserver;
class RpRecord;
}

namespace simnic::daemon {

class RateRecord;
class DepthRecord;

class DaemonFabric {
public:
    // `topology_text` is the file `origin` (messages say origin:line:column);
    // `config_*` every device's model configuration (empty: the defaults);
    // `pcap` a capture of every host's link (empty: none), as `simnic bench
    // --fabric --pcap` writes it. Null and `err` on bad input.
    static std::unique_ptr<DaemonFabric> create(const std::string& name, const std::string& origin,
                                                const std::string& topology_text, const std::string& config_path,
                                                const std::string& config_text, const std::string& pcap,
                                                std::string& err);
    ~DaemonFabric();
    DaemonFabric(const DaemonFabric&) = delete;
    DaemonFabric& operator=(const DaemonFabric&) = delete;

    const std::string& name() const { return name_; }
    // One device per host, in the topology's order (not yet in any table).
    const std::vector<Device>& devices() const { return devices_; }
    model::fabric::Fabric* fabric() const { return fabric_.get(); }
    const std::shared_ptr<soft_engine::EngineGroup>& group() const { return group_; }
    // Elaborates the simulation once every device's runtime is built.
    bool start(std::string& err);
    // `simnic fabric show`: the hosts (device, MAC, IPv4, frames), every
    // switch's counters per port (frames, drops, ECN marks, pauses, the
    // deepest egress queue), the simulated time and whether it is held,
    // its quiet gaps (waited out in wall time, cut short), the capture's
    // file. Read
    // under the devices' lock; what the capture holds is on disk after it.
    control::Json show() const;
    // `simnic fabric hold|release` (soft_engine::EngineGroup::hold): the
    // simulated time, in microseconds, at which the fabric now stands, and
    // in `was_held` whether it was held before.
    double hold(bool on, bool& was_held);
    // `simnic fabric rates`: each flow's rate over simulated time (the
    // frames from one host to another as they leave the sender, Gb/s per
    // `bin_us`, rounded up to whole bins of the record; widened so that the
    // reply holds at most kMaxRatePoints numbers), as `simnic bench
    // --fabric` gives its flows'.
    control::Json rates(std::uint64_t bin_us) const;
    // `simnic fabric dcqcn`: each QP's DCQCN reaction point over simulated
    // time (Rc, Rt and alpha at the end of every `bin_us`, rounded and
    // widened as rates'), told by the RPs themselves
    // (congestion::RpRecord). `advance` brings every device's RPs to the
    // fabric's time first (DeviceRuntime::congestion_stats), under the
    // devices' lock, so that the last bins hold their timers' changes.
    control::Json dcqcn(std::uint64_t bin_us, const std::function<void()>& advance) const;
    // `simnic fabric depth`: each switch egress queue's depth over
    // simulated time, the deepest it was in every `bin_us` (rounded and
    // widened as rates'), told by the switches as it changes
    // (DepthRecord), with its depth now.
    control::Json depth(std::uint64_t bin_us) const;
    // What host `host`'s device gives its engine to report its RPs to
    // (soft_engine::CongestionControl::observer).
    congestion::RpObserver* rp_observer(std::size_t host) const { return rp_observers_.at(host); }
    // The series `series(bin_us)` (rates, dcqcn or depth) as one reply can
    // carry it: a connection sends a reply whole or not at all, and its
    // buffer may hold far less than kMaxRatePoints numbers
    // (control::message_capacity), so a long run's series is taken with
    // bins twice as wide at a time until its JSON is at most `room` bytes,
    // or holds one bin. The caller sees the wider bins in its `bin_us`, as
    // when the record's bound widens them.
    static control::Json fit(std::size_t room, std::uint64_t bin_us,
                             const std::function<control::Json(std::uint64_t)>& series);
    static constexpr std::uint64_t kRateBinUs = 10;  // the records' first bin
    static constexpr std::size_t kMaxRatePoints = 50'000;
    // The record's bound (RateRecord): 32 MiB of bins.
    static constexpr std::size_t kMaxRateCells = std::size_t{1} << 22;

private:
    DaemonFabric() = default;
    std::string name_, origin_;
    std::unique_ptr<model::fabric::Fabric> fabric_;
    std::shared_ptr<soft_engine::EngineGroup> group_;
    std::vector<Device> devices_;
    // What each host's MAC TX sent (the fabric's tap, under the devices'
    // lock): bytes, and the simulated times of its first and last frame.
    struct Sent {
        std::uint64_t bytes = 0, first_ps = 0, last_ps = 0;
    };
    std::vector<Sent> sent_;
    // Each flow's bytes over simulated time, by (from, to) host (the tap,
    // under the devices' lock); a frame to an address no host has (PFC,
    // broadcast) belongs to no flow.
    std::unique_ptr<RateRecord> rates_;
    // Each switch egress queue's depth over simulated time (the switches'
    // depth taps, under the devices' lock).
    std::unique_ptr<DepthRecord> depths_;
    // Each QP's reaction point over simulated time (told by the engines,
    // under the devices' lock), and its observer for each host's device.
    std::unique_ptr<congestion::RpRecord> rp_record_;
    std::vector<congestion::RpObserver*> rp_observers_;
    std::map<roce::MacAddr, std::size_t> host_of_mac_;
    std::string pcap_path_;
    std::unique_ptr<roce::PcapWriter> pcap_;  // written by the tap, under the devices' lock
};

// The device of host `host` of fabric `fabric`: FABRIC_HOST.
std::string fabric_device_name(const std::string& fabric, const std::string& host);

}  // namespace simnic::daemon
