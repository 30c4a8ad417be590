// One DCQCN experiment, described once for every model that runs it: N
// flows, each from its own sender at the senders' line rate, share one
// bottleneck egress queue of capacity C that marks CE RED-style (Kmin, Kmax,
// Pmax); one receiver runs the notification point; its CNPs reach the
// senders' reaction points after a delay. The fluid model (fluid_model.h)
// and the packet-level model (packet_sim.h) both take a Scenario, so that
// their runs compare for the same parameters; a fabric run exported as CSV
// (series.h) compares with them too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "simnic/congestion/dcqcn.h"
#include "simnic/congestion/notification_point.h"

namespace simnic::congestion::fluid {

// The congestion point's marking. Defaults: the DCQCN paper's switch
// settings, Kmin 5 KB, Kmax 200 KB, Pmax 1% (Zhu et al., CoNEXT 2016,
// restating SIGCOMM 2015: "Default parameters (R_AI=40Mbps,
// Kmax=200KB)"; the authors' fluid model dcqcn2.m: Kmin 5KB, Kmax 200KB,
// pmax "1 percent"), the same as the switch model's defaults
// (rtl_model/model/fabric, SwitchPriorityConfig).
struct RedConfig {
    double kmin_bytes = 5'000;
    double kmax_bytes = 200'000;
    double pmax = 0.01;
};

// The probability that a packet finding `depth_bytes` in the queue is
// marked: 0 up to Kmin, rising linearly to Pmax at Kmax, 1 above Kmax. The
// fluid model's equation (CoNEXT 2016, eq. 1) and the switch model's rule
// (Switch::mark_ecn: never below Kmin, always above Kmax) agree on it but
// for the single point depth == Kmin, a set of measure zero.
double red_probability(double depth_bytes, const RedConfig& red);

struct Scenario {
    // N, the flows (one per sender).
    unsigned flows = 2;
    // C, the bottleneck's rate, bits/s. The senders' line rate is
    // rp.line_rate_bps (both 100 Gb/s by default: issue 15's 2:1 incast).
    double bottleneck_bps = 100e9;
    // Each flow's start, seconds (it starts at line rate, as DCQCN flows
    // do). Empty: all at 0; else one per flow.
    std::vector<double> start_s;
    // How long to run, seconds.
    double duration_s = 0.02;
    // The packet: its bytes on the wire, which are also the unit of the
    // marking probability (the fluid model counts rates, B and queue in
    // packets). 1000 bytes: the authors' fluid model's packetSize (8000
    // bits) and their simulator's PACKET_PAYLOAD_SIZE.
    uint32_t packet_bytes = 1000;
    // One-way propagation (and forwarding) delay of each link: sender to
    // switch and switch to receiver; a CNP crosses two links back. 1 us: a
    // rack's cables plus a switch's port-to-port latency.
    double link_delay_s = 1e-6;
    // tau*, the control loop delay of the fluid model: from the queue's
    // state to the senders' reaction to it, reaching the queue again. 0:
    // derived from the links (loop_delay_s()).
    double feedback_delay_s = 0;
    RedConfig red;
    DcqcnConfig rp;  // the reaction point: every sender the same
    NpConfig np;     // the notification point: tau = np.min_cnp_interval_ns
    // Output: one sample every this many seconds.
    double sample_s = 10e-6;
};

// tau*: feedback_delay_s if set, else the loop the packet model has: a
// marked packet's way from the queue to the receiver (one link and its
// serialization), the CNP's way back (two links), and the new rate's way
// to the queue (one link and a serialization). Our notification point
// sends a CNP at once for the first mark after its interval (N), so unlike
// the authors' model (whose NP sends on a periodic tau timer and so adds
// tau/2 on average) no part of tau is in the delay.
double loop_delay_s(const Scenario& s);

// When flow i starts.
double start_of(const Scenario& s, unsigned flow);

// Empty if usable, else what is wrong (one problem per line).
std::string check(const Scenario& s);

}  // namespace simnic::congestion::fluid
