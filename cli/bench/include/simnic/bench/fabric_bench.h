// `simnic bench --fabric TOPO.toml`: an incast on a fabric of model devices
// and the switch model in one simulated time (issue 15, sections 1 and 4).
//
// Every host is a whole model device in this process (firmware, tables, the
// soft engine's datapath inside its cycle-level pipeline), addressed as the
// topology says (its own MAC and IPv4 address, fw::WireNetdev), its pipeline
// in the fabric's context (rtl_model/model/fabric, Fabric). Each sender
// keeps `depth` RDMA WRITEs of `size` bytes outstanding on each of its `qps`
// RC QPs, each connected to a QP of the receiver, as `simnic bench`'s host
// model does for one device: it posts again when a CQE becomes visible, in
// simulated time. Protocol timers (retransmit, RNR, DCQCN's rate limiter)
// and DCQCN's clock run in the fabric's simulated time (docs/model.md,
// "Simulated time and wall-clock time"). Congestion control is the
// devices' config's `[congestion]` table (cfg.congestion): on, every QP
// has a DCQCN reaction point at its link's rate and every device a
// notification point.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "simnic/congestion/dcqcn.h"
#include "simnic/congestion/fluid/scenario.h"
#include "simnic/congestion/fluid/series.h"
#include "simnic/model/config.h"
#include "simnic/model/fabric/topology.h"

