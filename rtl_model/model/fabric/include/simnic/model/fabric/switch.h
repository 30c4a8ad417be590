// The switch model: an output-queued Ethernet switch in SystemC time, for a
// fabric of model devices (issue 15, section 2).
//
// Frames are whole Ethernet frames without the FCS, as the model NIC's MAC
// hands them to the wire and takes them from it (std::vector<uint8_t>, the
// MAC blocks' representation). A frame enters with receive(port, frame) at
// the simulated time its last bit has arrived, and leaves through the sink
// at the simulated time its last bit has left the egress port.
//
//   arrival ──> admission (shared buffer, PFC per ingress port and priority;
//               tail drop if it does not fit)
//           ──> forwarding_latency_ps later: the egress queue of (out port,
//               priority), where ECN marks it by that queue's depth
//           ──> the egress port's scheduler (strict priority or round robin
//               among the priorities not paused), one frame at a time at the
//               port's line rate; the frame's bytes leave the buffer when
//               its last bit is out
//
// PFC frames the switch sends (XOFF, XON) go out on the ingress port they are
// about, ahead of any queued data, once the frame on the line is out. PFC
// frames it receives pause its own egress on that port for that priority.
//
// Nothing runs while nothing happens: every process waits on an event or on
// the end of a frame, pause or refresh; no clock ticks.
//
// The module is created in whatever SystemC context is current (the fabric's,
// or a testbench's) and must be created before the simulation starts. Times
// are integer picoseconds: the context keeps SystemC's default resolution
// of 1 ps, as the pipeline's does.
#pragma once

#include <systemc>

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <iosfwd>
#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

#include "simnic/model/fabric/switch_config.h"

namespace simnic::model::fabric {

// Counters of one port and priority. "In" is the ingress side (frames that
// arrived on this port with this priority), "out" the egress side (frames
// that left by this port with this priority).
struct PortPrioCounters {
    std::uint64_t rx_frames = 0, rx_bytes = 0;  // in, admitted or not (not MAC control frames)
    std::uint64_t drops = 0;                    // in: tail-dropped, did not fit
    std::uint64_t tx_frames = 0, tx_bytes = 0;  // out: data frames sent (not PFC frames)
    std::uint64_t tx_drops = 0;                 // out: frames for this queue tail-dropped at their ingress
    std::uint64_t ecn_marked = 0;               // out: frames this queue marked CE
    std::uint64_t pause_sent = 0;               // in: PFC XOFF frames sent for it (refreshes included)
    std::uint64_t resume_sent = 0;              // in: PFC XON (time 0) frames sent for it
    std::uint64_t pause_received = 0;           // out: PFC frames received with a time > 0 for it
    std::uint64_t resume_received = 0;          // out: PFC frames received with a time of 0 for it
    std::uint64_t paused_ps = 0;                // out: time this queue was paused by a received PFC frame
    std::uint64_t max_depth_bytes = 0;          // out: the egress queue's deepest
    std::uint64_t max_ingress_bytes = 0;        // in: the most this port and priority held in the buffer
    std::uint64_t max_headroom_bytes = 0;       // in: the most of its PFC headroom it used

    // Folds another queue's counters into these: counts add, peaks take the larger. Used to total a
    // port over its priorities and a switch over its ports; keeping it beside the fields means a new
    // counter is totalled everywhere at once.
    PortPrioCounters& add(const PortPrioCounters& o) {
        rx_frames += o.rx_frames;
        rx_bytes += o.rx_bytes;
        drops += o.drops;
        tx_frames += o.tx_frames;
        tx_bytes += o.tx_bytes;
        tx_drops += o.tx_drops;
        ecn_marked += o.ecn_marked;
        pause_sent += o.pause_sent;
        resume_sent += o.resume_sent;
        pause_received += o.pause_received;
        resume_received += o.resume_received;
        paused_ps += o.paused_ps;
        max_depth_bytes = o.max_depth_bytes > max_depth_bytes ? o.max_depth_bytes : max_depth_bytes;
        max_ingress_bytes = o.max_ingress_bytes > max_ingress_bytes ? o.max_ingress_bytes : max_ingress_bytes;
        max_headroom_bytes = o.max_headroom_bytes > max_headroom_bytes ? o.max_headroom_bytes : max_headroom_bytes;
        return *this;
    }
};

// Counters of one port, whatever the priority.
struct PortCounters {
    std::uint64_t no_route = 0;       // frames to an address not in the table, or back to their own port
    std::uint64_t mac_control = 0;    // MAC control frames received other than PFC (ignored)
    std::uint64_t runts = 0;          // frames shorter than an Ethernet header
};

class EgressPort;

class Switch : public sc_core::sc_module {
public:
    // Where a frame goes once its last bit has left port `port`.
    using Sink = std::function<void(std::uint32_t port, std::vector<std::uint8_t>&& frame)>;

    SC_HAS_PROCESS(Switch);

