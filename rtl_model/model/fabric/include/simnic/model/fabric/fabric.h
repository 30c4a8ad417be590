// A fabric: several model devices and the switch model (one switch, or a
// leaf-spine of several: Topology) in ONE SystemC
// simulation context, so that frames between the devices cross the switch
// in simulated time (issue 15, section 1). docs/model.md, "The fabric".
//
//   device i MAC TX ──(last bit out, + link delay)──> switch port i receive
//   switch port j egress ──(last bit out − its line time + link delay = the
//       first bit at the device)──> device j MAC RX (Pipeline::rx_frame)
//
// Each device is a soft engine's cycle-level pipeline built in the fabric's
// context (Pipeline::create_shared) whose MAC TX hands frames to the fabric
// instead of Datapath::wire_tx. The switch forwards by destination MAC
// (static table, from the topology). Nothing runs while nothing happens:
// run() simulates until no device, link or switch has work, and an input
// (a doorbell, a timer) that finds the fabric idle is stamped with its
// current time, so an idle gap costs no simulated time and an idle fabric no
// CPU.
//
// Use: create(topology); factory(i, cfg) for each host's soft engine (which
// builds the pipeline); start() once every host is built; then doorbells
// and run(), all under the pipelines' own lock (they take it).
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <utility>
#include <string>
#include <vector>

#include "simnic/model/config.h"
#include "simnic/model/fabric/switch.h"
#include "simnic/model/fabric/topology.h"
#include "simnic/model/pipeline.h"

namespace simnic::model::fabric {

class DelayLine;

class Fabric {
public:
    static std::unique_ptr<Fabric> create(const Topology& topo, std::string& err);
    ~Fabric();
    Fabric(const Fabric&) = delete;
    Fabric& operator=(const Fabric&) = delete;

    // The TimingFactory of host `i`'s soft engine (standalone: the fabric is
    // its wire). `cfg`'s mac.line_rate_gbps is replaced by the link's rate.
    soft_engine::TimingFactory factory(size_t i, ModelConfig cfg);
    // Elaborates the simulation: every host's pipeline must be built.
    bool start(std::string& err);
    // Simulates until idle; returns the simulated ps advanced.
    std::uint64_t run();
    // Simulates until simulated time `ps`, idle or not (nothing if it is
    // past): for work that starts at a given time.
    void run_until(std::uint64_t ps);
    // Simulates until simulated time `ps` or until idle, whichever comes
    // first; true if it got to `ps` (for sampling at fixed times while the
    // fabric is busy: an idle fabric still costs no simulated time).
    bool run_until_or_idle(std::uint64_t ps);
    std::uint64_t now_ps() const;

    const Topology& topology() const { return topo_; }
    size_t hosts() const { return topo_.hosts.size(); }
    Pipeline* device(size_t i) const { return devs_[i]; }
    // The switches: one, or the leaves then the spines (Topology::switches).
    size_t switches() const { return sws_.size(); }
    Switch& sw(size_t k = 0) { return *sws_[k]; }
    const Switch& sw(size_t k = 0) const { return *sws_[k]; }
    // Host i's switch and port.
    std::pair<std::uint32_t, std::uint32_t> host_at(size_t i) const { return topo_.host_at[i]; }
    // Every switch's depth series in one CSV: time_ns, then sK_portP_prioI
    // per queue that held a frame (without "sK_" for a single switch).
    void write_depth_csv(std::ostream& os);
    // Frames each host's MAC TX sent into its link, and frames its link
    // delivered to its MAC RX.
    std::uint64_t tx_frames(size_t i) const { return tx_[i]; }
    std::uint64_t rx_frames(size_t i) const { return rx_[i]; }
    // A tap on every host's link: called with each frame as it leaves host
    // i's MAC TX (to_host false) and as it reaches host i's MAC RX (to_host
    // true; after the switch: its CE marks and PFC frames), at that
    // simulated time (ps). For a capture (simnic bench --fabric --pcap).
    using Tap = std::function<void(size_t host, bool to_host, const std::vector<std::uint8_t>& frame,
                                   std::uint64_t ps)>;
    void tap(Tap t) { tap_ = std::move(t); }
    // Every switch's egress queues' depth changes (Switch::depth_tap), with
    // the switch's index.
    using DepthTap = std::function<void(size_t sw, std::uint32_t port, unsigned prio, std::uint64_t ps,
                                        std::uint64_t bytes)>;
    void depth_tap(const DepthTap& t) {
        for (size_t k = 0; k < sws_.size(); ++k)
            sws_[k]->depth_tap([t, k](std::uint32_t port, unsigned prio, std::uint64_t ps, std::uint64_t bytes) {
                t(k, port, prio, ps, bytes);
            });
    }
    // Frames from host i (by source MAC) delivered marked CE (ECN 0b11).
    std::uint64_t ce_frames_from(size_t i) const { return ce_from_[i]; }

    struct Impl;

private:
    explicit Fabric(const Topology& topo);
    Topology topo_;
    sc_core::sc_simcontext* ctx_ = nullptr;
    std::vector<std::unique_ptr<Switch>> sws_;
    std::vector<std::unique_ptr<DelayLine>> up_, down_;  // host -> switch, switch -> host, per host
    // Switch to switch: trunk_[k][p] carries what leaves switch k's port p
    // (null for a host's port).
    std::vector<std::vector<std::unique_ptr<DelayLine>>> trunk_;
    std::vector<Pipeline*> devs_;
    std::vector<std::uint64_t> tx_, rx_, ce_from_;
    void count_ce(const std::vector<std::uint8_t>& fr);
    bool started_ = false;
    Tap tap_;
};

}  // namespace simnic::model::fabric
