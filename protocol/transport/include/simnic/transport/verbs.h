// Verbs-level enumerations the transport core exchanges with its engine.
//
// The numeric values are libibverbs' (infiniband/verbs.h, rdma-core 44), so an
// engine can hand them to an application unchanged. Where the hardware spec
// already defines a set (CQE status, QP state) it is used as is; the rest is
// stated here, not included, because the RTL model must not depend on
// libibverbs.
#pragma once

#include <cstdint>

#include "simnic/hw/layout.h"

namespace simnic::transport {

// ibv_wr_opcode
enum class WrOpcode : uint8_t {
    RdmaWrite = 0,
    RdmaWriteWithImm = 1,
    Send = 2,
    SendWithImm = 3,
    RdmaRead = 4,
    AtomicCmpAndSwp = 5,
    AtomicFetchAndAdd = 6,
    LocalInv = 7,
    BindMw = 8,
    SendWithInv = 9,
};

// Atomics, and the requests that take a responder resource (READ and the
// atomics): the requester limits these by max_rd_atomic, the completer
// expects data back for them.
constexpr bool is_atomic(WrOpcode o) {
    return o == WrOpcode::AtomicCmpAndSwp || o == WrOpcode::AtomicFetchAndAdd;
}
constexpr bool is_read_or_atomic(WrOpcode o) { return o == WrOpcode::RdmaRead || is_atomic(o); }
// Operations the requester performs itself, sending no packet (rxe's
// WR_LOCAL_OP_MASK).
constexpr bool is_local_op(WrOpcode o) { return o == WrOpcode::LocalInv || o == WrOpcode::BindMw; }

// ibv_wc_status: the hardware spec's CQE status (hw-spec 7.1), one source.
using WcStatus = hw::WcStatus;

// ibv_wc_opcode
enum class WcOpcode : uint16_t {
    Send = 0,
    RdmaWrite = 1,
    RdmaRead = 2,
    CompSwap = 3,
    FetchAdd = 4,
    BindMw = 5,
    LocalInv = 6,
    Tso = 7,
    Recv = 128,
    RecvRdmaWithImm = 129,
};

// ibv_wc_flags
enum WcFlag : uint32_t {
    kWcGrh = 1u << 0,
    kWcWithImm = 1u << 1,
    kWcIpCsumOk = 1u << 2,
    kWcWithInv = 1u << 3,
};

// ibv_send_flags
enum SendFlag : uint32_t {
    kSendFence = 1u << 0,
    kSendSignaled = 1u << 1,
    kSendSolicited = 1u << 2,
    kSendInline = 1u << 3,
};

// ibv_access_flags (the ones the transport checks)
enum AccessFlag : uint32_t {
    kAccessLocalWrite = 1u << 0,
    kAccessRemoteWrite = 1u << 1,
    kAccessRemoteRead = 1u << 2,
    kAccessRemoteAtomic = 1u << 3,
    kAccessMwBind = 1u << 4,     // an MR windows may be bound to
    kAccessZeroBased = 1u << 5,  // a bind: the window's addresses start at 0
};

// ibv_qp_state: the hardware spec's QP states.
using QpState = hw::QpState;

// ibv_event_type (the QP events the transport raises). The values are the
// hardware spec's EQE event types (hw-spec 8.2), which are ibv_event_type's.
enum class AsyncEvent : uint8_t {
    QpFatal = 1,      // remote operational error class: the QP is in ERR
    QpReqErr = 2,     // invalid request local work queue error (responder)
    QpAccessErr = 3,  // local access violation work queue error (responder)
    CommEst = 4,      // first packet received in RTR
    SqDrained = 5,    // RTS->SQD: every WQE started before the drain has completed
                      // (only with en_sqd_async_notify)
    QpLastWqeReached = 16,  // a QP on an SRQ entered ERR: it takes no more receive WQEs
};
static_assert(uint8_t(AsyncEvent::QpFatal) == uint8_t(hw::EventType::QpFatal));
static_assert(uint8_t(AsyncEvent::QpReqErr) == uint8_t(hw::EventType::QpReqErr));
static_assert(uint8_t(AsyncEvent::QpAccessErr) == uint8_t(hw::EventType::QpAccessErr));
static_assert(uint8_t(AsyncEvent::CommEst) == uint8_t(hw::EventType::CommEst));
static_assert(uint8_t(AsyncEvent::SqDrained) == uint8_t(hw::EventType::SqDrained));
static_assert(uint8_t(AsyncEvent::QpLastWqeReached) == uint8_t(hw::EventType::QpLastWqeReached));

// Whether the event reports an error (its EQE carries the QP's error cause).
constexpr bool is_error_event(AsyncEvent e) {
    return e == AsyncEvent::QpFatal || e == AsyncEvent::QpReqErr || e == AsyncEvent::QpAccessErr;
}

const char* to_string(WcStatus s);

}  // namespace simnic::transport