    // Throws std::invalid_argument if validate_switch_config() fails.
    Switch(sc_core::sc_module_name name, const SwitchConfig& cfg, Sink sink);
    ~Switch() override;

    // A frame whose last bit arrived on `port` now (from a process of the
    // simulation, or a sink it called).
    void receive(std::uint32_t port, std::vector<std::uint8_t> frame);

    const SwitchConfig& config() const { return cfg_; }
    std::uint32_t ports() const { return std::uint32_t(cfg_.ports.size()); }
    const PortPrioCounters& counters(std::uint32_t port, unsigned prio) const { return q(port, prio).c; }
    const PortCounters& port_counters(std::uint32_t port) const { return port_c_[port]; }

    // Now: bytes in the egress queue of (port, prio), the frame on the line
    // included; bytes (port, prio) holds in the buffer as an ingress; the
    // shared buffer's use (headroom not included) and its peak.
    std::uint64_t queue_bytes(std::uint32_t port, unsigned prio) const { return q(port, prio).depth; }
    std::uint64_t ingress_bytes(std::uint32_t port, unsigned prio) const { return q(port, prio).ingress; }
    bool pausing(std::uint32_t port, unsigned prio) const { return q(port, prio).xoff; }
    std::uint64_t shared_used() const { return shared_used_; }
    std::uint64_t shared_peak() const { return shared_peak_; }

    // Queue depth over time (config depth_sample_ps > 0): sample k is the
    // depth of (port, prio)'s egress queue at k * depth_sample_ps. Samples
    // are written when the depth changes; flush_depth() writes those up to
    // now (call it before reading, at the end of a run).
    void flush_depth();
    const std::vector<std::uint64_t>& depth_series(std::uint32_t port, unsigned prio) const {
        return q(port, prio).series;
    }
    // The series as CSV: time_ns, then a column portP_prioI for every queue
    // that ever held a frame.
    void write_depth_csv(std::ostream& os) const;
    // Told each change of an egress queue's depth as it happens (the
    // simulated time in ps, the bytes it now holds): a record of its own
    // for whoever wants one (`simnic fabric depth`), bounded as it likes,
    // where depth_series() keeps every sample.
    using DepthTap = std::function<void(std::uint32_t port, unsigned prio, std::uint64_t ps, std::uint64_t bytes)>;
    void depth_tap(DepthTap t) { depth_tap_ = std::move(t); }

private:
    friend class EgressPort;

    struct Frame {
        std::vector<std::uint8_t> bytes;
        std::uint32_t in_port = 0, out_port = 0;
        std::uint8_t prio = 0;
    };
    // One (port, priority): its egress queue and its ingress accounting.
    struct Queue {
        std::deque<Frame> frames;  // egress: front is on the line or next
        std::uint64_t depth = 0;   // egress bytes
        std::uint64_t ingress = 0, headroom_used = 0;  // as an ingress: all it holds, the part beyond its share
        bool xoff = false;                // a pause is in force upstream
        std::uint64_t refresh_at = 0;     // ps: resend the XOFF (if still in force)
        std::uint64_t paused_until = 0;   // ps: egress paused by a received PFC frame
        std::vector<std::uint64_t> series;  // depth samples
        bool used = false;                  // ever held a frame
        PortPrioCounters c;
    };

    Queue& q(std::uint32_t port, unsigned prio) { return queues_[port * kPriorities + prio]; }
    const Queue& q(std::uint32_t port, unsigned prio) const { return queues_[port * kPriorities + prio]; }
    std::uint64_t now() const { return sc_core::sc_time_stamp().value(); }

    void forward();  // SC_METHOD: the forwarding delay line
    void arbitrate_ties(std::uint64_t t);  // frames due at t that arrived together: round robin by port
    void receive_mac_control(std::uint32_t port, const std::vector<std::uint8_t>& f);
    bool admit(Frame& f);
    void release(const Frame& f);  // its last bit left
    void send_pfc(std::uint32_t port, unsigned prio, bool xoff);
    void mark_ecn(Frame& f, Queue& out);
    void set_depth(Queue& qu, std::uint64_t depth);
    void sample_to(Queue& qu, std::uint64_t t, bool inclusive);

    const SwitchConfig cfg_;
    Sink sink_;
    DepthTap depth_tap_;
    std::uint64_t shared_cap_ = 0, shared_used_ = 0, shared_peak_ = 0;
    std::vector<Queue> queues_;
    std::vector<PortCounters> port_c_;
    std::unordered_map<std::uint64_t, std::uint32_t> fdb_;  // MAC (48 bits) -> port
    std::deque<std::pair<std::uint64_t, Frame>> delay_;     // (due ps, frame), in order
    sc_core::sc_event delay_ev_;
    std::vector<std::unique_ptr<EgressPort>> egress_;
    std::mt19937_64 rng_;
    std::uint32_t tie_rr_ = 0;  // the port a tie of arrivals serves first
};

}  // namespace simnic::model::fabric
