// QP attributes the transport core needs (the ibv_qp_attr subset of rxe's
// qp->attr), and a snapshot of its transport state for tools.
#pragma once

#include <cstdint>
#include <optional>

#include "simnic/congestion/dcqcn.h"
#include "simnic/hw/verbs.h"
#include "simnic/roce/headers.h"
#include "simnic/roce/packet.h"
#include "simnic/roce/rules.h"

namespace simnic::transport {

// The resolved path to the peer (ibv_ah_attr with its GRH, plus the MACs the
// engine resolved). IPv4 addresses are host order.
struct AddressVector {
    roce::IpVersion ip_version = roce::IpVersion::V4;
    uint32_t src_ip4 = 0;
    uint32_t dst_ip4 = 0;
    roce::Ipv6Addr src_ip6{};
    roce::Ipv6Addr dst_ip6{};
    roce::MacAddr src_mac{};
    roce::MacAddr dst_mac{};
    uint32_t flow_label = 0;  // 0: derive the UDP source port from the QPNs
    uint8_t hop_limit = 64;
    uint8_t traffic_class = 0;
};

// path_mtu is the packet core's IbMtu; the device's fields (QP_ATTR, QPC)
// hold hw::Mtu, ibv_mtu. Both are the IBA's PMTU codes, so an engine converts
// one to the other by value.
static_assert(uint8_t(roce::IbMtu::Mtu256) == uint8_t(hw::Mtu::M256) &&
                  uint8_t(roce::IbMtu::Mtu512) == uint8_t(hw::Mtu::M512) &&
                  uint8_t(roce::IbMtu::Mtu1024) == uint8_t(hw::Mtu::M1024) &&
                  uint8_t(roce::IbMtu::Mtu2048) == uint8_t(hw::Mtu::M2048) &&
                  uint8_t(roce::IbMtu::Mtu4096) == uint8_t(hw::Mtu::M4096),
              "IB MTU codes");

struct QpConfig {
    hw::QpType type = hw::QpType::Rc;
    uint32_t qpn = 0;
    uint32_t dest_qpn = 0;  // RC/UC
    roce::IbMtu path_mtu = roce::IbMtu::Mtu1024;
    uint32_t sq_psn = 0;    // first PSN the requester sends
    uint32_t rq_psn = 0;    // first PSN the responder expects
    uint8_t retry_cnt = 7;      // 7: retry for ever
    uint8_t rnr_retry = 7;      // 7: retry for ever
    uint8_t timeout = 14;       // retransmit timer 4.096 us << timeout; 0 disables it
    uint8_t min_rnr_timer = 12; // 5-bit IBA code carried in our RNR NAKs
    uint8_t max_rd_atomic = 16;       // READ/atomic requests we may have outstanding
    uint8_t max_dest_rd_atomic = 16;  // responder resources for peers' READ/atomics
    uint32_t access_flags = 0;  // hw::access: remote rights this QP grants
    uint32_t qkey = 0;          // UD
    uint16_t pkey = 0xffff;
    bool sq_sig_all = false;    // every send WQE completes with a CQE
    bool srq = false;           // receive WQEs come from an SRQ (not flushed on error;
                                // entering ERR raises QP_LAST_WQE_REACHED instead)
    bool en_sqd_async_notify = false;  // RTS->SQD: raise SQ_DRAINED when the drain ends
    AddressVector av;           // RC/UC; UD takes it per WQE
    // DCQCN's reaction point for this QP (docs/model.md, "Congestion
    // control"): set, the requester marks its packets ECT(0), paces them at
    // the RP's current rate Rc while it is below the line rate, and a CNP
    // for the QP lowers Rc. Unset (the default): none of it. check() must
    // pass on it.
    std::optional<congestion::DcqcnConfig> dcqcn;
};

// What `simnic resource show qp` wants to print.
struct QpTransportState {
    hw::QpState state = hw::QpState::Reset;
    uint32_t sq_psn = 0;   // next PSN the requester will send
    uint32_t comp_psn = 0; // oldest PSN not yet acknowledged
    uint32_t rq_psn = 0;   // next PSN the responder expects
    uint32_t msn = 0;
    uint32_t sq_outstanding = 0;  // send WQEs not yet completed
    bool sq_draining = false;     // an RTS->SQD drain is in progress
};

// What `simnic stats` shows of a QP's congestion control (its reaction point).
struct QpCongestionState {
    bool on = false;               // the QP has a reaction point
    double rate_bps = 0;           // Rc, the current rate
    double target_rate_bps = 0;    // Rt, the target rate
    double alpha = 0;
    bool rate_limited = false;     // Rc below the line rate
    congestion::RpCounters counters;
};

// Retransmit timer period: 4.096 us << timeout (IBA 11.2.4.2 "Local ACK
// Timeout"); 0 when timeout is 0, which disables the timer.
constexpr uint64_t retransmit_timeout_ns(uint8_t timeout) {
    return timeout == 0 ? 0 : uint64_t{4096} << (timeout > 31 ? 31 : timeout);
}

// RNR NAK timer (IBA table 45): the 5-bit code in an RNR NAK's AETH.
uint64_t rnr_timeout_ns(uint8_t code);

}  // namespace simnic::transport
