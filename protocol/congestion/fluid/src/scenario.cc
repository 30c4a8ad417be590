#include "simnic/congestion/fluid/scenario.h"

#include <cmath>
#include <sstream>

namespace simnic::congestion::fluid {

double red_probability(double depth_bytes, const RedConfig& red) {
    if (depth_bytes <= red.kmin_bytes) return 0;
    if (depth_bytes > red.kmax_bytes) return 1;
    return red.pmax * (depth_bytes - red.kmin_bytes) / (red.kmax_bytes - red.kmin_bytes);
}

double loop_delay_s(const Scenario& s) {
    if (s.feedback_delay_s > 0) return s.feedback_delay_s;
    const double bits = 8.0 * s.packet_bytes;
    // Queue -> receiver, receiver -> switch -> sender (the CNP), sender ->
    // queue; the marked packet's serialization at the bottleneck and the
    // next packet's at the sender.
    return 4 * s.link_delay_s + bits / s.bottleneck_bps + bits / s.rp.line_rate_bps;
}

double start_of(const Scenario& s, unsigned flow) {
    return s.start_s.empty() ? 0.0 : s.start_s.at(flow);
}

std::string check(const Scenario& s) {
    std::ostringstream e;
    if (s.flows == 0) e << "at least one flow\n";
    if (s.flows > 4096) e << "at most 4096 flows\n";
    if (!(s.bottleneck_bps > 0)) e << "the bottleneck rate must be positive\n";
    if (!s.start_s.empty() && s.start_s.size() != s.flows)
        e << "one start time per flow (" << s.start_s.size() << " for " << s.flows << " flows)\n";
    for (double t : s.start_s)
        if (!(t >= 0) || !std::isfinite(t)) e << "start times must be finite and not negative\n";
    if (!(s.duration_s > 0) || !std::isfinite(s.duration_s) || s.duration_s > 100)
        e << "the duration must be positive, at most 100 s\n";
    if (s.packet_bytes < 64 || s.packet_bytes > 65536) e << "the packet must be 64 to 65536 bytes\n";
    if (!(s.link_delay_s >= 0) || s.link_delay_s > 1) e << "the link delay must be 0 to 1 s\n";
    if (!(s.feedback_delay_s >= 0) || s.feedback_delay_s > 1) e << "the feedback delay must be 0 to 1 s\n";
    if (!(s.red.kmin_bytes >= 0) || !(s.red.kmax_bytes > s.red.kmin_bytes))
        e << "RED needs 0 <= Kmin < Kmax\n";
    if (!(s.red.pmax > 0 && s.red.pmax <= 1)) e << "Pmax must be in (0, 1]\n";
    if (const char* rp = congestion::check(s.rp)) e << "reaction point: " << rp << "\n";
    if (s.np.min_cnp_interval_ns == 0) e << "the fluid model needs a CNP interval N (tau) above 0\n";
    if (!(s.sample_s > 0) || s.sample_s > s.duration_s) e << "the sample interval must be positive, at most the duration\n";
    else if (s.duration_s / s.sample_s > 1e7) e << "more than 10^7 samples: raise the sample interval\n";
    return e.str();
}

}  // namespace simnic::congestion::fluid
