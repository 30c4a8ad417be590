// DCQCN's notification point (NP): the receiver's side of RoCE v2
// congestion control.
//
// A packet that arrives CE-marked for one of the port's QPs asks for a CNP
// to the QP that sent it, at most one per QP per interval (Zhu et al.,
// "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015,
// section 3.1: "at most one CNP every N microseconds per flow"). The QP is
// the flow: a RoCE v2 connection is one QP pair.
//
// Pure logic with no clock of its own: the caller passes the time (in
// nanoseconds, monotonic) with every event, so that the soft engine (host
// time) and the cycle model (simulated time) share it. Building and sending
// the CNP is the caller's (roce::make_cnp, simnic/roce/ecn.h).
#pragma once

#include <cstdint>
#include <unordered_map>

namespace simnic::congestion {

struct NpConfig {
    // N: the shortest time between two CNPs to one QP. 50 us is the paper's
    // N (section 3.1), checked against its authors' fluid model (tau =
    // 50e-6 in github.com/jitupadhye-zz/rdma, fluidmodel/dcqcn/dcqcn2.m) and
    // ns-3 (CNP_INTERVAL 50, github.com/bobzhuyb/ns3-rdma); the CoNEXT 2016
    // restatement of the NP: a CNP at once for a marked packet of a flow
    // that had none in the last tau (docs/model.md, "Parameters"). NVIDIA's
    // mlx5 exposes the same knob as the NP's min_time_between_cnps; 0 sends
    // a CNP for every CE-marked packet.
    uint64_t min_cnp_interval_ns = 50'000;
    // The DSCP (the IP header's top six bits of the TOS / traffic class) of
    // the CNPs the port sends, so that switches can queue them apart from
    // the data they are about (usually in a strict-priority class). 48
    // (CS6): the value NVIDIA documents for mlx5's NP knob `cnp_dscp`
    // (sysfs /sys/class/net/<if>/ecn/roce_np/cnp_dscp, debugfs
    // cc_params/np_cnp_dscp), which the default DSCP-to-priority map
    // (DSCP >> 3) puts in priority 6. The ECN bits stay Not-ECT.
    uint8_t cnp_dscp = 48;
};

struct NpCounters {
    uint64_t ce_packets = 0;       // CE-marked packets seen, for any QP
    uint64_t cnps_requested = 0;   // CNPs asked for (on_ce returned true)
    uint64_t cnps_suppressed = 0;  // CE-marked packets within N of their QP's last CNP
};

class NotificationPoint {
public:
    explicit NotificationPoint(const NpConfig& cfg = {}) : cfg_(cfg) {}

    // A CE-marked packet for local QP `qpn` arrived at `now_ns`. True if the
    // caller must send a CNP to the QP that sent it now; false if one went
    // to it less than N ago (counted as suppressed).
    bool on_ce(uint32_t qpn, uint64_t now_ns);

    // The QP is gone (destroyed, or reset): its next CE mark asks at once.
    void forget(uint32_t qpn) { last_cnp_ns_.erase(qpn); }

    const NpConfig& config() const { return cfg_; }
    const NpCounters& counters() const { return counters_; }

private:
    NpConfig cfg_;
    NpCounters counters_;
    std::unordered_map<uint32_t, uint64_t> last_cnp_ns_;  // per QP: when its last CNP was asked for
};

}  // namespace simnic::congestion
