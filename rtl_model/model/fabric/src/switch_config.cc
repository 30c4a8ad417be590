#include "simnic/model/fabric/switch_config.h"

#include <set>
#include <sstream>

namespace simnic::model::fabric {

const char* to_string(Scheduling s) {
    switch (s) {
        case Scheduling::strict: return "strict";
        case Scheduling::round_robin: return "round_robin";
    }
    return "?";
}

namespace {
// bits * 1e12 / rate, rounded to the nearest ps, without overflow for the
// longest pause (65535 * 512 bits).
std::uint64_t bits_to_ps(std::uint64_t bits, std::uint64_t rate_bps) {
    __extension__ using u128 = unsigned __int128;
    const u128 num = u128(bits) * 1'000'000'000'000ull + rate_bps / 2;
    return std::uint64_t(num / rate_bps);
}
}  // namespace

std::uint64_t SwitchConfig::frame_time_ps(std::uint32_t port, std::uint32_t frame_bytes) const {
    return bits_to_ps((std::uint64_t(frame_bytes) + overhead_bytes) * 8, ports[port].line_rate_bps);
}

std::uint64_t SwitchConfig::pause_time_ps(std::uint32_t port, std::uint16_t quanta) const {
    return bits_to_ps(std::uint64_t(quanta) * 512, ports[port].line_rate_bps);
}

std::uint64_t SwitchConfig::shared_bytes() const {
    std::uint64_t reserved = 0;
    for (const auto& p : priority)
        if (p.pfc) reserved += p.headroom_bytes * ports.size();
    return reserved >= buffer_bytes ? 0 : buffer_bytes - reserved;
}

bool validate_switch_config(const SwitchConfig& cfg, std::string& err) {
    std::ostringstream e;
    if (cfg.ports.empty()) e << "switch: no ports\n";
    if (cfg.ports.size() > 1024) e << "switch: " << cfg.ports.size() << " ports (at most 1024)\n";
    for (size_t p = 0; p < cfg.ports.size(); ++p)
        if (cfg.ports[p].line_rate_bps < 1'000'000)
            e << "port " << p << ": line_rate_bps " << cfg.ports[p].line_rate_bps << " (at least 1 Mb/s)\n";
    if (cfg.buffer_bytes == 0) e << "switch: buffer_bytes is 0\n";
    for (unsigned d = 0; d < 64; ++d)
        if (cfg.dscp_to_priority[d] >= kPriorities)
            e << "dscp_to_priority[" << d << "]: " << unsigned(cfg.dscp_to_priority[d]) << " (0..7)\n";
    if (cfg.non_ip_priority >= kPriorities) e << "non_ip_priority: " << unsigned(cfg.non_ip_priority) << " (0..7)\n";
    std::uint64_t reserved = 0;
    for (unsigned i = 0; i < kPriorities; ++i) {
        const SwitchPriorityConfig& q = cfg.priority[i];
        if (q.ecn) {
            if (q.kmin_bytes > q.kmax_bytes) e << "priority " << i << ": kmin_bytes above kmax_bytes\n";
            if (!(q.pmax >= 0 && q.pmax <= 1)) e << "priority " << i << ": pmax " << q.pmax << " (0..1)\n";
        }
        if (q.pfc) {
            if (q.xon_bytes > q.xoff_bytes) e << "priority " << i << ": xon_bytes above xoff_bytes\n";
            if (q.xoff_bytes == 0) e << "priority " << i << ": xoff_bytes is 0\n";
            reserved += q.headroom_bytes * cfg.ports.size();
            if (cfg.pause_quanta == 0) e << "priority " << i << ": PFC on, but pause_quanta is 0\n";
        }
    }
    if (!cfg.ports.empty() && reserved >= cfg.buffer_bytes)
        e << "switch: PFC headroom (" << reserved << " bytes on all ports) leaves no shared buffer of "
          << cfg.buffer_bytes << "\n";
    std::set<roce::MacAddr> seen;
    for (const auto& r : cfg.fdb) {
        if (r.port >= cfg.ports.size()) e << "fdb: a route to port " << r.port << " of " << cfg.ports.size() << "\n";
        if (!seen.insert(r.mac).second) e << "fdb: a MAC address listed twice\n";
    }
    err = e.str();
    return err.empty();
}

}  // namespace simnic::model::fabric
