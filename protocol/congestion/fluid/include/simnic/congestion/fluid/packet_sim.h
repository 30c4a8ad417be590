// The packet-level counterpart of the fluid model, without SystemC: N
// senders, each a DcqcnRp pacing a backlogged flow of packets onto its own
// link at the line rate; one bottleneck FIFO of capacity C that marks CE on
// the depth a packet finds (the switch model's rule: red_probability, a
// seeded generator); a NotificationPoint at the receiver whose CNPs reach
// the sender two link delays later. An event loop in nanoseconds. No
// buffer limit, no PFC, no drops (the queue's maximum is reported): DCQCN
// alone, as the fluid model has it.
//
// Rates over time are each flow's bytes sent per sample interval (the
// fluid model's R_C); the queue is sampled at the end of each interval.
#pragma once

#include <cstdint>

#include "simnic/congestion/fluid/scenario.h"
#include "simnic/congestion/fluid/series.h"

namespace simnic::congestion::fluid {

struct PacketStats {
    uint64_t packets = 0;
    uint64_t marked = 0;
    uint64_t cnps = 0;
    double max_queue_bytes = 0;
    // Per flow, what its RP did (CNPs received, increase steps).
    std::vector<RpCounters> rp;
};

// check(s) must be empty.
Series simulate_packets(const Scenario& s, uint64_t seed = 1, PacketStats* stats = nullptr);

}  // namespace simnic::congestion::fluid
