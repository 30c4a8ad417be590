// The configuration of the switch model (rtl_model/model/fabric): an
// output-queued Ethernet switch with one shared buffer, eight priorities per
// port, ECN marking (RED-style, on the egress queue), PFC (802.1Qbb) and
// tail drop. Issue 15, section 2.
//
// One struct with defaults; every default says where it comes from. The
// fabric's TOML topology fills it later; nothing parses it yet.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "simnic/roce/headers.h"

namespace simnic::model::fabric {

inline constexpr unsigned kPriorities = 8;  // 802.1Q priorities (PCP values), 802.1Qbb classes

// How an egress port chooses among its priorities' queues.
enum class Scheduling : std::uint8_t {
    // The highest non-empty, non-paused priority first. The default: the
    // usual RoCE setup gives CNPs (priority 6) a strict-priority queue so
    // that congestion notifications overtake the data they are about, and
    // with one data class (3) nothing else competes.
    strict,
    // One frame from each non-empty, non-paused priority in turn (frame
    // round robin, not byte-weighted DWRR/ETS).
    round_robin,
};
const char* to_string(Scheduling s);

// One egress port.
struct SwitchPortConfig {
    // The port's line rate, bits/s. 100 Gb/s: the rate of the incast
    // experiments, and the model NIC's default MacConfig::line_rate_gbps.
    std::uint64_t line_rate_bps = 100'000'000'000ull;
};

// One priority (the same on every port).
struct SwitchPriorityConfig {
    // ECN: RED-style marking of CE on ECN-capable frames by the depth of the
    // egress queue (this port, this priority) that the frame joins: never
    // below kmin, probability rising linearly from 0 at kmin to pmax at
    // kmax, always above kmax. Defaults: the DCQCN paper's switch settings
    // (Zhu et al., SIGCOMM 2015, section 5: Kmin 5 KB, Kmax 200 KB, Pmax 1%).
    bool ecn = false;
    std::uint64_t kmin_bytes = 5'000;
    std::uint64_t kmax_bytes = 200'000;
    double pmax = 0.01;

    // PFC (802.1Qbb): per ingress port, the bytes this priority holds in the
    // buffer. Above xoff the switch sends a PAUSE for this priority on that
    // port; once at or below xon again, a PAUSE of time 0 (resume).
    bool pfc = false;
    // 256 KiB: above Kmax, so that ECN acts before PFC pauses (DCQCN's
    // premise: PFC is the backstop, ECN the control).
    std::uint64_t xoff_bytes = 256 * 1024;
    // Two 4 KiB-MTU frames below xoff: hysteresis enough that a pause is not
    // lifted by the first frame that leaves.
    std::uint64_t xon_bytes = 248 * 1024;
    // What an ingress port and priority may hold beyond xoff: the frames
    // still arriving after the switch decided to pause. It must cover the
    // frame the PAUSE waits behind on this port's egress, the PAUSE itself,
    // the cable both ways, the peer's reaction and the frame it is sending:
    // at 100 Gb/s over 100 m (500 ns each way) with a 4 KiB MTU about
    // 4.2 + 0.1 + 12.5 + 4.2 KB = 21 KB; 32 KiB leaves a margin. Reserved
    // in the buffer for every port whose priority has PFC on.
    std::uint64_t headroom_bytes = 32 * 1024;
};

struct SwitchConfig {
    // The ports, 0..N-1 (their number is the vector's size).
    std::vector<SwitchPortConfig> ports = std::vector<SwitchPortConfig>(4);

    // Bytes a frame costs on the line beyond the frame the model carries:
    // preamble (7), SFD (1) and inter-frame gap (12). The model's frames
    // carry no FCS, as the model NIC's MAC sees them; like MacConfig's
    // ifg_bytes (20), this does not count it either, so a switch port and a
    // model NIC at the same rate carry a frame in the same time. (24 would
    // count the FCS.)
    std::uint32_t overhead_bytes = 20;

    // Last bit of a frame in at the ingress to the frame in its egress queue,
    // ps: lookup, buffer write, crossbar. Store and forward: the frame is
    // whole before this starts. 500 ns: the port-to-port latency vendors
    // publish for shared-buffer datacenter switches is 300 to 600 ns.
    std::uint64_t forwarding_latency_ps = 500'000;

    // The shared buffer, bytes: 12 MiB, the Broadcom Trident II's (the
    // Arista 7050QX-32 of the DCQCN paper's testbed).
    std::uint64_t buffer_bytes = 12ull * 1024 * 1024;

    Scheduling scheduling = Scheduling::strict;

    // DSCP (the IP header's top six bits of the TOS / traffic class) to
    // priority. Default: priority = DSCP >> 3 (the class-selector bits), the
    // default DSCP-to-priority map of NVIDIA/Mellanox NICs in `trust dscp`
    // mode (mlnx_qos --dscp2prio): RoCE's DSCP 26 (AF31) -> 3, the CNPs'
    // DSCP 48 (CS6) -> 6.
    std::array<std::uint8_t, 64> dscp_to_priority = default_dscp_map();
    // Frames without an IP header (ARP, anything non-IP): this priority.
    std::uint8_t non_ip_priority = 0;

    // Per priority. Default: priority 3 (RoCE) lossless with PFC and marked
    // with ECN; every other priority lossy, unmarked.
    std::array<SwitchPriorityConfig, kPriorities> priority = default_priorities();

    // PFC frames this switch sends: the pause time of an XOFF, in quanta of
    // 512 bit times of the port (0xFFFF: the longest, 335.5 us at 100 Gb/s),
    // refreshed every half pause time while the port and priority stay above
    // xon, as switches do, so that a pause never lapses while it is needed.
    std::uint16_t pause_quanta = 0xFFFF;
    // The source MAC address of port p's PFC frames: this address plus p.
    roce::MacAddr mac_base = {0x02, 0x53, 0x57, 0x00, 0x00, 0x00};

    // Forwarding: destination MAC address -> egress port. Static (the
    // fabric fills it); no learning. A frame to an address not listed, or to
    // the port it came in on, is dropped and counted (no_route).
    struct Route {
        roce::MacAddr mac{};
        std::uint32_t port = 0;
    };
    std::vector<Route> fdb;

    // ECN marking's random numbers: a seeded generator, so runs repeat.
    std::uint64_t seed = 1;

    // Queue depth over time: every egress queue's depth (bytes) sampled
    // every this many ps; 0: not recorded (the maximum is kept regardless).
    std::uint64_t depth_sample_ps = 0;

    static std::array<std::uint8_t, 64> default_dscp_map() {
        std::array<std::uint8_t, 64> m{};
        for (unsigned d = 0; d < 64; ++d) m[d] = std::uint8_t(d >> 3);
        return m;
    }
    static std::array<SwitchPriorityConfig, kPriorities> default_priorities() {
        std::array<SwitchPriorityConfig, kPriorities> p{};
        p[3].ecn = true;
        p[3].pfc = true;
        return p;
    }

    // Time a frame of `frame_bytes` occupies port p's line, overhead
    // included, ps (rounded to the nearest).
    std::uint64_t frame_time_ps(std::uint32_t port, std::uint32_t frame_bytes) const;
    // `quanta` pause quanta (512 bit times each) at port p's rate, ps.
    std::uint64_t pause_time_ps(std::uint32_t port, std::uint16_t quanta) const;
    // The buffer left to share once every PFC priority's headroom is
    // reserved on every port.
    std::uint64_t shared_bytes() const;
};

// Checks ranges and cross-field rules; every problem, one line each.
bool validate_switch_config(const SwitchConfig& cfg, std::string& err);

}  // namespace simnic::model::fabric
