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
// simulated time. Protocol timers (the retransmit timer) run in wall-clock
// time, as on every model device (docs/model.md, "Simulated time and
// wall-clock time"): when the fabric is idle with work left, the engines are
// polled until a timer fires.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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
    uint64_t messages = 64;    // per sender
    // The QPs' traffic class (the IP TOS byte): DSCP 26 (RoCE's usual
    // AF31, switch priority 3) and ECT(0), so that the switch may mark CE.
    uint8_t traffic_class = 26 << 2 | 2;
    uint8_t timeout = 10;      // QP local ACK timeout (4.096 us * 2^timeout, wall clock)
    uint64_t bin_ns = 10'000;  // the throughput series' bin
    double wall_limit_s = 120; // give up (the workload stalled) after this long
    // A capture of every host link, both directions (Fabric::tap): each
    // frame as it leaves its sender and as it reaches its receiver, stamped
    // with its simulated time in microseconds (pcap's resolution). Empty: none.
    std::string pcap;
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
};

struct FabricBenchResult {
    std::vector<FabricFlow> flows;
    double sim_ns = 0;
    double wall_s = 0;
    uint64_t switch_drops = 0, switch_marks = 0, switch_pauses = 0, switch_resumes = 0;
    uint64_t max_queue_bytes = 0;  // the receiver's egress queues (any destination's, with spec.flows), deepest
    uint64_t shared_peak = 0;
    uint64_t receiver_naks_sent = 0;  // by every destination
    uint64_t timer_polls = 0;      // times the fabric went idle and waited for a wall-clock timer
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
};

bool run_fabric_bench(const FabricBenchSpec& spec, FabricBenchResult& out, std::string& err);

// CSV: time_us, then one column per flow (Gb/s per bin).
std::string fabric_throughput_csv(const FabricBenchResult& r);
// SVG plots: per-flow throughput over time, and the receiver's queue depth.
std::string fabric_throughput_svg(const FabricBenchResult& r, const std::string& title);
std::string fabric_depth_svg(const FabricBenchResult& r, const std::string& title);

}  // namespace simnic::model
