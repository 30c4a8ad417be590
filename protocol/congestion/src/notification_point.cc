#include "simnic/congestion/notification_point.h"

namespace simnic::congestion {

bool NotificationPoint::on_ce(uint32_t qpn, uint64_t now_ns) {
    ++counters_.ce_packets;
    auto [it, first] = last_cnp_ns_.try_emplace(qpn, now_ns);
    // A time before the QP's last CNP (the caller's clock stepped back) is
    // inside its interval: it must not open the next one early.
    if (!first && (now_ns < it->second || now_ns - it->second < cfg_.min_cnp_interval_ns)) {
        ++counters_.cnps_suppressed;
        return false;
    }
    it->second = now_ns;
    ++counters_.cnps_requested;
    return true;
}

}  // namespace simnic::congestion