namespace simnic::model {

struct FabricBenchSpec {
    fabric::Topology topo;
    ModelConfig cfg;           // every device's (mac.line_rate_gbps from its link)
    std::string receiver;      // host name; empty: the first host
    std::vector<std::string> senders;  // empty: every other host
    // Set: these flows (sender -> destination) instead of the incast
    // (receiver and senders unused). A host may send several.
    struct Flow {
        std::string from, to;
    };
    std::vector<Flow> flows;
    uint32_t size = 65536;     // bytes per WRITE
    uint32_t qps = 1;          // per sender
    uint32_t depth = 8;        // WRITEs outstanding per QP
    uint64_t messages = 64;    // per sender (unless duration_us)
    // Set: each flow keeps posting until this much simulated time has
    // passed since the start (messages unused), so that every flow is
    // backlogged over the whole [0, duration_us]; then what is posted
    // completes.
    double duration_us = 0;
    // The QPs' traffic class (the IP TOS byte): DSCP 26 (RoCE's usual
    // AF31, switch priority 3) and ECT(0), so that the switch may mark CE.
    uint8_t traffic_class = 26 << 2 | 2;
    // Set: each flow posts its first WRITEs at its own time, drawn
    // uniformly from [0, start_jitter_us) after the start by the switch's
    // seed (topo.sw.seed). The senders of a real incast never start in the
    // same nanosecond; with them in lockstep every run cuts each flow the
    // same whole number of times, and a fluid model describes the mean
    // over such phases (simnic bench --seeds).
    double start_jitter_us = 0;
    uint8_t timeout = 10;      // QP local ACK timeout (4.096 us * 2^timeout, wall clock)
    uint64_t bin_ns = 10'000;  // the throughput series' bin
    double wall_limit_s = 120; // give up (the workload stalled) after this long
    // A capture of every host link, both directions (Fabric::tap): each
    // frame as it leaves its sender and as it reaches its receiver, stamped
    // with its simulated time in microseconds (pcap's resolution). Empty: none.
    std::string pcap;
    // Set: host i's QPs' reaction points report their changes to
    // rp_observer(i) (soft_engine::CongestionControl::observer), as a
    // daemon's fabric records them for `simnic fabric dcqcn`. Must outlive
    // the run.
    std::function<congestion::RpObserver*(size_t host)> rp_observer;
};

struct FabricFlow {
    std::string host;            // the sender
    std::string to;              // the destination
    // The sending device's counters (retransmits to pfc_held, drops, CE):
    // shared by the flows of one sender.
    uint64_t messages = 0, errors = 0;
    double gbps = 0;             // its payload over its active time (first post to last completion)
    uint64_t retransmits = 0;    // request packets sent again (go-back-N)
    uint64_t naks_received = 0;  // NAK PSN sequence errors from the receiver
    uint64_t pfc_received = 0;   // PFC frames its MAC RX took
    uint64_t pfc_held = 0;       // frames its MAC TX held back for a pause
    uint64_t drops = 0;          // its frames the switch dropped (at its ingress port)
    uint64_t ce_marked = 0;      // its frames that reached their destination marked CE
    std::vector<double> gbps_series;  // per bin of bin_ns: payload completed
    // Per bin of bin_ns: the flow's frames leaving the sender's MAC TX,
    // their bytes as DCQCN's rate limiter counts them (Ethernet frame
    // without preamble, gap and FCS), Gb/s. Comparable with the DCQCN
    // fluid model's rates (congestion/fluid/series.h).
    std::vector<double> wire_gbps_series;
    uint64_t wire_frames = 0, wire_bytes = 0;  // those frames, in all
    // When the flow started posting, microseconds from the measurement's
    // start (0 without start_jitter_us): one per run, so that the mean of
    // runs (mean_of_runs) keeps every run's, which fabric_fluid gives the
    // reference models.
    std::vector<double> starts_us;
    // Congestion control (the sending device's CC_STATS_BLOCK, shared by
    // its flows, and its QPs' reaction points).
    uint64_t cnp_received = 0;   // CNPs that reached the sender
    uint64_t rate_limit_holds = 0;
    double rate_gbps = 0, target_rate_gbps = 0, alpha = 0;  // the flow's QPs at the end (mean)
    uint64_t rate_limited_ns = 0;                            // the flow's QPs, summed
    uint64_t rp_cnps = 0;        // CNPs its QPs' reaction points acted on
    // With congestion control on: at each bin's end from the measurement's
    // start (the first at bin_ns), the same means of its QPs' Rc and Rt
    // (Gb/s) and alpha, the reaction point's state at that simulated time.
    std::vector<double> rc_gbps_series, rt_gbps_series, alpha_series;
};

struct FabricBenchResult {
    std::vector<FabricFlow> flows;
    double sim_ns = 0;
    double wall_s = 0;
    // Every flow's completed payload over the run's simulated time (sim_ns),
    // and every flow's frames leaving its sender over the same time
    // (retransmissions included): a lossy fabric's goodput falls far below
    // what its links carry.
    double goodput_gbps = 0, wire_gbps = 0;
    uint64_t switch_drops = 0, switch_marks = 0, switch_pauses = 0, switch_resumes = 0;
    uint64_t switch_no_route = 0;  // frames to a MAC the switches have no route for (every port)
    uint64_t max_queue_bytes = 0;  // the receiver's egress queues (any destination's, with spec.flows), deepest
    uint64_t shared_peak = 0;
    uint64_t receiver_naks_sent = 0;  // by every destination
    // Congestion control at the destinations (their CC_STATS_BLOCKs,
    // summed): CE-marked packets seen, CNPs sent, CE marks that asked for
    // no CNP (one went to the QP less than the interval N ago).
    uint64_t receiver_ce_packets = 0, receiver_cnp_sent = 0, receiver_cnp_suppressed = 0;
    bool congestion_on = false;
    // PFC frames the switches sent to hosts (pauses and resumes), and when
    // the last reached its host, from the measurement's start.
    uint64_t pfc_frames_to_hosts = 0;
    double last_pfc_ns = 0;
    uint64_t timer_polls = 0;      // times the fabric went idle with messages outstanding (a stall: its timers are simulated)
    double bin_ns = 0;
    // Per switch (one, or the leaves then the spines) and port, summed over
    // priorities: PFC pauses sent (XOFF, refreshes included), drops at the
    // ingress, CE marks at the egress.
    struct SwitchPorts {
        std::string name;
        std::vector<uint64_t> pauses_sent, drops, marks;
    };
    std::vector<SwitchPorts> switches;
    std::string depth_csv;         // every switch's queue depth series (Fabric::write_depth_csv)
    // The destinations' egress queues: at each sample (every
    // depth_sample_ns from the fabric's start, so from before the
    // measurement's start at start_ns), the deepest of them, bytes.
    std::vector<double> dest_depth_bytes;
    double depth_sample_ns = 0;
    double start_ns = 0;           // the measurement's start, in the fabric's time
};

bool run_fabric_bench(const FabricBenchSpec& spec, FabricBenchResult& out, std::string& err);

// The mean of runs of one fabric and workload that differ only in the
// switches' marking seed: each flow's rate series and the destinations'
// queue series averaged bin by bin (over the bins every run has), the
// frame and byte counts summed (their ratio, the mean frame, is what the
// fluid model takes), each run's start times kept, the rest the first
// run's. A run whose flows differ
// in number from the first's takes no part. A fluid model describes
// the mean of a DCQCN fabric, not any one run of it: two flows are cut a
// whole number of times each, the fluid model's rates by fractions.
FabricBenchResult mean_of_runs(const std::vector<FabricBenchResult>& runs);

// CSV: time_us, then one column per flow (Gb/s per bin).
std::string fabric_throughput_csv(const FabricBenchResult& r);
// The flows' wire rates (wire_gbps_series) in the DCQCN fluid model's CSV
// form (congestion/fluid/series.h): t_us at each bin's end,
// rate_gbps_0..N-1, and the receivers' queue depth (the deepest egress
// queue of a destination's port, bytes) where the depth series has it.
std::string fabric_rates_csv(const FabricBenchResult& r);
// With congestion control on: each flow's reaction point over time
// (rc_gbps_series, rt_gbps_series, alpha_series). CSV: t_us at each bin's
// end, then per flow its Rc (Gb/s), Rt (Gb/s) and alpha; SVG: Rc on the
// left axis, alpha on the right. A NaN (a QP of `simnic fabric dcqcn`
// before it began or after it ended) is an empty cell, and no point.
// `about`: the CSV's first line, after "# " (the bench's flows if empty).
std::string fabric_dcqcn_csv(const FabricBenchResult& r, const std::string& about = "");
std::string fabric_dcqcn_svg(const FabricBenchResult& r, const std::string& title);
// SVG plots: per-flow throughput over time, and the receiver's queue depth.
std::string fabric_throughput_svg(const FabricBenchResult& r, const std::string& title);
std::string fabric_depth_svg(const FabricBenchResult& r, const std::string& title);

// Issue 15, section 4: a fabric run with DCQCN against the DCQCN fluid
// model (protocol/congestion/fluid) for the same parameters: the flows, the
// bottleneck (the destination's link, in the frame bytes DCQCN counts: the
// link rate less the 20 bytes of preamble and gap per frame), the packet
// (the flows' mean frame), the links' delay (one way: propagation and the
// switch's forwarding latency), RED's Kmin, Kmax, Pmax (the flows'
// priority), the reaction and notification points' parameters (the
// devices' [congestion] table), the sample interval (bin_ns).
struct FabricFluid {
    congestion::fluid::Scenario scenario;
    congestion::fluid::Series fabric, fluid;  // the run's wire rates and destination queue; the model's
    // Each flow, from `from_s` to the end, in windows of `window_s`.
    congestion::fluid::Agreement flows;
    // The mean over the flows, from the start, in 1 ms windows: the
    // incast's transient (docs/model.md: where they part, and why).
    congestion::fluid::Agreement transient;
    // The packet-level DCQCN model (congestion/fluid/packet_sim.h) for the
    // same scenario, the mean of kReferenceSeeds runs: the published
    // algorithm with every CNP a discrete cut, without the NIC pipeline,
    // the switch model or the links of the fabric. Where the fluid model's
    // mean field parts from discrete DCQCN (an incast of 4 KiB frames cut
    // by whole halvings), the reference parts from it the same way, and the
    // fabric is held to the reference (docs/model.md, The incast of 4 KiB
    // frames).
    static constexpr unsigned kReferenceSeeds = 8;
    congestion::fluid::Series reference;
    // The mean over the flows, from the start, in 1 ms windows: the fabric
    // against the reference, and the reference against the fluid model.
    congestion::fluid::Agreement transient_reference, reference_fluid;
    // The fabric against the reference as transient_reference, each
    // window's error a fraction of the fair share: an 8:1 incast's first
    // cuts take every flow to a few hundred Mb/s, where errors relative to
    // the rate say little.
    congestion::fluid::Agreement transient_reference_share;
    // The destination queue's mean from `from_s` to the end, bytes.
    double fabric_queue_bytes = 0, fluid_queue_bytes = 0;
    // When the mean over the flows is within 10% of the fair share (1 ms
    // windows) from then on; NaN if never.
    double fabric_converged_s = 0, fluid_converged_s = 0, reference_converged_s = 0;
    double fair_bps = 0;
};
// Flows that start at their own times (start_jitter_us) start so in both
// models too; for the mean of runs, each model's series is the mean of its
// runs with each run's start times (for the packet-level model,
// kReferenceSeeds runs for each).
// False with `err` when the run cannot be described to the fluid model
// (no flows, one flow's destination differs from another's, congestion
// control off, a bad scenario). With `reference` false the packet-level
// reference (kReferenceSeeds runs of it) is not computed and its fields
// stay empty: a line per seed needs only the fluid model.
bool fabric_fluid(const FabricBenchSpec& spec, const FabricBenchResult& r, double from_s, double window_s,
                  FabricFluid& out, std::string& err, bool reference = true);
// The fabric's rates and the fluid model's on one plot (`simnic bench
// --fluid`, OUT-fluid.svg): each flow of `r` on the wire (solid, left axis)
// and in the fluid model (dashed, right axis, the same scale), in Gb/s
// against simulated time; the model's series thinned to the fabric's bins.
std::string fabric_fluid_svg(const FabricBenchResult& r, const FabricFluid& ff, const std::string& title);

}  // namespace simnic::model
